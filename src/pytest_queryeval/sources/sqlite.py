"""The embedded default SQL source: a SQLite file opened read-only (stdlib ``sqlite3``).

Spec keys: ``path`` (required), ``timeout``, ``max_rows``, ``max_bytes`` (size of one result,
default 64 MiB), ``max_memory`` (address space a query may use in the worker, default 1 GiB;
also the largest temporary file), ``isolation`` (``process`` default | ``thread``).

Why a worker process by default (``isolation: process``, :mod:`pytest_queryeval._isolation.sandbox`):
SQLite checks its progress handler between VM steps only, never inside one function call
(``instr()`` over two 16 MB strings ran past a 5 s timeout for minutes), a result of 128
columns of 16 MB values takes 2 GB in one row before any byte cap can see it, and a sort can
spill gigabytes of temporary files. In the worker, the deadline is also enforced by killing
it (the next query starts a fresh one), its address space is capped at ``max_memory``, its
temporary files live in its own directory (removed with it) and each is capped at
``max_memory`` bytes, and results over ``max_bytes`` never leave it. One worker per
``max_memory`` value serves every SQLite file of the session (connections are cached in it).

``isolation: thread`` runs queries in the pytest process as before (no pickling; for trusted
suites only): the progress handler is then the only deadline and memory is not capped.
"""

from __future__ import annotations

import functools
import re
import sqlite3
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote

from ..errors import QueryFailed, QueryRefused, QueryTimeout, SourceUnavailable
from ..results import ResultTable
from .base import (
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_ROWS,
    DEFAULT_TIMEOUT,
    FetchedRows,
    tidy_ddl,
)
from .sandboxed import EngineDenied, Reply, SandboxedFileSource, packing, worker_reply

#: VM instructions between two deadline checks: small enough to stop within milliseconds,
#: large enough to cost nothing measurable.
_PROGRESS_STEPS = 10_000
_FETCH_BATCH = 1_000
#: Largest string or blob a query may build (SQLITE_LIMIT_LENGTH): the row cap bounds rows, this
#: bounds one value (``randomblob(500000000)`` would otherwise allocate 500 MB in one cell).
MAX_VALUE_BYTES = 16 * 1024 * 1024
#: Most a batch of fetched rows can hold (rows x columns x MAX_VALUE_BYTES): the batch size is
#: cut so that ``max_bytes`` is checked before this much more is fetched.
_BATCH_BYTES = 512 * 1024 * 1024
#: Address space a query may use in the worker, and the largest temporary file it may write.
DEFAULT_MAX_MEMORY = 1024 * 1024 * 1024


def batch_rows(columns: int) -> int:
    """Rows per ``fetchmany``: as many as ``_BATCH_BYTES`` allows at the worst (every value at
    the length cap), from 1 to 1 000; the size of small batches costs little in SQLite."""
    return max(1, min(_FETCH_BATCH, _BATCH_BYTES // (max(columns, 1) * MAX_VALUE_BYTES)))


def open_read_only(path: Path, name: str) -> sqlite3.Connection:
    """A connection that cannot write: ``mode=ro``, ``query_only``, values capped at
    :data:`MAX_VALUE_BYTES`, temporary tables and indices in memory (under the worker's
    ``RLIMIT_AS``, not on disk)."""
    if not path.is_file():
        raise SourceUnavailable(f"datasource {name!r}: no SQLite file at {path}")
    uri = f"file:{quote(str(path.resolve()))}?mode=ro"
    try:
        conn = sqlite3.connect(uri, uri=True, check_same_thread=False, isolation_level=None)
        conn.execute("PRAGMA query_only = ON")
        conn.execute("PRAGMA temp_store = MEMORY")
        conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_VALUE_BYTES)
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()  # not a database?
    except sqlite3.Error as e:
        raise SourceUnavailable(f"datasource {name!r}: cannot open {path}: {e}") from None
    return conn


#: What the authorizer of a predicted query lets a statement do: read tables, select, recurse
#: and call functions; nothing else (no write, schema change, ATTACH, PRAGMA, transaction).
_READ_ACTIONS = frozenset({sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_RECURSIVE})
#: Functions the authorizer denies (the guard's SQLite names: extension loading, file access
#: of the shell's helpers, the FTS3 tokenizer pointer).
_DENIED_FUNCTIONS = frozenset({"load_extension", "writefile", "readfile", "edit",
                               "fts3_tokenizer"})


def _authorize(action: int, arg1: str | None, arg2: str | None, db: str | None,
               trigger: str | None) -> int:
    """SQLite's authorizer for a predicted query: reading only (see :data:`_READ_ACTIONS`),
    of the database's tables and views and of the virtual tables :func:`_closed_module`
    leaves open; the building of such a table's schema on first use (an ``SQLITE_UPDATE`` of
    ``sqlite_master``, on a connection that cannot write); the pragmas of
    :data:`_READ_PRAGMAS`."""
    if action == sqlite3.SQLITE_READ:
        return sqlite3.SQLITE_DENY if _closed_module((arg1 or "").lower()) else sqlite3.SQLITE_OK
    if action in _READ_ACTIONS:
        return sqlite3.SQLITE_OK
    if action == sqlite3.SQLITE_FUNCTION:
        return sqlite3.SQLITE_DENY if (arg2 or "").lower() in _DENIED_FUNCTIONS \
            else sqlite3.SQLITE_OK
    if action == sqlite3.SQLITE_PRAGMA:
        return sqlite3.SQLITE_OK if (arg1 or "").lower() in _READ_PRAGMAS \
            else sqlite3.SQLITE_DENY
    if action == sqlite3.SQLITE_UPDATE and (arg1 or "").lower() in _SCHEMA_TABLES:
        return sqlite3.SQLITE_OK
    return sqlite3.SQLITE_DENY


#: The virtual tables a prediction may read beside the pragmas' table functions: JSON's.
_OPEN_MODULES = frozenset({"json_each", "json_tree"})
#: Pragmas whose table function a prediction may not read: the database file's host path.
_CLOSED_PRAGMAS = frozenset({"database_list"})
#: The pragmas a prediction may ask (as their table functions, ``pragma_table_info('t')``):
#: those that read the schema, none that takes a value (``PRAGMA user_version = 7`` asks the
#: same action as ``pragma_user_version``).
_READ_PRAGMAS = frozenset({
    "table_info", "table_xinfo", "table_list", "index_list", "index_info", "index_xinfo",
    "foreign_key_list", "foreign_key_check", "integrity_check", "quick_check",
    "function_list", "module_list", "pragma_list", "collation_list", "compile_options",
    # FTS5 asks it when it opens a table (a count of other connections' commits): without it
    # no FTS5 table could be read (the thirty-ninth re-probe's L2)
    "data_version",
})
#: The schema table SQLite updates, in memory, when it builds an eponymous virtual table.
_SCHEMA_TABLES = frozenset({"sqlite_master", "sqlite_schema", "sqlite_temp_master"})


def _closed_module(name: str) -> bool:
    """Whether ``name`` is a virtual-table module of this SQLite a prediction may not read:
    every module this build has (``pragma_module_list``) but JSON's and the pragmas' table
    functions. Why the engine's list and not the guard's: ``sqlite_stmt`` gives the
    statements earlier cases ran on the shared connection and their scan counts (a
    forbidden table's row count), and ``SELECT ... FROM pragma_table_info('Genre') p,
    sqlite_stmt st`` ran, its pragma denied first and the whole text then run without the
    authorizer (the thirty-sixth re-probe); a module of another build (``sqlite_dbpage``,
    the file's raw pages) is on its list too."""
    if name not in _modules():
        return False
    if name in _OPEN_MODULES:
        return False
    return not (name.startswith("pragma_") and name[len("pragma_"):] not in _CLOSED_PRAGMAS)


@functools.cache
def _modules() -> frozenset[str]:
    """This SQLite's virtual-table modules, read once a process."""
    conn = sqlite3.connect(":memory:")
    try:
        return frozenset(str(r[0]).lower() for r in conn.execute("SELECT name FROM pragma_module_list"))
    finally:
        conn.close()


def run_query(conn: sqlite3.Connection, query: str, timeout: float, max_rows: int,
              max_bytes: int, guarded: bool = False) -> ResultTable:
    """Execute and fetch under a deadline checked by the progress handler (every
    :data:`_PROGRESS_STEPS` VM steps): the whole deadline in a thread, the soft one in the
    worker (which the parent backs with a kill). ``guarded``: a predicted query, prepared
    under :func:`_authorize` (a denied action raises :class:`EngineDenied`)."""
    deadline = time.monotonic() + timeout
    expired = False

    def progress() -> int:
        nonlocal expired
        if time.monotonic() > deadline:
            expired = True
            return 1  # non-zero aborts the statement ("interrupted")
        return 0

    conn.set_progress_handler(progress, _PROGRESS_STEPS)
    if guarded:
        conn.set_authorizer(_authorize)
    start = time.perf_counter()
    fetched = FetchedRows(max_rows, max_bytes)
    try:
        cur = conn.execute(query)
        columns = [d[0] for d in cur.description or ()]
        step = batch_rows(len(columns))
        while fetched.add(cur.fetchmany(fetched.wanted(step))):
            pass
        cur.close()
    except sqlite3.Error as e:
        if expired:
            raise QueryTimeout(f"query exceeded {timeout:g} s") from None
        msg = str(e)
        if msg == "interrupted":
            # Not our deadline: an exception inside the progress handler, i.e. Ctrl-C (the
            # sqlite3 module swallows it and aborts the statement). Stop the session.
            raise KeyboardInterrupt from None
        if guarded and msg.startswith("not authorized"):
            raise EngineDenied(f"the engine refused it ({msg})") from None
        if "readonly database" in msg:  # mode=ro and query_only both say so
            raise QueryRefused(f"the source is read-only ({msg})") from None
        if "disk is full" in msg or "disk I/O error" in msg:
            msg += " (temporary files are capped at max_memory bytes each)"
        raise QueryFailed(msg) from None
    except (ValueError, OverflowError) as e:  # bad text encoding, huge ints...
        raise QueryFailed(str(e)) from None
    finally:
        conn.set_progress_handler(None, 0)
        if guarded:
            conn.set_authorizer(None)
        if conn.in_transaction:
            conn.rollback()
    return fetched.table(columns, time.perf_counter() - start)


def explained(query: str) -> str:
    """``EXPLAIN`` of ``query`` as SQLite runs it: past the empty statements, blanks and
    comments SQLite skips before it (``;SELECT ... FROM sqlite_stmt`` runs, ``EXPLAIN
    ;SELECT ...`` is a syntax error, so the account of the tables read and the check of the
    protected ones failed and the text ran: the thirty-sixth re-probe's H8)."""
    at = 0
    while at < len(query):
        if query[at] in "; \t\r\n\f\v":
            at += 1
        elif query.startswith("--", at):
            end = query.find("\n", at)
            at = len(query) if end < 0 else end + 1
        elif query.startswith("/*", at):
            end = query.find("*/", at + 2)
            at = len(query) if end < 0 else end + 2
        else:
            break
    return "EXPLAIN " + query[at:]


def read_tables(conn: sqlite3.Connection, query: str, timeout: float) -> ResultTable:
    """The tables SQLite reads for ``query``: its authorizer's ``SQLITE_READ`` reports while
    ``EXPLAIN`` compiles the statement, which runs nothing. The authorizer is told the real
    table under a CTE of the same name and the tables under a view, so the count is the
    engine's, not the text's; the actions a predicted query may not take are denied as
    :func:`_authorize` denies them (the compile fails: QueryFailed)."""
    seen: dict[str, None] = {}

    def collect(action: int, arg1: str | None, arg2: str | None, db: str | None,
                trigger: str | None) -> int:
        if action == sqlite3.SQLITE_READ and arg1:
            seen[arg1] = None
        return _authorize(action, arg1, arg2, db, trigger)

    deadline = time.monotonic() + timeout
    conn.set_progress_handler(lambda: int(time.monotonic() > deadline), _PROGRESS_STEPS)
    conn.set_authorizer(collect)
    start = time.perf_counter()
    try:
        _compiled(conn, explained(query))
    except (sqlite3.Error, ValueError, OverflowError) as e:
        raise QueryFailed(f"the engine could not compile it ({e})") from None
    finally:
        conn.set_authorizer(None)
        conn.set_progress_handler(None, 0)
    return ResultTable(["table"], [(name,) for name in seen], seconds=time.perf_counter() - start)


#: Python's refusal of a statement whose parameters were given no values.
_UNBOUND = re.compile(r"uses (\d+), and there are 0 supplied")


class _Nulls(Mapping[str, None]):
    """A NULL for every named parameter."""

    def __getitem__(self, key: str) -> None:
        return None

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0


def _compiled(conn: sqlite3.Connection, explain: str) -> None:
    """Run ``explain`` (an ``EXPLAIN``, which runs nothing), its parameters bound to NULL:
    the compile (and the authorizer's account) does not depend on their values, and a text
    with a placeholder (``... 'Adams' IN v_emp AND 1 = ?``) had no account at all, so only
    its text was read, which did not read SQLite's ``IN v_emp`` (the thirty-ninth re-probe's
    H9)."""
    try:
        conn.execute(explain).fetchall()
        return
    except sqlite3.ProgrammingError as e:
        unbound = _UNBOUND.search(str(e))
        if unbound is None or int(unbound.group(1)) > 32766:  # SQLITE_MAX_VARIABLE_NUMBER
            raise
    try:
        conn.execute(explain, (None,) * int(unbound.group(1))).fetchall()
    except sqlite3.ProgrammingError:  # named parameters a newer Python binds by name only
        conn.execute(explain, _Nulls()).fetchall()


def worker_tables(path: str, name: str, query: str, timeout: float) -> Reply:
    """:func:`read_tables` inside the sandbox worker, on the connection cached there."""
    from .._isolation.sandbox import worker_state

    conns: dict[str, sqlite3.Connection] = worker_state().setdefault("sqlite", {})
    conn = conns.get(path)
    if conn is None:
        conn = conns[path] = open_read_only(Path(path), name)
    return worker_reply(read_tables(conn, query, timeout), 1 << 20)


#: Connections a worker keeps open (one per SQLite file, least recently used closed first).
_WORKER_CONNECTIONS = 32


def worker_query(path: str, name: str, query: str, timeout: float, max_rows: int,
                 max_bytes: int, guarded: bool = False) -> Reply:
    """:func:`run_query` inside the sandbox worker, on a connection cached there. A result
    cut by ``max_bytes`` keeps only the rows that fit in it: the rest never leave the
    worker."""
    from .._isolation.sandbox import worker_state

    conns: dict[str, sqlite3.Connection] = worker_state().setdefault("sqlite", {})
    conn = conns.pop(path, None)
    if conn is None:
        conn = open_read_only(Path(path), name)
        while len(conns) >= _WORKER_CONNECTIONS:
            conns.pop(next(iter(conns))).close()
    conns[path] = conn  # most recently used last
    return worker_reply(packing(run_query, conn, query, timeout, max_rows, max_bytes,
                                guarded), max_bytes)


class SqliteSource(SandboxedFileSource):
    """A SQLite database file, opened with ``mode=ro`` and ``PRAGMA query_only``.

    Three layers keep the file unchanged: a predicted statement that does not start like a
    query is refused by :func:`check_read_only` before execution; one that does runs under
    SQLite's authorizer (reading only; the guard names the reason when it refuses); and the
    connection cannot write anyway.
    """

    type = "sqlite"
    dialect = "sqlite"
    label = "SQLite"
    wal_suffix = "-wal"
    engine_guard = True

    def __init__(self, name: str, path: str | Path, *, timeout: float = DEFAULT_TIMEOUT,
                 max_rows: int = DEFAULT_MAX_ROWS, max_bytes: int = DEFAULT_MAX_BYTES,
                 max_memory: int = DEFAULT_MAX_MEMORY, isolation: str = "process") -> None:
        super().__init__(name, path, timeout=timeout, max_rows=max_rows, max_bytes=max_bytes,
                         max_memory=max_memory, isolation=isolation)
        self._conn: sqlite3.Connection | None = None

    # -- connection ---------------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        if self._conn is None:
            self._conn = open_read_only(self.path, self.name)
        return self._conn

    # -- execution ----------------------------------------------------------------------------

    def _run_here(self, query: str, timeout: float, max_rows: int) -> ResultTable:
        return run_query(self._connect(), query, timeout, max_rows, self.max_bytes)

    def _worker_call(self, query: str, timeout: float, max_rows: int,
                     ) -> tuple[Callable[..., Reply], tuple[Any, ...]]:
        return worker_query, (self._resolved, self.name, query, timeout, max_rows,
                              self.max_bytes)

    def _run_here_guarded(self, query: str, timeout: float, max_rows: int) -> ResultTable:
        return run_query(self._connect(), query, timeout, max_rows, self.max_bytes, True)

    def _guarded_call(self, query: str, timeout: float, max_rows: int,
                      ) -> tuple[Callable[..., Reply], tuple[Any, ...]]:
        return worker_query, (self._resolved, self.name, query, timeout, max_rows,
                              self.max_bytes, True)

    def _tables_here(self, query: str, timeout: float) -> ResultTable:
        return read_tables(self._connect(), query, timeout)

    def _tables_call(self, query: str, timeout: float,
                     ) -> tuple[Callable[..., Reply], tuple[Any, ...]]:
        return worker_tables, (self._resolved, self.name, query, timeout)

    # -- identity -----------------------------------------------------------------------------

    def ddl(self) -> list[tuple[str, str]]:
        """Each table's ``CREATE TABLE`` as SQLite keeps it, in definition order, read through
        the in-process read-only connection (the one :meth:`tables` uses)."""
        with self._lock:
            rows = self._connect().execute(
                "SELECT name, sql FROM sqlite_master WHERE type = 'table' "
                "AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' AND sql IS NOT NULL "
                "ORDER BY rowid").fetchall()
        return [(str(n), tidy_ddl(str(sql))) for n, sql in rows]

    def tables(self) -> tuple[dict[str, list[str]], list[tuple[str, str, str, str]]]:
        """Tables with their columns, and foreign keys as (table, column, ref_table, ref_column)."""
        with self._lock:
            conn = self._connect()
            names = [r[0] for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY rowid")]
            tables: dict[str, list[str]] = {}
            fks: list[tuple[str, str, str, str]] = []
            for t in names:
                quoted = '"' + t.replace('"', '""') + '"'
                tables[t] = [r[1] for r in conn.execute(f"PRAGMA table_info({quoted})")]
                for r in conn.execute(f"PRAGMA foreign_key_list({quoted})"):
                    fks.append((t, r[3], r[2], r[4]))
        return tables, fks
