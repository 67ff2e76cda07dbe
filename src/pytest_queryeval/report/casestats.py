"""The pass rate and the metric statistics of a group of case records, the one rule every
report's figures follow: the run's aggregates (:mod:`..conclude.aggregate`), the gates, the
models table and ``queryeval view``'s columns all count with :func:`group_stats`.

Why here, below the end of the run: ``queryeval view`` (this folder) counts each model's pass
rate per kind and difficulty as the run's own report does, and reached up into
``conclude`` for it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from itertools import repeat
from operator import sub
from typing import TYPE_CHECKING, Any

from ..baseline.verdicts import judged_outcome
from ..metricnames import (
    AGENT_COUNT_METRICS,
    GOLD_ERROR,
    MISSING_REASONS,
    NO_VALUE,
    OTHER_ERROR,
    PASSED_OUTCOMES,
    PREDICTION_ERROR,
    RECORDED_METRICS,
    SKIPPED,
    SPIDER_STRUCTURE_METRICS,
)

if TYPE_CHECKING:
    from ..model import RecordLike


def missing_reason(record: RecordLike) -> str:
    """Why ``record`` would lack a metric: the class of its error (the reason's prefix, as
    :class:`~pytest_queryeval.errors.QueryEvalError` writes it), skipped, else no value (the
    case ran, and the metric does not apply to it or came out NaN)."""
    outcome = record.get("outcome")
    if outcome == "skipped":
        return SKIPPED
    text = record.get("error") or (record.get("reason") if outcome == "failed" else None)
    if isinstance(text, str) and text:
        if text.startswith("prediction error"):
            return PREDICTION_ERROR
        if text.startswith("gold error"):
            return GOLD_ERROR
        if outcome == "error":
            return OTHER_ERROR
    return NO_VALUE


def group_stats(records: Iterable[RecordLike]) -> dict[str, Any]:
    """count / scored / passed / failed / errors / pass_rate and mean/std/n per metric, and
    the ``total`` of the timing and usage metrics (tokens, ``cost_usd``, seconds).

    Metric means include xfailed cases (their scores are real); pass rates exclude skipped
    and xfailed cases, as pytest's own summary does, except the cases a gating mode reported
    as xfailed (``xfailed_by_gating``): they failed, and count so.
    """
    return Partial(records).stats()


class Partial:
    """What :func:`group_stats` sums over some records: the partials of disjoint sets of
    records add up to their union's (:meth:`add`), so the run's aggregates
    (:func:`..conclude.aggregate.aggregate`) read each record once however many groups it is
    in. The values are summed with ``math.fsum``, exactly rounded whatever their order: a
    union's mean and std are those of its records, bit for bit."""

    __slots__ = ("counts", "reasons", "unparsable", "valued", "values")

    def __init__(self, records: Iterable[RecordLike] = ()) -> None:
        count = scored = passed = failed = errors = skipped = xfailed = granted = 0
        values: dict[str, list[float]] = {}
        # Denominators: the cases of each reason, and per metric how many of those still have
        # a value (a "no value" case is counted by difference, so the common case costs
        # nothing).
        reasons: dict[str, int] = {}
        valued: dict[str, dict[str, int]] = {}
        unparsable: dict[str, int] = {}
        values_get = values.get
        for rec in records:
            count += 1
            outcome = rec.get("outcome")
            if outcome == "xfailed" and judged_outcome(rec) == "failed":
                granted += 1  # xfailed by --queryeval-gating: still a failure for the pass rate
            if outcome in PASSED_OUTCOMES:
                passed += 1
            elif outcome == "failed":
                failed += 1
            elif outcome == "error":
                errors += 1
            elif outcome == "xfailed":
                xfailed += 1
            else:
                skipped += 1
            why = NO_VALUE if outcome in PASSED_OUTCOMES else missing_reason(rec)
            reasons[why] = reasons.get(why, 0) + 1
            metrics = rec.get("metrics") or {}
            if metrics:
                scored += 1
            for name, value in metrics.items():
                if type(value) is float:  # exact type first: this runs per metric and record
                    if value != value:
                        continue
                elif isinstance(value, int | float) and not math.isnan(value):
                    value = float(value)
                else:
                    continue
                xs = values_get(name)
                if xs is None:
                    values[name] = [value]
                else:
                    xs.append(value)
                if why != NO_VALUE:
                    per = valued.setdefault(name, {})
                    per[why] = per.get(why, 0) + 1
            details = rec.get("details")
            if details and details.get("structure_parse_error"):
                for name in metrics:  # scored 0 the evaluator's way: counted, and said so
                    if name in SPIDER_STRUCTURE_METRICS:
                        unparsable[name] = unparsable.get(name, 0) + 1
        self.counts = [count, scored, passed, failed, errors, skipped, xfailed, granted]
        self.values, self.reasons, self.valued, self.unparsable = \
            values, reasons, valued, unparsable

    def add(self, other: Partial) -> None:
        self.counts = [a + b for a, b in zip(self.counts, other.counts, strict=True)]
        for name, xs in other.values.items():
            self.values.setdefault(name, []).extend(xs)
        for why, n in other.reasons.items():
            self.reasons[why] = self.reasons.get(why, 0) + n
        for name, per in other.valued.items():
            mine = self.valued.setdefault(name, {})
            for why, n in per.items():
                mine[why] = mine.get(why, 0) + n
        for name, n in other.unparsable.items():
            self.unparsable[name] = self.unparsable.get(name, 0) + n

    def stats(self) -> dict[str, Any]:
        count, scored, passed, failed, errors, skipped, xfailed, granted = self.counts
        values, reasons, valued, unparsable = \
            self.values, self.reasons, self.valued, self.unparsable
        judged = passed + failed + errors + granted
        out: dict[str, Any] = {
            "count": count, "scored": scored, "passed": passed, "failed": failed,
            "errors": errors, "skipped": skipped, "xfailed": xfailed,
            "xfailed_by_gating": granted,
            "pass_rate": passed / judged if judged else None, "metrics": {},
        }
        for name in sorted(values):
            xs = values[name]
            total = math.fsum(xs)
            mean = total / len(xs)
            # (x - mean) ** 2 of each x, iterated in C
            std = math.sqrt(math.fsum(map(pow, map(sub, xs, repeat(mean)), repeat(2))) / len(xs))
            entry: dict[str, Any] = {"mean": mean, "std": std, "n": len(xs)}
            if name in RECORDED_METRICS or name in AGENT_COUNT_METRICS:
                # additive: what the run spent (tokens, USD, seconds), what agents did
                entry["total"] = total
            entry["missing"] = _missing(reasons, valued.get(name) or {}, len(xs))
            if name in unparsable:
                entry["unparsable"] = unparsable[name]
            out["metrics"][name] = entry
        return out


def _missing(reasons: Mapping[str, int], valued: Mapping[str, int], n: int) -> dict[str, int]:
    """The cases without a value of one metric, by reason (only the reasons that occur)."""
    out: dict[str, int] = {}
    others = 0
    for why in MISSING_REASONS[:-1]:
        have = valued.get(why, 0)
        others += have
        lacking = reasons.get(why, 0) - have
        if lacking:
            out[why] = lacking
    lacking = reasons.get(NO_VALUE, 0) - (n - others)
    if lacking:
        out[NO_VALUE] = lacking
    return out
