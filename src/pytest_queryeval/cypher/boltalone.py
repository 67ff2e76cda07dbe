"""A prediction sent to a FalkorDB server itself (``rehearse: false``): on a connection of its
own, dropped after the query, and its reply read only if the server sent no more than
:data:`.replies.MAX_MESSAGE` bytes in the whole exchange.

Why: FalkorDB's Bolt listener (4.16) writes a message over 64 KiB as one chunk whose 16-bit
size is cut, and the driver then reads the message's own bytes as chunk headers; a prediction
that chooses those bytes (a list of large integers, each written as eight free bytes) forges
whole replies: its own rows, a FAILURE of any code, and, on a pooled connection, the next
queries' (the nineteenth re-probe's B5: the next case's wrong prediction passed). The driver
cannot tell a forged message from a real one, but a message can only have been cut if more
than :data:`.replies.MAX_MESSAGE` bytes arrived, and the kernel counts the bytes that arrived
on a TCP connection (``TCP_INFO``'s ``tcpi_bytes_received``) whatever the driver made of them.
Where that count cannot be read (not Linux, not TCP), the reply is not read either.
"""

from __future__ import annotations

import contextlib
import socket
import struct

from .._isolation.socketdeadline import reset_close
from ..errors import ReadRefused
from .replies import MAX_MESSAGE

#: ``getsockopt`` option of Linux's ``struct tcp_info`` (absent elsewhere).
TCP_INFO: int | None = getattr(socket, "TCP_INFO", None)
#: Where ``struct tcp_info`` holds its u64 ``tcpi_bytes_received`` (Linux 4.1 and later);
#: tests/cypher/test_bolt_alone.py checks it against a known transfer.
BYTES_RECEIVED = 128

#: Why a reply is not read; formatted with how many bytes came.
REFUSAL = ("the reply was over 64 KiB ({}), which a FalkorDB server's Bolt listener cannot "
           "frame: it is not read without the rehearsal (rehearse: true)")


def received(sock: socket.socket) -> int | None:
    """The bytes the peer has sent on ``sock`` so far, by the kernel's count; None where the
    kernel does not say."""
    if TCP_INFO is None:
        return None
    try:
        info = sock.getsockopt(socket.IPPROTO_TCP, TCP_INFO, 256)
    except OSError:
        return None
    if len(info) < BYTES_RECEIVED + 8:
        return None
    return int(struct.unpack_from("=Q", info, BYTES_RECEIVED)[0])


#: Fewer bytes than this, from a server that ended the connection first, were no cut reply:
#: the listener writes in blocks of 4,096 bytes, and a message over 64 KiB the driver failed
#: on arrived as 4,096 bytes at least (tests/cypher/test_cypher_twentyfirst.py); a server that
#: stopped on the query sent 1 (the twenty-first re-probe's L4).
MIN_CUT = 4_096
#: ``tcpi_state`` (the first byte of ``struct tcp_info``) once the peer ended the connection
#: before this side did: ``CLOSE_WAIT``, ``LAST_ACK``, ``CLOSING``, and ``CLOSE`` (a reset).
PEER_ENDED = frozenset({7, 8, 9, 11})


def peer_ended(sock: socket.socket) -> bool:
    """Whether the peer ended the connection (a FIN or a reset) before this side shut it
    down, by the kernel's state of it; False where the kernel does not say."""
    if TCP_INFO is None:
        return False
    try:
        info = sock.getsockopt(socket.IPPROTO_TCP, TCP_INFO, 256)
    except OSError:
        return False
    return len(info) > 0 and info[0] in PEER_ENDED


class Meter:
    """The bytes a FalkorDB server sent for one query, from the moment the meter is made (the
    transaction begun) to the server's close of the connection.

    Why a duplicate of the driver's socket: the driver closes its own on an error it cannot
    read past, and the count must still be read; the connection then ends (with a reset)
    only when :meth:`close` closes the duplicate. Why read to the server's close: the driver
    may have finished on a forged end before the rest of a cut message arrived; the server
    closes once the client has shut its sending side, after everything it wrote."""

    def __init__(self, sock: socket.socket | None) -> None:
        self._sock: socket.socket | None = None
        self._start: int | None = None
        self.sent: int | None = None
        #: Whether the server ended the connection before the driver or the meter did.
        self.server_ended = False
        if sock is not None:
            with contextlib.suppress(OSError):
                self._sock = sock.dup()
        if self._sock is not None:
            self._start = received(self._sock)

    def end(self) -> None:
        """Count what the server sent, reading (and dropping) what the driver left until the
        server closes or the count passes :data:`MAX_MESSAGE`; the caller's deadline shuts
        the socket down if the server does neither."""
        if self._sock is None or self._start is None or self.sent is not None:
            return
        self.server_ended = peer_ended(self._sock)
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_WR)
        with contextlib.suppress(OSError):
            while (now := received(self._sock)) is not None and now - self._start <= MAX_MESSAGE:
                if not self._sock.recv(65_536):
                    break
        now = received(self._sock)
        self.sent = None if now is None else now - self._start

    def refusal(self) -> ReadRefused | None:
        """Why the reply is not read: more than one Bolt message's bytes arrived (or the count
        could not be read); None when fewer did, and no message can have been cut."""
        self.end()
        if self.sent is not None and self.sent <= MAX_MESSAGE:
            return None
        how = ("the connection's byte count could not be read" if self.sent is None
               else f"{self.sent:,} bytes, {MAX_MESSAGE:,} at most")
        return ReadRefused(REFUSAL.format(how))

    def unread(self) -> str:
        """What a reply the driver gave up on may have been: the driver shuts the connection
        down as it fails, so the rest the server would have sent is not counted. Not where
        the server ended the connection first (it stopped, the twenty-first re-probe's L4:
        "after 1 bytes: a reply over 64 KiB" after a crash): the reply was not cut there."""
        sent = "" if self.sent is None else f" after {self.sent:,} bytes"
        if self.server_ended and self.sent is not None and self.sent < MIN_CUT:
            return f"; the server ended the connection{sent}"
        return (f"; the driver gave up{sent}: a reply over 64 KiB, which a FalkorDB server's "
                "Bolt listener cannot frame, is not read without the rehearsal "
                "(rehearse: true)")

    def close(self) -> None:
        if self._sock is not None:
            reset_close(self._sock)
