"""A ``sample_rows`` call naming its table qualified or quoted (issue 58, the fourth
re-probe's M3): ``{"table": "main.Employee"}`` or ``{"table": "\\"Employee\\""}`` was neither
replayed nor counted (only a plain name was), so a harness that served it passed
``forbidden_tables: {max: 0}`` with a count of 0 while the rows reached the agent. Now the
name is read as the table it names (each part quoted: ``"main"."Employee"``), replayed, and
the engine's account of the tables read counts it. Through a predictions file on a real
Chinook SQLite copy and a real DuckDB file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.agents.test_counts_from_what_ran import _file_suite, duckdb_employees, tool
from tests.support import run_report

NAMES = {"qualified": "main.Employee", "quoted": '"Employee"', "quoted-qualified":
         '"main"."Employee"', "bracketed": "[Employee]", "backquoted": "`Employee`",
         "spaced": " main . Employee ", "plain": "Employee"}


def _sample(table: str) -> list[dict[str, Any]]:
    return [{"role": "assistant", "content": None, "tool_calls": [
        {"id": "a", "type": "function", "function": {
            "name": "sample_rows", "arguments": json.dumps({"table": table})}}]}, tool("a")]


def _check(report: Any) -> None:
    for cid in NAMES:
        case = report.by_id[cid]
        metrics = case["metrics"]
        assert metrics["forbidden_tables"] == 1.0, (cid, metrics)
        assert metrics["queries_executed"] == 1.0, (cid, metrics)  # replayed
        assert metrics["rows_read"] == 5.0, (cid, metrics)  # the tool's default limit
        assert case["outcome"] == "failed", cid
    genre = report.by_id["genre"]  # a table not forbidden, qualified: replayed, not counted
    assert genre["metrics"]["forbidden_tables"] == 0.0 and genre["outcome"] == "passed"
    assert genre["metrics"]["queries_executed"] == 1.0


@pytest.mark.parametrize("engine", ["sqlite", "duckdb"])
def test_a_qualified_or_quoted_sample_table_is_replayed_and_counted(
        pytester: pytest.Pytester, shared_data: Path, engine: str) -> None:
    lines = {cid: {"trajectory": _sample(name)} for cid, name in NAMES.items()}
    lines["genre"] = {"trajectory": _sample('main."Genre"')}
    datasource = None
    if engine == "duckdb":
        duckdb_employees(pytester.path / "chinook.duckdb")
        datasource = {"type": "duckdb", "path": "chinook.duckdb"}
    _file_suite(pytester, shared_data, lines, datasource)
    _, report = run_report(pytester, "-p", "no:cacheprovider")
    _check(report)


def test_a_name_that_is_no_table_name_is_not_run() -> None:
    from pytest_queryeval.agents.trajectory import sample_table

    assert sample_table("main.Employee") == '"main"."Employee"'
    assert sample_table('"Em""p"') == '"Em""p"'
    for bad in ("Employee; DROP TABLE Genre", "a.b.c.d", '""', 'main."Employee', 7):
        assert sample_table(bad) is None, bad
