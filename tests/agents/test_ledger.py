"""The database side's count: which statements are writes, which tables a query names, and
the ledger run against a real SQLite copy (a write refused before it reaches the file)."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest

from pytest_queryeval.agents.ledger import Ledger, WriteRefused
from pytest_queryeval.agents.textjudge import is_write, tables_of
from pytest_queryeval.agents.trajectory import read_trajectory
from pytest_queryeval.sources import open_source


@pytest.mark.parametrize(("sql", "write"), [
    ("SELECT 1", False), ("with x as (select 1) select * from x", False),
    ("select 1 union select 2", False), ("EXPLAIN QUERY PLAN SELECT 1", False),
    ("PRAGMA table_info(Customer)", False), ("DESCRIBE t", False),
    ("INSERT INTO t VALUES (1)", True), ("SELECT a FROM t; DROP TABLE t", True),
    ("WITH d AS (DELETE FROM t RETURNING *) SELECT * FROM d", True),
    ("SELECT * INTO t2 FROM t", True), ("EXPLAIN ANALYZE DELETE FROM t", True),
    ("PRAGMA journal_mode = WAL", True), ("ATTACH DATABASE 'x' AS y", True), ("VACUUM", True),
])
def test_is_write(sql: str, write: bool) -> None:
    assert is_write(sql, "sqlite") is write


def test_tables_of_leaves_ctes_out() -> None:
    assert tables_of("WITH e AS (SELECT * FROM Employee) SELECT * FROM e JOIN Customer c "
                     "ON 1") == {"employee", "customer"}
    assert tables_of("SELEC * FROM Employee") >= {"employee"}  # unparsable: every word


def test_ledger_on_a_real_copy(shared_data: Path, tmp_path: Path) -> None:
    db = tmp_path / "chinook.sqlite"
    shutil.copyfile(shared_data / "chinook" / "Chinook_Sqlite.sqlite", db)
    db.chmod(0o644)
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    source = open_source("chinook", {"type": "sqlite", "path": str(db)})
    try:
        ledger = Ledger.for_tables(["Employee"])
        table = ledger.run_query(source, "SELECT CustomerId FROM Customer WHERE Country = 'USA'",
                                 max_rows=100)
        assert len(table.rows) == 13
        with pytest.raises(WriteRefused):
            ledger.run_query(source, "UPDATE Customer SET Country = 'X'", max_rows=100)
        ledger.run_query(source, "SELECT LastName FROM Employee", max_rows=100)
        steps = read_trajectory([
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": i, "type": "function", "function": {
                    "name": "run_query", "arguments": '{"query": "SELECT 1"}'}}
                for i in ("a", "b")]}]).steps
        for step in steps:
            ledger.call(step)
        ledger.exceeded("tool_calls")
        assert ledger.metrics() == {"queries_executed": 2.0, "rows_read": 21.0,
                                    "write_attempts": 1.0, "forbidden_tables": 1.0,
                                    "repeated_calls": 1.0, "budget_exceeded": 1.0}
        assert ledger.findings == ["write attempt refused: UPDATE Customer SET Country = 'X'",
                                   "forbidden table touched: employee",
                                   "budget exceeded: tool_calls"]
    finally:
        source.close()
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before


CTE = "WITH Employee AS (SELECT * FROM main.Employee) SELECT FirstName FROM Employee"


def test_tables_of_keeps_a_qualified_table_under_a_cte_of_its_name() -> None:
    """Issue 58 item 5: the text's account no longer takes the table for the CTE it hides."""
    assert tables_of(CTE) == {"employee", "main.employee"}  # qualified too (36a H3)
    assert tables_of("WITH t AS (SELECT 1) SELECT * FROM t") == set()


@pytest.mark.parametrize("isolation", ["process", "thread"])
def test_the_engine_says_which_tables_a_query_read(shared_data: Path, tmp_path: Path,
                                                   isolation: str) -> None:
    """SQLite's authorizer (under EXPLAIN, nothing run) names the table under a CTE of its
    name and the table under a view: the forbidden table is counted, as the 8 rows that
    reached the agent were read from it."""
    import sqlite3

    db = tmp_path / "chinook.sqlite"
    shutil.copyfile(shared_data / "chinook" / "Chinook_Sqlite.sqlite", db)
    db.chmod(0o644)
    with sqlite3.connect(db) as con:
        con.execute("CREATE VIEW staff AS SELECT FirstName FROM Employee")
    con.close()
    source = open_source("chinook", {"type": "sqlite", "path": str(db), "isolation": isolation})
    try:
        assert source.tables_read(CTE) == {"Employee"}
        for query in (CTE, "SELECT * FROM staff"):
            ledger = Ledger.for_tables(["Employee"])
            assert len(ledger.run_query(source, query, max_rows=100).rows) == 8
            assert ledger.metrics()["forbidden_tables"] == 1.0, query
    finally:
        source.close()


def test_postgresql_plans_say_which_tables_a_query_read(postgres_url: str) -> None:
    """PostgreSQL's plan (EXPLAIN (FORMAT JSON), planned in a read-only transaction, never run)
    names the table under a CTE of its name."""
    source = open_source("pg", {"type": "sqlalchemy", "url": postgres_url})
    try:
        query = ("WITH employee AS (SELECT * FROM public.employee) "
                 "SELECT first_name FROM employee")
        assert source.tables_read(query) == {"public.employee"}  # with its schema (36a H6)
        ledger = Ledger.for_tables(["employee"])
        assert len(ledger.run_query(source, query, max_rows=100).rows) == 8
        assert ledger.metrics()["forbidden_tables"] == 1.0
    finally:
        source.close()


@pytest.mark.parametrize("sql", [
    "DO $$BEGIN DELETE FROM t; END$$",
    "OPTIMIZE TABLE t",
    "DECLARE c CURSOR FOR SELECT 1",
    "SECURITY LABEL ON TABLE t IS 'x'",
    "HANDLER t OPEN",
    "PURGE BINARY LOGS TO 'x'",
])
def test_bare_command_heads_that_change_state_are_writes(sql: str) -> None:
    """sqlglot reads these as bare commands; the head decides. A PostgreSQL ``DO`` block runs
    the statements inside it (a ``DELETE`` among them), so it was a write the replay let pass
    as a read."""
    assert is_write(sql) and is_write(sql, "postgres")
