"""Over how many cases each mean was computed, and why the others are missing.

A score over 64 of 68 cases reads as a score over 68 unless the report says so, and Spider's
parser scores 0 for every prediction it cannot read (30 to 59 % of some models' predictions):
every report (terminal, JSON, HTML, Markdown, Excel, ``queryeval merge``) prints the same
figures from the aggregates' ``n``, ``missing`` and ``unparsable``, worded here once.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from .._util.wording import plural
from ..figures.columns import is_detail_metric, ordered_metrics
from ..metricnames import MISSING_REASONS, lower_is_better

#: How the reports word a case that Spider's parser cannot read (it is scored 0 and counted).
UNPARSABLE = "not parsable by the reference (scored 0, as the reference does)"
#: The column of those cases in the tables of the Markdown, HTML and Excel reports.
UNPARSABLE_HEADER = "not parsable by the reference (scored 0)"


class Denominator(NamedTuple):
    kind: str
    metric: str
    n: int
    cases: int
    missing: str  #: ``2 prediction error, 1 gold error`` (empty when none is missing)
    unparsable: int


def missing_text(stats: Mapping[str, Any]) -> str:
    """``1 prediction error, 2 no value``: a metric's missing cases by reason, in one order."""
    missing: Mapping[str, int] = stats.get("missing") or {}
    return ", ".join(f"{missing[why]} {why}" for why in MISSING_REASONS if missing.get(why))


def over_text(stats: Mapping[str, Any] | None, cases: int) -> str:
    """``8 of 10 cases (2 missing: 1 prediction error, 1 gold error)``; reports written before
    denominators (no ``missing``) say only ``n of cases``."""
    if not stats:
        return f"0 of {plural(cases, 'case')}"
    out = f"{stats.get('n', 0)} of {plural(cases, 'case')}"
    notes = []
    lacking = missing_text(stats)
    if lacking:
        notes.append(f"{cases - int(stats.get('n', 0))} missing: {lacking}")
    if stats.get("unparsable"):
        notes.append(f"{stats['unparsable']} {UNPARSABLE}")
    return out + (f" ({'; '.join(notes)})" if notes else "")


def score_metrics(metrics: Mapping[str, Any]) -> list[str]:
    """The metrics whose denominators the reports list: scores, not timings or usage, and not
    the per-component detail metrics (the JSON report has every metric's)."""
    return [m for m in ordered_metrics(metrics)
            if not is_detail_metric(m) and not lower_is_better(m)]


def denominators(agg: Mapping[str, Any]) -> list[Denominator]:
    """One row per kind and score metric, over the kind's cases."""
    out = []
    for kind, stats in (agg.get("by_kind") or {}).items():
        metrics = stats.get("metrics") or {}
        for m in score_metrics(metrics):
            s = metrics[m]
            out.append(Denominator(str(kind), m, int(s.get("n", 0)), int(stats.get("count", 0)),
                                   missing_text(s), int(s.get("unparsable") or 0)))
    return out


def kind_line(stats: Mapping[str, Any], metrics: list[str], short: Mapping[str, str]) -> str:
    """The terminal's line under a kind's table: ``means over 10 of 10 cases`` when every
    metric shown has the same denominator, else one clause per metric."""
    cases = int(stats.get("count", 0))
    texts = {m: over_text((stats.get("metrics") or {}).get(m), cases) for m in metrics}
    if not texts:
        return ""
    if len(set(texts.values())) == 1:
        return f"  means over {next(iter(texts.values()))}"
    return "  means over: " + "; ".join(f"{short.get(m, m)} {t}" for m, t in texts.items())
