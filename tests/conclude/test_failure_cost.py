"""Failures at scale (issue 43 item 6): an expected failure costs what a pass costs, and pytest's
failure summary stays linear in the cases while naming every failing case.

Real SQL cases with recorded results (``gold_result`` / ``predicted_result``); the costs are
asserted as the work done (a traceback built, the reports pytest's summary scans per failure),
never as times. ``bench/bench_verdict_modes.py`` and ``bench/bench_failures_scale.py`` time
them.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from _pytest import nodes

from tests.support import SUITE_INI, dump, read_report, run_report, write_suite

ROWS = [[1, "a"], [2, "b"]]


def _case(case_id: str, right: bool) -> dict[str, Any]:
    predicted = ROWS if right else [[1, "a"], [3, "c"]]
    return {"id": case_id, "question": f"question {case_id}",
            "gold_result": {"columns": ["n", "name"], "rows": ROWS},
            "predicted_result": {"columns": ["n", "name"], "rows": predicted}}


def _cases(pytester: pytest.Pytester, plan: dict[str, bool], ini: str = SUITE_INI) -> None:
    write_suite(pytester.path, ini=ini, files={"test_cases.yaml": {
        "kind": "sql", "thresholds": {"execution_accuracy": 1.0},
        "cases": [_case(case_id, right) for case_id, right in plan.items()]}})


def test_a_case_below_threshold_in_gates_mode_is_xfailed_without_a_traceback(
        suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """pytest.xfail() went through pytest's traceback rendering (every frame's source parsed
    again: ~60 ms a case); the plugin's own xfail renders as its one line."""
    _cases(suite, {"good": True, "low": False})
    built: list[str] = []
    original = nodes.Node._repr_failure_py

    def counting(self: nodes.Node, *args: Any, **kwargs: Any) -> Any:
        built.append(self.nodeid)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(nodes.Node, "_repr_failure_py", counting)
    longreprs: dict[str, str] = {}

    class Keep:
        def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
            if report.when == "call":
                longreprs[report.nodeid.split("::")[-1]] = str(report.longrepr)

    result = suite.runpytest("--queryeval-json=r.json", "--queryeval-gating=gates", "-rx",
                             plugins=[Keep()])
    report = read_report(suite.path / "r.json")
    assert report.outcomes == {"good": "passed", "low": "xfailed"}
    assert built == []
    assert longreprs["low"] == ("sql case 'low': below threshold: execution_accuracy=0.000 "
                                "(min 1)")
    result.stdout.fnmatch_lines(["XFAIL test_cases.yaml::low - below threshold: "
                                 "execution_accuracy=0.000 (min 1)"])


def test_with_runxfail_a_granted_xfail_fails_with_the_case_text(suite: pytest.Pytester) -> None:
    """--runxfail makes the mode's xfail a failure again: shown as a case failure, not as a
    traceback into the plugin."""
    _cases(suite, {"low": False})
    result, _ = run_report(suite, "--queryeval-gating=gates", "--runxfail")
    out = result.stdout.str()
    assert "execution_accuracy  0.000  >= 1       FAIL" in out
    assert "Traceback" not in out and "collect.py" not in out


def test_past_max_failure_details_each_failing_case_is_one_line(
        suite: pytest.Pytester) -> None:
    """The first N failing cases in full, every further one in one line that names it: the
    -rf short summary and the counts are pytest's own."""
    plan = {"ok": True, **{f"bad{i}": False for i in range(5)}}
    _cases(suite, plan, ini=SUITE_INI + "queryeval_max_failure_details = 2\n")
    result, report = run_report(suite, "-rf")
    out = result.stdout.str()
    section = out.split("= FAILURES =")[1].split("= queryeval =")[0]
    assert section.count("metric              value  threshold") == 2  # bad0, bad1 in full
    for i in (2, 3, 4):
        assert re.search(rf"^sql case 'bad{i}' \(test_cases.yaml:\d+\): "
                         r"execution_accuracy=0.000 \(min 1\)$", section, re.MULTILINE)
    assert "(failing cases after the first 2 in one line each: ini " \
           "queryeval_max_failure_details" in section
    result.stdout.fnmatch_lines([f"FAILED test_cases.yaml::bad{i} - sql case 'bad{i}'*"
                                 for i in range(5)])
    result.assert_outcomes(passed=1, failed=5)
    assert report["cases"][-1]["diff"]  # the JSON report keeps every case's full text


def test_max_failure_details_zero_shows_every_case_in_full(suite: pytest.Pytester) -> None:
    _cases(suite, {f"bad{i}": False for i in range(3)},
           ini=SUITE_INI + "queryeval_max_failure_details = 0\n")
    # the short summary stays short (on CI pytest prints a failure's whole text there too)
    result = suite.runpytest("--force-short-summary")
    assert result.stdout.str().count("metric              value  threshold") == 3


def test_an_invalid_max_failure_details_is_a_usage_error(suite: pytest.Pytester) -> None:
    _cases(suite, {"ok": True}, ini=SUITE_INI + "queryeval_max_failure_details = many\n")
    result = suite.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*ini queryeval_max_failure_details: 'many' is not a whole "
                                 "number >= 0*"])


def test_the_failure_summary_scans_no_case_setup_or_teardown_report(
        suite: pytest.Pytester) -> None:
    """pytest looks up each failure's teardown output in every setup and teardown report
    (``stats[""]``): failures x items. The cases' own, which hold nothing to print, are out
    of that list before pytest writes its summary; a Python test's stay."""
    _cases(suite, {"ok": True, "bad": False})
    suite.makepyfile(test_plain="def test_plain():\n    pass\n")
    seen: dict[str, list[str]] = {}

    class Look:
        def pytest_terminal_summary(self, terminalreporter: Any) -> None:
            seen["reports"] = [f"{r.nodeid} {r.when}" for r in
                               terminalreporter.stats.get("", [])]

    result = suite.runpytest("--queryeval-json=r.json", plugins=[Look()])
    report = read_report(suite.path / "r.json")
    assert report.outcomes == {"ok": "passed", "bad": "failed"}
    assert seen["reports"] == ["test_plain.py::test_plain setup",
                               "test_plain.py::test_plain teardown"]
    assert "sql case 'bad' (test_cases.yaml:" in result.stdout.str()  # its failure in full


def test_the_ini_value_is_declared(suite: pytest.Pytester) -> None:
    """A project setting it gets no unknown-ini warning."""
    _cases(suite, {"ok": True}, ini=SUITE_INI + "queryeval_max_failure_details = 5\n")
    result = suite.runpytest("-W", "error::pytest.PytestConfigWarning")
    assert result.ret == 0, dump(result.outlines[-20:])


def test_xfail_tb_shows_the_case_text_of_a_granted_xfail(suite: pytest.Pytester) -> None:
    """pytest's XFAILURES section (--xfail-tb) is where a granted xfail's text is asked for:
    the case's failure text, not a traceback into the plugin."""
    _cases(suite, {"low": False})
    result, _ = run_report(suite, "--queryeval-gating=gates", "--xfail-tb")
    section = result.stdout.str().split("= XFAILURES =")[1]
    assert "execution_accuracy  0.000  >= 1       FAIL" in section
    assert "collect.py" not in section
