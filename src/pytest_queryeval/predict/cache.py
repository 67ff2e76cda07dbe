"""Answers of live sources kept between runs (``cache: true``, ``--queryeval-prediction-cache``).

Why: a team reruns a live-model suite to try a threshold or a gate, and every answer was
requested (and paid for) again. An answer of the ``openai``, ``http`` or ``command`` source is
stored under the sha256 of what decides it: the source's parameters (its ``predictions:``
mapping without the keys that only say how to ask: timeouts, retries, the key), the request
itself (the chat sent, the HTTP request, the command's stdin) and the case's kind (how the
answer is read). An unchanged request is answered from the file on the next run; any change
asks again.

The directory is untrusted input (another process, a shared CI cache, an attacker with write
access to it), held to the shared gold cache's guarantees (:mod:`.._util.ownedfiles`, issue
50): an entry is a regular file read up to a cap, neither it nor its folder a link, owned by
the user running the tests and not writable by group or others; its ``digest`` (SHA-256 of
its format, key, request and answer) matches what it holds, so an edited answer is not used;
and it is used only when its name, its ``key`` and the hash of the request it holds all match
the request being made, and every field of its answer has its type. Anything else is ignored
with a warning naming the entry and why, and the answer requested again, which then replaces
it. A directory others may write (or another user's, or a linked folder) is named in one
warning. An entry of the previous format (no digest) is a silent miss, requested again.
Writes are atomic (a reader sees the old entry or the new one, never half) and never
writable by group or others, so two xdist workers writing the same entry leave one whole.
Secrets never reach the key or the file: the key's material and the stored answer are
scrubbed of the case's suite secrets and the source's credentials, and ``api_key`` is not a
parameter of the answer.

A repeated case (``repeat:``, ``--queryeval-repeat``) asks for several answers of one request:
its runs are never cached. ``--queryeval-refresh-predictions`` asks every request again and
rewrites its entry.
"""

from __future__ import annotations

import errno
import hashlib
import json
import math
import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from .._util import ownedfiles
from .._util.safefile import LIMITS
from .._util.secrets import Scrubber
from ..errors import PredictionError, QueryEvalWarning
from .base import LiveSource, Prediction, read_usage

if TYPE_CHECKING:
    import urllib.request

    from ..model import Case, Context

#: The ``format`` of an entry; another value is not read (a later layout asks again).
FORMAT = "pytest-queryeval prediction cache 2"
#: The previous format (no digest): a miss, asked again and replaced, without a warning.
OLD_FORMATS = frozenset({"pytest-queryeval prediction cache 1"})
#: Keys of a ``predictions:`` mapping that say how to ask, not what is asked: left out of the
#: key (a longer timeout does not change the answer), ``api_key`` above all (a secret).
TRANSPORT_KEYS = frozenset({"api_key", "timeout", "retries", "backoff", "max_retry_wait",
                            "concurrency", "failures", "cache", "max_bytes", "preflight",
                            "preflight_timeout", "stop_after"})
#: Errors of writing an entry that say the folder stores nothing (read-only, full, denied).
_FOLDER_ERRORS = frozenset({errno.EROFS, errno.EACCES, errno.EPERM, errno.ENOSPC,
                            errno.EDQUOT, errno.EFBIG})
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


def warn_kept_nowhere(specs: Iterable[Mapping[str, object] | None],
                      context: Context | None) -> None:
    """A ``QueryEvalWarning`` when a source of the run asks for ``cache: true`` and the run
    has nowhere to keep an answer (no pytest cache: ``-p no:cacheprovider``, common in CI, or
    ``--queryeval-no-cache``; no ``--queryeval-prediction-cache DIR``): every answer would be
    requested again, run after run, with no word. Called at collection, where pytest shows
    a warning (a source is built later, in the pool's threads too)."""
    if not any(spec is not None and spec.get("cache") is True for spec in specs):
        return
    if _settings(context).directory is not None or getattr(context, "cache_dir", None):
        return
    warnings.warn(QueryEvalWarning(
        "predictions.cache: true keeps nothing in this run: pytest's cache is off "
        "(-p no:cacheprovider or --queryeval-no-cache), so every answer is requested again; "
        "give --queryeval-prediction-cache DIR to keep them"), stacklevel=2)


class PredictionCache:
    """The entries of one source: its parameters are part of every key."""

    def __init__(self, directory: Path, params: Mapping[str, object], *,
                 refresh: bool = False, repeat: int | None = None,
                 secrets: Iterable[str] = ()) -> None:
        self.directory = directory
        self.refresh = refresh
        self.repeat = repeat
        self._secrets = frozenset(secrets)
        #: The warning that nothing can be stored was given (once per cache).
        self._warned = False
        self.params = Scrubber(self._secrets).data(
            {k: v for k, v in sorted(params.items()) if k not in TRANSPORT_KEYS})
        #: Directories already looked at (each warned about once).
        self._checked: set[Path] = set()

    def _unstorable(self, exc: OSError) -> None:
        """Say once that nothing can be stored (a read-only or full folder): each answer's
        ``cache`` detail says ``not stored``, but a run that was meant to save its answers for
        the next one went on silently, and that one paid for every answer again."""
        if self._warned or exc.errno not in _FOLDER_ERRORS:  # not one planted entry's
            return
        self._warned = True
        warnings.warn(QueryEvalWarning(
            f"queryeval: prediction cache {self.directory}: nothing can be stored "
            f"({exc.strerror or type(exc).__name__}): the answers of this run will be "
            "requested again by the next one"), stacklevel=3)

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
                return None  # (said once, at collection: warn_kept_nowhere)
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
            self._check_directories(path.parent)
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
        # the digest of what is stored as it will be read back (JSON round trip)
        stored = json.loads(json.dumps(stored, default=str))
        stored["digest"] = entry_digest(stored)
        status = REFRESHED if self.refresh else STORED
        try:
            ownedfiles.write_private(path, json.dumps(stored, sort_keys=True,
                                                      ensure_ascii=False).encode("utf-8"))
        except OSError as exc:
            status = f"not stored: {type(exc).__name__}"
            self._unstorable(exc)
        prediction = _marked(prediction, status)
        if problem is not None:
            prediction.details["cache_ignored"] = problem
        return prediction


    def _check_directories(self, sub: Path) -> None:
        """One warning for the cache directory or an entry's folder that others may plant
        entries in (its entries are each checked all the same)."""
        for directory in (self.directory, sub):
            if directory in self._checked:
                continue
            self._checked.add(directory)
            problem = ownedfiles.directory_problem(directory,
                                                   link_allowed=directory == self.directory)
            if problem:
                shown = directory.name if directory == self.directory else \
                    f"{self.directory.name}/{directory.name}"
                warnings.warn(QueryEvalWarning(
                    f"queryeval: the prediction cache directory {shown!r} is {problem}: "
                    "whoever can write there can plant an answer that makes a wrong model "
                    "pass; only entries written by this user, not writable by others, with a "
                    "matching digest are used (chmod go-w, or a directory of your own)"),
                    stacklevel=4)


def entry_digest(entry: Mapping[str, object]) -> str:
    """The digest an entry stores: of its format, key, request and answer."""
    return ownedfiles.content_digest(entry.get("format"), entry.get("key"),
                                     entry.get("request"), entry.get("answer"))


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
    from .._util.boundedio import BoundedReadError, loads_json

    try:
        text, untrusted = ownedfiles.read_own(path, LIMITS["predictions"] or 0)
    except FileNotFoundError:
        return None, None
    except (OSError, UnicodeDecodeError) as exc:
        return None, f"unreadable: {type(exc).__name__}"
    if untrusted:
        return None, untrusted
    try:
        entry = loads_json(text)
    except BoundedReadError:
        return None, "not JSON (truncated?)"
    if isinstance(entry, dict) and entry.get("format") in OLD_FORMATS:
        return None, None
    if not isinstance(entry, dict) or entry.get("format") != FORMAT:
        return None, "not an entry of this format"
    if entry.get("digest") != entry_digest(entry):
        return None, "its content does not match its digest (edited or damaged)"
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


def _answers(record: Mapping[str, object]) -> list[tuple[str, bool]]:
    """``(cache status, entry ignored)`` of each answer a record holds: a one-question case's,
    or each turn's of a conversation (a clarification's reply is one), each its own request."""
    details = record.get("details")
    if not isinstance(details, Mapping):
        return []
    pred = details.get("prediction")
    status = pred.get("cache") if isinstance(pred, Mapping) else None
    if isinstance(status, str):
        repeat = details.get("repeat")
        runs = repeat.get("n") if status == REPEATED and isinstance(repeat, Mapping) else 1
        ignored = isinstance(pred, Mapping) and "cache_ignored" in pred
        # a repeated case's runs are each a request
        return [(status, ignored)] * (runs if type(runs) is int and runs > 0 else 1)
    turns = details.get("turns")
    return [(t["prediction_cache"], False) for t in turns if isinstance(t, Mapping)
            and isinstance(t.get("prediction_cache"), str)] if isinstance(turns, list) else []


def summary(records: Iterable[Mapping[str, object]]) -> dict[str, int] | None:
    """The report's ``prediction_cache``: how many answers (a conversation's turns each) came
    from the cache, how many were requested in this run (stored, refreshed, repeated runs),
    how many were carried with their case from an earlier attempt (``--queryeval-resume``:
    neither read nor requested now) and how many entries were ignored; None when no case's
    source caches (the report has no such key)."""
    out = {"answers": 0, "from_cache": 0, "requested": 0, "carried": 0, "refreshed": 0,
           "repeated": 0, "ignored": 0}
    for rec in records:
        carried = bool(rec.get("carried"))
        for status, ignored in _answers(rec):
            out["answers"] += 1
            if carried:
                out["carried"] += 1
                continue
            out["from_cache" if status == HIT else "requested"] += 1
            out["refreshed"] += status == REFRESHED
            out["repeated"] += status == REPEATED
            out["ignored"] += ignored
    return out if out["answers"] else None


def summary_lines(block: object) -> list[str]:
    """``prediction cache: 3 of 4 answers from the cache, 1 requested``."""
    if not isinstance(block, Mapping) or not block.get("answers"):
        return []
    extra = [f"{block[k]} {label}" for k, label in (
        ("refreshed", "refreshed"), ("repeated", "repeated (never cached)"),
        ("ignored", "unusable entries ignored")) if block.get(k)]
    carried = (f", {block['carried']} carried from an earlier attempt"
               if block.get("carried") else "")
    return [f"prediction cache: {block.get('from_cache', 0)} of {block['answers']} answers "
            f"from the cache, {block.get('requested', 0)} requested{carried}"
            + (f" ({', '.join(extra)})" if extra else "")]
