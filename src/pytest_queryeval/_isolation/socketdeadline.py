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
import struct
import threading
import time
from collections.abc import Callable, Iterable


class SocketDeadline:
    """Shuts the watched sockets down when ``seconds`` have passed, or when ``register``
    (an :class:`~..predict.pool.Abort`'s, for a request in the prediction pool) calls it at
    the end of the session."""

    def __init__(self, seconds: float,
                 register: Callable[[Callable[[], None]], Callable[[], None]] | None = None,
                 *, reset: bool = False) -> None:
        self.fired = False
        self.reset = reset
        self.deadline = time.monotonic() + seconds
        self._socks: list[socket.socket] = []
        self._providers: list[Callable[[], Iterable[socket.socket]]] = []
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
                _shutdown(sock, self.reset)

    def watch_all(self, sockets: Callable[[], Iterable[socket.socket]]) -> None:
        """Watch the sockets ``sockets()`` gives when the deadline fires: a client library's
        pool, whose connection for the exchange is not known before it blocks."""
        with self._lock:
            self._providers.append(sockets)
        if self.fired:
            self._fire()

    def fire(self) -> None:
        """Fire now, before the deadline: an interrupt (SIGTERM, Ctrl-C) in the middle of an
        exchange, whose close must not wait on the server either."""
        self._timer.cancel()
        self._fire()

    def _fire(self) -> None:
        with self._lock:
            self.fired = True
            socks = list(self._socks)
            for provider in self._providers:
                with contextlib.suppress(Exception):  # a pool changing under the timer thread
                    socks.extend(provider())
            for sock in socks:
                _shutdown(sock, self.reset)

    def cancel(self) -> None:
        self._timer.cancel()
        if self._unregister is not None:
            self._unregister()


def _shutdown(sock: socket.socket, reset: bool) -> None:
    """Shut ``sock`` down; with ``reset``, its receiving side only, and its close made a reset
    (``SO_LINGER`` 0). Why: a server that writes its reply with blocking sends (FalkorDB's
    Bolt listener) waits on a peer that half-closed with a full window until the peer's
    ``FIN_WAIT2`` times out (a minute and more, every other client unanswered meanwhile); a
    reset fails its send at once. Only the receiving side is shut, so no ``FIN`` goes out
    before the reset; the owner then closes the socket (:func:`reset_close`)."""
    with contextlib.suppress(OSError):
        if reset:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            sock.shutdown(socket.SHUT_RD)
        else:
            sock.shutdown(socket.SHUT_RDWR)


def reset_close(sock: socket.socket) -> None:
    """Close ``sock`` with a reset (``SO_LINGER`` 0): a connection given up on with its reply
    unread is dropped at once on both ends, not left for the server to finish writing to."""
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    with contextlib.suppress(OSError):
        sock.close()
