"""A DuckDB database file as a SQL source, opened read-only (DuckDB's own ``duckdb`` package,
the ``[duckdb]`` extra; imported only when a suite uses it).

Spec keys: ``path`` (required), ``timeout``, ``max_rows``, ``max_bytes`` (size of one result,
default 64 MiB), ``max_memory`` (address space a query may use in the worker, default 1 GiB;
DuckDB's own ``memory_limit`` is half of it, its spill files at most all of it), ``threads``
(DuckDB worker threads, default 1), ``isolation`` (``process`` default | ``thread``).

With ``isolation: thread`` the query runs in a thread of the pytest process, interrupted at
the timeout; a query that does not stop when interrupted (DuckDB plans a WHERE of 60,000
conjuncts for seconds without looking at the interrupt) is abandoned
:data:`~.sandboxed.HARD_GRACE` seconds later: the case ends with its timeout, the source
continues on a fresh connection, and the abandoned query runs on in its thread until it ends
or the process exits. Ctrl-C stops the wait at once.

Why the same worker process as SQLite (:mod:`pytest_queryeval._isolation.sandbox`): a DuckDB query runs
in C++ threads that only stop at DuckDB's own interruption points, and a hash join or a
``repeat()`` can allocate gigabytes in one operator. In the worker, a timer interrupts the
connection at the timeout (the worker survives), the parent kills it shortly after if the
engine did not stop, its address space is capped at ``max_memory`` and its spill files live in
its own temporary directory.

Read-only in three layers: the SQL guard (duckdb dialect) refuses anything but a query before
execution; the connection is ``read_only=True`` (DuckDB refuses CREATE/INSERT on the file); and
the configuration, locked before the first predicted query, turns off what a SELECT alone
could still reach: ``enable_external_access=false`` (no ``read_csv('/etc/passwd')``, COPY TO,
ATTACH, httpfs), ``autoinstall_known_extensions`` / ``autoload_known_extensions`` false (no
extension download or load), ``allow_community_extensions`` false, ``memory_limit``, ``threads``
and ``temp_directory`` bounded, then ``lock_configuration=true`` so that ``SET`` cannot undo any
of it.

Why one module of this size: the connection's configuration, the worker functions and
the account of the tables read (binder and plans) must agree on one locked, read-only
connection; apart, a setting the account needs (``explain_output``) would be set where the
connection is not opened.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._util.safefile import private_tempdir
from ..errors import (
    MissingDependency,
    QueryFailed,
    QueryRefused,
    QueryTimeout,
    SourceUnavailable,
)
from ..results import ResultTable
from .base import (
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_ROWS,
    DEFAULT_TIMEOUT,
    FetchedRows,
    PackedBatches,
    positive_int,
    tidy_ddl,
)
from .packed import PackedRows, unpack_rows
from .sandboxed import HARD_GRACE, Reply, SandboxedFileSource, packing, worker_reply
from .sqlcomments import dequoted, readings

DEFAULT_MAX_MEMORY = 1024 * 1024 * 1024
_FETCH_BATCH = 1_000
#: Why a ``thread``-isolated query that outlived its timeout ended the case.
ABANDONED = ("the engine did not stop by itself: the query was abandoned, still running in a "
             "thread of this process; isolation: process would kill it")
#: Connections a worker keeps open (one per file and settings, least recently used closed
#: first): few, as each instance keeps address space under the worker's ``RLIMIT_AS`` (eight,
#: late in a long run of suites on many files, left a query or an open "out of memory").
_WORKER_CONNECTIONS = 3
_INSTALL = "type: duckdb needs DuckDB: pip install 'pytest-queryeval[duckdb]'"


def _require_duckdb() -> Any:
    try:
        import duckdb
    except ImportError:
        raise MissingDependency(_INSTALL) from None
    return duckdb


def settings(max_memory: int, threads: int, temp_dir: str) -> dict[str, Any]:
    """DuckDB configuration of every connection (``lock_configuration`` is set after)."""
    return {
        "enable_external_access": False,
        "autoinstall_known_extensions": False,
        "autoload_known_extensions": False,
        "allow_community_extensions": False,
        "memory_limit": f"{max(max_memory // 2, 64 * 1024 * 1024)}B",
        "max_temp_directory_size": f"{max_memory}B",
        "threads": threads,
        "temp_directory": temp_dir,
        # EXPLAIN gives the plan before the optimizer too: a subquery answered from a table's
        # statistics (``(SELECT count(*) FROM Track)``) leaves no scan in the physical plan,
        # and only there is its table still named (:func:`read_tables`)
        "explain_output": "all",
    }


def open_read_only(path: Path, name: str, max_memory: int, threads: int,
                   temp_dir: str) -> Any:
    """A read-only, locked-down connection (see the module docstring)."""
    duckdb = _require_duckdb()
    if not path.is_file():
        raise SourceUnavailable(f"datasource {name!r}: no DuckDB file at {path}")
    try:
        conn = duckdb.connect(str(path), read_only=True,
                              config=settings(max_memory, threads, temp_dir))
        conn.execute("SET enable_progress_bar = false")  # a session option, not a config one
        conn.execute("SET lock_configuration = true")
        conn.execute("SELECT count(*) FROM duckdb_tables()").fetchone()
    except duckdb.Error as e:
        raise SourceUnavailable(f"datasource {name!r}: cannot open {path}: {e}") from None
    return conn


#: What a report shows instead of a machine path DuckDB reveals (see :func:`machine_paths`).
TEMP_LABEL, HOME_LABEL, DATABASE_LABEL = "<duckdb-temp>", "~", "<database>"

#: (the path, the pattern matching it whole, its label), longest path first.
MachinePaths = tuple[tuple[str, "re.Pattern[str]", str], ...]


def machine_paths(temp_dir: str, database: str = "") -> MachinePaths:
    """The absolute paths of this machine that DuckDB puts into results and messages, with
    what is shown instead.

    ``current_setting('temp_directory')``, ``duckdb_settings()`` (temp, home, extension and
    secret directories) and the refusal of ``duckdb_extensions()`` ("Cannot access directory
    /home/.../.duckdb/extensions/...") would otherwise carry the spill directory and the home
    directory into committed reports. ``duckdb_databases()`` (a view too) gives the database
    file's own path: to an agent's tool that is the host's file system, so ``database`` (as
    given and resolved) is shown as :data:`DATABASE_LABEL`. A path matches whole: after it
    comes a ``/``, a quote, a bracket, a blank or the end of the text, not more of a name
    (``/root`` in ``/rootfs``).
    """
    pairs = {temp_dir.rstrip("/"): TEMP_LABEL}
    if database:
        for given in (database, os.path.abspath(database), os.path.realpath(database)):
            pairs.setdefault(given, DATABASE_LABEL)
    # $HOME and the account's home from the password database: a process started with
    # another HOME (a sandbox worker of a test that changed it) still scrubs the real one
    homes = {os.path.expanduser("~")}
    with contextlib.suppress(KeyError, ImportError):
        import pwd

        homes.add(pwd.getpwuid(os.getuid()).pw_dir)
    for home in homes:
        if home.rstrip("/"):
            pairs.setdefault(home.rstrip("/"), HOME_LABEL)
    # the database's own files beside it too (``t.duckdb.wal``, ``.wal.recovery``: DuckDB's
    # ``allowed_paths`` setting lists them, the thirty-seventh re-probe's M10)
    return tuple((path, re.compile(re.escape(path) + (r"(?=\.wal|(?![\w.-]))"
                                                      if label == DATABASE_LABEL
                                                      else r"(?![\w.-])")), label)
                 for path, label in sorted(pairs.items(), key=lambda p: -len(p[0])) if path)


def scrub_text(text: str, paths: MachinePaths) -> str:
    """``text`` with each machine path of ``paths`` replaced by its label."""
    for path, pattern, label in paths:
        if path in text:
            text = pattern.sub(label, text)
    return text


def _scrub_rows(table: ResultTable, paths: MachinePaths) -> None:
    needles = [path for path, _, _ in paths]
    rows = table.rows
    if isinstance(rows, PackedBatches):
        # the batches' marshal dumps hold every string's UTF-8 bytes whole: unpacked (and
        # scrubbed) only when a machine path is in one, which a worker's result rarely has
        raw = [n.encode("utf-8", "surrogatepass") for n in needles]
        if not any(r in chunk for chunk in rows.chunks for r in raw):
            return
        rows = table.rows = unpack_rows(PackedRows("chunks", rows.chunks))
    for i, row in enumerate(rows):
        if any((type(v) is str and any(n in v for n in needles))
               or type(v) in (list, tuple, dict) for v in row):
            rows[i] = tuple(_scrub_value(v, paths, needles) for v in row)


def _scrub_value(value: Any, paths: MachinePaths, needles: list[str]) -> Any:
    """``value`` with its machine paths replaced, in the strings of a list, a map or a struct
    too (``current_setting('allowed_paths')`` is a list: the thirty-eighth re-probe's L1)."""
    if type(value) is str:
        return scrub_text(value, paths) if any(n in value for n in needles) else value
    if isinstance(value, list):
        return [_scrub_value(v, paths, needles) for v in value]
    if isinstance(value, tuple):
        return tuple(_scrub_value(v, paths, needles) for v in value)
    if isinstance(value, dict):
        return {k: _scrub_value(v, paths, needles) for k, v in value.items()}
    return value


def run_query(conn: Any, query: str, timeout: float, max_rows: int,
              max_bytes: int, temp_dir: str = "", database: str = "") -> ResultTable:
    """Execute and fetch under a deadline: a timer interrupts the connection at ``timeout``
    (the whole deadline in a thread, the soft one in the worker, backed there by a kill).
    Machine paths in the rows and messages are replaced (:func:`machine_paths`; ``database``:
    the file's path as opened)."""
    paths = machine_paths(temp_dir, database)
    try:
        table = _run_query(conn, query, timeout, max_rows, max_bytes)
    except (QueryFailed, QueryRefused) as e:
        raise type(e)(scrub_text(str(e), paths)) from None
    _scrub_rows(table, paths)
    return table


def _run_query(conn: Any, query: str, timeout: float, max_rows: int,
               max_bytes: int) -> ResultTable:
    duckdb = _require_duckdb()
    expired = threading.Event()

    def interrupt() -> None:
        expired.set()
        conn.interrupt()

    timer = threading.Timer(timeout, interrupt)
    timer.daemon = True
    start = time.perf_counter()
    fetched = FetchedRows(max_rows, max_bytes)
    timer.start()
    try:
        cur = conn.execute(query)
        columns = [d[0] for d in cur.description or ()]
        while fetched.add(cur.fetchmany(fetched.wanted(_FETCH_BATCH))):
            pass
    except duckdb.InterruptException:
        if expired.is_set():
            raise QueryTimeout(f"query exceeded {timeout:g} s") from None
        raise KeyboardInterrupt from None
    except duckdb.PermissionException as e:
        raise QueryRefused(f"the source allows no file, network or extension access "
                           f"({_first_line(e)})"
                           ) from None
    except duckdb.OutOfMemoryException as e:
        raise QueryFailed(f"out of memory: {_first_line(e)} (max_memory limits it)") from None
    except duckdb.Error as e:
        msg = str(e)
        if "read-only mode" in msg or "configuration has been locked" in msg:
            raise QueryRefused(f"the source is read-only ({_first_line(e)})") from None
        raise QueryFailed(msg) from None
    finally:
        timer.cancel()
    return fetched.table(columns, time.perf_counter() - start)


def _first_line(e: BaseException) -> str:
    return str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__


def _worker_connection(path: str, name: str, max_memory: int, threads: int, temp: str
                       ) -> tuple[dict[tuple[str, int], Any], Any]:
    """The worker's cache of connections, and the one to ``path`` taken out of it (opened if
    none): the caller puts it back as the most recently used. At most
    :data:`_WORKER_CONNECTIONS` stay open, for the queries and the table accounts alike (the
    accounts' own cache had no bound: an agent suite on many files opened one DuckDB instance
    a file in the worker until its ``RLIMIT_AS`` ran out, and every later read and catalog
    read there failed "out of memory", a count unknown)."""
    from .._isolation.sandbox import worker_state

    conns: dict[tuple[str, int], Any] = worker_state().setdefault("duckdb", {})
    conn = conns.pop((path, threads), None)
    if conn is not None:
        return conns, conn
    while len(conns) >= _WORKER_CONNECTIONS:  # room first: at most this many open
        conns.pop(next(iter(conns))).close()
    try:
        return conns, open_read_only(Path(path), name, max_memory, threads, temp)
    except SourceUnavailable as e:
        if not conns or "Out of Memory" not in str(e):
            raise
        # the connections cached for other databases hold the worker's address space
        # (``RLIMIT_AS``: each instance's buffers and threads); a long run of suites on
        # many files filled it ("Allocation failure" at open): give them back, open again
        while conns:
            conns.popitem()[1].close()
        return conns, open_read_only(Path(path), name, max_memory, threads, temp)


def worker_query(path: str, name: str, query: str, timeout: float, max_rows: int,
                 max_bytes: int, max_memory: int, threads: int
                 ) -> Reply:
    """:func:`run_query` inside the sandbox worker, on a connection cached there (spilling to
    the worker's own temporary directory). Only the rows within ``max_bytes`` leave it."""
    temp = os.path.join(tempfile.gettempdir(), "duckdb")
    conns, conn = _worker_connection(path, name, max_memory, threads, temp)
    key = (path, threads)
    try:
        table = packing(run_query, conn, query, timeout, max_rows, max_bytes, temp, path)
    except QueryFailed as e:
        if e.reason().startswith("query failed: out of memory"):
            conn.close()  # give DuckDB's buffers back before the next query
            raise
        conns[key] = conn
        raise
    except BaseException:
        conns[key] = conn
        raise
    conns[key] = conn  # most recently used last
    return worker_reply(table, max_bytes)


def read_tables(conn: Any, query: str, temp_dir: str = "",
                timeout: float | None = None) -> ResultTable:
    """The tables DuckDB reads for ``query``, run nothing: those its plans scan (``EXPLAIN``,
    before and after the optimizer, :func:`planned_tables`) with its binder's account
    (``get_table_names``), each of which resolves CTEs, views and macros to the tables under
    them.

    Why both: the binder leaves out a subquery in a star's ``REPLACE`` list and a macro's
    body there, and cannot bind ``COLUMNS('Name')``, ``UNPIVOT`` or ``FROM (PIVOT ...)`` at
    all, while the plan scans each of them (``SELECT * REPLACE ((SELECT string_agg(Name,
    '|') FROM tunes) AS Name) FROM Genre``, ``tunes`` a view of Track, named Track in neither
    the binder's account nor the text's: the thirty-third re-probe); the plan of a read the
    optimizer folds to nothing (``WHERE false``, ``LIMIT 0``) scans no table, and the binder
    names it. Fail closed: a plan that cannot be read adds nothing, and the binder's account
    stands as before.

    On a cursor of its own, closed after: a text the binder refuses leaves its connection's
    transaction aborted, and every later ``get_table_names`` on it failed "Current
    transaction is aborted" until a query ran, so the reads after a bad text were counted
    on their text alone (the thirty-first re-probe's L2, the thirty-second's L3).

    When the binder cannot bind the text but the plan was read, the plan's tables come back
    with ``meta["unbound"]`` (the binder's message): the caller then reads the text as on a
    text no engine took (:class:`~..errors.PartlyRead`). A text not encodable as UTF-8 (a
    lone surrogate: ``get_table_names`` raised TypeError, the thirtieth re-probe's H3) is
    QueryFailed, as a text the engine cannot bind."""
    duckdb = _require_duckdb()
    start = time.perf_counter()
    cur = conn.cursor()
    timer = threading.Timer(timeout, cur.interrupt) if timeout is not None else None
    if timer is not None:
        timer.daemon = True
        timer.start()
    try:
        planned = planned_tables(cur, query)
        try:
            names = set(cur.get_table_names(query))
        except duckdb.Error as e:
            message = scrub_text(_first_line(e), machine_paths(temp_dir))
            if not planned:
                raise QueryFailed(f"the engine could not bind it ({message})") from None
            return ResultTable(["table"], [(n,) for n in sorted(planned)],
                               seconds=time.perf_counter() - start,
                               meta={"unbound": f"the engine could not bind it ({message})"})
        except (TypeError, ValueError):  # pybind11's refusal of a str not encodable as UTF-8
            raise QueryFailed("the engine could not bind it (its text is not valid UTF-8: a "
                              "lone surrogate)") from None
    finally:
        if timer is not None:
            timer.cancel()
        with contextlib.suppress(Exception):
            cur.close()
    return ResultTable(["table"], [(n,) for n in sorted(names | (planned or set()))],
                       seconds=time.perf_counter() - start)


#: Statement types whose plan is read: a query (``SELECT``, ``FROM t``, ``SUMMARIZE``,
#: ``DESCRIBE``...) and a ``PIVOT`` statement (``MULTI``: the query its enumeration needs,
#: then the pivot). Others are not planned here (the guard refuses them before they run).
_PLANNED_TYPES = ("SELECT", "MULTI")


def planned_tables(cur: Any, query: str) -> set[str] | None:
    """The tables a scan of ``query``'s plans reads (each operator's ``Table``: a sequential,
    index or table-function scan; the logical plan's too, where a subquery the optimizer
    answers from statistics still scans its table), or None when no plan could be read: a
    text of more than one statement (EXPLAIN would run the others), one DuckDB cannot plan,
    an interrupted plan. EXPLAIN plans the query and runs nothing of it (a ``PIVOT`` without
    an ``IN`` list runs the query of its distinct values, a read of the same table). Each
    table as DuckDB names it, ``catalog.schema.table`` (the ledger takes the last name)."""
    import json

    duckdb = _require_duckdb()
    try:
        statements = cur.extract_statements(query)
        if len(statements) != 1 or statements[0].type.name not in _PLANNED_TYPES:
            return None
        rows = cur.execute("EXPLAIN (FORMAT JSON) " + query).fetchall()
    except (duckdb.Error, TypeError, ValueError):
        return None
    found: set[str] = set()
    stack: list[object] = []
    for row in rows:
        try:
            stack.append(json.loads(row[1]))
        except (TypeError, ValueError, IndexError):
            return None
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, dict):
            info = node.get("extra_info")
            if isinstance(info, dict) and isinstance(info.get("Table"), str):
                found.add(info["Table"])
            stack.extend(node.get("children") or [])
    return found


def worker_tables(path: str, name: str, query: str, max_memory: int, threads: int,
                  timeout: float | None = None) -> Reply:
    """:func:`read_tables` inside the sandbox worker, on a connection cached there."""
    temp = os.path.join(tempfile.gettempdir(), "duckdb")
    conns, conn = _worker_connection(path, name, max_memory, threads, temp)
    try:
        return worker_reply(read_tables(conn, query, temp, timeout), 1 << 20)
    finally:
        conns[(path, threads)] = conn  # most recently used last


#: What reads a host path in a macro's or view's definition: the guard's path views and
#: ``current_setting`` (of any setting: the definition is not parsed here).
_PATH_WORDS = re.compile(r"(?<![\w$])(?:current_setting|getenv|duckdb_settings|duckdb_databases|"
                         r"duckdb_temporary_files|duckdb_external_file_cache|duckdb_extensions"
                         r"|duckdb_secrets|duckdb_logs\w*|pragma_database_list|pg_settings)(?![\w$])",
                         re.IGNORECASE)
_PLAIN_SPELLING = re.compile(r"[\"`]")
_CALL = re.compile(r"([\w$]+)\s*\(")
#: A macro name a query calls only by writing it: one holding a letter, a digit or ``_``
#: (one of symbols alone is an operator's, ``"%"``, which the syntax calls).
_LETTER = re.compile(r"[A-Za-z0-9_]")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*")
#: The most rows the catalog is read for (past them it is not read: no account of it).
MAX_CATALOG_ROWS = 100_000


@dataclass(frozen=True)
class Catalog:
    """The database's own views and macros, read with no function or operator of the
    database's (the system catalog's raw columns, filtered here): a macro of the database
    replaces any function or operator a query of it calls, ``duckdb_functions()`` itself
    too, and a macro ``"||"`` made every definition a catalog query built ``'x'`` (the
    fortieth re-probe's N1, N2)."""

    #: (schema, name, definition) of each view.
    views: tuple[tuple[str, str, str], ...]
    #: (schema, name, definition, by_name) of each macro: ``by_name``, called only by
    #: writing its name; else named like an operator or a builtin, which a query's syntax
    #: calls with no name written (``"%"`` in ``7 % 2``, ``"~~"`` in ``LIKE``: the
    #: thirty-ninth re-probe's H13).
    macros: tuple[tuple[str, str, str, bool], ...]
    #: Whether both reads came back whole (not cut by ``max_rows`` or the datasource's
    #: ``max_bytes``, which the builtins' definitions may pass): the agents' count takes
    #: only a whole catalog (:func:`~.base.whole_rows`); the prediction's check of path
    #: macros takes what was read.
    whole: bool = True


def read_catalog(source: Any) -> Catalog:
    """The database's :class:`Catalog` (:attr:`Catalog.whole` says whether it was cut)."""
    # each read filtered by ``NOT internal`` alone (a column and NOT, which no macro
    # replaces), so the builtins' definitions, some 160 KB, are not read at all
    tables = [source.execute(query, trusted=True, max_rows=MAX_CATALOG_ROWS) for query in (
        "SELECT schema_name, view_name, sql FROM system.main.duckdb_views() WHERE NOT internal",
        "SELECT schema_name, function_name, function_type, macro_definition FROM "
        "system.main.duckdb_functions() WHERE NOT internal",
        "SELECT DISTINCT function_name FROM system.main.duckdb_functions() WHERE internal")]
    whole = not any(t.truncated or t.meta.get("max_bytes") is not None for t in tables)
    views, functions, builtins = (t.rows for t in tables)
    builtin = {str(name).lower() for (name,) in builtins}
    return Catalog(
        tuple((str(schema), str(name), sql) for schema, name, sql in views
              if isinstance(name, str) and isinstance(sql, str)),
        tuple((str(schema), name, definition,
               _LETTER.search(name) is not None and name.lower() not in builtin)
              for schema, name, kind, definition in functions
              if kind in ("macro", "table_macro")
              and isinstance(name, str) and isinstance(definition, str)), whole)


def path_objects(catalog: Catalog) -> tuple[frozenset[str], frozenset[str]]:
    """The macros and views (lower-cased names) of ``catalog`` whose definitions read a
    host path, directly or through another such (``*`` among the macros: one a query's
    syntax calls with no name written, or whose name is no plain identifier; or any, when
    the catalog was cut: a path macro past the cut was called unchecked, the forty-first
    re-probe's O20)."""
    if not catalog.whole:
        return frozenset({"*"}), frozenset()
    texts = {name.lower(): definition for _, name, definition, _ in catalog.macros}
    view_texts = {name.lower(): definition for _, name, definition in catalog.views}
    bad: set[str] = set()
    while True:  # through macros and views that use such a one
        found = {n for n, d in {**texts, **view_texts}.items() if n not in bad and (
            _PATH_WORDS.search(d) or any(b in d.lower() for b in bad))}
        if not found:
            break
        bad |= found
    macros = {n for n in bad if n in texts}
    if any(name.lower() in bad and (not by_name or not _IDENTIFIER.fullmatch(name))
           for _, name, _, by_name in catalog.macros):
        macros.add("*")  # (a quoted name of several words is not read as a call here)
    return frozenset(macros), frozenset(n for n in bad if n in view_texts)


class DuckdbSource(SandboxedFileSource):
    """A DuckDB database file, opened ``read_only`` with external access off and the
    configuration locked. Predicted statements are refused by :func:`check_read_only` before
    execution, and the connection could not write anyway."""

    type = "duckdb"
    dialect = "duckdb"
    label = "DuckDB"
    wal_suffix = ".wal"
    preload = ("duckdb",)

    def __init__(self, name: str, path: str | Path, *, timeout: float = DEFAULT_TIMEOUT,
                 max_rows: int = DEFAULT_MAX_ROWS, max_bytes: int = DEFAULT_MAX_BYTES,
                 max_memory: int = DEFAULT_MAX_MEMORY, threads: int = 1,
                 isolation: str = "process") -> None:
        super().__init__(name, path, timeout=timeout, max_rows=max_rows, max_bytes=max_bytes,
                         max_memory=max_memory, isolation=isolation)
        self.threads = positive_int(threads, name, "threads")
        self._catalog: Catalog | None = None
        self._path_objects: tuple[frozenset[str], frozenset[str]] | None = None
        self._conn: Any = None
        self._temp: str | None = None
        #: Connections left to a query that did not stop (closing one would wait for it).
        self._abandoned: list[Any] = []

    # -- connection ---------------------------------------------------------------------------

    def _connect(self) -> Any:
        """The in-process connection (``isolation: thread`` queries, schema introspection)."""
        if self._conn is None:
            if self._temp is None:
                self._temp = private_tempdir("queryeval-duckdb-")
            self._conn = open_read_only(self.path, self.name, self.max_memory, self.threads,
                                        os.path.join(self._temp, "spill"))
        return self._conn

    def _close_here(self) -> None:
        super()._close_here()
        if self._temp is not None:
            shutil.rmtree(self._temp, ignore_errors=True)
            self._temp = None

    # -- execution ----------------------------------------------------------------------------

    def catalog(self) -> Catalog:
        """The database's views and macros (:func:`read_catalog`), read once a source: the
        prediction's check below and the agents' count of what a view or a macro reads
        (:mod:`pytest_queryeval.agents.views`) share one read."""
        if self._catalog is None:
            self._catalog = read_catalog(self)
        return self._catalog

    def _check_prediction(self, query: str) -> None:
        """Refuse a prediction that calls a macro, or names a view, of the database that reads
        the host's paths (``current_setting('allowed_paths')``, ``duckdb_settings()``...): the
        guard refuses those calls in the prediction's text, the scrub of a result matches a
        path only whole, and ``ap()``, a macro over ``upper(current_setting('allowed_paths'))``,
        gave the database's path (the fortieth re-probe's N3)."""
        catalog_whole = self.catalog().whole
        if self._path_objects is None:
            self._path_objects = path_objects(self.catalog())
        macros, views = self._path_objects
        if not macros and not views:
            return
        # each way the engine may end its comments (O9), read before lower case (a dollar
        # quote's tag is case-sensitive: ``$A$`` does not close ``$a$``)
        texts = [text.lower() for text in readings(query)]
        plain = "\n".join(_PLAIN_SPELLING.sub("", text) for text in texts)
        called = set(_CALL.findall(plain)) & macros
        named = set(re.findall(r"[\w$]+", plain)) & views
        # a view whose name is no word (``"v s"``): wherever the text names it (O17)
        spelled = "\n".join(dequoted(text) for text in texts)
        named |= {v for v in views if not _IDENTIFIER.fullmatch(v) and v in spelled}
        if called or named or "*" in macros:
            which = sorted(called | named) or ["an operator's" if catalog_whole else
                                               "a macro past the catalog's max_bytes"]
            raise QueryRefused(f"{which[0]} (a macro or view of the database) reads the host's "
                               "file system (its settings' paths): file access, refused")

    def _check_engine(self) -> None:
        if importlib.util.find_spec("duckdb") is None:
            raise MissingDependency(_INSTALL)

    def _run_here(self, query: str, timeout: float, max_rows: int) -> ResultTable:
        """:func:`run_query` in a thread of its own, waited for here: the wait ends at the
        deadline (plus :data:`HARD_GRACE`) and on Ctrl-C even when DuckDB does not, which a
        call into DuckDB from this thread could not (neither ``conn.interrupt()`` nor a signal
        stops DuckDB while it plans)."""
        conn = self._connect()
        done = threading.Event()
        outcome: list[Any] = []

        def work() -> None:
            try:
                outcome.append(run_query(conn, query, timeout, max_rows, self.max_bytes,
                                          os.path.join(self._temp or "", "spill"),
                                          str(self.path)))
            except BaseException as e:  # handed to the waiting thread
                outcome.append(e)
            finally:
                done.set()

        threading.Thread(target=work, name=f"queryeval-duckdb-{self.name}", daemon=True).start()
        try:
            finished = done.wait(timeout + HARD_GRACE)
        except BaseException:  # Ctrl-C: stop the query; if it will not stop, leave it
            conn.interrupt()
            if not done.wait(HARD_GRACE):
                self._abandon(conn)
            raise
        if not finished:
            conn.interrupt()
            self._abandon(conn)
            raise QueryTimeout(f"query exceeded {timeout:g} s ({ABANDONED})")
        if isinstance(outcome[0], BaseException):
            raise outcome[0]
        table: ResultTable = outcome[0]
        return table

    def _abandon(self, conn: Any) -> None:
        """Leave ``conn`` to its query; later queries use a new connection to the same
        database (a cursor: same locked configuration)."""
        self._abandoned.append(conn)
        self._conn = conn.cursor()

    def _worker_call(self, query: str, timeout: float, max_rows: int,
                     ) -> tuple[Callable[..., Reply], tuple[Any, ...]]:
        return worker_query, (self._resolved, self.name, query, timeout, max_rows,
                              self.max_bytes, self.max_memory, self.threads)

    def _tables_here(self, query: str, timeout: float) -> ResultTable:
        conn = self._connect()
        return read_tables(conn, query, os.path.join(self._temp or "", "spill"), timeout)

    def _tables_call(self, query: str, timeout: float,
                     ) -> tuple[Callable[..., Reply], tuple[Any, ...]]:
        return worker_tables, (self._resolved, self.name, query, self.max_memory, self.threads,
                               timeout)

    # -- identity -----------------------------------------------------------------------------

    def ddl(self) -> list[tuple[str, str]]:
        """Each table of the file's ``main`` schema as DuckDB writes its ``CREATE TABLE``, in
        definition order, read through the in-process read-only connection."""
        with self._lock:
            conn = self._connect()
            rows = conn.execute(
                "SELECT table_name, sql FROM duckdb_tables() WHERE database_name = "
                "current_database() AND schema_name = 'main' ORDER BY table_oid").fetchall()
        return [(str(n), tidy_ddl(str(sql))) for n, sql in rows]

    def tables(self) -> tuple[dict[str, list[str]], list[tuple[str, str, str, str]]]:
        """Tables of the file's ``main`` schema with their columns, and foreign keys as
        (table, column, ref_table, ref_column)."""
        with self._lock:
            conn = self._connect()
            db = conn.execute("SELECT current_database()").fetchone()[0]
            tables: dict[str, list[str]] = {}
            for t, c in conn.execute(
                    "SELECT table_name, column_name FROM duckdb_columns() "
                    "WHERE database_name = ? AND schema_name = 'main' "
                    "ORDER BY table_oid, column_index", [db]).fetchall():
                tables.setdefault(t, []).append(c)
            fks: list[tuple[str, str, str, str]] = []
            for t, cols, rt, rcols in conn.execute(
                    "SELECT table_name, constraint_column_names, referenced_table, "
                    "referenced_column_names FROM duckdb_constraints() "
                    "WHERE database_name = ? AND schema_name = 'main' "
                    "AND constraint_type = 'FOREIGN KEY' ORDER BY table_oid, constraint_index",
                    [db]).fetchall():
                fks.extend((t, c, rt, rc) for c, rc in zip(cols, rcols, strict=False))
        return tables, fks
