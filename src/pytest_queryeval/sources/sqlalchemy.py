"""Any database SQLAlchemy can reach (PostgreSQL, MySQL, Trino, Snowflake...), read-only.

SQLAlchemy and the drivers are imported on first use only (the ``sqlalchemy`` extra). Every
query runs in its own transaction that is made read-only where the dialect allows it
(PostgreSQL: ``SET TRANSACTION READ ONLY``) and is always rolled back. The URL password never
leaves this module: fingerprints drop it, and every error message is scrubbed.

PostgreSQL, because a read-only transaction does not stop a superuser (``lo_import``, ``COPY
... TO PROGRAM``, ``dblink``, functions that write files) and the statement guard can be
bypassed: before the first query the source checks the role it connects as and refuses a
superuser, a member of the roles that read or write server files, run programs or signal
backends, a role with INSERT/UPDATE/DELETE/TRUNCATE on any table, or one that owns tables,
schemas, functions or the database (:func:`privileges_found`), or one the database lets reach
past the transaction by routes no query's text shows (:mod:`.pgescape`), unless the datasource
says ``allow_privileged: true``. Timeouts: ``SET LOCAL statement_timeout`` per transaction; a
watchdog cancels the statement 1 s past the timeout, and 1 s later terminates the backend
from a second connection (``pg_terminate_backend``) and shuts the client socket down, so the
case ends even when the backend ignores both (a superuser's ``lo_import('/dev/zero')``); such a
backend, still running, is then named with its pid.

PostgreSQL predictions are also parsed by PostgreSQL's own parser (:mod:`.pgguard`), and the
server is asked which functions they call are volatile: those outside a short allow-list are
refused, in the query's own read-only transaction, as is a view of the database they name
whose rule calls one (directly or through the views it reads). After every query the connection is reset
(``DISCARD ALL``) before it goes back to the pool, so no session state (an advisory lock)
outlives it. On the first query the source warns once of what the role can still execute that
a read-only role should not (dblink, server files, signalling its own sessions).

Why one module of this size: the transaction, the watchdog, the guard's server-side checks and
the rollback share one connection's life (``execute`` owns it in one ``try``/``finally``), which
splitting would scatter.
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from itertools import chain
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, quote_plus, unquote

from .._isolation.sandbox import Sandbox, in_worker, shared_sandbox
from .._util.secrets import MASK, mask_url
from .._util.secrets import QUERY_PASSWORD as _QUERY_PASSWORD
from ..errors import (
    ConfigError,
    CountedTimeout,
    CountUnknown,
    MissingDependency,
    PartlyRead,
    QueryEvalError,
    QueryEvalWarning,
    QueryFailed,
    QueryRefused,
    QueryTimeout,
    SourceUnavailable,
)
from ..results import ResultTable, hashable_cell
from . import pgreads
from .base import (
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_ROWS,
    DEFAULT_TIMEOUT,
    FetchedRows,
    SourceDefaults,
    call_limits,
    check_isolation,
    positive,
    positive_int,
    tidy_ddl,
)
from .pgescape import escapes_found
from .sandboxed import Reply, call_query, packing, worker_reply
from .sqlguard import check_read_only, sqlglot_dialect

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection, Engine

_URL_PASSWORD = re.compile(r"(?P<head>[a-zA-Z][\w+.-]*://[^:/@\s]*):(?P<pw>[^@/\s]*)@")
_FETCH_BATCH = 1_000
#: Rows of the first fetched batch, and what later batches may hold at the size of the largest
#: rows seen so far: servers cap no value below 1 GB (PostgreSQL), so the batch size follows the
#: rows' size, to check ``max_bytes`` before much more than it is in memory.
_FIRST_BATCH = 16
_BATCH_BYTES = 16 * 1024 * 1024
#: Extra time the client-side watchdog gives a server-side timeout before cancelling itself.
_WATCHDOG_GRACE = 1.0
#: Further time after the cancel before the backend is terminated and the socket dropped.
_HARD_GRACE = 1.0
#: Further time after that before the parent kills the worker (``isolation: process``).
_KILL_GRACE = 2.0
#: Address space a query may use in the worker (``max_memory``).
DEFAULT_MAX_MEMORY = 1024 * 1024 * 1024
#: Built-in PostgreSQL roles whose members reach beyond the database's tables.
#: (``pg_read_all_settings`` gives the server's paths, ``data_directory`` and the rest, and
#: ``pg_read_all_stats`` every session's query text: pg_monitor holds both, the forty-third
#: re-probe's M1.)
_DANGEROUS_ROLES = ("pg_write_all_data", "pg_write_server_files", "pg_read_server_files",
                    "pg_execute_server_program", "pg_signal_backend", "pg_read_all_settings",
                    "pg_read_all_stats")
_SYSTEM_SCHEMAS = "('pg_catalog', 'information_schema')"
_SUPERUSER = ["is a superuser"]
#: The role's attributes, and those of every role it may become (``MEMBER``: a routine's
#: ``set_config('role', ...)`` needs no ``INHERIT``): a member of a superuser role passed as
#: read-only, and a plain PL/pgSQL routine became the superuser and ran a program (the
#: forty-third re-probe's R1).
_ROLE_SQL = f"""
SELECT current_user, bool_or(r.rolsuper), bool_or(r.rolcreaterole), bool_or(r.rolreplication),
       ARRAY(SELECT g.rolname::text FROM pg_roles g
             WHERE g.rolname IN ({", ".join(f"'{r}'" for r in _DANGEROUS_ROLES)})
               AND pg_has_role(current_user, g.oid, 'MEMBER') ORDER BY 1)
FROM pg_roles r WHERE pg_has_role(current_user, r.oid, 'MEMBER')
"""
_WRITABLE_SQL = f"""
SELECT quote_ident(n.nspname) || '.' || quote_ident(c.relname),
       ARRAY(SELECT p FROM unnest(ARRAY['INSERT', 'UPDATE', 'DELETE', 'TRUNCATE']) p
             WHERE EXISTS (SELECT 1 FROM pg_roles m WHERE pg_has_role(current_user, m.oid, 'MEMBER')
                           AND has_table_privilege(m.oid, c.oid, p))), count(*) OVER ()
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f') AND n.nspname NOT IN {_SYSTEM_SCHEMAS}
  AND n.nspname NOT LIKE 'pg\\_toast%' AND n.nspname NOT LIKE 'pg\\_temp%'
  AND EXISTS (SELECT 1 FROM pg_roles m, unnest(ARRAY['INSERT', 'UPDATE', 'DELETE', 'TRUNCATE']) p
              WHERE pg_has_role(current_user, m.oid, 'MEMBER') AND has_table_privilege(m.oid, c.oid, p))
ORDER BY 1 LIMIT 5
"""
_OWNED_SQL = f"""
SELECT kind, name, count(*) OVER () FROM (
  SELECT 1 AS o, 'database' AS kind, quote_ident(d.datname) AS name FROM pg_database d
  WHERE d.datname = current_database() AND pg_has_role(current_user, d.datdba, 'MEMBER')
  UNION ALL
  SELECT 2, 'schema', quote_ident(n.nspname) FROM pg_namespace n
  WHERE n.nspname NOT IN {_SYSTEM_SCHEMAS} AND n.nspname NOT LIKE 'pg\\_%'
    AND pg_has_role(current_user, n.nspowner, 'MEMBER')
  UNION ALL
  SELECT 3, 'table', quote_ident(n.nspname) || '.' || quote_ident(c.relname)
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
  WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f') AND n.nspname NOT IN {_SYSTEM_SCHEMAS}
    AND n.nspname NOT LIKE 'pg\\_%' AND pg_has_role(current_user, c.relowner, 'MEMBER')
  UNION ALL
  SELECT 4, 'function', quote_ident(n.nspname) || '.' || quote_ident(p.proname)
  FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
  WHERE n.nspname NOT IN {_SYSTEM_SCHEMAS} AND n.nspname NOT LIKE 'pg\\_%'
    AND pg_has_role(current_user, p.proowner, 'MEMBER')
) owned ORDER BY o, name LIMIT 5
"""
#: Every volatile overload of the functions a predicted query calls (pgguard.volatile_refusal).
_VOLATILE_SQL = """
SELECT n.nspname::text, p.proname::text FROM pg_proc p
JOIN pg_namespace n ON n.oid = p.pronamespace
WHERE p.provolatile = 'v' AND p.proname::text = ANY(:names)
"""
#: What a role that passed the role check may still call, though a read-only role should not
#: (docs/sql-sources.md, 'Least privilege on PostgreSQL'); the guard refuses these calls.
_SIGNAL_FUNCTIONS = ("pg_cancel_backend", "pg_terminate_backend")
_FILE_FUNCTIONS = ("lo_export", "lo_import", "pg_file_write", "pg_ls_dir", "pg_read_binary_file",
                   "pg_read_file", "pg_stat_file")
_CAPABILITIES_SQL = f"""
SELECT DISTINCT p.proname::text FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
WHERE (p.proname::text LIKE 'dblink%'
       OR p.proname::text IN ({", ".join(f"'{f}'" for f in _SIGNAL_FUNCTIONS + _FILE_FUNCTIONS)}))
  AND has_function_privilege(p.oid, 'EXECUTE') AND has_schema_privilege(n.oid, 'USAGE')
ORDER BY 1
"""
#: How long a query whose backend was terminated waits to learn whether it ended (seconds).
_VERDICT_WAIT = 1.5
#: PostgreSQL SQLSTATEs (and classes) that mean "the server went away", not "bad query".
_PG_UNAVAILABLE = ("08", "57P01", "57P02", "57P03", "53300")


class SqlAlchemySource(SourceDefaults):
    """A SQLAlchemy URL as a read-only data source."""

    type = "sqlalchemy"
    timeout: float

    def __init__(self, name: str, url: str, *, timeout: float = DEFAULT_TIMEOUT,
                 max_rows: int = DEFAULT_MAX_ROWS, version: str | int | None = None,
                 schema: str | None = None, engine_options: dict[str, Any] | None = None,
                 max_bytes: int = DEFAULT_MAX_BYTES, allow_privileged: bool = False,
                 isolation: str = "process", max_memory: int = DEFAULT_MAX_MEMORY,
                 trusted_routines: Sequence[str] = ()) -> None:
        if not isinstance(url, str) or "://" not in url:
            raise ConfigError("'url' must be a SQLAlchemy URL (dialect+driver://...)",
                              key=f"datasources.{name}.url")
        self.name = name
        self._url = url
        limits = {"timeout": timeout, "max_rows": max_rows}  # NaN, inf: a located error
        self.timeout = positive(limits, "timeout", timeout, name)
        self.max_rows = int(positive(limits, "max_rows", max_rows, name))
        self.max_bytes = positive_int(max_bytes, name, "max_bytes")
        self.version = None if version is None else str(version)
        self.schema = schema
        self.engine_options = dict(engine_options or {})
        if not isinstance(allow_privileged, bool):
            raise ConfigError(f"must be true or false, not {allow_privileged!r}",
                              key=f"datasources.{name}.allow_privileged")
        self.allow_privileged = allow_privileged
        self.trusted_routines = _trusted_names(name, trusted_routines)
        self.isolation = check_isolation(name, isolation)
        self.max_memory = positive_int(max_memory, name, "max_memory")
        self._box: Sandbox | None = None
        self._spec_args: tuple[Any, ...] = ()
        #: The outcome of the role check: None before it ran, else the refusal ("" when the
        #: role is fine or the check does not apply).
        self._role_problem: str | None = None
        #: pg_proc's volatile overloads per function name, as the server answered.
        self._volatile: dict[str, tuple[tuple[str, str], ...]] = {}
        #: The database's STABLE or IMMUTABLE routines that call a volatile builtin (or run
        #: what cannot be read), by name, with what they call (:func:`.pgbodies.hidden_volatile`).
        self._hidden: dict[str, str] | None = None
        #: The database's routines as :data:`.pgguard.ROUTINES_SQL` reads them (read once).
        self._routines: list[Any] | None = None
        #: The foreign tables over the server's files, and the views of them (lower-cased).
        self._file_tables: frozenset[str] | None = None
        #: The database's views that call a routine a query may not call by name, with what
        #: they call (lower-cased: :func:`pgguard.volatile_views`).
        self._volatile_views: dict[str, str] | None = None
        #: Why the backend's counts could be blinded here ("" when nothing could; None before
        #: it was read: :func:`.pgreads.blinders`).
        self._blinded: pgreads.Blinders | None = None
        #: The session-start capability report was given (once per source).
        self._reported = False
        raw = [m["pw"] for m in (*_URL_PASSWORD.finditer(url), *_QUERY_PASSWORD.finditer(url))]
        # Every spelling of the password that could show up in a driver message.
        self._secrets = sorted({s for pw in raw for s in (pw, unquote(pw), quote(unquote(pw)),
                                                          quote_plus(unquote(pw))) if s},
                               key=len, reverse=True)
        self._engine_obj: Engine | None = None
        #: The pool of an agent case's counted statements (:meth:`_engine`).
        self._counted_obj: Engine | None = None
        self._lock = threading.Lock()
        self.backend = url.split("://", 1)[0].split("+", 1)[0].lower()
        self.dialect = sqlglot_dialect(self.backend)

    def __repr__(self) -> str:
        return f"SqlAlchemySource({self.name!r}, {self.masked_url!r})"

    @property
    def masked_url(self) -> str:
        return mask_url(self._url)

    @property
    def secrets(self) -> frozenset[str]:
        """Strings the core must scrub from reports (the password, raw and URL-encoded)."""
        return frozenset(self._secrets)

    def scrub(self, text: str) -> str:
        text = mask_url(text)
        for s in self._secrets:
            text = text.replace(s, MASK)
        return text

    def ddl(self) -> list[tuple[str, str]]:
        """Each table of the schema as SQLAlchemy's reflection writes its ``CREATE TABLE``
        for this engine, in dependency order."""
        from sqlalchemy import MetaData, exc
        from sqlalchemy.schema import CreateTable

        engine = self._engine()
        try:
            meta = MetaData()
            meta.reflect(engine, schema=self.schema)
            return [(t.name, tidy_ddl(str(CreateTable(t).compile(engine))))
                    for t in meta.sorted_tables]
        except exc.DBAPIError as e:
            raise SourceUnavailable(self.scrub(f"datasource {self.name!r}: cannot read its "
                                               f"schema: {str(e.orig).splitlines()[0]}")
                                    ) from None

    # -- engine -------------------------------------------------------------------------------

    def _engine(self, counted: bool = False) -> Any:
        """The source's pool; with ``counted``, on PostgreSQL, the pool of an agent case's
        counted statements, whose sessions start with parallel query off
        (:data:`.pgreads.SERIAL_OPTIONS`): gold queries and predictions outside agent cases
        keep the database's own parallel plans."""
        with self._lock:
            if self._engine_obj is None:
                self._engine_obj = self._create_engine()
            if not counted or self._engine_obj.dialect.name != "postgresql":
                return self._engine_obj
            if self._counted_obj is None:
                self._counted_obj = self._create_engine(pgreads.SERIAL_OPTIONS)
            return self._counted_obj

    def _create_engine(self, startup: str = "") -> Any:
        try:
            import sqlalchemy
            from sqlalchemy.engine import make_url
        except ImportError:
            raise MissingDependency(
                "type: sqlalchemy needs SQLAlchemy: pip install 'pytest-queryeval[sqlalchemy]'"
            ) from None
        try:
            url = make_url(self._url)
        except Exception as e:
            raise ConfigError(self.scrub(f"invalid SQLAlchemy URL: {e}"),
                              key=f"datasources.{self.name}.url") from None
        if url.drivername == "postgresql":
            url = url.set(drivername=_default_pg_driver())
        options: dict[str, Any] = {"pool_pre_ping": True, "pool_size": 2, "max_overflow": 4}
        if url.get_backend_name() == "sqlite":
            options = {}
        options.update(self.engine_options)
        if startup:  # libpq's options, after the URL's and the user's own (the last -c wins)
            connect = dict(options.get("connect_args") or {})
            given = [str(connect.get("options") or url.query.get("options") or "")]
            connect["options"] = " ".join(o for o in (*given, startup) if o)
            options["connect_args"] = connect
        try:
            return sqlalchemy.create_engine(url, **options)
        except ImportError as e:
            raise MissingDependency(self.scrub(
                f"the driver for {url.drivername!r} is not installed ({e})")) from None
        except Exception as e:
            raise ConfigError(self.scrub(f"cannot create an engine: {e}"),
                              key=f"datasources.{self.name}.url") from None

    def close(self) -> None:
        """Release every connection this source holds: its own pool's, and the pool its
        sandbox worker built for it (the worker outlives a session run in-process, and an
        idle session left on a PostgreSQL database keeps it from being cloned as a template)."""
        with self._lock:
            for engine in (self._engine_obj, self._counted_obj):
                if engine is not None:
                    engine.dispose()
            self._engine_obj = self._counted_obj = None
            box, self._box = self._box, None
        if box is not None and box.pid is not None:
            with contextlib.suppress(Exception):  # a dead worker holds no connection
                box.call(worker_release, self._spec_args, timeout=10.0, max_reply=1 << 10)

    # -- execution ----------------------------------------------------------------------------

    def execute(self, query: str, *, timeout: float | None = None, max_rows: int | None = None,
                trusted: bool = False) -> ResultTable:
        """One query in its own read-only transaction, always rolled back.

        The timeout is enforced by the server where it can be (PostgreSQL
        ``statement_timeout``, MySQL ``max_execution_time``), by a watchdog that cancels the
        statement from another thread otherwise, and between fetched batches.
        """
        timeout, max_rows = call_limits(self, timeout, max_rows)
        called: tuple[str, ...] | None = None
        if not trusted:
            called = check_read_only(query, self.dialect)
        counted = pgreads.COUNTING.get()  # an agent case's: what it reads is counted
        if self.isolation == "process":
            return self._execute_in_worker(query, timeout, max_rows, called, counted)
        self._report_capabilities(self._capabilities)
        return self._execute_here(query, timeout, max_rows, called, counted)

    def refused_functions(self, query: str) -> str | None:
        """Why :meth:`execute` would refuse ``query`` for a volatile function it calls (the
        server's ``pg_proc``, :meth:`_vet_functions`), asked without running it; None when it
        would not, or on another backend. An agent's call that is not replayed is judged so,
        as the replayed one is refused (``pg_sequence_last_value(...)`` was a write attempt
        replayed and none unrun: the thirty-sixth re-probe's M2). The guard's own refusals
        are raised as :meth:`execute` raises them."""
        if self.backend != "postgresql":
            return None
        called = check_read_only(query, self.dialect)
        if not called and self._file_tables == frozenset() and self._volatile_views == {}:
            return None  # nothing to ask the server (its file tables, volatile views: none)
        conn = self._checked_connection()
        try:
            self._vet_relations(conn, query)
            if called:
                self._vet_functions(conn, called)
        except QueryRefused as exc:
            return exc.reason()
        finally:
            _rollback_and_close(conn)
        return None

    def tables_read(self, query: str, *, timeout: float | None = None) -> frozenset[str]:
        """The tables PostgreSQL's planner reads for ``query`` (``EXPLAIN (FORMAT JSON,
        VERBOSE)``: the plan's relations with their schemas, ``sales.orders``, which without
        it named ``orders`` only and a forbidden ``sales.orders`` was never counted: the
        thirty-sixth re-probe's H6; CTEs and views resolved to the tables under them), planned, never
        run, in the read-only transaction every query gets: how an agent's reads of forbidden
        tables are counted (:mod:`pytest_queryeval.agents.ledger`). The guard checks the query
        first, as for :meth:`execute`. With them, the tables the backend counted as read while
        it planned (:mod:`.pgreads`); a plan that failed after reading some is
        :class:`PartlyRead`. On SQLite (a ``sqlite:`` URL), SQLite's own account, as the
        ``sqlite`` datasource takes it (:meth:`_sqlite_reads`). QueryFailed for another
        backend (the caller then reads the text) or a query the server cannot plan."""
        seconds = self.timeout if timeout is None else timeout
        if self.backend == "sqlite":
            return self._sqlite_reads(query, seconds)
        if self.backend != "postgresql":
            raise QueryFailed(f"the {self.backend} backend gives no plan to read tables from")
        check_read_only(query, self.dialect)
        table = self._compiled(worker_plan, self._plan_here, query, seconds)
        if table.truncated:  # the names alone over max_bytes: never fewer than were read
            raise CountUnknown(f"the tables the plan reads hold more than max_bytes "
                               f"({self.max_bytes:,}) bytes of names")
        return frozenset(str(row[0]) for row in table.rows)

    def _sqlite_reads(self, query: str, seconds: float) -> frozenset[str]:
        """The tables SQLite's authorizer is told of while it compiles ``query`` on the
        driver's own ``sqlite3`` connection (:func:`.sqlite.read_tables`: ``EXPLAIN``, which
        runs nothing), in the worker unless ``isolation: thread``. Why not the text: a view
        over a table is a name the text reads and the engine resolves (``SELECT * FROM staff``,
        ``staff`` a view of Employee, was no read of Employee here, while the ``sqlite``
        datasource's authorizer counted it: the thirty-third re-probe)."""
        table = self._compiled(worker_sqlite_reads, self._sqlite_reads_here, query, seconds)
        return frozenset(str(row[0]) for row in table.rows)

    def _compiled(self, worker: Callable[..., Reply], here: Callable[[str, float], ResultTable],
                  query: str, seconds: float) -> ResultTable:
        """``query`` compiled, never run, by ``worker`` in the sandbox worker, or by ``here``
        on this process's pool with ``isolation: thread``: one bound for the plan and the
        authorizer's account alike."""
        if self.isolation != "process":
            return here(query, seconds)
        box, spec = self._sandbox()
        hard = seconds + _WATCHDOG_GRACE + _HARD_GRACE + _KILL_GRACE
        return call_query(box, worker, spec, query, seconds, timeout=seconds,
                          hard_timeout=hard, max_bytes=self.max_bytes,
                          max_memory=self.max_memory, killed="its worker was killed")

    def _sqlite_reads_here(self, query: str, timeout: float) -> ResultTable:
        """:meth:`_sqlite_reads` on this process's pool: the pooled connection's ``sqlite3``
        connection under the authorizer, rolled back and returned after."""
        import sqlite3

        from .sqlite import read_tables

        conn = self._checked_connection()
        try:
            raw: Any = conn.connection.dbapi_connection
            if not isinstance(raw, sqlite3.Connection):  # another driver (aiosqlite...)
                raise QueryFailed(f"the {conn.dialect.driver} driver gives no sqlite3 "
                                  "connection to read tables from")
            return read_tables(raw, query, timeout)
        finally:
            _rollback_and_close(conn)

    def _plan_here(self, query: str, timeout: float) -> ResultTable:
        """``EXPLAIN (FORMAT JSON)`` of ``query`` in a read-only, time-limited transaction,
        rolled back (not streamed: a plan is one row, and a cursor cannot hold EXPLAIN), with
        the tables the backend counted as read while it planned (:mod:`.pgreads`: the
        routines planning runs read what no plan names), as JSON in a second column. A plan
        that fails after reading tables is :class:`PartlyRead` with them."""
        from sqlalchemy import exc

        conn = self._checked_connection(counted=True)
        start = time.perf_counter()
        before: dict[str, int] | None = None
        try:
            self._begin(conn, timeout)
            # planning folds what a table's index, CHECK or partition key calls (Q1, Q2, Q5)
            self._vet_relations(conn, query)
            before = _counters_before(conn, self._blinded_of(conn))
            rows = conn.exec_driver_sql(
                *_driver_statement(conn, "EXPLAIN (FORMAT JSON, VERBOSE) " + query)).fetchall()
            read = _counted_after(conn, before)
        except exc.DBAPIError as e:
            raise _partly_read(self._classify(e, False, timeout), conn, before) from None
        except pgreads.CountsOff as e:
            raise CountUnknown(str(e)) from None
        finally:
            _rollback_and_close(conn, reset=True)
        names = _plan_relations(rows[0][0] if rows and rows[0] else None) | read
        return ResultTable(["relation"], [(n,) for n in sorted(names)],
                           seconds=time.perf_counter() - start)

    def _execute_here(self, query: str, timeout: float, max_rows: int,
                      called: tuple[str, ...] | None, counted: bool = False) -> ResultTable:
        """:meth:`execute` on this process's pool; ``called``: the functions a predicted
        PostgreSQL query calls, to be vetted by the server (None: a trusted query);
        ``counted``: the tables it reads are counted (:mod:`.pgreads`, an agent case's;
        four more round trips, so not for every prediction)."""
        conn = self._checked_connection(counted)
        from sqlalchemy import exc

        fired = threading.Event()
        dropped = threading.Event()
        watchdog: _Watchdog | None = None
        start = time.perf_counter()
        deadline = time.monotonic() + timeout
        fetched = FetchedRows(max_rows, self.max_bytes)
        authorized = None
        before: dict[str, int] | None = None
        try:
            server_side = self._begin(conn, timeout)
            before, authorized = self._vetted(conn, query, called, counted)
            watchdog = _Watchdog(self, conn, timeout + (_WATCHDOG_GRACE if server_side else 0.0),
                                 fired, dropped)
            result = conn.execution_options(stream_results=True, max_row_buffer=_FETCH_BATCH) \
                .exec_driver_sql(*_driver_statement(conn, query))
            if not result.returns_rows:
                raise QueryRefused("the statement returned no rows: not a query")
            columns = list(result.keys())
            _fetch_rows(result, fetched, deadline, timeout, fired)
            result.close()
            read = None if before is None else _counted_after(conn, before)
        except QueryEvalError:
            raise
        except exc.DBAPIError as e:
            if dropped.is_set():
                raise _dropped(timeout, watchdog) from None
            raise _partly_read(self._classify(e, fired.is_set(), timeout), conn,
                               before) from None
        except Exception as e:
            if dropped.is_set():
                raise _dropped(timeout, watchdog) from None
            if isinstance(e, MemoryError):  # a row over the worker's address space
                raise QueryFailed(f"out of memory: the query went over max_memory "
                                  f"({self.max_memory:,} bytes)") from None
            if fired.is_set():
                raise QueryTimeout(f"query exceeded {timeout:g} s") from None
            raise QueryFailed(self.scrub(f"{type(e).__name__}: {e}")) from None
        finally:
            if authorized is not None:
                with contextlib.suppress(Exception):
                    authorized.set_authorizer(None)
            if watchdog is not None:
                watchdog.cancel()
            if dropped.is_set():
                with contextlib.suppress(Exception):
                    conn.invalidate()
            _rollback_and_close(conn, reset=conn.dialect.name == "postgresql")
        table = fetched.table(columns, time.perf_counter() - start)
        if read is not None:
            table.meta["read"] = sorted(read)
        return table

    def _vetted(self, conn: Connection, query: str, called: tuple[str, ...] | None,
                counted: bool) -> tuple[dict[str, int] | None, Any]:
        """A predicted query's server-side checks (the relations it reads, the functions it
        calls), the backend's counts before it when ``counted`` (None when the server counts
        nothing: the plan's account then stands), and on SQLite the authorizer it runs under:
        (counts, the authorized connection)."""
        before = None
        if called is not None and conn.dialect.name == "postgresql":
            self._vet_relations(conn, query)
            if counted:
                with contextlib.suppress(pgreads.CountsOff):
                    before = _counters_before(conn, self._blinded_of(conn))  # (.pgreads)
        if called:
            self._vet_functions(conn, called)
        if called is not None and conn.dialect.name == "sqlite":
            return before, _sqlite_authorized(conn)
        return before, None

    def _checked_connection(self, counted: bool = False) -> Connection:
        """A pooled connection whose role was checked once per source: a privileged role is
        refused before any prediction runs on it, and the connection goes back rolled back;
        ``counted``: from the counted statements' pool (:meth:`_engine`)."""
        engine = self._engine(counted)
        from sqlalchemy import exc

        try:
            conn: Connection = engine.connect()
        except exc.DBAPIError as e:
            raise SourceUnavailable(self.scrub(
                f"datasource {self.name!r} ({self.masked_url}): {_first_line(e.orig)}")) from None
        except Exception as e:
            raise SourceUnavailable(self.scrub(
                f"datasource {self.name!r} ({self.masked_url}): {e}")) from None
        if self._role_problem is None:
            try:
                self._check_role(conn)
            except BaseException:
                _rollback_and_close(conn)
                raise
        if self._role_problem:
            _rollback_and_close(conn)
            raise PrivilegedRole(self._role_problem)
        return conn

    def _spec(self) -> tuple[Any, ...]:
        """What the worker needs to build this source (its connections live there)."""
        # engine_options as JSON: the spec keys the worker's sources, and connect_args or
        # execution_options (mappings) made it unhashable
        return (self.name, self._url, self.timeout, self.max_rows, self.version, self.schema,
                json.dumps(self.engine_options, sort_keys=True, default=repr), self.max_bytes,
                self.allow_privileged, self.trusted_routines)

    def _sandbox(self) -> tuple[Sandbox, tuple[Any, ...]]:
        """The shared worker and what it builds this source from (made on first use)."""
        if self._box is None:
            self._box = shared_sandbox("sqlalchemy", max_memory=self.max_memory,
                                       preload=(__name__,))
            self._spec_args = self._spec()
        return self._box, self._spec_args

    def _execute_in_worker(self, query: str, timeout: float, max_rows: int,
                           called: tuple[str, ...] | None, counted: bool = False
                           ) -> ResultTable:
        """The query in the sandbox worker (the guard has run here): connecting, executing
        and fetching under its ``max_memory``; killed if it outlives the watchdog's stages."""
        box, spec = self._sandbox()
        self._report_capabilities(lambda: box.call(
            worker_capabilities, spec, timeout=self.timeout + _WATCHDOG_GRACE + _HARD_GRACE,
            max_reply=1 << 16))
        return call_query(box, worker_execute, spec, query, timeout, max_rows,
                          called, counted, timeout=timeout,
                          hard_timeout=timeout + _WATCHDOG_GRACE + _HARD_GRACE + _KILL_GRACE,
                          max_bytes=self.max_bytes, max_memory=self.max_memory,
                          killed="its worker was killed")

    def _check_role(self, conn: Connection) -> None:
        """Refuse (once per source, remembered) a PostgreSQL role that is more than
        read-only, unless ``allow_privileged``. Other backends cannot be checked here."""
        if self.allow_privileged or conn.dialect.name != "postgresql":
            self._role_problem = ""
            return
        from sqlalchemy import exc

        try:
            role, problems = _in_pg_catalog(conn, privileges_found)
            if problems != _SUPERUSER:  # (which reaches everything: nothing more to say)
                problems += escapes_found(conn, _rows)
        except exc.DBAPIError as e:
            raise self._classify(e, False, 0.0) from None
        finally:
            with contextlib.suppress(Exception):
                conn.rollback()
        self._role_problem = "" if not problems else (
            f"datasource {self.name!r}: the role {role!r} {'; '.join(problems)}: predicted "
            "queries must run as a read-only role (one that owns nothing and has only SELECT "
            "on the tables the suite reads), or set allow_privileged: true on the datasource")

    def terminate_backend(self, pid: int) -> bool | None:
        """``pg_terminate_backend(pid)`` from a fresh connection (the watchdog's last resort
        before it drops the socket), then whether the backend is gone: True when it ended,
        False when it still runs a second later (a superuser's ``lo_import('/dev/zero')``
        ignores the signal), None when that cannot be told. A role that may not signal (the
        least-privilege setup revokes it) still drops the socket, which ends most backends."""
        from sqlalchemy import text

        try:
            with self._engine().connect() as other:
                with contextlib.suppress(Exception):  # a role that may not signal
                    other.execute(text("SELECT pg_catalog.pg_cancel_backend(:p), "
                                       "pg_catalog.pg_terminate_backend(:p)"), {"p": pid})
                other.rollback()
                alive = text("SELECT pg_catalog.count(*) FROM pg_catalog.pg_stat_activity "
                             "WHERE pid OPERATOR(pg_catalog.=) :p")
                for _ in range(10):
                    if not other.execute(alive, {"p": pid}).scalar():
                        return True
                    other.rollback()
                    time.sleep(0.1)
                return False
        except Exception:
            return None

    def _vet_relations(self, conn: Connection, query: str) -> None:
        """Refuse a predicted query that names a foreign table over the server's files (a
        ``file_fdw`` table of the database, or a view over one: ``SELECT * FROM
        hostname_ft`` put the host's ``/etc/hostname`` in the report, the forty-first
        re-probe's O7), read once a source; the routines that read one are refused as
        :meth:`_vet_functions` refuses a hidden volatile call. A view whose rule calls what
        :meth:`_vet_functions` refuses written (``SELECT n FROM kv45``, ``kv45`` over a
        VOLATILE routine that signalled other sessions: the forty-fifth re-probe's N9) is
        refused as that call is, naming the view and the routine."""
        from .pgguard import tree_names
        from .sqlcomments import dequoted, readings

        tables = self._file_tables_of(conn)
        views = self._volatile_views_of(conn)
        if not tables and not views:
            return
        words = {w for reading in readings(query)  # read before lower case: ``$A$`` is no ``$a$``
                 for w in re.findall(r"[\w$]+", dequoted(reading).lower())}
        words |= tree_names(query)  # ``"k par"``, ``U&"kp\0061r"``, an operator's symbol (R2)
        if hit := sorted(words & tables):
            raise QueryRefused(f"{hit[0]} is a foreign table over the server's files (or a "
                               "view of one): file access, refused")
        if hit := sorted(words & views.keys()):
            raise QueryRefused(f"{views[hit[0]]}: it may change state that outlives the "
                               "rolled-back read-only transaction, as the call written in the "
                               "query would (refused there too)")

    def _volatile_views_of(self, conn: Connection) -> dict[str, str]:
        """The database's domains, types (their casts), operators, tables, views and routines
        that call a routine a query may not call by name, or reach one (read once:
        :func:`pgroutes.volatile_views`), each with what is said of it: a view over such a
        table is one too, and a routine whose body names one (:func:`pgroutes.reading_routines`)."""
        from sqlalchemy import text

        from . import pgroutes

        if self._volatile_views is None:
            found: dict[str, str] = {}
            for noun, sql in (("domain", pgroutes.DOMAIN_ROUTINES_SQL),
                              ("type", pgroutes.CAST_ROUTINES_SQL),
                              ("operator", pgroutes.OPERATOR_ROUTINES_SQL),
                              ("table", pgroutes.TABLE_ROUTINES_SQL),
                              ("view", pgroutes.VIEW_ROUTINES_SQL), ("function", None)):
                rows = conn.execute(text(sql)).all() if sql is not None else \
                    pgroutes.reading_routines(self._routines_of(conn), found)
                said = pgroutes.volatile_views(rows, lambda: self._hidden_of(conn), noun,
                                               dict(found))
                found.update({name: f"{noun} {name} {why}" for name, why in said.items()
                              if name not in found})
            self._volatile_views = found
        return self._volatile_views

    def _hidden_of(self, conn: Connection) -> dict[str, str]:
        """The database's STABLE or IMMUTABLE routines that call a volatile one unseen (read
        once: the forty-first re-probe's O7, M3)."""
        from sqlalchemy import text

        from .pgbodies import hidden_volatile
        from .pgguard import VOLATILE_BUILTINS_SQL

        if self._hidden is None:
            self._hidden = hidden_volatile(self._routines_of(conn), [
                *conn.execute(text(VOLATILE_BUILTINS_SQL)).scalars(),
                *self._file_tables_of(conn)])
        return self._hidden

    def _routines_of(self, conn: Connection) -> list[Any]:
        """The database's routines (:data:`.pgguard.ROUTINES_SQL`'s rows), read once a source:
        what :meth:`_hidden_of` and :meth:`_volatile_views_of` both read."""
        from sqlalchemy import text

        from .pgguard import ROUTINES_SQL

        if self._routines is None:
            self._routines = list(conn.execute(text(ROUTINES_SQL)).all())
        return self._routines

    def _blinded_of(self, conn: Connection) -> pgreads.Blinders:
        """Why the counts could be blinded on this database and role (read once:
        :func:`.pgreads.blinders`)."""
        if self._blinded is None:
            self._blinded = pgreads.blinders(
                lambda sql: _unstreamed(conn, sql),
                (conn.dialect.server_version_info or (0,)) >= (15,), self.trusted_routines)
        return self._blinded

    def _file_tables_of(self, conn: Connection) -> frozenset[str]:
        """The foreign tables over the server's files and the views of them (read once)."""
        from sqlalchemy import text

        from .pgguard import FILE_TABLES_SQL, file_relations

        if self._file_tables is None:
            self._file_tables = file_relations(conn.execute(text(FILE_TABLES_SQL)).all())
        return self._file_tables

    def _vet_functions(self, conn: Connection, called: tuple[str, ...]) -> None:
        """Refuse a predicted query that calls a volatile function outside the allow-list
        (:func:`pgguard.volatile_refusal`), as the server's ``pg_proc`` says (cached)."""
        from sqlalchemy import text

        from .pgguard import volatile_refusal

        names = sorted({fn.rpartition(".")[2] for fn in called})
        unknown = [n for n in names if n not in self._volatile]
        if unknown:
            rows = conn.execute(text(_VOLATILE_SQL), {"names": unknown}).all()
            found: dict[str, tuple[tuple[str, str], ...]] = {n: () for n in unknown}
            for schema, name in rows:
                found[name] += ((str(schema), str(name)),)
            self._volatile.update(found)
        problem = volatile_refusal(called, [v for n in names for v in self._volatile[n]])
        if problem:
            raise QueryRefused(problem)
        hidden = self._hidden_of(conn)
        for name in names:
            if (calls := hidden.get(name.lower())) is not None:
                raise QueryRefused(
                    f"function {name}() of the database is declared STABLE or IMMUTABLE but "
                    + ("runs what no reading here follows (a statement built at run time, "
                       "another language, a Unicode-escaped name, a handler of the cancel)"
                       if calls == "?" else
                       f"calls {calls}(), which is volatile")
                    + ": it may change state, or read the server's files, past the "
                      "rolled-back read-only transaction")

    def _capabilities(self) -> list[str] | None:
        """What the role can still do that a read-only role should not (dblink, server
        files, signalling its own sessions), each a phrase; [] for a role that cannot or a
        refused one (its refusal says more); None when the server cannot be asked now."""
        from sqlalchemy import exc

        try:
            with self._engine().connect() as conn:
                if conn.dialect.name != "postgresql":
                    return []
                if self._role_problem is None:
                    self._check_role(conn)
                if self._role_problem:
                    return []
                try:
                    return capabilities_left(conn)
                finally:
                    conn.rollback()
        except (exc.DBAPIError, QueryEvalError):
            return None

    def _report_capabilities(self, fetch: Callable[[], list[str] | None]) -> None:
        """Once per source, on its first PostgreSQL query: a :class:`QueryEvalWarning` naming
        what the role can still do (:meth:`_capabilities`, fetched by ``fetch()``)."""
        if self._reported or self.backend != "postgresql":
            return
        try:
            found = fetch()
        except QueryEvalError:
            return
        if found is None:
            return
        self._reported = True
        if found:
            import warnings

            with contextlib.suppress(Warning):  # -W error: a report, not a failure
                warnings.warn(QueryEvalWarning(
                    f"datasource {self.name!r}: the role it connects as can still "
                    f"{'; '.join(found)}. The guard refuses these calls in predicted queries; "
                    "a read-only role should not have them (REVOKE EXECUTE on those functions "
                    "FROM PUBLIC, as a superuser, in the suite's database)"), stacklevel=2)

    def _begin(self, conn: Connection, timeout: float) -> bool:
        """Make the new transaction read-only and time-limited; True if the server enforces
        the timeout itself."""
        backend = conn.dialect.name
        ms = max(1, int(timeout * 1000))
        if backend == "postgresql":
            conn.exec_driver_sql("SET TRANSACTION READ ONLY")
            conn.exec_driver_sql(f"SET LOCAL statement_timeout = {ms}")
            if (conn.dialect.server_version_info or (0,)) >= (14,):
                # the backend polls its socket while it runs: when the client is gone (worker
                # killed at a deadline or on Ctrl-C) the query stops within a second
                conn.exec_driver_sql("SET LOCAL client_connection_check_interval = 1000")
            if self.schema:
                from sqlalchemy import text

                # qualified: under a database path putting public first, a
                # public.set_config(text, text, boolean) ran here as the role, before the
                # counts' first reading, and read a table uncounted (69a B1)
                conn.execute(text("SELECT pg_catalog.set_config('search_path', :s, true)"),
                             {"s": self.schema})
            return True
        if backend in ("mysql", "mariadb"):
            conn.exec_driver_sql(f"SET SESSION max_execution_time = {ms}")
            conn.exec_driver_sql("SET SESSION TRANSACTION READ ONLY")
            return True
        if backend == "sqlite":
            conn.exec_driver_sql("PRAGMA query_only = ON")
        return False

    def _classify(self, e: BaseException, fired: bool, timeout: float) -> QueryEvalError:
        orig = getattr(e, "orig", e)
        state = str(getattr(orig, "sqlstate", "") or "")
        msg = self.scrub(_first_line(orig))
        if state == "57014" or (fired and not getattr(e, "connection_invalidated", False)):
            return QueryTimeout(f"query exceeded {timeout:g} s")
        if state == "25006" or "read-only transaction" in msg or "readonly database" in msg \
                or (state == "0A000" and "is not allowed in a non-volatile function" in msg):
            # the last: a write a routine of the database tried, refused by PL/pgSQL before
            # the transaction could (the forty-sixth re-probe's P8b): a write attempt as well
            return QueryRefused(f"the source is read-only ({msg})")
        if not state and msg.startswith("out of memory") and in_worker():
            # libpq's own allocation of the result failed (no SQLSTATE: the client, not the
            # server): in the worker that is RLIMIT_AS, i.e. max_memory, as a MemoryError is
            return QueryFailed(f"out of memory: the query went over max_memory "
                               f"({self.max_memory:,} bytes; the client: {msg})")
        if state == "08P01" and "bind message supplies" in msg:
            # a placeholder with no value (``WHERE id = $1``): the text's fault, not the
            # server's (an agent's honest call was a case error: the thirty-ninth re-probe's M1)
            return QueryFailed(msg)
        if getattr(e, "connection_invalidated", False) or \
                any(state.startswith(s) for s in _PG_UNAVAILABLE) or \
                (not state and type(orig).__name__ in ("OperationalError", "InterfaceError")
                 and self.backend == "postgresql"):
            return SourceUnavailable(f"datasource {self.name!r} ({self.masked_url}): {msg}")
        return QueryFailed(msg)

    # -- identity -----------------------------------------------------------------------------

    def fingerprint(self) -> str:
        """The URL without its password, plus the ``version:`` the suite gives (bump it when
        the data changes: a server's content cannot be hashed cheaply)."""
        fp = "sqlalchemy:" + _QUERY_PASSWORD.sub(
            lambda m: str(m["head"]), _URL_PASSWORD.sub(lambda m: f"{m['head']}@", self._url))
        return fp + (f"|version={self.version}" if self.version is not None else "")

    def tables(self) -> tuple[dict[str, list[str]], list[tuple[str, str, str, str]]]:
        """Tables with their columns, and foreign keys as (table, column, ref_table, ref_column)."""
        from sqlalchemy import exc, inspect

        try:
            insp = inspect(self._engine())
            tables: dict[str, list[str]] = {}
            fks: list[tuple[str, str, str, str]] = []
            for t in insp.get_table_names(schema=self.schema):
                tables[t] = [c["name"] for c in insp.get_columns(t, schema=self.schema)]
                for fk in insp.get_foreign_keys(t, schema=self.schema):
                    for col, ref in zip(fk["constrained_columns"], fk["referred_columns"],
                                        strict=False):
                        fks.append((t, col, fk["referred_table"], ref))
        except exc.DBAPIError as e:
            raise SourceUnavailable(self.scrub(
                f"datasource {self.name!r} ({self.masked_url}): {_first_line(e.orig)}")) from None
        return tables, fks


def worker_execute(spec: tuple[Any, ...], query: str, timeout: float, max_rows: int,
                   called: tuple[str, ...] | None, counted: bool = False) -> Reply:
    """:meth:`SqlAlchemySource.execute` in the sandbox worker, on a source (and its pool)
    cached there; a result cut by ``max_bytes`` keeps only the rows that fit in it."""
    src = _worker_source(spec)
    return worker_reply(packing(src._execute_here, query, timeout, max_rows, called, counted),
                        src.max_bytes)


def worker_plan(spec: tuple[Any, ...], query: str, timeout: float) -> Reply:
    """:meth:`SqlAlchemySource._plan_here` in the sandbox worker."""
    src = _worker_source(spec)
    return worker_reply(src._plan_here(query, timeout), src.max_bytes)


def _sqlite_authorized(conn: Connection) -> Any:
    """The pooled connection's ``sqlite3`` connection under the ``sqlite`` datasource's
    authorizer (reading only: :func:`.sqlite._authorize`), for a predicted query on a
    ``sqlite:`` URL; None for another driver. SQLite's eponymous virtual tables are open to a
    query without it: ``SELECT sql, nscan FROM sqlite_stmt`` listed the statements earlier
    cases ran on the pooled connection, and their scan counts (a forbidden table's row count,
    counted as no read: the thirty-fourth re-probe's H1), where the ``sqlite`` datasource's
    authorizer refuses it."""
    import sqlite3

    from .sqlite import _authorize

    raw: Any = conn.connection.dbapi_connection
    if not isinstance(raw, sqlite3.Connection):
        return None
    raw.set_authorizer(_authorize)
    return raw


def worker_sqlite_reads(spec: tuple[Any, ...], query: str, timeout: float) -> Reply:
    """:meth:`SqlAlchemySource._sqlite_reads_here` in the sandbox worker."""
    src = _worker_source(spec)
    return worker_reply(src._sqlite_reads_here(query, timeout), src.max_bytes)


def worker_release(spec: tuple[Any, ...]) -> None:
    """The sandbox worker's source for ``spec`` closed and forgotten (its pool disposed)."""
    from .._isolation.sandbox import worker_state

    src = worker_state().get("sqlalchemy", {}).pop(spec, None)
    if src is not None:
        src.close()


def worker_capabilities(spec: tuple[Any, ...]) -> list[str] | None:
    """:attr:`SqlAlchemySource._capabilities` in the sandbox worker."""
    return _worker_source(spec)._capabilities()


def _worker_source(spec: tuple[Any, ...]) -> SqlAlchemySource:
    """The source for ``spec``, built once in the sandbox worker (its pool lives there)."""
    from .._isolation.sandbox import worker_state

    sources: dict[tuple[Any, ...], SqlAlchemySource] = worker_state().setdefault(
        "sqlalchemy", {})
    src = sources.get(spec)
    if src is None:
        name, url, default_timeout, default_rows, version, schema, options, max_bytes, \
            privileged, trusted = spec
        src = sources[spec] = SqlAlchemySource(
            name, url, timeout=default_timeout, max_rows=default_rows, version=version,
            schema=schema, engine_options=json.loads(options), max_bytes=max_bytes,
            allow_privileged=privileged, isolation="thread", trusted_routines=trusted)
    return src


class PrivilegedRole(SourceUnavailable):
    """The datasource connects as a role that can do more than read (see
    :func:`privileges_found`); refused unless ``allow_privileged: true``."""

    prefix = "unsafe source"


def _in_pg_catalog(conn: Connection, read: Any) -> Any:
    """``read(conn)`` with ``search_path`` ``pg_catalog, pg_temp``, the database's own after:
    ``_ROLE_SQL`` and the others name ``pg_roles``, ``pg_class``, ``pg_has_role``
    unqualified, and a database whose ``search_path`` is ``public, pg_catalog`` with a
    ``public.pg_roles`` of no rows hid a membership of ``pg_execute_server_program`` (a
    PL/pgSQL view ran ``COPY ... TO PROGRAM``: found with the forty-fifth re-probe's N14).
    The database's own is back for the names the refusals print."""
    from sqlalchemy import text

    path = conn.exec_driver_sql("SELECT pg_catalog.current_setting('search_path')").scalar()
    conn.exec_driver_sql(
        "SELECT pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true)")
    found = read(conn)
    conn.execute(text("SELECT pg_catalog.set_config('search_path', :p, true)"), {"p": path})
    return found


def privileges_found(conn: Connection) -> tuple[str, list[str]]:
    """The PostgreSQL role ``conn`` runs as, and what it may do beyond reading, each as a
    phrase ("is a superuser", "can write (INSERT, UPDATE) on public.album and 9 more tables",
    "owns table public.x", ...); an empty list for a read-only role."""
    role, superuser, createrole, replication, members = conn.exec_driver_sql(
        *_driver_statement(conn, _ROLE_SQL)).one()
    problems: list[str] = []
    if superuser:
        return str(role), list(_SUPERUSER)
    if createrole:
        problems.append("can create roles (CREATEROLE)")
    if replication:
        problems.append("has REPLICATION")
    if members:
        problems.append("is a member of " + ", ".join(members))
    rows = conn.exec_driver_sql(*_driver_statement(conn, _WRITABLE_SQL)).all()
    if rows:
        privs = sorted({p for r in rows for p in r[1]},
                       key=["INSERT", "UPDATE", "DELETE", "TRUNCATE"].index)
        more = int(rows[0][2]) - len(rows)
        problems.append(f"can write ({', '.join(privs)}) on {', '.join(r[0] for r in rows)}"
                        + (f" and {more} more tables" if more > 0 else ""))
    rows = conn.exec_driver_sql(*_driver_statement(conn, _OWNED_SQL)).all()
    if rows:
        more = int(rows[0][2]) - len(rows)
        problems.append("owns " + ", ".join(f"{r[0]} {r[1]}" for r in rows)
                        + (f" and {more} more objects" if more > 0 else ""))
    return str(role), problems


def capabilities_left(conn: Connection) -> list[str]:
    """What the role of ``conn`` may still execute that a read-only role should not, each a
    phrase ("execute dblink (23 functions)..."); [] when nothing."""
    names = [str(r[0]) for r in conn.exec_driver_sql(
        *_driver_statement(conn, _CAPABILITIES_SQL)).all()]
    found: list[str] = []
    dblink = [n for n in names if n.startswith("dblink")]
    if dblink:
        found.append(f"execute dblink ({len(dblink)} functions, e.g. dblink_exec: statements on "
                     "a connection of their own, outside the read-only transaction)")
    files = [n for n in names if n in _FILE_FUNCTIONS]
    if files:
        found.append(f"read or write server files ({', '.join(files)})")
    signal = [n for n in names if n in _SIGNAL_FUNCTIONS]
    if signal:
        found.append(f"signal the other sessions of its own role ({', '.join(signal)})")
    return found


class _Watchdog:
    """The client-side timeout, in two stages from a timer thread: at ``after`` seconds the
    driver's ``cancel()`` (PostgreSQL: a cancel request); :data:`_HARD_GRACE` later, if the
    statement still runs, ``pg_terminate_backend`` from a second connection and a shutdown of
    the connection's socket, so the blocked driver call returns whatever the backend does."""

    def __init__(self, source: SqlAlchemySource, conn: Connection, after: float,
                 fired: threading.Event, dropped: threading.Event) -> None:
        self.source, self.conn, self.fired, self.dropped = source, conn, fired, dropped
        self.done = threading.Event()
        #: Set when the terminated backend's fate is known (:attr:`ended`).
        self.verdict = threading.Event()
        #: After a termination: True the backend ended, False it still runs, None unknown.
        self.ended: bool | None = None
        try:
            self.driver = conn.connection.driver_connection
        except Exception:
            self.driver = None
        self.pid = _backend_pid(self.driver)
        self.timer = threading.Thread(target=self._run, args=(after,), daemon=True,
                                      name="queryeval-sql-watchdog")
        self.timer.start()

    def cancel(self) -> None:
        self.done.set()

    def _run(self, after: float) -> None:
        if self.done.wait(after):
            return
        self.fired.set()
        for method in ("cancel", "interrupt"):  # psycopg / sqlite3 (and most others: cancel)
            fn = getattr(self.driver, method, None)
            if callable(fn):
                with contextlib.suppress(Exception):
                    fn()
                break
        if self.done.wait(_HARD_GRACE):
            return
        self.dropped.set()
        if self.pid is not None:
            threading.Thread(target=self._terminate, daemon=True,
                             name="queryeval-sql-terminate").start()
        else:
            self.verdict.set()
        _shutdown_socket(self.driver)

    def _terminate(self) -> None:
        assert self.pid is not None
        try:
            self.ended = self.source.terminate_backend(self.pid)
        finally:
            self.verdict.set()


def _backend_pid(driver: Any) -> int | None:
    """The server process of a psycopg 3 / psycopg2 connection (None for other drivers)."""
    with contextlib.suppress(Exception):
        info = getattr(driver, "info", None)
        if info is not None and getattr(info, "backend_pid", None):
            return int(info.backend_pid)
        return int(driver.get_backend_pid())
    return None


def _shutdown_socket(driver: Any) -> None:
    """Shut the connection's socket down (not close: the driver still owns the descriptor),
    so a read blocked on it returns at once."""
    import os
    import socket

    with contextlib.suppress(Exception):
        fd = os.dup(int(driver.fileno()))
        with socket.socket(fileno=fd) as sock:
            sock.shutdown(socket.SHUT_RDWR)


def _dropped(timeout: float, watchdog: _Watchdog | None) -> QueryTimeout:
    """The timeout of a query the watchdog had to drop, saying whether its backend ended: one
    that survives ``pg_terminate_backend`` keeps running on the server, and is named."""
    ended = None
    if watchdog is not None and watchdog.verdict.wait(_VERDICT_WAIT):
        ended = watchdog.ended
    pid = watchdog.pid if watchdog is not None else None
    if ended:
        return QueryTimeout(f"query exceeded {timeout:g} s (the server did not stop it: the "
                            "backend was terminated and the connection dropped)")
    if ended is False:
        return QueryTimeout(
            f"query exceeded {timeout:g} s; BACKEND PID {pid} IS STILL RUNNING on the server: "
            "it ignored the cancel request and pg_terminate_backend, and the connection was "
            f"dropped. End it there (pg_terminate_backend({pid}) as a superuser, or restart the "
            "server)")
    if pid is None:  # a driver that does not say (not PostgreSQL)
        return QueryTimeout(f"query exceeded {timeout:g} s (the server did not stop it: the "
                            "connection was dropped)")
    return QueryTimeout(f"query exceeded {timeout:g} s (the server did not stop it: the "
                        f"connection was dropped; whether backend pid {pid} ended could not be "
                        "checked)")


def _default_pg_driver() -> str:
    """``postgresql://`` means psycopg2 to SQLAlchemy; use psycopg 3 when only it is there."""
    import importlib.util

    if importlib.util.find_spec("psycopg2") is None and importlib.util.find_spec("psycopg"):
        return "postgresql+psycopg"
    return "postgresql"


def _rows(conn: Connection, query: str) -> list[Any]:
    """The rows of a catalog query with no parameters, in the driver's spelling."""
    return list(conn.exec_driver_sql(*_driver_statement(conn, query)).all())


def _driver_statement(conn: Connection, query: str) -> tuple[str, tuple[()]] | tuple[str]:
    """The query as the DBAPI must receive it: ``format``/``pyformat`` drivers (psycopg)
    read ``%`` as a placeholder once any parameters are passed, and SQLAlchemy may pass an
    empty tuple, so ``%`` is doubled and an explicit empty tuple always given."""
    if conn.dialect.paramstyle in ("format", "pyformat"):
        return query.replace("%", "%%"), ()
    return (query,)


def _fetch_rows(result: Any, fetched: FetchedRows, deadline: float, timeout: float,
                fired: threading.Event) -> None:
    """Fetch in batches sized to the widest rows seen so far, so that a result of wide rows
    stays under the byte budget per batch and the deadline is checked between batches."""
    step, widest = _FIRST_BATCH, 1.0
    more = True
    while more:
        if time.monotonic() > deadline:
            fired.set()
            raise QueryTimeout(f"query exceeded {timeout:g} s")
        batch = result.fetchmany(fetched.wanted(step))
        more = fetched.add(_cells(batch))
        if more:
            widest = max(widest, fetched.last / len(batch))
            step = max(1, min(_FETCH_BATCH, int(_BATCH_BYTES // widest)))


def _cells(batch: Iterable[Iterable[object]]) -> list[tuple[Any, ...]]:
    """A fetched batch as tuples of :func:`~pytest_queryeval.results.hashable_cell` values; a
    batch with no array, JSON or buffer value is copied as it is (a Python call per cell was a
    fifth of a 1,000,000-row PostgreSQL result's cost)."""
    rows = [tuple(r) for r in batch]
    types = set(map(type, chain.from_iterable(rows)))
    if any(issubclass(t, _CONVERTED) for t in types):
        return [tuple(map(hashable_cell, r)) for r in rows]
    return rows


_CONVERTED = (list, dict, memoryview)




def _trusted_names(name: str, value: object) -> tuple[str, ...]:
    """``trusted_routines``: routine names (``schema.name``, ``name``, ``*``) the datasource
    vouches set no counting setting (:func:`.pgreads.builder`)."""
    if not isinstance(value, list | tuple) or not all(
            isinstance(n, str) and n.strip() for n in value):
        raise ConfigError("must be a list of routine names (schema.name, name or a signature), or ['*'], "
                          f"not {value!r}", key=f"datasources.{name}.trusted_routines")
    return tuple(n.strip() for n in value)


def _first_line(e: object) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


def _plan_relations(plan: object) -> frozenset[str]:
    """The relations an ``EXPLAIN (FORMAT JSON, VERBOSE)`` plan scans, each with its schema
    (``sales.orders``: without VERBOSE the plan named ``orders`` only, and a forbidden
    ``sales.orders`` was never counted, the thirty-sixth re-probe's H6). Read where the plan
    is made, so only the names leave the worker: a plan is as long as the constants a query
    folds, and ``repeat('x', 70000000)`` made it pass max_bytes, cut to no row, an account of
    nothing (the forty-fifth re-probe's N12)."""
    if isinstance(plan, str):
        plan = json.loads(plan)
    names: set[str] = set()
    stack: list[object] = [plan]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if isinstance(node.get("Relation Name"), str):
                schema = node.get("Schema")
                names.add(f"{schema}.{node['Relation Name']}" if isinstance(schema, str)
                          else node["Relation Name"])
            stack.extend(v for v in node.values() if isinstance(v, dict | list))
        elif isinstance(node, list):
            stack.extend(node)
    return frozenset(names)


def _counters_before(conn: Connection, blinded: pgreads.Blinders) -> dict[str, int]:
    """The backend's counts of table reads so far (:func:`.pgreads.counters`), parallel
    query off (:func:`.pgreads.serial`; ``blinded``, why the counts could be blinded, is
    raised), and a savepoint for the statement counted after them (:func:`_counted_after`)."""
    before = pgreads.counters(lambda sql: _unstreamed(conn, sql))
    pgreads.serial(lambda sql: _unstreamed(conn, sql), blinded)
    _unstreamed(conn, f"SAVEPOINT {pgreads.SAVEPOINT}")
    return before


def _counted_after(conn: Connection, before: dict[str, int]) -> frozenset[str]:
    """The tables the statement since :func:`_counters_before` read, its savepoint rolled
    back first (what it set is undone; a failed statement leaves the transaction usable).
    Parallel query still off is read before the rollback, which would undo a change
    (:func:`.pgreads.still_serial`)."""
    from sqlalchemy.exc import DBAPIError

    blinded = ""
    with contextlib.suppress(DBAPIError):  # a failed statement: nothing runs before rollback
        blinded = pgreads.still_serial(lambda sql: _unstreamed(conn, sql))
    _unstreamed(conn, f"ROLLBACK TO SAVEPOINT {pgreads.SAVEPOINT}")
    if blinded:  # the statement turned parallel query back on (55a B1)
        raise CountUnknown(blinded)
    return pgreads.touched(before, pgreads.counters(lambda sql: _unstreamed(conn, sql)))


def _unstreamed(conn: Connection, sql: str) -> list[Any]:
    """``sql``'s rows (none for a statement without) on a client-side cursor: the
    connection's ``stream_results``, set for the prediction, would declare a server-side
    cursor for it (``DECLARE ... CURSOR FOR ROLLBACK TO SAVEPOINT``: a syntax error)."""
    statement = _driver_statement(conn, sql)
    result = conn.exec_driver_sql(statement[0], statement[1] if len(statement) == 2 else None,
                                  execution_options={"stream_results": False})
    return list(result.fetchall()) if result.returns_rows else []


def _partly_read(error: QueryEvalError, conn: Connection,
                 before: dict[str, int] | None) -> QueryEvalError:
    """``error`` of a counted statement that failed, as :class:`PartlyRead` with the tables
    it read before it failed: a routine's error carried a forbidden table's rows while the
    plan, which failed, named none of it (the forty-fifth re-probe's N1-N8); a timeout the
    server cancelled, as :class:`CountedTimeout` (its transaction is usable again past the
    savepoint: a read then a sleep past the timeout counted nothing, 46a P10). A lost
    connection stays what it is (the count is then unknown)."""
    if before is None or type(error) not in (QueryFailed, QueryTimeout):
        return error
    try:
        read = _counted_after(conn, before)
    except Exception:
        return error
    if type(error) is QueryTimeout:
        return CountedTimeout(str(error), read)
    return PartlyRead(str(error), read) if read else error


def _rollback_and_close(conn: Connection, *, reset: bool = False) -> None:
    """Roll back and return the connection to the pool; with ``reset`` (PostgreSQL) first
    ``DISCARD ALL``, so nothing a query left in the session (an advisory lock, a setting, a
    prepared statement) reaches the next one; a connection that cannot be reset is dropped."""
    try:
        conn.rollback()
        if reset and not conn.invalidated:
            _discard_all(conn.connection.driver_connection)
    except Exception:
        with contextlib.suppress(Exception):
            conn.invalidate()
    with contextlib.suppress(Exception):
        conn.close()


def _discard_all(driver: Any) -> None:
    """``DISCARD ALL`` outside a transaction block (it cannot run in one): psycopg notices
    it and forgets its own prepared statements too."""
    driver.autocommit = True
    try:
        cur = driver.cursor()
        try:
            cur.execute("DISCARD ALL")
        finally:
            cur.close()
    finally:
        driver.autocommit = False
