"""Predictions from an OpenAI-compatible chat model (``predictions: {source: openai}``).

The official ``openai`` client (extra ``[llm]``) speaks to OpenAI and to every server that
serves the same ``/chat/completions`` API (Azure-compatible gateways, vLLM, Ollama, llama.cpp's
server): ``base_url`` picks the server. The prompt is built from templates (see
:mod:`pytest_queryeval.predict.prompt`) with the case's question, evidence and the introspected
schema of its datasource (:mod:`pytest_queryeval.sources.describe`), and the query is taken
out of the reply.

Why one module of this size: the request, its retries, the streamed read and the reply's
parsing share one source's limits and its secret. Retries are ours, not the client's
(``max_retries=0``), so that each attempt and each wait is recorded: a 429 waits what its
``Retry-After`` (or ``retry-after-ms``) asks, up to ``max_retry_wait`` seconds; 5xx, timeouts
and connection errors back off exponentially; other 4xx (a wrong key, an unknown model) fail at
once. The response is read as a stream and abandoned past ``max_bytes``. The API key never
reaches a report: it is a suite secret (scrubbed from every record) and is masked in this
source's own messages.
"""

from __future__ import annotations

import email.utils
import json
import math
import os
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar, Protocol

from .._isolation.httpx_deadline import bounded_client, watching
from .._isolation.socketdeadline import SocketDeadline
from .._util.boundedio import loads_json
from .._util.secrets import Scrubber
from ..errors import MissingDependency, PredictionError, QueryEvalError
from ..kindregistry import declares
from ..model import Case, Context
from . import prompt as prompts
from ._bounded import request_deadline
from .agent import case_spec, run_agent
from .base import (
    DEFAULT_MAX_BYTES,
    LiveSource,
    Prediction,
    maybe_json,
    positive_number,
    read_usage,
)
from .breaker import BREAKER_KEYS, Breaker, preflight_of, stop_after_of, where_of
from .cache import use_cache
from .pool import NOT_RETRIED, retry_pause

OPENAI_KEYS = frozenset({
    "source", "model", "base_url", "api_key", "system", "prompt", "example_prompt", "few_shot",
    "temperature", "seed", "max_tokens", "timeout", "retries", "backoff", "max_retry_wait",
    "max_bytes", "concurrency", "schema_rows", "schema_codes", "failures", "cache", "tools",
    "agent",
}) | BREAKER_KEYS
#: The tools offered to decline or to ask back (``tools:``; engine/abstain.py and
#: engine/clarify.py recognise a call of either by these names).
DECISION_TOOLS = [
    {"type": "function", "function": {
        "name": "abstain", "description": "Decline: the question cannot be answered from the data.",
        "parameters": {"type": "object", "properties": {"reason": {"type": "string"}}}}},
    {"type": "function", "function": {
        "name": "ask_user", "description": "Ask the user a clarifying question instead of "
        "answering, when the question is ambiguous.",
        "parameters": {"type": "object", "properties": {"question": {"type": "string"}},
                       "required": ["question"]}}},
]
DECISION_TOOL_NAMES = frozenset({"abstain", "ask_user"})
_INSTALL = "source: openai needs the openai package: pip install 'pytest-queryeval[llm]'"
#: Characters of the model's reply kept in the case details (the query is kept whole).
REPLY_CHARS = 4000
#: Characters of an error body kept in a message.
ERROR_CHARS = 300


class ChatPredictor(LiveSource):
    shown_keys: ClassVar[tuple[str, ...]] = ("model",)

    @classmethod
    def from_spec(cls, spec: dict[str, Any], base: Path, search: list[Path],
                  context: Context | None = None) -> ChatPredictor:
        source = cls(spec, context)
        return use_cache(source, spec, context, [source._key])

    def __init__(self, spec: dict[str, Any], context: Context | None = None) -> None:
        unknown = sorted(set(spec) - OPENAI_KEYS)
        if unknown:
            raise PredictionError(f"unknown openai predictions key(s): {', '.join(unknown)} "
                                  f"(allowed: {', '.join(sorted(OPENAI_KEYS - {'source'}))})")
        model = spec.get("model")
        if not isinstance(model, str) or not model.strip():
            raise PredictionError("predictions.model: the openai source needs the model's name")
        self.model = model.strip()
        base_url = spec.get("base_url")
        if base_url is not None and (not isinstance(base_url, str) or "://" not in base_url):
            raise PredictionError("predictions.base_url: must be the URL of an OpenAI-compatible "
                                  "API (http(s)://host/v1)")
        self.base_url: str | None = base_url
        key = spec.get("api_key", os.environ.get("OPENAI_API_KEY"))
        if key is None:
            raise PredictionError("predictions.api_key: not set: write api_key: ${VAR} with the "
                                  "variable holding the key (api_key: none for a server that "
                                  "takes no key)")
        if not isinstance(key, str) or not key:
            raise PredictionError("predictions.api_key: is empty (its environment variable is "
                                  "set to nothing?)")
        self._key = key
        self.system = _template(spec, "system")
        self.prompt = _template(spec, "prompt")
        self.example_prompt = _template(spec, "example_prompt")
        self.few_shot = _whole(spec, "few_shot", 0)
        self.schema_rows = _whole(spec, "schema_rows", 0)
        self.schema_codes = _whole(spec, "schema_codes", 40)
        self.temperature = _number(spec, "temperature", 0.0)
        self.seed = spec.get("seed")
        if self.seed is not None and (isinstance(self.seed, bool) or not isinstance(self.seed, int)):
            raise PredictionError(f"predictions.seed: must be a whole number, not {self.seed!r}")
        self.max_tokens = spec.get("max_tokens")
        if self.max_tokens is not None:
            self.max_tokens = int(positive_number(spec, "max_tokens", 1))
        self.timeout = positive_number(spec, "timeout", 120.0)
        self.max_bytes = int(positive_number(spec, "max_bytes", DEFAULT_MAX_BYTES))
        self.retries = _whole(spec, "retries", 3)
        self.backoff = _number(spec, "backoff", 1.0)
        self.max_retry_wait = _number(spec, "max_retry_wait", 60.0)
        # checked here; the prediction pool bounds the requests (--queryeval-concurrency
        # overrides it: a semaphore of the source's own would cap the override)
        self.concurrency = int(positive_number(spec, "concurrency", 4))
        self.tools = spec.get("tools", "auto")
        if self.tools not in ("auto", True, False):
            raise PredictionError(f"predictions.tools: must be auto, true or false, not "
                                  f"{self.tools!r}")
        from .agent import agent_spec

        #: ``agent:``: each case is a tool loop (:mod:`.agent`), None: one request per case.
        self.agent = agent_spec(spec.get("agent"))
        self._context = context
        self._scrubber = Scrubber([key])
        self._client: Any = None
        self._lock = threading.Lock()
        self._describing = threading.Lock()
        self._schemas: dict[str, str] = {}
        self.preflight_timeout = preflight_of(spec)
        self.breaker = Breaker(self._where(), where_of(spec), stop_after_of(spec))

    # -- the request ------------------------------------------------------------------------
    def _openai(self) -> Any:
        with self._lock:
            if self._client is None:
                try:
                    import openai
                except ImportError:
                    raise MissingDependency(_INSTALL) from None
                self._client = openai.OpenAI(api_key=self._key, base_url=self.base_url,
                                             max_retries=0, timeout=self.timeout,
                                             http_client=bounded_client(openai))
            return self._client

    def messages(self, case: Case) -> list[dict[str, str]]:
        """The chat sent for ``case`` (system, few-shot pairs, the case's prompt)."""
        fields = prompts.fields_of(case, self._schema(case))
        examples: list[tuple[str, str]] = []
        if self.few_shot:
            cases = getattr(self._context, "all_cases", None) or []
            for ex in prompts.pick_examples(case, cases, self.few_shot):
                answer = prompts.gold_answer(ex)
                assert answer is not None  # pick_examples keeps cases with a gold
                ex_fields = prompts.fields_of(ex, fields["schema"]
                                              if ex.datasource == case.datasource else "")
                examples.append((prompts.render(self.example_prompt,
                                                prompts.DEFAULT_EXAMPLE_PROMPT, ex_fields),
                                 answer))
        return prompts.messages(prompts.system_prompt(self.system, case.kind, fields), examples,
                                prompts.render(self.prompt, prompts.DEFAULT_PROMPT, fields),
                                case.history or ())  # a conversation's turns before this one

    def _schema(self, case: Case) -> str:
        """``{schema}``: the case's datasource described, once per datasource and session."""
        context = self._context
        if case.source_spec is None or context is None:
            return ""
        spec = case.source_spec
        datasets: list[str] = []
        from ..sources.sdmx_structure import is_structure

        if is_structure(spec):
            from ..sources.describe import target_datasets

            datasets = target_datasets(case.raw.get("conversation") or [])
        key = json.dumps([case.datasource, spec, datasets], sort_keys=True, default=str)
        with self._describing:  # once per datasource, whichever pool thread asks first
            if key not in self._schemas:
                self._schemas[key] = self._describe(context, case, spec, datasets)
            return self._schemas[key]

    def _describe(self, context: Context, case: Case, spec: dict[str, Any],
                  datasets: list[str]) -> str:
        from ..sources import describe, sdmx_structure, source_type

        try:
            if sdmx_structure.is_structure(spec):
                structure = context.shared(sdmx_structure.cache_key(spec),
                                           lambda: sdmx_structure.structure_from_spec(spec))
                return describe.describe_sdmx(structure, datasets, self.schema_codes)
            if source_type(spec.get("type")).schema_only:
                return ""  # no data to introspect: a template needing it says so in review
            return describe.describe(context.source(case), rows=self.schema_rows)
        except QueryEvalError as exc:
            raise PredictionError(f"cannot describe datasource {case.datasource!r} for "
                                  f"{{schema}}: {exc.reason()}") from None

    def predict(self, case: Case) -> Prediction:
        chat = self.messages(case)
        agent = case_spec(self.agent, case)  # an agent case, or agent: on the source
        if agent is not None:
            return self.cached(case, {"messages": chat, "agent": agent.to_json()},
                               lambda: run_agent(agent, case, self._context, self.complete,
                                                 self.model, list(chat)))
        tools = self._tools()  # part of the request, so of the cached answer's key
        return self.cached(case, {"messages": chat, **tools},
                           lambda: self._answer(chat, case, tools))

    def _answer(self, chat: list[dict[str, str]], case: Case,
                tools: dict[str, object]) -> Prediction:
        raw, seconds, details = self.complete(chat, **tools)
        return self._parse(raw, case, seconds, details)

    def _tools(self) -> dict[str, object]:
        """``tools: auto`` (the default) offers :data:`DECISION_TOOLS` when some collected
        case expects abstention or a question back (the same for every case and shard, so
        the offer never tells the model which answer a case expects); true always, false
        never."""
        offer = self.tools is True or (self.tools == "auto" and any(
            c.expect != "answer" for c in getattr(self._context, "all_cases", None) or []))
        return {"tools": DECISION_TOOLS} if offer else {}

    def complete(self, chat: list[dict[str, str]], **extra: object,
                 ) -> tuple[bytes, float, dict[str, Any]]:
        """One chat completion with this source's retries and limits: the raw reply, the
        seconds of the attempt that answered and ``{"attempts", "retry_waits"}``. ``extra``
        goes into the request (the judge's ``response_format``)."""
        client = self._openai()
        params = self._params(chat, extra)
        start = time.perf_counter()
        waits: list[float] = []
        last = ""
        breaker = self.breaker
        assert breaker is not None
        for attempt in range(self.retries + 1):
            if attempt and not retry_pause(waits[-1]):
                raise PredictionError(self._scrubber.text(f"{self._where()}: {last}; "
                                                          f"{NOT_RETRIED}"))
            breaker.attempt()  # a source that stopped asking raises its one reason here
            t0 = time.perf_counter()
            guard = request_deadline(self.timeout)
            try:
                raw = self._send(client, params, guard)
            except Exception as exc:
                last, wait = self._failed_attempt(exc, attempt, guard.connected)
                waits.append(wait)
                continue
            breaker.answered()
            seconds = time.perf_counter() - t0
            details: dict[str, Any] = {"attempts": attempt + 1}
            if waits:
                details["retry_waits"] = [round(w, 3) for w in waits]
            return raw, seconds, details
        tries = f" after {self.retries + 1} attempt(s) in {time.perf_counter() - start:.1f} s"
        raise PredictionError(self._scrubber.text(f"{self._where()} failed: {last}{tries}"))

    def _failed_attempt(self, exc: Exception, attempt: int, connected: bool,
                        ) -> tuple[str, float]:
        """Why an attempt failed and the wait before the next one; raises when retrying
        cannot help (a 4xx, a wait longer than ``max_retry_wait``, an error of ours). An
        attempt that never reached the server is counted by the breaker; an HTTP status
        resets it (the server is up)."""
        import openai

        assert self.breaker is not None
        if isinstance(exc, openai.APIStatusError):
            self.breaker.answered()
            last = self._status_message(exc)
            if exc.status_code == 429:
                wait = retry_after(exc.response.headers)
                if wait is not None and wait > self.max_retry_wait:
                    raise PredictionError(
                        f"{last}: the server asks to retry after {wait:g} s, more than "
                        f"max_retry_wait ({self.max_retry_wait:g} s)") from None
                return last, wait if wait is not None else self._backoff(attempt)
            if exc.status_code >= 500:
                return last, self._backoff(attempt)
            raise PredictionError(last) from None
        if isinstance(exc, openai.APITimeoutError | _Deadline):
            last = f"timed out: no complete answer within {self.timeout:g} s"
            if not connected:  # no connection within the timeout; else a slow model
                self.breaker.failed(last)
            return last, self._backoff(attempt)
        if isinstance(exc, openai.APIConnectionError):
            last = f"cannot connect to {self._where()}: {exc.__cause__ or exc}"
            if not connected:  # refused, unreachable; a dropped connection is not counted
                self.breaker.failed(last)
            return last, self._backoff(attempt)
        streamed = self._stream_failure(exc)  # the body broke off: the server had answered
        if streamed is None:
            raise exc
        return streamed, self._backoff(attempt)

    def preflight(self) -> str | None:
        """``GET {base_url}/models`` within ``preflight_timeout``: the first byte of any
        answer will do (a server without the route is up all the same); none is why not."""
        if self.preflight_timeout is None:
            return None
        from .breaker import answer_check

        base = (self.base_url or "https://api.openai.com/v1").rstrip("/")
        why = answer_check(f"{base}/models", self.preflight_timeout)
        return None if why is None else self._scrubber.text(why)

    def _params(self, chat: list[dict[str, str]], extra: dict[str, object]) -> dict[str, Any]:
        """The request's parameters: a seed or a token limit only when the suite set one, as
        some servers refuse parameters they do not know."""
        params: dict[str, Any] = {"model": self.model, "messages": chat,
                                  "temperature": self.temperature, **extra}
        if self.seed is not None:
            params["seed"] = self.seed
        if self.max_tokens is not None:
            params["max_tokens"] = self.max_tokens
        return params

    def _stream_failure(self, exc: Exception) -> str | None:
        """Why an attempt failed, for the HTTP library's own errors while the body streams in
        (the client wraps only those of sending): httpx2 with openai 3, httpx before; named by
        class, since neither library is imported here. None: not one of those, raised as is."""
        names = {c.__name__ for c in type(exc).__mro__}
        if "TimeoutException" in names:
            return f"timed out: no complete answer within {self.timeout:g} s"
        if "TransportError" in names:
            return f"the connection to {self._where()} broke: {exc}"
        return None

    def _send(self, client: Any, params: dict[str, Any], guard: SocketDeadline) -> bytes:
        """The response body, read as it arrives; past ``max_bytes`` the rest is abandoned.

        ``timeout`` is a hard deadline on the whole attempt (request, status line, headers and
        body), the one the http source has (:func:`._bounded.request_deadline`): it shuts the
        connection's socket, so a server trickling its headers a byte at a time ends with
        :class:`_Deadline`; it also fires when the session ends (the prediction pool closes).
        """
        chunks: list[bytes] = []
        total = 0
        try:
            with watching(guard), \
                    client.chat.completions.with_streaming_response.create(**params) as resp:
                for chunk in resp.iter_bytes():
                    total += len(chunk)
                    if total > self.max_bytes:
                        raise PredictionError(
                            f"{self._where()}: the reply holds more than max_bytes "
                            f"({self.max_bytes:,} bytes; {total:,} read, the rest abandoned)")
                    chunks.append(chunk)
                    if time.monotonic() > guard.deadline:
                        raise _Deadline
            if guard.fired:  # the socket was shut mid-body: what arrived is not the reply
                raise _Deadline
        except PredictionError:
            raise
        except Exception:
            if guard.fired or time.monotonic() > guard.deadline:
                raise _Deadline from None
            raise
        finally:
            guard.cancel()
        return b"".join(chunks)

    def _backoff(self, attempt: int) -> float:
        return float(self.backoff * 2 ** attempt)

    def _where(self) -> str:
        return f"{self.base_url or 'the OpenAI API'} (model {self.model})"

    def _status_message(self, exc: _StatusError) -> str:
        body = ""
        try:
            data = exc.body if isinstance(exc.body, dict) else {}
            body = str(data.get("message") or data.get("error") or "") or exc.response.text
        except Exception:  # an unreadable body still has its status
            body = ""
        body = " ".join(self._scrubber.text(str(body)).split())[:ERROR_CHARS]
        hint = ""
        if exc.status_code == 404:
            hint = f" (is {self.model!r} a model this server serves, and base_url its /v1?)"
        elif exc.status_code in (401, 403):
            hint = " (check the API key's variable)"
        elif 300 <= exc.status_code < 400:
            hint = (f" (a redirect to {_origin(exc.response.headers.get('location'))}, not "
                    "followed: requests go only to base_url; set it to the server that answers)")
        return self._scrubber.text(
            f"{self._where()}: HTTP {exc.status_code}{': ' + body if body else ''}{hint}")

    # -- the reply ---------------------------------------------------------------------------
    def _parse(self, raw: bytes, case: Case, seconds: float, details: dict[str, Any],
               ) -> Prediction:
        text = raw.decode("utf-8", errors="replace")
        try:
            data = loads_json(text)
        except ValueError:  # BoundedReadError too: nested deeper than Python reads
            raise PredictionError(f"{self._where()}: the reply is not JSON: "
                                  f"{self._scrubber.text(_excerpt(text))!r}") from None
        try:
            choice = data["choices"][0]
            content = choice["message"]["content"]
            calls = choice["message"].get("tool_calls")
        except (KeyError, IndexError, TypeError, AttributeError):
            raise PredictionError(f"{self._where()}: the reply has no choices[0].message.content: "
                                  f"{self._scrubber.text(_excerpt(text))!r}") from None
        named = [c["function"].get("name") for c in calls if isinstance(c, dict)
                 and isinstance(c.get("function"), dict)] if isinstance(calls, list) else []
        if set(named) & DECISION_TOOL_NAMES:
            # abstained or asked back by a tool call: the engine reads the calls as given
            details["tool_calls"] = named
            return Prediction({"tool_calls": calls}, seconds, details,
                              read_usage(data.get("usage")), self.model)
        if not isinstance(content, str):
            raise PredictionError(f"{self._where()}: the model sent no text (content is "
                                  f"{json.dumps(content)})")
        answered = data.get("model") if isinstance(data.get("model"), str) else None
        details["model"] = answered or self.model
        if isinstance(choice.get("finish_reason"), str):
            details["finish_reason"] = choice["finish_reason"]
        details["reply"] = content if len(content) <= REPLY_CHARS else \
            content[:REPLY_CHARS] + " ... [truncated]"
        query, how = (content, "whole reply: a query per reading") \
            if "interpretations" in case.options else prompts.extract_query(content, case.kind)
        details["extraction"] = how
        value: Any = query
        if declares(case.kind, "json_answers"):
            value = maybe_json(query)
        usage = read_usage(data.get("usage"))
        return Prediction(value, seconds, details, usage, self.model)


class _Reply(Protocol):
    """What an error message reads of the reply (``httpx.Response``)."""

    @property
    def text(self) -> str: ...

    @property
    def headers(self) -> Mapping[str, str]: ...


class _StatusError(Protocol):
    """What an error message reads of ``openai.APIStatusError`` (an optional package)."""

    @property
    def status_code(self) -> int: ...

    @property
    def body(self) -> object: ...

    @property
    def response(self) -> _Reply: ...


class _Deadline(Exception):
    """The reply was still arriving when ``timeout`` passed."""


def retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds a 429 asks to wait: ``retry-after-ms``, ``Retry-After`` in seconds or as an
    HTTP date; None when it says nothing usable."""
    ms = headers.get("retry-after-ms")
    if ms is not None:
        try:
            value = float(ms) / 1000
            if math.isfinite(value) and value >= 0:
                return value
        except ValueError:
            pass
    text = headers.get("retry-after")
    if text is None:
        return None
    try:
        value = float(text)
        return value if math.isfinite(value) and value >= 0 else None
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    return max(when.timestamp() - time.time(), 0.0)


def _template(spec: dict[str, Any], key: str) -> str | None:
    value = spec.get(key)
    return None if value is None else prompts.check_template(value, key)


def _whole(spec: dict[str, Any], key: str, default: int) -> int:
    value = spec.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise PredictionError(f"predictions.{key}: must be a whole number >= 0, not {value!r}")
    return value


def _number(spec: dict[str, Any], key: str, default: float) -> float:
    value = spec.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) \
            or value < 0:
        raise PredictionError(f"predictions.{key}: must be a number >= 0, not {value!r}")
    return float(value)


def _origin(location: str | None) -> str:
    """scheme://host:port of a redirect's target (its path and query may carry secrets)."""
    import urllib.parse

    if not location:
        return "nowhere (no Location header)"
    parts = urllib.parse.urlsplit(location)
    if not parts.scheme or not parts.hostname:
        return "a path on the same server"
    try:
        port = f":{parts.port}" if parts.port else ""
    except ValueError:  # a port that is not a number
        port = ""
    return f"{parts.scheme}://{parts.hostname}{port}"


def _excerpt(text: str, limit: int = 200) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit] + "..."
