"""--queryeval-gating (issue 19 item 2): a model at 70% is green until it regresses.

A real SQLite database and real SQL cases: the baseline is the JSON report of a first run,
the second run's predictions change case by case.
"""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest

from tests.sdmx_cases import dump, outcomes_by_id
from tests.support import read_report

GOLD = "SELECT x FROM t ORDER BY x"
RIGHT = "SELECT x FROM t ORDER BY x"
WRONG = "SELECT x FROM t WHERE x > 1"
BROKEN = "SELECT nope FROM t"  # a query error: no such column

#: case id -> (prediction in the baseline run, prediction now); None: no prediction (an error)
PLAN: dict[str, tuple[str | None, str | None]] = {
    "ok": (RIGHT, RIGHT),
    "known": (WRONG, WRONG),  # failing since baseline: xfailed
    "fixed": (WRONG, RIGHT),
    "regressed": (RIGHT, WRONG),  # a regression: failed
    "broke": (RIGHT, BROKEN),  # errors now, passed in the baseline: a regression
    "known-broken": (WRONG, BROKEN),  # failed before, a query error now: xfailed, reason shown
    "infra": (None, None),  # no prediction in both runs: stays an error
}


def _write(pytester: pytest.Pytester, which: int, plan: dict[str, tuple[str | None, str | None]],
           extra: list[dict[str, Any]] | None = None) -> None:
    cases = []
    for case_id, preds in plan.items():
        case: dict[str, Any] = {"id": case_id, "question": f"question {case_id}", "gold": GOLD}
        if preds[which] is not None:
            case["predicted"] = preds[which]
        cases.append(case)
    pytester.makefile(".yaml", test_cases=dump({"kind": "sql", "datasource": "db",
                                                "cases": [*cases, *(extra or [])]}))


@pytest.fixture
def sql_suite(suite: pytest.Pytester) -> pytest.Pytester:
    with sqlite3.connect(suite.path / "db.sqlite") as con:
        con.execute("CREATE TABLE t (x INTEGER)")
        con.executemany("INSERT INTO t VALUES (?)", [(1,), (2,), (3,)])
    con.close()
    suite.makefile(".yaml", queryeval=dump({
        "datasources": {"db": {"type": "sqlite", "path": "db.sqlite"}},
        "thresholds": {"execution_accuracy": 1.0}}))
    _write(suite, 0, PLAN)
    suite.runpytest("--queryeval-json=base.json")
    _write(suite, 1, PLAN, [{"id": "new", "question": "q", "gold": GOLD, "predicted": WRONG}])
    return suite


def _report(pytester: pytest.Pytester) -> dict[str, Any]:
    return read_report(pytester.path / "r.json")


@pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["serial", "xdist"])
def test_baseline_verdict_forgives_known_failures_only(sql_suite, workers):
    result = sql_suite.runpytest_subprocess("--queryeval-gating=baseline", "-rx",
                                            "--queryeval-baseline=base.json",
                                            "--queryeval-json=r.json", *workers)
    report = _report(sql_suite)
    assert outcomes_by_id(report) == {
        "ok": "passed", "known": "xfailed", "fixed": "passed", "regressed": "failed",
        "broke": "failed", "known-broken": "xfailed", "infra": "error", "new": "failed"}
    verdicts = {c["id"]: c["standing"] for c in report["cases"]}
    assert verdicts == {"ok": None, "known": "failing since baseline", "fixed": "fixed",
                        "regressed": "regression", "broke": "regression",
                        "known-broken": "failing since baseline", "infra": None, "new": None}
    assert report["run"]["gating"] == "baseline"
    result.assert_outcomes(passed=2, failed=4, xfailed=2)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines([
        "gating baseline: 2 failing since baseline (xfailed), 2 regressions, 1 fixed",
        "REGRESSION: regressed, broke", "fixed: fixed"])
    # the summary's last line names the outcome and each cause
    result.stdout.fnmatch_lines(["queryeval: FAILED: 2 regressions (regressed, broke); "
                                 "1 failed case (new); 1 error (infra)", "*short test summary*"])
    for line in ("XFAIL test_cases.yaml::known - failing since baseline: "  # -rx, in any order
                 "execution_accuracy=0.000 (min 1)",
                 "XFAIL test_cases.yaml::known-broken - failing since baseline: query failed: "
                 "no such column: nope"):
        assert line in result.stdout.str()
    # the xfails granted by the verdict still count as failures in the pass rate
    overall = report["aggregates"]["overall"]
    assert (overall["passed"], overall["xfailed"], overall["xfailed_by_gating"]) == (2, 2, 2)
    assert overall["pass_rate"] == pytest.approx(2 / 8)


def test_a_70_percent_model_is_green_until_it_regresses(suite):
    """Seven of ten right: strict fails, baseline mode passes, one regression fails it."""
    with sqlite3.connect(suite.path / "db.sqlite") as con:
        con.execute("CREATE TABLE t (x INTEGER)")
        con.executemany("INSERT INTO t VALUES (?)", [(1,), (2,), (3,)])
    con.close()
    suite.makefile(".yaml", queryeval=dump({
        "datasources": {"db": {"type": "sqlite", "path": "db.sqlite"}},
        "thresholds": {"execution_accuracy": 1.0}, "gates": {"execution_accuracy": 0.65}}))
    plan = {f"q{i}": ((RIGHT, RIGHT) if i < 7 else (WRONG, WRONG)) for i in range(10)}
    _write(suite, 0, plan)
    strict = suite.runpytest("--queryeval-json=base.json")
    assert strict.ret == pytest.ExitCode.TESTS_FAILED
    green = suite.runpytest("--queryeval-gating=baseline", "--queryeval-baseline=base.json")
    green.assert_outcomes(passed=7, xfailed=3)
    assert green.ret == pytest.ExitCode.OK
    green.stdout.fnmatch_lines(["overall: 10 cases, 7 passed, 0 failed, 0 errors, 3 xfailed "
                                "(3 by the gating mode), 0 skipped; pass rate 70.0%"])
    plan["q0"] = (RIGHT, WRONG)
    _write(suite, 1, plan)
    red = suite.runpytest("--queryeval-gating=baseline", "--queryeval-baseline=base.json")
    red.assert_outcomes(passed=6, failed=1, xfailed=3)
    assert red.ret == pytest.ExitCode.TESTS_FAILED
    red.stdout.fnmatch_lines(["REGRESSION: this case passed in the baseline",
                              "gating baseline: 3 failing since baseline (xfailed), "
                              "1 regression, 0 fixed", "REGRESSION: q0",
                              "queryeval: FAILED: 1 regression (q0); gate execution_accuracy 0.6 < 0.65"])
    # gates mode: the same run is judged by the gate only (EX mean 0.6 < 0.65 fails it)
    gates = suite.runpytest("--queryeval-gating=gates")
    gates.assert_outcomes(passed=6, xfailed=4)
    assert gates.ret == pytest.ExitCode.TESTS_FAILED
    gates.stdout.fnmatch_lines(["gate FAIL: mean execution_accuracy = 0.6000*",
                                "queryeval: FAILED: gate execution_accuracy 0.6 < 0.65"])
    suite.makeini("[pytest]\nqueryeval_files = test_*.yaml\nqueryeval_gating = gates\n")
    suite.makefile(".yaml", queryeval=dump({
        "datasources": {"db": {"type": "sqlite", "path": "db.sqlite"}},
        "thresholds": {"execution_accuracy": 1.0}, "gates": {"execution_accuracy": 0.6}}))
    gates = suite.runpytest("-rx")
    assert gates.ret == pytest.ExitCode.OK
    # no baseline: nothing can be a regression or fixed, so neither is counted
    gates.stdout.fnmatch_lines(["gating gates: 4 below threshold (xfailed)",
                                "queryeval: PASSED (4 below threshold, xfailed)",
                                "*XFAIL test_cases.yaml::q0 - below threshold: "
                                "execution_accuracy=0.000 (min 1)*"])


def test_gates_mode_keeps_a_query_error_that_passed_in_the_baseline_a_failure(sql_suite):
    result = sql_suite.runpytest("--queryeval-gating=gates", "--queryeval-baseline=base.json",
                                 "--queryeval-json=r.json")
    outcomes = outcomes_by_id(_report(sql_suite))
    assert outcomes == {"ok": "passed", "known": "xfailed", "fixed": "passed",
                        "regressed": "xfailed", "broke": "failed", "known-broken": "xfailed",
                        "infra": "error", "new": "xfailed"}
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_gating_usage_errors(suite):
    suite.makefile(".yaml", test_x=dump({"kind": "sql", "cases": []}))
    result = suite.runpytest("--queryeval-gating=baseline")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--queryeval-gating=baseline needs --queryeval-baseline PATH" in result.stderr.str()
    suite.makeini("[pytest]\nqueryeval_files = test_*.yaml\nqueryeval_gating = lenient\n")
    result = suite.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "ini queryeval_gating: 'lenient' is not one of strict, baseline, gates" in (
        result.stderr.str())


def test_the_old_spellings_still_work_with_a_deprecation_warning(sql_suite):
    """Issue 43 item 5: ``--queryeval-verdict``, ini ``queryeval_verdict`` and a case's
    ``repeat_verdict`` keep working for one release, each named in a warning with its new
    spelling; the run is the one the new spelling gives."""
    new = sql_suite.runpytest("--queryeval-gating=baseline", "--queryeval-baseline=base.json",
                              "--queryeval-json=new.json")
    old = sql_suite.runpytest("--queryeval-verdict=baseline", "--queryeval-baseline=base.json",
                              "--queryeval-json=old.json")
    assert old.ret == new.ret == pytest.ExitCode.TESTS_FAILED
    assert "--queryeval-verdict is deprecated, use --queryeval-gating (same values)" in (
        old.stdout.str())
    assert "deprecated" not in new.stdout.str()
    standing = {c["id"]: c["standing"] for c in read_report(sql_suite.path / "old.json")["cases"]}
    assert standing == {c["id"]: c["standing"]
                        for c in read_report(sql_suite.path / "new.json")["cases"]}
    assert read_report(sql_suite.path / "old.json")["run"]["gating"] == "baseline"
    sql_suite.makeini("[pytest]\nqueryeval_files = test_*.yaml\nqueryeval_verdict = gates\n")
    ini = sql_suite.runpytest("--queryeval-json=ini.json")
    assert read_report(sql_suite.path / "ini.json")["run"]["gating"] == "gates"
    assert "ini queryeval_verdict is deprecated, use ini queryeval_gating" in ini.stdout.str()
    sql_suite.makefile(".yaml", test_cases=dump({"kind": "sql", "datasource": "db",
                                                 "repeat_verdict": "any",
                                                 "cases": [{"id": "r", "question": "q",
                                                            "gold": GOLD, "predicted": RIGHT}]}))
    keyed = sql_suite.runpytest("-p", "no:cacheprovider")
    keyed.stdout.fnmatch_lines(["*test_cases.yaml:*: cases[[]0[]].repeat_verdict: repeat_verdict "
                                "is deprecated, use repeat_rule (same values)*"])


def test_queryeval_merge_names_the_old_option(tmp_path, monkeypatch, capsys):
    from pytest_queryeval.conclude.merge import run as merge_run

    monkeypatch.chdir(tmp_path)
    status = merge_run(["missing.json", "--queryeval-verdict=strict"])
    err = capsys.readouterr().err
    assert "queryeval merge: warning: --queryeval-verdict is deprecated, use --queryeval-gating " \
           "(same values)" in err
    assert status == 4  # the missing shard is still refused, after the warning
