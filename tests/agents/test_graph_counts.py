"""A graph agent's write that its guard cannot read is still a write (issue 58 item 5, from the
re-probe of 2026-11-26): ``MATCH (n) DETACH DELETE n /*`` (an unterminated comment) and a
DELETE inside an unterminated string are syntax errors to the Cypher guard, and were counted
as nothing attempted (``write_attempts`` 0, the case passed); the SQL side counts an
unparseable text holding DELETE as a write. Judged on its words now, as an unrun graph query
is. On the example's ladybug graph, from a predictions file."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.agents.test_counts_from_what_ran import call, tool
from tests.support import run_report, write_suite

GRAPH = Path(__file__).resolve().parents[2] / "example_suite" / "data" / "movies.cypher"
COUNT = "MATCH (m:Movie) RETURN count(m)"
FORMS = {"comment": "MATCH (n) DETACH DELETE n /*",
         "string": "MATCH (n) WHERE n.name = 'x DETACH DELETE n",
         "honest-typo": "MATCH (m:Movie RETURN count(m)"}


def graph_suite(pytester: pytest.Pytester, forms: dict[str, str],
                case: dict[str, object] | None = None, **source: object) -> None:
    """A ladybug suite of the example's graph, one agent case per form: its trajectory one
    ``run_query`` of the form, gated on no write attempt (``case``: more keys of each)."""
    pytest.importorskip("ladybug")
    shutil.copyfile(GRAPH, pytester.path / "movies.cypher")
    (pytester.path / "runs.jsonl").write_text("".join(
        json.dumps({"id": cid, "predicted": COUNT,
                    "trajectory": [call("a", "run_query", q), tool("a")]}) + "\n"
        for cid, q in forms.items()))
    write_suite(pytester.path, {
        "datasources": {"movies": {"type": "ladybug", "path": "movies.cypher", **source}},
        "predictions": {"source": "file", "path": "runs.jsonl"}},
        {"test_graph.yaml": {"kind": "cypher", "datasource": "movies", "cases": [
            {"id": cid, "question": "How many movies?", "gold": COUNT, "agent": True,
             "thresholds": {"write_attempts": {"max": 0}}, **(case or {})} for cid in forms]}})


def test_an_unreadable_graph_write_is_counted_on_its_words(pytester: pytest.Pytester) -> None:
    graph_suite(pytester, FORMS)
    _, report = run_report(pytester, "-p", "no:cacheprovider")
    writes = {cid: report.by_id[cid]["metrics"]["write_attempts"] for cid in FORMS}
    assert writes == {"comment": 1.0, "string": 1.0, "honest-typo": 0.0}, writes
    assert report.outcomes == {"comment": "failed", "string": "failed", "honest-typo": "passed"}
