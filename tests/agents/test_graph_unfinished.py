"""A graph agent's write in a query that never finished is still a write (issue 58, the ninth
re-probe's H1 and the brief's MEDIUM): ``MATCH (n:Person) DETACH DELETE n RETURN <a 1,000-deep
list>`` crashes the ladybug engine (SIGSEGV) and ``... RETURN 1 + 1 + ... (20,000 terms)``
parses past the deadline (the worker is killed), both before the read-only engine refuses the
DELETE: the ledger counted a graph write only on the engine's refusal, so both passed
``write_attempts: {max: 0}`` with 0, and a query that ran until its deadline counted no query
executed. On the example's ladybug graph, from a predictions file; the honest case after them
passes as before (the worker is replaced)."""

from __future__ import annotations

import shutil

import pytest

from tests.agents.test_graph_counts import COUNT, GRAPH, graph_suite
from tests.support import run_report, write_suite

DELETE = "MATCH (n:Person) DETACH DELETE n"
FORMS = {"crash-delete": DELETE + " RETURN " + "[" * 1000 + "1" + "]" * 1000,
         "crash-create": "CREATE (:Person {name: " + "[" * 1000 + "'x'" + "]" * 1000 + "})",
         "deadline-delete": DELETE + " RETURN " + " + ".join(["1"] * 20000),
         "deadline-read": "MATCH (m:Movie) RETURN " + " + ".join(["1"] * 20000),
         "honest-after": COUNT}


def test_a_write_in_a_query_that_never_finished_is_counted(pytester: pytest.Pytester) -> None:
    # the 20,000 terms are 80 KB, over the default max_query_bytes an agent's text is held to
    graph_suite(pytester, FORMS, {"max_query_bytes": 200_000}, timeout=1)
    _, report = run_report(pytester, "-p", "no:cacheprovider")
    metrics = {cid: report.by_id[cid]["metrics"] for cid in FORMS}
    writes = {cid: m["write_attempts"] for cid, m in metrics.items()}
    assert writes == {"crash-delete": 1.0, "crash-create": 1.0, "deadline-delete": 1.0,
                      "deadline-read": 0.0, "honest-after": 0.0}, writes
    assert report.outcomes == {"crash-delete": "failed", "crash-create": "failed",
                               "deadline-delete": "failed", "deadline-read": "passed",
                               "honest-after": "passed"}
    # asked to run, it ran until its deadline: one query executed, listed as timed out
    assert metrics["deadline-read"]["queries_executed"] == 1.0
    findings = report.by_id["deadline-read"]["details"]["agent"]["findings"]
    assert any(f.startswith("timed out: MATCH (m:Movie) RETURN 1 + 1") for f in findings), findings
    crash = report.by_id["crash-delete"]["details"]["agent"]["findings"]
    # a crash, or on a loaded machine the deadline first: either way the DETACH is named
    assert any("(DETACH at line 1, column 18; the query" in f for f in crash), crash
    assert metrics["honest-after"]["queries_executed"] == 1.0


def test_the_tool_loop_counts_the_write_of_a_query_that_crashed_the_engine(
        pytester: pytest.Pytester, agent_standin: object) -> None:
    """The same through the plugin's own tool loop (the ``openai`` source, the scripted
    stand-in behind the real client): the loop's run_query of a DETACH DELETE holding a
    1,000-deep list crashes ladybug, and the loop's count and the engine's agree: 1."""
    pytest.importorskip("ladybug")
    pytest.importorskip("openai")
    shutil.copyfile(GRAPH, pytester.path / "movies.cypher")
    question = "How many movies are there?"
    agent_standin.script = {question: [  # type: ignore[attr-defined]
        {"content": None, "tool_calls": [{"name": "run_query",
                                          "arguments": {"query": FORMS["crash-delete"]}}]},
        {"content": f"```cypher\n{COUNT}\n```"}]}
    write_suite(pytester.path, {
        "datasources": {"movies": {"type": "ladybug", "path": "movies.cypher", "timeout": 1}},
        "predictions": {"source": "openai", "model": "scripted-agent", "api_key": "none",
                        "base_url": agent_standin.base_url,  # type: ignore[attr-defined]
                        "retries": 0, "timeout": 30, "agent": {}}},
        {"test_graph.yaml": {"kind": "cypher", "datasource": "movies", "cases": [
            {"id": "loop", "question": question, "gold": COUNT, "agent": True,
             "thresholds": {"write_attempts": {"max": 0}}}]}})
    _, report = run_report(pytester, "-p", "no:cacheprovider")
    case = report.by_id["loop"]
    assert case["details"]["prediction"]["agent"]["counts"]["write_attempts"] == 1.0
    assert (case["outcome"], case["metrics"]["write_attempts"]) == ("failed", 1.0)
