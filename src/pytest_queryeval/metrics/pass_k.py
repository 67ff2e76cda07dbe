"""pass@k and pass^k of repeated cases (``repeat: N``), for every k from 1 to N, each the way
the reference that publishes it computes it.

A case asked N times that passed c of them says more than "some run passed" (``pass_at_k``) or
"every run passed" (``pass_all_k``): those are only k = N of the two estimators the field
publishes.

- **pass@k**, the chance that at least one of k runs drawn from the N passes: HumanEval's
  unbiased estimator, ``estimate_pass_at_k`` of openai/human-eval
  @6d43fb980f9fee3c892a914eda09951f772ad10d, ``human_eval/evaluation.py``:
  1 - C(N-c, k) / C(N, k), computed in the reference's product form
  ``1 - prod(1 - k / i for i in N-c+1..N)`` (what its ``np.prod`` gives, bit for bit; the
  exact fraction rounds differently in the last digit for about one (N, c, k) in fourteen).
  The suite figure is the mean over the cases with numpy's pairwise summation, as
  ``evaluate_functional_correctness`` takes ``estimate_pass_at_k(total, correct, k).mean()``,
  for the k that every case has runs for (N >= k for each: the reference's own rule).
- **pass^k**, the chance that all k runs drawn from the N pass: tau-bench's ``display_metrics``
  (sierra-research/tau-bench @59a200c6d575d595120f1cb70fea53cef0632f6b, ``tau_bench/run.py``):
  C(c, k) / C(N, k) per task, summed left to right and divided by the number of tasks.
  Its quirk: ``display_metrics`` takes N once for the whole run (the number of distinct trial
  numbers), so a task that ran fewer trials is divided by the run's N; here each case has its
  own N, which is the same figure whenever every case ran N times.

Both suite figures are sums in an order, as the references' are: the report's order (file,
line, id), the same in a serial run, under xdist, resumed and merged from shards, so they agree
bit for bit. With N = k, pass@N is 1 when some run passed and pass^N 1 when every run passed:
a case's ``pass_at_k`` and ``pass_all_k``, whose means are therefore the figures at k = N.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..metricnames import PASS_AT_K, PASS_HAT_K
from ._alignment_search import np_mean

if TYPE_CHECKING:
    from ..model import RecordLike

def pass_at_k(n: int, c: int, k: int) -> float:
    """HumanEval's estimate of pass@k for one case with ``c`` of ``n`` runs passed."""
    if n - c < k:
        return 1.0
    product = 1.0
    for i in range(n - c + 1, n + 1):  # np.prod multiplies left to right: so here
        product *= 1.0 - k / i
    return 1.0 - product


def pass_hat_k(n: int, c: int, k: int) -> float:
    """tau-bench's pass^k of one task with ``c`` of ``n`` trials passed."""
    return math.comb(c, k) / math.comb(n, k)


def suite_pass_at_k(cases: Sequence[tuple[int, int]], k: int) -> float:
    """The mean of :func:`pass_at_k` over ``(n, c)`` cases, numpy's ``mean`` bit for bit."""
    return np_mean([pass_at_k(n, c, k) for n, c in cases])


def suite_pass_hat_k(cases: Sequence[tuple[int, int]], k: int) -> float:
    """The mean of :func:`pass_hat_k` over ``(n, c)`` cases, summed as ``display_metrics``
    sums its tasks (left to right)."""
    total = 0.0
    for n, c in cases:
        total += pass_hat_k(n, c, k)
    return total / len(cases)


def pass_k_figures(cases: Sequence[tuple[int, int]]) -> dict[str, Any] | None:
    """pass@k and pass^k of the ``(n, c)`` cases for k = 1 .. the smallest n, keyed by k as
    text (JSON's keys), with how many cases ran how many times; None without a case."""
    if not cases:
        return None
    smallest = min(n for n, _ in cases)
    runs: dict[int, int] = {}
    for n, _ in cases:
        runs[n] = runs.get(n, 0) + 1
    ks = range(1, smallest + 1)
    return {
        "cases": len(cases), "n": smallest,
        "runs": {str(n): count for n, count in sorted(runs.items())},
        PASS_AT_K: {str(k): suite_pass_at_k(cases, k) for k in ks},
        PASS_HAT_K: {str(k): suite_pass_hat_k(cases, k) for k in ks},
    }


def figure_label(metric: str, k: int) -> str:
    """``pass@2`` / ``pass^2``: the name the references print."""
    return f"pass@{k}" if metric == PASS_AT_K else f"pass^{k}"


def case_runs(record: RecordLike) -> tuple[int, int] | None:
    """``(n, c)`` of a repeated case's record: how many times it ran and how many of its runs
    passed (``details.repeat``, written by ``rules/repeats.py``); None for a case that ran
    once (not repeated, or its prediction fixed). A case whose every run erred counts with
    c = 0, as the references count a problem or task never solved (it has no ``pass_at_k``
    metric: an errored case has no metrics)."""
    info = (record.get("details") or {}).get("repeat")
    if not isinstance(info, Mapping):
        return None
    n, passed = info.get("n"), info.get("passed")
    if type(n) is not int or type(passed) is not int or n < 2 or not 0 <= passed <= n:
        return None
    return n, passed


def pass_k_aggregate(records: Sequence[RecordLike]) -> dict[str, Any] | None:
    """The report's ``aggregates.pass_k``: :func:`pass_k_figures` over the repeated cases, and
    per model in a run fanned out per model (``models``); None when no case was repeated.
    From the records alone, in report order, so ``queryeval merge`` and
    ``--queryeval-resume`` recompute what a serial run gives (never an average of shards')."""
    counts: list[tuple[int, int]] = []
    by_model: dict[str, list[tuple[int, int]]] = {}
    for rec in records:
        runs = case_runs(rec)
        if runs is None:
            continue
        counts.append(runs)
        model = rec.get("model")
        if isinstance(model, str) and model:
            by_model.setdefault(model, []).append(runs)
    out = pass_k_figures(counts)
    if out is not None and by_model:
        out["models"] = {m: pass_k_figures(c) for m, c in sorted(by_model.items())}
    return out


def gate_figure(records: Sequence[RecordLike], metric: str, k: int,
                ) -> tuple[float | None, int, str | None]:
    """A ``pass_at_k`` / ``pass_hat_k`` gate's value for its ``k`` over the records it selects:
    (value, how many cases it averages, why there is none)."""
    figures = pass_k_figures([runs for r in records if (runs := case_runs(r)) is not None])
    if figures is None:
        return None, 0, ("nothing scored: no case was repeated (repeat: N runs each case N "
                         "times)" if records else None)
    value = figures[metric].get(str(k))
    if value is None:
        return None, 0, (f"{figure_label(metric, k)} needs k runs of every case: k is out of "
                         f"1..{figures['n']} (the fewest runs of a gated case)")
    return value, int(figures["cases"]), None
