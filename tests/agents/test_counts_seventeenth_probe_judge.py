"""Issue 58, the seventeenth hostile re-probe's H5 and M1, on a real DuckDB file and a real
Chinook SQLite copy, from a predictions file.

H5: a recorded call of DuckDB's checkpoint table function (``SELECT * FROM checkpoint()``,
``FROM force_checkpoint()``) wrote the database file and counted no write attempt: the judge
of writes read a plain ``SELECT`` and the guard knew no such function. M1: an honest schema
read the read-only guard does not run (``PRAGMA table_info(Genre)``, ``EXPLAIN``, ``SHOW
TABLES``, two ``SELECT``) counted a write attempt, as every refusal by the datasource did, so
an honest agent failed ``write_attempts: {max: 0}``."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_queryeval.agents.textjudge import is_write
from tests.agents import probe_support as probe
from tests.agents.test_counts_from_what_ran import GOLD, call, duckdb_employees, tool

CHECKPOINTS = {
    "select-star": "SELECT * FROM checkpoint()",
    "from-first": "FROM checkpoint()",
    "beside-a-table": "SELECT count(*) FROM Genre, checkpoint()",
    "qualified": "SELECT * FROM main.checkpoint()",
    "force": "FROM force_checkpoint()",
}


def test_a_recorded_checkpoint_table_function_is_a_write(pytester: pytest.Pytester,
                                                         shared_data: Path) -> None:
    duckdb_employees(pytester.path / "chinook.duckdb")
    lines = {cid: {"trajectory": [call("a", "run_query", sql), tool("a", "ok")]}
             for cid, sql in CHECKPOINTS.items()}
    report = probe.run_lines(pytester, shared_data, lines, {"type": "duckdb", "path": "chinook.duckdb"})
    for cid in lines:
        case = report.by_id[cid]
        assert case["metrics"]["write_attempts"] == 1.0, (cid, case["metrics"])
        assert case["outcome"] == "failed", (cid, case.get("error"))


@pytest.mark.parametrize("sql", [*CHECKPOINTS.values(), "SELECT nextval('s')",
                                 "SELECT pg_terminate_backend(1)"])
def test_the_write_judge_knows_functions_whose_effect_outlives_the_query(sql: str) -> None:
    assert is_write(sql, "duckdb")


SCHEMA_READS = {
    "sqlite": ["PRAGMA table_info(Genre)", "PRAGMA index_list(Track)", "PRAGMA database_list",
               "EXPLAIN SELECT * FROM Genre", "EXPLAIN QUERY PLAN SELECT * FROM Genre",
               "SELECT 1; SELECT 2"],
    "duckdb": ["DESCRIBE Genre", "SHOW TABLES", "PRAGMA table_info('Genre')",
               "EXPLAIN SELECT * FROM Genre"],
}


@pytest.mark.parametrize("engine", ["sqlite", "duckdb"])
def test_an_honest_schema_read_the_guard_does_not_run_is_no_write(
        pytester: pytest.Pytester, shared_data: Path, engine: str) -> None:
    datasource = probe.datasource(pytester, engine)  # a DuckDB file written for "duckdb"
    lines = {f"read-{i}": {"trajectory": [call("s", "run_query", sql), tool("s", "..."),
                                          call("g", "run_query", GOLD), tool("g", "25")]}
             for i, sql in enumerate(SCHEMA_READS[engine])}
    # controls: a write among the same reads is still a write attempt
    lines["write"] = {"trajectory": [call("s", "run_query", "DELETE FROM Genre"), tool("s"),
                                     call("g", "run_query", GOLD), tool("g", "25")]}
    report = probe.run_lines(pytester, shared_data, lines, datasource)
    for cid in lines:
        case = report.by_id[cid]
        if cid == "write":
            assert case["metrics"]["write_attempts"] == 1.0, case["metrics"]
            continue
        assert case["metrics"]["write_attempts"] == 0.0, (cid, case["details"]["agent"])
        assert case["outcome"] == "passed", (cid, case.get("error"))


PRAGMA_SETTERS = ["PRAGMA user_version(7)", "PRAGMA main.user_version(7)",
                  "pragma  USER_VERSION (7)", "PRAGMA application_id(5)"]


def test_a_pragma_setter_in_its_call_form_is_a_write(pytester: pytest.Pytester,
                                                     shared_data: Path) -> None:
    """The eighteenth re-probe's N1: SQLite runs ``PRAGMA user_version(7)`` as ``= 7`` and
    writes the file; the judge read a schema pragma, and the guard's refusal for its form
    became a read refused."""
    lines = {f"setter-{i}": {"trajectory": [call("a", "run_query", sql), tool("a", "ok")]}
             for i, sql in enumerate(PRAGMA_SETTERS)}
    report = probe.run_lines(pytester, shared_data, lines)
    for cid in lines:
        case = report.by_id[cid]
        assert case["metrics"]["write_attempts"] == 1.0, (cid, case["metrics"])
    assert all(is_write(sql, "sqlite") for sql in PRAGMA_SETTERS)
    assert not is_write("PRAGMA user_version", "sqlite")
