"""A dead endpoint costs seconds, not minutes: the preflight check and the circuit breaker of
the network sources (``http``, ``openai``).

Why: with the model server down every case retried on "connection refused" (a 42-case run took
4 min 47 s to go red), and a hung server cost ``timeout`` x attempts per case (8 minutes with
the openai defaults). Two guards, each per source (one model of a models mapping is one
source, so the other models still run):

* the **preflight**: when the run starts, each live network source is asked something cheap,
  in parallel, within ``preflight_timeout`` seconds (``http``: a TCP connection to the URL's
  host, or its proxy; ``openai``: the first byte of an answer to ``GET {base_url}/models``,
  whatever it says, or over https the server's half of the TLS handshake). A source that
  gets no answer is *tripped*: none of its cases is asked, each errors at once with the one
  reason, naming the source's ``queryeval.yaml`` line, model and URL;
* the **breaker**: after ``stop_after`` consecutive attempts that never reached the server
  (refused, reset while connecting, unreachable, name not resolved, no connection within the
  timeout), the source stops asking: the attempt that is retrying stops, and its remaining
  cases error at once with the one reason. Any answer of the server (an HTTP 4xx or 5xx too:
  it is up) resets the count. An attempt whose connection was made is *not* counted, whether
  it then timed out or was dropped: a slow model times out on its long prompts, and a server
  may drop the one request it crashes on, while its other cases answer; the preflight
  catches a server that accepts connections and never answers.

Both reasons are :class:`~..errors.SourceDown`: an ``error`` of each case, also under
``failures: model`` (a server that is down says nothing about the model).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..errors import PredictionError, SourceDown

#: ``stop_after`` when a source does not set it.
DEFAULT_STOP_AFTER = 3
#: ``preflight_timeout`` (seconds) when a source does not set it.
DEFAULT_PREFLIGHT_TIMEOUT = 5.0
#: The keys of the guards, which every network source accepts.
BREAKER_KEYS = frozenset({"preflight", "preflight_timeout", "stop_after"})


class Breaker:
    """One source's count of consecutive connection failures, and why it stopped asking.
    Shared by the pool's threads (each request of the source checks it before an attempt)."""

    def __init__(self, name: str, where: str | None, stop_after: int) -> None:
        #: How the source is named in its reasons (``http://host:port/v1 (model m)``).
        self.name = name
        #: The ``file:line: predictions`` location of the source's spec, when known.
        self.where = where
        self.stop_after = stop_after
        #: Connection attempts made (each attempt of each request; the preflight's too).
        self.attempts = 0
        self._failures = 0
        self._reason: str | None = None
        self._lock = threading.Lock()

    @property
    def reason(self) -> str | None:
        """Why the source stopped asking (None: it asks)."""
        with self._lock:
            return self._reason

    def check(self) -> None:
        """Raise the one reason when the source stopped asking."""
        with self._lock:
            reason, attempts = self._reason, self.attempts
        if reason is not None:
            raise SourceDown(reason, attempts)

    def attempt(self) -> None:
        """An attempt is about to be made (:meth:`check` first)."""
        self.check()
        self.count()

    def count(self) -> None:
        """One more connection attempt (the preflight's)."""
        with self._lock:
            self.attempts += 1

    def answered(self) -> None:
        """The server answered (whatever the answer): the count starts again."""
        with self._lock:
            self._failures = 0

    def failed(self, why: str) -> None:
        """An attempt never reached the server; the ``stop_after``-th in a row stops the
        source."""
        with self._lock:
            self._failures += 1
            if self.stop_after and self._failures >= self.stop_after and self._reason is None:
                self._reason = self._located(
                    f"stopped asking {self.name} after {self._failures} consecutive connection "
                    f"failures (the last: {why}); this case was not asked (stop_after: 0 "
                    "keeps asking)")

    def trip(self, why: str) -> None:
        """The preflight got no answer: no case of the source is asked."""
        with self._lock:
            if self._reason is None:
                self._reason = self._located(
                    f"{self.name} did not answer the preflight check: {why}; none of its cases "
                    "is asked (preflight: false skips the check)")

    def _located(self, text: str) -> str:
        return f"{self.where}: {text}" if self.where else text


def stop_after_of(spec: Mapping[str, object]) -> int:
    """``stop_after:`` checked: a whole number >= 0 (0: never stop)."""
    value = spec.get("stop_after", DEFAULT_STOP_AFTER)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise PredictionError(f"predictions.stop_after: must be a whole number >= 0 (0: never "
                              f"stop asking), not {value!r}")
    return value


def preflight_of(spec: Mapping[str, object]) -> float | None:
    """The preflight's timeout in seconds, or None when ``preflight: false``."""
    from .._util.numeric import option_limit

    enabled = spec.get("preflight", True)
    if not isinstance(enabled, bool):
        raise PredictionError(f"predictions.preflight: must be true or false, not {enabled!r}")
    try:
        timeout = float(option_limit("preflight_timeout",
                                     spec.get("preflight_timeout", DEFAULT_PREFLIGHT_TIMEOUT)))
    except ValueError as exc:
        raise PredictionError(f"predictions preflight_timeout {exc}") from None
    return timeout if enabled else None


def where_of(spec: Mapping[str, object]) -> str | None:
    """The ``file:line: predictions`` location suite reading gave the spec (``where``)."""
    where = getattr(spec, "where", None)
    return where if isinstance(where, str) else None


class LocatedSpec(dict[str, Any]):
    """A ``predictions:`` mapping that knows where it was written (``where``), so a source's
    reasons point at it."""

    where: str | None = None


#: A source's preflight: None when the server answered, else why not.
Preflight = Callable[[], "str | None"]


def preflight_all(checks: Iterable[tuple[Breaker, Preflight]]) -> dict[str, str]:
    """Run every source's preflight at once, each bounded by its own timeout, and trip the
    breaker of each that got no answer; ``{name: reason}`` of those."""
    checks = list(checks)
    failed: dict[str, str] = {}
    lock = threading.Lock()

    def one(breaker: Breaker, check: Preflight) -> None:
        breaker.count()
        try:
            why = check()
        except Exception as exc:
            why = f"{type(exc).__name__}: {exc}"
        if why is not None:
            breaker.trip(why)
            with lock:
                failed[breaker.name] = breaker.reason or why

    threads = [threading.Thread(target=one, args=pair, daemon=True,
                                name="queryeval-preflight") for pair in checks]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return failed


def _target(url: str) -> tuple[str, int, bool] | None:
    """The host and port a request to ``url`` connects to (the proxy the environment sends it
    through, if any) and whether that is the server itself; None when the host is a template
    filled per case or the port is not a number."""
    import urllib.parse
    import urllib.request

    parts = urllib.parse.urlsplit(url)
    try:
        host, port = parts.hostname, parts.port or {"https": 443}.get(parts.scheme, 80)
    except ValueError:  # a port that is not a number (a template): asked per case
        return None
    if not host or "{" in host:
        return None
    proxy = urllib.request.getproxies().get(parts.scheme)
    if proxy and not urllib.request.proxy_bypass(host):
        through = urllib.parse.urlsplit(proxy if "://" in proxy else f"http://{proxy}")
        return through.hostname or host, through.port or 80, False
    return host, port, True


def _unreached(host: str, port: int, timeout: float, exc: OSError) -> str:
    if isinstance(exc, TimeoutError):
        return f"no answer from {host}:{port} within {timeout:g} s"
    return f"cannot connect to {host}:{port}: {exc.strerror or exc}"


def connect_check(url: str, timeout: float) -> str | None:
    """The http source's preflight: a TCP connection to ``url``'s host and port, or to the
    proxy the environment sends it through, within ``timeout`` seconds. None when connected
    (or when the host is a template filled per case), else why not."""
    import socket

    target = _target(url)
    if target is None:
        return None
    host, port, _ = target
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return None
    except OSError as exc:
        return _unreached(host, port, timeout, exc)


def answer_check(url: str, timeout: float, method: str = "GET") -> str | None:
    """A preflight that the server must answer within ``timeout`` seconds (the openai
    source's ``GET /models``; the http source's ``HEAD url``, which asks no prediction):
    over ``http``, the first byte of its answer to ``METHOD url`` (whatever it says: a server
    without the route, or one slow to finish its headers, is up); over ``https``, its half of
    the TLS handshake (nothing is sent: the certificate is checked by the requests
    themselves). No credential is sent. A server that accepts connections and never answers
    is what it finds that a connection alone does not. Through a proxy: a connection to it.

    A connection the server took and then reset, or closed without a byte, is tried again
    (up to :data:`PREFLIGHT_TRIES` times, within ``timeout``): something listens there, and
    a listener of several processes sharing the port that closes resets what the kernel had
    queued at it (the example suite's stand-in; a restarting server). One reset made every
    case of the source an error; a refused connection or a silence is not tried again."""
    import time

    target = _target(url)
    if target is None:
        return None
    host, port, direct = target
    if not direct:
        return connect_check(url, timeout)
    deadline = time.monotonic() + timeout
    why: str | None = None
    for _ in range(PREFLIGHT_TRIES):
        why, again = _answer_once(url, host, port, method, timeout, deadline)
        if not again or time.monotonic() >= deadline:
            return why
        time.sleep(min(0.1, max(deadline - time.monotonic(), 0)))
    return why


#: Attempts of a preflight whose connection was reset or closed unanswered.
PREFLIGHT_TRIES = 3


def _answer_once(url: str, host: str, port: int, method: str, timeout: float,
                 deadline: float) -> tuple[str | None, bool]:
    """One attempt of :func:`answer_check`: why it got no answer (None: answered), and
    whether trying again may help (a reset, or a close without a byte)."""
    import socket
    import ssl
    import time
    import urllib.parse

    parts = urllib.parse.urlsplit(url)
    request = (f"{method} {parts.path or '/'} HTTP/1.1\r\nHost: {host}:{port}\r\n"
               "Connection: close\r\n\r\n").encode("latin-1", "replace")
    try:
        left = max(deadline - time.monotonic(), 0.001)
        with socket.create_connection((host, port), timeout=left) as sock:
            sock.settimeout(max(deadline - time.monotonic(), 0.001))
            if parts.scheme == "https":
                context = ssl.create_default_context()
                context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
                with context.wrap_socket(sock, server_hostname=host):
                    return None, False
            sock.sendall(request)
            first = sock.recv(1)
    except ssl.SSLError:
        return None, False  # it answered, in TLS: the requests say what is wrong with it
    except (ConnectionResetError, BrokenPipeError) as exc:
        return _unreached(host, port, timeout, exc), True
    except OSError as exc:
        return _unreached(host, port, timeout, exc), False
    if first:
        return None, False
    return f"{host}:{port} closed the connection without an answer", True
