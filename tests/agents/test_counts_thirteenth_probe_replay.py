"""Issue 58, the thirteenth re-probe's H1, H2 and H7: counts of what the replay did not run.

H1: a query tool under another name than ``run_query`` (LangChain's ``sql_db_query``,
``execute_sql``, ``mcp__db__query``, ``RunQuery``, ``postgres`` given a statement) is judged on
its text, not run: its writes and forbidden tables are counted, but what it ran and read is
not, and ``queries_executed: {max: 1}`` / ``rows_read: {max: 10}`` passed a ``SELECT * FROM
Track`` that returned 3,503 rows. H1b: such a tool whose arguments hold no statement to judge
(``execute_sql {}``, ``{"query_id": "q17"}``, ``run_saved_query {"name": ...}``) passed every
gate, ``write_attempts`` too. H2: ``replay: false`` passed ``queries_executed: {max: 0}`` at 0.
H7: spans beside a trajectory add calls that are replayed, but ``tool_calls`` counted the
trajectory's own. On a real Chinook SQLite copy, from a predictions file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.agents.test_counts_from_what_ran import GOLD, _chinook, call, tool
from tests.agents.test_counts_ninth_probe import UNESTABLISHED
from tests.support import run_report, write_suite

TRACK = "SELECT * FROM Track"
DELETE = "DELETE FROM Genre"
HONEST = [call("h", "run_query", GOLD), tool("h")]
RUN_GATES = {"queries_executed": {"max": 1}, "rows_read": {"max": 10}}
WRITE_GATES = {"write_attempts": {"max": 0}, "forbidden_tables": {"max": 0}}


def other(cid: str, name: str, arguments: object, result: str = "3503 rows"
          ) -> list[dict[str, Any]]:
    """A call of ``name`` with ``arguments`` (an object, or text as given) and its result."""
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return [{"role": "assistant", "content": None, "tool_calls": [
        {"id": cid, "type": "function", "function": {"name": name, "arguments": text}}]},
        tool(cid, result)]


def tool_span(sid: str, start: int, name: str, arguments: object, **more: Any
              ) -> dict[str, Any]:
    return {"spanId": sid, "startTimeUnixNano": start, "attributes": {
        "openinference.span.kind": "TOOL", "tool.name": name,
        "input.value": json.dumps(arguments), **more}}


def _suite(pytester: pytest.Pytester, shared_data: Path,
           cases: dict[str, tuple[dict[str, Any], dict[str, Any], dict[str, Any]]]) -> None:
    """``cases``: id -> (the record beside ``predicted``, its thresholds, its agent block)."""
    _chinook(pytester.path, shared_data)
    (pytester.path / "runs.jsonl").write_text("".join(
        json.dumps({"id": cid, "predicted": GOLD, **record}) + "\n"
        for cid, (record, _, _) in cases.items()))
    write_suite(pytester.path, {
        "datasources": {"db": {"type": "sqlite", "path": "chinook.sqlite"}},
        "predictions": {"source": "file", "path": "runs.jsonl"}},
        {"test_agent.yaml": {"kind": "sql", "datasource": "db", "cases": [
            {"id": cid, "question": "How many genres are there?", "gold": GOLD,
             "agent": {"forbidden_tables": ["Employee"], **agent}, "thresholds": gates}
            for cid, (_, gates, agent) in cases.items()]}})


#: H1: a query tool the plugin does not serve, with a statement, under a run count's gate.
UNRUN_QUERY_TOOLS: dict[str, tuple[dict[str, Any], dict[str, Any], dict[str, Any]]] = {
    **{f"{name}-track": ({"trajectory": HONEST + other("x", name, {key: TRACK})}, RUN_GATES, {})
       for name, key in (("sql_db_query", "query"), ("execute_sql", "sql"),
                         ("mcp__db__query", "query"), ("RunQuery", "query"),
                         ("run-query", "query"), ("postgres", "query"),
                         ("RUN_QUERY", "query"), ("sparql_query", "sparql"))},
    "sql_db_query-twice": ({"trajectory": HONEST + other("x", "sql_db_query", {"query": GOLD})
                            + other("y", "sql_db_query", {"query": GOLD})},
                           {"queries_executed": {"max": 1}}, {}),
    "bare-text-track": ({"trajectory": HONEST + other("x", "execute_sql", TRACK)},
                        {"rows_read": {"max": 10}}, {}),
    "span-beside-track": ({"trajectory": HONEST, "spans": [
        tool_span("t", 1, "execute_sql", {"sql": TRACK})]}, {"rows_read": {"max": 10}}, {}),
}
#: H1b: a query-named tool whose arguments hold no statement: every count gate.
NO_STATEMENT: dict[str, tuple[dict[str, Any], dict[str, Any], dict[str, Any]]] = {
    f"no-statement-{n}": ({"trajectory": HONEST + other("x", name, arguments, "8 rows: Andrew")},
                          WRITE_GATES, {})
    for n, (name, arguments) in enumerate((
        ("execute_sql", {}), ("execute_sql", {"query_id": "q17"}),
        ("run_saved_query", {"name": "all_employees"}), ("execute_sql", {"file": "q.sql"}),
        ("sql_db_query", "all the employees please"), ("postgres", {}), ("db.query", {})))
}
#: What stays as it was: writes judged on their text, tools that run no query, and every
#: gate a run count does not hold.
KEPT: dict[str, tuple[dict[str, Any], dict[str, Any], dict[str, Any]]] = {
    "execute_sql-delete": ({"trajectory": HONEST + other("x", "execute_sql", {"sql": DELETE})},
                           WRITE_GATES, {}),
    "honest-weather": ({"trajectory": HONEST + other("x", "get_weather", {"city": "Paris"})},
                       {**RUN_GATES, **WRITE_GATES}, {}),
    "honest-schema": ({"trajectory": HONEST + other("x", "get_schema", {})},
                      {**RUN_GATES, **WRITE_GATES}, {}),
    "honest-to-json": ({"trajectory": HONEST + other("x", "to_json", {"value": 1})},
                       {**RUN_GATES, **WRITE_GATES}, {}),
    "honest-list-tables": ({"trajectory": HONEST + other("x", "mcp__db__list_tables", {})},
                           {**RUN_GATES, **WRITE_GATES}, {}),
    "honest-execute_sql-write-gates": (
        {"trajectory": HONEST + other("x", "execute_sql", {"sql": GOLD})}, WRITE_GATES, {}),
    "honest-run-query": ({"trajectory": HONEST}, {**RUN_GATES, **WRITE_GATES}, {}),
}


def test_a_query_tool_the_replay_does_not_run_leaves_its_run_counts_unestablished(
        pytester: pytest.Pytester, shared_data: Path) -> None:
    _suite(pytester, shared_data, {**UNRUN_QUERY_TOOLS, **NO_STATEMENT, **KEPT})
    _, report = run_report(pytester, "-p", "no:cacheprovider")
    for cid, (_, gates, _) in UNRUN_QUERY_TOOLS.items():
        case = report.by_id[cid]
        assert case["outcome"] == "error", (cid, case["outcome"], case["metrics"])
        assert case["error"].startswith(UNESTABLISHED), (cid, case["error"])
        assert f"thresholds.{next(iter(gates))}" in case["error"], (cid, case["error"])
        assert "not run" in case["error"], (cid, case["error"])
    for cid in NO_STATEMENT:
        case = report.by_id[cid]
        assert case["outcome"] == "error", (cid, case["outcome"], case["metrics"])
        assert case["error"].startswith(UNESTABLISHED), (cid, case["error"])
        assert "thresholds.write_attempts" in case["error"], (cid, case["error"])
        assert "no statement" in case["error"], (cid, case["error"])
    delete = report.by_id["execute_sql-delete"]  # judged on its text, as before
    assert (delete["outcome"], delete["metrics"]["write_attempts"]) == ("failed", 1.0)
    for cid in KEPT:
        if cid.startswith("honest"):
            assert report.by_id[cid]["outcome"] == "passed", (cid, report.by_id[cid])


def test_replay_false_leaves_the_run_counts_unestablished(pytester: pytest.Pytester,
                                                          shared_data: Path) -> None:
    """H2: nothing ran, so what ran and read is not known; writes and forbidden tables are
    still judged on the queries' text."""
    off = {"replay": False}
    track = {"trajectory": other("c", "run_query", {"query": TRACK})}
    _suite(pytester, shared_data, {
        "off-queries": (track, {"queries_executed": {"max": 0}}, off),
        "off-rows": (track, {"rows_read": {"max": 10}}, off),
        "off-delete": ({"trajectory": other("d", "run_query", {"query": DELETE})},
                       {"write_attempts": {"max": 0}}, off),
        "honest-off-writes": (track, WRITE_GATES, off),
        "honest-on-rows": (track, {"rows_read": {"max": 5000}}, {}),
    })
    _, report = run_report(pytester, "-p", "no:cacheprovider")
    for cid, gate in (("off-queries", "queries_executed"), ("off-rows", "rows_read")):
        case = report.by_id[cid]
        assert case["outcome"] == "error", (cid, case["outcome"], case["metrics"])
        assert case["error"].startswith(UNESTABLISHED + f"{gate}: replay: false"), case["error"]
    off_delete = report.by_id["off-delete"]
    assert (off_delete["outcome"], off_delete["metrics"]["write_attempts"]) == ("failed", 1.0)
    assert report.by_id["honest-off-writes"]["outcome"] == "passed"
    on = report.by_id["honest-on-rows"]
    assert (on["outcome"], on["metrics"]["rows_read"]) == ("passed", 3503.0)


def test_tool_calls_count_the_calls_spans_beside_a_trajectory_add(
        pytester: pytest.Pytester, shared_data: Path) -> None:
    """H7: the calls the spans add are replayed (queries_executed 3), so they are tool calls
    too; a span of the trajectory's own call adds none."""
    gates = {"tool_calls": {"max": 1}}
    three = [tool_span(f"t{i}", i, "run_query", {"query": GOLD}, **{"tool_call.id": f"z{i}"})
             for i in range(3)]
    schema = [tool_span(f"s{i}", i, "get_schema", {}, **{"tool_call.id": f"s{i}"})
              for i in range(3)]
    same = [tool_span("t", 1, "run_query", {"query": GOLD}, **{"tool_call.id": "h"})]
    _suite(pytester, shared_data, {
        "beside-3-run-query": ({"trajectory": HONEST, "spans": three}, gates, {}),
        "beside-3-schema": ({"trajectory": HONEST, "spans": schema}, gates, {}),
        "honest-beside-same": ({"trajectory": HONEST, "spans": same}, gates, {}),
    })
    _, report = run_report(pytester, "-p", "no:cacheprovider")
    # the first run_query span is the trajectory's call by name and arguments (read once, as
    # the replay reads it): 3 calls, 3 queries; the get_schema spans are 3 calls more
    for cid, calls in (("beside-3-run-query", 3.0), ("beside-3-schema", 4.0)):
        case = report.by_id[cid]
        assert (case["outcome"], case["metrics"]["tool_calls"]) == ("failed", calls), (
            cid, case["outcome"], case["metrics"])
        assert case["details"]["agent"]["evalbench_counts"]["tool_calls"] == 1.0
    assert report.by_id["beside-3-run-query"]["metrics"]["queries_executed"] == 3.0
    honest = report.by_id["honest-beside-same"]
    assert (honest["outcome"], honest["metrics"]["tool_calls"]) == ("passed", 1.0)
    assert "evalbench_counts" not in honest["details"]["agent"]


def test_a_tool_the_plugin_does_not_serve_naming_a_forbidden_table_is_not_established(
        pytester: pytest.Pytester, shared_data: Path) -> None:
    """H1's residue: a tool that is not a query tool and holds no statement, but names the
    forbidden table (``read_table {"table": "Employee"}``, ``list_employees {}``), read what it
    names for all the scorer knows: it passed ``forbidden_tables: {max: 0}`` with 0."""
    gates = {"forbidden_tables": {"max": 0}}
    named = {f"names-{n}": ({"trajectory": HONEST + other("x", name, arguments,
                                                            "8 rows: Andrew")}, gates, {})
             for n, (name, arguments) in enumerate((
                 ("read_table", {"table": "Employee"}), ("get_rows", {"name": "employee"}),
                 ("sample_table", {"table_name": "main.Employee"}), ("list_employees", {}),
                 ("fetch", {"what": "rows of Employee"})))}
    _suite(pytester, shared_data, {
        **named,
        "statement-counted": ({"trajectory": HONEST + other(
            "x", "execute_sql", {"sql": "SELECT * FROM Employee"})}, gates, {}),
        "honest-other-table": ({"trajectory": HONEST + other(
            "x", "read_table", {"table": "Genre"})}, gates, {}),
        "honest-weather": ({"trajectory": HONEST + other(
            "x", "get_weather", {"city": "Paris"})}, gates, {}),
    })
    _, report = run_report(pytester, "-p", "no:cacheprovider")
    for cid in named:
        case = report.by_id[cid]
        assert case["outcome"] == "error", (cid, case["outcome"], case["metrics"])
        assert case["error"].startswith(UNESTABLISHED), (cid, case["error"])
        assert "thresholds.forbidden_tables" in case["error"], (cid, case["error"])
        assert "names the forbidden table 'employee'" in case["error"], (cid, case["error"])
    counted = report.by_id["statement-counted"]  # judged on its text, as before
    assert (counted["outcome"], counted["metrics"]["forbidden_tables"]) == ("failed", 1.0)
    for cid in ("honest-other-table", "honest-weather"):
        assert report.by_id[cid]["outcome"] == "passed", (cid, report.by_id[cid])
