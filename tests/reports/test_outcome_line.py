"""The summary names one thing with one word, counts what it says, and ends on the outcome
and its causes (issue 24 item 3)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pytest_queryeval.conclude.aggregate import evaluate_gates
from pytest_queryeval.report.terminal import gate_lines, gating_lines, outcome_line
from pytest_queryeval.suite.config import Gate


def _case(cid: str, outcome: str, standing: str | None = None, **metrics: float) -> dict[str, Any]:
    return {"id": cid, "kind": "sql", "file": "cases.yaml", "outcome": outcome,
            "standing": standing, "metrics": metrics}


def test_a_gate_counts_the_cases_its_value_is_computed_over(tmp_path: Path):
    # 88 cases under the gate, 66 of them have the metric: the mean is over 66
    records = [{**_case(f"c{i}", "passed", execution_accuracy=1.0 if i % 2 else 0.0),
                "path": str(tmp_path / "cases.yaml")} for i in range(66)]
    records += [{**_case(f"e{i}", "error"), "path": str(tmp_path / "cases.yaml")}
                for i in range(20)]
    records += [{**_case(f"s{i}", "skipped"), "path": str(tmp_path / "cases.yaml")}
                for i in range(2)]
    gates = evaluate_gates([Gate("execution_accuracy", "execution_accuracy", "mean", 0.9, tmp_path),
                            Gate("pass_rate", "pass_rate", "pass_rate", 0.9, tmp_path),
                            Gate("bird_ex", "bird_ex", "mean", 0.5, tmp_path)], records)
    assert [(g["cases"], g["n"]) for g in gates] == [(88, 66), (88, 86), (88, 0)]
    assert gate_lines(gates) == [
        "gate FAIL: mean execution_accuracy = 0.5000 (required >= 0.9, 66 of 88 cases scored)",
        "gate FAIL: pass rate = 0.7674 (required >= 0.9, 86 of 88 cases judged)",
        "gate FAIL: mean bird_ex = n/a (nothing scored: no case has bird_ex) "
        "(required >= 0.5, 0 of 88 cases scored)"]
    one = evaluate_gates([Gate("pass_rate", "pass_rate", "pass_rate", 0.5, tmp_path)],
                         records[:1])
    assert gate_lines(one) == ["gate PASS: pass rate = 1.0000 (required >= 0.5, 1 case)"]


def test_gates_mode_without_a_baseline_counts_no_regressions_and_singular_is_singular():
    report = {"run": {"gating": "gates"}, "cases": [
        _case("a", "xfailed", "below threshold"), _case("b", "passed")]}
    assert gating_lines(report, baseline=False) == ["gating gates: 1 below threshold (xfailed)"]
    report = {"run": {"gating": "baseline"}, "cases": [
        _case("a", "failed", "regression"), _case("b", "passed", "fixed")]}
    assert gating_lines(report) == [
        "gating baseline: 0 failing since baseline (xfailed), 1 regression, 1 fixed",
        "REGRESSION: a", "fixed: b"]


def test_the_last_line_names_the_outcome_and_each_cause():
    cases = [_case("count-patients", "failed", "regression"), _case("ok", "passed"),
             _case("known", "xfailed", "failing since baseline"), _case("new", "failed"),
             _case("infra", "error")]
    gates = [{"name": "pass_rate", "value": 0.6153, "op": ">=", "limit": 0.9, "passed": False},
             {"name": "cost_usd", "value": 0.5, "op": "<=", "limit": 0.25, "passed": False},
             {"name": "bird_ex", "value": None, "op": ">=", "limit": 0.5, "passed": False},
             {"name": "soft_f1", "value": 0.95, "op": ">=", "limit": 0.5, "passed": True}]
    # the aggregate comparison passed; the run still fails, and the line says why
    report = {"cases": cases, "gates": gates,
              "baseline": {"passed": True, "summary": "baseline OK: no significant drop"}}
    assert outcome_line(report, failed=True, problems=["baseline not updated"]) == (
        "queryeval: FAILED: 1 regression (count-patients); 1 failed case (new); 1 error (infra); "
        "gate pass_rate 0.6153 < 0.9; gate cost_usd 0.5 > 0.25; gate bird_ex scored nothing; "
        "baseline not updated")
    report = {"cases": [_case(f"r{i}", "failed", "regression") for i in range(5)], "gates": [],
              "baseline": {"passed": False, "summary": "baseline FAILED: pass_rate -0.300 > "
                                                       "max drop 0 (overall)"}}
    assert outcome_line(report, failed=True) == (
        "queryeval: FAILED: 5 regressions (r0, r1, r2 and 2 more); "
        "baseline drop: pass_rate -0.300 > max drop 0 (overall)")
    green = {"cases": [_case("ok", "passed"), _case("known", "xfailed", "failing since baseline")],
             "gates": gates[3:]}
    assert outcome_line(green, failed=False) == (
        "queryeval: PASSED (1 failing since baseline, xfailed)")
    assert outcome_line(green, failed=True) == (
        "queryeval: FAILED outside the cases (see pytest's summary)")
