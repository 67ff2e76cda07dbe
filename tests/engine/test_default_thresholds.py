"""No case passes unchecked (issue 24, item 2): a case on which no threshold of the suite, its
file or itself names a score of its kind is gated by the kind's documented default threshold;
a kind without one makes such a case an error; ``record_only: true`` records without gating.
The summary and the JSON report say how many cases each threshold gated."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

import pytest

from tests.sdmx_cases import GDP, GDP_PLUS, dump, sdmx_case, selection
from tests.support import read_report


def _report(pytester: pytest.Pytester, name: str = "r.json") -> dict[str, Any]:
    data: dict[str, Any] = read_report(pytester.path / name)
    return data


def _by_id(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["id"]: c for c in report["cases"]}


@pytest.mark.slow
def test_json_case_with_a_wrong_filter_fails_when_only_execution_accuracy_is_set(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """The adopter's suite: an SQL case and a JSON case, one suite threshold on
    execution_accuracy. The JSON case's wrong filter scored json_similarity 0.6 and passed,
    since no threshold applied to it; the JSON kind's default now gates it."""
    monkeypatch.setenv("QUERYEVAL_EMBEDDINGS_CACHE", str(pytester.path / "embeddings"))
    db = pytester.path / "clinic.sqlite"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE patient (id INTEGER, age INTEGER)")
        conn.executemany("INSERT INTO patient VALUES (?, ?)", [(1, 30), (2, 70), (3, 81)])
    conn.close()
    pytester.makeini("[pytest]\nqueryeval_files = test_*.yaml\n")
    pytester.makefile(".yaml", queryeval=dump({
        "datasources": {"clinic": {"type": "sqlite", "path": "clinic.sqlite"}},
        "thresholds": {"execution_accuracy": 1.0}}))
    pytester.makefile(".yaml", test_sql=dump({"kind": "sql", "datasource": "clinic", "cases": [
        {"id": "count-old", "gold": "SELECT count(*) FROM patient WHERE age > 65",
         "predicted": "SELECT COUNT(*) FROM patient WHERE age > 65"}]}))
    pytester.makefile(".yaml", test_json=dump({"kind": "json", "keys": "paths", "cases": [
        {"id": "old-patients",
         "gold": {"query": {"patients": {"age": {"filter": {"gt": 65}}, "sort": "age"}}},
         "predicted": json.dumps(
             {"query": {"patients": {"age": {"filter": {"lt": 65}}, "sort": "age"}}})}]}))
    result = pytester.runpytest_inprocess("-p", "no:randomly", "--queryeval-json=r.json")
    result.assert_outcomes(passed=1, failed=1)
    report = _report(pytester)
    cases = _by_id(report)
    wrong = cases["old-patients"]
    assert wrong["outcome"] == "failed"
    assert wrong["metrics"]["json_similarity"] < 0.999999
    assert wrong["thresholds"] == {"json_similarity": {"min": 0.999999}}
    assert wrong["default_thresholds"] == ["json_similarity"]
    assert wrong["failed_metrics"] == ["json_similarity"]
    assert cases["count-old"]["outcome"] == "passed"
    assert cases["count-old"]["default_thresholds"] == []
    assert report["aggregates"]["thresholds"] == {
        "gated": [{"metric": "execution_accuracy", "min": 1.0, "cases": 1, "by_default": 0},
                  {"metric": "json_similarity", "min": 0.999999, "cases": 1, "by_default": 1}],
        "ungated": []}
    result.stdout.fnmatch_lines([
        "thresholds: execution_accuracy >= 1 gated 1 case, json_similarity >= 0.999999 gated "
        "1 case (1 by default)"])


def _sdmx_suite(suite: pytest.Pytester, config: dict[str, Any], **case: Any) -> None:
    suite.makefile(".yaml", queryeval=dump(config))
    suite.makefile(".yaml", test_s=dump({"kind": "sdmx", "cases": [
        sdmx_case("right", selection(GDP), selection(GDP), **case),
        sdmx_case("wrong", selection(GDP), selection(GDP_PLUS), **case)]}))


def test_sdmx_cases_with_no_applicable_threshold_gate_on_macro_f1(suite: pytest.Pytester) -> None:
    """A suite threshold on a metric SDMX does not produce leaves the SDMX cases to the
    kind's default, macro_f1 >= 1."""
    _sdmx_suite(suite, {"thresholds": {"execution_accuracy": 1.0}})
    result = suite.runpytest("--queryeval-json=r.json")
    result.assert_outcomes(passed=1, failed=1)
    cases = _by_id(_report(suite))
    assert cases["wrong"]["thresholds"] == {"macro_f1": {"min": 1.0}}
    assert cases["wrong"]["failed_metrics"] == ["macro_f1"]
    assert cases["right"]["default_thresholds"] == ["macro_f1"]
    result.stdout.fnmatch_lines(["thresholds: macro_f1 >= 1 gated 2 cases (2 by default)"])
    assert "ungated" not in result.stdout.str()


def test_a_timing_threshold_does_not_gate_the_answer(suite: pytest.Pytester) -> None:
    """A latency ceiling says nothing about the answer: the default applies beside it."""
    suite.makefile(".yaml", queryeval=dump({
        "predictions": {"source": "file", "path": "p.jsonl"},
        "thresholds": {"prediction_seconds": {"max": 60}}}))
    suite.makefile(".jsonl", p="\n".join(json.dumps(
        {"id": i, "predicted": sel,
         "latency": 1.5}) for i, sel in (("right", selection(GDP)),
                                         ("wrong", selection(GDP_PLUS)))))
    suite.makefile(".yaml", test_s=dump({"kind": "sdmx", "cases": [
        sdmx_case("right", selection(GDP)), sdmx_case("wrong", selection(GDP))]}))
    result = suite.runpytest("--queryeval-json=r.json")
    result.assert_outcomes(passed=1, failed=1)
    cases = _by_id(_report(suite))
    assert cases["wrong"]["metrics"]["prediction_seconds"] == 1.5
    assert cases["wrong"]["thresholds"] == {
        "prediction_seconds": {"max": 60.0}, "macro_f1": {"min": 1.0}}
    assert cases["wrong"]["failed_metrics"] == ["macro_f1"]


def test_an_explicit_threshold_replaces_the_default(suite: pytest.Pytester) -> None:
    _sdmx_suite(suite, {"thresholds": {"macro_recall": 1.0}})
    result = suite.runpytest("--queryeval-json=r.json")
    result.assert_outcomes(passed=2)
    report = _report(suite)
    assert _by_id(report)["wrong"]["thresholds"] == {"macro_recall": {"min": 1.0}}
    assert report["aggregates"]["thresholds"]["gated"] == [
        {"metric": "macro_recall", "min": 1.0, "cases": 2, "by_default": 0}]
    result.stdout.fnmatch_lines(["thresholds: macro_recall >= 1 gated 2 cases"])


def test_a_command_line_threshold_replaces_the_default(suite: pytest.Pytester) -> None:
    _sdmx_suite(suite, {})
    result = suite.runpytest("--queryeval-json=r.json", "--queryeval-threshold",
                             "macro_precision=0.5")
    result.assert_outcomes(passed=2)
    wrong = _by_id(_report(suite))["wrong"]
    assert wrong["thresholds"] == {"macro_precision": {"min": 0.5}}
    assert wrong["default_thresholds"] == []


def test_record_only_suite_gates_nothing_and_lists_the_ungated(suite: pytest.Pytester) -> None:
    _sdmx_suite(suite, {"record_only": True})
    result = suite.runpytest("--queryeval-json=r.json")
    result.assert_outcomes(passed=2)
    report = _report(suite)
    assert _by_id(report)["wrong"]["thresholds"] == {}
    assert report["aggregates"]["thresholds"] == {
        "gated": [], "ungated": ["right", "wrong"]}
    result.stdout.fnmatch_lines([
        "thresholds: none applied",
        "ungated: 2 cases have no threshold on a score (record_only: true), their scores are "
        "recorded only: right, wrong"])


def test_record_only_keeps_the_thresholds_a_suite_sets(suite: pytest.Pytester) -> None:
    suite.makefile(".yaml", queryeval=dump({"record_only": True}))
    suite.makefile(".yaml", test_s=dump({"kind": "sdmx", "cases": [
        sdmx_case("gated", selection(GDP), selection(GDP_PLUS),
                  thresholds={"macro_precision": 1.0}),
        sdmx_case("recorded", selection(GDP), selection(GDP_PLUS))]}))
    result = suite.runpytest("--queryeval-json=r.json")
    result.assert_outcomes(passed=1, failed=1)
    assert _report(suite)["aggregates"]["thresholds"] == {
        "gated": [{"metric": "macro_precision", "min": 1.0, "cases": 1, "by_default": 0}],
        "ungated": ["recorded"]}
    result.stdout.fnmatch_lines([
        "thresholds: macro_precision >= 1 gated 1 case",
        "ungated: 1 case has no threshold on a score (record_only: true), its scores are "
        "recorded only: recorded"])


def test_record_only_must_be_a_boolean(suite: pytest.Pytester) -> None:
    suite.makefile(".yaml", queryeval="record_only: yes please\n")
    suite.makefile(".yaml", test_s=dump({"kind": "sdmx", "cases": [
        sdmx_case("a", selection(GDP), selection(GDP))]}))
    result = suite.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([
        "*queryeval.yaml:1: record_only: must be true or false, not 'yes please'*"])


KIND = '''
from pytest_queryeval import Scored


class LengthKind:
    """A custom kind: the score is 1 when the prediction is as long as the gold."""
    name = "length"
    option_keys = frozenset()
    {default}

    def is_metric(self, name):
        return name == "same_length"

    def validate(self, case):
        return []

    def difficulty(self, case):
        return None

    def evaluate(self, case, prediction, ctx):
        return Scored({{"same_length": float(len(prediction) == len(case.gold))}})


def pytest_queryeval_kinds(config):
    return {{"length": LengthKind}}
'''

LENGTH_CASES = {"kind": "length", "cases": [
    {"id": "same", "gold": "abc", "predicted": "xyz"},
    {"id": "longer", "gold": "abc", "predicted": "abcd"},
    {"id": "own", "gold": "abc", "predicted": "abcd", "thresholds": {"same_length": 0.0}}]}


def test_a_plugin_kind_without_a_default_makes_ungated_cases_errors(suite: pytest.Pytester,
                                                                     ) -> None:
    suite.makeconftest(KIND.format(default=""))
    suite.makefile(".yaml", test_len=dump(LENGTH_CASES))
    result = suite.runpytest("--queryeval-json=r.json")
    result.assert_outcomes(passed=1, failed=2)
    cases = _by_id(_report(suite))
    assert cases["same"]["outcome"] == "error"
    assert cases["same"]["metrics"] == {}  # found at collection: never scored
    assert cases["same"]["error"] == (
        "test_len.yaml:4: cases[0].thresholds: no threshold applies to this case and kind "
        "'length' declares no default: set one (thresholds: {metric: bound} on the case, its "
        "file or queryeval.yaml), or record_only: true in queryeval.yaml to record its scores "
        "ungated")
    assert cases["longer"]["outcome"] == "error"
    assert cases["own"]["outcome"] == "passed"


def test_a_plugin_kind_may_declare_its_default(suite: pytest.Pytester) -> None:
    suite.makeconftest(KIND.format(default='default_thresholds = {"same_length": 1.0}'))
    suite.makefile(".yaml", test_len=dump(LENGTH_CASES))
    result = suite.runpytest("--queryeval-json=r.json")
    result.assert_outcomes(passed=2, failed=1)
    report = _report(suite)
    cases = _by_id(report)
    assert cases["longer"]["outcome"] == "failed"
    assert cases["longer"]["default_thresholds"] == ["same_length"]
    assert report["aggregates"]["thresholds"]["gated"] == [
        {"metric": "same_length", "min": 1.0, "cases": 2, "by_default": 2},
        {"metric": "same_length", "min": 0.0, "cases": 1, "by_default": 0}]


def test_a_plugin_kind_with_a_broken_default_is_an_error_naming_it(suite: pytest.Pytester,
                                                                   ) -> None:
    suite.makeconftest(KIND.format(default='default_thresholds = {"same_length": "high"}'))
    suite.makefile(".yaml", test_len=dump(LENGTH_CASES))
    result = suite.runpytest("--queryeval-json=r.json")
    result.assert_outcomes(passed=1, failed=2)
    assert _by_id(_report(suite))["same"]["error"] == (
        "test_len.yaml:4: cases[0].thresholds: kind 'length' declares a bad default "
        "threshold: threshold for same_length must be a number or {min: x, max: y}")


def test_sql_default_follows_the_source() -> None:
    """Nothing runs on a schema-only source: its SQL cases are gated on the gold's structure."""
    from pathlib import Path

    from pytest_queryeval.kinds import get_kind
    from pytest_queryeval.model import Case
    from pytest_queryeval.rules.thresholds import apply_default

    def default(spec: dict[str, Any] | None) -> dict[str, Any]:
        case = Case(id="c", kind="sql", file=Path("test_x.yaml"), line=1, source_spec=spec)
        thresholds: dict[str, Any] = {}
        added, problem = apply_default(thresholds, get_kind("sql"), case, record_only=False)
        assert problem is None and added == list(thresholds)
        return {m: t.to_json() for m, t in thresholds.items()}

    assert default({"type": "sqlite", "path": "x.sqlite"}) == {"execution_accuracy": {"min": 1.0}}
    assert default(None) == {"execution_accuracy": {"min": 1.0}}
    assert default({"type": "spider-schema", "tables": "tables.json"}) == {
        "exact_set_match": {"min": 1.0}}
