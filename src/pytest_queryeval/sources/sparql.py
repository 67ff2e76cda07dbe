"""``type: sparql``: a remote SPARQL 1.1 endpoint, JSON results.

Spec keys: ``endpoint`` (the query URL; ``url`` accepted too), ``timeout`` (s, default 30),
``max_rows``, ``max_bytes`` (cap on the response body, default 64 MiB), ``retries`` (extra
attempts on connection errors and HTTP 502/503/504, default 2),
``backoff`` (first wait in s, doubled per attempt, default 0.5), ``user`` / ``password``
(HTTP basic auth; ``${VAR}`` is expanded by the core; credentials in the URL's userinfo are
moved there too), ``method`` (``POST`` default, or ``GET``), ``data_version`` (any string mixed
into :meth:`fingerprint`: bump it when the endpoint's data changes, or run with
``--queryeval-no-cache``: the plugin cannot hash remote data).

Every request is a SPARQL 1.1 Protocol *query* operation (``query=``, url-encoded POST or GET),
never an update operation, whatever the text says: the guard's verdict is a first layer, the
protocol is the second (an endpoint that serves query and update on one URL, as Fuseki,
Virtuoso and Blazegraph can, decides by the parameter name). That is why the plugin sends its
own request with :mod:`http.client` rather than through SPARQLWrapper, which picks query or
update from its own reading of the text.

The password never appears in a message, a ``repr`` or the fingerprint. The timeout is a hard
wall-clock deadline on the whole exchange (connection, headers, body): a timer shuts the socket
down when it passes, so an endpoint that trickles a byte every few seconds ends like a stalled
one. The body is read one receive at a time and counted: past ``max_bytes`` it is abandoned and
the result comes back with ``truncated=True``, so memory stays bounded whatever the query
returns. The row cap is applied after the response is parsed (SPARQL JSON cannot be cut
mid-stream without a streaming parser).
"""

from __future__ import annotations

import hashlib
import time
import urllib.parse
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .._isolation.socketdeadline import SocketDeadline
from ..errors import ConfigError, QueryFailed, QueryTimeout, SourceUnavailable
from ..results import ResultTable, first_row_key_order
from .base import (
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_ROWS,
    DEFAULT_TIMEOUT,
    SourceDefaults,
    check_keys,
    positive,
)
from .rdf_codec import from_binding, star_columns_sorted
from .sparqlguard import check_query

if TYPE_CHECKING:
    from http.client import HTTPResponse

_RETRY_HTTP = frozenset({502, 503, 504})
_CHUNK = 1 << 16


class _Retryable(Exception):
    """A connection-level failure worth another attempt."""


def _split_userinfo(url: str) -> tuple[str, str | None, str | None]:
    parts = urllib.parse.urlsplit(url)
    if parts.username is None and parts.password is None:
        return url, None, None
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = host + (f":{parts.port}" if parts.port else "")
    clean = urllib.parse.urlunsplit(parts._replace(netloc=netloc))
    user = urllib.parse.unquote(parts.username) if parts.username is not None else None
    pwd = urllib.parse.unquote(parts.password) if parts.password is not None else None
    return clean, user, pwd


#: Spec keys accepted besides ``type``.
SPARQL_KEYS = frozenset({"endpoint", "url", "timeout", "max_rows", "retries", "backoff", "user",
                          "password", "method", "data_version", "max_bytes"})


class SparqlSource(SourceDefaults):
    """A read-only remote SPARQL endpoint. See the module docstring for the spec keys."""

    type = "sparql"
    timeout: float

    @classmethod
    def from_spec(cls, name: str, spec: Mapping[str, Any]) -> SparqlSource:
        """Build from a resolved ``datasources:`` entry (unknown keys are a ConfigError)."""
        check_keys(name, cls.type, spec, SPARQL_KEYS)
        return cls(name, spec)

    def __init__(self, name: str, spec: Mapping[str, Any]) -> None:
        self.name = name
        raw = spec.get("endpoint", spec.get("url"))
        if not isinstance(raw, str) or not raw.strip():
            raise ConfigError("type sparql needs 'endpoint' (the query URL)",
                              key=f"datasources.{name}.endpoint")
        url, url_user, url_pwd = _split_userinfo(raw.strip())
        if urllib.parse.urlsplit(url).scheme not in ("http", "https"):
            raise ConfigError(f"endpoint must be an http(s) URL, got {url!r}",
                              key=f"datasources.{name}.endpoint")
        self.endpoint = url
        user = spec.get("user", url_user)
        pwd = spec.get("password", url_pwd)
        self.user: str | None = str(user) if user is not None else None
        self._password: str | None = str(pwd) if pwd is not None else None
        if self._password is not None and self.user is None:
            raise ConfigError("'password' given without 'user'", key=f"datasources.{name}.user")
        self.timeout = positive(spec, "timeout", DEFAULT_TIMEOUT, name)
        self.max_rows = int(positive(spec, "max_rows", DEFAULT_MAX_ROWS, name))
        self.max_bytes = int(positive(spec, "max_bytes", DEFAULT_MAX_BYTES, name))
        retries, backoff = spec.get("retries", 2), spec.get("backoff", 0.5)
        if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
            raise ConfigError("must be a whole number >= 0", key=f"datasources.{name}.retries")
        if isinstance(backoff, bool) or not isinstance(backoff, int | float) or backoff < 0:
            raise ConfigError("must be a number >= 0", key=f"datasources.{name}.backoff")
        self.retries, self.backoff = retries, float(backoff)
        self.method = str(spec.get("method", "POST")).upper()
        if self.method not in ("GET", "POST"):
            raise ConfigError("method must be GET or POST", key=f"datasources.{name}.method")
        self.data_version = str(spec.get("data_version", ""))
        #: Attempts made by the last :meth:`execute` (observability for tests and reports).
        self.last_attempts = 0

    def __repr__(self) -> str:
        auth = f", user={self.user!r}, password=***" if self.user else ""
        return f"SparqlSource({self.name!r}, {self.endpoint!r}{auth})"

    def _scrub(self, text: str) -> str:
        if self._password:
            text = text.replace(self._password, "***")
            quoted = urllib.parse.quote(self._password, safe="")
            if quoted != self._password:
                text = text.replace(quoted, "***")
        return text

    def _once(self, query: str, timeout: float) -> dict[str, Any] | None:
        """One request through the SPARQL *query* protocol; the parsed JSON body, or None
        when the body is larger than ``max_bytes``."""
        import json

        status, headers, body = _query_request(
            self.endpoint, query, method=self.method, auth=self._auth_header(),
            timeout=timeout, max_bytes=self.max_bytes)
        if 300 <= status < 400:
            location = self._scrub(headers.get("Location", "") or "")[:200]
            raise SourceUnavailable(f"{self.endpoint}: redirected (HTTP {status}) to "
                                    f"{location or 'nowhere'}; set 'endpoint' to the final URL")
        if status == 401:
            raise SourceUnavailable(f"{self.endpoint}: authentication failed (HTTP 401)")
        if status == 404:
            raise SourceUnavailable(f"{self.endpoint}: not found (HTTP 404)")
        if status in _RETRY_HTTP:
            raise _Retryable(f"HTTP {status}")
        if status >= 400:
            raise QueryFailed(f"HTTP {status}: {self._scrub(_error_text(body))}")
        if body is None:
            return None
        try:
            data = json.loads(body.decode("utf-8"))
        except ValueError as exc:  # invalid JSON or UTF-8
            raise QueryFailed(f"unreadable response: {self._scrub(str(exc))[:300]}") from None
        if not isinstance(data, dict):
            raise QueryFailed("unreadable response: the body is not a JSON object")
        return data

    def _auth_header(self) -> str | None:
        if self.user is None:
            return None
        import base64

        token = f"{self.user}:{self._password or ''}".encode()
        return "Basic " + base64.b64encode(token).decode("ascii")

    def execute(self, query: str, *, timeout: float | None = None, max_rows: int | None = None,
                trusted: bool = False) -> ResultTable:
        """Guard, send with bounded retries, normalise the JSON results.

        ``timeout``/``max_rows`` default to the spec's values (``None``).
        """
        del trusted  # gold queries are guarded too
        timeout = self.timeout if timeout is None else timeout
        c = check_query(query, timeout=timeout)
        max_rows = self.max_rows if max_rows is None else max_rows
        t0 = time.perf_counter()
        last = ""
        self.last_attempts = 0
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(self.backoff * (2 ** (attempt - 1)))
            self.last_attempts = attempt + 1
            try:
                data = self._once(query, timeout)
                break
            except _Retryable as exc:
                last = self._scrub(str(exc))
        else:
            raise SourceUnavailable(f"cannot reach {self.endpoint} after {self.retries + 1} "
                                    f"attempt(s): {last}")
        if data is None:  # larger than max_bytes: never read, never scored
            table = ResultTable([], [], True)
            table.meta["max_bytes"] = self.max_bytes
        else:
            table = _to_table(data, max_rows)
        table.columns, table.rows = star_columns_sorted(table.columns, table.rows, c.select_star)
        table.seconds = time.perf_counter() - t0
        table.meta.update({"form": c.form, "order_by": c.has_order_by,
                           "attempts": self.last_attempts, "max_rows": max_rows})
        return table

    def fingerprint(self) -> str:
        """Endpoint URL, user and ``data_version`` — never the password."""
        ident = f"{self.endpoint}\n{self.user or ''}\n{self.data_version}"
        return "sparql:" + hashlib.sha256(ident.encode()).hexdigest()

    def close(self) -> None:
        """Stateless: every request opens its own connection."""


def _error_text(body: bytes | None) -> str:
    """The endpoint's own error text (first 500 characters)."""
    if body is None:
        return "(error body larger than max_bytes)"
    text = body.decode("utf-8", errors="replace").strip()
    return text if len(text) <= 500 else text[:500] + "..."


def _query_request(endpoint: str, query: str, *, method: str, auth: str | None,
                   timeout: float, max_bytes: int,
                   ) -> tuple[int, Mapping[str, str], bytes | None]:
    """Send ``query`` as a SPARQL 1.1 Protocol *query* operation (``query=``, GET or
    url-encoded POST) and read the answer: (status, headers, body or None over ``max_bytes``).

    Never an update operation, whatever the text says: the parameter is always ``query``, so
    an endpoint that serves query and update on one URL (Fuseki, Virtuoso, Blazegraph) can
    only run it as a query (it rejects an update there as a syntax error). ``timeout`` is a
    hard deadline on the whole exchange (connect, headers, body); the body is counted while
    it is read and abandoned past ``max_bytes``, so it is never buffered whole.
    """
    import http.client
    import time

    parts = urllib.parse.urlsplit(endpoint)
    params = urllib.parse.urlencode({"query": query})
    path = parts.path or "/"
    headers = {"Accept": "application/sparql-results+json",
               "User-Agent": "pytest-queryeval"}
    if auth is not None:
        headers["Authorization"] = auth
    if method == "GET":
        target, body = path + "?" + "&".join(p for p in (parts.query, params) if p), None
    else:
        target = path + (f"?{parts.query}" if parts.query else "")
        body = params.encode("ascii")
        headers["Content-Type"] = "application/x-www-form-urlencoded"
    conn_cls = http.client.HTTPSConnection if parts.scheme == "https" else \
        http.client.HTTPConnection
    deadline = time.monotonic() + timeout
    guard = SocketDeadline(timeout)
    conn = conn_cls(parts.hostname or "", parts.port, timeout=timeout)
    try:
        try:
            conn.connect()
            guard.watch(conn.sock)
            conn.request(method, target, body=body, headers=headers)
            response = conn.getresponse()
            status = response.status
            got = _read_capped(response, max_bytes if status < 400 else 1 << 16, deadline)
        except (OSError, http.client.HTTPException) as exc:
            if guard.fired or isinstance(exc, TimeoutError) or time.monotonic() >= deadline:
                raise QueryTimeout(f"no answer from {endpoint} within {timeout:g} s") from None
            raise _Retryable(f"{type(exc).__name__}: {exc}") from None
        if guard.fired:
            raise QueryTimeout(f"no answer from {endpoint} within {timeout:g} s")
        return status, dict(response.headers.items()), got
    finally:
        guard.cancel()
        conn.close()


def _read_capped(response: HTTPResponse, max_bytes: int, deadline: float) -> bytes | None:
    """The body, one ``read1`` (one receive) at a time: None as soon as it passes
    ``max_bytes``; an OSError or IncompleteRead when the deadline closes the socket mid-way."""
    import http.client
    import time

    chunks: list[bytes] = []
    total = 0
    while True:
        if time.monotonic() >= deadline:
            raise TimeoutError
        chunk = response.read1(_CHUNK)
        if not chunk:
            if response.length:  # the connection ended before Content-Length bytes
                raise http.client.IncompleteRead(b"", response.length)
            return b"".join(chunks)
        total += len(chunk)
        if total > max_bytes:
            return None
        chunks.append(chunk)


def _to_table(data: dict[str, Any], max_rows: int) -> ResultTable:
    """SPARQL JSON results -> ResultTable (ASK: one boolean cell under ``boolean``)."""
    if "boolean" in data:
        return ResultTable(["boolean"], [(bool(data["boolean"]),)])
    head = data.get("head") or {}
    results = data.get("results") or {}
    cols = [str(v) for v in head.get("vars", [])]
    bindings = results.get("bindings")
    if not isinstance(bindings, list):
        raise QueryFailed("the endpoint did not return SPARQL JSON results")
    truncated = len(bindings) > max_rows
    rows = [
        tuple(from_binding(b[v]) if isinstance(b.get(v), dict) else None for v in cols)
        for b in bindings[:max_rows]
    ]
    return ResultTable(cols, rows, truncated, meta=first_row_key_order(cols, bindings))
