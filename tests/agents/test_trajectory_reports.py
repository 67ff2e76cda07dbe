"""An agent case's trajectory in the reports (issue 52 item 5): step by step beside the
gold trajectory (``agent: {trajectory: ...}``) and the final query, the step where the two
part marked, in the terminal's failure text, the Markdown and HTML reports and ``queryeval
view``. The agent is the scripted stand-in (tests/fixtures/agent_standin.py) behind the real
``openai`` client, looping because the case is an agent case, on a real SQLite file."""

from __future__ import annotations

import sqlite3

import pytest

from pytest_queryeval.report.terminal import failure_text
from pytest_queryeval.report.trajectory import Step, parting, steps_of
from pytest_queryeval.report.view import build_view, load_runs, render_view
from tests.support import run_report, write_suite
from tests.view.conftest import browser  # noqa: F401  (headless Chromium, as the viewer's tests)

pytest.importorskip("openai")

GOLD = "SELECT count(*) FROM t"
QUESTION = "How many rows are there?"
GOLD_TRAJECTORY = ["get_schema", "sample_rows", "run_query"]


def _suite(pytester, standin, cases):
    write_suite(pytester.path, {
        "datasources": {"db": {"type": "sqlite", "path": "db.sqlite"}},
        "thresholds": {"execution_accuracy": 1.0},
        "predictions": {"source": "openai", "model": "scripted-agent",
                        "base_url": standin.base_url, "api_key": "none", "retries": 0}},
        {"test_q.yaml": {"kind": "sql", "datasource": "db", "cases": cases}})
    with sqlite3.connect(pytester.path / "db.sqlite") as con:
        con.execute("CREATE TABLE IF NOT EXISTS t (x INTEGER)")
        con.executemany("INSERT INTO t VALUES (?)", [(1,), (2,)])
    con.close()


def _call(name, arguments):
    return {"content": None, "tool_calls": [{"name": name, "arguments": arguments}]}


@pytest.fixture
def parted(pytester, agent_standin):
    """A failing agent case whose second step parts from the gold's, reported in four
    formats."""
    agent_standin.script = {QUESTION: [
        _call("get_schema", {}), _call("run_query", {"query": "SELECT x FROM t"}),
        {"content": "```sql\nSELECT min(x) FROM t\n```"}]}
    _suite(pytester, agent_standin, [{"id": "count", "question": QUESTION, "gold": GOLD,
                                      "agent": {"trajectory": GOLD_TRAJECTORY}}])
    result, report = run_report(pytester, "-p", "no:cacheprovider", "--queryeval-markdown=r.md",
                                "--queryeval-html=r.html")
    return pytester, result, report


def test_the_failure_text_shows_the_steps_and_where_they_part(parted):
    _, result, report = parted
    assert report.outcomes == {"count": "failed"}
    assert report.by_id["count"]["details"]["agent"]["gold_trajectory"] == GOLD_TRAJECTORY
    out = result.stdout.str()
    assert "\n".join([
        "predicted: SELECT min(x) FROM t",
        "gold:      SELECT count(*) FROM t",
        "trajectory: the trajectory parts from the gold at step 2",
        "    1 agent: get_schema({}) → CREATE TABLE t (x INTEGER);",
        "      gold:  get_schema()",
        '    2 agent: run_query({"query": "SELECT x FROM t"}) → {"columns": ["x"], '
        '"rows": [[1], [2]]}  ← parts here',
        "      gold:  sample_rows()",
        "    3 agent: —",
        "      gold:  run_query()",
    ]) in out


def test_markdown_and_html_show_the_steps_and_mark_the_parting_one(parted):
    pytester, _, _ = parted
    md = (pytester.path / "r.md").read_text()
    assert "**Trajectory:** the trajectory parts from the gold at step 2" in md
    assert "| 1 | `get_schema({}) → CREATE TABLE t (x INTEGER);` | `get_schema()` |" in md
    assert "| 3 | `—` | `run_query()` |" in md
    assert '| **2 ←** | `run_query({"query": "SELECT x FROM t"}) →' in md
    page = (pytester.path / "r.html").read_text()
    assert "the trajectory parts from the gold at step 2" in page
    assert page.count('<tr class="parts">') == 1
    assert '<tr class="parts"><td class=n>2 ←</td><td><code>run_query({&quot;query&quot;: ' \
           '&quot;SELECT x FROM t&quot;})' in page


def test_the_viewer_shows_the_steps_beside_the_gold(parted, browser, tmp_path):  # noqa: F811
    pytester, _, _ = parted
    data = build_view(load_runs([pytester.path / "r.json"]))
    parts_at, has_gold, line, rows = data["cases"][0]["cells"][0][8]
    strings = data["strings"]
    assert (parts_at, has_gold, strings[line]) == (
        1, True, "the trajectory parts from the gold at step 2")
    assert [(n, strings[a] if a >= 0 else None, strings[g]) for n, a, g in rows] == [
        (1, "get_schema({}) → CREATE TABLE t (x INTEGER);", "get_schema()"),
        (2, 'run_query({"query": "SELECT x FROM t"}) → {"columns": ["x"], "rows": [[1], [2]]}',
         "sample_rows()"),
        (3, None, "run_query()")]
    out = tmp_path / "view.html"
    out.write_text(render_view(data), encoding="utf-8")
    dom = browser(out.as_uri() + "#case=count", "--dump-dom")
    assert '<tr class="parts"><td>2 ←</td>' in dom
    assert "trajectory: the trajectory parts from the gold at step 2" in dom


def test_a_trajectory_that_follows_the_gold_parts_nowhere(pytester, agent_standin):
    agent_standin.script = {QUESTION: [
        _call("get_schema", {"table": "t"}), _call("sample_rows", {"table": "t"}),
        _call("run_query", {"query": GOLD}), {"content": f"```sql\n{GOLD}\n```"}]}
    _suite(pytester, agent_standin, [
        {"id": "count", "question": QUESTION, "gold": GOLD,
         "agent": {"trajectory": GOLD_TRAJECTORY}}])
    _, report = run_report(pytester, "-p", "no:cacheprovider")
    assert report.outcomes == {"count": "passed"}
    assert report.by_id["count"]["metrics"]["trajectory_match_ordered"] == 100.0
    text = failure_text(report.by_id["count"])
    assert "trajectory: the trajectory follows the gold step for step" in text
    assert "parts here" not in text


def test_parting_compares_arguments_only_where_the_gold_states_them():
    agent = steps_of([{"role": "assistant", "content": None, "tool_calls": [
        {"id": "a", "type": "function", "function": {"name": "run_query",
                                                     "arguments": '{"query":  "SELECT 1"}'}},
        {"id": "b", "type": "function", "function": {"name": "abstain", "arguments": "{}"}}]}])
    assert parting(agent, steps_of(["run_query", "abstain"])) is None
    assert parting(agent, steps_of([{"name": "run_query", "arguments": {"query": "SELECT 1"}},
                                    "abstain"])) is None
    assert parting(agent, steps_of([{"name": "run_query", "arguments": {"query": "SELECT 2"}}])
                   ) == 0
    assert parting(agent, steps_of(["run_query"])) == 1  # the gold ended first
    assert parting([], [Step("get_schema", None, None)]) == 0
