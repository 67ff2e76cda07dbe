"""Issue 30 item 5: every aggregate says over how many cases it was computed and why the
others are missing, in every report and in ``queryeval merge``."""

from __future__ import annotations

import subprocess
import sys

import pytest
from tests.support import read_report

from pytest_queryeval.conclude import aggregates_of
from pytest_queryeval.report.json_report import write_report
from pytest_queryeval.report.markdown import render_markdown
from pytest_queryeval.report.terminal import summary_lines


def _case(i: int, outcome: str, metrics: dict[str, float] | None, *, error: str | None = None,
          details: dict[str, object] | None = None) -> dict[str, object]:
    return {"id": f"c{i}", "nodeid": f"suite/test_q.yaml::c{i}", "file": "suite/test_q.yaml",
            "line": i + 1, "kind": "sql", "difficulty": "easy", "tags": [],
            "outcome": outcome, "metrics": metrics or {}, "failed_metrics": [],
            "error": error, "reason": None, "diff": [], "details": details or {}}


CASES = [
    _case(0, "passed", {"execution_accuracy": 1.0, "exact_set_match": 1.0}),
    _case(1, "failed", {"execution_accuracy": 0.0, "exact_set_match": 0.0},
          details={"structure_parse_error": "unexpected token"}),
    _case(2, "passed", {"execution_accuracy": 1.0}),  # no Spider schema: no ESM
    _case(3, "error", None, error="prediction error: HTTP 503 from predictor"),
    _case(4, "error", None, error="prediction error: no prediction for c4"),
    _case(5, "error", None, error="gold error: gold query: query failed: no such table"),
    _case(6, "error", None, error="timeout: the query ran over 5 s"),
    _case(7, "skipped", None),
]


def _report(cases: list[dict[str, object]]) -> dict[str, object]:
    return {"version": 1, "run": {"shard": None, "queryeval_version": "0.1.0"},
            "cases": cases, "aggregates": aggregates_of(cases), "gates": []}


def test_aggregates_say_over_how_many_cases_and_why_the_others_are_missing():
    stats = aggregates_of(CASES)["by_kind"]["sql"]
    ex = stats["metrics"]["execution_accuracy"]
    assert (stats["count"], ex["n"]) == (8, 3)
    assert ex["missing"] == {"prediction error": 2, "gold error": 1, "other error": 1,
                             "skipped": 1}
    esm = stats["metrics"]["exact_set_match"]
    assert esm["n"] == 2
    assert esm["missing"] == {"prediction error": 2, "gold error": 1, "other error": 1,
                              "skipped": 1, "no value": 1}
    assert esm["unparsable"] == 1  # scored 0 the evaluator's way, and said so
    assert "unparsable" not in ex


def test_every_report_prints_the_denominators(tmp_path):
    report = _report(CASES)
    lines = summary_lines(report)
    assert ("  means over: EX 3 of 8 cases (5 missing: 2 prediction error, 1 gold error, "
            "1 other error, 1 skipped); ESM 2 of 8 cases (6 missing: 2 prediction error, "
            "1 gold error, 1 other error, 1 skipped, 1 no value; 1 not parsable by the "
            "reference (scored 0, as the reference does))") in lines
    md = render_markdown(report)
    assert ("| sql | exact\\_set\\_match | 2 | 8 | 2 prediction error, 1 gold error, 1 other "
            "error, 1 skipped, 1 no value | 1 |") in md
    from pytest_queryeval.report.html import render_html

    page = render_html(report)
    assert '<section id="denominators">' in page
    assert ("<td>execution_accuracy</td><td class=\"n\">3</td><td class=\"n\">8</td>"
            "<td>2 prediction error, 1 gold error, 1 other error, 1 skipped</td>") in page
    openpyxl = pytest.importorskip("openpyxl")
    from pytest_queryeval.report.excel import write_xlsx

    book = openpyxl.load_workbook(write_xlsx(report, tmp_path / "r.xlsx"))
    rows = list(book["Denominators"].iter_rows(values_only=True))
    assert rows[1] == ("sql", "execution_accuracy", 3, 8,
                       "2 prediction error, 1 gold error, 1 other error, 1 skipped", 0)
    assert rows[2][:4] == ("sql", "exact_set_match", 2, 8) and rows[2][5] == 1


def test_merge_prints_the_denominators_of_the_union(tmp_path):
    for name, part in (("a.json", CASES[:4]), ("b.json", CASES[4:])):
        write_report(_report(part), tmp_path / name)
    done = subprocess.run([sys.executable, "-m", "pytest_queryeval.conclude.cli", "merge", "a.json",
                           "b.json", "-o", "m.json"], cwd=tmp_path, capture_output=True,
                          text=True, check=False)
    assert "  means over: EX 3 of 8 cases (5 missing: 2 prediction error, 1 gold error, " \
           "1 other error, 1 skipped); " in done.stdout, done.stdout + done.stderr
    merged = read_report(tmp_path / "m.json")
    assert merged["aggregates"]["overall"]["metrics"]["execution_accuracy"]["missing"] == {
        "prediction error": 2, "gold error": 1, "other error": 1, "skipped": 1}
