"""BIRD efficiency scores (VES, R-VES) from measured timings, reproducing the references.

- VES (AlibabaResearch/DAMO-ConvAI ``bird/llm/src/evaluation_ves.py``): per item
  ``sqrt(tau) * 100`` with ``tau = mean(clean_abnormal([t_gold / t_pred, ...]))`` when the
  results match (set equality of rows), else 0; uncapped.
- R-VES (bird-bench/mini_dev ``evaluation_ves.py``; Denodo ``ves_eval.py`` uses the same
  buckets): ``tau`` mapped to a reward 0 / 0.25 / 0.5 / 0.75 / 1 / 1.25, aggregated as
  ``mean(sqrt(reward)) * 100`` (max 111.80).

The references catch every exception as "score 0"; the edge cases this produces are kept:
all ratios equal (sigma = 0) -> every ratio removed -> division by zero -> 0; a predicted time
of 0 -> division by zero -> 0; no timings -> 0.

The execution itself (repeated runs, timeouts) belongs to the SQL kind; these functions take
the measured seconds. Our metric contract is [0, 1], so ``ves`` / ``r_ves`` are capped at 1
(``sqrt(tau)`` and ``sqrt(reward)``); the uncapped per-item values are returned alongside so
the published aggregates can be recomputed with :func:`compute_ves`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

#: Metric names this module produces (the gated ones).
EFFICIENCY_METRIC_NAMES: tuple[str, ...] = ("ves", "r_ves")


def _np_pairwise_sum(a: Sequence[float]) -> float:
    """``numpy.add.reduce`` on a contiguous float64 vector (pairwise, 8 accumulators).

    Reproduced so that the 3-sigma bounds round exactly as numpy's: with 10 iterations the
    "nine equal + one outlier" case sits exactly on ``z = 3`` and the last bit decides.
    """
    n = len(a)
    if n < 8:
        res = 0.0
        for x in a:
            res += x
        return res
    if n <= 128:
        r = [float(x) for x in a[:8]]
        i = 8
        stop = n - (n % 8)
        while i < stop:
            for j in range(8):
                r[j] += a[i + j]
            i += 8
        res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
        while i < n:
            res += a[i]
            i += 1
        return res
    n2 = n // 2
    n2 -= n2 % 8
    return _np_pairwise_sum(a[:n2]) + _np_pairwise_sum(a[n2:])


def clean_abnormal(values: Iterable[float]) -> list[float]:
    """Keep ``x`` with ``mean - 3*std < x < mean + 3*std`` (population std, STRICT bounds).

    Same arithmetic as the references' ``np.mean`` / ``np.std``. With n <= 9 values nothing is
    ever removed except when all are equal (std = 0), which removes everything.
    """
    xs = [float(v) for v in values]
    if not xs:
        return []
    n = len(xs)
    mean = _np_pairwise_sum(xs) / n
    std = math.sqrt(_np_pairwise_sum([(x - mean) * (x - mean) for x in xs]) / n)
    hi, lo = mean + 3 * std, mean - 3 * std
    return [x for x in xs if x < hi and x > lo]


def time_ratios(gold_seconds: Sequence[float], pred_seconds: Sequence[float]) -> list[float]:
    """``t_gold / t_pred`` per iteration (ZeroDivisionError for a zero predicted time)."""
    if len(gold_seconds) != len(pred_seconds):
        raise ValueError("gold and predicted timings must pair up (one of each per iteration)")
    return [g / p for g, p in zip(gold_seconds, pred_seconds, strict=True)]


def mean_time_ratio(gold_seconds: Sequence[float], pred_seconds: Sequence[float]) -> float:
    """``tau``: mean of the cleaned ratios; 0.0 wherever the reference raises and scores 0."""
    try:
        kept = clean_abnormal(time_ratios(gold_seconds, pred_seconds))
    except ZeroDivisionError:
        return 0.0
    if not kept:
        return 0.0
    total = 0.0
    for x in kept:  # plain left-to-right addition, as sum() over numpy scalars does
        total += x
    return total / len(kept)


def r_ves_bucket(tau: float) -> float:
    """The R-VES reward for a time ratio (0 when tau is 0, i.e. incorrect or failed)."""
    if tau == 0:
        return 0.0
    if tau >= 2:
        return 1.25
    if tau >= 1:
        return 1.0
    if tau >= 0.5:
        return 0.75
    if tau >= 0.25:
        return 0.5
    return 0.25


def ves_score(gold_seconds: Sequence[float], pred_seconds: Sequence[float], correct: bool) -> float:
    """Per-item BIRD VES / 100: ``sqrt(tau)`` if the results match, else 0 (uncapped)."""
    if not correct:
        return 0.0
    return math.sqrt(mean_time_ratio(gold_seconds, pred_seconds))


def r_ves_reward(gold_seconds: Sequence[float], pred_seconds: Sequence[float], correct: bool) -> float:
    """Per-item R-VES reward (0, 0.25, 0.5, 0.75, 1, 1.25); 0 if the results differ."""
    if not correct:
        return 0.0
    return r_ves_bucket(mean_time_ratio(gold_seconds, pred_seconds))


def efficiency_metrics(
    gold_seconds: Sequence[float], pred_seconds: Sequence[float], correct: bool
) -> dict[str, float]:
    """``ves`` and ``r_ves`` capped to [0, 1], plus the raw values the references report.

    ``correct`` is BIRD's criterion, ``set(pred_rows) == set(gold_rows)`` (our ``bird_ex``).
    """
    tau = mean_time_ratio(gold_seconds, pred_seconds) if correct else 0.0
    reward = r_ves_bucket(tau)
    ves_raw = math.sqrt(tau)
    r_raw = math.sqrt(reward)
    return {
        "ves": min(1.0, ves_raw),
        "r_ves": min(1.0, r_raw),
        "ves_time_ratio": tau,
        "ves_raw": ves_raw,
        "r_ves_reward": reward,
        "r_ves_raw": r_raw,
    }


def compute_ves(values: Iterable[float]) -> float:
    """The published aggregate: ``sum(sqrt(v) * 100) / n`` over time ratios (VES) or rewards (R-VES)."""
    total = 0.0
    n = 0
    for v in values:
        total += math.sqrt(v) * 100
        n += 1
    if n == 0:
        raise ValueError("compute_ves needs at least one item")
    return total / n


__all__ = [
    "EFFICIENCY_METRIC_NAMES",
    "clean_abnormal",
    "compute_ves",
    "efficiency_metrics",
    "mean_time_ratio",
    "r_ves_bucket",
    "r_ves_reward",
    "time_ratios",
    "ves_score",
]
