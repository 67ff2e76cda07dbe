"""The few lines of the Redis protocol (RESP 2) the rehearsal copy (:mod:`.rehearsal`) is
spoken to in: a command out, one reply back, under a wall-clock deadline and a size cap.

Why not a client library: the copy is a ``redis-server`` the plugin starts on a Unix socket
of its own, asked three commands (``AUTH``, ``GRAPH.*``, ``INFO``); what a library would add
(pools, retries, reconnects) is what the rehearsal must not do: a reply that does not come
by the deadline, or comes too large, is the query's verdict, and the server is then killed.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable


class RespError(Exception):
    """An error reply (``-ERR ...``): the server's message, a value, not a failure of the
    exchange."""


class ReplyTooLarge(Exception):
    """The reply passed the byte cap before it ended."""


class ReplyDeadline(Exception):
    """The reply had not ended at the deadline."""


class RowTooLarge(Exception):
    """One row of a reply held more values than :meth:`Connection.rows` reads into memory."""


#: How many parsed bytes the buffer keeps before it drops them (:meth:`Connection._fill`).
_KEEP = 1 << 20

#: What one reply may hold: nested arrays, integers, strings, errors, ``None``.
Reply = object


def encode(*args: str | bytes) -> bytes:
    out = [b"*%d\r\n" % len(args)]
    for arg in args:
        data = arg if isinstance(arg, bytes) else arg.encode("utf-8")
        out.append(b"$%d\r\n%s\r\n" % (len(data), data))
    return b"".join(out)


class Connection:
    """One connection to a Unix socket; :meth:`call` sends a command and reads its reply."""

    def __init__(self, path: str, timeout: float) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        try:
            self.sock.connect(path)
        except OSError:
            self.sock.close()
            raise
        self._buf = bytearray()
        self._pos = 0
        self._deadline = 0.0
        self._cap = 0
        self._read = 0
        self._values = 0
        self._max_values = 0

    def close(self) -> None:
        self.sock.close()

    def call(self, *args: str | bytes, seconds: float, max_bytes: int) -> Reply:
        """The reply to ``args``, an error reply returned as a :class:`RespError` (not
        raised). Raises :class:`ReplyDeadline`, :class:`ReplyTooLarge`, or ``OSError`` /
        ``EOFError`` when the connection broke (the server died)."""
        self._send(args, seconds, max_bytes)
        return self._value()

    def rows(self, *args: str | bytes, seconds: float, max_bytes: int, max_values: int,
             row: Callable[[Reply], None]) -> Reply:
        """A ``GRAPH.*`` reply, ``[header, rows, statistics]``, with each row handed to
        ``row`` as it is read and then dropped: a reply is read whole (it may be 256 MiB),
        but only one row at a time is held, of at most ``max_values`` values
        (:class:`RowTooLarge`). Returns the reply without its rows, or the error reply."""
        self._send(args, seconds, max_bytes)
        head = self._scalar()
        if not isinstance(head, _Array) or head.n != 3:
            if isinstance(head, _Array):  # statistics alone (a query without a result)
                return [self._value() for _ in range(max(head.n, 0))]
            return head
        header = self._value()
        rows = self._scalar()
        count = rows.n if isinstance(rows, _Array) else 0
        for _ in range(max(count, 0)):
            self._values, self._max_values = 0, max_values
            try:
                row(self._value())
            finally:
                self._max_values = 0
        return [header, [], self._value()]

    def _send(self, args: tuple[str | bytes, ...], seconds: float, max_bytes: int) -> None:
        self._deadline = time.monotonic() + seconds
        self._cap, self._read = max_bytes, 0
        del self._buf[:self._pos]
        self._pos = 0
        self.sock.settimeout(max(seconds, 0.001))
        self.sock.sendall(encode(*args))

    def _fill(self) -> None:
        left = self._deadline - time.monotonic()
        if left <= 0:
            raise ReplyDeadline
        self.sock.settimeout(left)
        try:
            chunk = self.sock.recv(1 << 16)
        except TimeoutError:
            raise ReplyDeadline from None
        if not chunk:
            raise EOFError("the server closed the connection")
        self._read += len(chunk)
        if self._read > self._cap:
            raise ReplyTooLarge
        if self._pos > _KEEP:  # what was parsed is dropped: a long reply is not held whole
            del self._buf[:self._pos]
            self._pos = 0
        self._buf += chunk

    def _line(self) -> bytes:
        while True:
            end = self._buf.find(b"\r\n", self._pos)
            if end >= 0:
                line = bytes(self._buf[self._pos:end])
                self._pos = end + 2
                return line
            self._fill()

    def _bytes(self, n: int) -> bytes:
        while len(self._buf) - self._pos < n + 2:
            self._fill()
        data = bytes(self._buf[self._pos:self._pos + n])
        self._pos += n + 2
        return data

    def _value(self) -> Reply:
        """One value, its arrays read with a stack (a reply nested deep does not recurse)."""
        stack: list[tuple[list[Reply], int]] = []
        while True:
            value = self._scalar()
            if isinstance(value, _Array):
                if value.n < 0:
                    value = None
                elif value.n:
                    stack.append(([], value.n))
                    continue
                else:
                    value = []
            while True:
                if not stack:
                    return value
                items, n = stack[-1]
                items.append(value)
                if len(items) < n:
                    break
                stack.pop()
                value = items

    def _scalar(self) -> Reply:
        if self._max_values:
            self._values += 1
            if self._values > self._max_values:
                raise RowTooLarge
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind == b"+":
            return rest.decode("utf-8", "replace")
        if kind == b"-":
            return RespError(rest.decode("utf-8", "replace"))
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            return None if n < 0 else self._bytes(n).decode("utf-8", "replace")
        if kind == b"*":
            return _Array(int(rest))
        raise EOFError(f"not a RESP 2 reply: {line[:40]!r}")


class _Array:
    """An array's header, while its items are read."""

    def __init__(self, n: int) -> None:
        self.n = n
