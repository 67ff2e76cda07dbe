"""The ``openai`` source offers ``abstain`` and ``ask_user`` tools (issue 42 item 3's leftover,
item 4), so a model can decline or ask back by a tool call: against the loopback stand-in
model server (tests/fixtures/openai_standin.py, a stand-in for the user's model that answers
with tool calls as OpenAI does: content null, ``tool_calls`` set) behind the real ``openai``
client, and against a real local model (tests/fixtures/llm_server.py) to show a real server
accepts the request."""

from __future__ import annotations

import json
import shutil
import sqlite3

import pytest

from tests.conftest import ROOT
from tests.fixtures.openai_standin import KEY, MODEL
from tests.support import run_report, write_suite

pytest.importorskip("openai")

GOLD = "SELECT count(*) FROM t"
ASK = [{"id": "call_1", "type": "function", "function": {
    "name": "ask_user", "arguments": json.dumps({"question": "By total amount or by count?"})}}]
DECLINE = [{"id": "call_2", "type": "function", "function": {
    "name": "abstain", "arguments": json.dumps({"reason": "no salary column"})}}]
CASES = [
    {"id": "count", "question": "How many rows?", "gold": GOLD},
    {"id": "biggest", "question": "Which invoices are biggest?", "expect": "clarify",
     "clarification": {"asks_about": ["total amount", "count"]}},
    {"id": "salaries", "question": "What are the salaries?", "expect": "abstain"},
]


def _suite(pytester, standin, cases=CASES, **extra):
    write_suite(pytester.path, {
        "datasources": {"db": {"type": "sqlite", "path": "db.sqlite"}},
        "thresholds": {"execution_accuracy": 1.0},
        "predictions": {"source": "openai", "model": MODEL, "base_url": standin.base_url,
                        "api_key": "${QE_KEY}", "retries": 0, "timeout": 30, **extra}},
        {"test_q.yaml": {"kind": "sql", "datasource": "db", "cases": cases}})
    with sqlite3.connect(pytester.path / "db.sqlite") as con:
        con.execute("CREATE TABLE IF NOT EXISTS t (x INTEGER)")
    con.close()


def test_a_model_abstains_and_asks_back_by_tool_calls(pytester, openai_standin, monkeypatch):
    monkeypatch.setenv("QE_KEY", KEY)
    openai_standin.answers = {"How many rows?": f"```sql\n{GOLD}\n```"}
    openai_standin.tool_calls = {"biggest": ASK, "salaries": DECLINE}
    _suite(pytester, openai_standin)
    _, report = run_report(pytester, "-p", "no:cacheprovider")
    assert report.outcomes == {"count": "passed", "biggest": "passed", "salaries": "passed"}
    for request in openai_standin.requests:  # offered to every case alike
        assert [t["function"]["name"] for t in request["tools"]] == ["abstain", "ask_user"]
    biggest = report.by_id["biggest"]
    metrics = biggest["metrics"]
    assert (metrics["clarified"], metrics["asks_about"]) == (1.0, 1.0)
    assert metrics["prompt_tokens"] > 0 and metrics["prediction_seconds"] > 0  # kept, as scored
    assert biggest["details"]["clarification"]["how"] == "ask_user tool call"
    assert biggest["details"]["clarification"]["question"] == "By total amount or by count?"
    assert biggest["details"]["prediction"]["tool_calls"] == ["ask_user"]
    salaries = report.by_id["salaries"]
    assert salaries["details"]["abstention"] == {"expected": True, "abstained": True,
                                                 "how": "abstain tool call"}


def test_no_tools_without_abstain_or_clarify_cases_or_with_tools_false(pytester, openai_standin,
                                                                        monkeypatch):
    monkeypatch.setenv("QE_KEY", KEY)
    openai_standin.answers = {"How many rows?": f"```sql\n{GOLD}\n```"}
    _suite(pytester, openai_standin, CASES[:1])
    _, report = run_report(pytester, "-p", "no:cacheprovider")
    assert report.outcomes == {"count": "passed"}
    assert "tools" not in openai_standin.requests[-1]
    _suite(pytester, openai_standin, CASES, tools=False)
    run_report(pytester, "-p", "no:cacheprovider")
    assert not any("tools" in r for r in openai_standin.requests)
    _suite(pytester, openai_standin, CASES[:1], tools=True)
    run_report(pytester, "-p", "no:cacheprovider")
    assert "tools" in openai_standin.requests[-1]


def test_a_wrong_tools_value_is_an_error(pytester, openai_standin, monkeypatch):
    monkeypatch.setenv("QE_KEY", KEY)
    _suite(pytester, openai_standin, CASES[:1], tools="sometimes")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(["*predictions.tools: must be auto, true or false, not "
                                 "'sometimes'*"])


@pytest.mark.slow
def test_a_real_server_accepts_the_offered_tools(pytester, llm_server, monkeypatch):
    """The real model may answer, abstain or ask back: each is judged, none is an error (a
    server refusing the ``tools`` field would make every case one)."""
    from tests.fixtures.llm_server import KEY as REAL_KEY
    from tests.fixtures.llm_server import MODEL as REAL_MODEL

    shutil.copyfile(ROOT / "example_suite" / "data" / "chinook.sqlite",
                    pytester.path / "chinook.sqlite")
    write_suite(pytester.path, {
        "datasources": {"chinook": {"type": "sqlite", "path": "chinook.sqlite"}},
        "predictions": {"source": "openai", "model": REAL_MODEL, "base_url": llm_server.base_url,
                        "api_key": "${QE_REAL_KEY}", "temperature": 0, "seed": 1,
                        "max_tokens": 48, "concurrency": 1, "retries": 0, "timeout": 300}},
        {"test_q.yaml": {"kind": "sql", "datasource": "chinook", "cases": [
            {"id": "salaries", "question": "What is each employee's salary?",
             "expect": "abstain"}]}})
    monkeypatch.setenv("QE_REAL_KEY", REAL_KEY)
    _, report = run_report(pytester)
    case = report.by_id["salaries"]
    assert case["outcome"] in ("passed", "failed"), case.get("error")
    assert case["details"]["prediction"]["attempts"] == 1
