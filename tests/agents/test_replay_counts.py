"""The database side's counts of a replayed trajectory hold its ``sample_rows`` reads, as the
tool loop's do: the same agent steps, once served live by the plugin's tool loop (the scripted
stand-in behind the real ``openai`` client) and once brought from outside in a predictions
file, give the loop's queries executed and forbidden tables touched, and the same counts, on a real
Chinook copy. Before: a replay ran only ``run_query`` calls, so an outside agent that read a
forbidden table through ``sample_rows`` was not counted, and a trajectory of sample reads
alone was not replayed at all."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from pytest_queryeval.agents.ledger import COUNT_METRICS
from tests.support import run_report, write_suite

QUESTION = "How many customers are there in the USA?"
GOLD = "SELECT COUNT(*) FROM Customer WHERE Country = 'USA'"
#: Two sample reads (one of a forbidden table, one with a limit past the tool's cap) and the
#: final query.
CALLS = [("sample_rows", {"table": "Employee"}), ("sample_rows", {"table": "Customer",
                                                                   "limit": 500}),
         ("run_query", {"query": GOLD})]


def _suite(pytester: pytest.Pytester, shared_data: Path, predictions: dict[str, Any]) -> None:
    db = pytester.path / "chinook.sqlite"
    shutil.copyfile(shared_data / "chinook" / "Chinook_Sqlite.sqlite", db)
    db.chmod(0o644)
    write_suite(pytester.path, {
        "datasources": {"chinook": {"type": "sqlite", "path": "chinook.sqlite"}},
        "predictions": predictions},
        {"test_agent.yaml": {"kind": "sql", "datasource": "chinook",
                             "agent": {"forbidden_tables": ["Employee"]},
                             "cases": [{"id": "usa", "question": QUESTION, "gold": GOLD,
                                        "agent": {"trajectory": ["sample_rows", "run_query"]}}]}})


def test_replayed_sample_rows_are_counted_as_the_loop_counts_them(
        pytester: pytest.Pytester, shared_data: Path, agent_standin: Any) -> None:
    pytest.importorskip("openai")
    agent_standin.script = {QUESTION: [
        *({"content": None, "tool_calls": [{"name": n, "arguments": a}]} for n, a in CALLS),
        {"content": f"```sql\n{GOLD}\n```"}]}
    _suite(pytester, shared_data, {"source": "openai", "model": "scripted-agent",
                                   "base_url": agent_standin.base_url, "api_key": "none",
                                   "retries": 0, "agent": {"budget": {}}})
    _, live = run_report(pytester, "-p", "no:cacheprovider")
    case = live.by_id["usa"]
    ran = case["details"]["prediction"]["agent"]["queries"]  # what the loop ran, and got
    assert [q["tool"] for q in ran] == ["sample_rows", "sample_rows", "run_query"]
    # counted as read: 5 of Employee's 8 rows (the default), 50 of Customer's 59 (the tool's
    # cap; the loop showed the model 20 of them), 1 count row
    assert (case["metrics"]["queries_executed"], case["metrics"]["rows_read"],
            case["metrics"]["forbidden_tables"]) == (3.0, 56.0, 1.0)
    trajectory = case["details"]["agent"]["trajectory"]

    # the same steps from outside: a predictions file
    (pytester.path / "runs.jsonl").write_text(json.dumps(
        {"id": "usa", "predicted": GOLD, "trajectory": trajectory}) + "\n")
    _suite(pytester, shared_data, {"source": "file", "path": "runs.jsonl"})
    _, replayed = run_report(pytester, "-p", "no:cacheprovider", fresh=True)
    metrics = replayed.by_id["usa"]["metrics"]
    assert {m: metrics[m] for m in COUNT_METRICS} == {m: case["metrics"][m]
                                                       for m in COUNT_METRICS}
    assert replayed.by_id["usa"]["details"]["agent"]["findings"] == [
        "forbidden table touched: employee"]


def test_a_trajectory_of_sample_reads_alone_is_replayed(
        pytester: pytest.Pytester, shared_data: Path) -> None:
    trajectory = [
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "a", "type": "function", "function": {
                "name": "sample_rows", "arguments": '{"table": "Employee", "limit": 3}'}}]},
        {"role": "tool", "tool_call_id": "a", "content": "..."},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "b", "type": "function", "function": {
                "name": "sample_rows", "arguments": '{"table": "x\\"; DROP TABLE t; --"}'}}]},
        {"role": "tool", "tool_call_id": "b", "content": "error"}]
    (pytester.path / "runs.jsonl").write_text(json.dumps(
        {"id": "usa", "predicted": GOLD, "trajectory": trajectory}) + "\n")
    _suite(pytester, shared_data, {"source": "file", "path": "runs.jsonl"})
    _, report = run_report(pytester, "-p", "no:cacheprovider")
    metrics = report.by_id["usa"]["metrics"]
    # the second names no table (not a plain name): not run, as the tool would not run it
    assert (metrics["queries_executed"], metrics["rows_read"], metrics["forbidden_tables"],
            metrics["write_attempts"]) == (1.0, 3.0, 1.0, 0.0)
