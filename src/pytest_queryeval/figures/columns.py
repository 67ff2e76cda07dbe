"""Which metrics and difficulties reports show, and in what order.

Every report writer (terminal, Markdown, HTML, Excel) and the baseline comparison list metrics
and difficulty levels the same way, so the order and the classification (headline, detail,
Spider component) are written once, here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from ..metricnames import lower_is_better
from ..model import NO_DIFFICULTY  # the one spelling of a missing difficulty

if TYPE_CHECKING:
    from ..model import RecordLike

#: Metrics shown first, in this order, wherever reports list metrics.
HEADLINE_METRICS = (
    "execution_accuracy",
    "judge_ex",
    "bird_ex",
    "soft_f1",
    "cell_f1",
    "exact_set_match",
    "arity_f1",
    "entity_set_f1",
    "row_match_f1",
    "exact_match_f1",
    "percent_overlap",
    "percent_subset",
    "same_row_count",
    "ves",
    "r_ves",
    "json_similarity",
    "structural_similarity",
    "semantic_similarity",
    "macro_f1",
    "macro_precision",
    "macro_recall",
)
_DIFFICULTY_ORDER = ("easy", "simple", "medium", "moderate", "hard", "challenging", "extra")


def is_detail_metric(metric: str) -> bool:
    """Per-dimension (``precision[DIM]``) and per-component (``where_f1``) metrics."""
    return "[" in metric or metric.endswith(("_acc", "_rec")) or (
        metric.endswith("_f1") and metric not in HEADLINE_METRICS
    )


@lru_cache(maxsize=1)
def _spider_components() -> frozenset[str]:
    from ..metrics.spider.match import COMPONENTS

    return frozenset(f"{c}_{m}" for c in COMPONENTS for m in ("acc", "rec", "f1"))


def is_spider_component(metric: str) -> bool:
    """The Spider evaluator's 30 partial-matching scores (``where_f1``...): shown with
    ``--queryeval-spider-table`` only, and gated by a named max-drop only, since only the
    Spider-parsable cases have them and they would drown the headline metrics."""
    return metric in _spider_components()


def ordered_metrics(names: Iterable[str]) -> list[str]:
    """Headline metrics first, then others, per-dimension/component ones, timings last."""
    unique = set(names)

    def key(m: str) -> tuple[int, int, str]:
        if m in HEADLINE_METRICS:
            return (0, HEADLINE_METRICS.index(m), m)
        if lower_is_better(m):
            return (3, 0, m)
        return (2 if is_detail_metric(m) else 1, 0, m)

    return sorted(unique, key=key)


def gated_metrics(report: Mapping[str, Any]) -> set[str]:
    """The metrics that decide the run: those a gate bounds or a case has a threshold on.
    Reports show them first; every other metric sits behind a toggle, a sheet or ``-v``."""
    gated = {str(g["metric"]) for g in report.get("gates") or []  # a k: gate bounds pass@k
             if g.get("metric") and g.get("stat") != "pass_rate" and g.get("k") is None}
    for case in report.get("cases") or []:
        gated.update(str(m) for m in case.get("thresholds") or {})
    return gated


def lead_metrics(names: Iterable[str], gated: set[str]) -> list[str]:
    """Of a group's metrics, the accuracy columns a summary leads with: the gated ones, else
    (nothing gated) the first headline metric, so a summary never leads with none."""
    ordered = [m for m in ordered_metrics(names) if not lower_is_better(m)]
    lead = [m for m in ordered if m in gated]
    if not lead:
        lead = [m for m in ordered if not is_detail_metric(m)][:1]
    return lead


def ordered_difficulties(names: Iterable[str]) -> list[str]:
    """Known levels in increasing difficulty, then others alphabetically, unknown last."""
    def key(d: str) -> tuple[int, str]:
        if d in _DIFFICULTY_ORDER:
            return (_DIFFICULTY_ORDER.index(d), d)
        return (len(_DIFFICULTY_ORDER) + (1 if d == NO_DIFFICULTY else 0), d)

    return sorted(set(names), key=key)


def difficulty_of(case: RecordLike) -> str:
    d = case.get("difficulty")
    return str(d) if d not in (None, "") else NO_DIFFICULTY


def group_keys(case: RecordLike, scope: str) -> list[str]:
    """The groups of ``scope`` ("kind", "difficulty", "tag") a case belongs to."""
    if scope == "kind":
        return [str(case.get("kind"))]
    if scope == "difficulty":
        return [difficulty_of(case)]
    return [str(t) for t in case.get("tags") or []]
