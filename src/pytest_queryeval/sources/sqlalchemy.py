"""Any database SQLAlchemy can reach (PostgreSQL, MySQL, Trino, Snowflake...), read-only.

SQLAlchemy and the drivers are imported on first use only (the ``sqlalchemy`` extra). Every
query runs in its own transaction that is made read-only where the dialect allows it
(PostgreSQL: ``SET TRANSACTION READ ONLY``) and is always rolled back. The URL password never
leaves this module: fingerprints drop it, and every error message is scrubbed.
"""

from __future__ import annotations

import contextlib
import re
import threading
import time
from typing import Any
from urllib.parse import quote, quote_plus, unquote

from ..errors import (
    ConfigError,
    MissingDependency,
    QueryEvalError,
    QueryFailed,
    QueryRefused,
    QueryTimeout,
    SourceUnavailable,
)
from ..results import ResultTable
from .base import DEFAULT_MAX_BYTES, DEFAULT_MAX_ROWS, DEFAULT_TIMEOUT, FetchedRows, positive_int
from .sqlguard import check_read_only, sqlglot_dialect

MASK = "***"
_URL_PASSWORD = re.compile(r"(?P<head>[a-zA-Z][\w+.-]*://[^:/@\s]*):(?P<pw>[^@/\s]*)@")
#: ``?password=...`` in a URL's query string (some dialects take credentials there).
_QUERY_PASSWORD = re.compile(r"(?P<head>[?&](?:password|pwd|passwd)=)(?P<pw>[^&\s]*)",
                             re.IGNORECASE)
_FETCH_BATCH = 1_000
#: Rows of the first fetched batch, and what later batches may hold at the size of the largest
#: rows seen so far: servers cap no value below 1 GB (PostgreSQL), so the batch size follows the
#: rows' size, to check ``max_bytes`` before much more than it is in memory.
_FIRST_BATCH = 16
_BATCH_BYTES = 16 * 1024 * 1024
#: Extra time the client-side watchdog gives a server-side timeout before cancelling itself.
_WATCHDOG_GRACE = 1.0
#: PostgreSQL SQLSTATEs (and classes) that mean "the server went away", not "bad query".
_PG_UNAVAILABLE = ("08", "57P01", "57P02", "57P03", "53300")


def mask_url(text: str) -> str:
    """``scheme://user:secret@host`` -> ``scheme://user:***@host`` anywhere in ``text``."""
    text = _URL_PASSWORD.sub(lambda m: f"{m['head']}:{MASK}@", text)
    return _QUERY_PASSWORD.sub(lambda m: f"{m['head']}{MASK}", text)


class SqlAlchemySource:
    """A SQLAlchemy URL as a read-only data source."""

    type = "sqlalchemy"

    def __init__(self, name: str, url: str, *, timeout: float = DEFAULT_TIMEOUT,
                 max_rows: int = DEFAULT_MAX_ROWS, version: str | int | None = None,
                 schema: str | None = None, engine_options: dict[str, Any] | None = None,
                 max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        if not isinstance(url, str) or "://" not in url:
            raise ConfigError("'url' must be a SQLAlchemy URL (dialect+driver://...)",
                              key=f"datasources.{name}.url")
        self.name = name
        self._url = url
        self.timeout = float(timeout)
        self.max_rows = int(max_rows)
        self.max_bytes = positive_int(max_bytes, name, "max_bytes")
        self.version = None if version is None else str(version)
        self.schema = schema
        self.engine_options = dict(engine_options or {})
        raw = [m["pw"] for m in (*_URL_PASSWORD.finditer(url), *_QUERY_PASSWORD.finditer(url))]
        # Every spelling of the password that could show up in a driver message.
        self._secrets = sorted({s for pw in raw for s in (pw, unquote(pw), quote(unquote(pw)),
                                                          quote_plus(unquote(pw))) if s},
                               key=len, reverse=True)
        self._engine_obj: Any = None
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

    # -- engine -------------------------------------------------------------------------------

    def _engine(self) -> Any:
        with self._lock:
            if self._engine_obj is None:
                self._engine_obj = self._create_engine()
            return self._engine_obj

    def _create_engine(self) -> Any:
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
        try:
            return sqlalchemy.create_engine(url, **options)
        except ImportError as e:
            raise MissingDependency(self.scrub(
                f"the driver for {url.drivername!r} is not installed ({e})")) from None
        except Exception as e:
            raise ConfigError(self.scrub(f"cannot create an engine: {e}"),
                              key=f"datasources.{self.name}.url") from None

    def close(self) -> None:
        with self._lock:
            if self._engine_obj is not None:
                self._engine_obj.dispose()
                self._engine_obj = None

    # -- execution ----------------------------------------------------------------------------

    def execute(self, query: str, *, timeout: float | None = None, max_rows: int | None = None,
                trusted: bool = False) -> ResultTable:
        """One query in its own read-only transaction, always rolled back.

        The timeout is enforced by the server where it can be (PostgreSQL
        ``statement_timeout``, MySQL ``max_execution_time``), by a watchdog that cancels the
        statement from another thread otherwise, and between fetched batches.
        """
        timeout = self.timeout if timeout is None else float(timeout)
        max_rows = self.max_rows if max_rows is None else int(max_rows)
        if not trusted:
            check_read_only(query, self.dialect)
        engine = self._engine()
        from sqlalchemy import exc

        try:
            conn = engine.connect()
        except exc.DBAPIError as e:
            raise SourceUnavailable(self.scrub(
                f"datasource {self.name!r} ({self.masked_url}): {_first_line(e.orig)}")) from None
        except Exception as e:
            raise SourceUnavailable(self.scrub(
                f"datasource {self.name!r} ({self.masked_url}): {e}")) from None
        fired = threading.Event()
        watchdog: threading.Timer | None = None
        start = time.perf_counter()
        deadline = time.monotonic() + timeout
        fetched = FetchedRows(max_rows, self.max_bytes)
        try:
            server_side = self._begin(conn, timeout)
            watchdog = threading.Timer(timeout + (_WATCHDOG_GRACE if server_side else 0.0),
                                       self._cancel, (conn, fired))
            watchdog.daemon = True
            watchdog.start()
            result = conn.execution_options(stream_results=True, max_row_buffer=_FETCH_BATCH) \
                .exec_driver_sql(*_driver_statement(conn, query))
            if not result.returns_rows:
                raise QueryRefused("the statement returned no rows: not a query")
            columns = list(result.keys())
            step, widest = _FIRST_BATCH, 1.0
            more = True
            while more:
                if time.monotonic() > deadline:
                    fired.set()
                    raise QueryTimeout(f"query exceeded {timeout:g} s")
                batch = result.fetchmany(fetched.wanted(step))
                more = fetched.add([tuple(_cell(v) for v in r) for r in batch])
                if more:
                    widest = max(widest, fetched.last / len(batch))
                    step = max(1, min(_FETCH_BATCH, int(_BATCH_BYTES // widest)))
            result.close()
        except QueryEvalError:
            raise
        except exc.DBAPIError as e:
            raise self._classify(e, fired.is_set(), timeout) from None
        except Exception as e:
            if fired.is_set():
                raise QueryTimeout(f"query exceeded {timeout:g} s") from None
            raise QueryFailed(self.scrub(f"{type(e).__name__}: {e}")) from None
        finally:
            if watchdog is not None:
                watchdog.cancel()
            _rollback_and_close(conn)
        return fetched.table(columns, time.perf_counter() - start)

    def _begin(self, conn: Any, timeout: float) -> bool:
        """Make the new transaction read-only and time-limited; True if the server enforces
        the timeout itself."""
        backend = conn.dialect.name
        ms = max(1, int(timeout * 1000))
        if backend == "postgresql":
            conn.exec_driver_sql("SET TRANSACTION READ ONLY")
            conn.exec_driver_sql(f"SET LOCAL statement_timeout = {ms}")
            if self.schema:
                from sqlalchemy import text

                conn.execute(text("SELECT set_config('search_path', :s, true)"),
                             {"s": self.schema})
            return True
        if backend in ("mysql", "mariadb"):
            conn.exec_driver_sql(f"SET SESSION max_execution_time = {ms}")
            conn.exec_driver_sql("SET SESSION TRANSACTION READ ONLY")
            return True
        if backend == "sqlite":
            conn.exec_driver_sql("PRAGMA query_only = ON")
        return False

    @staticmethod
    def _cancel(conn: Any, fired: threading.Event) -> None:
        """Watchdog: cancel the running statement through the driver, from another thread."""
        fired.set()
        try:
            driver = conn.connection.driver_connection
        except Exception:
            return
        for method in ("cancel", "interrupt"):  # psycopg / sqlite3 (and most others: cancel)
            fn = getattr(driver, method, None)
            if callable(fn):
                with contextlib.suppress(Exception):
                    fn()
                return

    def _classify(self, e: Any, fired: bool, timeout: float) -> QueryEvalError:
        orig = getattr(e, "orig", e)
        state = str(getattr(orig, "sqlstate", "") or "")
        msg = self.scrub(_first_line(orig))
        if state == "57014" or (fired and not getattr(e, "connection_invalidated", False)):
            return QueryTimeout(f"query exceeded {timeout:g} s")
        if state == "25006" or "read-only transaction" in msg or "readonly database" in msg:
            return QueryRefused(f"the source is read-only ({msg})")
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


def _default_pg_driver() -> str:
    """``postgresql://`` means psycopg2 to SQLAlchemy; use psycopg 3 when only it is there."""
    import importlib.util

    if importlib.util.find_spec("psycopg2") is None and importlib.util.find_spec("psycopg"):
        return "postgresql+psycopg"
    return "postgresql"


def _driver_statement(conn: Any, query: str) -> tuple[str, tuple[()]] | tuple[str]:
    """The query as the DBAPI must receive it: ``format``/``pyformat`` drivers (psycopg)
    read ``%`` as a placeholder once any parameters are passed, and SQLAlchemy may pass an
    empty tuple, so ``%`` is doubled and an explicit empty tuple always given."""
    if conn.dialect.paramstyle in ("format", "pyformat"):
        return query.replace("%", "%%"), ()
    return (query,)


def _cell(v: Any) -> Any:
    """Make driver values hashable (rows are counted as multisets): arrays become tuples,
    JSON objects their canonical text."""
    if isinstance(v, list):
        return tuple(_cell(x) for x in v)
    if isinstance(v, dict):
        import json

        return json.dumps(v, sort_keys=True, default=str)
    if isinstance(v, memoryview):
        return bytes(v)
    return v


def _first_line(e: Any) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


def _rollback_and_close(conn: Any) -> None:
    try:
        conn.rollback()
    except Exception:
        with contextlib.suppress(Exception):
            conn.invalidate()
    with contextlib.suppress(Exception):
        conn.close()
