"""SIGTERM is an interrupt: the session stops as it does on Ctrl-C, and writes its reports.

Schedulers stop work with SIGTERM, then SIGKILL after a grace period (SLURM's preemption and
``scancel``, a Kubernetes eviction, a CI job's timeout, ``timeout(1)``). Python's default for
SIGTERM ends the process at once: no report, no PostgreSQL copy dropped, every answer the run
paid for lost. While a session runs, SIGTERM raises :class:`Terminated`, a
``KeyboardInterrupt``, in the main thread, so pytest, xdist and this plugin take the path Ctrl-C
takes (stop asking, cancel what is in flight, write every report marked interrupted, drop the
copies at exit); the process then exits with :data:`EXIT_STATUS`, 128 + 15, the status a shell
reports for a process ended by SIGTERM, which a scheduler's requeue and a job's failure policy
already take for "terminated".

The handler is installed when the plugin wakes and the previous one is put back when the
session's config ends. Once the session finishes (its reports being written) a further SIGTERM
does not interrupt the writing: the grace period's SIGKILL is what ends a process stuck there.
Any SIGTERM ends the waits for a FIFO's reader (:func:`.._util.fifo.stop_waiting`): a
report path that is a FIFO nobody reads is then written nothing, at once, and the other
reports are written (before, the writing waited for a reader forever and the run never ended).

A library may swallow Ctrl-C: a ``KeyboardInterrupt`` raised inside a lazy import (the embedding
model's ``transformers``) has come back as an ordinary error, and the case then ended as
"embedding model unavailable" while the session ran on. So SIGINT, while pytest's own handler
(Python's default) is the one in place, is counted as well as raised (:attr:`TermHandler.interrupts`),
and a case during which one arrived ends the session as Ctrl-C does, whatever became of the
exception (:mod:`.nodes`). A handler the user installed is left alone.

Importable without pytest.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from types import FrameType
from typing import Any

#: The exit status of a session interrupted by SIGTERM.
EXIT_STATUS = 128 + int(signal.SIGTERM)


class Terminated(KeyboardInterrupt):
    """SIGTERM, turned into the interrupt Ctrl-C is (``queryeval_reason``: what the reports'
    ``run.interrupt_reason`` says)."""

    queryeval_reason = "SIGTERM: the process was asked to stop (a scheduler's preemption, an " \
                       "eviction, a time limit)"


class TermHandler:
    """SIGTERM as :class:`Terminated` while a session runs (one per pytest config: pytest
    run in-process by a test installs its own and gives the outer one back)."""

    def __init__(self) -> None:
        self._previous: Any = None
        self._installed = False
        #: The session's reports are being written: a SIGTERM no longer interrupts.
        self.finishing = False
        #: SIGTERM came while the session ran (the reports say so, the exit status is
        #: :data:`EXIT_STATUS`).
        self.received = False
        #: SIGINTs seen while the session ran (each raised as ``KeyboardInterrupt`` too).
        self.interrupts = 0
        self._previous_int: Any = None

    def install(self) -> None:
        if self._installed or threading.current_thread() is not threading.main_thread():
            return
        from .._util.fifo import wait_again

        wait_again()
        try:
            self._previous = signal.signal(signal.SIGTERM, self._handle)
        except (ValueError, OSError):  # not the main interpreter, or no signals here
            return
        self._installed = True
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            self._previous_int = signal.signal(signal.SIGINT, self._interrupt)

    def _interrupt(self, signum: int, frame: FrameType | None) -> None:
        self.interrupts += 1
        signal.default_int_handler(signum, frame)

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        from .._util.fifo import stop_waiting

        stop_waiting()  # a report to a FIFO nobody reads is given up, not waited for
        if self.finishing or self.received:  # interrupted once: the rest is the grace period's
            return
        self.received = True
        raise Terminated(Terminated.queryeval_reason)

    def restore(self) -> None:
        if not self._installed:
            return
        self._installed = False
        with contextlib.suppress(ValueError, OSError, TypeError):
            signal.signal(signal.SIGTERM, signal.SIG_DFL if self._previous is None
                          else self._previous)
        if self._previous_int is not None:
            with contextlib.suppress(ValueError, OSError, TypeError):
                if signal.getsignal(signal.SIGINT) == self._interrupt:
                    signal.signal(signal.SIGINT, self._previous_int)
            self._previous_int = None
