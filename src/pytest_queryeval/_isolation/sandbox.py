"""Run untrusted steps in a killable worker process under a hard deadline and memory ceiling.

Why a process: a predicted query (or a parse, or a search over a hostile input) can spend its
time inside one C call that never returns to Python (SQLite's ``instr()`` on 16 MB strings,
a PostgreSQL driver waiting on a backend that ignores cancel), and it can allocate gigabytes
before any timeout fires. Only the operating system bounds both: the parent kills the worker
at the deadline, and ``RLIMIT_AS`` turns a runaway allocation into a ``MemoryError`` (or a
crash) in the worker instead of in pytest. One runaway call costs its own timeout and nothing
else: the next call starts a fresh worker (spawned right after the kill, so its start-up
overlaps the parent's work).

Why one module of this size: the parent's side (start, write, wait, kill, respawn) and the
worker's loop share one wire protocol, its framing, deadlines and reply caps; split, each half
would have to restate the other's invariants (a pipelined call's deadline counts from the reply
before it, a call sent ahead never makes the parent block on a full pipe, a reply is capped in
the worker and checked again here).

API (everything else here is private)::

    from pytest_queryeval._isolation.sandbox import Sandbox, shared_sandbox, worker_state

    box = shared_sandbox("sqlite", max_memory=1 << 30, preload=("pytest_queryeval.sources.sqlite",))
    value = box.call(fn, *args, timeout=5.0, max_reply=64 << 20)

* ``fn`` is a module-level function (pickled by reference, so the worker imports its module);
  ``args`` and the return value are pickled. Calls on one box are serialised (a lock).
* ``timeout`` (seconds) is a hard wall-clock deadline: past it the worker is SIGKILLed and
  :class:`SandboxTimeout` (a :class:`~pytest_queryeval.errors.QueryTimeout`) is raised.
  Give the step its own, softer deadline inside ``fn`` when it can stop cleanly (the worker
  then survives and keeps its caches); the hard one is the backstop.
* ``box.pipeline([(fn, args, timeout, max_reply), ...])`` sends several calls at once (one
  write, one wake-up of the worker: a case's gold and prediction) and returns one outcome per
  call (call it: the value, or what :meth:`Sandbox.call` would raise); each call's deadline
  counts from the reply before it, and the calls after one that ended the worker are not run
  (:class:`SandboxNotRun`).
* ``ticket = box.submit(calls)`` sends a pipeline's calls now and reads their replies later,
  at ``ticket.outcomes()`` (what :meth:`Sandbox.pipeline` returns): the worker runs them
  while the parent does other work (the next case's queries while this one is scored). Any
  later read of the box first takes the replies of the calls sent before its own, in order.
  A sent-ahead call's deadline counts from when the worker took it up (the later of its
  writing and the end of the call before it, which each reply stamps with the worker's
  ``time.monotonic()``): the parent busy elsewhere neither shortens nor lengthens it.
  Calls a kill (timeout, crash, reply too big) or :meth:`Sandbox.close` ended before the
  worker reached them are sent again at ``outcomes()``, as a fresh pipeline.
* ``max_reply`` caps the pickled reply, counted in the worker before it is sent, and again
  by the parent from the frame header before it reads the body: over it,
  :class:`SandboxTooBig` (a :class:`~pytest_queryeval.errors.QueryFailed`, with ``size``).
* Memory: the worker's address space is capped at its size once ``preload`` modules are
  imported plus ``max_memory`` bytes (``RLIMIT_AS``, Linux). A ``MemoryError`` in ``fn`` is
  raised in the parent as :class:`SandboxMemoryError`; a worker that dies (the engine aborts
  on a failed allocation) as :class:`SandboxCrashed`. Both are ``QueryFailed``.
  An engine that maps a large address space when it opens (an embedded graph database)
  cannot live under ``RLIMIT_AS``: ``Sandbox(..., max_rss=n)`` sets none and bounds resident memory instead:
  while the parent waits for a reply it reads the worker's resident size (``/proc``, every
  :data:`RSS_POLL` seconds) and kills a worker holding more than ``n`` bytes beyond its size
  when it got ready (:class:`SandboxMemoryError`). :attr:`Sandbox.last_exit` is the exit
  status of the last worker that ended (``-11``: it crashed with SIGSEGV).
* Files: the worker runs with its own temporary directory (``TMPDIR`` and ``SQLITE_TMPDIR``),
  removed when the worker stops, and ``RLIMIT_FSIZE`` = ``max_file`` bytes per file
  (``SIGXFSZ`` ignored, so a write past it fails with ``EFBIG`` instead of killing the worker).
* An exception raised by ``fn`` is re-raised in the parent as itself when it pickles (the
  plugin's :class:`~pytest_queryeval.errors.QueryEvalError` subclasses do), else as
  ``QueryFailed("<Type>: <message>")``.
* The worker runs in the caller's current directory (followed at each call), so relative
  paths in ``args`` mean the same on both sides.
* :func:`worker_state` is a dict that lives as long as the worker: cache connections or
  parsed data there (it is empty again after a kill). :func:`in_worker` tells ``fn`` where it
  runs.
* Ctrl-C: the worker runs in its own session (a terminal's SIGINT reaches only pytest) and
  ignores SIGINT, and SIGTERM (a scheduler signals every process of a job, whatever its
  session: the interrupted session ends the worker, as on Ctrl-C); the parent's wait is
  interruptible, so ``KeyboardInterrupt`` propagates from :meth:`Sandbox.call` at once, after
  the worker is killed. The worker never prints
  (stderr goes to /dev/null), and exits by itself when its parent dies.
* :func:`shared_sandbox` returns one box per ``(name, limits)`` per process (started lazily,
  closed at interpreter exit); construct :class:`Sandbox` directly for a private one.
* Data a worker keeps for every call (a loaded graph): ``Sandbox(..., setup=(fn, args),
  start_timeout=...)``. Each worker runs ``fn(*args)`` once, after the ``preload`` imports and
  before its memory cap and its first thread (so ``fn`` may ``unshare`` the process, and the
  data it keeps in :func:`worker_state` does not count against ``max_memory``); its return
  value is :attr:`Sandbox.setup_value` while that worker runs. A worker that does not get
  through it within ``start_timeout`` raises :class:`SandboxNotStarted` from
  :meth:`Sandbox.start` or :meth:`Sandbox.call`.

The worker is a plain ``python -c`` child speaking length-prefixed pickles over its stdin and
stdout: ``multiprocessing`` spawn re-runs the parent's ``__main__`` and fork is unsafe in a
threaded pytest process.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import pickle
import select
import shutil
import signal
import struct
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from .._util.safefile import private_tempdir
from ..errors import QueryFailed, QueryTimeout

T = TypeVar("T")

#: Default extra address space a call may use, beyond the worker's size after its imports.
DEFAULT_MAX_MEMORY = 1024 * 1024 * 1024
#: Default ``max_reply``: the plugin's default ``max_bytes`` plus pickling slack.
DEFAULT_MAX_REPLY = 80 * 1024 * 1024
#: Seconds a worker may take to start (Python start-up plus ``preload`` imports).
START_TIMEOUT = 60.0

#: Seconds between two reads of a worker's resident size (``max_rss``): a runaway allocation
#: of 1 GB/s overshoots by at most some 50 MB.
RSS_POLL = 0.05

#: Seconds to read a reply once its header has come (it is at most ``max_reply`` bytes).
_TRANSFER_TIMEOUT = 60.0

_HEADER = struct.Struct(">Q")
#: Bytes a pipe takes without its reader (one page: Linux's smallest pipe buffer).
_PIPE_MIN = 4096
_WORKER_CODE = (
    "import signal; signal.signal(signal.SIGINT, signal.SIG_IGN); "
    "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    "import json, os, sys; sys.path[:0] = json.loads(os.environ['QUERYEVAL_SANDBOX_PATH'])\n"
    "from pytest_queryeval._isolation.sandbox import _worker_main; _worker_main()\n"
)


class SandboxTimeout(QueryTimeout):
    """The step ran past its hard deadline; the worker was killed."""


class SandboxTooBig(QueryFailed):
    """The step's reply was over ``max_reply`` bytes (``size``: its pickled size)."""

    def __init__(self, message: str, size: int = 0) -> None:
        super().__init__(message)
        self.size = size

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (str(self), self.size))


class SandboxMemoryError(QueryFailed):
    """The step went over the worker's memory ceiling (``max_memory``)."""


class SandboxCrashed(QueryFailed):
    """The worker died during the step (an engine abort, usually out of memory)."""


class _OverRss(Exception):
    """The worker's resident memory went over ``max_rss`` (the parent kills it)."""


def resident_bytes(pid: int) -> int:
    """A process's resident memory (Linux ``/proc``); 0 where it cannot be read."""
    try:
        with open(f"/proc/{pid}/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


class SandboxNotRun(SandboxCrashed):
    """A call of a :meth:`Sandbox.pipeline` after one that ended the worker: never run."""


class SandboxNotStarted(SandboxCrashed):
    """The worker did not get ready: it died, failed its imports or setup, or ran past
    ``start_timeout`` (``timed_out``)."""

    def __init__(self, message: str, timed_out: bool = False) -> None:
        super().__init__(message)
        self.timed_out = timed_out

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (str(self), self.timed_out))


# --------------------------------------------------------------------------- worker side

_STATE: dict[Any, Any] = {}
_IN_WORKER = False


def worker_state() -> dict[Any, Any]:
    """A dict kept for the worker's lifetime (per-worker caches: connections, parsed data)."""
    return _STATE


def in_worker() -> bool:
    """True inside a sandbox worker process."""
    return _IN_WORKER


def _read_exact(fd: int, n: int) -> bytes:
    parts: list[bytes] = []
    while n:
        chunk = os.read(fd, min(n, 1 << 20))
        if not chunk:
            raise EOFError
        parts.append(chunk)
        n -= len(chunk)
    return b"".join(parts)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _frame(obj: object) -> bytes:
    body = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    return _HEADER.pack(len(body)) + body


def _send(fd: int, obj: object, max_size: int | None = None) -> None:
    """Write one frame (header and body apart: no copy of a large body); a body over
    ``max_size`` is replaced by a ``("toobig", size)`` reply. The body is ``(obj, when)``:
    ``when``, the worker's ``time.monotonic()`` as the call ended (one clock for every process
    of the machine), tells the parent when the worker took up the call sent after it."""
    when = time.monotonic()
    try:
        body = pickle.dumps((obj, when), protocol=pickle.HIGHEST_PROTOCOL)
    except MemoryError:
        body = pickle.dumps((("memory", ""), when))
    except Exception as exc:
        body = pickle.dumps(((
            "failed", f"cannot send the result: {type(exc).__name__}: {exc}"), when))
    if max_size is not None and len(body) > max_size:
        size = len(body)
        del body
        body = pickle.dumps((("toobig", size), when))
    if len(body) < 1 << 20:  # one write: the reader wakes up once
        _write_all(fd, _HEADER.pack(len(body)) + body)
    else:
        _write_all(fd, _HEADER.pack(len(body)))
        _write_all(fd, body)


def _set_limits(max_memory: int | None, max_file: int) -> None:
    """Address space = size now + ``max_memory`` (None: no cap, the parent bounds resident
    memory); files at most ``max_file`` bytes each. Linux only for the address space (its
    size comes from ``/proc``)."""
    try:
        import resource
    except ImportError:  # pragma: no cover - not POSIX
        return
    with contextlib.suppress(OSError, ValueError):
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        _, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
        resource.setrlimit(resource.RLIMIT_FSIZE, (max_file, hard))
    if max_memory is None:
        return
    with contextlib.suppress(OSError, ValueError):
        with open("/proc/self/statm") as fh:
            size = int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        limit = size + max_memory
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


def _orphan_watch(parent: int) -> None:
    """Exit when the parent is gone (reparented), even in the middle of a call."""
    while True:
        time.sleep(0.25)
        if os.getppid() != parent:
            os._exit(0)


def _worker_main() -> None:
    """The worker's loop: a setup frame, then one request frame per call, one reply each."""
    global _IN_WORKER
    _IN_WORKER = True
    inp, out = sys.stdin.fileno(), sys.stdout.fileno()
    sys.stdout = sys.stderr  # nothing but frames on the real stdout
    parent = int(os.environ.get("QUERYEVAL_SANDBOX_PARENT", "0")) or os.getppid()
    threading.stack_size(256 * 1024)
    try:
        (n,) = _HEADER.unpack(_read_exact(inp, _HEADER.size))
        preload, max_memory, max_file, setup = pickle.loads(_read_exact(inp, n))
        import importlib

        for name in preload:
            importlib.import_module(name)
        value = setup[0](*setup[1]) if setup is not None else None
        _set_limits(max_memory, max_file)
        # Only now: a setup step may need a single-threaded process (unshare a user namespace).
        threading.Thread(target=_orphan_watch, args=(parent,), daemon=True).start()
        _send(out, ("ready", os.getpid(), value))
    except BaseException as exc:
        with contextlib.suppress(BaseException):
            _send(out, ("error", f"{type(exc).__name__}: {exc}"))
        return
    while True:
        try:
            (n,) = _HEADER.unpack(_read_exact(inp, _HEADER.size))
            request = pickle.loads(_read_exact(inp, n))
        except (EOFError, OSError):
            return
        if request is None:
            return
        fn, args, max_reply, cwd = request
        reply: tuple[Any, ...]
        try:
            if cwd != os.getcwd():  # relative paths mean what they mean to the caller
                os.chdir(cwd)
            reply = ("ok", fn(*args))
        except MemoryError:
            reply = ("memory", "")
        except BaseException as exc:
            reply = _error_reply(exc)
        try:
            _send(out, reply, max_reply)
        except OSError:
            return
        del reply


def _error_reply(exc: BaseException) -> tuple[Any, ...]:
    try:
        pickle.loads(pickle.dumps(exc))  # an exception that pickles but cannot be rebuilt
        return ("raise", exc)
    except Exception:
        return ("failed", f"{type(exc).__name__}: {exc}")


# --------------------------------------------------------------------------- parent side


class Sandbox:
    """One worker process (started lazily, restarted after a kill). See the module docstring."""

    def __init__(self, name: str, *, max_memory: int = DEFAULT_MAX_MEMORY,
                 max_file: int | None = None, preload: Iterable[str] = (),
                 setup: tuple[Callable[..., Any], tuple[Any, ...]] | None = None,
                 start_timeout: float = START_TIMEOUT, max_rss: int | None = None) -> None:
        self.name = name
        self.max_memory = int(max_memory)
        #: Resident bytes a worker may add to its size when ready (None: ``RLIMIT_AS``).
        self.max_rss = None if max_rss is None else int(max_rss)
        #: The running worker's resident size when it got ready (``max_rss``; None while it
        #: starts: its setup is not a step).
        self._base_rss: int | None = None
        #: Exit status of the last worker that ended (negative: the signal that ended it).
        self.last_exit: int | None = None
        self.max_file = int(max_file if max_file is not None else max_memory)
        self.preload = tuple(preload)
        self.setup = setup
        self.start_timeout = float(start_timeout)
        #: What ``setup`` returned in the worker now running (None before it is ready).
        self.setup_value: Any = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._tmp: str | None = None
        self._ready = False
        #: Bytes of the next reply read with the one before it (:meth:`pipeline`).
        self._pending = bytearray()
        self._lock = threading.Lock()
        #: Workers started so far (a kill and restart adds one); for tests and diagnostics.
        self.starts = 0
        #: Workers killed at a deadline, on Ctrl-C or after a crash.
        self.kills = 0
        #: Writes of requests to a worker (a :meth:`pipeline` of small calls is one).
        self.round_trips = 0
        #: Writes made while replies to earlier ones were still unread (:meth:`submit`): the
        #: worker had the next calls before the parent came back for the earlier replies.
        self.sent_ahead = 0
        #: When the worker took up the call after the last reply read (``time.monotonic()``,
        #: :func:`_send`): a call sent ahead has its deadline counted from then.
        self._next_start = 0.0
        #: Tickets written to the worker whose replies are not all read, in writing order.
        self._ahead: deque[Ticket] = deque()
        #: Bytes of requests whose replies have not come: more than the worker may not have
        #: read yet, so a write that keeps it under :data:`_PIPE_MIN` never blocks.
        self._unread = 0

    def __repr__(self) -> str:
        return f"Sandbox({self.name!r}, max_memory={self.max_memory})"

    # -- lifecycle ----------------------------------------------------------------------------

    def _spawn(self) -> None:
        """Start a worker process (not waiting for it: it imports while the caller goes on)."""
        self._tmp = private_tempdir(f"queryeval-{self.name}-")
        env = dict(os.environ)
        env["QUERYEVAL_SANDBOX_PATH"] = json.dumps(
            [str(Path(__file__).resolve().parents[1]), *sys.path])
        env["QUERYEVAL_SANDBOX_PARENT"] = str(os.getpid())
        env["TMPDIR"] = env["SQLITE_TMPDIR"] = self._tmp
        # each malloc arena reserves 64 MiB of address space: few, under RLIMIT_AS
        env.setdefault("MALLOC_ARENA_MAX", "2")
        proc = subprocess.Popen([sys.executable, "-c", _WORKER_CODE], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env,
                                start_new_session=True, bufsize=0)
        assert proc.stdin is not None
        address = None if self.max_rss is not None else self.max_memory
        _write_all(proc.stdin.fileno(), _frame((self.preload, address, self.max_file,
                                                self.setup)))
        self._proc, self._ready, self.setup_value = proc, False, None
        self._base_rss = None
        self.starts += 1

    def _ensure(self, deadline: float) -> subprocess.Popen[bytes]:
        if self._proc is not None and self._proc.poll() is not None:
            self._kill(respawn=False)
        if self._proc is None:
            self._spawn()
        proc = self._proc
        assert proc is not None
        if not self._ready:
            try:
                msg = self._read_reply(proc, deadline, 1 << 20)
            except (EOFError, TimeoutError) as exc:
                self._kill(respawn=False)
                raise SandboxNotStarted(f"the {self.name} worker did not start",
                                        timed_out=isinstance(exc, TimeoutError)) from None
            if msg[0] != "ready":
                self._kill(respawn=False)
                raise SandboxNotStarted(f"the {self.name} worker did not start: {msg[1]}")
            self._ready, self.setup_value = True, msg[2]
            self._base_rss = resident_bytes(proc.pid)
        return proc

    def _kill(self, *, respawn: bool) -> None:
        proc, self._proc, self._ready = self._proc, None, False
        self._pending = bytearray()
        for ticket in self._ahead:  # not reached by the worker: sent again when waited for
            ticket.sent, ticket.got = False, []
        self._ahead.clear()
        self._unread = 0
        if proc is not None:
            if proc.poll() is None:
                with contextlib.suppress(OSError):
                    proc.kill()
                self.kills += 1
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(10)
            self.last_exit = proc.returncode
            for stream in (proc.stdin, proc.stdout):
                if stream is not None:
                    with contextlib.suppress(OSError):
                        stream.close()
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None
        if respawn:
            with contextlib.suppress(OSError):
                self._spawn()

    def start(self, *, wait: bool = True) -> None:
        """Start the worker now and wait until it is ready (else: on the first call). Without
        ``wait``, only start it: it imports while the caller goes on (its readiness is read
        by the first call)."""
        with self._lock:
            if wait:
                self._ensure(time.monotonic() + self.start_timeout)
            elif self._proc is None:
                self._spawn()

    def close(self) -> None:
        """Stop the worker (politely, then by force) and remove its temporary directory."""
        with self._lock:
            proc = self._proc
            # Calls sent ahead: the worker may be blocked writing a reply nobody reads.
            if proc is not None and proc.poll() is None and proc.stdin is not None \
                    and not self._ahead:
                with contextlib.suppress(OSError):
                    _write_all(proc.stdin.fileno(), _frame(None))
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(1)
            self._kill(respawn=False)

    @property
    def in_flight(self) -> int:
        """Tickets written to the worker ahead whose replies are not read yet."""
        return len(self._ahead)

    @property
    def pid(self) -> int | None:
        """The running worker's process id (None when none runs)."""
        return self._proc.pid if self._proc is not None and self._proc.poll() is None else None

    # -- calls --------------------------------------------------------------------------------

    def call(self, fn: Callable[..., T], *args: object, timeout: float,
             max_reply: int = DEFAULT_MAX_REPLY) -> T:
        """``fn(*args)`` in the worker, within ``timeout`` seconds (wall clock, hard)."""
        (outcome,) = self.pipeline([(fn, args, timeout, max_reply)])
        return outcome()  # type: ignore[no-any-return]

    def pipeline(self, calls: Sequence[tuple[Callable[..., Any], tuple[Any, ...], float, int]],
                 ) -> list[Callable[[], Any]]:
        """Several ``(fn, args, timeout, max_reply)`` calls sent to the worker at once (one
        write, one wake-up of the worker: the gold and the prediction of a case in one round
        trip), their replies read in order. Each call keeps its own hard deadline, counted
        from the moment the reply before it arrived, so a call has exactly the time
        :meth:`call` would give it.

        Returns one outcome per call: calling it returns the value or raises what
        :meth:`call` would have raised. After a call that ends the worker (timeout, crash, a
        reply over ``max_reply``), the calls after it were not run: their outcomes raise
        :class:`SandboxNotRun`. Ctrl-C propagates at once, as from :meth:`call`."""
        return self._collect(Ticket(self, calls))

    def submit(self, calls: Sequence[tuple[Callable[..., Any], tuple[Any, ...], float, int]],
               ) -> Ticket:
        """:meth:`pipeline`'s calls written now, their replies read at ``outcomes()``, so the
        worker runs them while the parent does something else (module docstring).

        Written only to a worker that is ready and when the write cannot block (the requests
        the worker may not have read yet stay within a pipe's smallest capacity: the worker
        may itself be blocked writing a reply nobody reads yet); otherwise nothing is sent
        now and ``outcomes()`` is exactly :meth:`pipeline`."""
        ticket = Ticket(self, calls)
        size = sum(ticket.sizes)
        with self._lock:
            proc = self._proc
            if proc is None or not self._ready or proc.poll() is not None \
                    or proc.stdin is None or self._unread + size > _PIPE_MIN:
                return ticket
            try:
                _write_all(proc.stdin.fileno(), b"".join(ticket.frames))
            except OSError:  # the worker is gone: outcomes() starts a new one
                self._kill(respawn=True)
                return ticket
            self.round_trips += 1
            self.sent_ahead += bool(self._ahead)
            self._unread += size
            ticket.sent, ticket.sent_at = True, time.monotonic()
            self._ahead.append(ticket)
        return ticket

    def _collect(self, ticket: Ticket) -> list[Callable[[], Any]]:
        """``ticket``'s outcomes: its replies, read after those of every call sent before it;
        a ticket not (or no longer) in the worker is run as a pipeline."""
        with self._lock:
            while ticket.sent:
                self._read_ahead()
            if ticket.done is not None:
                return ticket.done
            while self._ahead:  # replies of calls sent ahead come first
                self._read_ahead()
            return self._run(ticket)

    def _read_ahead(self) -> None:
        """The next reply of the oldest ticket sent ahead. Its deadline counts from when the
        worker took the call up: the later of its writing and the end of the call before it
        (the worker's own clock, :func:`_send`), so a call run while the parent was busy
        elsewhere has the time :meth:`call` would give it, not more (a sort that no
        interrupt reaches is killed at its deadline, before it fills ``max_memory``)."""
        ticket = self._ahead[0]
        index = len(ticket.got)
        _, _, timeout, max_reply = ticket.calls[index]
        proc = self._proc
        assert proc is not None  # a kill empties the queue
        error: BaseException
        start = max(ticket.sent_at, self._next_start)
        try:
            msg = self._read_reply(proc, start + timeout, max_reply)
        except (TimeoutError, SandboxTooBig, EOFError, OSError, _OverRss) as exc:
            error = self._ending(exc, timeout)
        except BaseException:  # KeyboardInterrupt, SystemExit: never leave it running
            self._kill(respawn=False)
            raise
        else:
            ticket.got.append(self._outcome(msg, max_reply))
            self._unread -= ticket.sizes[index]
            if len(ticket.got) == len(ticket.calls):
                self._ahead.popleft()
                ticket.finish(ticket.got)
            return
        self._ahead.popleft()
        ticket.finish([*ticket.got, _raising(error)])
        self._kill(respawn=True)

    def _run(self, ticket: Ticket) -> list[Callable[[], Any]]:
        """A ticket's calls written and read in turn (nothing else is in the worker's pipes):
        all in one write when the worker can take them without reading (it reads one
        request, then writes its reply, which would block, the parent still writing, were
        the requests more than the pipe's smallest capacity)."""
        calls = ticket.calls
        frames = ticket.frames
        if sum(ticket.sizes) <= _PIPE_MIN:
            frames = [b"".join(frames)] + [b""] * (len(frames) - 1)
        outcomes: list[Callable[[], Any]] = []
        for frame, (_, _, timeout, max_reply) in zip(frames, calls, strict=True):
            try:
                proc = self._ensure(time.monotonic() + self.start_timeout)
                assert proc.stdin is not None
                if frame:
                    _write_all(proc.stdin.fileno(), frame)
                    self.round_trips += 1
                deadline = time.monotonic() + timeout  # start-up is not the step's time
                msg = self._read_reply(proc, deadline, max_reply)
            except (TimeoutError, SandboxTooBig, EOFError, OSError, _OverRss) as exc:
                self._kill(respawn=True)
                outcomes.append(_raising(self._ending(exc, timeout)))
                break
            except BaseException:  # KeyboardInterrupt, SystemExit: never leave it running
                self._kill(respawn=False)
                raise
            outcomes.append(self._outcome(msg, max_reply))
        return ticket.finish(outcomes)

    def _ending(self, exc: BaseException, timeout: float) -> BaseException:
        """What the outcome of a call raises when waiting for its reply ended the worker
        (past the deadline, a reply over its cap, the worker gone); the caller kills it."""
        if isinstance(exc, TimeoutError):  # an OSError too: checked first
            return SandboxTimeout(f"no result within {timeout:g} s (the {self.name} worker "
                                  "was killed)")
        if isinstance(exc, SandboxTooBig):
            return exc
        if isinstance(exc, _OverRss):
            return SandboxMemoryError(f"out of memory: the step held {exc} bytes, over "
                                      f"max_rss ({self.max_rss:,} bytes)")
        return SandboxCrashed(f"the {self.name} worker died during the call (out of memory? "
                              f"max_memory is {self.max_memory:,} bytes)")

    def _outcome(self, msg: Any, max_reply: int) -> Callable[[], Any]:
        """A reply as :meth:`call` returns or raises it."""
        kind = msg[0]
        if kind == "ok":
            value = msg[1]
            return lambda: value
        if kind == "raise":
            return _raising(msg[1])
        if kind == "memory":
            return _raising(SandboxMemoryError(f"out of memory: the step went over max_memory "
                                               f"({self.max_memory:,} bytes)"))
        if kind == "toobig":
            return _raising(SandboxTooBig(f"the reply holds {msg[1]:,} bytes, over "
                                          f"{max_reply:,}", int(msg[1])))
        return _raising(QueryFailed(str(msg[1])))

    def _poll_slice(self) -> float:
        """Seconds the parent waits for the worker before it looks again."""
        return RSS_POLL if self.max_rss is not None else 3600.0

    def _check_rss(self, proc: subprocess.Popen[bytes]) -> None:
        """Raise :class:`_OverRss` when the worker holds more than ``max_rss`` beyond its
        size when ready."""
        if self.max_rss is not None and self._base_rss is not None:
            grown = resident_bytes(proc.pid) - self._base_rss
            if grown > self.max_rss:
                raise _OverRss(f"{grown:,}")

    def _read_reply(self, proc: subprocess.Popen[bytes], deadline: float,
                    max_reply: int) -> Any:
        """One frame from the worker, read as it comes until ``deadline`` (TimeoutError);
        a header announcing more than ``max_reply`` (plus slack) bytes is not read. Bytes
        read past the frame (the start of the next reply of a :meth:`pipeline`) are kept for
        the next read."""
        assert proc.stdout is not None
        fd = proc.stdout.fileno()
        poller = select.poll()
        poller.register(fd, select.POLLIN | select.POLLHUP | select.POLLERR)
        buf, self._pending = self._pending, bytearray()
        size = -1  # the body's size, once the header is in
        while True:
            if size < 0 and len(buf) >= _HEADER.size:
                (size,) = _HEADER.unpack_from(buf)
                if size > max_reply + 4096:
                    raise SandboxTooBig(f"the reply holds {size:,} bytes, over {max_reply:,}",
                                        size)
                # The step is over once its reply starts: what is left is a copy of a bounded
                # size, not to be cut by the deadline on a busy machine.
                deadline = max(deadline, time.monotonic() + _TRANSFER_TIMEOUT)
            if size >= 0 and len(buf) >= _HEADER.size + size:
                end = _HEADER.size + size
                self._pending = buf[end:]
                msg, when = pickle.loads(memoryview(buf)[_HEADER.size:end])
                # When the worker took up the next call: as it sent this reply, unless the
                # reply was more than a pipe holds for sure (then its write may have waited
                # for this read, which is later).
                self._next_start = when if _HEADER.size + size <= _PIPE_MIN \
                    else time.monotonic()
                return msg
            left = deadline - time.monotonic()
            if left <= 0:  # past it: a reply already there still counts, nothing more
                if not poller.poll(0):
                    raise TimeoutError
            elif not poller.poll(min(left, self._poll_slice()) * 1000):
                self._check_rss(proc)
                continue
            want = (_HEADER.size + size - len(buf)) if size >= 0 else 1 << 16
            chunk = os.read(fd, max(1, min(want, 1 << 20)))
            if not chunk:
                raise EOFError
            buf += chunk


class Ticket:
    """Calls of one :meth:`Sandbox.pipeline`, sent ahead (:meth:`Sandbox.submit`) or not;
    its outcomes are read once, then kept."""

    def __init__(self, box: Sandbox,
                 calls: Sequence[tuple[Callable[..., Any], tuple[Any, ...], float, int]]) -> None:
        self._box = box
        self.calls = list(calls)
        cwd = os.getcwd()
        self.frames = [_frame((fn, args, max_reply, cwd)) for fn, args, _, max_reply in calls]
        self.sizes = [len(frame) for frame in self.frames]
        #: In the worker's pipes: replies still to read (:attr:`Sandbox._ahead`).
        self.sent = False
        #: When it was written (``time.monotonic()``).
        self.sent_at = 0.0
        #: Outcomes of the replies read so far (while sent).
        self.got: list[Callable[[], Any]] = []
        #: Every call's outcome, once known.
        self.done: list[Callable[[], Any]] | None = None

    def finish(self, outcomes: list[Callable[[], Any]]) -> list[Callable[[], Any]]:
        """Record the outcomes; the calls after one that ended the worker were not run."""
        not_run = SandboxNotRun(f"not run: the {self._box.name} worker ended at an earlier call")
        self.done = outcomes + [_raising(not_run) for _ in self.calls[len(outcomes):]]
        self.sent, self.got, self.frames = False, [], []
        return self.done

    def outcomes(self) -> list[Callable[[], Any]]:
        """One outcome per call, as :meth:`Sandbox.pipeline` returns them (waiting for the
        replies, or running the calls now when they were not sent or never reached)."""
        return self._box._collect(self)


def _raising(exc: BaseException) -> Callable[[], Any]:
    def outcome() -> Any:
        raise exc

    return outcome


_SHARED: dict[tuple[Any, ...], Sandbox] = {}
_SHARED_LOCK = threading.Lock()


def shared_sandbox(name: str, *, max_memory: int = DEFAULT_MAX_MEMORY,
                   max_file: int | None = None, preload: Iterable[str] = ()) -> Sandbox:
    """The process-wide box for ``name`` and these limits (one worker serves every caller)."""
    key = (name, int(max_memory), max_file, tuple(preload))
    with _SHARED_LOCK:
        box = _SHARED.get(key)
        if box is None:
            box = _SHARED[key] = Sandbox(name, max_memory=max_memory, max_file=max_file,
                                         preload=preload)
        return box


def close_all() -> None:
    """Stop every shared worker (interpreter exit; tests)."""
    with _SHARED_LOCK:
        boxes = list(_SHARED.values())
        _SHARED.clear()
    for box in boxes:
        box.close()


atexit.register(close_all)
