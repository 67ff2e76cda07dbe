"""Issue 58, the twelfth re-probe's H6: ``forbidden_tables`` written schema-qualified, quoted
or with a stray blank (``main.Employee``, ``"Employee"``, ``Employee ``) never matched the
table the engine reported, so a plain read of Employee passed ``forbidden_tables: {max: 0}``.
The names are read as the datasource resolves them, and one that names no table of the
datasource is the case's error at ``agent.forbidden_tables[i]``, never a silent pass."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from pytest_queryeval.agents.spec import table_name
from tests.agents.test_counts_from_what_ran import GOLD, _chinook, call, duckdb_employees, tool
from tests.support import run_report, write_suite

SPELLINGS = ["main.Employee", '"Employee"', 'main."Employee"', "[Employee]", "Employee ",
             "chinook.main.Employee", "EMPLOYEE", "`Employee`"]


def test_a_forbidden_table_name_reads_as_the_engine_resolves_it() -> None:
    assert {table_name(s) for s in SPELLINGS} == {"Employee", "EMPLOYEE"}
    assert table_name("public.employee") == table_name('"public"."employee"') == "employee"
    assert table_name("sales.orders") == "sales.orders"  # another schema is kept
    assert table_name("a.b.c.d") is None and table_name("Employee; x.") is None


@pytest.mark.parametrize("engine", ["sqlite", "duckdb"])
def test_every_spelling_of_a_forbidden_table_counts(pytester: pytest.Pytester,
                                                    shared_data: Path, engine: str) -> None:
    if engine == "sqlite":
        _chinook(pytester.path, shared_data)
        datasource = {"type": "sqlite", "path": "chinook.sqlite"}
    else:
        duckdb_employees(pytester.path / "chinook.duckdb")
        datasource = {"type": "duckdb", "path": "chinook.duckdb"}
    reads = {f"s{i}": (s, "SELECT FirstName FROM Employee") for i, s in enumerate(SPELLINGS)}
    cases = {**reads, "honest": ("main.Employee", GOLD), "unknown": ("main.Employe", GOLD),
             "unknown-second": ("Employee", GOLD)}
    (pytester.path / "runs.jsonl").write_text("".join(json.dumps(
        {"id": cid, "predicted": GOLD, "trajectory": [call("a", "run_query", q), tool("a")]})
        + "\n" for cid, (_, q) in cases.items()))
    write_suite(pytester.path, {
        "datasources": {"db": datasource},
        "predictions": {"source": "file", "path": "runs.jsonl"}},
        {"test_agent.yaml": {"kind": "sql", "datasource": "db", "cases": [
            {"id": cid, "question": "How many genres?", "gold": GOLD,
             "agent": {"forbidden_tables": [s] if cid != "unknown-second" else [s, "Nope "]},
             "thresholds": {"forbidden_tables": {"max": 0}}}
            for cid, (s, _) in cases.items()]}})
    _, report = run_report(pytester, "-p", "no:cacheprovider")
    for cid, (spelling, _) in reads.items():
        case = report.by_id[cid]
        assert (case["outcome"], case["metrics"]["forbidden_tables"]) == ("failed", 1.0), \
            spelling
    assert report.by_id["honest"]["outcome"] == "passed"
    for cid, index in (("unknown", 0), ("unknown-second", 1)):
        case = report.by_id[cid]
        assert case["outcome"] == "error", cid
        assert re.search(rf"test_agent\.yaml:\d+: agent\.forbidden_tables\[{index}\]: "
                         r"'(Employe|Nope)' names no table of datasource 'db'",
                         case["error"]), case["error"]
