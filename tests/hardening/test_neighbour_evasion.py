"""Predictions that evade the counterexample search (issue 39 item 6), through the whole plugin
on a real Chinook file and a real DuckDB file.

Each evasive prediction returns the gold's result on the real database and, on any other
data, loops, cross-joins without end, allocates without end or raises. Before the fix the
first candidate's run spent the whole seconds budget (or was skipped as "either query
fails"), no database was checked and ``neighbour_ex`` read 1. Now each query has its own
seconds on a candidate, a prediction that gives no result where the gold does is a
counterexample with the reason, and a search that checked no database records no
``neighbour_ex`` (so a threshold on it fails, as on any missing metric).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.support import run_report, write_suite

ROOT = Path(__file__).resolve().parents[2]
CHINOOK = ROOT / "example_suite" / "data" / "chinook.sqlite"
GOLD = "SELECT count(*) FROM Artist"
#: True on the real Chinook only (275 artists); a candidate has at most a few rows.
REAL = "(SELECT count(*) FROM Artist) = 275"
LOOP = "(WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r) SELECT count(*) FROM r)"


def evasive(otherwise: str) -> str:
    """Right on the real database, ``otherwise`` anywhere else."""
    return f"SELECT CASE WHEN {REAL} THEN (SELECT count(*) FROM Artist) ELSE {otherwise} END"


#: case id -> (the prediction, the start of the counterexample's reason).
SQLITE_FORMS: dict[str, tuple[str, str]] = {
    "recursive-loop": (evasive(LOOP), "did not finish in 1 s"),
    "cross-join": (evasive(
        "(WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n LIMIT 100000) "
        "SELECT count(*) FROM n a, n b, n c)"), "did not finish in 1 s"),
    "randomblob": (evasive("length(randomblob(900000000))"), "raised: string or blob too big"),
    "doubling-string": (evasive(
        "(WITH RECURSIVE r(x, s) AS (SELECT 1, 'ab' UNION ALL SELECT x + 1, s || s FROM r) "
        "SELECT max(length(s)) FROM r)"), "raised: string or blob too big"),
    "overflow": (evasive("abs(-9223372036854775807 - 1)"), "raised: integer overflow"),
    "malformed-json": (evasive("json_extract('not json', '$')"), "raised: malformed JSON"),
}


def chinook_suite(pytester: pytest.Pytester, cases: list[dict[str, Any]]) -> None:
    shutil.copyfile(CHINOOK, pytester.path / "chinook.sqlite")
    write_suite(pytester.path, {
        "datasources": {"chinook": {"type": "sqlite", "path": "chinook.sqlite"}},
        "neighbours": {"databases": 20, "seconds": 2},
        "thresholds": {"execution_accuracy": 1, "neighbour_ex": 1}},
        {"test_evasion.yaml": {"kind": "sql", "datasource": "chinook", "cases": cases}})


def test_a_prediction_that_fails_only_off_the_real_database_is_a_counterexample(pytester):
    cases = [{"id": name, "gold": GOLD, "predicted": predicted}
             for name, (predicted, _) in SQLITE_FORMS.items()]
    cases.append({"id": "honest", "gold": GOLD, "predicted": "SELECT count(ArtistId) FROM Artist"})
    chinook_suite(pytester, cases)
    result, report = run_report(pytester)
    assert report.outcomes == {**{name: "failed" for name in SQLITE_FORMS}, "honest": "passed"}
    for name, (_, reason) in SQLITE_FORMS.items():
        record = report.by_id[name]
        assert record["metrics"]["execution_accuracy"] == 1.0
        assert record["metrics"]["neighbour_ex"] == 0.0
        info = record["details"]["neighbours"]
        assert info["checked"] >= 1
        found = info["counterexample"]
        assert found["predicted"] is None
        assert found["predicted_failure"].startswith(reason), (name, found)
        # the gold's count on the candidate (a few artists at most), the prediction none
        assert found["gold"][1] == [[found["tables"].get("Artist", 0)]], (name, found)
    result.stdout.fnmatch_lines([
        "*neighbour_ex: 0: passes on chinook.sqlite, but on this *-row database the gold "
        "returns (*,), the prediction did not finish in 1 s"])
    assert set(report["neighbours"]["coincidental_passes"]) == set(SQLITE_FORMS)
    assert report.by_id["honest"]["metrics"]["neighbour_ex"] == 1.0


def test_a_search_that_checked_no_database_records_no_value(pytester):
    """A gold that gives no result on any candidate (here: it loops off the real data) leaves
    nothing compared; that is not a pass of ``neighbour_ex``, and the reason says why."""
    gold = evasive(LOOP)
    chinook_suite(pytester, [{"id": "unchecked", "gold": gold, "predicted": GOLD}])
    result, report = run_report(pytester)
    record = report.by_id["unchecked"]
    assert record["metrics"]["execution_accuracy"] == 1.0
    assert "neighbour_ex" not in record["metrics"]
    assert record["outcome"] == "failed"  # the threshold on a missing metric fails
    info = record["details"]["neighbours"]
    assert info["checked"] == 0
    assert info["counterexample"] is None
    assert info["unchecked"].startswith(
        "no counterexample database was checked: the gold gave no result on ")
    assert "(did not finish in 1 s)" in info["unchecked"]
    assert info["gold_failed"] >= 1
    assert report["neighbours"]["passes_checked"] == 0
    assert report["neighbours"]["unchecked"] == ["unchecked"]
    result.stdout.fnmatch_lines(["neighbours: 0 passes checked on 0 databases in * s *; "
                                 "1 case with no database checked (no neighbour_ex): unchecked"])


duckdb = pytest.importorskip("duckdb")


def test_duckdb_predictions_that_raise_or_loop_off_the_real_data(pytester):
    path = pytester.path / "shop.duckdb"
    conn = duckdb.connect(str(path))
    conn.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, total INTEGER NOT NULL)")
    conn.execute("INSERT INTO orders SELECT i, i % 50 FROM range(1, 101) t(i)")
    conn.close()
    real = "(SELECT count(*) FROM orders) = 100"
    gold = "SELECT count(*) FROM orders"

    def other(otherwise: str) -> str:
        return f"SELECT CASE WHEN {real} THEN (SELECT count(*) FROM orders) ELSE {otherwise} END"

    forms = {
        "cast-out-of-range": (other("CAST((SELECT count(*) FROM orders) + 1000 AS TINYINT)"),
                              "raised: Conversion Error"),
        "division-by-zero": (other("(SELECT count(*) FROM orders) // 0"),
                             "raised: Invalid Input Error: Division by zero"),
        # DuckDB plans both branches of a CASE: these blow up only when a filter on the
        # data lets rows through (nothing does on the real database)
        "memory": (other("(SELECT length(string_agg(repeat('x', 1000000), '')) FROM "
                         f"range(100000) WHERE NOT {real})"), "raised: Out of Memory Error"),
        "cross-join": (other(f"(SELECT count(*) FROM (SELECT range FROM range(1000000) WHERE "
                             f"NOT {real}) a, range(1000000) b, range(1000000) c WHERE "
                             "a.range + b.range + c.range = -1)"), "did not finish in 1 s"),
    }
    write_suite(pytester.path, {
        "datasources": {"shop": {"type": "duckdb", "path": "shop.duckdb"}},
        "neighbours": {"databases": 10, "seconds": 2},
        "thresholds": {"execution_accuracy": 1, "neighbour_ex": 1}},
        {"test_shop.yaml": {"kind": "sql", "datasource": "shop", "cases": [
            {"id": name, "gold": gold, "predicted": predicted}
            for name, (predicted, _) in forms.items()]}})
    _, report = run_report(pytester)
    assert report.outcomes == {name: "failed" for name in forms}
    for name, (_, reason) in forms.items():
        record = report.by_id[name]
        assert record["metrics"]["execution_accuracy"] == 1.0
        assert record["metrics"]["neighbour_ex"] == 0.0
        found = record["details"]["neighbours"]["counterexample"]
        assert found["engine"] == "duckdb"
        assert found["predicted_failure"].startswith(reason), (name, found)
