"""Is a drop versus the baseline more than noise? Exact McNemar and a paired bootstrap.

A suite of 40 cases that loses two of them has dropped 5 points of pass rate; whether that is a
regression or the luck of a sampled model is what ``--queryeval-significance=ALPHA`` answers:

* **McNemar, exact** on the paired pass/fail flips: with ``b`` cases that went pass → fail and
  ``c`` that went fail → pass, the two-sided p-value of ``b`` under ``Binomial(b + c, 1/2)``,
  which is ``scipy.stats.binomtest(b, b + c, 0.5).pvalue``. Computed here with integers
  (``2 * sum(C(n, j), j <= min(b, c)) / 2**n``, capped at 1) and rounded once: the exact value.
  SciPy evaluates the same sum through Boost's floating incomplete beta and can differ in the
  last one or two digits (relative 4e-14 at most for n <= 400, see the tests); the verdict
  differs only for a p-value within that distance of alpha.
* **Paired bootstrap percentile interval** of the mean difference ``current - baseline`` of a
  metric, ``n_resamples`` (10,000) resamples of the paired cases with a fixed seed: the interval
  of ``scipy.stats.bootstrap((baseline, current), lambda b, c, axis: np.mean(c - b,
  axis=axis), paired=True, vectorized=True, method='percentile', n_resamples=10000,
  confidence_level=1 - alpha, rng=SEED)`` (SciPy >= 1.15, whose quantile is Hyndman-Fan type
  7). With numpy installed (the ``fast`` and ``dev`` extras; SciPy needs it too), the resamples
  are numpy's ``default_rng(SEED).integers(0, n, (n_resamples, n))``, the very draws SciPy
  makes, and the interval equals SciPy's to the last digit. Without numpy the same method runs
  on Python's ``random.Random(SEED)`` draws: reproducible run to run, but another sample of
  resamples, so the bounds differ from SciPy's by resampling noise.

The gate's McNemar p-value (:func:`mcnemar`) is SciPy's own ``binomtest`` when SciPy is
installed, so the reported figure is the one a user recomputes with SciPy, to the last digit;
without SciPy it is :func:`mcnemar_exact` (the exact value, checked against SciPy's in the
tests). Pure functions, no pytest; SciPy is imported only when a gate asks for a p-value.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

#: The bootstrap's fixed seed and resample count (reported with every interval).
SEED = 20261123
N_RESAMPLES = 10_000
#: Paired cases resampled per numpy batch (bounds memory: 8 bytes per index).
_BATCH_CELLS = 2_000_000


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value of ``b`` pass→fail and ``c`` fail→pass flips."""
    if b < 0 or c < 0:
        raise ValueError("flip counts must be >= 0")
    n = b + c
    k = min(b, c)
    if 2 * k == n:  # no flip, or as many each way: no evidence of a change
        return 1.0
    tail = sum(math.comb(n, j) for j in range(k + 1))
    num, den = 2 * tail, 1 << n
    return 1.0 if num >= den else num / den  # int / int: correctly rounded


def mcnemar(b: int, c: int) -> float:
    """The gate's p-value: ``scipy.stats.binomtest(b, b + c, 0.5).pvalue`` with SciPy
    installed, else :func:`mcnemar_exact` (equal within a relative 4e-14)."""
    if b < 0 or c < 0:
        raise ValueError("flip counts must be >= 0")
    try:
        from scipy.stats import binomtest  # type: ignore[import-untyped]
    except ImportError:
        return mcnemar_exact(b, c)
    if b + c == 0:
        return 1.0  # binomtest needs at least one trial: no flip, no evidence
    return float(binomtest(b, b + c, 0.5).pvalue)


def min_flips_for(alpha: float) -> int:
    """The fewest paired cases that can show a significant change at ``alpha``: with ``n``
    cases the smallest McNemar p-value is ``2 / 2**n`` (every case flips the same way)."""
    if not 0 < alpha < 1:
        raise ValueError("alpha must be between 0 and 1")
    n = 1
    while mcnemar_exact(n, 0) >= alpha:
        n += 1
    return n


@dataclass(frozen=True, slots=True)
class Interval:
    """A bootstrap confidence interval of ``mean(current - baseline)``."""

    low: float
    high: float
    mean: float
    confidence: float
    n_resamples: int
    seed: int
    #: "numpy" (the draws SciPy makes) or "python" (random.Random: another sample)
    rng: str


def paired_bootstrap(baseline: Sequence[float], current: Sequence[float], *,
                     confidence: float = 0.95, n_resamples: int = N_RESAMPLES,
                     seed: int = SEED) -> Interval:
    """Percentile interval of the mean paired difference (see the module docstring)."""
    n = len(baseline)
    if n != len(current):
        raise ValueError("paired samples must have the same length")
    if n < 2:
        raise ValueError("the bootstrap needs two or more paired values")
    if not 0 < confidence < 1:
        raise ValueError("confidence must be between 0 and 1")
    diffs = [float(c) - float(b) for b, c in zip(baseline, current, strict=True)]
    try:
        import numpy as np
    except ImportError:
        return _python_bootstrap(diffs, confidence, n_resamples, seed)
    d = np.asarray(diffs, dtype=np.float64)
    rng = np.random.default_rng(seed)
    batch = max(1, _BATCH_CELLS // n)
    parts = []
    for k in range(0, n_resamples, batch):  # same stream as one call (numpy's bitgen state)
        idx = rng.integers(0, n, (min(batch, n_resamples - k), n))
        parts.append(np.mean(d[idx], axis=-1))
    theta = np.sort(np.concatenate(parts)).tolist()
    low, high = _quantiles(theta, confidence)
    return Interval(low, high, float(np.mean(d)), confidence, n_resamples, seed, "numpy")


def _python_bootstrap(diffs: list[float], confidence: float, n_resamples: int,
                      seed: int) -> Interval:
    from ..metrics.efficiency import _np_pairwise_sum

    n = len(diffs)
    rng = random.Random(seed)
    pick = rng.randrange
    theta = sorted(_np_pairwise_sum([diffs[pick(n)] for _ in range(n)]) / n
                   for _ in range(n_resamples))
    low, high = _quantiles(theta, confidence)
    return Interval(low, high, _np_pairwise_sum(diffs) / n, confidence, n_resamples, seed,
                    "python")


def _quantiles(sorted_values: list[float], confidence: float) -> tuple[float, float]:
    """``scipy.stats.quantile(theta, [alpha, 1 - alpha])`` (method 'linear'), float op for
    float op, with ``alpha = (1 - confidence) / 2`` as ``bootstrap`` computes it."""
    alpha = (1 - confidence) / 2
    return _hf7(sorted_values, alpha), _hf7(sorted_values, 1 - alpha)


def _hf7(y: list[float], p: float) -> float:
    n = len(y)
    jg = p * n + (1 - p)
    jp1 = jg // 1
    j = jp1 - 1
    g = jg % 1
    if j < 0:
        g = 0.0
    lo = int(min(max(j, 0.0), n - 1))
    hi = int(min(max(jp1, 0.0), n - 1))
    return (1 - g) * y[lo] + g * y[hi]


def parse_significance(value: str | float | None, where: str) -> float | None:
    """``--queryeval-significance`` / ini ``queryeval_significance`` / ``gates: significance``:
    an alpha strictly between 0 and 0.5 (ValueError naming ``where`` otherwise)."""
    if value is None or value == "":
        return None
    try:
        alpha = float(value)
    except (TypeError, ValueError, OverflowError):  # OverflowError: a 400-digit integer
        raise ValueError(f"{where}: {value!r} is not a number (expected an alpha such as "
                         "0.05)") from None
    if isinstance(value, bool) or not math.isfinite(alpha) or not 0 < alpha < 0.5:
        raise ValueError(f"{where}: {value!r} must be a significance level between 0 and 0.5 "
                         "(for example 0.05)")
    return alpha


def resolve_significance(option: str | float | None, suites: Iterable[float | None],
                         ini: str | float | None) -> float | None:
    """The run's alpha, in the one order every seat reads it (a serial run, each xdist
    worker's evidence gate, the controller's comparison; ``queryeval merge`` reads what the
    shards recorded from it): ``--queryeval-significance``, else the smallest ``gates:
    {significance:}`` of the run's suite configs, else ini ``queryeval_significance``; None
    when none is set. ValueError for a malformed value (checked before the run)."""
    if option is not None and option != "":
        return parse_significance(option, "--queryeval-significance")
    found = [alpha for alpha in suites if alpha is not None]
    if found:
        return min(found)
    return parse_significance(ini, "queryeval_significance")
