"""What the query kinds (SQL, SPARQL) share: reading the predicted text and the limits."""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypedDict

from .._util.numeric import option_limit
from ..errors import (
    ConfigError,
    GoldError,
    PredictionError,
    QueryEvalError,
    QueryRefused,
    SearchBudgetExhausted,
    SourceUnavailable,
)
from ..model import MISSING, Case, Context, Scored
from ..results import ResultTable
from ..sources.base import DataSource

if TYPE_CHECKING:
    from ..metrics.table import CompareOptions


def prediction_text(prediction: object, case: Case, language: str, keys: tuple[str, ...]) -> str | None:
    """The predicted query: a string, or a mapping holding it under one of ``keys``.

    None when the case scores a recorded ``predicted_result`` instead of a query.
    """
    if prediction is MISSING or prediction is None:
        if case.predicted_result is not None:
            return None
        raise PredictionError(f"no predicted {language}")
    if isinstance(prediction, dict):
        given = [(key, str(prediction[key])) for key in keys if isinstance(prediction.get(key), str)]
        if not given:
            raise PredictionError(f"a predicted mapping needs a '{keys[0]}' (or '{keys[1]}') string")
        other = next((key for key, text in given if text != given[0][1]), None)
        if other is not None:  # which one a harness meant is unknown: neither is scored
            raise PredictionError(f"the predicted mapping gives different {language} texts under "
                                  f"'{given[0][0]}' and '{other}': give one (or the same text "
                                  "under both)")
        return given[0][1]
    if isinstance(prediction, str):
        return prediction
    raise PredictionError(f"expected predicted {language} text, got {type(prediction).__name__}")



def fenced_prediction_text(prediction: object, case: Case, language: str,
                           keys: tuple[str, ...]) -> tuple[str | None, str | None]:
    """:func:`prediction_text` with one enclosing Markdown fence stripped (LLM output), and
    the fence that was stripped (for :func:`~pytest_queryeval.kinds._fences.note`), or None."""
    text = prediction_text(prediction, case, language, keys)
    if text is None:
        return None, None
    from ._fences import strip_fence

    return strip_fence(text)

class QueryLimits(TypedDict, total=False):
    """A case's overrides of its source's limits, passed on as ``execute(**limits)``."""

    timeout: float
    max_rows: int


def limits(options: Mapping[str, Any]) -> QueryLimits:
    """``timeout`` (seconds) and ``max_rows`` overrides of a case; ConfigError names the key."""
    out = QueryLimits()
    for key in ("timeout", "max_rows"):
        if key in options:
            try:
                value = option_limit(key, options[key])
            except ValueError as exc:
                raise ConfigError(str(exc), key=key) from None
            if key == "timeout":
                out["timeout"] = value
            else:
                out["max_rows"] = int(value)
    return out


#: Default ``max_query_bytes``: the largest predicted query (UTF-8 bytes) that is parsed or
#: executed at all. Real predictions are a few KB; a 1 MB ``SELECT 1+1+...`` kept the guard's
#: parser busy for 36 s. A larger prediction fails with a "refused:" reason, unparsed.
DEFAULT_MAX_QUERY_BYTES = 64 * 1024


def max_query_bytes(options: Mapping[str, Any]) -> int:
    """The case's ``max_query_bytes`` (a positive integer); ConfigError names the key."""
    v = options.get("max_query_bytes", DEFAULT_MAX_QUERY_BYTES)
    if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
        raise ConfigError("must be a positive integer (bytes)", key="max_query_bytes")
    return v


def oversize(query: str, limit: int) -> int | None:
    """The UTF-8 bytes ``query`` holds when they are more than ``limit``, else None."""
    if len(query) * 4 <= limit:  # no UTF-8 encoding needed to know it fits
        return None
    size = len(query.encode("utf-8", "surrogatepass"))
    return size if size > limit else None


def check_query_size(query: str, limit: int) -> None:
    """Refuse a predicted query longer than ``limit`` UTF-8 bytes before anything parses it."""
    size = oversize(query, limit)
    if size is not None:
        raise QueryRefused(f"the predicted query holds {size:,} bytes, over max_query_bytes "
                           f"({limit:,}); it was not parsed or executed")


def execute_or_reason(src: DataSource, text: str, limits: QueryLimits | None = None,
                      check: Callable[[], object] | None = None) -> ResultTable | str:
    """An untrusted query's result, or why it failed: the reason the query scores 0 for.

    ``check`` runs first (a size or read-only check), its refusal a reason like the engine's
    error. An unreachable source still raises SourceUnavailable: that is the run's failure,
    not the query's, and must not score the prediction.
    """
    try:
        if check is not None:
            check()
        return src.execute(text, **(limits or {}))
    except SourceUnavailable:
        raise
    except QueryEvalError as e:
        return e.reason()


def short(query: str, limit: int = 120) -> str:
    """A query on one line, cut for error messages."""
    one = " ".join(query.split())
    return one if len(one) <= limit else one[: limit - 3] + "..."


def rank(metrics: Mapping[str, float], timing: tuple[str, ...], fallback: str | None = None,
         ) -> tuple[float, float]:
    """Order of gold alternatives: execution accuracy first, then the mean of the others."""
    scores = [v for k, v in metrics.items() if k not in timing and k != "execution_accuracy"
              and isinstance(v, float) and not math.isnan(v)]
    mean = sum(scores) / len(scores) if scores else 0.0
    first = metrics.get("execution_accuracy")
    if first is None:
        first = metrics.get(fallback, 0.0) if fallback else 0.0
    return first, mean


def best_of_golds(count: int, score: Callable[[int], Scored], seconds: float,
                  timing: tuple[str, ...], fallback: str | None = None
                  ) -> Scored | SearchBudgetExhausted:
    """Every gold alternative scored (``score(index)``), each comparison under the case's
    timeout (``seconds``: a comparison_deadline), the best by :func:`rank` kept, its index
    in ``details``; or, when one stopped undecided (its search budget, the deadline) and no
    other matched, why: a score is never guessed, and a match is a match. One loop for the
    query kinds that take gold alternatives, so that they cannot drift."""
    from .._isolation.comparison_deadline import comparison_deadline

    best: tuple[tuple[float, float], Scored] | None = None
    undecided: SearchBudgetExhausted | None = None
    for index in range(count):
        try:
            with comparison_deadline(seconds):
                scored = score(index)
        except SearchBudgetExhausted as e:
            undecided = undecided or e
            continue
        scored.details["gold_index"] = index
        if count > 1:
            scored.details["gold_alternatives"] = count
        key = rank(scored.metrics, timing, fallback)
        if best is None or key > best[0]:
            best = (key, scored)
    if undecided is not None and (
            best is None or best[1].metrics.get("execution_accuracy") != 1.0):
        return undecided
    assert best is not None
    return best[1]


def compare_options(options: Mapping[str, Any]) -> CompareOptions:
    """The case's ``compare:`` as CompareOptions; ConfigError names the key."""
    from ..metrics.table import CompareOptions

    try:
        return CompareOptions.from_config(options.get("compare"))
    except ValueError as e:
        raise ConfigError(str(e), key="compare") from None


def gold_cache_key(src: DataSource, query: str) -> str:
    """The cache key of one gold result (the engine, the data's fingerprint and the gold
    text): the gold audit hands the kinds the result it has just executed under this key, so
    a gold runs once per audit, not once per reader; ``--queryeval-gold-cache`` addresses its
    entries by it (:mod:`..engine.goldcache`)."""
    return json.dumps([getattr(src, "type", None), src.fingerprint(), query])


def run_gold(src: DataSource, query: str, ctx: Context, namespace: str,
             limits: QueryLimits | None = None,
             cacheable: Callable[[ResultTable], bool] | None = None,
             execute: Callable[[], ResultTable] | None = None) -> tuple[ResultTable, bool]:
    """Execute a gold query (trusted) through the cross-session cache: (table, from_cache).

    A failing or truncated gold is an error of the suite (GoldError); an unreachable source
    stays SourceUnavailable. A value the codec cannot keep exactly is never cached.
    ``execute``: how to run it when the cache has no result (default ``src.execute(query,
    trusted=True, **limits)``; the SQL kind sends the prediction along in the same round
    trip).
    """
    from ..sources.codec import CodecError, decode_table, encode_table

    # A context without caches (``--queryeval-no-cache``) neither keys nor encodes a result.
    caching = getattr(ctx, "caching", True)
    key = gold_cache_key(src, query) if caching else ""
    hit = ctx.cache_get(namespace, key) if caching else None
    if hit is not None:
        with contextlib.suppress(CodecError):  # stale format: execute again
            return decode_table(hit), True
    try:
        table = execute() if execute is not None \
            else src.execute(query, trusted=True, **(limits or {}))
    except SourceUnavailable:
        raise
    except QueryEvalError as e:
        raise GoldError(f"gold query: {e.reason()} -- {short(query)}") from None
    if table.truncated:
        what, option = table.cut_by()
        raise GoldError(f"gold result {what} (raise {option}) -- {short(query)}")
    if caching and (cacheable is None or cacheable(table)):
        with contextlib.suppress(CodecError):
            ctx.cache_set(namespace, key, encode_table(table))
    return table, False
