"""``now:`` on a datasource pins the clock of gold and prediction alike before either runs
(issue 28 item 5), on a real SQLite file through pytest itself; each rewrite is recorded in the
case's details, and a task's gold, prediction and check queries are pinned the same way."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.support import read_report

ROOT = Path(__file__).resolve().parents[2]
LAST_YEAR = "SELECT count(*) FROM Invoice WHERE InvoiceDate >= date('now', '-1 year')"


def run(pytester: pytest.Pytester, now: str | None, cases: list[dict[str, Any]],
        *args: str) -> dict[str, Any]:
    shutil.copyfile(ROOT / "example_suite" / "data" / "chinook.sqlite",
                    pytester.path / "chinook.sqlite")
    pytester.makeini("[pytest]\nqueryeval_files = test_*.yaml\n")
    spec: dict[str, Any] = {"type": "sqlite", "path": "chinook.sqlite", "writable": "sandbox"}
    if now is not None:
        spec["now"] = now
    pytester.makefile(".yaml", queryeval=json.dumps({"datasources": {"chinook": spec}}))
    pytester.makefile(".yaml", test_clock=json.dumps(
        {"kind": "sql", "datasource": "chinook", "thresholds": {"execution_accuracy": 1.0},
         "cases": cases}))
    pytester.runpytest("--queryeval-json=r.json", "-p", "no:cacheprovider", *args)
    return {c["id"]: c for c in read_report(pytester.path / "r.json")["cases"]}


CASES = [
    {"id": "last-year", "gold": LAST_YEAR,
     # the same count, written against a literal date: equal only when now is 2024-01-01
     "predicted": "SELECT count(*) FROM Invoice WHERE InvoiceDate >= '2023-01-01'"},
    {"id": "task", "task": "dml",
     "gold": "DELETE FROM InvoiceLine WHERE InvoiceId IN (SELECT InvoiceId FROM Invoice "
             "WHERE InvoiceDate < date('now', '-1 year'))",
     "predicted": "DELETE FROM InvoiceLine WHERE InvoiceId IN (SELECT InvoiceId FROM Invoice "
                  "WHERE InvoiceDate < date(CURRENT_DATE, '-1 year'))",
     "checks": [{"query": "SELECT count(*) FROM InvoiceLine", "compare": "gold"},
                {"query": "SELECT count(*) FROM Invoice WHERE InvoiceDate >= date('now', "
                          "'-1 year')", "rows": [[246]]}]},
]


def test_now_pins_gold_and_prediction(pytester: pytest.Pytester) -> None:
    cases = run(pytester, "2024-01-01", CASES)
    case = cases["last-year"]
    assert case["outcome"] == "passed"
    assert case["details"]["clock"] == {
        "now": "2024-01-01 00:00:00", "dialect": "sqlite",
        "replaced": {"gold": ["'now' -> '2024-01-01 00:00:00'"]}}
    task = cases["task"]
    assert task["outcome"] == "passed"
    assert task["details"]["clock"]["replaced"] == {
        "gold": ["'now' -> '2024-01-01 00:00:00'"],
        "checks": ["'now' -> '2024-01-01 00:00:00'"],
        "predicted": ["CURRENT_DATE -> '2024-01-01'"]}


def test_without_now_the_clock_runs(pytester: pytest.Pytester) -> None:
    cases = run(pytester, None, CASES)
    assert cases["last-year"]["outcome"] == "failed"  # today is not 2024-01-01
    assert "clock" not in cases["last-year"]["details"]
    assert cases["task"]["outcome"] == "failed"


def test_the_audit_reads_the_pinned_gold(pytester: pytest.Pytester) -> None:
    report = run(pytester, "2024-01-01", CASES[:1], "--queryeval-audit-golds=warn")
    assert report["last-year"]["outcome"] == "passed"
    findings = read_report(pytester.path / "r.json")["audit"]["findings"]
    assert [f["code"] for f in findings] == []
    run(pytester, None, CASES[:1], "--queryeval-audit-golds=warn")
    findings = read_report(pytester.path / "r.json")["audit"]["findings"]
    assert [f["code"] for f in findings] == ["clock-dependent"]
    assert findings[0]["message"].endswith("use a fixed date literal, or pin the clock with "
                                           "now: on the datasource")
