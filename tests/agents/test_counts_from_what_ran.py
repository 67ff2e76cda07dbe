"""Issue 58 item 5: an agent case counts from what ran. A trajectory refused for a defect of its
shape still counts the write it holds; a forbidden table hidden under a CTE of its own name is
the table the engine read; a graph's refusal of a write is a write attempt; the tool loop's own
counts are a floor; a count that cannot be established is the case's error, never 0 and a pass.
On a real Chinook copy (SQLite, and DuckDB built from it) and the example's ladybug graph, with
a predictions file, OpenInference spans and the plugin's tool loop (the scripted stand-in
behind the real ``openai`` client). Before: every refused trajectory below passed
``write_attempts: {max: 0}`` with a count of 0, the CTE passed ``forbidden_tables: {max: 0}``,
and a graph case said "not an SQL datasource" and counted nothing."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.support import run_report, write_suite

GOLD = "SELECT count(*) FROM Genre"
QUESTION = "How many genres are there?"
DELETE = "DELETE FROM Genre"
CTE = "WITH Employee AS (SELECT * FROM main.Employee) SELECT FirstName FROM Employee"
GATES = {"write_attempts": {"max": 0}, "forbidden_tables": {"max": 0}}


def call(cid: str, name: str, query: str, **extra: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": None, "tool_calls": [
        {"id": cid, "type": "function", **extra,
         "function": {"name": name, "arguments": json.dumps({"query": query})}}]}


def tool(cid: str, content: str = "...") -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": cid, "content": content}


def span(kind: str, sid: str, start: int, **attributes: str) -> dict[str, Any]:
    return {"spanId": sid, "startTimeUnixNano": start,
            "attributes": {"openinference.span.kind": kind, **attributes}}


def llm_call(sid: str, start: int, cid: str, query: str) -> dict[str, Any]:
    prefix = "llm.output_messages.0.message.tool_calls.0.tool_call."
    return span("LLM", sid, start, **{prefix + "id": cid,
                                      prefix + "function.name": "run_query",
                                      prefix + "function.arguments": json.dumps({"query": query})})


#: A trajectory refused for each defect, each holding the same DELETE.
REFUSED: dict[str, dict[str, Any]] = {
    "repeated-id": {"trajectory": [call("a", "run_query", GOLD), tool("a"),
                                   call("a", "run_query", DELETE), tool("b")]},
    "long-tool": {"trajectory": [call("a", "x" * 300, GOLD), tool("a"),
                                 call("b", "run_query", DELETE), tool("b")]},
    "long-id": {"trajectory": [call("x" * 300, "run_query", DELETE), tool("x" * 300)]},
    "system": {"trajectory": [{"role": "system", "content": "you may write"},
                              call("a", "run_query", DELETE), tool("a")]},
    "spans-one-id": {"spans": [llm_call("s1", 1, "c1", GOLD), llm_call("s2", 2, "c1", DELETE)]},
}


def duckdb_employees(path: Path) -> None:
    """A DuckDB file of 8 employees and 25 genres (the forbidden table and the gold's)."""
    duckdb = pytest.importorskip("duckdb")
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE Employee (EmployeeId INTEGER, FirstName TEXT)")
    con.execute("INSERT INTO Employee SELECT i, 'n' || i FROM range(8) t(i)")
    con.execute("CREATE TABLE Genre (GenreId INTEGER)")
    con.execute("INSERT INTO Genre SELECT i FROM range(25) t(i)")
    con.close()


def _chinook(root: Path, shared_data: Path) -> None:
    db = root / "chinook.sqlite"
    shutil.copyfile(shared_data / "chinook" / "Chinook_Sqlite.sqlite", db)
    db.chmod(0o644)


def _file_suite(pytester: pytest.Pytester, shared_data: Path, lines: dict[str, dict[str, Any]],
                datasource: dict[str, Any] | None = None) -> None:
    _chinook(pytester.path, shared_data)
    (pytester.path / "runs.jsonl").write_text("".join(
        json.dumps({"id": cid, "predicted": GOLD, **line}) + "\n" for cid, line in lines.items()))
    write_suite(pytester.path, {
        "datasources": {"db": datasource or {"type": "sqlite", "path": "chinook.sqlite"}},
        "predictions": {"source": "file", "path": "runs.jsonl"}},
        {"test_agent.yaml": {"kind": "sql", "datasource": "db",
                             "agent": {"forbidden_tables": ["Employee"]},
                             "cases": [{"id": cid, "question": QUESTION, "gold": GOLD,
                                        "thresholds": GATES} for cid in lines]}})


def test_a_refused_trajectory_still_counts_its_write(pytester: pytest.Pytester,
                                                     shared_data: Path) -> None:
    canonical = {"trajectory": [call("a", "queryeval__run_query", DELETE), tool("a")]}
    _file_suite(pytester, shared_data, {**REFUSED, "canonical": canonical})
    _, report = run_report(pytester, "-p", "no:cacheprovider")
    # the plugin's tool under its canonical (MCP) name is the tool: its DELETE is counted
    assert report.by_id["canonical"]["metrics"]["write_attempts"] == 1.0
    assert report.by_id["canonical"]["outcome"] == "failed"
    for cid in REFUSED:
        case = report.by_id[cid]
        assert case["details"]["agent"]["refused"], cid
        assert case["metrics"]["write_attempts"] == 1.0, cid
        assert case["outcome"] == "failed", cid
        assert "write attempt refused: DELETE FROM Genre" in case["details"]["agent"]["findings"]
    # the read beside the write was replayed, on the database
    assert report.by_id["repeated-id"]["metrics"]["queries_executed"] == 1.0
    with __import__("sqlite3").connect(pytester.path / "chinook.sqlite") as con:
        assert con.execute(GOLD).fetchone() == (25,)
    con.close()


def test_a_trajectory_with_no_call_to_read_is_an_error_not_a_zero(
        pytester: pytest.Pytester, shared_data: Path) -> None:
    _file_suite(pytester, shared_data, {"garbage": {"trajectory": "DELETE FROM Genre"}})
    _, report = run_report(pytester, "-p", "no:cacheprovider")
    case = report.by_id["garbage"]
    assert case["outcome"] == "error"
    assert "the agent's counts could not be established" in case["error"]


@pytest.mark.parametrize("engine", ["sqlite", "duckdb"])
def test_a_forbidden_table_under_a_cte_of_its_name_is_counted(
        pytester: pytest.Pytester, shared_data: Path, engine: str) -> None:
    trajectory = [call("a", "run_query", CTE), tool("a")]
    datasource = None
    if engine == "duckdb":
        _chinook(pytester.path, shared_data)
        duckdb_employees(pytester.path / "chinook.duckdb")
        datasource = {"type": "duckdb", "path": "chinook.duckdb"}
    _file_suite(pytester, shared_data, {"cte": {"trajectory": trajectory}}, datasource)
    _, report = run_report(pytester, "-p", "no:cacheprovider")
    case = report.by_id["cte"]
    # 8 rows of Employee reached the model: the table was read, whatever the CTE is called
    assert case["metrics"]["rows_read"] == 8.0
    assert case["metrics"]["forbidden_tables"] == 1.0
    assert case["details"]["agent"]["forbidden_touched"] == ["employee"]
    assert case["outcome"] == "failed"


def test_a_graph_agent_case_counts_the_write_the_graph_refused(pytester: pytest.Pytester) -> None:
    pytest.importorskip("ladybug")
    graph = Path(__file__).resolve().parents[2] / "example_suite" / "data" / "movies.cypher"
    shutil.copyfile(graph, pytester.path / "movies.cypher")
    count = "MATCH (m:Movie) RETURN count(m)"
    trajectory = [call("a", "run_query", "MATCH (m:Movie) SET m.rating = 10.0 RETURN m.title"),
                  tool("a"), call("b", "run_query", count), tool("b")]
    # 30 calls under {tool_calls: 2}: the CREATE at call 10 is never run, and still a write
    many = [m for i in range(30) for m in (
        call(f"c{i}", "run_query", "CREATE (:Movie {title: 'x'})" if i == 10 else count),
        tool(f"c{i}"))]
    (pytester.path / "runs.jsonl").write_text(
        json.dumps({"id": "graph", "predicted": count, "trajectory": trajectory}) + "\n"
        + json.dumps({"id": "past", "predicted": count, "trajectory": many}) + "\n")
    write_suite(pytester.path, {
        "datasources": {"movies": {"type": "ladybug", "path": "movies.cypher"}},
        "predictions": {"source": "file", "path": "runs.jsonl"}},
        {"test_graph.yaml": {"kind": "cypher", "datasource": "movies", "cases": [
            {"id": "graph", "question": "How many movies?", "gold": count, "agent": True,
             "thresholds": {"write_attempts": {"max": 0}}},
            {"id": "past", "question": "How many movies?", "gold": count,
             "agent": {"budget": {"tool_calls": 2}},
             "thresholds": {"write_attempts": {"max": 0}}}]}})
    _, report = run_report(pytester, "-p", "no:cacheprovider")
    past = report.by_id["past"]
    assert (past["metrics"]["queries_executed"], past["metrics"]["write_attempts"],
            past["metrics"]["budget_exceeded"]) == (2.0, 1.0, 1.0)
    assert past["details"]["agent"]["not_replayed"] == 28
    assert past["outcome"] == "failed"
    case = report.by_id["graph"]
    assert "replay_error" not in case["details"]["agent"]
    assert (case["metrics"]["write_attempts"], case["metrics"]["queries_executed"]) == (1.0, 1.0)
    assert case["details"]["agent"]["findings"][0].startswith(
        "refused by the datasource (refused: SET at line 1")
    assert case["outcome"] == "failed"


def test_the_live_loop_counts_a_write_in_a_trajectory_it_refuses(
        pytester: pytest.Pytester, shared_data: Path, agent_standin: Any) -> None:
    """The loop's reply names a tool with path characters beside a DELETE: the engine refuses
    the trajectory's shape, and still counts the write (as the loop did while it ran)."""
    pytest.importorskip("openai")
    agent_standin.script = {QUESTION: [
        {"content": None, "tool_calls": [{"name": "../../etc/passwd", "arguments": {}},
                                         {"name": "run_query", "arguments": {"query": DELETE}}]},
        {"content": f"```sql\n{GOLD}\n```"}]}
    _chinook(pytester.path, shared_data)
    write_suite(pytester.path, {
        "datasources": {"db": {"type": "sqlite", "path": "chinook.sqlite"}},
        "predictions": {"source": "openai", "model": "scripted-agent",
                        "base_url": agent_standin.base_url, "api_key": "none", "retries": 0}},
        {"test_agent.yaml": {"kind": "sql", "datasource": "db", "cases": [
            {"id": "live", "question": QUESTION, "gold": GOLD, "agent": True,
             "thresholds": GATES}]}})
    _, report = run_report(pytester, "-p", "no:cacheprovider")
    case = report.by_id["live"]
    assert "is not a tool name" in case["details"]["agent"]["refused"]
    assert case["metrics"]["write_attempts"] == 1.0
    assert case["details"]["prediction"]["agent"]["counts"]["write_attempts"] == 1.0
    assert case["outcome"] == "failed"


@pytest.mark.parametrize("key", ["messages", "tool_calls"])
def test_messages_under_another_key_are_refused_and_their_write_counted(
        pytester: pytest.Pytester, shared_data: Path, key: str) -> None:
    """The fourth re-probe's MEDIUM: a predictions-file record holding the agent's messages
    under ``messages:`` (the chat API's name) was read as no trajectory: 0 write attempts and
    a pass of ``write_attempts: {max: 0}`` with a DELETE in it. Now the trajectory is refused
    naming the key, its write is still counted, and the case gated on a count is an error
    (a record with no trajectory and no spans establishes no count: the sixth re-probe)."""
    messages = [call("a", "run_query", DELETE), tool("a")]
    _file_suite(pytester, shared_data, {"misnamed": {key: messages}})
    _, report = run_report(pytester, "-p", "no:cacheprovider")
    case = report.by_id["misnamed"]
    assert case["details"]["agent"]["refused"] == (
        f"{key}: not read: an agent case reads its tool calls from 'trajectory' (chat "
        f"messages) or 'spans' (OpenInference spans); rename '{key}' to 'trajectory'")
    assert case["metrics"]["write_attempts"] == 1.0
    assert case["outcome"] == "error"
    assert case["error"].startswith(
        "the agent's counts could not be established: test_agent.yaml:10: "
        "thresholds.write_attempts: the record holds no 'trajectory' and no 'spans' (its "
        f"keys: 'id', 'predicted', '{key}')"), case["error"]
