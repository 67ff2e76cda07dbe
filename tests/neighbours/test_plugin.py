"""``--queryeval-neighbours`` end to end (issue 27): pytester runs on the real Chinook file (and
a real DuckDB file) record ``neighbour_ex``, fail a case only when a threshold names it, save
the shrunk counterexample beside the reports and print it, report the budget spent, and cost
nothing (not even an import) when not asked for."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tests.support import read_report

ROOT = Path(__file__).resolve().parents[2]
CHINOOK = ROOT / "example_suite" / "data" / "chinook.sqlite"

#: Not equivalent (an artist without a name), equal on Chinook.
COINCIDENTAL = ("SELECT count(*) FROM Artist", "SELECT count(Name) FROM Artist")
#: Equivalent on every database (the INTEGER PRIMARY KEY is never NULL).
EQUIVALENT = ("SELECT count(*) FROM Artist", "SELECT count(ArtistId) FROM Artist")


def case(case_id: str, pair: tuple[str, str], **extra: Any) -> dict[str, Any]:
    return {"id": case_id, "kind": "sql", "datasource": "chinook", "gold": pair[0],
            "predicted": pair[1], **extra}


@pytest.fixture
def chinook_suite(pytester: pytest.Pytester) -> pytest.Pytester:
    shutil.copy(CHINOOK, pytester.path / "chinook.sqlite")
    pytester.makeini("[pytest]\nqueryeval_files = test_*.yaml\n")
    return pytester


def write(pytester: pytest.Pytester, cases: list[dict[str, Any]],
          suite: dict[str, Any] | None = None) -> None:
    config = {"datasources": {"chinook": {"type": "sqlite", "path": "chinook.sqlite"}},
              "thresholds": {"execution_accuracy": 1.0}, **(suite or {})}
    pytester.makefile(".yaml", queryeval=json.dumps(config))
    pytester.makefile(".yaml", test_nb=json.dumps({"cases": cases}))


def report(pytester: pytest.Pytester) -> dict[str, Any]:
    data: dict[str, Any] = read_report(pytester.path / "out" / "r.json")
    return data


def by_id(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["id"]: c for c in data["cases"]}


def rows(db: Path, sql: str) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return [tuple(r) for r in conn.execute(sql)]
    finally:
        conn.close()


def test_a_gated_coincidental_pass_fails_with_its_counterexample(chinook_suite):
    write(chinook_suite, [case("gated", COINCIDENTAL, thresholds={"neighbour_ex": 1}),
                          case("ungated", COINCIDENTAL),
                          case("rewrite", EQUIVALENT, thresholds={"neighbour_ex": 1})])
    result = chinook_suite.runpytest("--queryeval-neighbours=60", "--queryeval-json=out/r.json")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines([
        "*neighbour_ex: 0: passes on chinook.sqlite, but on this 1-row database the gold "
        "returns (1,) and the prediction (0,)",
        "*counterexample (database * of the gold's suite): out/queryeval-neighbours/gated.sqlite",
        "*INSERT INTO \"Artist\" VALUES (*, NULL);",
        "neighbours: 3 passes checked on * databases in * s (* reused from the golds' suites); "
        "2 coincidental passes: gated, ungated",
    ])
    data = report(chinook_suite)
    cases = by_id(data)
    assert cases["gated"]["outcome"] == "failed"
    assert cases["gated"]["failed_metrics"] == ["neighbour_ex"]
    for name in ("gated", "ungated"):  # execution_accuracy stays what it is
        assert cases[name]["metrics"]["execution_accuracy"] == 1.0
        assert cases[name]["metrics"]["neighbour_ex"] == 0.0
    assert cases["ungated"]["outcome"] == "passed"
    assert cases["rewrite"]["metrics"]["neighbour_ex"] == 1.0
    assert cases["rewrite"]["details"]["neighbours"]["checked"] == 60
    found = cases["gated"]["details"]["neighbours"]["counterexample"]
    assert found["file"] == "out/queryeval-neighbours/gated.sqlite"
    assert found["gold"][1] == [[1]] and found["predicted"][1] == [[0]]
    assert found["rows"] == 1 and found["tables"] == {"Artist": 1}
    # the saved file is a real SQLite database on which the two queries differ, as printed
    saved = chinook_suite.path / found["file"]
    assert rows(saved, COINCIDENTAL[0]) == [(1,)]
    assert rows(saved, COINCIDENTAL[1]) == [(0,)]
    assert sum(len(rows(saved, f'SELECT * FROM "{t}"')) for t in found["tables"]) == found["rows"]
    (artist,) = rows(saved, "SELECT ArtistId FROM Artist")[0]
    assert found["inserts"] == [f'INSERT INTO "Artist" VALUES ({artist}, NULL);']
    assert data["neighbours"]["passes_checked"] == 3
    assert data["neighbours"]["coincidental_passes"] == ["gated", "ungated"]
    assert data["neighbours"]["databases_checked"] == sum(
        c["details"]["neighbours"]["checked"] for c in cases.values())


def test_the_same_seed_gives_the_same_counterexample(chinook_suite):
    write(chinook_suite, [case("gated", COINCIDENTAL)])
    found = []
    for _ in range(2):
        chinook_suite.runpytest("--queryeval-neighbours=60", "--queryeval-json=out/r.json")
        found.append(by_id(report(chinook_suite))["gated"]["details"]["neighbours"])
    assert found[0]["counterexample"]["inserts"] == found[1]["counterexample"]["inserts"]
    assert found[0]["checked"] == found[1]["checked"]


def test_a_golds_databases_are_built_once_for_all_its_predictions(chinook_suite):
    """Three predictions of one gold: the second and third reuse the gold's suite."""
    rewrites = [EQUIVALENT, (EQUIVALENT[0], "SELECT count(1) FROM Artist"),
                (EQUIVALENT[0], "SELECT count(*) FROM Artist AS a")]
    write(chinook_suite, [case(f"p{i}", pair) for i, pair in enumerate(rewrites)])
    chinook_suite.runpytest("--queryeval-neighbours=40", "--queryeval-json=out/r.json")
    data = report(chinook_suite)
    reused = [by_id(data)[f"p{i}"]["details"]["neighbours"]["reused"] for i in range(3)]
    assert reused == [0, 30, 30]  # three quarters of the budget is the gold's suite
    assert data["neighbours"]["databases_reused"] == 60


def test_a_failing_case_scores_neighbour_ex_0_without_a_search(chinook_suite):
    write(chinook_suite, [case("wrong", ("SELECT count(*) FROM Invoice",
                                         "SELECT count(*) FROM Customer"))])
    chinook_suite.runpytest("--queryeval-neighbours", "--queryeval-json=out/r.json")
    wrong = by_id(report(chinook_suite))["wrong"]
    assert wrong["metrics"]["neighbour_ex"] == 0.0
    assert wrong["details"]["neighbours"] == {
        "skipped": "the prediction does not pass on the real database"}


def test_a_suite_asks_for_it_in_queryeval_yaml(chinook_suite):
    write(chinook_suite, [case("gated", COINCIDENTAL)],
          suite={"neighbours": {"databases": 50, "seconds": 30, "seed": 3}})
    chinook_suite.runpytest("--queryeval-json=out/r.json")
    info = by_id(report(chinook_suite))["gated"]["details"]["neighbours"]
    assert info["databases"] == 50 and info["seed"] == 3
    assert info["counterexample"] is not None


def test_the_ini_value_asks_for_it(chinook_suite):
    chinook_suite.makeini("[pytest]\nqueryeval_files = test_*.yaml\nqueryeval_neighbours = 25\n"
                          "queryeval_neighbours_seed = 7\n")
    write(chinook_suite, [case("rewrite", EQUIVALENT)])
    chinook_suite.runpytest("--queryeval-json=out/r.json")
    info = by_id(report(chinook_suite))["rewrite"]["details"]["neighbours"]
    assert (info["databases"], info["checked"], info["seed"]) == (25, 25, 7)


def test_a_threshold_on_neighbour_ex_asks_for_the_search(chinook_suite):
    write(chinook_suite, [case("gated", COINCIDENTAL, thresholds={"neighbour_ex": 1})])
    result = chinook_suite.runpytest("--queryeval-json=out/r.json")
    result.assert_outcomes(failed=1)
    assert by_id(report(chinook_suite))["gated"]["metrics"]["neighbour_ex"] == 0.0


def test_bad_values_are_precise_errors(chinook_suite):
    write(chinook_suite, [case("gated", COINCIDENTAL)], suite={"neighbours": {"databases": 0}})
    result = chinook_suite.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*queryeval.yaml:*: neighbours.databases: 0 is not a number "
                                 "of databases (a positive integer, default 200)*"])
    write(chinook_suite, [case("gated", COINCIDENTAL)])
    result = chinook_suite.runpytest("--queryeval-neighbours=many",
                                     "--queryeval-neighbours-seconds=-1")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([
        "*--queryeval-neighbours=many: 'many' is not a number of databases*",
        "*--queryeval-neighbours-seconds: '-1' is not a number of seconds*"])


def test_a_bare_flag_before_a_path_takes_the_default_budget(chinook_suite):
    write(chinook_suite, [case("rewrite", EQUIVALENT)])
    chinook_suite.runpytest("--queryeval-neighbours", "test_nb.yaml", "--queryeval-json=out/r.json")
    assert by_id(report(chinook_suite))["rewrite"]["details"]["neighbours"]["databases"] == 200


CONFTEST = """
import sys
from pathlib import Path

def pytest_unconfigure(config):
    # the search and its helpers; the package's lazy __init__ and the check's settings module
    # (read by every run) are no import of the search
    Path("modules.txt").write_text(" ".join(sorted(
        m for m in sys.modules if m.startswith("pytest_queryeval.neighbours")
        and m not in ("pytest_queryeval.neighbours", "pytest_queryeval.neighbours.check"))))
"""


def test_nothing_is_imported_when_not_asked_for(chinook_suite):
    write(chinook_suite, [case("gated", COINCIDENTAL)],
          suite={"datasources": {"chinook": {"type": "sqlite", "path": "chinook.sqlite",
                                             "isolation": "thread"}}})
    chinook_suite.makeconftest(CONFTEST)
    result = chinook_suite.runpytest_subprocess("--queryeval-json=out/r.json")
    result.assert_outcomes(passed=1)
    assert (chinook_suite.path / "modules.txt").read_text() == ""
    data = report(chinook_suite)
    assert "neighbours" not in data
    assert "neighbour_ex" not in data["cases"][0]["metrics"]
    assert "neighbours" not in data["cases"][0]["details"]
    # the same run asking for it (in the pytest process: isolation thread) imports the search
    result = chinook_suite.runpytest_subprocess("--queryeval-neighbours=20",
                                                "--queryeval-json=out/r.json")
    assert "pytest_queryeval.neighbours.search" in (chinook_suite.path / "modules.txt").read_text()


def shop(pytester: pytest.Pytester, thresholds: dict[str, float], gold: str,
         predicted: str) -> None:
    duckdb = pytest.importorskip("duckdb")
    conn = duckdb.connect(str(pytester.path / "shop.duckdb"))
    conn.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, total DOUBLE NOT NULL "
                 "CHECK (total >= 0))")
    conn.execute("INSERT INTO orders VALUES (1, 30), (2, 12), (3, 7), (4, 50)")
    conn.close()
    pytester.makeini("[pytest]\nqueryeval_files = test_*.yaml\n")
    pytester.makefile(".yaml", queryeval=json.dumps({
        "datasources": {"shop": {"type": "duckdb", "path": "shop.duckdb"}},
        "thresholds": thresholds}))
    pytester.makefile(".yaml", test_shop=json.dumps({"cases": [
        {"id": "big", "kind": "sql", "datasource": "shop", "gold": gold,
         "predicted": predicted}]}))


def test_a_duckdb_source(pytester):
    duckdb = pytest.importorskip("duckdb")
    shop(pytester, {"execution_accuracy": 1.0, "neighbour_ex": 1.0},
         "SELECT count(*) FROM orders WHERE total > 10",
         "SELECT count(*) FROM orders WHERE total >= 12")
    result = pytester.runpytest("--queryeval-neighbours=40", "--queryeval-json=out/r.json")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*passes on shop.duckdb, but on this 1-row database the gold "
                                 "returns (1,) and the prediction (0,)"])
    found = by_id(report(pytester))["big"]["details"]["neighbours"]["counterexample"]
    assert found["file"] == "out/queryeval-neighbours/big.duckdb"
    conn = duckdb.connect(str(pytester.path / found["file"]), read_only=True)
    try:
        assert conn.execute("SELECT count(*) FROM orders WHERE total > 10").fetchall() == [(1,)]
        assert conn.execute("SELECT count(*) FROM orders WHERE total >= 12").fetchall() == [(0,)]
    finally:
        conn.close()


def test_the_gold_audit_flags_a_gold_its_data_cannot_tell_from_a_neighbour(chinook_suite):
    write(chinook_suite, [
        case("fourteen", ("SELECT count(*) FROM Invoice WHERE Total > 14", "SELECT 1")),
        case("strong", ("SELECT count(*) FROM Invoice WHERE Total > 13.86", "SELECT 1")),
        # AVG skips NULLs: without the IS NOT NULL it is the same query, not a weakness
        case("average", ("SELECT avg(ReportsTo) FROM Employee WHERE ReportsTo IS NOT NULL",
                         "SELECT 1"))])
    result = chinook_suite.runpytest("--queryeval-audit-golds", "--queryeval-neighbours",
                                     "--queryeval-json=out/r.json")
    result.assert_outcomes(passed=3)
    findings = {c["id"]: c["details"]["audit"]["findings"] for c in report(chinook_suite)["cases"]}
    assert [f["code"] for f in findings["strong"]] == []
    assert [f["code"] for f in findings["average"]] == []
    assert findings["fourteen"] == [{
        "code": "weak-gold", "severity": "warning", "gold": None,
        "message": "this gold cannot tell > from >= here: SELECT COUNT(*) FROM Invoice WHERE "
                   "Total >= 14 returns the same result on this database, so a model that "
                   "writes it passes; add rows that tell them apart"}]
    # without --queryeval-neighbours the audit does not look
    chinook_suite.runpytest("--queryeval-audit-golds", "--queryeval-json=out/r.json")
    assert all(c["details"]["audit"]["findings"] == [] for c in report(chinook_suite)["cases"])


def test_queryeval_merge_sums_the_shards_budgets(chinook_suite):
    write(chinook_suite, [case(f"c{i}", COINCIDENTAL if i % 2 else EQUIVALENT)
                          for i in range(4)])
    for index in (1, 2):
        chinook_suite.runpytest(f"--queryeval-shard={index}/2", "--queryeval-neighbours=20",
                                f"--queryeval-json=out/shard-{index}.json")
    import sys

    result = chinook_suite.run(sys.executable, "-m", "pytest_queryeval.conclude.cli", "merge",
                               "out/shard-1.json", "out/shard-2.json", "-o", "out/r.json")
    result.stdout.fnmatch_lines(["neighbours: 4 passes checked on * databases in * s *; "
                                 "2 coincidental passes: c1, c3"])
    merged = report(chinook_suite)
    assert merged["neighbours"]["passes_checked"] == 4
    assert merged["neighbours"]["coincidental_passes"] == ["c1", "c3"]
    shards = [read_report(chinook_suite.path / "out" / f"shard-{i}.json")
              for i in (1, 2)]
    assert merged["neighbours"]["databases_checked"] == sum(
        s["neighbours"]["databases_checked"] for s in shards)


def test_the_gold_audit_flags_a_weak_gold_on_duckdb(pytester):
    shop(pytester, {"execution_accuracy": 1.0}, "SELECT count(*) FROM orders WHERE total > 10",
         "SELECT 1")
    result = pytester.runpytest("--queryeval-audit-golds", "--queryeval-neighbours",
                                "--queryeval-json=out/r.json")
    result.assert_outcomes(passed=1)
    findings = report(pytester)["cases"][0]["details"]["audit"]["findings"]
    assert [f["message"] for f in findings] == [
        "this gold cannot tell > from >= here: SELECT COUNT(*) FROM orders WHERE total >= 10 "
        "returns the same result on this database, so a model that writes it passes; add rows "
        "that tell them apart"]


def test_a_counterexample_beside_a_report_outside_the_rootdir_is_printed_openable(
        chinook_suite, tmp_path_factory):
    """The printed path opened nothing when the report lay outside the rootdir (issue 43: it
    was named from the report's directory); the record's ``file`` stays relative to it."""
    write(chinook_suite, [case("gated", COINCIDENTAL, thresholds={"neighbour_ex": 1})])
    outside = tmp_path_factory.mktemp("elsewhere")
    result = chinook_suite.runpytest("--queryeval-neighbours=60",
                                     f"--queryeval-json={outside / 'r.json'}")
    result.assert_outcomes(failed=1)
    saved = (outside / "queryeval-neighbours" / "gated.sqlite").resolve()
    assert saved.is_file()
    result.stdout.fnmatch_lines([f"*counterexample (database * of the gold's suite): {saved}"])
    data = read_report(outside / "r.json")
    assert by_id(data)["gated"]["details"]["neighbours"]["counterexample"]["file"] == \
        "queryeval-neighbours/gated.sqlite"
