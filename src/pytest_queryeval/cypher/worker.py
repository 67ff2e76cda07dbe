"""The ladybug graph inside a sandbox worker process: what runs there, and the walls it runs
behind.

Why a worker (issue 58): ladybug runs a predicted text in C++ that Python cannot stop. A
1,000-deep list literal crashed the pytest session (SIGSEGV, no report of any kind); a
250-deep one spent 10 s parsing, before the engine's own timeout starts; ``RETURN
size(range(1, 2000000000))`` grew the process past 2.5 GB in 4 s. In a worker
(:class:`~pytest_queryeval._isolation.sandbox.Sandbox`) a crash is that case's failed query,
the hard deadline covers parsing, and the parent kills a worker whose resident memory grows
past its bound (ladybug maps a large address space when it opens, so ``RLIMIT_AS`` cannot).

The walls, each of which holds without the others:

* the graph is opened read-only (:func:`open_graph`): the engine refuses every write;
* the worker confines itself before it opens the graph (:func:`~pytest_queryeval._isolation.
  landlock.confine`, Linux Landlock): it may open the database file and nothing else, and no
  TCP socket, so ``LOAD FROM '/etc/passwd'``, a glob, a relative path under a changed
  ``file_search_path``, ``COPY ... TO``, ``EXPORT DATABASE``, ``INSTALL`` and ``LOAD
  EXTENSION`` fail in the kernel whatever the text looks like;
* an untrusted query is planned first (``EXPLAIN``, :func:`plan_refusal`): the engine's own
  planner names what it would do, and a plan that reads or writes files, changes a setting,
  loads an extension or another database is refused before it runs;
* every query gets a fresh connection: what a ``CALL name=value`` could set on a connection
  dies with it, so nothing of one case reaches the next.
"""

from __future__ import annotations

import importlib
import os
import re
import time
from decimal import Decimal
from typing import Any

from .._isolation.landlock import confine
from .._isolation.sandbox import worker_state
from ..results import GraphNode, GraphRelationship
from . import graphtypes, values

#: The :func:`worker_state` key of the open database.
_DB = "ladybug-db"
_BATCH = 1_000

#: Plan operators that reach outside the graph or change the engine: never run for a
#: prediction (the read-only engine refuses most of them too; ``COPY ... TO`` and ``EXPORT
#: DATABASE`` it does not).
OUTSIDE_OPERATORS = frozenset({
    "STANDALONE_CALL", "INSTALL_EXTENSION", "UNINSTALL_EXTENSION", "LOAD_EXTENSION",
    "EXPORT_DATABASE", "IMPORT_DATABASE", "COPY_TO", "COPY_FROM", "ATTACH_DATABASE",
    "DETACH_DATABASE", "USE_DATABASE", "TRANSACTION"})
#: Table functions that read files or remote storage (``LOAD FROM`` plans one of them).
_FILE_FUNCTION = re.compile(r"READ_(?!FTABLE$)\w+|\w+_SCAN|\w*(?:PARQUET|CSV|JSON|NPY)\w*",
                            re.IGNORECASE)
_OPERATOR = re.compile(r"([A-Z][A-Z_]+)\[\d+\]")
#: The words, by ladybug's grammar, of every statement and clause that is neither a read nor a
#: write of the graph (what its parser lists as a statement's first word, and the clauses
#: ``CALL`` and ``LOAD FROM`` inside a query). A text holding none of them anywhere (in a
#: string or a name included) can only read or write the graph, and the read-only engine
#: refuses the writes: it is not planned twice (planning was most of a small query's cost).
_BEYOND = re.compile(r"CALL|LOAD|COPY|EXPORT|IMPORT|INSTALL|ATTACH|DETACH|USE|BEGIN|COMMIT|"
                     r"ROLLBACK|CHECKPOINT|FORCE|UPDATE|ANALYZE|COMMENT|TRANSACTION",
                     re.IGNORECASE)
_FUNCTION = re.compile(r"Function: (\w+)")

Reply = tuple[Any, ...]


def _ladybug() -> Any:
    return importlib.import_module("ladybug")


def open_graph(path: str, max_memory: int) -> tuple[str, str]:
    """The worker's setup: confine the process, then open the graph read-only with one
    thread (the rows of an unordered result then come in one order every run).

    The engine's modules are imported first (lazily by the database object, which does not
    open the file yet): once confined, the worker can open no file but the database, a
    module neither. ``("ready", confinement)`` or ``("error", message)``."""
    try:
        lb = _ladybug()
        importlib.import_module("decimal")  # DECIMAL values import it on first use
        db = lb.Database(path, read_only=True, buffer_pool_size=max_memory,
                         max_num_threads=1, lazy_init=True)
        readable = [path] + [f"{path}{s}" for s in (".wal", ".shadow")
                             if os.path.exists(f"{path}{s}")]
        _no_core_files()  # imports a module: before the worker is confined
        confinement = confine(readable=readable)
        db.init_database()
    except Exception as exc:
        return ("error", first_line(exc))
    worker_state()[_DB] = db
    return ("ready", confinement or "none (no Landlock on this system)")


def _no_core_files() -> None:
    """A query that crashes the engine leaves no core file in the suite's folder."""
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    except (ImportError, OSError, ValueError):
        pass


def first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def plan_refusal(conn: Any, query: str) -> str | None:
    """What the engine's plan of ``query`` would do outside the graph (None: nothing)."""
    result = conn.execute("EXPLAIN " + query)
    if isinstance(result, list):  # several statements
        for one in result:
            one.close()
        return "more than one statement: one read-only query is executed"
    plan = str(result.get_all()[0][0])
    result.close()
    functions = _FUNCTION.findall(plan)
    for op in _OPERATOR.findall(plan):
        if op == "STANDALONE_CALL":
            name = functions[0] if functions else "a setting"
            return (f"CALL {name}=... changes a setting of the engine (the engine's plan "
                    "says so): only read-only queries are executed")
        if op in OUTSIDE_OPERATORS:
            return (f"the engine's plan holds {op}, which reaches outside the graph (files, "
                    "extensions, other databases, transactions): only read-only queries are "
                    "executed")
    for name in functions:
        if _FILE_FUNCTION.fullmatch(name):
            return (f"the engine's plan reads a file ({name}): only the graph is read, never "
                    "a file")
    return None


def run(query: str, timeout_ms: int, max_rows: int, checked: bool,
        max_values: int = values.DEFAULT_MAX_VALUES) -> Reply:
    """One query on a fresh connection to the worker's graph; ``checked``: planned first
    (:func:`plan_refusal`) when it holds a word of :data:`_BEYOND`. ``("ok", columns, rows,
    truncated, seconds)``, ``("refused", reason)``, ``("error", message, seconds)`` (the
    parent words the engine's errors) or ``("values", max_values, seconds)``: the rows held
    more than ``max_values`` values (:mod:`.values`), counted as they were fetched, and none
    is sent."""
    db = worker_state().get(_DB)
    if db is None:  # cannot happen after a successful setup; a clear message if it does
        return ("error", "the graph is not open in this worker", 0.0)
    conn = _ladybug().Connection(db)
    start = time.perf_counter()
    try:
        conn.set_query_timeout(max(1, timeout_ms))
        if checked and _BEYOND.search(query):
            refusal = plan_refusal(conn, query)
            if refusal is not None:
                return ("refused", refusal)
        start = time.perf_counter()
        return _fetch(conn, query, (max_rows, max_values), start)
    except RuntimeError as exc:
        return ("error", first_line(exc), time.perf_counter() - start)
    finally:
        conn.close()


def _fetch(conn: Any, query: str, bounds: tuple[int, int], start: float) -> Reply:
    limit, max_values = bounds
    result = conn.execute(query)
    if isinstance(result, list):  # several statements: the guard refuses them first
        for one in result:
            one.close()
        return ("refused", "more than one statement: one read-only query is executed")
    columns = [str(c) for c in result.get_column_names()]
    types = [str(t) for t in result.get_column_data_types()]
    rows: list[tuple[Any, ...]] = []
    held = 0
    while result.has_next() and len(rows) <= limit:
        batch = [tuple(r) for r in result.get_n(min(_BATCH, limit + 1 - len(rows)))]
        held += values.count(batch, max_values - held)
        if held > max_values:
            result.close()
            return ("values", max_values, time.perf_counter() - start)
        rows.extend(batch)
    result.close()
    rows = integers(graphtypes.mark_rows(rows, types), types, conn)
    elapsed = time.perf_counter() - start
    if len(rows) > limit:
        return ("ok", columns, rows[:limit], True, elapsed)
    return ("ok", columns, rows, False, elapsed)


def integers(rows: list[tuple[Any, ...]], types: list[str],
             conn: Any) -> list[tuple[Any, ...]]:
    """Every value of a wide integer type (``INT128``: what ``sum()`` of integers returns;
    ``UINT128``) as a Python ``int``, as Neo4j and its driver give an integer: ladybug hands
    them over as ``Decimal``, which neither equals a float in every metric nor hashes where
    CypherBench's reference needs it (issue 60). A ``DECIMAL`` stays a ``Decimal``.

    The column's type says which values are wide integers; a node's or a relationship's
    properties are looked up in its table's schema (only when some table has such a
    property). A column mixing both in one nested type (a struct of an ``INT128`` and a
    ``DECIMAL``) turns the Decimals of exponent 0 into integers."""
    todo = []
    for i, typ in enumerate(types):
        if _WIDE.search(typ):
            todo.append((i, "DECIMAL" not in typ.upper()))
        elif _GRAPH.search(typ) and _wide_properties(conn):
            todo.append((i, False))
    if not todo:
        return rows
    props = _wide_properties(conn) if any(not every for _, every in todo) else {}
    out = []
    for row in rows:
        cells = list(row)
        for i, every in todo:
            cells[i] = _to_int(cells[i], every, props)
        out.append(tuple(cells))
    return out


_WIDE = re.compile(r"\bU?INT128\b", re.IGNORECASE)
_GRAPH = re.compile(r"\b(?:NODE|REL|RECURSIVE_REL)\b", re.IGNORECASE)
#: The worker_state key of ``{table: {property names of a wide integer type}}``.
_WIDE_PROPS = "ladybug-wide-properties"


def _wide_properties(conn: Any) -> dict[str, set[str]]:
    """The properties of a wide integer type, by table (read once per worker)."""
    state = worker_state()
    found = state.get(_WIDE_PROPS)
    if found is None:
        found = {}
        tables = conn.execute("CALL show_tables() RETURN name").get_all()
        for (name,) in tables:
            props = conn.execute(f"CALL table_info('{name}') RETURN name, type").get_all()
            wide = {str(p) for p, t in props if _WIDE.search(str(t))}
            if wide:
                found[str(name)] = wide
        state[_WIDE_PROPS] = found
    return dict(found)


def _to_int(v: Any, every: bool, props: dict[str, set[str]]) -> Any:
    """``v`` with its wide integers as ``int`` (``every``: each Decimal in it is one; else
    one of exponent 0). A node's or relationship's properties go by its table's schema."""
    if isinstance(v, Decimal):
        return int(v) if (every or v.as_tuple().exponent == 0) and v.is_finite() else v
    if isinstance(v, list):
        return [_to_int(x, every, props) for x in v]
    if not isinstance(v, dict):
        return v
    if not isinstance(v, GraphNode | GraphRelationship):  # a struct, a map, a path
        return type(v)((k, _to_int(x, every, props)) for k, x in v.items())
    wide = props.get(str(v["_LABEL"]), set())
    return type(v)((k, int(x) if k in wide and isinstance(x, Decimal) and x.is_finite() else x)
                   for k, x in v.items())


def describe() -> list[tuple[str, str]]:
    """Each node and relationship table as the ``CREATE ... TABLE`` that makes it."""
    conn = _ladybug().Connection(worker_state()[_DB])
    try:
        out: list[tuple[str, str]] = []
        tables = conn.execute("CALL show_tables() RETURN name, type ORDER BY id").get_all()
        for name, kind in tables:
            props = conn.execute(f"CALL table_info('{name}') RETURN name, type").get_all()
            cols = ", ".join(f"{p} {t}" for p, t in props)
            if kind == "REL":
                ends = conn.execute(f"CALL show_connection('{name}') RETURN *").get_all()
                pairs = ", ".join(f"FROM {e[0]} TO {e[1]}" for e in ends)
                cols = f"{pairs}, {cols}" if cols else pairs
            out.append((str(name), f"CREATE {kind} TABLE {name}({cols});"))
        return out
    finally:
        conn.close()


def build(script: str, target: str, statements: list[str], max_memory: int) -> str | None:
    """Run a script's statements into a new database at ``target`` (in a worker of its own:
    a script is the suite's, but a crash of the engine is still not pytest's). None, or the
    failure as ``"statement N failed: ..."``."""
    lb = _ladybug()
    db = lb.Database(target, buffer_pool_size=max_memory)
    conn = lb.Connection(db)
    try:
        for number, statement in enumerate(statements, 1):
            try:
                conn.execute(statement)
            except RuntimeError as exc:
                return f"statement {number} of {script!r} failed: {first_line(exc)}"
    finally:
        conn.close()
        db.close()
    return None
