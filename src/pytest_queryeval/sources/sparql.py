"""``type: sparql``: a remote SPARQL 1.1 endpoint through SPARQLWrapper (JSON results).

Spec keys: ``endpoint`` (the query URL; ``url`` accepted too), ``timeout`` (s, default 30),
``max_rows``, ``max_bytes`` (cap on the response body, default 64 MiB), ``retries`` (extra
attempts on connection errors and HTTP 502/503/504, default 2),
``backoff`` (first wait in s, doubled per attempt, default 0.5), ``user`` / ``password``
(HTTP basic auth; ``${VAR}`` is expanded by the core; credentials in the URL's userinfo are
moved there too), ``method`` (``POST`` default, or ``GET``), ``data_version`` (any string mixed
into :meth:`fingerprint`: bump it when the endpoint's data changes, or run with
``--queryeval-no-cache``: the plugin cannot hash remote data).

The password never appears in a message, a ``repr`` or the fingerprint. The timeout is the
socket timeout (connection and each read) and a deadline on reading the whole answer, so a
stalled endpoint and an endless stream (a predicted cartesian product) both end. The row cap is
applied after the response is parsed (SPARQL JSON cannot be cut mid-stream without a streaming
parser); a body larger than ``max_bytes`` is abandoned unread and the result comes back with
``truncated=True``, so memory stays bounded whatever the query returns.
"""

from __future__ import annotations

import ast
import hashlib
import time
import urllib.error
import urllib.parse
from collections.abc import Mapping
from typing import Any

from ..errors import ConfigError, QueryFailed, QueryTimeout, SourceUnavailable
from ..results import ResultTable
from .base import DEFAULT_MAX_BYTES, DEFAULT_MAX_ROWS, DEFAULT_TIMEOUT, check_keys, positive
from .rdf_codec import from_binding, star_columns_sorted
from .sparqlguard import check_query

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


class SparqlSource:
    """A read-only remote SPARQL endpoint. See the module docstring for the spec keys."""

    type = "sparql"

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

    def _read(self, response: Any, timeout: float) -> dict[str, Any] | None:
        """The JSON body, read within ``timeout`` in all; None when larger than ``max_bytes``."""
        import json

        deadline = time.monotonic() + timeout
        chunks: list[bytes] = []
        total = 0
        try:
            while True:
                if time.monotonic() > deadline:
                    raise QueryTimeout(f"the answer from {self.endpoint} took more than "
                                       f"{timeout:g} s")
                chunk = response.read(_CHUNK)
                if not chunk:
                    break
                total += len(chunk)
                if total > self.max_bytes:
                    return None
                chunks.append(chunk)
        finally:
            response.close()
        data = json.loads(b"".join(chunks).decode("utf-8"))
        if not isinstance(data, dict):
            raise ValueError("the body is not a JSON object")
        return data

    def _once(self, query: str, timeout: float) -> dict[str, Any] | None:
        import http.client

        from SPARQLWrapper import JSON, POST, SPARQLWrapper
        from SPARQLWrapper.SPARQLExceptions import (
            EndPointInternalError,
            EndPointNotFound,
            QueryBadFormed,
            Unauthorized,
            URITooLong,
        )

        sw = SPARQLWrapper(self.endpoint, agent="pytest-queryeval")
        sw.setQuery(query)
        sw.setReturnFormat(JSON)
        if self.method == "POST":
            sw.setMethod(POST)
        sw.timeout = timeout  # type: ignore[assignment]  # setTimeout() truncates to int
        if self.user is not None:
            sw.setCredentials(self.user, self._password or "")
        try:
            result = sw.query()
            data = self._read(result.response, timeout)
        except QueryBadFormed as exc:
            raise QueryFailed(f"HTTP 400: {self._scrub(_short(exc))}") from None
        except (URITooLong, EndPointInternalError) as exc:
            code = 414 if isinstance(exc, URITooLong) else 500
            raise QueryFailed(f"HTTP {code}: {self._scrub(_short(exc))}") from None
        except Unauthorized:
            raise SourceUnavailable(f"{self.endpoint}: authentication failed (HTTP 401)") \
                from None
        except EndPointNotFound:
            raise SourceUnavailable(f"{self.endpoint}: not found (HTTP 404)") from None
        except urllib.error.HTTPError as exc:
            if exc.code in _RETRY_HTTP:
                raise _Retryable(f"HTTP {exc.code}") from None
            raise QueryFailed(f"HTTP {exc.code}: {self._scrub(_short(exc))}") from None
        except TimeoutError:
            raise QueryTimeout(f"no answer from {self.endpoint} within {timeout:g} s") from None
        except urllib.error.URLError as exc:
            if isinstance(exc.reason, TimeoutError):
                raise QueryTimeout(f"no answer from {self.endpoint} within {timeout:g} s") \
                    from None
            raise _Retryable(self._scrub(str(exc.reason))) from None
        except (ConnectionError, http.client.HTTPException) as exc:
            raise _Retryable(self._scrub(f"{type(exc).__name__}: {exc}")) from None
        except ValueError as exc:  # invalid JSON body
            raise QueryFailed(f"unreadable response: {self._scrub(str(exc))[:300]}") from None
        return data

    def execute(self, query: str, *, timeout: float | None = None, max_rows: int | None = None,
                trusted: bool = False) -> ResultTable:
        """Guard, send with bounded retries, normalise the JSON results.

        ``timeout``/``max_rows`` default to the spec's values (``None``).
        """
        del trusted  # gold queries are guarded too
        c = check_query(query)
        timeout = self.timeout if timeout is None else timeout
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
                last = str(exc)
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


def _short(exc: BaseException) -> str:
    """The endpoint's own error text when there is one.

    SPARQLWrapper only keeps the response body as ``repr(bytes)`` inside its message.
    """
    text = str(exc).strip()
    _head, sep, body = text.partition("\n\nResponse:\n")
    if sep:
        try:
            raw = ast.literal_eval(body)
            text = raw.decode("utf-8", errors="replace").strip() if isinstance(raw, bytes) else body
        except (ValueError, SyntaxError):
            text = body
    return text if len(text) <= 500 else text[:500] + "..."


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
    return ResultTable(cols, rows, truncated)
