"""pass@k and pass^k (``metrics/pass_k.py``) against the references run unmodified.

The oracle files of ``tests/data/passk/`` (PROVENANCE.md) hold what HumanEval's
``estimate_pass_at_k`` and tau-bench's ``display_metrics`` gave: every comparison here is
``==`` on floats, digit for digit.
"""

from __future__ import annotations

import json
import math

import pytest

from pytest_queryeval.metrics.pass_k import (
    pass_at_k,
    pass_hat_k,
    pass_k_figures,
    suite_pass_at_k,
    suite_pass_hat_k,
)


def _load(shared_data, name):
    return json.loads((shared_data / "passk" / name).read_text(encoding="utf-8"))


def _tasks(records):
    """tau-bench's (n, c) per task, in the order ``display_metrics`` meets the tasks; n is
    each task's own trial count, and the run's (its ``num_trials``)."""
    trials, passed, seen = {}, {}, []
    for task, _, reward in records:
        if task not in trials:
            seen.append(task)
        trials[task] = trials.get(task, 0) + 1
        passed[task] = passed.get(task, 0) + ((1 - 1e-6) <= reward <= (1 + 1e-6))
    return [(trials[t], passed[t]) for t in seen], len({trial for _, trial, _ in records})


def test_the_airline_trajectories_give_tau_benchs_printed_pass_hat_k(shared_data):
    airline = _load(shared_data, "airline.json")
    assert airline["pass_hat_k"] == {"1": 0.42, "2": 0.2733333333333333, "3": 0.22, "4": 0.2}
    assert "k=2: 0.2733333333333333" in airline["printed"]
    cases, _ = _tasks(airline["records"])
    assert len(cases) == 50 and {n for n, _ in cases} == {4}
    figures = pass_k_figures(cases)
    assert figures["pass_hat_k"] == airline["pass_hat_k"]
    assert figures["n"] == 4 and figures["cases"] == 50 and figures["runs"] == {"4": 50}
    # pass@4 is the share of tasks some trial solved; pass@1 is pass^1, the mean success rate
    assert figures["pass_at_k"]["1"] == airline["pass_hat_k"]["1"]
    assert figures["pass_at_k"]["4"] == sum(c > 0 for _, c in cases) / 50


def test_pass_hat_k_is_display_metrics_digit_for_digit_on_every_generated_run_set(shared_data):
    sets = _load(shared_data, "taubench.json")
    assert len(sets) == 10
    for run_set in sets:
        cases, trials = _tasks(run_set["records"])
        printed = {int(k): v for k, v in run_set["pass_hat_k"].items()}
        assert sorted(printed) == list(range(1, trials + 1)), run_set["name"]
        if len({n for n, _ in cases}) == 1:  # every task ran every trial: the same n
            got = {k: suite_pass_hat_k(cases, k) for k in printed}
        else:  # display_metrics divides by the run's trial count (its quirk): given that n
            got = {k: suite_pass_hat_k([(trials, c) for _, c in cases], k) for k in printed}
        assert got == printed, run_set["name"]


def test_uneven_trials_differ_from_display_metrics_only_by_its_run_wide_n(shared_data):
    """Each case's own n here; tau-bench's one n of the run for the task that missed trials."""
    run_set = next(s for s in _load(shared_data, "taubench.json") if s["name"].startswith("uneven"))
    cases, trials = _tasks(run_set["records"])
    assert trials == 4 and {n for n, _ in cases} == {2, 3, 4}
    figures = pass_k_figures(cases)
    assert figures["n"] == 2 and figures["runs"] == {"2": 5, "3": 1, "4": 9}
    assert list(figures["pass_hat_k"]) == ["1", "2"]  # k up to the fewest runs of a case
    # a task with 2 of its 2 trials passed: pass^2 is 1 here, C(2,2)/C(4,2) = 1/6 for tau-bench
    assert pass_hat_k(2, 2, 2) == 1.0 and pass_hat_k(trials, 2, 2) == 1 / 6
    assert figures["pass_hat_k"]["1"] != run_set["pass_hat_k"]["1"]


def test_rewards_within_tau_benchs_tolerance_count_as_success(shared_data):
    run_set = next(s for s in _load(shared_data, "taubench.json") if "tolerance" in s["name"])
    rewards = {reward for _, _, reward in run_set["records"]}
    assert {1 - 1e-6, 1 + 1e-6, 1 - 2e-6, 0.5} <= rewards
    cases, _ = _tasks(run_set["records"])
    assert {k: suite_pass_hat_k(cases, k) for k in range(1, 5)} == {
        int(k): v for k, v in run_set["pass_hat_k"].items()}


def test_pass_at_k_is_estimate_pass_at_k_digit_for_digit_on_the_grid(shared_data):
    grid = _load(shared_data, "humaneval.json")["grid"]
    assert len(grid) > 500
    wrong = [(n, c, k, value, pass_at_k(n, c, k)) for n, c, k, value in grid
             if pass_at_k(n, c, k) != value]
    assert wrong == []
    # the reason for the product form: the exact 1 - C(n-c,k)/C(n,k) rounds otherwise, here
    exact = [(n, c, k) for n, c, k, value in grid
             if n - c >= k and 1 - math.comb(n - c, k) / math.comb(n, k) != value]
    assert exact


def test_suite_pass_at_k_is_humaneval_mean_digit_for_digit_with_uneven_n(shared_data):
    suites = _load(shared_data, "humaneval.json")["suites"]
    uneven = [s for s in suites if len({n for n, _ in s["cases"]}) > 1]
    assert len(uneven) >= 3
    for s in suites:
        cases = [(n, c) for n, c in s["cases"]]
        figures = pass_k_figures(cases)
        # the k HumanEval reports: those every problem has samples for
        assert list(figures["pass_at_k"]) == list(s["mean"])
        for k, per_case in s["per_case"].items():
            assert [pass_at_k(n, c, int(k)) for n, c in cases] == per_case
        assert figures["pass_at_k"] == s["mean"]
        assert {k: suite_pass_at_k(cases, int(k)) for k in s["mean"]} == s["mean"]


def test_a_plain_left_to_right_mean_would_miss_humaneval_by_a_digit(shared_data):
    """Why numpy's pairwise mean: the oracle has suites where a plain sum rounds otherwise."""
    suites = _load(shared_data, "humaneval.json")["suites"]
    off = [(len(s["cases"]), k) for s in suites for k, per in s["per_case"].items()
           if math.fsum(per) / len(per) != s["mean"][k] or sum(per) / len(per) != s["mean"][k]]
    assert off


@pytest.mark.parametrize(("n", "c"), [(4, 0), (4, 1), (4, 3), (4, 4), (7, 5)])
def test_k_equal_n_is_the_case_metrics_pass_at_k_and_pass_all_k(n, c):
    assert pass_at_k(n, c, n) == (1.0 if c else 0.0)
    assert pass_hat_k(n, c, n) == (1.0 if c == n else 0.0)


def test_no_repeated_case_gives_no_figures():
    assert pass_k_figures([]) is None


def test_a_gate_takes_its_k_from_the_records_it_selects():
    """What ``queryeval merge`` and a resumed run evaluate: the gate over plain records. A case
    that ran once is not a repeated case; a k beyond the fewest runs gates nothing, and says so."""
    from pathlib import Path

    from pytest_queryeval.conclude.aggregate import evaluate_gates
    from pytest_queryeval.suite.config import Gate

    records = [{"id": f"c{c}", "file": "test_x.yaml", "outcome": "passed",
                "details": {"repeat": {"n": 4, "passed": c}}} for c in (4, 2, 0)]
    records.append({"id": "once", "file": "test_x.yaml", "outcome": "passed", "details": {}})
    root = Path("/")
    gates = evaluate_gates([Gate("hat2", "pass_hat_k", "mean", 0.3, root, k=2),
                            Gate("at1", "pass_at_k", "mean", 0.6, root, k=1),
                            Gate("hat5", "pass_hat_k", "mean", 0.1, root, k=5),
                            Gate("none", "pass_hat_k", "mean", 0.1, root, tag="smoke", k=1)],
                           records)
    got = {g["name"]: (g["k"], g["value"], g["cases"], g["n"], g["passed"], g["reason"])
           for g in gates}
    assert got["hat2"] == (2, (1 + 1 / 6 + 0) / 3, 4, 3, True, None)
    assert got["at1"] == (1, 0.5, 4, 3, False, None)
    assert got["hat5"] == (5, None, 4, 0, False, "pass^5 needs k runs of every case: k is out "
                           "of 1..4 (the fewest runs of a gated case)")
    assert got["none"][1:] == (None, 0, 0, False, "nothing scored: no case matched")
    alone = evaluate_gates([Gate("hat1", "pass_hat_k", "mean", 0.1, root, k=1)], records[-1:])
    assert (alone[0]["value"], alone[0]["passed"]) == (None, False)
    assert alone[0]["reason"].startswith("nothing scored: no case was repeated")
