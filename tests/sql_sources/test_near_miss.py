"""Near-miss attribution on the real Chinook SQLite database: for each failing case, the
documented relaxations that would pass it, in the diff, the JSON record and its aggregate, the
terminal summary, the HTML and the Excel report; never a metric or a verdict."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_queryeval.engine import Evaluator, run_case
from pytest_queryeval.model import Threshold
from pytest_queryeval.rules.nearmiss import RELAXATIONS, aggregate, summary_lines
from tests.support import read_report, write_suite

from .conftest import make_case

EX = {"execution_accuracy": Threshold("execution_accuracy", min=1.0)}


@pytest.fixture
def spec(chinook_sqlite: Path) -> dict[str, Any]:
    return {"type": "sqlite", "path": str(chinook_sqlite)}


# (gold, prediction, thresholds, the relaxations that pass it)
CASES = {
    "row_order": ("SELECT Name FROM Genre ORDER BY Name", "SELECT Name FROM Genre ORDER BY Name DESC",
                  EX, ["row_order"]),
    "extra_column": ("SELECT Name FROM Artist WHERE ArtistId < 5",
                     "SELECT ArtistId, Name FROM Artist WHERE ArtistId < 5", EX,
                     ["column_subset"]),
    "tolerance": ("SELECT avg(Milliseconds) FROM Track",
                  "SELECT avg(Milliseconds) + 0.004 FROM Track", EX,
                  ["numeric_tolerance"]),  # rounding to 2 decimals falls either side
    "null_zero": ("SELECT sum(Total) FROM Invoice WHERE CustomerId = 999",
                  "SELECT coalesce(sum(Total), 0) FROM Invoice WHERE CustomerId = 999", EX,
                  ["null_as_zero"]),
    "case": ("SELECT Name FROM Genre WHERE GenreId < 4",
             "SELECT upper(Name) || ' ' FROM Genre WHERE GenreId < 4", EX, ["case_whitespace"]),
    "distinct": ("SELECT DISTINCT BillingCountry FROM Invoice",
                 "SELECT BillingCountry FROM Invoice", EX, ["distinct"]),
    "int_float": ("SELECT count(*) FROM Track", "SELECT count(*) * 1.0 FROM Track",
                  {"cell_f1": Threshold("cell_f1", min=1.0)}, ["round_2", "int_float"]),
    "column_order": ("SELECT ArtistId, Name FROM Artist WHERE ArtistId < 5",
                     "SELECT Name, ArtistId FROM Artist WHERE ArtistId < 5",
                     {"bird_ex": Threshold("bird_ex", min=1.0)}, ["column_order"]),
    "text_number": ("SELECT count(*) FROM Genre", "SELECT CAST(count(*) AS TEXT) FROM Genre", EX,
                    ["text_number"]),  # issue 24 item 12: '25' against 25 had no hint
    "wrong": ("SELECT Name FROM Genre WHERE GenreId = 1", "SELECT Name FROM Genre WHERE GenreId = 2",
              EX, []),
}


@pytest.mark.parametrize("name", list(CASES))
def test_each_relaxation_on_a_real_failure(name, spec, session: Evaluator):
    gold, pred, thresholds, want = CASES[name]
    case = make_case(gold, spec=spec, id=name, predicted=pred, thresholds=thresholds)
    out = run_case(case, session)
    assert out.status == "failed"
    assert out.details["near_miss"] == want
    labels = [RELAXATIONS[n] for n in want]
    if want:
        assert out.diff[-1] == "near miss: would pass with " + "; ".join(labels)
    else:
        assert not any(line.startswith("near miss") for line in out.diff)


def test_it_never_changes_a_metric_or_a_verdict(spec, session: Evaluator):
    gold, pred, thresholds, _ = CASES["row_order"]
    case = make_case(gold, spec=spec, predicted=pred, thresholds=thresholds)
    out = run_case(case, session)
    assert out.status == "failed"
    assert out.metrics["execution_accuracy"] == 0.0
    assert [t.metric for t, _ in out.failed] == ["execution_accuracy"]
    passing = run_case(make_case(gold, spec=spec, predicted=gold, thresholds=thresholds), session)
    assert passing.status == "passed" and "near_miss" not in passing.details
    refused = run_case(make_case(gold, spec=spec, predicted="DELETE FROM Genre",
                                 thresholds=thresholds), session)
    assert refused.reason and "near_miss" not in refused.details  # nothing was compared


def test_aggregate_and_summary():
    records = [{"kind": "sql", "difficulty": "easy", "near_miss": ["row_order"]},
               {"kind": "sql", "difficulty": "hard", "near_miss": ["row_order", "distinct"]},
               {"kind": "sparql", "difficulty": "easy", "near_miss": []},
               {"kind": "sql", "difficulty": "easy", "near_miss": None}]
    agg = aggregate(records)
    assert agg == {"failures": 3, "overall": {"row_order": 2, "distinct": 1},
                   "by_kind": {"sql": {"row_order": 2, "distinct": 1}},
                   "by_difficulty": {"easy": {"row_order": 1},
                                     "hard": {"row_order": 1, "distinct": 1}}}
    assert summary_lines(agg) == [
        "near misses (3 failing cases with compared results; a case can count under several):",
        "  2 failures would pass with ignore row order  (sql 2, easy 1, hard 1)",
        "  1 failure would pass with DISTINCT  (sql 1, hard 1)"]


def test_through_the_plugin_in_every_report(pytester, chinook_sqlite):
    pytest.importorskip("openpyxl")
    import openpyxl

    write_suite(pytester.path, {"datasources": {"db": {"type": "sqlite", "path": str(chinook_sqlite)}}})
    cases = [{"id": n, "gold": CASES[n][0], "predicted": CASES[n][1], "difficulty": d}
             for n, d in (("row_order", "easy"), ("distinct", "hard"), ("wrong", "easy"))]
    pytester.makefile(".yaml", test_nm=json.dumps(
        {"kind": "sql", "datasource": "db", "thresholds": {"execution_accuracy": 1.0},
         "cases": cases}))
    result = pytester.runpytest("--queryeval-json=r.json", "--queryeval-html=r.html",
                                "--queryeval-xlsx=r.xlsx", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=3)
    result.stdout.fnmatch_lines([
        "*near miss: would pass with ignore row order",
        "near misses (3 failing cases with compared results; a case can count under several):",
        "  1 failure would pass with ignore row order  (sql 1, easy 1)",
        "  1 failure would pass with DISTINCT  (sql 1, hard 1)"])
    report = read_report(pytester.path / "r.json")
    assert {c["id"]: c["near_miss"] for c in report["cases"]} == {
        "row_order": ["row_order"], "distinct": ["distinct"], "wrong": []}
    assert report["near_miss"]["overall"] == {"row_order": 1, "distinct": 1}
    assert [c["outcome"] for c in report["cases"]] == ["failed"] * 3
    page = (pytester.path / "r.html").read_text()
    assert '<section id="near-misses"><h2>Near misses</h2>' in page
    assert "<li><code>distinct</code> sql/hard: DISTINCT</li>" in page
    wb = openpyxl.load_workbook(pytester.path / "r.xlsx")
    rows = list(wb["Near misses"].iter_rows(values_only=True))
    assert rows[0] == ("scope", "group", "ignore row order", "DISTINCT")
    assert rows[1] == ("overall", None, 1, 1)
    assert ("distinct", "sql", "hard", "DISTINCT") in rows


def test_huge_results_are_not_attributed(spec, session: Evaluator, monkeypatch):
    from pytest_queryeval.engine import nearmiss

    monkeypatch.setattr(nearmiss, "MAX_CELLS", 10)
    gold, pred, thresholds, _ = CASES["distinct"]
    out = run_case(make_case(gold, spec=spec, predicted=pred, thresholds=thresholds), session)
    assert out.status == "failed" and "near_miss" not in out.details
    assert out.details["near_miss_error"] == (
        "ValueError: results of 436 cells (over 10) are not attributed")
