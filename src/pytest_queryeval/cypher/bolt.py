"""``type: bolt``: a graph database server spoken to over Bolt (Neo4j, or any server with a
Bolt listener), through the official ``neo4j`` driver (extra ``neo4j``).

Spec keys: ``url`` (required: ``bolt://``, ``neo4j://`` or their ``+s``/``+ssc`` forms, no
credentials in it), ``database`` (the server's default when absent), ``user``,
``password_env`` (the name of the environment variable that holds the password: a password
is never written in a suite), ``timeout`` (seconds a query may run, and the connection may
take, default 30), ``max_rows`` (default 100,000), ``version`` (any string mixed into
:meth:`BoltSource.fingerprint`: bump it when the server's data changes, or run with
``--queryeval-no-cache``: a server's graph cannot be hashed cheaply); on a FalkorDB server,
``rehearse`` (default true: each prediction is first run on the plugin's own copy of the
graph, :mod:`.rehearsal`) and ``max_memory`` (what a prediction may build there beyond the
graph, default 1 GiB); ``max_values`` (the values a result may carry to the pytest process,
every list item and map entry counted, default 1,000,000: :mod:`.values`; counted as the
records are read, or as the copy's reply is, the reading stopped past it).

Why three layers against writes, when the ladybug source has the engine's: a server is shared
and its data is not ours to change, and no layer alone holds everywhere.

1. :func:`.guard.check_server` refuses before anything is sent: every write clause, what
   reaches outside the graph (``LOAD CSV``, ``USE``), ``CALL ... IN TRANSACTIONS``, every
   procedure not on :data:`.guard.READ_PROCEDURES`, and a nesting FalkorDB's parser would
   take minutes over; and (:func:`.guard.check_unbound`) a ``$`` parameter or a ``CYPHER``
   prefix, as no query is sent parameters. FalkorDB's Bolt listener (the server the tests
   run) runs every query as ``GRAPH.QUERY``: it honours neither the read access mode nor a rollback nor the
   transaction's timeout, and a write that got through would be kept. So this layer is the
   one that holds on any server.
2. The session's access mode is ``READ`` (a Neo4j server refuses a write in it,
   ``Neo.ClientError.Statement.AccessMode``; a cluster routes it to a reader).
3. The query runs in an explicit transaction that is always rolled back, never committed.

Rows are fetched lazily (``fetch_size``), and the fetch stops one row past ``max_rows``. The
timeout is sent with the query as the transaction's (a Neo4j server ends it there; a FalkorDB
server needs its own ``TIMEOUT_DEFAULT``, docs/cypher.md) and a wall-clock deadline that shuts
the connection's socket down (:class:`.._isolation.socketdeadline.SocketDeadline`), for a server
that ignores it. Values come out as the ladybug source gives them (:func:`_value`), so both
sources score a graph alike.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import os
import socket
import threading
import time
from collections.abc import Mapping
from typing import Any

from .._isolation.socketdeadline import SocketDeadline, reset_close
from ..errors import (
    ConfigError,
    MissingDependency,
    QueryEvalError,
    SourceUnavailable,
)
from ..results import ResultTable
from ..sources.base import (
    DEFAULT_MAX_ROWS,
    DEFAULT_TIMEOUT,
    SourceDefaults,
    check_keys,
    positive,
    positive_int,
)
from . import boltalone, graphcopy, guard, rehearsal, unwritable, values
from .bolterrors import connect_error as _connect_error
from .bolterrors import query_error as _query_error
from .boltserver import is_falkordb, pool_sockets, raw_socket
from .boltvalues import graph_types as _graph_types
from .boltvalues import value as _value
from .rehearsal import Rehearsal
from .sourcekeys import BOLT, BOLT_KEYS
from .values import DEFAULT_MAX_VALUES

TYPE = BOLT
KEYS = BOLT_KEYS
SCHEMES = ("bolt", "bolt+s", "bolt+ssc", "neo4j", "neo4j+s", "neo4j+ssc")
_FETCH = 1_000
#: What a rehearsal may build beyond its copy of the graph (bytes), by default: the spec's
#: ``max_memory``, at most what the server can spare.
REHEARSAL_MEMORY = 1024 * 1024 * 1024
#: The form of the values a result holds (in the gold cache's key): 2, a duration the driver's
#: ``Duration`` (issue 60), no longer a ``timedelta``.
VALUES = 2


def _neo4j() -> Any:
    """The driver, imported by name when a source first connects: a core install (no
    ``neo4j`` extra) type-checks this folder without it (scripts/mypy-core.sh)."""
    try:
        return importlib.import_module("neo4j")
    except ImportError:
        raise MissingDependency("type: bolt needs the neo4j driver: pip install "
                                "'pytest-queryeval[neo4j]'") from None


def _text(spec: Mapping[str, Any], name: str, key: str) -> str | None:
    value = spec.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ConfigError("must be a non-empty string", key=f"datasources.{name}.{key}")
    return value


class BoltSource(SourceDefaults):
    """One Bolt server, connected on first use; the driver (and its one connection) shared by
    the session's cases."""

    type = TYPE

    def __init__(self, name: str, url: str, *, database: str | None = None,
                 user: str | None = None, password_env: str | None = None,
                 timeout: float = DEFAULT_TIMEOUT, max_rows: int = DEFAULT_MAX_ROWS,
                 version: str | None = None, rehearse: bool = True,
                 max_memory: int = REHEARSAL_MEMORY,
                 max_values: int = DEFAULT_MAX_VALUES) -> None:
        self.name = name
        self.url = url
        self.database = database
        self.user = user
        self.password_env = password_env
        self.timeout = timeout
        self.max_rows = max_rows
        self.version = version
        self._lock = threading.Lock()
        self._driver: Any = None
        self._falkordb = False
        self.rehearse = rehearse
        self.max_memory = max_memory
        self.max_values = max_values
        self._rehearsal: Rehearsal | None = None

    @classmethod
    def from_spec(cls, name: str, spec: Mapping[str, Any]) -> BoltSource:
        check_keys(name, TYPE, spec, KEYS)
        url = _text(spec, name, "url")
        if url is None:
            raise ConfigError("missing: a bolt datasource needs 'url' (bolt://host:7687 or "
                              "neo4j://host:7687)", key=f"datasources.{name}.url")
        scheme, sep, rest = url.partition("://")
        if not sep or scheme.lower() not in SCHEMES:
            raise ConfigError(f"must start with one of {', '.join(s + '://' for s in SCHEMES)}",
                              key=f"datasources.{name}.url")
        if "@" in rest.split("/", 1)[0]:
            raise ConfigError("no credentials in the URL: give 'user', and the password in "
                              "the environment variable that 'password_env' names",
                              key=f"datasources.{name}.url")
        user = _text(spec, name, "user")
        password_env = _text(spec, name, "password_env")
        if password_env is not None and user is None:
            raise ConfigError("a password needs a 'user'", key=f"datasources.{name}.password_env")
        version = spec.get("version")
        rehearse = spec.get("rehearse", True)
        if not isinstance(rehearse, bool):
            raise ConfigError("must be true or false", key=f"datasources.{name}.rehearse")
        return cls(name, url, database=_text(spec, name, "database"), user=user,
                   password_env=password_env,
                   timeout=positive(spec, "timeout", DEFAULT_TIMEOUT, name),
                   max_rows=positive_int(spec.get("max_rows", DEFAULT_MAX_ROWS), name,
                                         "max_rows"),
                   version=None if version is None else str(version), rehearse=rehearse,
                   max_memory=positive_int(spec.get("max_memory", REHEARSAL_MEMORY), name,
                                           "max_memory"),
                   max_values=positive_int(spec.get("max_values", DEFAULT_MAX_VALUES), name,
                                           "max_values"))

    @property
    def where(self) -> str:
        """How messages name the server: the datasource and its URL (which holds no
        password: :meth:`from_spec` refuses one)."""
        db = f", database {self.database!r}" if self.database else ""
        return f"datasource {self.name!r} ({self.url}{db})"

    # -- connecting ------------------------------------------------------------------------

    def _auth(self) -> tuple[str, str] | None:
        """No user: no authentication at all (FalkorDB's listener broke on an empty basic
        token, and was unusable for the next connection)."""
        if self.user is None:
            return None
        if self.password_env is None:
            return (self.user, "")
        password = os.environ.get(self.password_env)
        if password is None:
            raise SourceUnavailable(f"{self.where}: the environment variable "
                                    f"{self.password_env} (password_env) is not set")
        return (self.user, password)

    def _connect(self, neo4j: Any, *, pool: int) -> Any:
        """A driver whose connectivity was verified, of at most ``pool`` connections."""
        auth = self._auth()
        for attempt in (1, 2):
            driver: Any = None
            try:
                driver = neo4j.GraphDatabase.driver(
                    self.url, auth=auth, user_agent="pytest-queryeval",
                    connection_timeout=self.timeout,
                    connection_acquisition_timeout=self.timeout,
                    max_connection_pool_size=pool)
                driver.verify_connectivity()
                return driver
            except Exception as exc:  # every driver failure here is the server's
                if driver is not None:
                    with contextlib.suppress(Exception):
                        driver.close()
                # FalkorDB's listener leaves the first handshake after another client's
                # GOODBYE unanswered until that connection closes (ours just did): once more
                if attempt == 2 or "handshake" not in str(exc).lower():
                    raise _connect_error(self, exc) from None
        raise AssertionError("unreachable")  # pragma: no cover

    def _open(self) -> Any:
        if self._driver is not None:
            return self._driver
        driver = self._connect(_neo4j(), pool=4)
        try:  # asked on every use until it is known: never taken for "not FalkorDB"
            self._falkordb = is_falkordb(driver, where=self.where, database=self.database,
                                         seconds=float(self.timeout or DEFAULT_TIMEOUT))
        except SourceUnavailable:
            with contextlib.suppress(Exception):
                driver.close()
            raise
        self._driver = driver
        return driver

    # -- the contract ----------------------------------------------------------------------

    def execute(self, query: str, *, timeout: float | None = None,
                max_rows: int | None = None, trusted: bool = False) -> ResultTable:
        guard.check_text(query)  # a lone surrogate: nothing can be sent
        # an untrusted query no rehearsal will measure: its regular expressions must be of
        # the linear class, not merely weighed (issue 58, the thirty-third round)
        guard.check_server(query, costs=trusted or not self.rehearse,
                           linear=not trusted and not self.rehearse)
        guard.check_unbound(query)
        limit = self.max_rows if max_rows is None else int(max_rows)
        seconds = float((self.timeout or DEFAULT_TIMEOUT) if timeout is None else timeout)
        with self._lock:
            driver = self._open()
            if self._falkordb and self.rehearse:
                return self._on_copy(driver, query, seconds, limit, trusted)
            if self.rehearse and not trusted:  # not a FalkorDB server: no rehearsal
                guard.check_costs(query, linear=True)
            if self._falkordb:
                unwritable.check_falkordb(query)
            if self._falkordb and not trusted:
                return self._alone(query, seconds, limit)
            return self._on_server(driver, query, seconds, limit, alone=False)

    def _alone(self, query: str, seconds: float, limit: int) -> ResultTable:
        """A prediction on a FalkorDB server itself: on a connection of its own, dropped after
        it (no byte of its reply can reach another query), the reply read only if the server
        sent too few bytes for a message to have been cut (:mod:`.boltalone`)."""
        driver = self._connect(_neo4j(), pool=1)
        try:
            return self._on_server(driver, query, seconds, limit, alone=True)
        finally:
            for sock in pool_sockets(driver):  # dropped, never pooled again: no GOODBYE
                reset_close(sock)
            with contextlib.suppress(Exception):
                driver.close()

    def _on_server(self, driver: Any, query: str, seconds: float, limit: int, *,
                   alone: bool) -> ResultTable:
        neo4j = _neo4j()
        start = time.perf_counter()
        deadline: SocketDeadline | None = None
        meter: boltalone.Meter | None = None
        raw: socket.socket | None = None
        sent = False
        try:
            with driver.session(database=self.database, default_access_mode=neo4j.READ_ACCESS,
                                fetch_size=min(limit + 1, _FETCH)) as session:
                tx = session.begin_transaction(timeout=seconds)
                try:
                    deadline = SocketDeadline(seconds, reset=True)
                    raw = raw_socket(tx)
                    if raw is not None:
                        deadline.watch(raw)
                    meter = boltalone.Meter(raw) if alone else None
                    sent = True  # what the driver raises from here on is the reply's
                    result = tx.run(query)
                    columns = [str(k) for k in result.keys()]  # noqa: SIM118 - a Result, not a dict
                    rows = self._records(result, raw, limit)
                finally:
                    with contextlib.suppress(Exception):
                        tx.rollback()  # never committed, whatever the server supports
            # past max_values nothing of the reply is kept (rows None): there is nothing to refuse
            refused = meter.refusal() if meter is not None and rows is not None else None
            if refused is not None:
                raise refused
        except QueryEvalError:
            raise
        except Exception as exc:  # the driver's errors, classified below
            refused = meter.refusal() if meter is not None else None
            if refused is not None:  # a FAILURE, too, may be forged in a cut message
                raise refused from None
            fired = deadline is not None and deadline.fired
            if fired and raw is not None:
                reset_close(raw)
            elapsed = time.perf_counter() - start
            raise _query_error(self, exc, query, seconds, elapsed, fired, sent,
                               meter.unread() if meter is not None else "") from None
        finally:
            if deadline is not None:
                deadline.cancel()
            if meter is not None:
                meter.close()
        return _table(columns, rows, time.perf_counter() - start, limit, self.max_values)

    def _records(self, result: Any, raw: socket.socket | None,
                 limit: int) -> list[tuple[Any, ...]] | None:
        """``result``'s records as rows, read one past ``limit`` at most; None once they
        hold more than ``max_values`` values (:mod:`.values`, counted as each record is
        read). What is left unread is dropped with the connection, not drained."""
        rows: list[tuple[Any, ...]] = []
        types = _graph_types()
        held = 0
        for record in result:
            rows.append(tuple(_value(v, types) for v in record.values()))
            held += values.count(rows[-1:], self.max_values - held)
            if len(rows) > limit or held > self.max_values:
                if raw is not None:
                    reset_close(raw)
                return None if held > self.max_values else rows
        return rows

    def _on_copy(self, driver: Any, query: str, seconds: float, limit: int,
                 trusted: bool) -> ResultTable:
        """A FalkorDB server's query, gold or prediction, answered by the plugin's copy of
        its graph (:mod:`.rehearsal`): the server is read once, to make the copy, and never
        runs a suite's query."""
        start = time.perf_counter()
        try:
            columns, rows, cut = self._rehearsed(driver).run(query, seconds, limit,
                                                             trusted=trusted)
        except values.TooManyValues:
            return ResultTable([], [], truncated=True, seconds=time.perf_counter() - start,
                               meta={"max_values": self.max_values})
        return ResultTable(columns, rows, truncated=cut, seconds=time.perf_counter() - start,
                           meta={"max_rows": limit} if cut else {})

    def _rehearsed(self, driver: Any) -> Rehearsal:
        """The copy of the server's graph untrusted queries are rehearsed on
        (:mod:`.rehearsal`), made on first use."""
        if self._rehearsal is None:
            reason = rehearsal.available()
            if reason is not None:
                raise MissingDependency(
                    f"{self.where} is a FalkorDB server: a suite is scored on the plugin's "
                    f"own copy of its graph, where each prediction is rehearsed first, and "
                    f"{reason}; or set 'rehearse: false' to send the suite's queries to the "
                    f"server itself")
            neo4j = _neo4j()

            def run(query: str) -> list[tuple[Any, ...]]:
                return self._read(driver, neo4j, query)

            self._rehearsal = rehearsal.Rehearsal(
                self.where, lambda: graphcopy.statements(graphcopy.export(run)),
                max_memory=self.max_memory, max_rows=self.max_rows,
                max_values=self.max_values)
        return self._rehearsal

    def _read(self, driver: Any, neo4j: Any, query: str) -> list[tuple[Any, ...]]:
        """One query of the copy's reading (:mod:`.graphcopy`), in a transaction as
        :meth:`execute` sends queries (FalkorDB's listener reads the graph's name from an
        auto-commit run's metadata), under the same wall-clock deadline: a reply the listener
        framed wrong (a message over 64 KiB) leaves the driver waiting for bytes that never
        come (the ninth re-probe: a 72 KB text property hung the session)."""
        with driver.session(database=self.database,
                            default_access_mode=neo4j.READ_ACCESS) as session:
            seconds = float(self.timeout or DEFAULT_TIMEOUT)
            tx = session.begin_transaction(timeout=seconds)
            deadline = SocketDeadline(seconds, reset=True)
            raw = raw_socket(tx)
            if raw is not None:
                deadline.watch(raw)
            try:
                rows = [tuple(r.values()) for r in tx.run(query)]
                tx.rollback()  # under the deadline still: a desynchronised reply waits here
                return rows
            except BaseException:  # the deadline, the driver, the session's end (SIGTERM)
                if raw is not None:  # the connection is dropped, never read again
                    reset_close(raw)
                if deadline.fired:
                    raise SourceUnavailable(f"{self.where}: reading the graph to copy it did "
                                            f"not end within {seconds:g} s") from None
                raise
            finally:
                deadline.cancel()

    @staticmethod
    def not_a_read(query: str) -> str | None:
        """Why an agent's Cypher text the scorer does not run is not a read, or None
        (:func:`.reads.not_a_read`: the guard's tokenizer and clause keywords)."""
        from .reads import not_a_read

        return not_a_read(query)

    def fingerprint(self) -> str:
        """The URL, database, user and ``version``: never the password; the form of the
        values (:data:`VALUES`), so a gold cached in an older form is not read back; and
        ``rehearse`` (on a FalkorDB server it decides whether the gold ran on the server or
        on the plugin's copy, whose rows may come in another order)."""
        ident = f"{self.url}\n{self.database or ''}\n{self.user or ''}\n{self.version or ''}"
        where = "copy" if self.rehearse else "server"
        return f"{TYPE}:{VALUES}:{where}:{hashlib.sha256(ident.encode()).hexdigest()}"

    def close(self) -> None:
        with self._lock:
            if self._rehearsal is not None:
                self._rehearsal.close()
                self._rehearsal = None
            if self._driver is not None:
                for sock in pool_sockets(self._driver):  # dropped, no GOODBYE sent
                    reset_close(sock)
                with contextlib.suppress(Exception):
                    self._driver.close()
            self._driver = None


def _table(columns: list[str], rows: list[tuple[Any, ...]] | None, elapsed: float, limit: int,
           max_values: int) -> ResultTable:
    if rows is None:
        return ResultTable([], [], truncated=True, seconds=elapsed,
                           meta={"max_values": max_values})
    if len(rows) > limit:
        return ResultTable(columns, rows[:limit], truncated=True, seconds=elapsed,
                           meta={"max_rows": limit})
    return ResultTable(columns, rows, seconds=elapsed)
