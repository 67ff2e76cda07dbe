"""Answers of live sources kept between runs (``cache: true``, ``--queryeval-prediction-cache``).

Why: a team reruns a live-model suite to try a threshold or a gate, and every answer was
requested (and paid for) again. An answer of the ``openai``, ``http`` or ``command`` source is
stored under the sha256 of what decides it: the source's parameters (its ``predictions:``
mapping without the keys that only say how to ask: timeouts, retries, the key), the request
itself (the chat sent, the HTTP request, the command's stdin) and the case's kind (how the
answer is read). An unchanged request is answered from the file on the next run; any change
asks again.

The directory is untrusted input (another process, a shared CI cache, an attacker with write
access to it): an entry is a regular file read up to a cap (:mod:`.._util.safefile`, no link
followed), and it is used only when its name, its ``key`` and the hash of the request it
holds all match the request being made, and every field of its answer has its type. Anything
else is ignored with a warning and the answer requested again, which then replaces it. Writes
are atomic (a reader sees the old entry or the new one, never half), so two xdist workers
writing the same entry leave one whole. Secrets never reach the key or the file: the key's
material and the stored answer are scrubbed of the case's suite secrets and the source's
credentials, and ``api_key`` is not a parameter of the answer.

A repeated case (``repeat:``, ``--queryeval-repeat``) asks for several answers of one request:
its runs are never cached. ``--queryeval-refresh-predictions`` asks every request again and
rewrites its entry.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import stat
import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from .._util.safefile import read_text, write_atomic
from .._util.secrets import Scrubber
from ..errors import PredictionError, QueryEvalWarning
from .base import LiveSource, Prediction, read_usage

if TYPE_CHECKING:
    import urllib.request

    from ..model import Case, Context

#: The ``format`` of an entry; another value is not read (a later layout asks again).
FORMAT = "pytest-queryeval prediction cache 1"
#: Keys of a ``predictions:`` mapping that say how to ask, not what is asked: left out of the
#: key (a longer timeout does not change the answer), ``api_key`` above all (a secret).
TRANSPORT_KEYS = frozenset({"api_key", "timeout", "retries", "backoff", "max_retry_wait",
                            "concurrency", "failures", "cache", "max_bytes"})
#: ``details.prediction.cache`` of a case: how its answer was had.
HIT, STORED, REFRESHED, REPEATED = "hit", "stored", "refreshed", "repeat"


@dataclass(frozen=True)
class CacheSettings:
    """The run's options for the cache, kept on the evaluator (``prediction_cache``)."""

    #: ``--queryeval-prediction-cache DIR``: every live source caches, here.
    directory: Path | None = None
    #: ``--queryeval-refresh-predictions``: ask again, rewrite the entries.
    refresh: bool = False
    #: ``--queryeval-repeat N``: every case is repeated (no answer is cached).
    repeat: int | None = None


S = TypeVar("S", bound=LiveSource)


def use_cache(source: S, spec: Mapping[str, object], context: Context | None,
              secrets: Iterable[str] = ()) -> S:
    """``source``, keeping its answers as ``spec`` and the run's options say (its
    ``from_spec`` calls this; ``secrets``: its credentials, never in a key or an entry)."""
    source.answers = PredictionCache.for_source(spec, context, secrets)
    return source


def _settings(context: Context | None) -> CacheSettings:
    found = getattr(context, "prediction_cache", None)
    return found if isinstance(found, CacheSettings) else CacheSettings()


class PredictionCache:
    """The entries of one source: its parameters are part of every key."""

    def __init__(self, directory: Path, params: Mapping[str, object], *,
                 refresh: bool = False, repeat: int | None = None,
                 secrets: Iterable[str] = ()) -> None:
        self.directory = directory
        self.refresh = refresh
        self.repeat = repeat
        self._secrets = frozenset(secrets)
        self.params = Scrubber(self._secrets).data(
            {k: v for k, v in sorted(params.items()) if k not in TRANSPORT_KEYS})

    @classmethod
    def for_source(cls, spec: Mapping[str, object], context: Context | None,
                   secrets: Iterable[str] = ()) -> PredictionCache | None:
        """The cache of a source built from ``spec``; None when it does not cache (no
        ``cache: true`` and no ``--queryeval-prediction-cache``, ``cache: false``, or no
        pytest cache directory to keep it in)."""
        wanted = spec.get("cache")
        if wanted is not None and not isinstance(wanted, bool):
            raise PredictionError(f"predictions.cache: must be true or false, not {wanted!r}")
        settings = _settings(context)
        if wanted is False or (not wanted and settings.directory is None):
            return None
        directory = settings.directory
        if directory is None:
            base = context.cache_dir if context is not None else None
            if base is None:  # -p no:cacheprovider, --queryeval-no-cache: nowhere to keep it
                return None
            directory = base / "predictions"
        return cls(directory, spec, refresh=settings.refresh, repeat=settings.repeat,
                   secrets=secrets)

    def key(self, case: Case, request: object) -> tuple[str, str]:
        """``(sha256, canonical JSON)`` of what decides ``case``'s answer."""
        material = Scrubber(self._secrets | case.secrets).data(
            {"format": FORMAT, "kind": case.kind, "params": self.params, "request": request})
        text = json.dumps(material, sort_keys=True, separators=(",", ":"), default=str,
                          ensure_ascii=False)
        return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest(), text

    def path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    def answer(self, case: Case, request: object, ask: Callable[[], Prediction]) -> Prediction:
        """The stored answer to ``request``, else ``ask()``'s, stored (a failure is not)."""
        if max(self.repeat or 0, case.repeat) > 1:
            return _marked(ask(), REPEATED)
        key, text = self.key(case, request)
        path = self.path(key)
        problem = None
        if not self.refresh:
            found, problem = read_entry(path, key, text)
            if found is not None:
                return _marked(found, HIT)
            if problem is not None:
                warnings.warn(QueryEvalWarning(
                    f"queryeval: prediction cache entry {key[:16]}... of case {case.id!r} "
                    f"ignored ({problem}); the answer is requested again"), stacklevel=2)
        prediction = ask()
        stored = Scrubber(self._secrets | case.secrets).data(
            {"format": FORMAT, "key": key, "request": json.loads(text),
             "answer": answer_data(prediction)})
        status = REFRESHED if self.refresh else STORED
        try:
            write_atomic(path, json.dumps(stored, sort_keys=True, default=str,
                                          ensure_ascii=False))
        except OSError as exc:
            status = f"not stored: {type(exc).__name__}"
        prediction = _marked(prediction, status)
        if problem is not None:
            prediction.details["cache_ignored"] = problem
        return prediction


def _marked(prediction: Prediction, status: str) -> Prediction:
    prediction.details = {**prediction.details, "cache": status}
    return prediction


def answer_data(prediction: Prediction) -> dict[str, object]:
    """A prediction as an entry (and a line of the run's journal) stores it."""
    return {"value": prediction.value, "seconds": prediction.seconds,
            "details": prediction.details, "usage": prediction.usage,
            "model": prediction.model, "hint": prediction.hint}


def read_entry(path: Path, key: str, material: str) -> tuple[Prediction | None, str | None]:
    """``(answer, None)`` for a usable entry; ``(None, why)`` for one that is not; ``(None,
    None)`` when there is none."""
    try:
        if stat.S_ISLNK(os.lstat(path).st_mode):
            return None, "a symbolic link, not followed"
        text = read_text(path, "predictions")
    except FileNotFoundError:
        return None, None
    except (OSError, UnicodeDecodeError) as exc:
        return None, f"unreadable: {exc}"
    try:
        entry = json.loads(text)
    except ValueError:
        return None, "not JSON (truncated?)"
    if not isinstance(entry, dict) or entry.get("format") != FORMAT:
        return None, "not an entry of this format"
    if entry.get("key") != key or path.stem != key:
        return None, "its key is not its name"
    request = json.dumps(entry.get("request"), sort_keys=True, separators=(",", ":"),
                         ensure_ascii=False)
    if request != material:
        return None, "it answers another request"
    try:
        return prediction_of(entry.get("answer")), None
    except ValueError as exc:
        return None, str(exc)


def prediction_of(data: object) -> Prediction:
    """The stored answer, every field checked (ValueError naming the first wrong one)."""
    if not isinstance(data, dict):
        raise ValueError("answer: not a mapping")
    value = data.get("value")
    if not isinstance(value, str | dict | list):
        raise ValueError("answer.value: not a query or a JSON answer")
    seconds = data.get("seconds")
    if seconds is not None and (isinstance(seconds, bool) or not isinstance(seconds, int | float)
                                or not math.isfinite(seconds) or seconds < 0):
        raise ValueError("answer.seconds: not a duration")
    details, usage = data.get("details"), data.get("usage")
    if not isinstance(details, dict) or not isinstance(usage, dict):
        raise ValueError("answer.details/usage: not mappings")
    if read_usage(usage) != usage:
        raise ValueError("answer.usage: not token counts and a cost")
    model, hint = data.get("model"), data.get("hint")
    if not isinstance(model, str | None) or not isinstance(hint, str | None):
        raise ValueError("answer.model/hint: not text")
    return Prediction(value, None if seconds is None else float(seconds), dict(details),
                      {k: float(v) for k, v in usage.items()}, model, hint)


def request_material(request: urllib.request.Request) -> dict[str, object]:
    """An HTTP request as key material (the credentials are scrubbed with the source's)."""
    data = request.data
    body = data.decode("utf-8", "replace") if isinstance(data, bytes) else None
    return {"method": request.get_method(), "url": request.full_url,
            "headers": sorted(request.header_items()), "body": body}


def summary(records: Iterable[Mapping[str, object]]) -> dict[str, int] | None:
    """The report's ``prediction_cache``: how many answers came from the cache, how many were
    requested (stored, refreshed, repeated runs) and how many entries were ignored; None when
    no case's source caches (the report has no such key)."""
    out = {"answers": 0, "from_cache": 0, "requested": 0, "refreshed": 0, "repeated": 0,
           "ignored": 0}
    for rec in records:
        details = rec.get("details")
        pred = details.get("prediction") if isinstance(details, Mapping) else None
        status = pred.get("cache") if isinstance(pred, Mapping) else None
        if not isinstance(status, str):
            continue
        out["answers"] += 1
        out["from_cache" if status == HIT else "requested"] += 1
        out["refreshed"] += status == REFRESHED
        out["repeated"] += status == REPEATED
        out["ignored"] += isinstance(pred, Mapping) and "cache_ignored" in pred
    return out if out["answers"] else None


def summary_lines(block: object) -> list[str]:
    """``prediction cache: 3 of 4 answers from the cache, 1 requested``."""
    if not isinstance(block, Mapping) or not block.get("answers"):
        return []
    extra = [f"{block[k]} {label}" for k, label in (
        ("refreshed", "refreshed"), ("repeated", "repeated (never cached)"),
        ("ignored", "unusable entries ignored")) if block.get(k)]
    return [f"prediction cache: {block.get('from_cache', 0)} of {block['answers']} answers "
            f"from the cache, {block.get('requested', 0)} requested"
            + (f" ({', '.join(extra)})" if extra else "")]
