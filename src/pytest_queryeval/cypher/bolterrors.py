"""A Bolt server's errors, told apart: the source's (it cannot be used: every case would fail
alike, so the cases are errors, left out of every mean) and the query's (refused, failed, timed
out: the case's own score).

Why a module of its own: what decides the side is where in the exchange the driver failed and
what the server's status code says, both grown by each re-probe (the seventeenth's deep
reply, the eighteenth's cut one, the nineteenth's unreadable one), apart from how a query is
sent (:mod:`.bolt`).
"""

from __future__ import annotations

import re
import struct
from typing import Protocol

from ..errors import (
    ConfigError,
    QueryEvalError,
    QueryFailed,
    QueryRefused,
    QueryTimeout,
    SourceUnavailable,
)
from . import guard
from .boltserver import cause


class Source(Protocol):
    """What the messages name of a source (:class:`.bolt.BoltSource`)."""

    name: str
    user: str | None

    @property
    def timeout(self) -> float | None: ...

    @property
    def where(self) -> str: ...


def _message(exc: BaseException) -> str:
    text = getattr(exc, "message", None) or str(exc) or type(exc).__name__
    return (str(text).strip().splitlines() or [type(exc).__name__])[0]


def connect_error(src: Source, exc: BaseException) -> QueryEvalError:
    """Why the server could not be used at all: always the source's error (the suite's
    infrastructure), named by datasource and URL."""
    code = str(getattr(exc, "code", None) or "")
    if code.startswith("Neo.ClientError.Security."):
        who = f"user {src.user!r}" if src.user else "no credentials"
        return SourceUnavailable(f"{src.where}: the server refused {who} ({code}: "
                                 f"{_message(exc)})")
    if type(exc).__name__ in ("ConfigurationError", "ValueError"):
        return ConfigError(_message(exc), key=f"datasources.{src.name}.url")
    return SourceUnavailable(f"{src.where}: cannot connect over Bolt within "
                             f"{src.timeout:g} s: {cause(exc)}")


def classify(src: Source, code: str, message: str, query: str) -> QueryEvalError:
    """A server's error by its Neo4j status code: the source's (credentials, an unknown
    database: every case would fail alike) or the query's (refused, failed, timed out)."""
    if code.startswith("Neo.ClientError.Security.Unauthorized") \
            or code.startswith("Neo.ClientError.Security.AuthenticationRateLimit"):
        return SourceUnavailable(f"{src.where}: the server refused the credentials "
                                 f"({code}: {message})")
    if code == "Neo.ClientError.Database.DatabaseNotFound":
        return SourceUnavailable(f"{src.where}: the server has no such database ({message})")
    if code in ("Neo.ClientError.Statement.AccessMode", "Neo.ClientError.Security.Forbidden"):
        write = guard.first_write(query)
        at = f"{write.text.upper()} at {guard.where(write)}: " if write is not None else ""
        return QueryRefused(f"{at}the server refused a write in a read transaction "
                            f"({code}: {message})")
    if "TransactionTimedOut" in code:
        return QueryTimeout(f"the server ended the transaction at its timeout ({code})")
    if "Database.DatabaseUnavailable" in code or code.startswith("Neo.TransientError.General"):
        return SourceUnavailable(f"{src.where}: {code}: {message}")
    return QueryFailed(f"{message} ({code})" if code else message)


def query_error(src: Source, exc: BaseException, query: str, seconds: float,
                elapsed: float, fired: bool, sent: bool = False, hint: str = "") -> QueryEvalError:
    """The driver's error: a timeout, a server's status code (:func:`classify`), or, once the
    query was sent, the reply's: a driver that cannot read what came back (``Nothing to
    unpack``, ``'NoneType' object is not iterable``: the nineteenth re-probe's B3b) is that
    query's failure, never "cannot connect" nor the datasource's URL. Only what fails before
    the query is sent is the source's (:func:`connect_error`). ``hint`` ends the message of a
    reply that could not be read."""
    if fired:
        return QueryTimeout(f"the query ran over {seconds:g} s (the connection was cut after "
                            f"{elapsed:.1f} s)")
    code = getattr(exc, "code", None)
    if isinstance(code, str) and code:
        return classify(src, code, _message(exc), query)
    if isinstance(exc, UnicodeDecodeError):
        return _undecodable(exc)
    if isinstance(exc, RecursionError | MemoryError | struct.error | OverflowError | IndexError):
        # the reply the query asked for, not the server: a value nested past what the
        # driver reads (``reduce(a = [], x IN range(1, 900) | [a])``, the seventeenth
        # re-probe's B2), or a reply FalkorDB cut at 64 KB whose rest the driver misreads
        # (``struct.error``: the eighteenth's B3), was the datasource's error and left the
        # case out of every mean
        return QueryFailed(f"the reply could not be read ({type(exc).__name__}: a value "
                           "nested or grown past what the driver reads, or a reply the "
                           f"server cut short){hint}")
    if sent:
        return QueryFailed(f"the reply could not be read ({type(exc).__name__}: "
                           f"{cause(exc)}){hint}")
    return connect_error(src, exc)


def _undecodable(exc: UnicodeDecodeError) -> QueryFailed:
    """The query's error, not the server's: FalkorDB quotes a query's non-ASCII character by
    its first byte alone in its syntax error (``Invalid input '\\xef'``), which the driver
    cannot decode; its message is read with that byte replaced."""
    raw = exc.object if isinstance(exc.object, bytes) else b""
    text = raw.decode("utf-8", "replace")
    match = re.search(r"errMsg:\s*(.*?)(?:\s+errCtx:|$)", text, re.DOTALL)
    message = (match.group(1) if match else text).strip().splitlines()
    detail = f": {message[0]}" if message else ""
    return QueryFailed(f"the server's answer is not valid UTF-8{detail}")
