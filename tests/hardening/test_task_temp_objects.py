"""Issue 50 item 2: a temporary object does not fool a task's checks.

On SQLite and DuckDB an unqualified name resolves to a temporary object before the copy's
table: a wrong DML prediction that only creates ``TEMP VIEW Artist`` (or ``TEMP TABLE``)
holding the rows the gold leaves passed its checks and the collateral check, while the copy's
``Artist`` still held 275 rows against the gold's 204. Every temporary object is now dropped
before the checks, and the collateral check names base tables by qualified name. Whole suites
through pytest on real SQLite and DuckDB files; the right prediction still passes.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.support import dump, run_report, write_suite

ROOT = Path(__file__).resolve().parents[2]

#: The artists with an album: 204 of Chinook's 275.
WITH_ALBUM = "ArtistId IN (SELECT ArtistId FROM Album)"
GOLD = f"DELETE FROM Artist WHERE NOT {WITH_ALBUM}"
CHECKS = [{"query": "SELECT count(*) FROM Artist", "rows": [[204]]},
          {"query": "SELECT * FROM Artist ORDER BY ArtistId", "compare": "gold"}]


def _run(pytester: pytest.Pytester, cases: list[dict[str, object]]) -> dict[str, dict]:
    pytester.makefile(".yaml", test_t=dump({"kind": "sql", "datasource": "shop",
                                            "cases": cases}))
    _, report = run_report(pytester, "-p", "no:cacheprovider")
    return report.by_id


def test_a_sqlite_temp_object_named_as_the_table_does_not_pass(pytester: pytest.Pytester):
    shutil.copyfile(ROOT / "example_suite" / "data" / "chinook.sqlite",
                    pytester.path / "chinook.sqlite")
    write_suite(pytester.path, {"datasources": {"shop": {
        "type": "sqlite", "path": "chinook.sqlite", "writable": "sandbox"}}})
    forged = {
        "temp-view": f"CREATE TEMP VIEW Artist AS SELECT * FROM main.Artist WHERE {WITH_ALBUM}",
        "temp-table": f"CREATE TEMP TABLE Artist AS SELECT * FROM main.Artist WHERE {WITH_ALBUM}",
        "temp-schema": f"CREATE TABLE temp.Artist AS SELECT * FROM main.Artist WHERE "
                       f"{WITH_ALBUM}",
    }
    got = _run(pytester, [{"id": name, "task": "dml", "gold": GOLD, "predicted": sql,
                           "checks": CHECKS} for name, sql in forged.items()]
               + [{"id": "right", "task": "dml", "gold": GOLD,
                   "predicted": f"DELETE FROM main.Artist WHERE NOT {WITH_ALBUM}",
                   "checks": CHECKS}])
    assert got["right"]["outcome"] == "passed", got["right"]
    for name in forged:  # before: passed
        assert got[name]["outcome"] == "failed", (name, got[name])
        assert got[name]["reason"].startswith("2 of 2 checks failed: rows of SELECT count(*) "
                                              "FROM Artist"), got[name]["reason"]
        assert "275" in got[name]["reason"]


def test_a_duckdb_temp_object_named_as_the_table_does_not_pass(pytester: pytest.Pytester):
    duckdb = pytest.importorskip("duckdb")
    conn = duckdb.connect(str(pytester.path / "shop.duckdb"))
    conn.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, total DOUBLE)")
    conn.execute("INSERT INTO orders VALUES (1, 30), (2, 12), (3, 7)")
    conn.close()
    write_suite(pytester.path, {"datasources": {"shop": {
        "type": "duckdb", "path": "shop.duckdb", "writable": "sandbox"}}})
    checks = [{"query": "SELECT count(*) FROM orders", "rows": [[2]]},
              {"query": "SELECT * FROM orders ORDER BY id", "compare": "gold"}]
    forged = {
        "temp-view": "CREATE TEMP VIEW orders AS SELECT 1 AS id, 30.0 AS total "
                     "UNION ALL SELECT 2, 12.0",
        "temp-table": "CREATE TEMP TABLE orders AS SELECT * FROM orders WHERE total >= 10",
    }
    gold = "DELETE FROM orders WHERE total < 10"
    got = _run(pytester, [{"id": name, "task": "dml", "gold": gold, "predicted": sql,
                           "checks": checks} for name, sql in forged.items()]
               + [{"id": "right", "task": "dml", "gold": gold,
                   "predicted": "DELETE FROM orders WHERE id = 3", "checks": checks}])
    assert got["right"]["outcome"] == "passed", got["right"]
    for name in forged:  # before: passed
        assert got[name]["outcome"] == "failed", (name, got[name])
        assert got[name]["reason"].startswith("2 of 2 checks failed"), got[name]["reason"]


def test_the_collateral_check_reads_the_base_table_past_a_temp_object():
    """The collateral comparison alone (its checks passing): the prediction's copy left a
    temporary object named as a table whose base rows differ; the table is compared by its
    qualified name, so the difference is seen (on SQLite and DuckDB)."""
    import sqlite3

    from pytest_queryeval.tasks.collateral import Collateral, compare

    gold, pred = sqlite3.connect(":memory:"), sqlite3.connect(":memory:")
    for conn in (gold, pred):
        conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY)")
        conn.executemany("INSERT INTO t VALUES (?)", [(1,), (2,), (3,)])
    gold.execute("DELETE FROM t WHERE id = 3")
    pred.execute("CREATE TEMP TABLE t AS SELECT * FROM main.t WHERE id < 3")
    why, _ = compare(gold, pred, Collateral())
    assert why == "collateral: the prediction changed tables the gold did not: t (1 rows added)"
    duckdb = pytest.importorskip("duckdb")
    gold_d, pred_d = duckdb.connect(), duckdb.connect()
    for conn in (gold_d, pred_d):
        conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY)")
        conn.execute("INSERT INTO t VALUES (1), (2), (3)")
    gold_d.execute("DELETE FROM t WHERE id = 3")
    pred_d.execute("CREATE TEMP TABLE t AS SELECT * FROM memory.main.t WHERE id < 3")
    why, _ = compare(gold_d, pred_d, Collateral())
    assert why.startswith("collateral: the prediction changed tables the gold did not: t ("), why
