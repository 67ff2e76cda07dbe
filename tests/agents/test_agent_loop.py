"""The ``openai`` source's tool loop for agent cases (issue 52 item 2): tools served by the
plugin on the case's sandboxed, read-only datasource, a budget per case that stops the loop
and is recorded, ``ask_user``/``abstain`` judged by the clarification and abstention
machinery. Against the scripted stand-in (tests/fixtures/agent_standin.py: a loopback
OpenAI-compatible server replaying a script, behind the real ``openai`` client) for exact
trajectories, and against the real local model (tests/fixtures/llm_server.py)."""

from __future__ import annotations

import json
import shutil
import sqlite3

import pytest

from tests.conftest import ROOT
from tests.support import run_report, write_suite

pytest.importorskip("openai")

GOLD = "SELECT count(*) FROM t"
QUESTION = "How many rows are there?"


def _step(*calls, content=None):
    return {"content": content, "tool_calls": [{"name": n, "arguments": a} for n, a in calls]}


def _suite(pytester, standin, cases, agent=None, **extra):
    write_suite(pytester.path, {
        "datasources": {"db": {"type": "sqlite", "path": "db.sqlite"}},
        "thresholds": {"execution_accuracy": 1.0},
        "predictions": {"source": "openai", "model": "scripted-agent",
                        "base_url": standin.base_url, "api_key": "none", "retries": 0,
                        "timeout": 30, "agent": agent or {}, **extra}},
        {"test_q.yaml": {"kind": "sql", "datasource": "db", "cases": cases}})
    path = pytester.path / "db.sqlite"
    if not path.exists():
        with sqlite3.connect(path) as con:
            con.execute("CREATE TABLE t (x INTEGER, name TEXT)")
            con.executemany("INSERT INTO t VALUES (?, ?)", [(1, "a"), (2, "b"), (3, "c")])
        con.close()


def _agent(report, case_id):
    return report.by_id[case_id]["details"]["prediction"]["agent"]


def test_an_agent_explores_then_answers(pytester, agent_standin):
    agent_standin.script = {QUESTION: [
        _step(("get_schema", {})),
        _step(("run_query", {"query": "SELECT count(*) FROM t"})),
        {"content": f"There are 3 rows.\n```sql\n{GOLD}\n```"},
    ]}
    _suite(pytester, agent_standin, [{"id": "count", "question": QUESTION, "gold": GOLD}])
    _, report = run_report(pytester, "-p", "no:cacheprovider")
    assert report.outcomes == {"count": "passed"}
    agent = _agent(report, "count")
    trajectory = agent["trajectory"]
    assert [m["role"] for m in trajectory] == ["assistant", "tool", "assistant", "tool",
                                               "assistant"]
    assert trajectory[0]["tool_calls"] == [{"id": "call_0_0", "type": "function", "function": {
        "name": "get_schema", "arguments": "{}"}}]
    assert trajectory[1]["tool_call_id"] == "call_0_0"
    assert "CREATE TABLE t (x INTEGER, name TEXT)" in trajectory[1]["content"]
    assert json.loads(trajectory[3]["content"]) == {"columns": ["count(*)"], "rows": [[3]]}
    assert trajectory[4]["content"].startswith("There are 3 rows.")
    assert agent["answer"] == "There are 3 rows."  # the prose: the fenced query left out
    assert report.by_id["count"]["predicted"] == GOLD
    used = agent["budget"]["used"]
    assert (used["tool_calls"], used["rows"], used["requests"]) == (2, 1, 3)
    assert agent["budget"]["exceeded"] is None
    assert agent["budget"]["limits"] == {"tool_calls": 20, "rows": 1000, "seconds": 300}
    assert agent["queries"] == [{"tool": "run_query", "query": "SELECT count(*) FROM t",
                                 "rows": 1}]
    # the tools offered, and each step sent with the trajectory so far
    requests = agent_standin.requests
    assert [t["function"]["name"] for t in requests[0]["tools"]] == [
        "get_schema", "sample_rows", "run_query", "ask_user", "abstain"]
    assert [m["role"] for m in requests[2]["messages"]][-4:] == ["assistant", "tool",
                                                                 "assistant", "tool"]
    metrics = report.by_id["count"]["metrics"]
    assert metrics["prompt_tokens"] == sum(
        sum(len(str(m.get("content") or "")) for m in r["messages"]) // 4 for r in requests)


def test_a_write_is_refused_by_the_sandbox_and_recorded(pytester, agent_standin):
    agent_standin.script = {QUESTION: [
        _step(("run_query", {"query": "DELETE FROM t"})),
        _step(("sample_rows", {"table": "T", "limit": 2})),
        {"content": f"```sql\n{GOLD}\n```"},
    ]}
    _suite(pytester, agent_standin, [{"id": "count", "question": QUESTION, "gold": GOLD}])
    _, report = run_report(pytester, "-p", "no:cacheprovider")
    agent = _agent(report, "count")
    refused, sampled = agent["queries"]
    assert refused["refused"] is True and refused["rows"] is None
    assert refused["query"] == "DELETE FROM t"
    assert agent["trajectory"][1]["content"].startswith("error: write refused")
    # counted where the query ran (agents/ledger.py), a finding, never silent
    assert agent["counts"] == {"queries_executed": 1.0, "rows_read": 2.0, "write_attempts": 1.0,
                               "forbidden_tables": 0.0, "repeated_calls": 0.0,
                               "budget_exceeded": 0.0}
    assert agent["findings"] == ["write attempt refused: DELETE FROM t"]
    assert sampled == {"tool": "sample_rows", "query": 'SELECT * FROM "t" LIMIT 2', "rows": 2}
    assert json.loads(agent["trajectory"][3]["content"])["rows"] == [[1, "a"], [2, "b"]]
    with sqlite3.connect(pytester.path / "db.sqlite") as con:
        assert con.execute("SELECT count(*) FROM t").fetchone() == (3,)  # nothing deleted
    con.close()


def test_the_budget_stops_a_loop_and_says_which_limit(pytester, agent_standin):
    loop = [_step(("run_query", {"query": "SELECT x FROM t"}))] * 50
    agent_standin.script = {QUESTION: loop, "Rows?": loop, "Tokens?": loop}
    _suite(pytester, agent_standin, [
        {"id": "calls", "question": QUESTION, "gold": GOLD}], {"budget": {"tool_calls": 4}})
    _, report = run_report(pytester, "-p", "no:cacheprovider")
    case = report.by_id["calls"]
    assert case["outcome"] == "failed"
    # said for what it is, not as a refused empty statement (issue 60 item 6)
    assert case["reason"] == "the agent's budget ran out before a final answer (tool_calls: 4)"
    assert case["predicted"] == ""
    budget = _agent(report, "calls")["budget"]
    assert budget["exceeded"] == "tool_calls"
    counts = _agent(report, "calls")["counts"]
    assert (counts["repeated_calls"], counts["budget_exceeded"], counts["queries_executed"]) \
        == (3.0, 1.0, 4.0)
    assert (budget["used"]["tool_calls"], budget["used"]["rows"],
            budget["used"]["requests"]) == (4, 12, 5)
    # rows: the third query would pass 7 rows; it gets one, then the loop stops
    agent_standin.requests.clear()
    _suite(pytester, agent_standin, [{"id": "rows", "question": "Rows?", "gold": GOLD}],
           {"budget": {"rows": 7}})
    _, report = run_report(pytester, "-p", "no:cacheprovider")
    budget = _agent(report, "rows")["budget"]
    assert (budget["exceeded"], budget["used"]["rows"], budget["used"]["tool_calls"]) == \
        ("rows", 7, 3)
    assert json.loads(_agent(report, "rows")["trajectory"][-1]["content"]) == {
        "columns": ["x"], "rows": [[1]], "truncated": True}
    # tokens: the first reply goes over; its call is not served
    _suite(pytester, agent_standin, [{"id": "tokens", "question": "Tokens?", "gold": GOLD}],
           {"budget": {"tokens": 5}})
    _, report = run_report(pytester, "-p", "no:cacheprovider")
    agent = _agent(report, "tokens")
    assert agent["budget"]["exceeded"] == "tokens"
    assert [m["role"] for m in agent["trajectory"]] == ["assistant"]
    # seconds: none left, no request is made
    agent_standin.requests.clear()
    _suite(pytester, agent_standin, [{"id": "calls", "question": QUESTION, "gold": GOLD}],
           {"budget": {"seconds": 0}})
    _, report = run_report(pytester, "-p", "no:cacheprovider")
    assert _agent(report, "calls")["budget"]["exceeded"] == "seconds"
    assert agent_standin.requests == []


def test_ask_user_and_abstain_end_the_loop_and_are_judged(pytester, agent_standin):
    agent_standin.script = {
        "Which invoices are biggest?": [
            _step(("get_schema", {"table": "t"})),
            _step(("ask_user", {"question": "By total amount or by count?"}))],
        "What are the salaries?": [
            _step(("get_schema", {})), _step(("abstain", {"reason": "no salary column"}))],
    }
    _suite(pytester, agent_standin, [
        {"id": "biggest", "question": "Which invoices are biggest?", "expect": "clarify",
         "clarification": {"asks_about": ["total amount", "count"]}},
        {"id": "salaries", "question": "What are the salaries?", "expect": "abstain"}])
    _, report = run_report(pytester, "-p", "no:cacheprovider")
    assert report.outcomes == {"biggest": "passed", "salaries": "passed"}
    biggest = report.by_id["biggest"]
    assert biggest["details"]["clarification"]["question"] == "By total amount or by count?"
    assert biggest["details"]["clarification"]["how"] == "ask_user tool call"
    assert [m["role"] for m in _agent(report, "biggest")["trajectory"]] == [
        "assistant", "tool", "assistant"]
    assert report.by_id["salaries"]["details"]["abstention"]["how"] == "abstain tool call"


def test_a_wrong_agent_key_is_named(pytester, agent_standin):
    _suite(pytester, agent_standin, [{"id": "count", "question": QUESTION, "gold": GOLD}],
           {"tools": ["run_query", "../../etc/passwd"]})
    _, report = run_report(pytester, "-p", "no:cacheprovider")
    assert "predictions.agent.tools: unknown tool(s) ../../etc/passwd" in \
        report.by_id["count"]["error"]
    _suite(pytester, agent_standin, [{"id": "count", "question": QUESTION, "gold": GOLD}],
           {"budget": {"tool_calls": -1}})
    _, report = run_report(pytester, "-p", "no:cacheprovider")
    assert "predictions.agent.budget.tool_calls: must be a number >= 0, not -1" in \
        report.by_id["count"]["error"]


def test_a_run_without_agent_sends_no_agent_tools(pytester, agent_standin):
    """Opt-in: without ``agent:``, one request per case and no tools (as before)."""
    agent_standin.script = {QUESTION: [{"content": f"```sql\n{GOLD}\n```"}]}
    write_suite(pytester.path, {
        "datasources": {"db": {"type": "sqlite", "path": "db.sqlite"}},
        "predictions": {"source": "openai", "model": "scripted-agent",
                        "base_url": agent_standin.base_url, "api_key": "none", "retries": 0}},
        {"test_q.yaml": {"kind": "sql", "datasource": "db", "cases": [
            {"id": "count", "question": QUESTION, "gold": GOLD}]}})
    with sqlite3.connect(pytester.path / "db.sqlite") as con:
        con.execute("CREATE TABLE t (x INTEGER)")
    con.close()
    _, report = run_report(pytester, "-p", "no:cacheprovider")
    assert report.outcomes == {"count": "passed"}
    assert len(agent_standin.requests) == 1 and "tools" not in agent_standin.requests[0]
    assert "agent" not in report.by_id["count"]["details"]["prediction"]


def _real_suite(pytester, monkeypatch, base_url, cases):
    """Chinook and the real local model at ``base_url`` in the tool loop (two tool calls, a
    small token budget), with ``cases``."""
    from tests.fixtures.llm_server import KEY as REAL_KEY
    from tests.fixtures.llm_server import MODEL as REAL_MODEL

    shutil.copyfile(ROOT / "example_suite" / "data" / "chinook.sqlite",
                    pytester.path / "chinook.sqlite")
    write_suite(pytester.path, {
        "datasources": {"chinook": {"type": "sqlite", "path": "chinook.sqlite"}},
        "predictions": {"source": "openai", "model": REAL_MODEL, "base_url": base_url,
                        "api_key": "${QE_REAL_KEY}", "temperature": 0, "seed": 1,
                        "max_tokens": 64, "concurrency": 1, "retries": 0, "timeout": 300,
                        "agent": {"tools": ["get_schema", "run_query", "abstain"],
                                  "budget": {"tool_calls": 2, "tokens": 20000}}}},
        {"test_q.yaml": {"kind": "sql", "datasource": "chinook", "cases": cases}})
    monkeypatch.setenv("QE_REAL_KEY", REAL_KEY)


@pytest.mark.slow
def test_the_tool_loop_runs_against_a_real_model(pytester, llm_server, monkeypatch):
    """The real small model may call tools or not: whatever it does, the loop runs to an end
    the budget bounds, and the trajectory and budget are recorded (a server refusing the
    ``tools`` field, or a reply the loop cannot read, would make the case an error)."""
    _real_suite(pytester, monkeypatch, llm_server.base_url, [
        {"id": "artists", "question": "How many artists are there?",
         "gold": "SELECT count(*) FROM Artist"},
        {"id": "artists-agent", "question": "How many artists are there?",
         "gold": "SELECT count(*) FROM Artist",
         "agent": {"trajectory": ["get_schema", "run_query"]}}])
    _, report = run_report(pytester)
    case = report.by_id["artists"]
    assert case["outcome"] in ("passed", "failed"), case.get("error")
    agent = case["details"]["prediction"]["agent"]
    assert agent["trajectory"] and agent["trajectory"][0]["role"] == "assistant"
    assert 1 <= agent["budget"]["used"]["requests"] <= 3
    assert agent["budget"]["used"]["tool_calls"] <= 2
    assert agent["budget"]["used"]["tokens"] > 0
    # an agent case: the loop's envelope read by the engine, whatever the model did
    scored = report.by_id["artists-agent"]
    assert scored["outcome"] in ("passed", "failed"), scored.get("error")
    assert 0.0 <= scored["metrics"]["trajectory_match"] <= 100.0
    assert scored["metrics"]["tool_calls"] <= 2.0
    assert scored["details"]["prediction"]["agent"]["budget"]["used"]["requests"] >= 1


def test_an_agent_case_loops_and_is_scored_by_the_agent_metrics(pytester, agent_standin):
    """``agent:`` on the case makes it loop without ``predictions.agent`` (every tool, the
    default budget under the case's own limits); the engine reads the loop's envelope: the
    final query scored by the kind, the trajectory by the agent metrics, the queries counted
    again by the engine's ledger."""
    agent_standin.script = {QUESTION: [
        _step(("get_schema", {})),
        _step(("run_query", {"query": "DELETE FROM t"})),
        _step(("run_query", {"query": "SELECT count(*) FROM t"})),
        {"content": f"There are 3 rows.\n```sql\n{GOLD}\n```"},
    ], "Loop?": [_step(("get_schema", {}))] * 10}
    write_suite(pytester.path, {
        "datasources": {"db": {"type": "sqlite", "path": "db.sqlite"}},
        "thresholds": {"execution_accuracy": 1.0},
        "predictions": {"source": "openai", "model": "scripted-agent",
                        "base_url": agent_standin.base_url, "api_key": "none", "retries": 0}},
        {"test_q.yaml": {"kind": "sql", "datasource": "db", "cases": [
            {"id": "count", "question": QUESTION, "gold": GOLD,
             "agent": {"trajectory": ["get_schema", "run_query"], "budget": {"tool_calls": 5}}},
            {"id": "loop", "question": "Loop?", "gold": GOLD,
             "agent": {"budget": {"tool_calls": 2}}}]}})
    with sqlite3.connect(pytester.path / "db.sqlite") as con:
        con.execute("CREATE TABLE t (x INTEGER)")
        con.executemany("INSERT INTO t VALUES (?)", [(1,), (2,), (3,)])
    con.close()
    _, report = run_report(pytester, "-p", "no:cacheprovider")
    assert report.outcomes == {"count": "passed", "loop": "failed"}
    count = report.by_id["count"]
    assert count["predicted"] == GOLD
    metrics = count["metrics"]
    assert (metrics["tool_calls"], metrics["write_attempts"], metrics["queries_executed"],
            metrics["answer_grounded"]) == (3.0, 1.0, 1.0, 1.0)
    assert metrics["trajectory_match"] == 100.0  # Jaccard of the name sets
    assert metrics["trajectory_match_ordered"] < 100.0  # one run_query more than the gold
    assert count["details"]["agent"]["answer"].startswith("There are 3 rows.")
    assert [m["role"] for m in count["details"]["agent"]["trajectory"]] == [
        "assistant", "tool", "assistant", "tool", "assistant", "tool", "assistant"]
    loop_record = count["details"]["prediction"]["agent"]
    assert "trajectory" not in loop_record  # recorded once, by the engine
    assert loop_record["budget"]["limits"]["tool_calls"] == 5
    assert [t["function"]["name"] for t in agent_standin.requests[0]["tools"]] == [
        "get_schema", "sample_rows", "run_query", "ask_user", "abstain"]
    loop = report.by_id["loop"]
    assert loop["metrics"]["budget_exceeded"] == 1.0
    assert loop["details"]["agent"]["budget_exceeded"] == "tool_calls"
    assert "budget ran out before a final answer (tool_calls: 2)" in loop["reason"]


class _FirstToolForced:
    """A loopback proxy in front of the real server that sets ``tool_choice`` on each case's
    first request (before any tool result), so the 135M model, which calls no tool of its
    own accord, calls ``run_query``; everything else passes through untouched, so the server
    sees the loop's later requests exactly as the plugin sends them."""

    def __init__(self, upstream: str) -> None:
        import http.server
        import threading
        import urllib.error
        import urllib.request

        from tests.fixtures.quiet_http import QuietHTTPServer

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, format, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if not any(m.get("role") == "tool" for m in body.get("messages", [])):
                    body["tool_choice"] = {"type": "function",
                                           "function": {"name": "run_query"}}
                req = urllib.request.Request(
                    upstream + self.path.removeprefix("/v1"), data=json.dumps(body).encode(),
                    headers={"Content-Type": "application/json",
                             "Authorization": self.headers.get("Authorization", "")})
                try:
                    with urllib.request.urlopen(req, timeout=600) as resp:
                        status, payload = resp.status, resp.read()
                except urllib.error.HTTPError as exc:
                    status, payload = exc.code, exc.read()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.server = QuietHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.server.server_port}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.mark.slow
def test_a_tool_call_reply_is_sent_back_as_llama_cpp_accepts_it(pytester, llm_server,
                                                                 monkeypatch):
    """After a tool call the loop sends the model's assistant message back, with its content
    empty: llama-cpp-python's server refuses ``content: null`` there (OpenAI accepts both),
    which made every agent case whose model called a tool an error on that server. The real
    model, its first step forced to call run_query; fails before the fix with the server's
    400 in the case's error."""
    proxy = _FirstToolForced(llm_server.base_url)
    try:
        _real_suite(pytester, monkeypatch, proxy.base_url, [
            {"id": "artists", "question": "How many artists are there?",
             "gold": "SELECT count(*) FROM Artist"}])
        _, report = run_report(pytester, "-p", "no:cacheprovider")
    finally:
        proxy.close()
    case = report.by_id["artists"]
    assert case["outcome"] in ("passed", "failed"), case.get("error")
    agent = case["details"]["prediction"]["agent"]
    assert agent["budget"]["used"]["requests"] >= 2  # the reply after the tool result
    assert agent["trajectory"][0]["tool_calls"][0]["function"]["name"] == "run_query"
    assert agent["trajectory"][0]["content"] is None  # recorded as the model gave it
