"""Every message true (issue 60 item 6): what a newcomer's first suite showed that was not so.

A real SQLite database; each test runs pytest on a small suite and reads the summary and the
JSON report it wrote.
"""

from __future__ import annotations

import re
import sqlite3

import pytest
from tests.support import dump, run_report

RIGHT = "SELECT id FROM orders WHERE total >= 12"


@pytest.fixture
def shop(suite: pytest.Pytester) -> pytest.Pytester:
    with sqlite3.connect(suite.path / "shop.db") as con:
        con.executescript("CREATE TABLE orders (id INTEGER PRIMARY KEY, total REAL);"
                          "INSERT INTO orders VALUES (1, 30), (2, 12), (3, 7);")
    con.close()
    suite.makefile(".yaml", queryeval=dump({
        "datasources": {"shop": {"type": "sqlite", "path": "shop.db"}},
        "thresholds": {"execution_accuracy": 1.0}}))
    return suite


def _section(result: pytest.RunResult) -> list[str]:
    lines = result.stdout.lines
    start = next(i for i, line in enumerate(lines) if line.startswith("=") and "queryeval" in line)
    return lines[start + 1:]


def test_a_misspelt_kind_is_a_located_error_not_a_table_of_its_own(
        shop: pytest.Pytester) -> None:
    shop.makefile(".yaml", test_typo=dump({"kind": "sqll", "datasource": "shop", "cases": [
        {"id": "typo", "question": "q", "gold": RIGHT, "predicted": RIGHT}]}))
    shop.makefile(".yaml", test_ok=dump({"kind": "sql", "datasource": "shop", "cases": [
        {"id": "ok", "question": "q", "gold": RIGHT, "predicted": RIGHT}]}))
    result, report = run_report(shop)
    section = _section(result)
    # no "sqll  difficulty  cases  pass" table: the typo is not presented as a kind
    assert not [line for line in section if line.startswith("sqll ")], section
    assert "sqll" not in report["aggregates"]["by_kind"]
    assert report["aggregates"]["overall"]["errors"] == 1
    error = report.by_id["typo"]["error"]
    assert re.match(r"test_typo\.yaml:\d+: cases\[0\]\.kind: unknown kind 'sqll'", error), error
    assert "known: " in error and "sql" in error


def test_a_misspelt_threshold_metric_gates_no_case(shop: pytest.Pytester) -> None:
    shop.makefile(".yaml", test_cases=dump({"kind": "sql", "datasource": "shop", "cases": [
        {"id": "typo", "question": "q", "gold": RIGHT, "predicted": RIGHT,
         "thresholds": {"exection_accuracy": 1.0}},
        {"id": "ok", "question": "q", "gold": RIGHT, "predicted": RIGHT}]}))
    result, report = run_report(shop)
    line = next(line for line in _section(result) if line.startswith("thresholds:"))
    assert "exection_accuracy" not in line, line
    assert "exection_accuracy" not in report.by_id["typo"]["thresholds"]
    assert "did you mean 'execution_accuracy'" in report.by_id["typo"]["error"]
    gated = {entry["metric"] for entry in report["aggregates"]["thresholds"]["gated"]}
    assert gated == {"execution_accuracy"}


def test_the_spider_table_prints_no_score_under_a_hardness_with_no_case(
        shop: pytest.Pytester) -> None:
    shop.makefile(".yaml", test_cases=dump({"kind": "sql", "datasource": "shop", "cases": [
        {"id": "ok", "question": "q", "gold": RIGHT, "predicted": RIGHT}]}))
    result, _ = run_report(shop)
    section = _section(result)
    exact = next(line for line in section if line.startswith("exact match"))
    count = next(line for line in section if line.startswith("count"))
    assert count.split()[1:] == ["1", "0", "0", "0", "1"]
    assert exact.split()[2:] == ["1.000", "-", "-", "-", "1.000"], exact


def test_a_missing_database_file_names_the_line_that_defined_it(suite: pytest.Pytester) -> None:
    suite.makefile(".yaml", queryeval="datasources:\n  shop: {type: sqlite, path: gone.db}\n"
                                      "thresholds: {execution_accuracy: 1.0}\n")
    suite.makefile(".yaml", test_cases=dump({"kind": "sql", "datasource": "shop", "cases": [
        {"id": "a", "question": "q", "gold": RIGHT, "predicted": RIGHT}]}))
    _, report = run_report(suite)
    error = report.by_id["a"]["error"]
    assert error.startswith("source unavailable: "), error
    assert error.endswith(" (datasources.shop at queryeval.yaml:2)"), error
    assert "gone.db" in error


def test_a_passing_check_then_a_failing_test_says_why(shop: pytest.Pytester) -> None:
    shop.makepyfile(test_two_checks=f"""
def test_two(queryeval):
    queryeval.check(id="p1", kind="sql", datasource="shop", question="q", gold={RIGHT!r},
                    predicted={RIGHT!r})
    queryeval.check(id="p2", kind="sql", datasource="shop", question="q", gold={RIGHT!r},
                    predicted={RIGHT!r})
""")
    result, report = run_report(shop)
    record = report.by_id["p1"]
    assert record["outcome"] == "failed"
    assert record["reason"].startswith(
        "the test failed after its check passed: UsageError: "), record["reason"]
    worst = next(line for line in _section(result) if line.strip().startswith("p1 ["))
    assert "failed: the test failed after its check passed" in worst, worst


def test_the_models_table_prints_tokens_and_cost_as_the_kind_tables_do() -> None:
    from pytest_queryeval.report.models import terminal_lines

    spend = {"completion_tokens": {"total": 1073.0, "mean": 536.5},
             "cost_usd": {"total": 0.048, "mean": 0.024},
             "prediction_seconds": {"mean": 0.5, "total": 1.0}}
    agg = {"by_kind": {"sql": {}}, "models": {
        "small": {"count": 2, "pass_rate": 0.5, "metrics": spend},
        "large": {"count": 2, "pass_rate": 1.0, "metrics": {
            **spend, "completion_tokens": {"total": 12345.0}, "cost_usd": {"total": 0.0001}}}}}
    header, _, small, large = terminal_lines(agg)[:4]
    assert header.split()[-4:] == ["mean)", "tokens", "out", "cost"], header
    assert small.split()[-3:] == ["0.500", "1,073", "$0.0480"], small
    assert large.split()[-2:] == ["12,345", "$0.000100"], large


def test_the_gold_audit_of_a_run_of_two_models_lists_each_finding_once(
        pytester: pytest.Pytester) -> None:
    from tests.models.conftest import two_model_suite

    two_model_suite(pytester.path)
    pytester.makefile(".yaml", test_bad=dump({"kind": "sql", "datasource": "db", "cases": [
        {"id": "bad", "question": "q", "gold": "SELECT nope FROM t"}]}))
    result, report = run_report(pytester, "--queryeval-audit-golds=warn")
    findings = [(f["id"], f["code"]) for f in report["audit"]["findings"]]
    assert findings == [("bad", "gold-error")], findings
    assert report["audit"]["cases"] == len({c["id"] for c in report["cases"]})
    assert all("model" not in c for c in report["cases"])  # the audit asks no model
    assert sum(" gold-error " in line for line in _section(result)) == 1
