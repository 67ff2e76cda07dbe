"""Issue 41 items 1 and 2: a task fails when its prediction changed tables the gold did not
(the collateral check, on real SQLite and DuckDB files; PostgreSQL in test_postgres.py), and a
failed row check shows the rows that differ, once."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from pytest_queryeval.tasks import Check, Task, run_task
from tests.support import make_case, run_report, write_suite

ROOT = Path(__file__).resolve().parents[2]
INDEX = "CREATE INDEX ix_genre ON Track(GenreId)"
COLLATERAL = "UPDATE Customer SET Fax = NULL; DELETE FROM InvoiceLine WHERE UnitPrice > 1"
CONFIG = {"datasources": {"shop": {"type": "sqlite", "path": "chinook.sqlite",
                                   "writable": "sandbox", "now": "2024-01-01"}}}


def write_task_suite(root: Path, cases: list[dict[str, Any]], **header: Any) -> Path:
    shutil.copyfile(ROOT / "example_suite" / "data" / "chinook.sqlite", root / "chinook.sqlite")
    return write_suite(root, CONFIG, {"test_tasks.yaml": {
        "kind": "sql", "datasource": "shop", **header, "cases": cases}})


def ddl(case_id: str, predicted: str, **keys: Any) -> dict[str, Any]:
    return {"id": case_id, "task": "ddl", "gold": INDEX, "predicted": predicted,
            "checks": [{"schema": {"indexes": ["ix_genre"]}}], **keys}


def test_a_ddl_prediction_that_also_writes_other_tables_fails(pytester: pytest.Pytester) -> None:
    write_task_suite(pytester.path, [
        ddl("collateral", f"{INDEX}; {COLLATERAL}"),
        ddl("ignored", f"{INDEX}; {COLLATERAL}",
            collateral={"ignore": ["customer", "InvoiceLine"]}),
        ddl("off", f"{INDEX}; {COLLATERAL}", collateral=False),
        {"id": "dml-alter", "task": "dml", "gold": "UPDATE Genre SET Name = 'Rock' WHERE "
                                                   "GenreId = 1",
         "predicted": "UPDATE Genre SET Name = 'Rock' WHERE GenreId = 1; ALTER TABLE Artist "
                      "ADD COLUMN Born INTEGER",
         "checks": [{"query": "SELECT * FROM Genre", "compare": "gold"}]},
        ddl("same-index-other-name", "CREATE INDEX ix_genre ON Track (GenreId)"),
        ddl("extra-index", f"{INDEX}; CREATE UNIQUE INDEX ix_email ON Customer(Email)")])
    _, report = run_report(pytester, "-p", "no:cacheprovider")
    cases = report.by_id
    bad = cases["collateral"]
    assert bad["outcome"] == "failed"
    assert bad["reason"] == ("collateral: the prediction changed tables the gold did not: "
                             "Customer (12 rows differ), InvoiceLine (111 rows missing)")
    assert bad["metrics"]["checks_passed"] == 1.0  # the case's own check passes
    assert bad["details"]["collateral"]["passed"] is False
    diff = bad["diff"]
    assert diff[0] == ("collateral: Customer: 12 rows differ (first 3; - gold's copy, + "
                       "prediction's):")
    assert diff[1].startswith("  - (1, 'Luís', 'Gonçalves', ") and "'+55 (12) 3923-5566'" in diff[1]
    assert diff[2].startswith("  + (1, 'Luís', 'Gonçalves', ") and "None" in diff[2]
    assert ("collateral: InvoiceLine: 111 rows missing (in the gold's copy, not the "
            "prediction's; first 3):") in diff
    assert "  - (470, 88, 2832, 1.99, 1)" in diff
    assert [cases[c]["outcome"] for c in ("ignored", "off", "same-index-other-name")] == \
        ["passed"] * 3
    assert cases["dml-alter"]["reason"] == ("collateral: the prediction changed tables the gold "
                                            "did not: Artist (columns differ)")
    assert cases["dml-alter"]["diff"] == ["collateral: Artist: columns: gold's copy (ArtistId, "
                                          "Name), prediction's (ArtistId, Name, Born)"]
    extra = cases["extra-index"]
    assert extra["reason"] == ("collateral: the prediction changed tables the gold did not: "
                               "schema (1 only in the prediction's)")
    assert extra["diff"] == ["collateral: schema: unique index on Customer(Email) only in the "
                             "prediction's copy"]


def test_the_same_writes_are_not_collateral(pytester: pytest.Pytester) -> None:
    """Autoincrement ids, a pinned clock's timestamps, a row deleted and inserted again, a
    table the setup made and the checks never read: the same on both copies."""
    insert_gold = ("INSERT INTO Invoice (CustomerId, InvoiceDate, BillingCountry, Total) "
                   "VALUES (1, datetime('now'), 'Brazil', 1.98)")
    insert_pred = ("INSERT INTO Invoice (CustomerId, InvoiceDate, BillingCountry, Total) "
                   "SELECT 1, datetime(CURRENT_TIMESTAMP), 'Brazil', 0.99 * 2")
    write_task_suite(pytester.path, [
        {"id": "insert", "task": "dml", "gold": [insert_gold, "INSERT INTO Genre (Name) VALUES "
                                                "('Polka')"],
         "predicted": f"{insert_pred}; INSERT INTO Genre (Name) SELECT 'Polka'",
         "setup": "CREATE TABLE scratch (x INTEGER)",
         "checks": [{"query": "SELECT max(InvoiceId), max(InvoiceDate) FROM Invoice",
                     "compare": "gold"}]},
        {"id": "reinsert", "task": "dml",
         "setup": "CREATE TABLE notes (id INTEGER PRIMARY KEY, note TEXT); CREATE TABLE tags "
                  "(tag TEXT); INSERT INTO notes VALUES (1, 'a'), (2, 'b'); INSERT INTO tags "
                  "VALUES ('x'), ('y')",
         "gold": ["UPDATE notes SET note = 'c' WHERE id = 2", "UPDATE tags SET tag = 'z' "
                                                              "WHERE tag = 'x'"],
         "predicted": "DELETE FROM notes WHERE id = 2; INSERT INTO notes VALUES (2, 'c'); "
                      "DELETE FROM tags; INSERT INTO tags VALUES ('y'), ('z')",
         "checks": [{"query": "SELECT * FROM notes", "compare": "gold"}]}])
    _, report = run_report(pytester, "-p", "no:cacheprovider")
    assert report.outcomes == {"insert": "passed", "reinsert": "passed"}, \
        [c.get("reason") for c in report["cases"]]
    assert report.by_id["insert"]["details"]["collateral"] == {"passed": True}


def test_collateral_keys_are_checked_where_written(pytester: pytest.Pytester) -> None:
    write_task_suite(pytester.path, [
        ddl("list", INDEX, collateral={"ignore": "audit_log"}),
        ddl("typo", INDEX, collateral={"ignroe": ["audit_log"]}),
        ddl("name", INDEX, collateral={"ignore": ["ok", 3]}),
        ddl("number", INDEX, collateral=1),
        {"id": "select", "gold": "SELECT 1", "predicted": "SELECT 1", "collateral": "no"}])
    _, report = run_report(pytester, "-p", "no:cacheprovider")
    errors = {c["id"]: c.get("error", "") for c in report["cases"]}
    assert "test_tasks.yaml:" in errors["list"]
    assert "cases[0].collateral.ignore: must be a list of table names" in errors["list"]
    assert "cases[1].collateral.ignroe: unknown key (did you mean 'ignore'?)" in errors["typo"]
    assert "cases[2].collateral.ignore[1]: must be a table name" in errors["name"]
    assert "cases[3].collateral: must be true, false or {ignore: [tables]}" in errors["number"]
    assert "cases[4].collateral: must be true, false or {ignore: [tables]}" in errors["select"]


def test_livesqlbench_cases_keep_the_reference() -> None:
    """Imported LiveSQLBench cases are judged by their own test cases only, as the reference
    judges them, unless the case asks for the collateral check."""
    from pytest_queryeval.tasks.case import collateral_of
    from pytest_queryeval.tasks.collateral import Collateral

    def case(**options: Any) -> Any:
        return make_case(options=options)

    test = [{"livesqlbench_test": "def test_case(*a): pass"}]
    assert collateral_of(case(task="ddl", checks=[])) == Collateral(schema=True)
    assert collateral_of(case(task="dml", collateral={"ignore": ["a"]})) == \
        Collateral(ignore=("a",))
    assert collateral_of(case(task="dml", collateral=False)) is None
    assert collateral_of(case(task="dml", checks=test)) is None
    assert collateral_of(case(task="dml", collateral=True, checks=test)) == Collateral()


def test_a_suite_default_reaches_every_case(pytester: pytest.Pytester) -> None:
    write_task_suite(pytester.path, [ddl("collateral", f"{INDEX}; {COLLATERAL}")],
          collateral={"ignore": ["Customer", "InvoiceLine"]})
    _, report = run_report(pytester, "-p", "no:cacheprovider")
    assert report.outcomes == {"collateral": "passed"}


def duckdb_file(path: Path, rows: int) -> Path:
    import duckdb

    conn = duckdb.connect(str(path))
    conn.execute("CREATE TABLE flights (id INTEGER PRIMARY KEY, status VARCHAR, delay INTEGER)")
    conn.execute(f"INSERT INTO flights SELECT i, 'landed', i % 60 FROM range({rows}) t(i)")
    conn.execute("CREATE TABLE bookings (id INTEGER, flight INTEGER, price DOUBLE)")
    conn.execute("INSERT INTO bookings SELECT i, i % 100, 50 + i % 100 FROM range(1000) t(i)")
    conn.close()
    return path


def test_duckdb_collateral_counts_then_hashes_then_lists_rows(tmp_path: Path) -> None:
    from pytest_queryeval.tasks.collateral import Collateral

    path = duckdb_file(tmp_path / "air.duckdb", 2000)
    gold = ("UPDATE flights SET delay = 0 WHERE id = 1",)
    check = Check(query="SELECT delay FROM flights WHERE id = 1", rows=((0,),))

    def run(predicted: str) -> Any:
        return run_task(Task("duckdb", path, gold=gold, predicted=(predicted,), checks=(check,),
                             collateral=Collateral(ignore=("audit",))), timeout=60)

    same = run("UPDATE flights SET delay = delay - delay WHERE id = 1")
    assert same.passed and same.collateral is not None and same.collateral.passed
    bad = run("UPDATE flights SET delay = 0 WHERE id = 1; DELETE FROM bookings WHERE price > "
              "140; UPDATE flights SET status = 'cancelled' WHERE id BETWEEN 10 AND 14; "
              "CREATE TABLE audit (x INTEGER)")
    assert not bad.passed and bad.checks[0].passed
    assert bad.collateral is not None
    assert bad.collateral.reason == ("collateral: the prediction changed tables the gold did "
                                     "not: bookings (90 rows missing), flights (5 rows differ)")
    assert bad.collateral.diff[:3] == [
        "collateral: bookings: 90 rows missing (in the gold's copy, not the prediction's; "
        "first 3):", "  - (91, 91, 141.0)", "  - (92, 92, 142.0)"]
    assert "  + (10, 'cancelled', 10)" in bad.collateral.diff
    ddl = run_task(Task("duckdb", path, gold=("CREATE INDEX ix_delay ON flights (delay)",),
                        predicted=("CREATE INDEX ix_d ON flights (delay); ALTER TABLE bookings "
                                   "ADD COLUMN seat VARCHAR",),
                        checks=(Check(tables=(("flights", ("delay",)),)),),
                        collateral=Collateral(schema=True)), timeout=60)
    assert ddl.collateral is not None
    assert ddl.collateral.reason == ("collateral: the prediction changed tables the gold did "
                                     "not: bookings (columns differ), schema (1 only in the "
                                     "prediction's)")
    assert ddl.collateral.diff == ["collateral: schema: column bookings.seat VARCHAR only in "
                                   "the prediction's copy"]


def test_a_table_over_the_row_cap_is_reported_by_its_counts(tmp_path: Path) -> None:
    from pytest_queryeval.tasks.collateral import ROW_CAP, Collateral

    path = duckdb_file(tmp_path / "big.duckdb", ROW_CAP + 5000)
    outcome = run_task(Task("duckdb", path, gold=("DELETE FROM bookings WHERE id = 0",),
                            predicted=("DELETE FROM bookings WHERE id = 0; UPDATE flights SET "
                                       "delay = 1 WHERE id = 7",),
                            checks=(Check(query="SELECT count(*) FROM bookings",
                                          rows=((999,),)),),
                            collateral=Collateral()), timeout=60)
    assert outcome.collateral is not None
    assert outcome.collateral.reason == (
        "collateral: the prediction changed tables the gold did not: flights (15000 rows each, "
        f"different content; over the {ROW_CAP}-row cap: rows not listed)")


def test_a_compare_gold_failure_shows_the_rows_that_differ_once(pytester: pytest.Pytester
                                                                 ) -> None:
    write_task_suite(pytester.path, [
        {"id": "late", "task": "dml", "gold": "UPDATE Track SET UnitPrice = 1.29 WHERE "
                                              "TrackId = 3000",
         "predicted": "UPDATE Track SET UnitPrice = 1.29 WHERE TrackId = 3001",
         "checks": [{"query": "SELECT TrackId, Name, UnitPrice FROM Track", "compare": "gold"}]}])
    # the short summary stays short (on CI pytest prints a failure's whole text there too)
    result, report = run_report(pytester, "-p", "no:cacheprovider", "--force-short-summary")
    case = report.by_id["late"]
    assert case["reason"] == (
        "1 of 1 check failed: compare: gold of SELECT TrackId, Name, UnitPrice FROM Track: "
        "2 rows missing (in the gold's copy, not the prediction's), 2 rows extra (in the "
        "prediction's copy, not the gold's); 3503 rows in the gold's copy, 3503 in the "
        "prediction's copy")
    assert case["diff"] == [
        "rows: gold 3503, predicted 3503", "column mapping: identity",
        "missing rows (2 in gold, not in predicted; first 2):",
        "  - (3000, 'God Part II', 1.29)", "  - (3001, 'The Star Spangled Banner', 0.99)",
        "extra rows (2 in predicted, not in gold; first 2):",
        "  + (3000, 'God Part II', 0.99)", "  + (3001, 'The Star Spangled Banner', 1.29)"]
    assert "check failed:" not in "\n".join(case["diff"])
    assert result.stdout.str().count("3503 rows in the gold's copy") == 1
