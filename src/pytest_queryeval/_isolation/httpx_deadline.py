"""The openai client's HTTP connections under the attempt's :class:`SocketDeadline`.

Why: the openai package reads with httpx, whose timeouts are per receive: a server sending its
status line and headers one byte every 2 s never trips them (``timeout: 5``, ``retries: 1``
was killed at 150 s). The http and SPARQL sources bound the whole exchange by shutting the
socket at the deadline (:mod:`.socketdeadline`); here the same deadline watches the socket of
every connection the attempt reads or writes: the client's network backend is wrapped so that
each stream registers its socket with the deadline of the attempt in progress (a context
variable: a pooled connection serves several attempts, each under its own deadline).

The client also follows no redirect: a 307 to another port received the whole prompt (and the
key). A request goes only to the origin the configuration names; a 3xx is an error that says
where it pointed.

httpx is imported lazily (it comes with the ``[llm]`` extra): ``httpx2`` with openai 3,
``httpx`` before; the one the installed openai package is built on is used.
"""

from __future__ import annotations

import importlib
import socket
import ssl
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from types import ModuleType
from typing import Any, Protocol, cast

from .socketdeadline import SocketDeadline

#: The deadline of the attempt running in this thread (None outside an attempt).
_GUARD: ContextVar[SocketDeadline | None] = ContextVar("queryeval_openai_deadline",
                                                       default=None)


class _Stream(Protocol):
    """What the wrapper calls on the network stream it wraps (httpcore's, of either name)."""

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes: ...

    def write(self, buffer: bytes, timeout: float | None = None) -> None: ...

    def close(self) -> None: ...

    def start_tls(self, ssl_context: ssl.SSLContext, server_hostname: str | None = None,
                  timeout: float | None = None) -> _Stream: ...

    def get_extra_info(self, info: str) -> object: ...


class _Backend(Protocol):
    """What the wrapper calls on the network backend it wraps."""

    def connect_tcp(self, *args: object, **kwargs: object) -> _Stream: ...

    def connect_unix_socket(self, *args: object, **kwargs: object) -> _Stream: ...

    def sleep(self, seconds: float) -> None: ...


@contextmanager
def watching(guard: SocketDeadline) -> Iterator[None]:
    """Connections read or written in this block are shut when ``guard`` fires."""
    token = _GUARD.set(guard)
    try:
        yield
    finally:
        _GUARD.reset(token)


def bounded_client(openai: ModuleType) -> Any:  # an httpx(2).Client: optional package
    """The ``http_client`` for ``openai.OpenAI``: the package's own defaults (limits, proxies
    from the environment), no redirects, every connection watched (:func:`watching`)."""
    client = openai.DefaultHttpxClient(follow_redirects=False)
    core = importlib.import_module(_core_name(client._transport))
    backend_type = _backend_type(core)
    transports = [client._transport, *getattr(client, "_mounts", {}).values()]
    for transport in transports:
        if transport is None:  # a mount that disables a proxy for some hosts
            continue
        pool = getattr(transport, "_pool", None)
        inner = getattr(pool, "_network_backend", None)
        if inner is None:
            raise RuntimeError(f"{type(client).__module__}: no network backend to watch: the "
                               "openai source's deadline cannot bound this httpx version")
        pool._network_backend = backend_type(inner)  # type: ignore[union-attr]
    return client


def _core_name(transport: object) -> str:
    """``httpcore2`` under ``httpx2``, ``httpcore`` under ``httpx`` (of the client's transport)."""
    top = type(transport).__module__.split(".")[0]
    return "httpcore2" if top == "httpx2" else "httpcore"


def _backend_type(core: ModuleType) -> type:
    """A network backend (of ``core``) whose streams register their socket with the current
    attempt's deadline before each read and write."""

    stream_base: type = core.NetworkStream
    backend_base: type = core.NetworkBackend

    class Stream(stream_base):  # type: ignore[misc]
        def __init__(self, inner: _Stream) -> None:
            self._inner = inner
            self._guard: SocketDeadline | None = None
            self._watch()

        def _watch(self) -> None:
            guard = _GUARD.get()
            if guard is not None and guard is not self._guard:
                sock = cast("socket.socket | None", self._inner.get_extra_info("socket"))
                if sock is not None:
                    guard.watch(sock)
                    self._guard = guard

        def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
            self._watch()
            return self._inner.read(max_bytes, timeout)

        def write(self, buffer: bytes, timeout: float | None = None) -> None:
            self._watch()
            self._inner.write(buffer, timeout)

        def close(self) -> None:
            self._inner.close()

        def start_tls(self, ssl_context: ssl.SSLContext, server_hostname: str | None = None,
                      timeout: float | None = None) -> _Stream:
            return Stream(self._inner.start_tls(ssl_context, server_hostname, timeout))

        def get_extra_info(self, info: str) -> object:
            return self._inner.get_extra_info(info)

    class Backend(backend_base):  # type: ignore[misc]
        def __init__(self, inner: _Backend) -> None:
            self._inner = inner

        def connect_tcp(self, *args: object, **kwargs: object) -> _Stream:
            return Stream(self._inner.connect_tcp(*args, **kwargs))

        def connect_unix_socket(self, *args: object, **kwargs: object) -> _Stream:
            return Stream(self._inner.connect_unix_socket(*args, **kwargs))

        def sleep(self, seconds: float) -> None:
            self._inner.sleep(seconds)

    return Backend
