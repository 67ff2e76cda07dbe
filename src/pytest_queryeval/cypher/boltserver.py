"""Which server a Bolt URL reaches, and the driver's sockets that a deadline shuts.

Why a module of its own: FalkorDB speaks Bolt as a Neo4j server does, and what decides how a
suite is scored (on the plugin's copy, :mod:`.rehearsal`) is asked of the server by a query,
under a wall-clock deadline of the plugin's own (the driver has no read timeout); the
sockets are reached through the driver's private attributes, in one place.
"""

from __future__ import annotations

import contextlib
import re
import socket
from typing import Any

from .._isolation.socketdeadline import SocketDeadline
from ..errors import SourceUnavailable


def is_falkordb(driver: Any, *, where: str, database: str | None, seconds: float) -> bool:
    """Whether the server is FalkorDB (its Bolt listener calls itself ``Neo4j/5.13.0``; its
    procedures say, ``algo.*`` and ``db.idx.*``): a FalkorDB suite is scored on the plugin's
    copy, so a wrong "no" sends every query to the server. Only the server's own refusal of
    ``dbms.procedures()`` (a Neo4j 5, ``Neo.ClientError...``) means another server; a lost
    connection is asked again once and is then the source's error (the eleventh re-probe
    dropped this one connection, and the whole suite ran on the server, unwalled)."""
    failure: BaseException | None = None
    for _ in range(2):
        try:
            names = _procedures(driver, where=where, database=database, seconds=seconds)
            return any(n.startswith(("algo.", "db.idx.")) for n in names)
        except Exception as exc:  # the driver's errors: the server's answer or the network's
            code = getattr(exc, "code", None)
            if isinstance(code, str) and code.startswith("Neo.ClientError."):
                return False
            failure = exc
    assert failure is not None
    raise SourceUnavailable(f"{where}: cannot tell whether the server is FalkorDB (whose "
                            f"suite is scored on a copy of its graph): {cause(failure)}")


def _procedures(driver: Any, *, where: str, database: str | None, seconds: float,
                ) -> list[str]:
    """The server's procedure names, under the source's wall-clock deadline: the driver has no
    read timeout, and a server that stops answering after the handshake (a host powered off, a
    firewall dropping the flow) held the session in ``recv`` for ever, a SIGTERM too (the
    session's close read the dead connection again: the twelfth re-probe's H1). The exchange's
    connection is the pool's, not known before it blocks, so the deadline shuts every socket
    of the driver's pool down; the session is closed under it."""
    deadline = SocketDeadline(seconds, reset=True)
    deadline.watch_all(lambda: pool_sockets(driver))
    session = driver.session(database=database)
    try:
        names = [str(r[0]) for r in session.run("CALL dbms.procedures() YIELD name "
                                                "RETURN name")]
    except BaseException as exc:
        if deadline.fired:
            raise SourceUnavailable(f"{where}: no answer within {seconds:g} s") from None
        if not isinstance(exc, Exception):  # SIGTERM, Ctrl-C: the close below must not wait
            deadline.fire()
        raise
    finally:
        with contextlib.suppress(Exception):
            session.close()
        deadline.cancel()
    return names


def pool_sockets(driver: Any) -> list[socket.socket]:
    """The sockets of the driver's connections (its pool's, in use or idle)."""
    pool = getattr(getattr(driver, "_pool", None), "connections", None)
    out = []
    for connections in list(pool.values()) if isinstance(pool, dict) else ():
        for connection in list(connections):
            sock = getattr(getattr(connection, "socket", None), "_socket", None)
            if isinstance(sock, socket.socket):
                out.append(sock)
    return out


def raw_socket(tx: Any) -> socket.socket | None:
    """The transaction's connection socket, for the deadline (None where the driver keeps it
    elsewhere: the server's transaction timeout still applies)."""
    sock = getattr(getattr(getattr(tx, "_connection", None), "socket", None), "_socket", None)
    return sock if isinstance(sock, socket.socket) else None


def cause(exc: BaseException) -> str:
    """The driver's last line (``Couldn't connect to ...:`` comes first, the reason last), its
    addresses written ``host:port``."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    text = lines[-1] if lines else type(exc).__name__
    return re.sub(r"ResolvedIPv\dAddress\(\('([^']*)', (\d+)\)\)", r"\1:\2", text)
