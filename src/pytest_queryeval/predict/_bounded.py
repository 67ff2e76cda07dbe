"""Reading what a prediction source sends under a hard deadline and a byte cap.

Why: per-receive socket timeouts do not bound a read (a server trickling one byte every 2 s
never trips a 60 s timeout), and ``resp.read()`` / ``subprocess.run(capture_output=True)``
buffer everything (a 3 GiB body or 1 GiB of command output took 4-6 GB of memory). Here the
deadline covers the whole exchange (connect, request, headers, body; or the whole command run)
and bytes are counted as they arrive: past the cap the read stops and nothing more is kept.
"""

from __future__ import annotations

import contextlib
import errno
import http.client
import os
import selectors
import signal
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any, Protocol

from .._isolation.socketdeadline import SocketDeadline
from .pool import ABORT

#: Bytes per read of a body or of command output.
_CHUNK = 1 << 16
#: The tail of a command's stderr kept for its error message.
STDERR_TAIL = 8192
#: Errors of process creation that say "not now" rather than "never": the kernel could not
#: copy the arguments (EFAULT, seen once in CI on a loaded container), had no memory or no
#: process slot. A retry after a pause starts the command; a missing or non-executable
#: file (ENOENT, EACCES) is not among them and is reported at once.
_TRANSIENT_SPAWN = frozenset({errno.EFAULT, errno.EAGAIN, errno.ENOMEM, errno.EINTR})
#: Pauses before the retries of a transiently failed start.
_SPAWN_PAUSES = (0.05, 0.2, 0.5)


class Aborted(Exception):
    """The session ended (the prediction pool was closed) while the command ran."""


class DeadlineExpired(Exception):
    """The wall-clock deadline passed before the answer was complete."""


class TooBig(Exception):
    """More than ``max_bytes`` arrived (``size``: bytes counted when the read stopped)."""

    def __init__(self, size: int) -> None:
        super().__init__(size)
        self.size = size


def request_deadline(seconds: float) -> SocketDeadline:
    """A prediction request's deadline: it also fires when the session ends (the prediction
    pool closes), shutting the request's sockets at once."""
    abort = ABORT.get()
    return SocketDeadline(seconds, abort.register if abort is not None else None)


def _watched(base: type[http.client.HTTPConnection], guard: SocketDeadline) -> Any:
    class Watched(base):  # type: ignore[valid-type,misc]
        def connect(self) -> None:
            super().connect()
            guard.watch(self.sock)

    return Watched


class _HTTPHandler(urllib.request.HTTPHandler):
    def __init__(self, guard: SocketDeadline) -> None:
        super().__init__()
        self._conn = _watched(http.client.HTTPConnection, guard)

    def http_open(self, req: urllib.request.Request) -> Any:
        return self.do_open(self._conn, req)


class _HTTPSHandler(urllib.request.HTTPSHandler):
    def __init__(self, guard: SocketDeadline) -> None:
        super().__init__()
        self._conn = _watched(http.client.HTTPSConnection, guard)

    def https_open(self, req: urllib.request.Request) -> Any:
        return self.do_open(self._conn, req)


class _SameOrigin(urllib.request.HTTPRedirectHandler):
    """Follows a redirect only within the request's origin (scheme, host and port): a
    redirect elsewhere would carry the configured headers (a key) to a server the
    configuration did not name. Refused, the 3xx is the HTTPError the caller reports."""

    def redirect_request(self, req: urllib.request.Request, fp: IO[bytes], code: int, msg: str,
                         headers: http.client.HTTPMessage, newurl: str,
                         ) -> urllib.request.Request | None:
        if _origin(newurl) != _origin(req.full_url):
            return None
        return super().redirect_request(req, fp, code, msg, headers, newurl)


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urllib.parse.urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        port = -1
    scheme = parts.scheme.lower()
    return scheme, (parts.hostname or ""), port or {"http": 80, "https": 443}.get(scheme)


class _Body(Protocol):
    """A response whose body is read one receive at a time (``HTTPResponse.read1``)."""

    def read1(self, n: int, /) -> bytes: ...


def open_url(request: urllib.request.Request, guard: SocketDeadline) -> Any:
    """``urlopen`` whose connections are shut when ``guard`` fires (HTTPError as usual), and
    that follows redirects only within the request's origin."""
    left = max(guard.deadline - time.monotonic(), 0.001)
    opener = urllib.request.build_opener(_HTTPHandler(guard), _HTTPSHandler(guard),
                                         _SameOrigin())
    return opener.open(request, timeout=left)


def read_capped(response: _Body, max_bytes: int, guard: SocketDeadline) -> bytes:
    """The body, one receive at a time; :class:`TooBig` as soon as it passes ``max_bytes``,
    :class:`DeadlineExpired` when the deadline passes (or closed the socket) mid-way."""
    chunks: list[bytes] = []
    total = 0
    while True:
        if guard.fired or time.monotonic() >= guard.deadline:
            raise DeadlineExpired
        try:
            chunk = response.read1(_CHUNK)
        except (OSError, http.client.HTTPException):
            if guard.fired or time.monotonic() >= guard.deadline:
                raise DeadlineExpired from None
            raise
        if not chunk:
            if guard.fired:
                raise DeadlineExpired
            return b"".join(chunks)
        total += len(chunk)
        if total > max_bytes:
            raise TooBig(total)
        chunks.append(chunk)


def run_command(argv: Sequence[str], stdin: bytes, cwd: Path, timeout: float, max_bytes: int,
                ) -> tuple[int, bytes, bytes]:
    """Run ``argv`` in its own process group with ``stdin``; (exit code, stdout, stderr tail).

    stdout is counted while it is read: past ``max_bytes`` (:class:`TooBig`) or ``timeout``
    seconds (:class:`DeadlineExpired`) the whole process group is killed. Ctrl-C kills it too
    (the group is not the terminal's, so the terminal's SIGINT does not reach it) and
    propagates. When it runs in the prediction pool, the end of the session kills it too
    (:class:`Aborted`: a Ctrl-C lands in the main thread, not in the pool's). Only the last
    :data:`STDERR_TAIL` bytes of stderr are kept.
    """
    abort = ABORT.get()
    deadline = time.monotonic() + timeout
    proc = _spawn(argv, cwd)
    unregister = abort.register(lambda: _kill_group(proc)) if abort is not None else None
    assert proc.stdin is not None
    assert proc.stdout is not None
    assert proc.stderr is not None
    try:
        out, err = _exchange(proc, stdin, deadline, max_bytes)
        left = deadline - time.monotonic()
        try:
            code = proc.wait(max(left, 0.001))
        except subprocess.TimeoutExpired:
            raise DeadlineExpired from None
        if abort is not None and abort.is_set():
            raise Aborted  # killed by the end of the session, not failed
    except BaseException:
        _kill_group(proc)
        raise
    finally:
        if unregister is not None:
            unregister()
        for f in (proc.stdin, proc.stdout, proc.stderr):
            with contextlib.suppress(OSError):
                f.close()
    return code, b"".join(out), err


def _exchange(proc: subprocess.Popen[bytes], stdin: bytes, deadline: float, max_bytes: int,
              ) -> tuple[list[bytes], bytes]:
    """Write stdin and read both outputs in one loop until every pipe is closed: a command
    that writes before it has read all its input would otherwise block on a full pipe."""
    assert proc.stdin is not None
    assert proc.stdout is not None
    assert proc.stderr is not None
    out: list[bytes] = []
    total = 0
    err = b""
    pending = memoryview(stdin)
    with selectors.DefaultSelector() as sel:
        os.set_blocking(proc.stdin.fileno(), False)
        if pending:
            sel.register(proc.stdin, selectors.EVENT_WRITE)
        else:
            proc.stdin.close()
        sel.register(proc.stdout, selectors.EVENT_READ)
        sel.register(proc.stderr, selectors.EVENT_READ)
        while sel.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                raise DeadlineExpired
            for key, _ in sel.select(min(left, 1.0)):
                f = key.fileobj
                if f is proc.stdin:
                    pending = _feed_stdin(sel, proc.stdin, pending)
                    continue
                data = os.read(key.fd, _CHUNK)
                if not data:
                    sel.unregister(f)
                elif f is proc.stdout:
                    total += len(data)
                    if total > max_bytes:
                        raise TooBig(total)
                    out.append(data)
                else:
                    err = (err + data)[-STDERR_TAIL:]
    return out, err


def _feed_stdin(sel: selectors.BaseSelector, stdin: IO[bytes], pending: memoryview,
                ) -> memoryview:
    """Write what the pipe takes now; a command that exits without reading the rest (a
    broken pipe) has had its input, and its stdin closes once nothing is pending."""
    try:
        pending = pending[os.write(stdin.fileno(), pending[:_CHUNK]):]
    except (BrokenPipeError, BlockingIOError) as exc:
        if isinstance(exc, BlockingIOError):
            return pending
        pending = pending[:0]
    if not pending:
        sel.unregister(stdin)
        with contextlib.suppress(OSError):
            stdin.close()
    return pending


def _spawn(argv: Sequence[str], cwd: Path) -> subprocess.Popen[bytes]:
    """Start ``argv`` in a new session, retrying a start the kernel refused for now."""
    for pause in (*_SPAWN_PAUSES, None):
        try:
            return subprocess.Popen(list(argv), cwd=cwd, stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    start_new_session=True)
        except OSError as exc:
            if pause is None or exc.errno not in _TRANSIENT_SPAWN:
                raise
            time.sleep(pause)
    raise AssertionError("unreachable")  # pragma: no cover


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the command's whole process group (a shell's children too) and reap it."""
    with contextlib.suppress(OSError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(OSError):
        proc.kill()
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(5)
