"""``task: dml`` / ``task: ddl`` cases in a YAML suite on real SQLite and DuckDB files, run
through pytest itself (pytester): each check kind, the writable mark, located validation
errors, a case without a check an error, and the datasource never written."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.support import read_report, write_suite

ROOT = Path(__file__).resolve().parents[2]
RAISE = "UPDATE Track SET UnitPrice = UnitPrice + 0.1 WHERE GenreId = 1"
ROCK = "SELECT TrackId, UnitPrice FROM Track WHERE GenreId = 1"
CHECKS_PY = '''
def rock_raised(conn, predicted, gold):
    n = conn.execute("SELECT count(*) FROM Track WHERE GenreId = 1 AND UnitPrice > 1.0")
    assert n.fetchone()[0] == 1297, "rock prices not raised"
'''

CASES: dict[str, Any] = {
    "kind": "sql",
    "datasource": "shop",
    "cases": [
        {"id": "same-change", "task": "dml", "gold": RAISE,
         "predicted": RAISE.replace("+ 0.1", "+ 0.10"),
         "checks": [{"query": ROCK, "compare": "gold"},
                    {"query": "SELECT count(*) FROM Track WHERE UnitPrice > 1.0",
                     "rows": [[1297 + 213]]},
                    {"python": "taskchecks:rock_raised"}]},
        {"id": "too-wide", "task": "dml", "gold": RAISE,
         "predicted": "UPDATE Track SET UnitPrice = UnitPrice + 0.1",
         "checks": [{"query": "SELECT TrackId, UnitPrice FROM Track", "compare": "gold"},
                    {"python": "taskchecks:rock_raised"}]},
        {"id": "index", "task": "ddl",
         "gold": ["CREATE INDEX ix_genre ON Track(GenreId)",
                  "ALTER TABLE Track ADD COLUMN Rating INTEGER"],
         "predicted": "ALTER TABLE Track ADD COLUMN Rating INTEGER; "
                      "CREATE INDEX ix_genre ON Track(GenreId)",
         "setup": "CREATE TABLE scratch (x INTEGER)", "cleanup": ["DROP TABLE scratch"],
         "checks": [{"schema": {"tables": {"Track": ["GenreId", "Rating"], "scratch": ["x"]},
                                "indexes": ["ix_genre"]}}]},
        {"id": "no-check", "task": "dml", "gold": RAISE, "predicted": RAISE},
        {"id": "bad-gold", "task": "dml", "gold": "UPDATE Nope SET x = 1", "predicted": RAISE,
         "checks": [{"query": ROCK, "compare": "gold"}]},
        {"id": "read-only", "task": "dml", "datasource": "chinook", "gold": RAISE,
         "predicted": RAISE, "checks": [{"query": ROCK, "compare": "gold"}]},
        {"id": "guarded", "datasource": "shop", "gold": "SELECT 1", "predicted": RAISE},
        {"id": "typo", "task": "dml", "gold": RAISE, "predicted": RAISE,
         "checks": [{"query": ROCK, "compare": "gold", "rows": [[1]]}, {"pyhton": "x:y"}]},
    ],
}


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def task_suite(pytester: pytest.Pytester) -> pytest.Pytester:
    db = pytester.path / "chinook.sqlite"
    shutil.copyfile(ROOT / "example_suite" / "data" / "chinook.sqlite", db)
    write_suite(pytester.path, {"datasources": {
        "chinook": {"type": "sqlite", "path": "chinook.sqlite"},
        "shop": {"type": "sqlite", "path": "chinook.sqlite", "writable": "sandbox"}}},
        {"test_tasks.yaml": json.dumps(CASES, indent=1), "taskchecks.py": CHECKS_PY})
    return pytester


def report(path: Path) -> dict[str, Any]:
    return {c["id"]: c for c in read_report(path)["cases"]}


def test_task_cases_end_to_end(task_suite: pytest.Pytester) -> None:
    db = task_suite.path / "chinook.sqlite"
    before = sha256(db)
    task_suite.runpytest("--queryeval-json=r.json", "-p", "no:cacheprovider")
    cases = report(task_suite.path / "r.json")
    same = cases["same-change"]
    assert same["outcome"] == "passed"
    assert same["metrics"]["execution_accuracy"] == 1.0
    assert same["metrics"]["checks_passed"] == 1.0
    assert same["metrics"]["copy_seconds"] > 0
    assert [c["passed"] for c in same["details"]["checks"]] == [True, True, True]
    wide = cases["too-wide"]
    assert wide["outcome"] == "failed"
    assert wide["metrics"]["checks_passed"] == 0.5
    assert wide["reason"].startswith("1 of 2 checks failed: compare: gold of SELECT TrackId, "
                                     "UnitPrice FROM Track: 2206 rows missing (in the gold's "
                                     "copy, not the prediction's), 2206 rows extra")
    assert cases["index"]["outcome"] == "passed"
    assert cases["index"]["details"]["checks"] == [{"check": "schema", "passed": True}]
    assert cases["no-check"]["outcome"] == "error"
    assert "checks: a task: dml case needs at least one check" in cases["no-check"]["error"]
    assert cases["bad-gold"]["outcome"] == "error"
    assert "the gold failed on its copy: OperationalError: no such table: Nope" in \
        cases["bad-gold"]["error"]
    assert cases["read-only"]["outcome"] == "error"
    assert "datasource 'chinook' is read-only; mark it 'writable: sandbox'" in \
        cases["read-only"]["error"]
    # a plain case on a writable datasource keeps the read-only guard
    assert cases["guarded"]["reason"].startswith("refused: UPDATE")
    typo = cases["typo"]["error"]
    assert "test_tasks.yaml:" in typo and "cases[7].checks[0]: needs exactly one of rows, " \
        "compare, schema or python, not rows, compare" in typo
    assert sha256(db) == before


def test_writable_and_now_are_checked_where_written(pytester: pytest.Pytester) -> None:
    shutil.copyfile(ROOT / "example_suite" / "data" / "chinook.sqlite",
                    pytester.path / "chinook.sqlite")
    pytester.makeini("[pytest]\nqueryeval_files = test_*.yaml\n")
    pytester.makefile(".yaml", queryeval="datasources:\n"
                      "  shop:\n    type: sqlite\n    path: chinook.sqlite\n"
                      "    writable: yes please\n    now: yesterday\n")
    pytester.makefile(".yaml", test_t=json.dumps(
        {"kind": "sql", "datasource": "shop",
         "cases": [{"id": "a", "gold": "SELECT 1", "predicted": "SELECT 1"}]}))
    result = pytester.runpytest("--queryeval-json=r.json", "-p", "no:cacheprovider")
    error = report(pytester.path / "r.json")["a"]["error"]
    assert "queryeval.yaml:5: datasources.shop.writable: must be 'sandbox'" in error
    assert "queryeval.yaml:6: datasources.shop.now: now: 'yesterday' is not an ISO date" in error
    assert result.ret != 0


def test_duckdb_task(pytester: pytest.Pytester) -> None:
    duckdb = pytest.importorskip("duckdb")
    path = pytester.path / "shop.duckdb"
    conn = duckdb.connect(str(path))
    conn.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, total DOUBLE)")
    conn.execute("INSERT INTO orders VALUES (1, 30), (2, 12), (3, 7)")
    conn.close()
    before = sha256(path)
    pytester.makeini("[pytest]\nqueryeval_files = test_*.yaml\n")
    pytester.makefile(".yaml", queryeval=json.dumps({"datasources": {
        "shop": {"type": "duckdb", "path": "shop.duckdb", "writable": "sandbox"}}}))
    gold = "UPDATE orders SET total = total * 2 WHERE total > 10"
    pytester.makefile(".yaml", test_t=json.dumps({"kind": "sql", "datasource": "shop", "cases": [
        {"id": "ok", "task": "dml", "gold": gold, "predicted": "UPDATE orders SET total = "
         "2 * total WHERE total >= 12", "checks": [{"query": "SELECT * FROM orders",
                                                    "compare": "gold"}]},
        {"id": "wrong", "task": "dml", "gold": gold, "predicted": "DELETE FROM orders",
         "checks": [{"query": "SELECT count(*) FROM orders", "rows": [[3]]}]}]}))
    pytester.runpytest("--queryeval-json=r.json", "-p", "no:cacheprovider")
    cases = report(pytester.path / "r.json")
    assert cases["ok"]["outcome"] == "passed"
    assert cases["wrong"]["reason"] == ("1 of 1 check failed: rows of SELECT count(*) FROM "
                                        "orders: expected 1 rows [(3,)], got 1 rows [(0,)]")
    assert sha256(path) == before


def test_gold_audit_runs_each_gold_against_its_own_checks(task_suite: pytest.Pytester) -> None:
    task_suite.makefile(".yaml", test_tasks=json.dumps({"kind": "sql", "datasource": "shop", "cases": [
        {"id": "good", "task": "dml", "gold": RAISE,
         "checks": [{"query": "SELECT count(*) FROM Track WHERE UnitPrice > 1.0",
                     "rows": [[1510]]}]},
        {"id": "stale", "task": "dml", "gold": RAISE,  # written before the change
         "checks": [{"query": "SELECT count(*) FROM Track WHERE UnitPrice > 1.0",
                     "rows": [[213]]}]}]}))
    result = task_suite.runpytest("--queryeval-json=r.json", "-p", "no:cacheprovider",
                             "--queryeval-audit-golds")
    findings = read_report(task_suite.path / "r.json")["audit"]["findings"]
    assert [(f["id"], f["code"]) for f in findings] == [("stale", "gold-error")]
    assert findings[0]["message"] == (
        "the gold fails its own checks: 1 of 1 check failed: rows of SELECT count(*) FROM "
        "Track WHERE UnitPrice > 1.0: expected 1 rows [(213,)], got 1 rows [(1510,)]")
    assert result.ret == 1


def test_a_hostile_python_check_fails_its_case_at_the_deadline(task_suite: pytest.Pytester) -> None:
    """An endless Python check is killed at the case's timeout, never run in pytest's process;
    the next case runs in a fresh worker."""
    task_suite.makepyfile(spinning="def spin(conn, predicted, gold):\n    while True:\n        pass\n")
    task_suite.makefile(".yaml", test_tasks=json.dumps({"kind": "sql", "datasource": "shop", "cases": [
        {"id": "spin", "task": "dml", "gold": RAISE, "predicted": RAISE, "timeout": 2,
         "checks": [{"python": "spinning:spin"}]},
        {"id": "after", "task": "dml", "gold": RAISE, "predicted": RAISE,
         "checks": [{"query": ROCK, "compare": "gold"}]}]}))
    task_suite.runpytest("--queryeval-json=r.json", "-p", "no:cacheprovider")
    cases = report(task_suite.path / "r.json")
    assert cases["spin"]["outcome"] == "failed"
    assert cases["spin"]["reason"] == ("timeout: no result within 2 s (the tasks worker was "
                                       "killed)")
    assert cases["after"]["outcome"] == "passed"


def test_a_failed_check_is_printed_once(task_suite: pytest.Pytester) -> None:
    """The reason names the first failing check; the diff lists only the others (issue 43:
    each failing check was printed as the reason and again as a diff line)."""
    task_suite.makefile(".yaml", test_tasks=json.dumps({"kind": "sql", "datasource": "shop", "cases": [
        {"id": "wrong", "task": "dml", "gold": RAISE, "predicted": "UPDATE Track SET UnitPrice = UnitPrice WHERE 0",
         "checks": [{"query": "SELECT count(*) FROM Track WHERE UnitPrice > 1.1",
                     "rows": [[0]]},
                    {"python": "taskchecks:rock_raised"},
                    {"query": "SELECT count(*) FROM Track", "rows": [[3503]]}]}]}))
    result = task_suite.runpytest("--queryeval-json=r.json", "-p", "no:cacheprovider")
    wrong = report(task_suite.path / "r.json")["wrong"]
    first = "rows of SELECT count(*) FROM Track WHERE UnitPrice > 1.1: expected"
    assert wrong["reason"].startswith(f"2 of 3 checks failed: {first}")
    assert wrong["diff"] == ["check failed: python taskchecks:rock_raised: rock prices not raised"]
    section = result.stdout.str().split("sql case 'wrong'", 1)[1].split("=" * 20, 1)[0]
    assert section.count(first) == 1, section
    assert section.count("rock prices not raised") == 1, section
