"""The counterexample search's PostgreSQL engine: candidates in a throwaway database, never the
user's.

Where candidates live: one empty database per search process and schema, made by the
datasource's role (``CREATE DATABASE ... TEMPLATE template0``: the role needs ``CREATEDB``, as a
``writable: sandbox`` datasource's does) and named, swept and dropped at exit as the task
copies are (:mod:`..tasks.pgcopies`: ``qe_task_<pid>_<n>``, so a killed worker's database is
dropped by the next sweep). Why not a template clone of the datasource, as tasks make: a clone
copies every row only to empty them, and PostgreSQL refuses to clone a database the suite's own
read-only sessions are connected to; the search needs the schema only. The real database is
read only for the schema and value samples, in read-only transactions.

Why this is fast (the kept database of DuckDB's engine, the same way): the schema's tables are
created once, and each candidate is one transaction: its rows go in through one call of a
temporary PL/pgSQL function (each INSERT in its own subtransaction, so a row the server refuses
is left out as SQLite's one-by-one insert leaves it out, and the function says which rows it
kept), the transaction is then made read-only, each query runs under ``statement_timeout``,
and everything is rolled back. A query that fails aborts the transaction: the rows are put in
again before the next query.

What a prediction may do there: it passed the datasource's read-only guard to be scored; here
it is checked again by the same guard (:func:`..sources.sqlguard.check_read_only`) and runs in a
read-only transaction of a database holding only the candidate, as a role that is refused when
it is a superuser or can reach beyond its databases (:func:`..tasks.pgcopies.role_problems`),
unless the datasource says ``allow_privileged: true``.

The counterexample "file" is a SQL script (``.sql``): the schema as this engine read it
(columns with their PostgreSQL types, NOT NULL, every constraint as ``pg_get_constraintdef``
writes it, unique indexes) and one INSERT per row, parents first. The proof loads the script's
INSERTs into the throwaway database (each must go in) and runs both queries there.

Why one module of this size: the engine, its throwaway database and the catalog queries that
read the schema are one adapter of the :class:`~.engines.Engine` protocol, as each engine of
:mod:`.engines` is; split, each part would be used by the other only.
"""

from __future__ import annotations

import atexit
import contextlib
import datetime
import decimal
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..results import ResultTable, hashable_cell
from .engines import MAX_RESULT_ROWS, SAMPLE, Failed, Rows, _message, _q, duckdb_affinity
from .schema import Column, DbSchema, Table, _parents_first

#: The throwaway database is written: a read-only role's own defaults (``ALTER ROLE ... SET
#: default_transaction_read_only = on``, an idle timeout, as docs/sql-sources.md recommends)
#: are lifted there only (a candidate's transaction stays open until the next one's rows go
#: in); the real database is read with read-only forced on.
_WRITABLE = "-c default_transaction_read_only=off -c idle_in_transaction_session_timeout=0"
#: Seconds the rows of one candidate may take to go in (a trigger or CHECK that loops).
FILL_SECONDS = 10.0

_FILL_FUNCTION = """
CREATE FUNCTION pg_temp.qe_fill(stmts text[]) RETURNS int[] LANGUAGE plpgsql AS $$
DECLARE kept int[] := '{}'; i int;
BEGIN
  SET CONSTRAINTS ALL IMMEDIATE;
  FOR i IN 1 .. coalesce(array_length(stmts, 1), 0) LOOP
    BEGIN
      EXECUTE stmts[i];
      kept := kept || i;
    EXCEPTION WHEN OTHERS THEN NULL;
    END;
  END LOOP;
  PERFORM set_config('transaction_read_only', 'on', true);
  RETURN kept;
END $$
"""

_TABLES_SQL = """
SELECT c.oid, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p') AND NOT c.relispartition
ORDER BY c.oid
"""
_COLUMNS_SQL = """
SELECT attname, format_type(atttypid, atttypmod), attnotnull FROM pg_attribute
WHERE attrelid = %s AND attnum > 0 AND NOT attisdropped ORDER BY attnum
"""
_CONSTRAINTS_SQL = """
SELECT contype, pg_get_constraintdef(oid),
       ARRAY(SELECT attname::text FROM unnest(conkey) WITH ORDINALITY k(n, o)
             JOIN pg_attribute a ON a.attrelid = conrelid AND a.attnum = k.n ORDER BY k.o),
       confrelid::regclass::text,
       ARRAY(SELECT attname::text FROM unnest(confkey) WITH ORDINALITY k(n, o)
             JOIN pg_attribute a ON a.attrelid = confrelid AND a.attnum = k.n ORDER BY k.o)
FROM pg_constraint WHERE conrelid = %s AND contype IN ('p', 'u', 'f', 'c', 'x')
ORDER BY contype = 'f', conname
"""
_UNIQUE_INDEXES_SQL = """
SELECT pg_get_indexdef(i.indexrelid) FROM pg_index i
WHERE i.indrelid = %s AND i.indisunique
  AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid)
ORDER BY i.indexrelid
"""


def pg_literal(value: object) -> str:
    """A PostgreSQL literal of a candidate's value, on one line (a string with a line break or
    a backslash is an ``E''`` string)."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value) if value == value and abs(value) != float("inf") else \
            "'" + ("NaN" if value != value else "Infinity" if value > 0 else "-Infinity") + "'"
    if isinstance(value, bytes):
        return "'\\x" + value.hex() + "'::bytea"
    text = str(value)
    if any(c in text for c in "\\\n\r\t"):
        escaped = (text.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n")
                   .replace("\r", "\\r").replace("\t", "\\t"))
        return "E'" + escaped + "'"
    return "'" + text.replace("'", "''") + "'"


def pg_inserts(schema: DbSchema, rows: Rows) -> list[str]:
    """One INSERT per row, parents first, each on one line."""
    return [f"INSERT INTO {_q(t.name)} VALUES ({', '.join(pg_literal(v) for v in row)});"
            for t in schema.tables for row in rows.get(t.name, [])]


def _sampled(value: object) -> object:
    """A sampled value as the candidates use it: numbers as numbers, dates and times as the
    text PostgreSQL reads back into the column's type, anything else as its text."""
    if value is None or isinstance(value, bool | int | float | str | bytes):
        return value
    if isinstance(value, decimal.Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, datetime.date | datetime.time | datetime.datetime):
        return value.isoformat(sep=" ") if isinstance(value, datetime.datetime) \
            else value.isoformat()
    return str(value)




@lru_cache(maxsize=512)
def refused(sql: str) -> str:
    """Why ``sql`` is refused on a candidate ('' when it is not): by the datasource's read-only
    guard, and by the task confinement guard (:mod:`..tasks.pgconfine`: what reaches beyond
    the database: other sessions, server files, dblink), since the connection it runs on can
    write its throwaway database."""
    from ..errors import QueryRefused
    from ..sources.sqlguard import check_read_only
    from ..tasks.pgconfine import check_task_statements

    try:
        check_read_only(sql, "postgres")
        check_task_statements([sql])
    except QueryRefused as exc:
        return exc.reason()
    return ""


@dataclass
class PgCandidate:
    """One candidate in the throwaway database: its transaction, the rows it holds; closing
    it rolls everything back."""

    space: _Space
    rows: Rows
    kept: dict[str, list[int]] = field(default_factory=dict)
    #: (table, index, INSERT) as last put in: put in again after a query aborted them
    statements: list[tuple[str, int, str]] = field(default_factory=list)
    timeout_ms: int = -1
    aborted: bool = False

    def close(self) -> None:
        self.space.rollback()


class _Space:
    """This thread's throwaway database of one schema, its tables made once."""

    def __init__(self, url: str, schema: DbSchema) -> None:
        from ..tasks import pgcopies

        self.url, self.schema = url, schema
        self.admin = pgcopies.conninfo(url, "postgres")
        _sweep_once(self.admin)
        self.name = pgcopies.new_name()
        self._admin_execute(f'CREATE DATABASE "{self.name}" TEMPLATE template0')
        _MADE.add((self.admin, self.name))
        import psycopg

        # a query run on every candidate is prepared on its second run (parsed and planned
        # once: about a third of a candidate's server time on Chinook)
        self.conn = psycopg.connect(pgcopies.conninfo(url, self.name), autocommit=True,
                                    connect_timeout=10, prepare_threshold=1,
                                    options=_WRITABLE)
        for ddl in schema.ddl():
            with contextlib.suppress(psycopg.Error):
                self.conn.execute(ddl.encode())
        self.conn.execute(_FILL_FUNCTION.encode())
        self.conn.execute(f"SET statement_timeout = {int(FILL_SECONDS * 1000)}".encode())
        self.in_transaction = False
        #: The query seconds last set (each candidate's transaction starts with them).
        self.timeout_ms = -1

    def _admin_execute(self, sql: str) -> None:
        import psycopg

        with psycopg.connect(self.admin, autocommit=True, connect_timeout=10,
                             options=_WRITABLE) as conn:
            conn.execute(sql.encode())

    def fill(self, cand: PgCandidate, statements: Sequence[tuple[str, int, str]]) -> None:
        """End the last candidate's transaction, begin one and insert ``statements`` ((table,
        index, INSERT)); the rows the server kept are recorded on ``cand``. One round trip
        (a pipeline): the rollback of the last candidate, the new transaction, its rows and
        the last query seconds go together."""
        cand.statements = list(statements)
        with self.conn.pipeline():
            if self.in_transaction:
                self.conn.execute(b"ROLLBACK")
            self.conn.execute(b"BEGIN")
            self.in_transaction = True
            cur = self.conn.execute("SELECT pg_temp.qe_fill(%s)",
                                    [[s for _, _, s in statements]])
            if self.timeout_ms > 0:
                self.conn.execute(f"SET LOCAL statement_timeout = {self.timeout_ms}".encode())
        row = cur.fetchone()
        kept = set(row[0] if row and row[0] else [])
        cand.kept = {}
        for at, (table, index, _) in enumerate(statements, start=1):
            if at in kept:
                cand.kept.setdefault(table, []).append(index)
        cand.timeout_ms = self.timeout_ms
        cand.aborted = False

    def rollback(self) -> None:
        """Nothing now: the next candidate's :meth:`fill` rolls this one back in its own round
        trip (the transaction left open is read-only, in a database holding only it, and the
        session never times out idle in it: :data:`_WRITABLE`)."""

    def drop(self) -> None:
        with contextlib.suppress(Exception):
            self.conn.close()
        with contextlib.suppress(Exception):
            self._admin_execute(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')
        _MADE.discard((self.admin, self.name))


_LOCAL = threading.local()
#: (URL, allow_privileged) -> why its role cannot search ('' when it can)
_ROLE_CHECKED: dict[tuple[str, bool], str] = {}
_MADE: set[tuple[str, str]] = set()
_SWEPT: set[str] = set()


def _sweep_once(admin: str) -> None:
    from ..tasks.pgcopies import sweep

    if admin not in _SWEPT:
        _SWEPT.add(admin)
        with contextlib.suppress(Exception):
            sweep(admin)


@atexit.register
def _drop_all() -> None:
    import psycopg

    for admin, name in sorted(_MADE):
        with contextlib.suppress(Exception), psycopg.connect(
                admin, autocommit=True, connect_timeout=5, options=_WRITABLE) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'.encode())
    _MADE.clear()


def _space(url: str, schema: DbSchema) -> _Space:
    space: _Space | None = getattr(_LOCAL, "space", None)
    if space is not None and (space.url != url or space.schema != schema or space.conn.broken):
        space.drop()
        space = None
    if space is None:
        space = _Space(url, schema)
        _LOCAL.space = space
    return space


def _statements(schema: DbSchema, rows: Rows) -> list[tuple[str, int, str]]:
    out = []
    for table in schema.tables:
        for i, row in enumerate(rows.get(table.name, [])):
            values = ", ".join(pg_literal(v) for v in row)
            out.append((table.name, i, f"INSERT INTO {_q(table.name)} VALUES ({values})"))
    return out


class PostgresEngine:
    """The engine of one PostgreSQL datasource (its URL: the role that reads the schema and
    makes the throwaway database)."""

    name = "postgres"
    dialect = "postgres"
    suffix = "sql"

    def __init__(self, url: str = "", allow_privileged: bool = False) -> None:
        self.url = url
        self.allow_privileged = allow_privileged
        self._samples: dict[tuple[int, str, str], list[object]] = {}

    # -- the real database: read only ---------------------------------------------------------

    def open_real(self, path: Path) -> Any:
        """A read-only connection to the datasource (``path`` is unused: the URL is bound)."""
        import psycopg

        from ..tasks.pgcopies import conninfo

        problem = _ROLE_CHECKED.get((self.url, self.allow_privileged))
        if problem is None:  # asked once per datasource and process (two connections)
            problem = _ROLE_CHECKED[(self.url, self.allow_privileged)] = self.role_problem()
        if problem:
            raise RuntimeError(problem)
        conn = psycopg.connect(conninfo(self.url), autocommit=False, connect_timeout=10,
                               prepare_threshold=None,
                               options="-c default_transaction_read_only=on "
                                       "-c statement_timeout=30000")
        self._samples.clear()
        return conn

    def role_problem(self) -> str:
        """Why this datasource's role cannot search ('' when it can)."""
        import psycopg

        from ..tasks.pgcopies import conninfo, role_problems

        role, found = role_problems(self.url)
        if found and not self.allow_privileged:
            return (f"the role {role!r} {'; '.join(found)}: the search runs predictions as the "
                    "datasource's role, which must be LOGIN CREATEDB (or set allow_privileged: "
                    "true)")
        with psycopg.connect(conninfo(self.url), autocommit=True, connect_timeout=10) as conn:
            row = conn.execute("SELECT rolcreatedb OR rolsuper FROM pg_roles "
                               "WHERE rolname = current_user").fetchone()
        if not row or not row[0]:
            return (f"the role {role!r} cannot CREATE DATABASE: the search builds its "
                    "candidates in a throwaway database the datasource's role makes (give it "
                    "CREATEDB, as a writable: sandbox datasource's role has)")
        return ""

    def introspect(self, conn: Any) -> DbSchema:
        out: dict[str, Table] = {}
        parents: dict[str, set[str]] = {}
        indexes: list[str] = []
        for oid, name in conn.execute(_TABLES_SQL).fetchall():
            cols = conn.execute(_COLUMNS_SQL, [oid]).fetchall()
            cons = conn.execute(_CONSTRAINTS_SQL, [oid]).fetchall()
            keys: set[str] = set()
            refs: dict[str, tuple[str, str]] = {}
            for kind, _definition, ccols, ref_table, ref_cols in cons:
                if kind == "p":
                    keys |= set(ccols)
                elif kind == "f" and len(ccols) == 1:
                    refs[ccols[0]] = (str(ref_table).split(".")[-1].strip('"'), ref_cols[0])
            columns = tuple(Column(c, duckdb_affinity(_affinity_name(t)), bool(nn), c in keys,
                                   refs.get(c)) for c, t, nn in cols)
            parts = [f"{_q(c)} {t}" + (" NOT NULL" if nn else "") for c, t, nn in cols]
            parts += [definition for _k, definition, *_ in cons]
            ddl = f"CREATE TABLE {_q(name)} (" + ", ".join(parts) + ")"
            out[name] = Table(name, columns, ddl)
            parents[name] = {r[0] for r in refs.values() if r[0] != name}
            indexes += [str(r[0]) for r in conn.execute(_UNIQUE_INDEXES_SQL, [oid]).fetchall()]
        conn.rollback()
        order = [n for n in _parents_first(parents) if n in out]
        return DbSchema(tuple(out[n] for n in order), tuple(indexes))

    def sample(self, conn: Any, table: str, column: str) -> list[object]:
        """The column's sampled values, read once per opened connection (the search asks for
        each column twice: the gold's pools and the pair's)."""
        key = (id(conn), table, column)
        if key not in self._samples:
            self._samples[key] = self._sample(conn, table, column)
        return list(self._samples[key])

    def _sample(self, conn: Any, table: str, column: str) -> list[object]:
        t, c = _q(table), _q(column)
        # each on its own: a type with no order or equality (json) or no min() (boolean)
        # keeps what the others give
        values = _read(conn, f"SELECT DISTINCT {c} FROM {t} WHERE {c} IS NOT NULL "
                             f"ORDER BY {c} LIMIT {SAMPLE}")
        if values is None:
            values = _read(conn, f"SELECT {c} FROM {t} WHERE {c} IS NOT NULL LIMIT {SAMPLE}")
        ends = _read(conn, f"SELECT min({c}) FROM {t} UNION ALL SELECT max({c}) FROM {t}")
        return [v for v in [*(values or []), *(ends or [])] if v is not None]

    # -- candidates ------------------------------------------------------------------------------

    def build(self, schema: DbSchema, rows: Rows) -> PgCandidate:
        cand = PgCandidate(_space(self.url, schema), rows)
        cand.space.fill(cand, _statements(schema, rows))
        return cand

    @contextmanager
    def candidate(self, schema: DbSchema, rows: Rows,
                  queries: Sequence[str]) -> Iterator[PgCandidate]:
        cand = self.build(schema, rows)
        try:
            yield cand
        finally:
            cand.close()

    def held_rows(self, conn: PgCandidate, schema: DbSchema, tables: Sequence[str]) -> Rows:
        """The rows the server kept, as they were given (the values the search drew, not as
        the server reads them back)."""
        return {name: [conn.rows[name][i] for i in conn.kept.get(name, [])] for name in tables}

    def run(self, conn: PgCandidate, sql: str, deadline: float) -> ResultTable | None:
        out = self.attempt(conn, sql, deadline - time.monotonic())
        return out if isinstance(out, ResultTable) else None

    def attempt(self, conn: PgCandidate, sql: str, seconds: float) -> ResultTable | Failed:
        import psycopg

        why = refused(sql)
        if why:
            return Failed("error", seconds, why)
        space = conn.space
        if conn.aborted or space.conn.info.transaction_status == \
                psycopg.pq.TransactionStatus.INERROR:
            space.fill(conn, conn.statements)
        ms = max(1, int(min(max(0.0, seconds), 86_400.0) * 1000))
        try:
            if ms != conn.timeout_ms:
                space.conn.execute(f"SET LOCAL statement_timeout = {ms}".encode())
                conn.timeout_ms = space.timeout_ms = ms
            cur = space.conn.execute(sql.encode())
            rows = [tuple(map(hashable_cell, r)) for r in cur.fetchmany(MAX_RESULT_ROWS)]
            cols = [d.name for d in cur.description or ()]
        except psycopg.errors.QueryCanceled:
            conn.aborted = True
            return Failed("timeout", seconds)
        except (psycopg.Error, MemoryError, OverflowError, ValueError) as exc:
            conn.aborted = True
            return Failed("error", seconds, _message(exc))
        return ResultTable(cols, rows)

    # -- the counterexample script ----------------------------------------------------------------

    def write(self, schema: DbSchema, rows: Rows, path: Path) -> None:
        lines = ["-- a counterexample database for PostgreSQL: the schema as the search read it,",
                 "-- then its rows (load it into an empty database: psql -f this file)"]
        lines += [d.rstrip(";") + ";" for d in schema.ddl()]
        lines += ["BEGIN;", *pg_inserts(schema, rows), "COMMIT;"]
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")

    def checks_clean(self, path: Path) -> bool:
        """Every INSERT of the script goes in (in the throwaway database, rolled back)."""
        cand = self.open_written(path)
        try:
            return all(len(cand.kept.get(t, [])) == len(r) for t, r in cand.rows.items())
        finally:
            cand.close()

    def open_written(self, path: Path) -> PgCandidate:
        """The script's INSERTs loaded into this thread's throwaway database."""
        space: _Space = _LOCAL.space
        lines = [line.rstrip(";") for line in path.read_text(encoding="utf-8").splitlines()
                 if line.startswith("INSERT INTO ")]
        cand = PgCandidate(space, {"script": [(line,) for line in lines]})
        space.fill(cand, [("script", i, line) for i, line in enumerate(lines)])
        return cand

    def inserts(self, schema: DbSchema, rows: Rows) -> list[str]:
        return pg_inserts(schema, rows)


def _read(conn: Any, sql: str) -> list[object] | None:
    """The first column of ``sql``'s rows as samples (None: the server refused it)."""
    import psycopg

    try:
        return [_sampled(r[0]) for r in conn.execute(sql.encode()).fetchall()]
    except psycopg.Error:
        conn.rollback()  # the read-only transaction is aborted: a new one for the next read
        return None


def _affinity_name(pg_type: str) -> str:
    """The type name the affinity rules read. Dates and times are text here: their samples
    are ISO text (:func:`_sampled`), so the values module recognises the format and draws
    valid dates around a query's date literals, which PostgreSQL reads back into the column's
    type (a made-up word is refused, and the row left out)."""
    upper = pg_type.upper()
    if "BYTEA" in upper:
        return "BLOB"
    if "TIMESTAMP" in upper or upper.startswith(("DATE", "TIME", "INTERVAL")):
        return "TEXT"
    if "CHARACTER" in upper:
        return "TEXT"
    return upper
