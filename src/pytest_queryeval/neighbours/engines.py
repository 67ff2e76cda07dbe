"""The engines a counterexample database is built and checked on: SQLite and DuckDB
(PostgreSQL's, which builds in a throwaway database of a server, is :mod:`.pgengine`).

Why one module of this size: the two adapters share the candidate protocol (build, run under
a deadline, read back, prove), and DuckDB's kept database (one per thread, each candidate in a
rolled-back transaction) is a variant of its adapter, not a capability of its own.

Why one small adapter per engine (as the sources are): the search, the shrinking and the
proof are the same for both; what differs is how the real file's schema is read, how a
candidate is built (both copy the real DDL, so the engine enforces every constraint and a row
it refuses is left out), how a query runs under a deadline (SQLite's progress handler,
DuckDB's ``interrupt()`` from a timer) and how the constraints of a written file are checked.

A candidate is a few rows, so its queries are bounded hard: each run has its own seconds
(:meth:`Engine.attempt`), a SQLite candidate refuses a string or blob over
:data:`MAX_VALUE_BYTES` and a DuckDB candidate has :data:`DUCKDB_MEMORY` and no temporary
directory to spill to, so a query that loops, cross-joins or allocates without end fails
quickly with a reason instead of spending the case's whole budget (or the worker's memory)
on one database.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, suppress
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol, TypeVar, cast

from ..results import ResultTable
from .schema import Column, DbSchema, Table
from .schema import introspect as introspect_sqlite

#: Rows of a candidate: table name -> rows, each a tuple in the table's column order.
Rows = dict[str, list[tuple[Any, ...]]]
#: Distinct real values sampled per column (in the file's order, so the same every run).
SAMPLE = 12
#: Rows of a result read from a candidate (candidates are small; a blow-up is cut here).
MAX_RESULT_ROWS = 10_000
#: The longest string or blob a query may make on a SQLite candidate (``SQLITE_LIMIT_LENGTH``):
#: ``randomblob(900000000)`` is refused, not allocated.
MAX_VALUE_BYTES = 16 << 20
#: A DuckDB candidate's ``memory_limit`` (with no temporary directory: past it, an error).
DUCKDB_MEMORY = "256MB"
#: A DuckDB candidate's settings: no file access, :data:`DUCKDB_MEMORY` and no temporary
#: directory to spill to, and one thread. Why one: a candidate's few rows never make a second
#: task, but with more threads each call still hands its work to DuckDB's scheduler and wakes
#: its workers, which on a busy machine doubled an INSERT's time (0.6 against 1.1 ms median
#: at load 9, the same at rest).
_CANDIDATE_CONFIG: dict[str, str | bool | int | float | list[str]] = {
    "enable_external_access": False, "memory_limit": DUCKDB_MEMORY, "temp_directory": "",
    "threads": 1}
#: Characters of an engine's error message kept in a reason.
ERROR_CHARS = 200


@dataclass(frozen=True)
class Failed:
    """A query that did not give a result on a candidate: it ran out of its seconds
    (``timeout``) or the engine raised (``error``)."""

    kind: str
    seconds: float
    message: str = ""

    def describe(self) -> str:
        """``did not finish in 5 s`` / ``raised: integer overflow``, for a reason."""
        if self.kind == "timeout":
            return f"did not finish in {self.seconds:g} s"
        return f"raised: {self.message}"


def _message(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= ERROR_CHARS else text[:ERROR_CHARS - 1] + "\u2026"


class Closable(Protocol):
    """What the search does with an engine's connection itself: close it (everything else
    goes back through the engine that opened it)."""

    def close(self) -> None: ...


#: An engine's connection type (``sqlite3.Connection``, :class:`DuckConnection`).
C = TypeVar("C", bound=Closable)


class DuckConnection(Protocol):
    """What :class:`DuckdbEngine` uses of a ``duckdb.DuckDBPyConnection`` (DuckDB is an
    optional back-end: typed by what is called, not imported for the type checker). Its
    ``execute`` returns the connection, which then fetches."""

    def execute(self, query: str, parameters: object = ..., /) -> DuckConnection: ...
    def fetchall(self) -> list[tuple[Any, ...]]: ...
    def fetchmany(self, size: int = ..., /) -> list[tuple[Any, ...]]: ...
    def fetchone(self) -> tuple[Any, ...] | None: ...
    @property
    def description(self) -> list[Any] | None: ...
    def close(self) -> None: ...
    def interrupt(self) -> None: ...


class Engine(Protocol[C]):
    """One engine's candidate protocol; ``C`` is its connection type, handed back to it."""

    name: str
    dialect: str

    def open_real(self, path: Path) -> C: ...
    def introspect(self, conn: C) -> DbSchema: ...
    def sample(self, conn: C, table: str, column: str) -> list[object]: ...
    def build(self, schema: DbSchema, rows: Rows) -> C: ...
    def candidate(self, schema: DbSchema, rows: Rows,
                  queries: Sequence[str]) -> AbstractContextManager[C]: ...
    def held_rows(self, conn: C, schema: DbSchema, tables: Sequence[str]) -> Rows: ...
    def run(self, conn: C, sql: str, deadline: float) -> ResultTable | None: ...
    def attempt(self, conn: C, sql: str, seconds: float) -> ResultTable | Failed: ...
    def write(self, schema: DbSchema, rows: Rows, path: Path) -> None: ...
    def checks_clean(self, path: Path) -> bool: ...
    def open_written(self, path: Path) -> C: ...


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def sql_literal(value: object) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, bytes):
        return "X'" + value.hex() + "'"
    return "'" + str(value).replace("'", "''") + "'"


def inserts(schema: DbSchema, rows: Rows) -> list[str]:
    return [f"INSERT INTO {_q(t.name)} VALUES ({', '.join(sql_literal(v) for v in row)});"
            for t in schema.tables for row in rows.get(t.name, [])]


class SqliteEngine:
    name = "sqlite"
    dialect = "sqlite"

    def open_real(self, path: Path) -> sqlite3.Connection:
        return sqlite3.connect(f"file:{path}?mode=ro", uri=True)

    def introspect(self, conn: sqlite3.Connection) -> DbSchema:
        return introspect_sqlite(conn)

    def sample(self, conn: sqlite3.Connection, table: str, column: str) -> list[object]:
        t, c = _q(table), _q(column)
        try:
            rows = conn.execute(f"SELECT DISTINCT {c} FROM {t} WHERE {c} IS NOT NULL "
                                f"LIMIT {SAMPLE}").fetchall()
            ends = conn.execute(f"SELECT min({c}), max({c}) FROM {t}").fetchall()
        except sqlite3.Error:
            return []
        return [r[0] for r in rows] + [v for v in ends[0] if v is not None]

    def build(self, schema: DbSchema, rows: Rows) -> sqlite3.Connection:
        conn = sqlite3.connect(":memory:")
        conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_VALUE_BYTES)
        conn.execute("PRAGMA foreign_keys = ON")
        for ddl in schema.ddl():
            try:
                conn.execute(ddl)
            except sqlite3.Error:
                continue
        for table in schema.tables:
            marks = ", ".join("?" for _ in table.columns)
            for row in rows.get(table.name, []):
                try:
                    conn.execute(f"INSERT INTO {_q(table.name)} VALUES ({marks})", row)
                except sqlite3.Error:
                    continue
        return conn

    @contextmanager
    def candidate(self, schema: DbSchema, rows: Rows,
                  queries: Sequence[str]) -> Iterator[sqlite3.Connection]:
        """A fresh in-memory database of ``rows`` for the block (cheap on SQLite)."""
        conn = self.build(schema, rows)
        try:
            yield conn
        finally:
            conn.close()

    def held_rows(self, conn: sqlite3.Connection, schema: DbSchema, tables: Sequence[str]) -> Rows:
        out: Rows = {}
        for name in tables:
            table = schema.table(name)
            cols = ", ".join(_q(c.name) for c in table.columns)
            out[table.name] = [tuple(r) for r in conn.execute(
                f"SELECT {cols} FROM {_q(table.name)} ORDER BY rowid")]
        return out

    def run(self, conn: sqlite3.Connection, sql: str, deadline: float) -> ResultTable | None:
        out = self.attempt(conn, sql, deadline - time.monotonic())
        return out if isinstance(out, ResultTable) else None

    def attempt(self, conn: sqlite3.Connection, sql: str, seconds: float) -> ResultTable | Failed:
        """``sql``'s result, or why there is none; interrupted past ``seconds`` (the
        progress handler records that it stopped the query, so a timeout is told apart
        from an engine error)."""
        deadline = time.monotonic() + max(0.0, seconds)
        stopped = False

        def tick() -> int:
            nonlocal stopped
            stopped = stopped or time.monotonic() > deadline
            return int(stopped)

        conn.set_progress_handler(tick, 1000)
        try:
            cur = conn.execute(sql)
            rows = [tuple(r) for r in cur.fetchmany(MAX_RESULT_ROWS)]
            cols = [d[0] for d in cur.description or ()]
        except (sqlite3.Error, MemoryError, OverflowError, ValueError) as exc:
            return Failed("timeout", seconds) if stopped else Failed("error", seconds,
                                                                     _message(exc))
        finally:
            conn.set_progress_handler(None, 0)
        return ResultTable(cols, rows)

    def write(self, schema: DbSchema, rows: Rows, path: Path) -> None:
        path.unlink(missing_ok=True)
        conn = sqlite3.connect(path)
        try:
            conn.execute("PRAGMA foreign_keys = ON")
            # a self-reference may point at a later row: checked at COMMIT, not per row
            script = [d.rstrip(";") + ";" for d in schema.ddl()]
            script += ["BEGIN;", "PRAGMA defer_foreign_keys = ON;", *inserts(schema, rows),
                       "COMMIT;"]
            conn.executescript("\n".join(script))
        finally:
            conn.close()

    def checks_clean(self, path: Path) -> bool:
        conn = sqlite3.connect(path)
        try:
            conn.execute("PRAGMA foreign_keys = ON")
            return (not conn.execute("PRAGMA foreign_key_check").fetchall()
                    and conn.execute("PRAGMA integrity_check").fetchone() == ("ok",))
        finally:
            conn.close()

    def open_written(self, path: Path) -> sqlite3.Connection:
        conn = sqlite3.connect(path)
        conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_VALUE_BYTES)
        return conn


_DUCKDB_AFFINITY = (("INT", "INTEGER"), ("BOOL", "BOOLEAN"), ("DOUBLE", "REAL"),
                    ("FLOAT", "REAL"), ("REAL", "REAL"), ("DECIMAL", "REAL"), ("NUMERIC", "REAL"),
                    ("DATE", "TEMPORAL"), ("TIME", "TEMPORAL"), ("CHAR", "TEXT"),
                    ("TEXT", "TEXT"), ("STRING", "TEXT"), ("BLOB", "BLOB"))


def duckdb_affinity(data_type: str) -> str:
    upper = data_type.upper()
    return next((aff for key, aff in _DUCKDB_AFFINITY if key in upper), "TEXT")


class DuckdbEngine:
    """DuckDB's constraints (PRIMARY KEY, UNIQUE, NOT NULL, CHECK, FOREIGN KEY) are enforced on
    insert, as SQLite's are with ``foreign_keys`` on."""

    name = "duckdb"
    dialect = "duckdb"

    def open_real(self, path: Path) -> DuckConnection:
        """The file, opened read-only when first asked something (:class:`_RealFile`)."""
        return _RealFile(path)

    def introspect(self, conn: DuckConnection) -> DbSchema:
        """The file's schema, remembered per file as its samples are (:data:`_SAMPLES`):
        reading it is five queries and more per case, about 50 ms, and opening the file for
        them 40 ms more (a search that knows the schema and samples does not open it)."""
        key = conn.key if isinstance(conn, _RealFile) else None
        if key is not None:
            with _SAMPLES_LOCK:
                known = _SCHEMAS.get(key)
            if known is not None:
                return known
        schema = _introspect_duckdb(conn)
        if key is not None:
            with _SAMPLES_LOCK:
                if len(_SCHEMAS) >= 256:
                    _SCHEMAS.clear()
                _SCHEMAS[key] = schema
        return schema

    def sample(self, conn: DuckConnection, table: str, column: str) -> list[object]:
        """The column's sampled values, remembered per file (:data:`_SAMPLES`)."""
        key = (conn.key, table, column) if isinstance(conn, _RealFile) else None
        if key is not None:
            with _SAMPLES_LOCK:
                known = _SAMPLES.get(key)
            if known is not None:
                return list(known)
        t, c = _q(table), _q(column)
        try:
            rows = conn.execute(f"SELECT DISTINCT {c} FROM {t} WHERE {c} IS NOT NULL "
                                f"ORDER BY {c} LIMIT {SAMPLE}").fetchall()
            ends = conn.execute(f"SELECT min({c}), max({c}) FROM {t}").fetchall()
        except Exception:
            return []
        out = [r[0] for r in rows] + [v for v in ends[0] if v is not None]
        if key is not None:
            with _SAMPLES_LOCK:
                if len(_SAMPLES) >= 8192:
                    _SAMPLES.clear()
                _SAMPLES[key] = tuple(out)
        return out

    def build(self, schema: DbSchema, rows: Rows) -> DuckConnection:
        """A fresh in-memory database of ``rows`` (its own connection, closed by the caller)."""
        conn = _duckdb_database(schema)
        for table in schema.tables:
            _insert_rows(conn, table, rows.get(table.name, []))
        return conn

    @contextmanager
    def candidate(self, schema: DbSchema, rows: Rows,
                  queries: Sequence[str]) -> Iterator[DuckConnection]:
        """A database of ``rows`` for the duration of the block.

        Why a kept database: opening a DuckDB database costs about 20 ms, a hundred times what
        a candidate's few rows and two queries cost, so a worker thread keeps one in-memory
        database of the schema (:class:`_Workspace`) and each candidate's rows live in a
        transaction that is rolled back afterwards. Only queries that cannot change it (one
        plain query each: :func:`plain_query`) run there; any other query gets a fresh
        database of its own, as does every candidate whose kept database was left in a state
        it cannot vouch for (an interrupted query, a failed cleanup)."""
        space = _workspace(schema) if all(plain_query(q) for q in queries) else None
        if space is not None:
            space.prepare(queries)
        if space is None or space.spoiled or not space.fill(rows):
            conn = self.build(schema, rows)
            try:
                yield conn
            finally:
                conn.close()
            return
        try:
            yield space.conn
        finally:
            space.clear()

    def held_rows(self, conn: DuckConnection, schema: DbSchema, tables: Sequence[str]) -> Rows:
        space = getattr(_LOCAL, "space", None)
        if space is not None and space.conn is conn:
            space.readable()
        out: Rows = {}
        for name in tables:
            table = schema.table(name)
            cols = ", ".join(_q(c.name) for c in table.columns)
            out[table.name] = [tuple(r) for r in conn.execute(
                f"SELECT {cols} FROM {_q(table.name)} ORDER BY rowid").fetchall()]
        return out

    def run(self, conn: DuckConnection, sql: str, deadline: float) -> ResultTable | None:
        out = self.attempt(conn, sql, deadline - time.monotonic())
        return out if isinstance(out, ResultTable) else None

    def attempt(self, conn: DuckConnection, sql: str, seconds: float) -> ResultTable | Failed:
        """``sql``'s result, or why there is none; interrupted by a timer past ``seconds``
        (which records that it fired: a timeout, not an engine error)."""
        import duckdb

        space: _Workspace | None = getattr(_LOCAL, "space", None)
        name = space.names.get(sql) if space is not None and space.conn is conn else None
        if name is not None and space is not None:
            out = self._attempt(conn, f"EXECUTE {name}", seconds)
            if not isinstance(out, Failed) or out.kind == "timeout":
                return out
            # the engine's own words for the error (the plain query's, with its LINE), after
            # the transaction the failure aborted is filled again
            try:
                space.readable()
            except duckdb.Error:
                return out
        return self._attempt(conn, sql, seconds)

    def _attempt(self, conn: DuckConnection, sql: str, seconds: float) -> ResultTable | Failed:
        import duckdb

        fired = _ALARM.arm(conn, min(max(0.0, seconds), 86_400.0))
        try:
            cur = conn.execute(sql)
            rows = [tuple(r) for r in cur.fetchmany(MAX_RESULT_ROWS)]
            cols = [d[0] for d in cur.description or ()]
        except (duckdb.Error, MemoryError, OverflowError, ValueError) as exc:
            _ALARM.disarm(fired)
            return Failed("timeout", seconds) if fired.is_set() else Failed("error", seconds,
                                                                            _message(exc))
        finally:
            _ALARM.disarm(fired)
            if fired.is_set():
                _spoiled(conn)
        return ResultTable(cols, rows)

    def write(self, schema: DbSchema, rows: Rows, path: Path) -> None:
        import duckdb

        path.unlink(missing_ok=True)
        conn = duckdb.connect(str(path), config={"threads": 1})
        try:
            for ddl in schema.ddl():
                conn.execute(ddl)
            # one transaction: each INSERT on its own was a commit to the file, 0.2 s for a
            # counterexample of a dozen rows; every constraint is still checked per statement
            conn.execute("BEGIN TRANSACTION")
            for statement in inserts(schema, rows):
                conn.execute(statement)
            conn.execute("COMMIT")
        finally:
            conn.close()

    def checks_clean(self, path: Path) -> bool:
        return True  # every constraint was enforced while the file was written

    def open_written(self, path: Path) -> DuckConnection:
        import duckdb

        conn: DuckConnection = duckdb.connect(str(path), read_only=True,
                                              config=_CANDIDATE_CONFIG)
        return conn


def _introspect_duckdb(conn: DuckConnection) -> DbSchema:
    """The tables of the file's own database, parents first, with their keys and references."""
    tables = conn.execute("SELECT table_name, sql FROM duckdb_tables() WHERE database_name = "
                          "current_database() AND NOT internal ORDER BY table_oid").fetchall()
    cons = conn.execute(
        "SELECT table_name, constraint_type, constraint_column_names, referenced_table, "
        "referenced_column_names FROM duckdb_constraints() WHERE database_name = "
        "current_database()").fetchall()
    keys: dict[str, set[str]] = {}
    refs: dict[tuple[str, str], tuple[str, str]] = {}
    for table, kind, cols, ref_table, ref_cols in cons:
        if kind == "PRIMARY KEY":
            keys.setdefault(table, set()).update(c.lower() for c in cols)
        elif kind == "FOREIGN KEY":
            for col, ref in zip(cols, ref_cols or cols, strict=False):
                refs[(table, col.lower())] = (ref_table, ref)
    out: dict[str, Table] = {}
    parents: dict[str, set[str]] = {}
    for name, ddl in tables:
        columns = tuple(
            Column(col, duckdb_affinity(dtype), not nullable,
                   col.lower() in keys.get(name, set()), refs.get((name, col.lower())))
            for col, dtype, nullable in conn.execute(
                "SELECT column_name, data_type, is_nullable FROM duckdb_columns() WHERE "
                "database_name = current_database() AND table_name = ? ORDER BY "
                "column_index", [name]).fetchall())
        out[name] = Table(name, columns, ddl)
        parents[name] = {r[0] for (t, _c), r in refs.items() if t == name and r[0] != name}
    from .schema import _parents_first

    return DbSchema(tuple(out[n] for n in _parents_first(parents)))


def _duckdb_database(schema: DbSchema) -> DuckConnection:
    """A new in-memory DuckDB database with the real DDL (a statement it refuses is left out)."""
    import duckdb

    conn: DuckConnection = duckdb.connect(":memory:", config=_CANDIDATE_CONFIG)
    for ddl in schema.ddl():
        try:
            conn.execute(ddl)
        except duckdb.Error:
            continue
    return conn


def _insert_rows(conn: DuckConnection, table: Table, rows: Sequence[tuple[Any, ...]]) -> None:
    """One row at a time, each on its own (a row the engine refuses is left out)."""
    import duckdb

    marks = ", ".join("?" for _ in table.columns)
    for row in rows:
        try:
            conn.execute(f"INSERT INTO {_q(table.name)} VALUES ({marks})", list(row))
        except duckdb.Error:
            continue


@lru_cache(maxsize=256)
def plain_query(sql: str) -> bool:
    """True when ``sql`` is one query that reads and cannot write: no second statement, no
    DML, DDL, ``SET``, ``PRAGMA`` or transaction control anywhere in it (as sqlglot reads it
    in DuckDB's dialect; what it cannot read is not plain)."""
    import sqlglot
    from sqlglot import exp

    try:
        statements = [t for t in sqlglot.parse(sql, read="duckdb") if t is not None]
    except Exception:
        return False
    if len(statements) != 1 or not isinstance(statements[0], exp.Query):
        return False
    unsafe = (exp.Command, exp.Insert, exp.Update, exp.Delete, exp.Merge, exp.Create, exp.Drop,
              exp.Alter, exp.Set, exp.Pragma, exp.Transaction, exp.Commit, exp.Rollback,
              exp.Into, exp.Copy, exp.Attach, exp.Detach, exp.Use)
    return statements[0].find(*unsafe) is None


def _kept(table: Table, rows: Sequence[tuple[int, tuple[Any, ...]]],
          ) -> list[tuple[int, tuple[Any, ...]]]:
    """The rows DuckDB keeps of ``rows`` inserted one by one, as far as it can be told here: a
    NULL in a NOT NULL or key column, or a key an earlier kept row has, is refused. What is
    not caught here (a CHECK, a UNIQUE, a value of the wrong type) makes the insert raise and
    the table go in row by row (:meth:`_Workspace.fill`), so a row left out here is one the
    engine refuses too. Rows come with their index in the candidate."""
    required = [i for i, c in enumerate(table.columns) if c.not_null or c.primary_key]
    key = [i for i, c in enumerate(table.columns) if c.primary_key]
    seen: set[tuple[Any, ...]] = set()
    out = []
    for at, row in rows:
        if any(row[i] is None for i in required):
            continue
        if key:
            # typed: 1 and 1.0 (or True) are kept apart here and left to the engine
            mark = tuple((type(row[i]).__name__, row[i]) for i in key)
            if mark in seen:
                continue
            seen.add(mark)
        out.append((at, row))
    return out


class _Workspace:
    """One thread's kept in-memory DuckDB database of one schema: its tables are created once,
    and a candidate's rows are inserted in a transaction that is rolled back after its block:
    in the same call as the next candidate's first INSERT (:attr:`ending`), or on its own
    before anything else uses the connection (:meth:`settle`)."""

    def __init__(self, schema: DbSchema) -> None:
        self.schema = schema
        self.conn = _duckdb_database(schema)
        self.rows: Rows = {}
        self.spoiled = False
        #: the candidate's transaction is still to be opened (by its first INSERT)
        self.opening = False
        #: the last candidate's transaction is still to be rolled back
        self.ending = False
        #: (table, column) -> its DuckDB type, and (type, text) -> whether the text casts to it
        self.types: dict[tuple[str, str], str] = {
            (t, c): d for t, c, d in self.conn.execute(
                "SELECT table_name, column_name, data_type FROM duckdb_columns() WHERE "
                "database_name = current_database()").fetchall()}
        self.casts: dict[tuple[str, str], bool] = {}
        #: query text -> the name it is prepared under here (:meth:`prepare`)
        self.names: dict[str, str] = {}
        self.unprepared: set[str] = set()

    def prepare(self, queries: Sequence[str]) -> None:
        """Prepare each query once, outside any candidate's transaction (the tables never
        change, so the statement stays valid). Why: DuckDB parses, binds and plans a query
        on every call, about a third of its cost on a candidate's few rows; a search runs the
        same two queries on up to hundreds of candidates. A query DuckDB cannot prepare (an
        error at bind time, a parameter) runs as it is, and gives its error there."""
        import duckdb

        for sql in queries:
            if sql in self.names or sql in self.unprepared or len(self.names) >= 256:
                continue
            self.settle()
            name = f"queryeval_q{len(self.names)}"
            try:
                self.conn.execute(f"PREPARE {name} AS {sql}")
            except duckdb.Error:
                self.unprepared.add(sql)
                continue
            self.names[sql] = name

    def casts_to(self, table: str, column: str, text: str) -> bool:
        """Whether ``text`` converts to the column's type (an INSERT of it raises when not,
        whatever rows came before): asked once per type and text, remembered."""
        kind = self.types.get((table, column), "VARCHAR")
        if kind == "VARCHAR":
            return True
        key = (kind, text)
        if key not in self.casts:
            self.settle()  # not in the last candidate's transaction: a failed query aborted it
            self.casts[key] = cast("tuple[bool]", self.conn.execute(  # one row, always
                f"SELECT TRY_CAST(? AS {kind}) IS NOT NULL", [text]).fetchone())[0]
        return self.casts[key]

    def fill(self, rows: Rows) -> bool:
        """Insert ``rows`` in a new transaction, keeping exactly the rows that inserting them
        one by one keeps; False (nothing inserted) when that could not be done here.

        Why it retries: DuckDB aborts a transaction at its first refused row, so a table goes
        in one INSERT (when :func:`_one_statement` allows) and, when that is refused, row by
        row; the row refused is left out and the transaction is started again. The rows
        before it are the same each time, so each row meets the same rows it met one by one.
        """
        import duckdb

        self.rows = rows
        refused: set[tuple[str, int]] = set()
        single: set[str] = set()
        for _attempt in range(1 + sum(map(len, rows.values())) + len(self.schema.tables)):
            self.opening = True
            try:
                failed = self._insert(rows, refused, single)
            except duckdb.Error:
                failed = None
            if failed == ("", -1):
                if self.opening:  # no row went in: the transaction to be rolled back after
                    self.opening = False
                    self.conn.execute(("ROLLBACK; " if self.ending else "")
                                      + "BEGIN TRANSACTION")
                    self.ending = False
                return True
            if not self.opening:
                with suppress(duckdb.Error):  # nothing to roll back when nothing began
                    self.conn.execute("ROLLBACK")
            self.opening = False
            if failed is None:
                return False
            if failed[1] < 0:
                single.add(failed[0])
            else:
                refused.add(failed)
        return False

    def _insert(self, rows: Rows, refused: set[tuple[str, int]],
                single: set[str]) -> tuple[str, int]:
        """Insert what is not ``refused``; ``("", -1)`` when all of it went in, else the
        (table, -1) whose one INSERT or the (table, row index) whose row was refused."""
        import duckdb

        held: dict[str, list[tuple[Any, ...]]] = {}
        for table in self.schema.tables:
            # a text that does not convert first: such a row never holds a key
            given = [(i, r) for i, r in enumerate(rows.get(table.name, []))
                     if (table.name, i) not in refused and all(
                         not isinstance(v, str) or self.casts_to(table.name, c.name, v)
                         for c, v in zip(table.columns, r, strict=True))]
            # a row refused whatever came before holds no key for a later one: left out first
            kept = _kept(table, _referable(self.schema, table, given, held))
            held[table.name] = [r for _, r in kept]
            if not kept:
                continue
            width = len(table.columns)
            marks = "(" + ", ".join("?" * width) + ")"
            head = f"INSERT INTO {_q(table.name)} VALUES "
            if table.name not in single and _one_statement(table, [r for _, r in kept]):
                try:
                    self._execute(head + ", ".join([marks] * len(kept)),
                                  [v for _, row in kept for v in row])
                except duckdb.Error:
                    return table.name, -1
                continue
            for i, row in kept:
                try:
                    self._execute(head + marks, list(row))
                except duckdb.Error:
                    return table.name, i
        return "", -1

    def _execute(self, sql: str, params: list[Any]) -> None:
        """Run an INSERT of the candidate, the first one ending the last candidate's
        transaction and opening this one's in the same call (a call costs DuckDB about 0.3 ms
        whatever it does; the transaction is open after the call even when the INSERT is
        refused, and a ROLLBACK of a transaction a failed query aborted does not fail)."""
        if self.opening:
            self.opening = False
            sql = "BEGIN TRANSACTION; " + sql
            if self.ending:
                self.ending = False
                sql = "ROLLBACK; " + sql
        self.conn.execute(sql, params)

    def settle(self) -> None:
        """Roll the last candidate back now (something other than the next candidate's rows
        is to use the connection); a kept database that cannot be is dropped (``spoiled``:
        the candidate gets a fresh database)."""
        if not self.ending:
            return
        self.ending = False
        try:
            self.conn.execute("ROLLBACK")
        except Exception:
            self.close()

    def readable(self) -> None:
        """Make the candidate's rows readable again after a query failed in its transaction
        (DuckDB aborts the transaction): roll back and insert them once more."""
        import duckdb

        try:
            self.conn.execute("SELECT 1").fetchall()
        except duckdb.Error:
            self.conn.execute("ROLLBACK")
            if not self.fill(self.rows):
                self.spoiled = True
                raise

    def clear(self) -> None:
        """End the candidate's block: its rollback waits for the next call (:attr:`ending`);
        a kept database left in a state it cannot vouch for is dropped."""
        if self.spoiled:
            self.close()
        else:
            self.ending = True

    def close(self) -> None:
        self.spoiled = True
        if getattr(_LOCAL, "space", None) is self:
            _LOCAL.space = None
        with suppress(Exception):
            self.conn.close()


def _referable(schema: DbSchema, table: Table, rows: list[tuple[int, tuple[Any, ...]]],
               held: dict[str, list[tuple[Any, ...]]]) -> list[tuple[int, tuple[Any, ...]]]:
    """``rows`` without those whose reference to another table finds no row there (DuckDB
    refuses them, whatever came before). Only where the parent's values and the reference are
    all of one Python type: across types the engine's casts decide, so such a row is left in."""
    for at, col in enumerate(table.columns):
        if col.references is None or col.references[0] == table.name \
                or col.references[0] not in held:
            continue
        parent = schema.table(col.references[0])
        names = [c.name.lower() for c in parent.columns]
        if col.references[1].lower() not in names:
            continue
        j = names.index(col.references[1].lower())
        values = [r[j] for r in held[parent.name] if r[j] is not None]
        kinds = {type(v) for v in values}
        rows = [(i, r) for i, r in rows if r[at] is None or len(kinds) > 1
                or (kinds and type(r[at]) is not next(iter(kinds))) or r[at] in values]
    return rows


def _one_statement(table: Table, rows: Sequence[tuple[Any, ...]]) -> bool:
    """True when ``rows`` can go in one INSERT with the same outcome as one by one: no column
    refers to the table itself (DuckDB checks a multi-row insert against the rows before it),
    and each column's values are of one Python type (a VALUES list unifies its types first)."""
    if any(c.references and c.references[0] == table.name for c in table.columns):
        return False
    return all(len({type(r[i]) for r in rows if r[i] is not None}) <= 1
               for i in range(len(table.columns)))


_LOCAL = threading.local()

#: (file, table, column) -> the values :meth:`DuckdbEngine.sample` read there. Why: the two
#: queries per column cost DuckDB about 1.5 ms, and a search samples every column of the
#: schema twice (the gold's pools and the pair's), a fifth of a case's time, each case of a
#: file again. The file is named by its path, size, modification time and inode (and its
#: write-ahead log's), so a file changed between cases is read again.
_SAMPLES: dict[tuple[tuple[object, ...], str, str], tuple[object, ...]] = {}
_SAMPLES_LOCK = threading.Lock()


#: file (as :func:`_file_key` names it) -> its schema as :meth:`DuckdbEngine.introspect` read it
_SCHEMAS: dict[tuple[object, ...], DbSchema] = {}


class _RealFile:
    """The user's DuckDB file for one search, opened read-only (with no access to other files)
    only when a question about it is not answered from what was remembered of it
    (:data:`_SCHEMAS`, :data:`_SAMPLES`): opening it costs about 40 ms a case. ``key`` names
    the file's state when the search began."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.key = _file_key(path)
        self._conn: DuckConnection | None = None

    def _open(self) -> DuckConnection:
        if self._conn is None:
            import duckdb

            self._conn = duckdb.connect(str(self.path), read_only=True,
                                        config={"enable_external_access": False})
        return self._conn

    def execute(self, query: str, parameters: object = None, /) -> DuckConnection:
        return self._open().execute(query, parameters)

    def fetchall(self) -> list[tuple[Any, ...]]:
        return self._open().fetchall()

    def fetchmany(self, size: int = 1, /) -> list[tuple[Any, ...]]:
        return self._open().fetchmany(size)

    def fetchone(self) -> tuple[Any, ...] | None:
        return self._open().fetchone()

    @property
    def description(self) -> list[Any] | None:
        return self._open().description

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def interrupt(self) -> None:
        if self._conn is not None:
            self._conn.interrupt()


def _file_key(path: Path) -> tuple[object, ...]:
    """What tells one state of a database file from another (a missing file: its path)."""
    out: list[object] = [str(path.resolve())]
    for part in (path, path.with_name(path.name + ".wal")):
        try:
            st = part.stat()
        except OSError:
            out.append(None)
            continue
        out.append((st.st_size, st.st_mtime_ns, st.st_ino))
    return tuple(out)


def _workspace(schema: DbSchema) -> _Workspace | None:
    """This thread's kept database of ``schema`` (a new one for another schema)."""
    space: _Workspace | None = getattr(_LOCAL, "space", None)
    if space is not None and space.schema != schema:
        space.close()
        space = None
    if space is None:
        space = _Workspace(schema)
        _LOCAL.space = space
    return space


def _spoiled(conn: DuckConnection) -> None:
    """A kept database whose query was interrupted is not reused (its state is unknown)."""
    space = getattr(_LOCAL, "space", None)
    if space is not None and space.conn is conn:
        space.spoiled = True


class _Alarm:
    """One watcher thread that interrupts a DuckDB query past its seconds (a timer thread per
    query costs about a millisecond, as much as a candidate's whole query). The watcher is
    woken only when a new deadline comes before the time it already wakes at: a query's
    seconds are the same for a whole search, so it wakes about once per query's seconds, not
    twice per query (each wake a thread switch on a busy machine)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._jobs: dict[threading.Event, tuple[float, DuckConnection]] = {}
        self._thread: threading.Thread | None = None
        #: when the watcher wakes next (None: only when woken)
        self._wake: float | None = None

    def arm(self, conn: DuckConnection, seconds: float) -> threading.Event:
        fired = threading.Event()
        with self._cond:
            deadline = time.monotonic() + seconds
            self._jobs[fired] = (deadline, conn)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._watch, name="queryeval-duckdb-alarm",
                                                daemon=True)
                self._thread.start()
            if self._wake is None or deadline < self._wake:
                self._wake = deadline
                self._cond.notify()
        return fired

    def disarm(self, fired: threading.Event) -> None:
        """After this, ``fired`` is set exactly when the query was interrupted."""
        with self._cond:
            self._jobs.pop(fired, None)

    def _watch(self) -> None:
        with self._cond:
            while True:
                now = time.monotonic()
                for fired, (deadline, conn) in list(self._jobs.items()):
                    if deadline <= now:
                        del self._jobs[fired]
                        fired.set()
                        with suppress(Exception):
                            conn.interrupt()
                soonest = min((d for d, _ in self._jobs.values()), default=None)
                self._wake = soonest
                self._cond.wait(None if soonest is None else max(0.0, soonest - now))


_ALARM = _Alarm()


#: The engines by name (each with its own connection type: a caller hands an engine only
#: the connections it opened).
ENGINES: dict[str, Engine[Any]] = {"sqlite": SqliteEngine(), "duckdb": DuckdbEngine()}



def engine_for(path: Path) -> Engine[Any]:
    """DuckDB for a DuckDB file (by its magic bytes), else SQLite."""
    try:
        with path.open("rb") as fh:
            head = fh.read(16)
    except OSError:
        head = b""
    return ENGINES["duckdb"] if head[8:12] == b"DUCK" else ENGINES["sqlite"]
