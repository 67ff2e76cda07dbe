"""Predictions from an HTTP endpoint (the system under test served as an API).

stdlib only (urllib): the plugin adds no HTTP client dependency. Retries cover connection
errors, timeouts, 429 and 5xx with exponential backoff; other 4xx fail at once, since
repeating a bad request cannot help. ``timeout`` is a hard wall-clock deadline on each attempt
(connect, request, headers and body: a server trickling a byte every 2 s hung the run under
per-receive timeouts) and ``max_bytes`` caps the body, counted while it is read (a 3 GiB body
was buffered whole). An error's message keeps the start of the response body
(where services say what was wrong), with the request's credentials masked.
"""

from __future__ import annotations

import http.client
import json
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar, cast

from .._util.boundedio import loads_json
from .._util.secrets import Scrubber, url_passwords
from ..errors import PredictionError
from ..model import Case, Context
from ._bounded import DeadlineExpired, TooBig, open_url, read_capped, request_deadline
from .base import (
    DEFAULT_MAX_BYTES,
    USAGE_KEYS,
    LiveSource,
    Prediction,
    extract_mode,
    extracted,
    get_path,
    maybe_json,
    positive_number,
    read_usage,
    refuse_repeated,
)
from .breaker import BREAKER_KEYS, Breaker, preflight_of, stop_after_of, where_of
from .cache import request_material, use_cache
from .pool import NOT_RETRIED, retry_pause

HTTP_KEYS = frozenset({"source", "url", "method", "headers", "body", "response_path", "timeout",
                       "retries", "backoff", "concurrency", "timing_fields", "max_bytes",
                       "usage_fields", "extract", "failures", "cache"}) | BREAKER_KEYS
#: Characters of an error response's body kept in the message (services explain 4xx there).
ERROR_BODY_CHARS = 500
#: Bytes read of an error body: enough to scrub a secret that starts before the cut.
_ERROR_BODY_READ = 8192
#: Request headers whose values are not credentials; every other header value is scrubbed
#: from error bodies (services echo keys: "invalid api key sk-...").
_PLAIN_HEADERS = frozenset({"accept", "accept-encoding", "accept-language", "content-type",
                            "content-language", "user-agent", "cache-control", "connection"})


class _Fields(dict[str, Any]):
    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def render(template: object, fields: Mapping[str, object]) -> object:
    """Fill ``{question}``-style placeholders in every string of a body template."""
    if isinstance(template, str):
        if template.startswith("{") and template.endswith("}") and template[1:-1] in fields:
            return fields[template[1:-1]]  # a whole-value placeholder keeps its JSON type
        return template.format_map(_Fields({k: v if isinstance(v, str) else json.dumps(v)
                                            for k, v in fields.items()}))
    if isinstance(template, dict):
        return {k: render(v, fields) for k, v in template.items()}
    if isinstance(template, list):
        return [render(v, fields) for v in template]
    return template


class HttpPredictor(LiveSource):
    shown_keys: ClassVar[tuple[str, ...]] = ("url",)

    @classmethod
    def from_spec(cls, spec: dict[str, Any], base: Path, search: list[Path],
                  context: Context | None = None) -> HttpPredictor:
        source = cls(spec)
        return use_cache(source, spec, context, source._scrubber.secrets)

    def __init__(self, spec: dict[str, Any]) -> None:
        unknown = set(spec) - HTTP_KEYS
        if unknown:
            raise PredictionError(f"unknown http predictions key(s): {', '.join(sorted(unknown))}")
        if not isinstance(spec.get("url"), str):
            raise PredictionError("http predictions need a url")
        self.url: str = spec["url"]
        self.method = str(spec.get("method", "POST")).upper()
        self.headers = {str(k): str(v) for k, v in (spec.get("headers") or {}).items()}
        self.body = spec.get("body")
        self.response_path = spec.get("response_path")
        self.timeout = positive_number(spec, "timeout", 60.0)
        self.max_bytes = int(positive_number(spec, "max_bytes", DEFAULT_MAX_BYTES))
        self.retries = int(spec.get("retries", 2))
        self.backoff = float(spec.get("backoff", 0.5))
        self.timing_fields: dict[str, str] = dict(spec.get("timing_fields") or {})
        self.usage_fields = _usage_fields(spec.get("usage_fields"))
        self.extract = extract_mode(spec)
        self._scrubber = Scrubber(_credentials(self.url, self.headers))
        self.preflight_timeout = preflight_of(spec)
        self.breaker = Breaker(f"{self.method} {_no_query(self.url)}", where_of(spec),
                               stop_after_of(spec))

    def preflight(self) -> str | None:
        """``HEAD url``, answered within the preflight timeout: a HEAD asks no prediction
        (any answer counts, a 405 included), and a server that accepts connections and never
        answers is found, as a connection alone does not find it (it cost the timeout times
        the attempts per case). Through a proxy: a connection to it. None when there is
        nothing to check (a host in a template)."""
        if self.preflight_timeout is None:
            return None
        from .breaker import answer_check

        return answer_check(self.url, self.preflight_timeout, method="HEAD")

    def _request(self, case: Case) -> urllib.request.Request:
        fields = case.json_input()
        fields["case"] = case.json_input()
        payload = render(self.body, fields) if self.body is not None else case.json_input()
        data = None
        headers = dict(self.headers)
        if self.method != "GET":
            if isinstance(payload, str):
                data = payload.encode("utf-8")
                headers.setdefault("Content-Type", "text/plain; charset=utf-8")
            else:
                data = json.dumps(payload).encode("utf-8")
                headers.setdefault("Content-Type", "application/json")
        # a template of text filled with text only: the URL stays text
        url = cast(str, render(self.url, {k: v for k, v in fields.items() if isinstance(v, str)}))
        return urllib.request.Request(url, data=data, headers=headers, method=self.method)

    def predict(self, case: Case) -> Prediction:
        return self.cached(case, request_material(self._request(case)), lambda: self._send(case))

    def _send(self, case: Case) -> Prediction:
        last = ""
        start = time.perf_counter()
        breaker = self.breaker
        assert breaker is not None
        for attempt in range(self.retries + 1):
            if attempt and not retry_pause(self.backoff * 2 ** (attempt - 1)):
                raise PredictionError(f"{self.method} {_no_query(self.url)}: {last}; "
                                      f"{NOT_RETRIED}")
            breaker.attempt()  # a source that stopped asking raises its one reason here
            guard = request_deadline(self.timeout)
            try:
                t0 = time.perf_counter()
                with open_url(self._request(case), guard) as resp:
                    raw = read_capped(resp, self.max_bytes, guard)
                    seconds = time.perf_counter() - t0
                    ctype = resp.headers.get("Content-Type", "")
            except TooBig as exc:  # the same request would send the same body again
                breaker.answered()
                raise PredictionError(
                    f"{self.method} {_no_query(self.url)}: the response body holds more "
                    f"than max_bytes ({self.max_bytes:,} bytes; {exc.size:,} read, the "
                    "rest abandoned)") from None
            except DeadlineExpired:
                last = f"timed out: no complete answer within {self.timeout:g} s"
                self._unanswered(guard.connected, last)
                continue
            except urllib.error.HTTPError as exc:
                breaker.answered()
                last = f"HTTP {exc.code} {exc.reason}{self._error_body(exc)}"
                if exc.code != 429 and exc.code < 500:
                    break
                continue
            except (urllib.error.URLError, TimeoutError, ConnectionError, OSError,
                    http.client.HTTPException) as exc:
                last = self._failure(exc, guard.fired or time.monotonic() >= guard.deadline)
                self._unanswered(guard.connected, last)
                continue
            finally:
                guard.cancel()
            breaker.answered()
            if case.agent is not None:
                refuse_repeated(raw.decode("utf-8", errors="replace"), "the response")
            return extracted(self._parse(raw, ctype, seconds), case.kind, self.extract)
        tries = f" after {attempt + 1} attempt(s) in {time.perf_counter() - start:.1f} s"
        raise PredictionError(f"{self.method} {_no_query(self.url)} failed: {last}{tries}")

    def _failure(self, exc: BaseException, timed_out: bool) -> str:
        """What an attempt that failed without an HTTP status says."""
        if timed_out:
            return f"timed out: no complete answer within {self.timeout:g} s"
        reason = getattr(exc, "reason", exc)
        return f"{type(reason).__name__}: {reason}" if not isinstance(reason, str) else reason

    def _unanswered(self, connected: bool, last: str) -> None:
        """Count an attempt that never reached the server with the breaker (a connection
        that was made and then timed out or was dropped is the server's answer to this
        request: a slow model, a crash on one prompt; not counted)."""
        assert self.breaker is not None
        if not connected:
            self.breaker.failed(last)

    def _error_body(self, exc: urllib.error.HTTPError) -> str:
        """``: <first 500 characters of the body>``, credentials masked, on one line."""
        try:
            raw = exc.read(_ERROR_BODY_READ) if exc.fp is not None else b""
        except (OSError, ValueError):
            return ""
        text = " ".join(raw.decode("utf-8", errors="replace").split())
        if not text:
            return ""
        text = self._scrubber.text(text)
        cut = text[:ERROR_BODY_CHARS]
        return f": {cut}{'...' if len(text) > ERROR_BODY_CHARS else ''}"

    def _parse(self, raw: bytes, ctype: str, seconds: float) -> Prediction:
        text = raw.decode("utf-8", errors="replace")
        if "json" in ctype or text.strip()[:1] in ("{", "["):
            try:
                data: object = loads_json(text)
            except ValueError as exc:  # BoundedReadError too: nested deeper than Python reads
                if self.response_path:
                    raise PredictionError(f"response is not valid JSON: {exc}") from None
                data = text
        else:
            data = text
        try:
            value = get_path(data, self.response_path)
        except KeyError as exc:
            raise PredictionError(f"response_path {self.response_path!r}: {exc.args[0]}") from None
        details: dict[str, Any] = {}
        for name, path in self.timing_fields.items():
            try:
                details[name] = get_path(data, path)
            except KeyError:
                continue
        if isinstance(value, str):
            value = maybe_json(value) if value.strip()[:1] == "{" else value
        usage, model = self._usage(data)
        return Prediction(value, seconds, details, usage, model)

    def _usage(self, data: object) -> tuple[dict[str, float], str | None]:
        """Token counts (and the model) at ``usage_fields`` paths, else at the OpenAI shape's
        top-level ``usage`` and ``model``."""
        if not isinstance(data, dict):
            return {}, None
        if not self.usage_fields:
            model = data.get("model")
            return read_usage(data.get("usage")), model if isinstance(model, str) else None
        found: dict[str, Any] = {}
        for name, path in self.usage_fields.items():
            try:
                found[name] = get_path(data, path)
            except KeyError:
                continue
        model = found.pop("model", None)
        return read_usage(found), str(model) if isinstance(model, str | int) else None


def _usage_fields(spec: object) -> dict[str, str]:
    """``usage_fields: {prompt_tokens: path, completion_tokens: path, cost_usd: path,
    model: path}``: where a response that is not OpenAI-shaped reports its usage."""
    if spec is None:
        return {}
    allowed = (*USAGE_KEYS, "cost_usd", "model")
    if not isinstance(spec, dict) or not all(isinstance(v, str) for v in spec.values()):
        raise PredictionError("predictions.usage_fields: must map names to response paths "
                              f"({', '.join(allowed)})")
    unknown = sorted(str(k) for k in spec if k not in allowed)
    if unknown:
        raise PredictionError(f"predictions.usage_fields.{unknown[0]}: unknown (allowed: "
                              f"{', '.join(allowed)})")
    return {str(k): v for k, v in spec.items()}


def _credentials(url: str, headers: dict[str, str]) -> set[str]:
    """Values an error body may echo back: header values (and their token after a scheme
    such as ``Bearer``), URL query values and a URL password."""
    found = set(url_passwords(url))
    query = urllib.parse.urlsplit(url).query
    found.update(v for _, v in urllib.parse.parse_qsl(query) if len(v) >= 8)
    for name, value in headers.items():
        if name.lower() in _PLAIN_HEADERS:
            continue
        found.add(value)
        found.update(part for part in re.split(r"[\s,;]+", value) if len(part) >= 8)
    return found


def _no_query(url: str) -> str:
    """URLs may carry tokens in their query string: never print it."""
    return url.split("?", 1)[0]
