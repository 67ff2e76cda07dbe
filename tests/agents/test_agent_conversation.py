"""An agent case inside a conversation: each user turn is asked of the agent (a python
source returning a trajectory per turn), each turn scored with the agent metrics, and the
conversation's counts are what the agent did in all its turns (EvalBench's AgentSteps and
TurnCount count the whole history). Before: the turns' counts were averaged, so a
conversation of two turns of two tool calls each reported 2 calls and 1 turn."""

from __future__ import annotations

import sqlite3

import pytest

from tests.support import run_report, write_suite

MODEL = '''
import json


def call(cid, name, args):
    return {"role": "assistant", "content": None, "tool_calls": [
        {"id": cid, "type": "function",
         "function": {"name": name, "arguments": json.dumps(args)}}]}


def predict(case):
    assert case["agent"] is True
    if case["turn"] == 1:
        q = "SELECT count(*) FROM t"
        steps = [call("a", "get_schema", {}), {"role": "tool", "tool_call_id": "a",
                                               "content": "t(x)"}]
    else:  # reads the forbidden table twice, then answers
        q = "SELECT max(x) FROM t"
        steps = [call("s", "sample_rows", {"table": "secret"}),
                 {"role": "tool", "tool_call_id": "s", "content": "..."},
                 call("z", "run_query", {"query": "SELECT * FROM secret"}),
                 {"role": "tool", "tool_call_id": "z", "content": "..."}]
    return {"predicted": q, "trajectory": [
        *steps, call("b", "run_query", {"query": q}),
        {"role": "tool", "tool_call_id": "b", "content": "3"}]}
'''


def test_a_conversation_of_agent_turns_counts_all_of_them(pytester: pytest.Pytester) -> None:
    with sqlite3.connect(pytester.path / "db.sqlite") as con:
        con.execute("CREATE TABLE t (x INTEGER)")
        con.executemany("INSERT INTO t VALUES (?)", [(1,), (2,), (3,)])
        con.execute("CREATE TABLE secret (s TEXT)")
        con.executemany("INSERT INTO secret VALUES (?)", [("a",), ("b",)])
    con.close()
    pytester.makepyfile(agent_model=MODEL)
    write_suite(pytester.path, {
        "datasources": {"db": {"type": "sqlite", "path": "db.sqlite"}},
        "predictions": {"source": "python", "function": "agent_model:predict"}},
        {"test_chat.yaml": {"kind": "sql", "datasource": "db", "cases": [{
            "id": "chat", "agent": {"trajectory": ["get_schema", "run_query"],
                                    "forbidden_tables": ["secret"]},
            "conversation": [
                {"role": "user", "content": "How many rows?", "gold": "SELECT count(*) FROM t"},
                {"role": "user", "content": "And the largest?",
                 "gold": "SELECT max(x) FROM t"}]}]}})
    _, report = run_report(pytester, "-p", "no:cacheprovider")
    case = report.by_id["chat"]
    assert case["outcome"] == "passed"
    turns = [t["metrics"] for t in case["details"]["turns"]]
    assert [(t["tool_calls"], t["queries_executed"], t["rows_read"], t["forbidden_tables"])
            for t in turns] == [(2.0, 1.0, 1.0, 0.0), (3.0, 3.0, 5.0, 1.0)]
    m = case["metrics"]
    assert (m["tool_calls"], m["turn_count"], m["queries_executed"], m["rows_read"]) == (
        5.0, 2.0, 4.0, 6.0)
    assert m["forbidden_tables"] == 1.0  # the same table in one turn: the largest, not a sum
    # a score stays the mean of the turns
    assert m["trajectory_match"] == (turns[0]["trajectory_match"]
                                     + turns[1]["trajectory_match"]) / 2
