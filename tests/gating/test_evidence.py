"""The evidence gate (issue 59 item 3): each case's history in the baseline, a three-verdict
decision (PASS, FAIL, INCONCLUSIVE) by Wald's SPRT over Beta-Binomial evidence, and its
statistics checked against SciPy's."""

from __future__ import annotations

import json
import math
import random

import pytest

from pytest_queryeval.baseline import evidence as ev
from pytest_queryeval.baseline.store import compact_baseline, expand_baseline
from pytest_queryeval.baseline.verdicts import NOISE, REGRESSION, Verdicts
from tests.gating.workload import REGRESSED, UNCHANGED

scipy_stats = pytest.importorskip("scipy.stats")
scipy_special = pytest.importorskip("scipy.special")


@pytest.mark.parametrize(("runs", "passes", "x", "f"), [
    (20, 20, 0, 1), (20, 20, 0, 4), (20, 17, 2, 1), (10, 5, 1, 1), (1, 1, 0, 1), (1, 0, 3, 0),
    (20, 0, 1, 5)])
def test_the_null_is_scipys_beta_binomial(runs, passes, x, f):
    """The probability of one ordered sequence of x passes and f failures is
    ``betabinom(m, a, b).pmf(x) / C(m, x)`` with the Jeffreys posterior of the history."""
    history = ev.History(runs, passes)
    a, b = passes + 0.5, runs - passes + 0.5
    want = scipy_stats.betabinom(x + f, a, b).pmf(x) / math.comb(x + f, x)
    assert math.exp(ev.null_log_prob(history, x, f)) == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize(("mu", "x", "f"), [(0.976, 0, 1), (0.976, 0, 6), (0.84, 2, 3),
                                            (0.5, 1, 1), (0.1, 0, 2), (0.976, 5, 1)])
def test_the_alternative_is_scipys_incomplete_beta(mu, x, f):
    want = scipy_special.betainc(x + 1, f + 1, mu) * scipy_special.beta(x + 1, f + 1) / mu
    assert math.exp(ev.alt_log_prob(mu, x, f)) == pytest.approx(want, rel=1e-9)


def test_each_factor_has_expectation_one_under_the_null():
    """What makes the product a test martingale (Ville: a false FAIL at most alpha): summed
    over every sequence of m runs, the factor weighted by its null probability is 1."""
    for history in (ev.History(20, 20), ev.History(20, 17), ev.History(20, 10),
                    ev.History(1, 1)):
        for m in (1, 2, 4):
            total = math.fsum(math.comb(m, x) * math.exp(ev.null_log_prob(history, x, m - x))
                              * ev.case_factor(history, x, m - x) for x in range(m + 1))
            assert total == pytest.approx(1.0, abs=1e-12)


def test_a_flaky_case_flipping_is_no_evidence_a_reliable_one_is():
    reliable, flaky = ev.History(10, 10), ev.History(10, 5)
    assert ev.case_factor(flaky, 0, 1) == pytest.approx(1.0, abs=0.2)
    assert ev.case_factor(reliable, 0, 1) > 3
    assert ev.case_factor(reliable, 0, 3) > ev.bounds(0.05)[1]  # 3 of 3 failed: FAIL alone
    assert ev.case_factor(reliable, 1, 0) < 1  # a pass is evidence for the null


def test_an_old_one_bit_baseline_reads_as_a_history_of_one_run():
    assert ev.history_of({"id": "a", "status": "passed"}) == ev.History(1, 1)
    assert ev.history_of({"id": "a", "status": "failed"}) == ev.History(1, 0)
    assert ev.history_of({"id": "a", "status": "error"}) is None
    assert ev.history_of({"id": "a", "history": [20, 17], "status": "failed"}) \
        == ev.History(20, 17)


def test_the_compact_baseline_keeps_each_cases_history():
    report = {"version": 1, "run": {}, "cases": [
        {"id": "a", "kind": "sql", "status": "failed", "outcome": "failed", "metrics": {},
         "details": {"repeat": {"n": 20, "passed": 17,
                                "statuses": ["passed"] * 17 + ["failed"] * 3}}},
        {"id": "b", "kind": "sql", "status": "passed", "outcome": "passed", "metrics": {}}]}
    compact = compact_baseline(report)
    assert compact["cases"][0]["history"] == [20, 17]
    assert "history" not in compact["cases"][1]  # one run: read from its status
    back = expand_baseline(json.loads(json.dumps(compact)))
    assert ev.history_of(back["cases"][0]) == ev.History(20, 17)
    assert ev.history_of(back["cases"][1]) == ev.History(1, 1)
    compact["cases"][0]["history"] = [3, 5]
    with pytest.raises(ValueError, match=r"cases\[0\].history"):
        expand_baseline(compact)


def _records(statuses: dict[str, list[str]], model: str | None = None) -> list[dict]:
    out = []
    for cid, runs in statuses.items():
        rec = {"id": cid if model is None else f"{cid}[{model}]", "status": runs[-1],
               "details": {"repeat": {"n": len(runs), "passed": runs.count("passed"),
                                      "statuses": runs}}}
        if model is not None:
            rec["model"] = model
        out.append(rec)
    return out


def test_decide_per_model_a_pooled_figure_never_hides_one_models_drop():
    base = [{**r, "history": [20, 20]} for m in ("a", "b")
            for r in _records({f"c{i}": ["passed"] for i in range(30)}, m)]
    now = _records({f"c{i}": ["passed"] for i in range(30)}, "a") + _records(
        {f"c{i}": (["failed"] * 3 if i < 3 else ["passed"]) for i in range(30)}, "b")
    decision = ev.decide(now, base, 0.05)
    assert decision.by_model["a"].verdict == ev.PASS
    assert decision.by_model["b"].verdict == ev.FAIL
    assert decision.verdict == ev.FAIL
    assert "evidence gate [b]: FAIL" in decision.by_model["b"].line()


def test_standing_within_history_or_regression():
    base = {"cases": [{"id": "stable", "history": [10, 10], "status": "passed"},
                      {"id": "flaky", "history": [10, 5], "status": "passed"}]}
    verdicts = Verdicts("evidence", base, 0.05)
    flaky = {"id": "flaky", "status": "failed", "failed_metrics": []}
    assert verdicts.decide(flaky)[1] == NOISE
    once = {"id": "stable", "status": "failed", "failed_metrics": []}
    assert verdicts.decide(once)[1] == NOISE  # one failure of a 10/10 case: not alone
    thrice = {**once, "details": {"repeat": {"n": 3, "passed": 0,
                                             "statuses": ["failed"] * 3}}}
    standing = verdicts.decide(thrice)
    assert standing[1] == REGRESSION and "0 of 3 runs passed, 10 of 10" in standing[2]
    # a flaky case that passes is not "fixed": it passed before too; one that never did is
    assert verdicts.decide({"id": "flaky", "status": "passed"})[1] is None
    never = Verdicts("evidence", {"cases": [{"id": "x", "history": [20, 0],
                                             "status": "failed"}]}, 0.05)
    assert never.decide({"id": "x", "status": "passed"})[1] == "fixed"


def _simulate(probabilities: list[float], histories: list[ev.History], rng: random.Random
              ) -> tuple[str, int]:
    """One gated run of the plugin's procedure (the engine's adaptive loop and the decision)
    on a seeded sampled model: the verdict and the calls."""
    budget = ev.Budget(ev.DEFAULT_BUDGET, len(probabilities), 0.05,
                       {f"c{i}": h for i, h in enumerate(histories)})
    records, calls = [], 0
    for i, p in enumerate(probabilities):
        statuses = ["passed" if rng.random() < p else "failed"]
        while budget.again(f"c{i}", statuses):
            statuses.append("passed" if rng.random() < p else "failed")
        budget.finished(f"c{i}", statuses)
        calls += len(statuses)
        records.extend(_records({f"c{i}": statuses}))
    base = [{"id": f"c{i}", "history": [h.runs, h.passes], "status": "passed"}
            for i, h in enumerate(histories)]
    return ev.decide(records, base, 0.05).verdict, calls


def test_the_workload_meets_the_targets_in_simulation():
    """Issue 59's workload through the plugin's own procedure (the bench runs it through
    pytest: bench/bench_sampled_gate.py): 5 baselines of 20 runs, 40 unchanged and 20
    regressed runs each. Measured: 0 FAIL and ~1 % INCONCLUSIVE unchanged, ~96 % FAIL
    regressed, ~1.2 calls per case."""
    rng = random.Random(59)
    same, worse, calls = [], [], 0
    for _ in range(5):
        histories = [ev.History(20, sum(rng.random() < p for _ in range(20)))
                     for p in UNCHANGED]
        for _ in range(40):
            verdict, used = _simulate(UNCHANGED, histories, rng)
            same.append(verdict)
            calls += used
        for _ in range(20):
            verdict, used = _simulate(REGRESSED, histories, rng)
            worse.append(verdict)
            calls += used
    assert same.count(ev.FAIL) / len(same) <= 1 / 20
    assert same.count(ev.INCONCLUSIVE) / len(same) <= 2 / 20
    assert worse.count(ev.FAIL) / len(worse) >= 9 / 10
    assert calls / (len(same) + len(worse)) / 60 <= 1.5
