"""Issue 58, the twelfth re-probe's H7: ``tool_calls`` and ``turn_count`` came out 0 (EvalBench's
rule) for a trajectory refused for its shape, a record that sets ``error``, or the plugin's own
loop given a model that reuses the call id ``call_0``: 30 calls passed ``tool_calls: {max:
3}``. A case gated with a max on them is judged on the count of what the record holds (the
reference value kept in ``details.agent.evalbench_counts``); one whose messages cannot be read
is an error located at the threshold."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.agents.test_counts_from_what_ran import GOLD, _chinook, call, tool
from tests.support import run_report, write_suite

BASE = [m for i in range(30) for m in (call(f"c{i}", "run_query", GOLD), tool(f"c{i}"))]
GATES = {"tool_calls": {"max": 3}, "turn_count": {"max": 3}}
RECORDS: dict[str, dict[str, Any]] = {
    "system-first": {"trajectory": [{"role": "system", "content": "You are an agent."}, *BASE]},
    "dup-id": {"trajectory": [m for _ in range(30)
                              for m in (call("c", "run_query", GOLD), tool("c"))]},
    "as-text": {"trajectory": json.dumps(BASE)},
    "error-flag": {"trajectory": BASE, "error": "boom"},
    "honest-30": {"trajectory": BASE},
    "users-between": {"trajectory": [m for i in range(4) for m in (
        call(f"c{i}", "run_query", GOLD), tool(f"c{i}"),
        {"role": "user", "content": "go on"})], "error": 1},
    "honest-two": {"trajectory": BASE[:4], "error": "boom"},
}


def test_a_lowered_count_does_not_pass_its_gate(pytester: pytest.Pytester,
                                                shared_data: Path) -> None:
    _chinook(pytester.path, shared_data)
    (pytester.path / "runs.jsonl").write_text("".join(
        json.dumps({"id": cid, "predicted": GOLD, **rec}) + "\n" for cid, rec in RECORDS.items()))
    write_suite(pytester.path, {
        "datasources": {"db": {"type": "sqlite", "path": "chinook.sqlite"}},
        "predictions": {"source": "file", "path": "runs.jsonl"}},
        {"test_agent.yaml": {"kind": "sql", "datasource": "db", "agent": True, "cases": [
            {"id": cid, "question": "How many genres?", "gold": GOLD, "thresholds": GATES}
            for cid in RECORDS]}})
    _, report = run_report(pytester, "-p", "no:cacheprovider")
    for cid in ("system-first", "dup-id", "as-text", "error-flag", "honest-30"):
        case = report.by_id[cid]
        assert case["outcome"] == "failed", cid
        assert (case["metrics"]["tool_calls"], case["metrics"]["turn_count"]) == (30.0, 1.0), cid
    assert report.by_id["dup-id"]["details"]["agent"]["evalbench_counts"] == {
        "tool_calls": 0.0, "turn_count": 0.0}
    assert "evalbench_counts" not in report.by_id["honest-30"]["details"]["agent"]
    users = report.by_id["users-between"]
    assert (users["outcome"], users["metrics"]["turn_count"]) == ("failed", 5.0)
    two = report.by_id["honest-two"]  # under its gates: still passes, counted as it is
    assert (two["outcome"], two["metrics"]["tool_calls"]) == ("passed", 2.0)


def test_the_plugins_loop_counts_calls_under_one_reused_id(
        pytester: pytest.Pytester, agent_standin: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.fixtures.agent_standin import example_module

    module = example_module()
    original = module.reply

    def reused(script: Any, body: Any) -> Any:
        out = original(script, body)
        for c in out["choices"][0]["message"].get("tool_calls") or []:
            c["id"] = "call_0"  # the model chooses its ids
        return out

    monkeypatch.setattr(module, "reply", reused)
    question = "How many rows are there?"
    agent_standin.script = {question: [
        *[{"content": None, "tool_calls": [{"name": "run_query",
                                            "arguments": {"query": f"SELECT {i} FROM t"}}]}
          for i in range(6)],
        {"content": "```sql\nSELECT count(*) FROM t\n```"}]}
    import sqlite3

    with sqlite3.connect(pytester.path / "db.sqlite") as con:
        con.execute("CREATE TABLE t (x INTEGER)")
        con.executemany("INSERT INTO t VALUES (?)", [(1,), (2,), (3,)])
    con.close()
    write_suite(pytester.path, {
        "datasources": {"db": {"type": "sqlite", "path": "db.sqlite"}},
        "predictions": {"source": "openai", "model": "scripted-agent",
                        "base_url": agent_standin.base_url, "api_key": "none", "retries": 0,
                        "timeout": 30, "agent": {}}},
        {"test_q.yaml": {"kind": "sql", "datasource": "db", "cases": [
            {"id": "reused", "question": question, "gold": "SELECT count(*) FROM t",
             "agent": True, "thresholds": GATES}]}})
    _, report = run_report(pytester, "-p", "no:cacheprovider")
    case = report.by_id["reused"]
    assert case["metrics"]["queries_executed"] == 6.0
    assert case["metrics"]["tool_calls"] == 6.0
    assert case["outcome"] == "failed"
