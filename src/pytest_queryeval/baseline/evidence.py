"""Is a sampled model worse than its baseline? A three-verdict sequential test over each case's
history: ``--queryeval-gating=evidence``.

A sampled model answers a case right with some probability; one run per case against a baseline
written from one run flags the noise (a case right half the time flips every other run), and a
significance test on the pooled pass rate lets a model slip through that lost a few of its
always-right cases while the noisy ones happened to do well. This test reads what the baseline
knows of each case (how many of its runs passed, :func:`history_of`) and weighs each current
run by it: a case that passed 10 of 10 baseline runs and now fails is strong evidence, a case
that passed 5 of 10 and now fails is none.

The statistic (docs/live-models.md, "Gating a sampled model"):

* **Null (unchanged model)**: case *i*'s pass probability has the posterior
  ``Beta(k_i + 1/2, n_i - k_i + 1/2)`` of its baseline history (*k* passes of *n* runs,
  Jeffreys prior), so the current runs' outcomes have the **Beta-Binomial** posterior
  predictive probability ``B(a + x, b + f) / B(a, b)`` (*x* passes, *f* failures, in order):
  ``scipy.stats.betabinom(m, a, b).pmf(x) / C(m, x)``.
* **Alternative (a drop)**: each case has, independently, a probability ``w``
  (:data:`DROP_SHARE`) of having dropped to a pass probability uniform below its baseline mean
  ``mu_i``; its runs' probability is then ``int_0^mu t^x (1 - t)^f dt / mu``
  (``scipy.special.betainc(x + 1, f + 1, mu) * B(x + 1, f + 1) / mu``). A case that got better
  is evidence for the null: the test is one-sided.
* **Evidence**: the likelihood ratio ``L = prod_i ((1 - w) + w * alt_i / null_i)``. Each factor
  has expectation 1 under the null, whatever the number of runs of the case and however it
  was chosen from the runs seen so far, so ``L`` is a test martingale and **Wald's sequential
  probability ratio test** applies: ``FAIL`` when ``L >= (1 - alpha) / alpha``, ``PASS`` when
  ``L <= alpha / (1 - alpha)`` (both error rates ``alpha``, the declared
  ``--queryeval-significance``), ``INCONCLUSIVE`` in between: not enough evidence either way.
  Ville's inequality bounds the false FAIL rate by ``alpha`` even though the adaptive repeats
  (:class:`Budget`) choose which case to ask again from the answers seen.

Pure functions over plain numbers; no pytest, no SciPy (the tests check the two
probabilities against SciPy's ``betabinom`` and ``betainc``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..model import RecordLike

#: The three verdicts of the gate and the run.
PASS, FAIL, INCONCLUSIVE = "PASS", "FAIL", "INCONCLUSIVE"
#: The alternative's prior share of cases that dropped.
DROP_SHARE = 0.25
#: The Jeffreys prior's pseudo-counts of the baseline posterior.
PRIOR = 0.5
#: The most runs the adaptive repeats give one case (its first included).
MAX_RUNS = 6
#: The default budget of model calls per case, on average over the selected cases.
DEFAULT_BUDGET = 1.5


@dataclass(frozen=True, slots=True)
class History:
    """How many of a case's baseline runs passed."""

    runs: int
    passes: int

    @property
    def mean(self) -> float:
        """The posterior mean pass probability."""
        return (self.passes + PRIOR) / (self.runs + 2 * PRIOR)


def _log_beta(a: float, b: float) -> float:
    return math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)


def null_log_prob(history: History, passes: int, fails: int) -> float:
    """log probability of one ordered sequence of ``passes`` and ``fails`` under the baseline's
    Beta-Binomial posterior predictive."""
    a = history.passes + PRIOR
    b = history.runs - history.passes + PRIOR
    return _log_beta(a + passes, b + fails) - _log_beta(a, b)


def alt_log_prob(mu: float, passes: int, fails: int) -> float:
    """log probability of one ordered sequence under a pass probability uniform on (0, mu):
    ``(1/mu) * int_0^mu t^passes (1-t)^fails dt``, expanded in powers of ``mu`` (exact for the
    handful of runs a case has)."""
    total = math.fsum(math.comb(fails, j) * (-1) ** j * mu ** (passes + j + 1) / (passes + j + 1)
                      for j in range(fails + 1))
    return math.log(max(total / mu, 1e-300))


def case_factor(history: History, passes: int, fails: int, share: float = DROP_SHARE) -> float:
    """The case's factor of the likelihood ratio: ``(1 - w) + w * alt / null``."""
    if passes + fails == 0:
        return 1.0
    ratio = math.exp(alt_log_prob(history.mean, passes, fails)
                     - null_log_prob(history, passes, fails))
    return (1 - share) + share * ratio


def bounds(alpha: float) -> tuple[float, float]:
    """Wald's boundaries with both error rates ``alpha``: (PASS at or below, FAIL at or above)."""
    return alpha / (1 - alpha), (1 - alpha) / alpha


def verdict_of(ratio: float, alpha: float) -> str:
    low, high = bounds(alpha)
    if ratio >= high:
        return FAIL
    if ratio <= low:
        return PASS
    return INCONCLUSIVE


def min_detectable(histories: Sequence[History], alpha: float, max_runs: int = MAX_RUNS
                   ) -> int | None:
    """The fewest cases that, failing each of ``max_runs`` runs while every other case is
    neutral, give a FAIL: the suite's most reliable cases first. None: no number can."""
    high = bounds(alpha)[1]
    factors = sorted((case_factor(h, 0, max_runs) for h in histories), reverse=True)
    log_l = 0.0
    for k, factor in enumerate(factors, 1):
        log_l += math.log(factor)
        if log_l >= math.log(high):
            return k
    return None


@dataclass(slots=True)
class CaseEvidence:
    """One case's runs now, its baseline history and its factor."""

    id: str
    model: str | None
    history: History | None
    runs: int
    passes: int
    factor: float = 1.0


@dataclass(slots=True)
class Decision:
    """The gate's verdict and what it rests on (the JSON report's ``evidence``)."""

    verdict: str
    alpha: float
    ratio: float
    cases: list[CaseEvidence] = field(default_factory=list)
    min_detectable_cases: int | None = None
    calls: int = 0
    budget: float | None = None
    model: str | None = None
    by_model: dict[str, Decision] = field(default_factory=dict)

    @property
    def min_detectable_drop(self) -> float | None:
        """The minimum detectable drop as a share of the suite's cases (pass-rate points)."""
        n = sum(c.history is not None for c in self.cases)
        if self.min_detectable_cases is None or not n:
            return None
        return self.min_detectable_cases / n

    def line(self) -> str:
        """``evidence gate: FAIL (likelihood ratio 412 >= 19 at alpha 0.05; ...)``"""
        low, high = bounds(self.alpha)
        shown = f"likelihood ratio {self.ratio:.3g}"
        where = {FAIL: f"{shown} >= {high:.3g}", PASS: f"{shown} <= {low:.3g}",
                 INCONCLUSIVE: f"{low:.3g} < {shown} < {high:.3g}"}[self.verdict]
        mdd = self.min_detectable_drop
        tail = [f"alpha {self.alpha:g}", f"{len(self.cases)} cases, {self.calls} model calls"]
        if mdd is not None:
            tail.append(f"minimum detectable drop {100 * mdd:.1f} points "
                        f"({self.min_detectable_cases} reliable case(s) failing all "
                        f"{MAX_RUNS} runs)")
        strongest = sorted((c for c in self.cases if c.factor > 1),
                           key=lambda c: -c.factor)[:3]
        if strongest and self.verdict != PASS:
            tail.append("strongest: " + ", ".join(
                f"{c.id} {c.passes}/{c.runs} (baseline {c.history.passes}/{c.history.runs})"
                for c in strongest if c.history is not None))
        who = f" [{self.model}]" if self.model else ""
        return f"evidence gate{who}: {self.verdict} ({where}; " + "; ".join(tail) + ")"

    def to_dict(self) -> dict[str, Any]:
        low, high = bounds(self.alpha)
        out: dict[str, Any] = {
            "verdict": self.verdict, "alpha": self.alpha, "likelihood_ratio": self.ratio,
            "pass_at_or_below": low, "fail_at_or_above": high,
            "statistic": "Wald SPRT, Beta-Binomial null from each case's baseline history",
            "drop_share": DROP_SHARE, "cases": len(self.cases), "calls": self.calls,
            "min_detectable_cases": self.min_detectable_cases,
            "min_detectable_drop": self.min_detectable_drop, "line": self.line(),
            "strongest": [{"id": c.id, "runs": c.runs, "passes": c.passes,
                           "baseline_runs": c.history.runs,
                           "baseline_passes": c.history.passes, "factor": c.factor}
                          for c in sorted(self.cases, key=lambda c: -c.factor)[:10]
                          if c.history is not None and c.factor > 1],
        }
        if self.budget is not None:
            out["budget"] = self.budget
        if self.model is not None:
            out["model"] = self.model
        if self.by_model:
            out["models"] = {m: d.to_dict() for m, d in self.by_model.items()}
        return out


def history_of(record: RecordLike) -> History | None:
    """A baseline case's history: its ``history`` ([runs, passes]), else its repeats
    (``details.repeat``), else its one outcome as a history of one run (a baseline written
    before histories). None for a case that was not judged (skipped, erred)."""
    hist = record.get("history")
    if isinstance(hist, list | tuple) and len(hist) == 2 \
            and all(isinstance(v, int) and not isinstance(v, bool) for v in hist) \
            and 0 <= hist[1] <= hist[0] and hist[0] > 0:
        return History(int(hist[0]), int(hist[1]))
    return runs_of(record)


def runs_of(record: RecordLike) -> History | None:
    """How many runs a record of this run made and how many passed (None: not judged)."""
    info = (record.get("details") or {}).get("repeat")
    if isinstance(info, Mapping) and isinstance(info.get("n"), int) \
            and isinstance(info.get("passed"), int) and info.get("statuses"):
        statuses = [s for s in info["statuses"] if s in ("passed", "failed")]
        if statuses:
            return History(len(statuses), statuses.count("passed"))
    status = record.get("status")
    if status in ("passed", "failed"):
        return History(1, 1 if status == "passed" else 0)
    return None


def decide(current: Iterable[RecordLike], baseline: Iterable[RecordLike], alpha: float, *,
           budget: float | None = None) -> Decision:
    """The verdict of this run's records against the baseline's, per model when the run has
    several (the run's verdict is the worst of theirs: a pooled figure never hides one
    model's drop). Cases are paired by id (node id when ids repeat)."""
    base = _index(list(baseline))
    evidence: list[CaseEvidence] = []
    for key, rec in _index(list(current)).items():
        now = runs_of(rec)
        if now is None:
            continue
        before = base.get(key)
        history = history_of(before) if before is not None else None
        ev = CaseEvidence(str(rec.get("id")), _model(rec), history, now.runs, now.passes)
        if history is not None:
            ev.factor = case_factor(history, now.passes, now.runs - now.passes)
        evidence.append(ev)
    models = sorted({e.model for e in evidence if e.model is not None})
    if len(models) > 1:
        parts = {m: _decision([e for e in evidence if e.model == m], alpha, m)
                 for m in models}
        order = (FAIL, INCONCLUSIVE, PASS)
        worst = min(parts.values(), key=lambda d: order.index(d.verdict))
        whole = _decision(evidence, alpha, None)
        whole.verdict, whole.ratio, whole.by_model = worst.verdict, worst.ratio, parts
        whole.budget = budget
        return whole
    decision = _decision(evidence, alpha, None)
    decision.budget = budget
    return decision


def _index(cases: Iterable[RecordLike]) -> dict[str, RecordLike]:
    """Records by id, or by node id when ids repeat: the comparison's pairing rule (kept here,
    not imported from it: the comparison reads the gating modes, which read this module)."""
    items = list(cases)
    ids = [str(c.get("id")) for c in items]
    if len(set(ids)) == len(ids):
        return dict(zip(ids, items, strict=True))
    return {str(c.get("nodeid") or c.get("id")): c for c in items}


def _model(record: RecordLike) -> str | None:
    model = record.get("model")
    return str(model) if model is not None else None


def _decision(evidence: list[CaseEvidence], alpha: float, model: str | None) -> Decision:
    log_l = math.fsum(math.log(e.factor) for e in evidence)
    ratio = math.exp(min(log_l, 700.0))
    histories = [e.history for e in evidence if e.history is not None]
    return Decision(verdict_of(ratio, alpha), alpha, ratio, evidence,
                    min_detectable(histories, alpha), sum(e.runs for e in evidence),
                    model=model)


class Budget:
    """The adaptive repeats of a run under the evidence gate. A case is asked again only while
    its own evidence points to a drop (its last run failed and its factor is above 1: a
    reliable case that failed, a noisy one whose failures outrun its history), at most
    :data:`MAX_RUNS` runs, while the run's extra calls stay within the declared budget (calls
    per case on average over the run's cases, ``share`` of it for an xdist worker) and the
    verdict is not settled: once the finished cases' factors reach FAIL's boundary no case
    is asked again (every factor is at least ``1 - w``, and the decision is made)."""

    def __init__(self, per_case: float, cases: int, alpha: float,
                 histories: Mapping[str, History], *, share: float = 1.0) -> None:
        self.per_case = per_case
        self.extra = max(0, math.floor((per_case - 1) * cases * share + 1e-9))
        self.alpha = alpha
        self.histories = histories
        self.spent = 0
        self.log_l = 0.0

    def again(self, key: str, statuses: Sequence[str]) -> bool:
        """Whether the case keyed ``key`` (its id) is asked once more after ``statuses`` (its
        runs so far, oldest first)."""
        history = self.histories.get(key)
        if history is None or not statuses or statuses[-1] != "failed" \
                or len(statuses) >= MAX_RUNS or self.spent >= self.extra \
                or self.log_l >= math.log(bounds(self.alpha)[1]):
            return False
        if case_factor(history, statuses.count("passed"), statuses.count("failed")) <= 1:
            return False
        self.spent += 1
        return True

    def finished(self, key: str, statuses: Sequence[str]) -> None:
        """A case's runs are over: its factor joins the run's evidence."""
        history = self.histories.get(key)
        if history is not None:
            self.log_l += math.log(case_factor(history, statuses.count("passed"),
                                               statuses.count("failed")))
