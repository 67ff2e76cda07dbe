"""Issue 50 item 5: a report that holds one case twice is refused, naming the id.

A real run's report with one failing case; a second record of that case is appended: a
forged pass whose digest is computed again (as anyone can). ``--queryeval-resume`` carried it
as passed and ``queryeval merge`` counted ``2 cases, 2 passed``, without a word; both now
refuse the report naming the case id. A case defined twice in a suite (the located
``duplicate id`` error, another node id) is no duplicate record.
"""

from __future__ import annotations

import json
import sys

import pytest

from pytest_queryeval.report.json_report import DIGEST, record_digest, record_text
from pytest_queryeval.report.shardcheck import check_report
from tests.sdmx_cases import GDP, MEX, dump, sdmx_case, selection


def _failing_report(pytester: pytest.Pytester) -> dict:
    pytester.makefile(".yaml", test_cases=dump({
        "kind": "sdmx", "thresholds": {"macro_precision": 1.0},
        "cases": [sdmx_case("c1", selection(GDP), selection(MEX))]}))
    pytester.runpytest("--queryeval-json=attempt-1.json").assert_outcomes(failed=1)
    return json.loads((pytester.path / "attempt-1.json").read_text())


def _with_forged_pass(pytester: pytest.Pytester, report: dict, **changed: str) -> None:
    genuine = report["cases"][0]
    forged = {k: v for k, v in genuine.items() if k != DIGEST}
    forged.update(outcome="passed", reason=None, failed_metrics=[], **changed)
    forged[DIGEST] = record_digest(record_text(forged))
    report["cases"].append(forged)
    (pytester.path / "attempt-1.json").write_text(json.dumps(report))


REFUSAL = ("cases[1].id: duplicate case id 'c1' (also cases[0]): a report holds one record "
           "per case; run the shard again rather than edit its report")


def test_resume_refuses_a_report_holding_a_case_twice(suite):
    _with_forged_pass(suite, _failing_report(suite))
    retry = suite.runpytest("--queryeval-resume=attempt-1.json")
    assert retry.ret == pytest.ExitCode.USAGE_ERROR  # before: 1 passed, carried
    assert f"--queryeval-resume: attempt-1.json: {REFUSAL}" in retry.stderr.str()


def test_resume_refuses_the_forged_record_under_another_node_id(suite):
    """The same forgery with the node id changed: one id asked the same way twice."""
    report = _failing_report(suite)
    _with_forged_pass(suite, report, nodeid="test_cases.yaml::c1-again")
    retry = suite.runpytest("--queryeval-resume=attempt-1.json")
    assert retry.ret == pytest.ExitCode.USAGE_ERROR  # before: 1 passed, carried
    assert f"--queryeval-resume: attempt-1.json: {REFUSAL}" in retry.stderr.str()


def test_merge_refuses_a_report_holding_a_case_twice(suite):
    _with_forged_pass(suite, _failing_report(suite))
    result = suite.run(sys.executable, "-m", "pytest_queryeval.conclude.cli", "merge",
                       "attempt-1.json", "--queryeval-json=merged.json")
    assert result.ret != 0  # before: 0 and "2 cases, 2 passed"
    assert not (suite.path / "merged.json").exists()
    assert f"attempt-1.json: {REFUSAL}" in result.stderr.str()


def test_a_case_defined_twice_in_the_suite_is_not_a_duplicate_record(suite):
    """Two entries with one id: the second is a located error under another node id; its
    report is read by resume and merge as before."""
    suite.makefile(".yaml", test_cases=dump({"kind": "sdmx", "cases": [
        sdmx_case("c1", selection(GDP)), sdmx_case("c1", selection(GDP))]}))
    suite.runpytest("--queryeval-json=r.json")
    report = json.loads((suite.path / "r.json").read_text())
    assert [c["id"] for c in report["cases"]] == ["c1", "c1"]
    assert check_report(report) == []
    result = suite.run(sys.executable, "-m", "pytest_queryeval.conclude.cli", "merge",
                       "r.json", "--queryeval-json=merged.json")
    assert "duplicate case id" not in result.stderr.str()
