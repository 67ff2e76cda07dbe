"""The gold audit's per-language checks, which each kind's ``audit`` method runs: the query
kinds lint and execute their golds (:mod:`.query`, with the SQL smells of :mod:`.smells`), the
SQL kind checks its interpretations (:mod:`.interpretations`) and transpiled golds
(:mod:`.transpiled`), JSON lints its text (:mod:`.jsonlint`), SDMX checks its codelists
(:mod:`.sdmx`); :func:`self_check` scores a gold as its own prediction.

They live in kinds/, below the audit's driver (:mod:`pytest_queryeval.audit`, which sits above
the engine), because a kind runs them and they read the kinds' own helpers (the query kinds'
limits and cache keys, the SQL kind's readings and dialect pins): with them above, the kinds and
the audit imported each other (issue 51 item 1). ``pytest_queryeval.audit.query`` and
``pytest_queryeval.audit.self_check``, the paths docs/auditing.md gives custom kinds, still work.
"""

from __future__ import annotations

from collections.abc import Iterable

from ...errors import QueryEvalError, SourceUnavailable
from ...metricnames import (
    JUDGE_EX,
    JUDGE_USAGE_METRICS,
    REPEAT_METRICS,
    TIMING_METRICS,
    USAGE_METRICS,
)
from ...model import Case, Context, Kind, Scored
from .findings import CATALOG as CATALOG
from .findings import ERROR as ERROR
from .findings import MODES as MODES
from .findings import WARNING as WARNING
from .findings import AuditResult as AuditResult
from .findings import Finding as Finding

#: Metrics a gold is never required to score 1 on: timings, costs, efficiency ratios and
#: the repeat statistics measure the run, not the answer; the judge judges predictions, not
#: golds (a gold audit asks it nothing).
UNCHECKED_METRICS = frozenset({
    *TIMING_METRICS, "ves", "r_ves", *USAGE_METRICS, *REPEAT_METRICS,
    "neighbour_ex",  # a gold is never searched against itself (its audit lints neighbours)
    JUDGE_EX, *JUDGE_USAGE_METRICS,
})
#: A self-score this close to 1 is 1 (cosines of identical embeddings are 1 +- 1e-7).
TOLERANCE = 1e-6
#: Rows shown per side when tied rows are reported.
TIE_ROWS_SHOWN = 3


def self_check(case: Case, kind: Kind, ctx: Context, result: AuditResult,
                prediction: object, gold: int | None, *, explained: Iterable[str] = (),
                where: str = "") -> Scored | None:
    """Score the gold as its own prediction; every threshold metric must be 1. ``where``
    names an alternative answer that has no gold index (an SDMX alternative target)."""
    try:
        scored: Scored = kind.evaluate(case, prediction, ctx)
    except SourceUnavailable:
        raise
    except QueryEvalError as exc:
        result.add("gold-error", where + exc.reason(), gold)
        return None
    except Exception as exc:  # a kind's bug must not end the audit of the other cases
        result.add("gold-error", f"{where}internal error scoring the gold: {type(exc).__name__}: "
                                 f"{exc}", gold)
        return None
    if gold in (None, 0) and not where:
        result.metrics, result.labels = dict(scored.metrics), dict(scored.labels)
    if scored.reason:
        code = "gold-timeout" if scored.reason.startswith("timeout:") else "gold-error"
        result.add(code, f"{where}as its own prediction: {scored.reason}", gold)
        return scored
    skip = set(explained)
    for metric, bound in sorted(case.thresholds.items()):
        if metric in UNCHECKED_METRICS or metric in skip or bound.min is None:
            continue
        value = scored.metrics.get(metric)
        if value is None:
            result.add("gold-below-threshold", f"{where}{metric} is never computed for this case, so "
                       f"its threshold ({bound.describe()}) cannot be met", gold)
        elif not value >= 1 - TOLERANCE:
            result.add("gold-below-threshold", f"{where}{metric} = {value:.4f} scoring the gold "
                       f"against itself (threshold {bound.describe()})", gold)
    return scored
