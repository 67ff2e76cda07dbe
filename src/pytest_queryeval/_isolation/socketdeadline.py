"""A hard wall-clock deadline on a socket exchange.

Why: per-receive socket timeouts do not bound a read: a server that trickles a byte now and
then (in the headers or the body) never trips a 60 s timeout, and the exchange lasts as many
timeouts as there are bytes. The deadline shuts the watched sockets down, so a read blocked in
the kernel returns at once. Used by the live prediction sources (:mod:`..predict._bounded`)
and the SPARQL endpoint source (:mod:`..sources.sparql`).
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable


class SocketDeadline:
    """Shuts the watched sockets down when ``seconds`` have passed, or when ``register``
    (an :class:`~..predict.pool.Abort`'s, for a request in the prediction pool) calls it at
    the end of the session."""

    def __init__(self, seconds: float,
                 register: Callable[[Callable[[], None]], Callable[[], None]] | None = None,
                 ) -> None:
        self.fired = False
        self.deadline = time.monotonic() + seconds
        self._socks: list[socket.socket] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(max(seconds, 0.0), self._fire)
        self._timer.daemon = True
        self._timer.start()
        self._unregister = register(self._fire) if register is not None else None

    @property
    def connected(self) -> bool:
        """Whether a connection was made (a socket watched): an attempt that failed without
        one never reached the server (refused, unreachable, connect timeout), which the
        sources' circuit breaker counts (:mod:`..predict.breaker`)."""
        with self._lock:
            return bool(self._socks)

    def watch(self, sock: socket.socket) -> None:
        with self._lock:
            self._socks.append(sock)
            if self.fired:
                _shutdown(sock)

    def _fire(self) -> None:
        with self._lock:
            self.fired = True
            for sock in self._socks:
                _shutdown(sock)

    def cancel(self) -> None:
        self._timer.cancel()
        if self._unregister is not None:
            self._unregister()


def _shutdown(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
