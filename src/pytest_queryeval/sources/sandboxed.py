"""What the SQL sources that run queries in a :mod:`~pytest_queryeval._isolation.sandbox` worker share:
the reply a worker sends back, the sandbox's failures turned into per-case reasons, and the
fingerprint of a database file.

Why one place: SQLite, DuckDB and SQLAlchemy differ in how they connect and fetch, not in how
a result crosses the process boundary or in what a killed worker means to a user, so a
reason worded for one engine reads the same for the others.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

from .._isolation.sandbox import (
    Sandbox,
    SandboxCrashed,
    SandboxMemoryError,
    SandboxTimeout,
    SandboxTooBig,
    Ticket,
    shared_sandbox,
)
from .._util import safefile
from ..errors import PartlyRead, QueryFailed, QueryRefused, QueryTimeout, SourceUnavailable, WorkerDied
from ..results import ResultTable
from .base import (
    PACK_BATCHES,
    PackedBatches,
    SourceDefaults,
    call_limits,
    check_isolation,
    payload_bytes,
    positive,
    positive_int,
)
from .packed import PackedRows, pack_rows, unpack_rows
from .sqlguard import check_read_only, query_led

#: What a worker returns for one query: columns, rows (as they are, or one
#: :class:`~.packed.PackedRows`), truncated, meta, seconds (plain values, cheap to pickle;
#: :class:`ResultTable` itself is rebuilt in the parent).
Reply = tuple[list[str], "list[tuple[Any, ...]] | PackedRows", bool, dict[str, Any], float]
#: Why a file engine's worker was killed at the deadline (its own interrupt did not stop it).
ENGINE_KILLED = "the engine did not stop by itself: its worker was killed"
#: Pairs a source keeps sent ahead (:meth:`SandboxedFileSource.prefetch_pair`): the next two
#: cases' (:func:`~..plugin.nodes.upcoming`) and the one of a case that never came to ask
#: (deselected at run time, stopped).
_AHEAD = 3
#: Seconds past the timeout before a file engine's worker is killed (the engine's own
#: interrupt normally ends the query at the timeout, and the worker survives).
HARD_GRACE = 1.0


class EngineDenied(QueryRefused):
    """The engine's own read-only check (SQLite's authorizer) stopped an action of a predicted
    query: the source then asks the parse-based guard, whose reason users see."""


def worker_reply(table: ResultTable, max_bytes: int) -> Reply:
    """The reply for ``table``; a result cut by ``max_bytes`` keeps only the rows that fit,
    so the rest never leave the worker (the parent would hold up to twice the cap)."""
    if isinstance(table.rows, PackedBatches):  # fetched under PACK_BATCHES: sent as it is
        return (table.columns, PackedRows("chunks", table.rows.chunks), table.truncated,
                table.meta, table.seconds)
    if "max_bytes" in table.meta:
        size = 0
        for i, row in enumerate(table.rows):
            size += payload_bytes([row])
            if size > max_bytes:
                del table.rows[i:]
                break
    return table.columns, pack_rows(table.rows), table.truncated, table.meta, table.seconds


def packing(fn: Callable[..., ResultTable], *args: object) -> ResultTable:
    """``fn(*args)`` with :data:`~.base.PACK_BATCHES` set: for a worker's query function,
    whose result goes straight into :func:`worker_reply`."""
    token = PACK_BATCHES.set(True)
    try:
        return fn(*args)
    finally:
        PACK_BATCHES.reset(token)


def call_query(box: Sandbox, fn: Callable[..., Reply], *args: object, timeout: float, hard_timeout: float,
               max_bytes: int, max_memory: int, killed: str) -> ResultTable:
    """``fn(*args)`` in ``box``, its :data:`Reply` as a table; the sandbox's failures become
    the case's reason (``killed`` says why a worker had to be killed at ``timeout``)."""
    return query_outcome(lambda: box.call(fn, *args, timeout=hard_timeout,
                                          max_reply=2 * max_bytes),
                         timeout=timeout, max_bytes=max_bytes, max_memory=max_memory,
                         killed=killed)


def query_outcome(outcome: Callable[[], Reply], *, timeout: float, max_bytes: int,
                  max_memory: int, killed: str) -> ResultTable:
    """The table of one query's sandbox outcome (a :meth:`Sandbox.call`, or one call of a
    :meth:`Sandbox.pipeline`), its failures worded as :func:`call_query` words them."""
    try:
        columns, rows, truncated, meta, seconds = outcome()
    except SandboxTimeout:
        raise QueryTimeout(f"query exceeded {timeout:g} s ({killed})") from None
    except SandboxTooBig:
        return ResultTable([], [], True, meta={"max_bytes": max_bytes})
    except SandboxMemoryError:
        raise WorkerDied(f"out of memory: the query went over max_memory "
                         f"({max_memory:,} bytes)") from None
    except SandboxCrashed:
        raise WorkerDied(f"the query's worker died (out of memory? max_memory is "
                         f"{max_memory:,} bytes)") from None
    return ResultTable(columns, unpack_rows(rows), truncated, seconds, meta)


class FileFingerprint:
    """``<prefix>:<size>:<mtime_ns>:<sha256>`` of a database file and its write-ahead log.

    Size and mtime alone would miss a same-size rewrite within the mtime resolution, so the
    content is hashed too. Taken once per source, that is once per datasource per session
    (issue 53: every case's schema and gold-cache key asked for it, a stat of the file and of
    its WAL each time): the plugin never writes the file (tasks run on copies), and a source
    is opened again by the next session (or after :meth:`Evaluator.close`), which takes the
    fingerprint anew, so a database changed between runs never meets a cached gold of its
    former content. A file changed by someone else *during* a session is not seen until the
    next one: the session's cases before the change ran on the former data anyway.
    """

    def __init__(self, prefix: str, path: Path, wal_suffix: str) -> None:
        self.prefix = prefix
        self.path = path
        self.wal = path.with_name(path.name + wal_suffix)
        self._value: str | None = None

    def __call__(self, name: str) -> str:
        if self._value is not None:
            return self._value
        try:  # /dev/zero or a FIFO named as the database would be hashed forever
            st = safefile.check(self.path, "database")
            wal = self.wal.exists() and safefile.check(self.wal, "database")
            digest = safefile.sha256((self.path, self.wal) if wal else (self.path,), "database")
        except OSError as e:  # safefile.UnsafeFile included
            raise SourceUnavailable(f"datasource {name!r}: {e}") from None
        self._value = f"{self.prefix}:{st.st_size}:{st.st_mtime_ns}:{digest}"
        return self._value


class SandboxedFileSource(SourceDefaults):
    """A database file queried in a shared sandbox worker (``isolation: process``, the
    default) or in the pytest process (``isolation: thread``, trusted suites).

    Why a base class: the SQLite and DuckDB sources differ in how they open the file and run
    a query there (:meth:`_run_here`, :meth:`_worker_call`), not in the caps they take, the
    guard before execution, when the worker is chosen or what a missing file means.
    """

    type: ClassVar[str]
    dialect: str
    timeout: float
    #: The engine's name in messages ("no SQLite file at ...").
    label: ClassVar[str]
    #: Suffix of the engine's write-ahead log beside the file (part of the fingerprint).
    wal_suffix: ClassVar[str]
    #: Modules the worker imports when it starts (besides the subclass's own module).
    preload: ClassVar[tuple[str, ...]] = ()
    #: The engine refuses, by itself, every action of a statement but reading (SQLite's
    #: authorizer, :meth:`_guarded_call`): a predicted text that starts like a query is then
    #: executed without the guard's parse, which runs only when the engine refuses or fails
    #: the statement, for the reason users see (the parse was five times what SQLite spent
    #: executing a realistic suite's queries).
    engine_guard: ClassVar[bool] = False
    #: The in-process connection (``isolation: thread`` queries, schema introspection): the
    #: subclass opens it on first use, :meth:`close` closes it.
    _conn: Any = None

    def __init__(self, name: str, path: str | Path, *, timeout: float, max_rows: int,
                 max_bytes: int, max_memory: int, isolation: str) -> None:
        self.name = name
        self.path = Path(path)
        limits = {"timeout": timeout, "max_rows": max_rows}  # NaN, inf: a located error
        self.timeout = positive(limits, "timeout", timeout, name)
        self.max_rows = int(positive(limits, "max_rows", max_rows, name))
        self.max_bytes = positive_int(max_bytes, name, "max_bytes")
        self.max_memory = positive_int(max_memory, name, "max_memory")
        self.isolation = check_isolation(name, isolation)
        self._lock = threading.Lock()
        self._fingerprint = FileFingerprint(self.type, self.path, self.wal_suffix)
        self._box: Sandbox | None = None
        self._resolved = ""
        #: Pairs sent ahead (:meth:`prefetch_pair`), oldest first: arguments and ticket (the
        #: next case's is sent before this case's is read).
        #: A gold of None: the prediction alone (:meth:`prefetch_query`).
        self._ahead: list[tuple[tuple[str | None, str, float, int], Ticket]] = []

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r}, {str(self.path)!r})"

    def close(self) -> None:
        with self._lock:
            self._close_here()

    def _close_here(self) -> None:
        """Close the in-process connection the subclass opened (``_conn``), if any; under
        the lock. A subclass that keeps more beside it extends this."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def fingerprint(self) -> str:
        """``<type>:<size>:<mtime_ns>:<sha256>`` of the file (and of its WAL, if any)."""
        return self._fingerprint(self.name)

    def execute(self, query: str, *, timeout: float | None = None, max_rows: int | None = None,
                trusted: bool = False) -> ResultTable:
        """Run one query (in the worker unless ``isolation: thread``); the deadline covers
        execution and fetching. A result over ``max_rows`` or ``max_bytes`` comes back
        truncated, with the cap that cut it in ``meta``."""
        timeout, max_rows = call_limits(self, timeout, max_rows)
        if not trusted and not (self.engine_guard and query_led(query)):
            check_read_only(query, self.dialect)  # parsed first: not shaped like a query
            self._check_prediction(query)
        if trusted or not self.engine_guard:
            return self._execute(query, timeout, max_rows, False)
        # every prediction under the engine's own check, the guard's parse passed or not:
        # ``;SELECT sql FROM sqlite_stmt`` (an empty statement first) is no query-led text,
        # the guard passed it, and it ran without the authorizer (36a H8)
        ticket = self._sent_ahead((None, query, timeout, max_rows)) \
            if self.isolation != "thread" else None
        if ticket is not None:  # sent ahead alone (:meth:`prefetch_query`)
            (outcome,) = ticket.outcomes()
            return self._guarded(query, timeout, max_rows,
                                 lambda: self._outcome(outcome, timeout))
        return self._guarded(query, timeout, max_rows,
                             lambda: self._execute(query, timeout, max_rows, True))

    def _check_prediction(self, query: str) -> None:
        """What an engine refuses of a prediction beyond :func:`check_read_only` (its
        database's own objects: :class:`~.duckdb.DuckdbSource`); nothing by default."""

    def _sent_ahead(self, key: tuple[str | None, str, float, int]) -> Ticket | None:
        """The ticket sent ahead with these arguments, None when none was; the ones sent
        before it were not asked for: dropped (their replies are read, in order, and let
        go)."""
        sent = next((i for i, (args, _) in enumerate(self._ahead) if args == key), None)
        if sent is None:
            return None
        ticket = self._ahead[sent][1]
        del self._ahead[:sent + 1]
        return ticket

    def execute_pair(self, gold: str, predicted: str, *, timeout: float | None = None,
                     max_rows: int | None = None,
                     ) -> tuple[ResultTable, Callable[[], ResultTable]] | None:
        """A trusted gold and a predicted query in one round trip to the worker (one write,
        one wake-up: a round trip per query was most of what a small case cost beyond its
        queries); None where that does not apply (``isolation: thread``, an engine without
        its own read-only check, a prediction that does not start like a query): the caller
        then runs each with :meth:`execute`.

        Returns the gold's table (or raises as ``execute(gold, trusted=True)`` would) and a
        call that returns or raises exactly what ``execute(predicted)`` would. Each query
        keeps its own deadline (:meth:`Sandbox.pipeline`); the prediction ran in the worker
        right after the gold, under the engine's check, and the guard still names the reason
        of a refusal."""
        if not self._pairs(predicted):
            return None
        timeout, max_rows = call_limits(self, timeout, max_rows)
        ticket = self._sent_ahead((gold, predicted, timeout, max_rows)) \
            or Ticket(self._worker(), self._pair_calls(gold, predicted, timeout, max_rows))
        gold_outcome, pred_outcome = ticket.outcomes()
        gold_table = self._outcome(gold_outcome, timeout)

        def prediction() -> ResultTable:
            return self._guarded(predicted, timeout, max_rows,
                                 lambda: self._outcome(pred_outcome, timeout))

        return gold_table, prediction

    def prefetch_pair(self, gold: str, predicted: str, *, timeout: float | None = None,
                      max_rows: int | None = None) -> bool:
        """Send now the round trip :meth:`execute_pair` will make with these arguments, so
        the worker runs it while the parent is busy with the case before (issue 30); the
        next :meth:`execute_pair` with the same arguments reads its replies. False where
        :meth:`execute_pair` would not pair them (nothing sent).

        Only a query without side effects may be run early: the gold is trusted, the
        prediction runs under the engine's own read-only check, as in :meth:`execute_pair`.
        A pair sent ahead and never asked for costs the worker's time, nothing else."""
        if not self._pairs(predicted):
            return False
        timeout, max_rows = call_limits(self, timeout, max_rows)
        box = self._worker()
        ticket = box.submit(self._pair_calls(gold, predicted, timeout, max_rows))
        self._ahead = [*self._ahead[-(_AHEAD - 1):], ((gold, predicted, timeout, max_rows),
                                                        ticket)]
        return True

    def prefetch_query(self, predicted: str, *, timeout: float | None = None,
                       max_rows: int | None = None) -> bool:
        """:meth:`prefetch_pair` for a case whose gold result is cached (issue 53: nothing
        was sent then, and a warm rerun waited on every prediction): the prediction alone,
        under the engine's own read-only check, read by the next :meth:`execute` of it with
        these limits. False where :meth:`execute_pair` would not pair it (nothing sent)."""
        if not self._pairs(predicted):
            return False
        timeout, max_rows = call_limits(self, timeout, max_rows)
        hard = timeout + HARD_GRACE
        ticket = self._worker().submit(
            [(*self._guarded_call(predicted, timeout, max_rows), hard, 2 * self.max_bytes)])
        self._ahead = [*self._ahead[-(_AHEAD - 1):], ((None, predicted, timeout, max_rows),
                                                        ticket)]
        return True

    def tables_read(self, query: str, *, timeout: float | None = None) -> frozenset[str]:
        """The tables the engine reads for ``query``, as it compiles it (CTEs and views
        resolved to the tables under them), without running it: how an agent's reads of
        forbidden tables are counted (:mod:`pytest_queryeval.agents.ledger`), where the text's
        names would take a CTE for the table it hides. In the worker unless ``isolation:
        thread``; QueryFailed when the engine cannot compile it, :class:`PartlyRead` (with the
        tables its plan names) when it could plan what it could not bind."""
        timeout, _ = call_limits(self, timeout, None)
        if self.isolation == "thread":
            with self._lock:
                table = self._tables_here(query, timeout)
        else:
            box = self._worker()  # resolves the path the call names
            fn, args = self._tables_call(query, timeout)
            table = call_query(box, fn, *args, timeout=timeout,
                               hard_timeout=timeout + HARD_GRACE, max_bytes=self.max_bytes,
                               max_memory=self.max_memory, killed=ENGINE_KILLED)
        names = frozenset(str(row[0]) for row in table.rows)
        unbound = table.meta.get("unbound")
        if unbound:  # the plan's tables, but no account of the whole text
            raise PartlyRead(str(unbound), names)
        return names

    def warm(self) -> None:
        """Start the worker without waiting for it, while the session still collects: its
        start (an interpreter and the engine's imports, some 50 ms) was otherwise the first
        case's wait."""
        if self.isolation != "thread":
            self._worker().start(wait=False)

    def _pairs(self, predicted: str) -> bool:
        """Whether a gold and ``predicted`` go to the worker in one round trip."""
        return self.isolation != "thread" and self.engine_guard and query_led(predicted)

    def _pair_calls(self, gold: str, predicted: str, timeout: float, max_rows: int,
                    ) -> list[tuple[Callable[..., Reply], tuple[Any, ...], float, int]]:
        hard = timeout + HARD_GRACE
        return [(*self._worker_call(gold, timeout, max_rows), hard, 2 * self.max_bytes),
                (*self._guarded_call(predicted, timeout, max_rows), hard, 2 * self.max_bytes)]

    def _guarded(self, query: str, timeout: float, max_rows: int,
                 first: Callable[[], ResultTable]) -> ResultTable:
        """``first()``, the query under the engine's own check; the guard names the reason
        when the engine refuses or fails it."""
        try:
            return first()
        except (QueryFailed, QueryRefused):
            check_read_only(query, self.dialect)  # its refusal, as when it runs first
            raise  # what the engine's check denied stays denied, the guard passing or not

    def _worker(self) -> Sandbox:
        """The shared worker; the first time, the engine checked and the path resolved."""
        if self._box is None:
            self._check_engine()
            if not self.path.is_file():
                raise SourceUnavailable(
                    f"datasource {self.name!r}: no {self.label} file at {self.path}")
            self._resolved = str(self.path.resolve())
            self._box = shared_sandbox(self.type, max_memory=self.max_memory,
                                       preload=(type(self).__module__, *self.preload))
        return self._box

    def _outcome(self, outcome: Callable[[], Reply], timeout: float) -> ResultTable:
        return query_outcome(outcome, timeout=timeout, max_bytes=self.max_bytes,
                             max_memory=self.max_memory, killed=ENGINE_KILLED)

    def _execute(self, query: str, timeout: float, max_rows: int, guarded: bool,
                 ) -> ResultTable:
        """One query in the worker or here; ``guarded``: under the engine's own check."""
        if self.isolation == "thread":
            with self._lock:
                if guarded:
                    return self._run_here_guarded(query, timeout, max_rows)
                return self._run_here(query, timeout, max_rows)
        box = self._worker()
        fn, args = (self._guarded_call if guarded else self._worker_call)(
            query, timeout, max_rows)
        return call_query(box, fn, *args, timeout=timeout,
                          hard_timeout=timeout + HARD_GRACE, max_bytes=self.max_bytes,
                          max_memory=self.max_memory, killed=ENGINE_KILLED)

    def _check_engine(self) -> None:
        """Raise when the engine's package is missing (before a worker is started for it)."""

    def _run_here(self, query: str, timeout: float, max_rows: int) -> ResultTable:
        """The query on the in-process connection (``isolation: thread``; lock held)."""
        raise NotImplementedError

    def _worker_call(self, query: str, timeout: float, max_rows: int,
                     ) -> tuple[Callable[..., Reply], tuple[Any, ...]]:
        """The worker function and its arguments for one query (``self._resolved`` is set)."""
        raise NotImplementedError

    def _run_here_guarded(self, query: str, timeout: float, max_rows: int) -> ResultTable:
        """:meth:`_run_here` under the engine's own read-only check (:attr:`engine_guard`)."""
        raise NotImplementedError

    def _guarded_call(self, query: str, timeout: float, max_rows: int,
                      ) -> tuple[Callable[..., Reply], tuple[Any, ...]]:
        """:meth:`_worker_call` under the engine's own read-only check (:attr:`engine_guard`)."""
        raise NotImplementedError

    def _tables_here(self, query: str, timeout: float) -> ResultTable:
        """:meth:`tables_read` on the in-process connection (one ``table`` column; lock
        held)."""
        raise NotImplementedError

    def _tables_call(self, query: str, timeout: float,
                     ) -> tuple[Callable[..., Reply], tuple[Any, ...]]:
        """The worker function and its arguments for :meth:`tables_read`."""
        raise NotImplementedError
