"""Writing a report to a FIFO without ever blocking for good (issue 58 item 7).

A report path that is a FIFO is written to as a stream (:func:`.safefile.atomic_output`), so
that ``mkfifo p; cat p & pytest --queryeval-json=p`` works. A blocking ``open`` of a FIFO waits
until a process opens it for reading, and a blocking ``write`` until the reader takes the
bytes: a FIFO nobody read blocked the end of the run forever, and a scheduler's SIGTERM, which
the session ignores while it writes its reports, could not end it. Here the FIFO is opened and
written non-blocking, each wait bounded by :data:`FIFO_WAIT` and ended at once by
:func:`stop_waiting` (the SIGTERM handler calls it); giving up is :class:`NoReader`, an
``OSError`` that the report writers' caller names as a report not written, the other reports
written and the run's exit status kept.

Standard library only (floor 0).
"""

from __future__ import annotations

import errno
import io
import os
import select
import threading
import time

#: What :func:`.safefile.kind_of` calls a FIFO.
FIFO = "a FIFO (named pipe)"
#: Seconds a report written to a FIFO waits for a reader to open it, and then each time for
#: the reader to take the next bytes.
FIFO_WAIT = 10.0
_STOP = threading.Event()


def stop_waiting() -> None:
    """No more waiting for a FIFO's reader in this process: SIGTERM came
    (:mod:`..plugin.terminate`), and a scheduler's grace period before SIGKILL is short; a
    FIFO with no reader now is written nothing, the other reports are still written."""
    _STOP.set()


def wait_again() -> None:
    """A new session waits for a FIFO's reader again (a process that runs several sessions,
    pytest run in-process by a test: an earlier one's SIGTERM is not this one's)."""
    _STOP.clear()


class NoReader(OSError):
    """A FIFO that no process read in time: the report is not (wholly) written to it."""


def _gave_up(waiting: str, outcome: str) -> NoReader:
    """Why the wait for a FIFO's reader ended: its time ran out, or SIGTERM came."""
    if _STOP.is_set():
        return NoReader(f"{FIFO} {waiting}, and the process was asked to stop (SIGTERM): "
                        f"{outcome}")
    return NoReader(f"{FIFO} {waiting} for {FIFO_WAIT:g} s: {outcome}")


def open_fifo(path: str | os.PathLike[str]) -> int:
    """``path``, a FIFO, opened for writing once a reader has it open: waited for at most
    :data:`FIFO_WAIT` seconds (:class:`NoReader`), never as a blocking ``open`` waits,
    forever. The descriptor stays non-blocking (:class:`Pipe`)."""
    deadline = time.monotonic() + FIFO_WAIT
    while True:
        try:
            return os.open(path, os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError as exc:
            if exc.errno != errno.ENXIO:  # ENXIO: no reader yet
                raise
        if _STOP.is_set() or time.monotonic() >= deadline:
            raise _gave_up("that no process opened for reading", "nothing written")
        _STOP.wait(0.05)


class Pipe(io.RawIOBase):
    """A FIFO's non-blocking descriptor, written to with a bounded wait: a reader that stops
    reading for :data:`FIFO_WAIT` seconds cuts the report short (:class:`NoReader`) rather
    than blocking the run's end."""

    def __init__(self, fd: int) -> None:
        super().__init__()
        self._fd = fd

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._fd

    def write(self, data: object) -> int:
        view = memoryview(data)  # type: ignore[arg-type]
        deadline = time.monotonic() + FIFO_WAIT
        poller = select.poll()
        poller.register(self._fd, select.POLLOUT)
        while True:
            try:
                return os.write(self._fd, view)
            except BlockingIOError:
                pass
            if _STOP.is_set() or time.monotonic() >= deadline:
                raise _gave_up("whose reader took nothing", "the report is cut short")
            poller.poll(50)

    def close(self) -> None:
        if not self.closed:
            try:
                super().close()
            finally:
                os.close(self._fd)
