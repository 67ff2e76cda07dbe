"""Issue 60 item 4: trajectories read as EvalBench 1.20.0 reads them. Each form the plugin once
read differently (a falsy non-list trajectory, a trajectory given as JSON text, a falsy error,
a ``trajectory: null`` gold, a tool name outside the OpenAI rule, a native name the
reference's filter drops) scored against the reference run unmodified
(tests/data/evalbench/edge_oracle.json, PROVENANCE.md), never against our own output. The
OpenAI name rule still binds the plugin's own tool loop, and a trajectory refused for its
form still counts the write it holds."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_queryeval.agents.scoring import (
    TRAJECTORY_MATCH,
    TRAJECTORY_MATCH_ORDERED,
    score_agent,
)
from pytest_queryeval.agents.spec import read_agent
from pytest_queryeval.agents.trajectory import TrajectoryError, read_envelope, read_trajectory
from tests.agents.test_counts_from_what_ran import DELETE, GOLD, QUESTION, _chinook, call, tool
from tests.support import run_report, write_suite

_EDGES = json.loads((Path(__file__).resolve().parents[1] / "data" / "evalbench"
                     / "edge_oracle.json").read_text(encoding="utf-8"))["items"]


@pytest.fixture(scope="module")
def edges(shared_data: Path) -> list[dict[str, Any]]:
    data = json.loads((shared_data / "evalbench" / "edge_oracle.json").read_text("utf-8"))
    items: list[dict[str, Any]] = data["items"]
    return items


@pytest.mark.parametrize("index", range(len(_EDGES)), ids=[e["form"] for e in _EDGES])
def test_each_form_scores_as_the_reference(edges: list[dict[str, Any]], index: int) -> None:
    item = edges[index]
    env = read_envelope({"predicted": "SELECT 1", "trajectory": item["generated"],
                         "error": item["error"]})
    for flt, (jaccard, ordered) in ((True, (0, 2)), (False, (1, 3))):
        spec, problems = read_agent({"trajectory": item["gold"], "filter_native_tools": flt})
        assert problems == [] and spec is not None
        metrics, _ = score_agent(spec, env)
        assert metrics[TRAJECTORY_MATCH] == item["scores"][jaccard][0], (item["form"], flt)
        assert metrics[TRAJECTORY_MATCH_ORDERED] == item["scores"][ordered][0], (item["form"], flt)


def test_the_oracle_holds_the_reference_rules(edges: list[dict[str, Any]]) -> None:
    by_form = {e["form"]: [s[0] for s in e["scores"]] for e in edges}
    assert by_form["falsy generated False, empty gold"] == [100.0] * 4
    assert by_form["generated text '[]', empty gold"] == [0.0] * 4
    assert by_form["error 0 with a matching trajectory"] == [100.0] * 4
    assert by_form["gold null, empty trajectory"] == [100.0] * 4
    assert by_form["native name dropped by the filter (reference 50)"][0] == 50.0


def test_falsy_error_values_are_no_error() -> None:
    for value in (0, False, [], {}, ""):
        assert read_envelope({"predicted": "SELECT 1", "error": value}).error is None, value
    assert read_envelope({"predicted": "SELECT 1", "error": "boom"}).error == "boom"


def test_a_null_gold_is_the_empty_gold_and_names_are_any_text() -> None:
    spec, _ = read_agent({"trajectory": None})
    assert spec is not None and spec.trajectory == ()
    spec, _ = read_agent({"trajectory": ["naïve_tool", "数据库__查询"]})
    assert spec is not None and spec.trajectory == ("naïve_tool", "数据库__查询")
    assert read_agent({})[0].trajectory is None  # type: ignore[union-attr]  # no key: no gold
    _, problems = read_agent({"trajectory": "run_query"})
    assert problems == [("agent.trajectory", "must be a list of tool names")]


def test_the_openai_name_rule_binds_the_live_loop_only() -> None:
    messages = [call("a", "naïve_tool", "x"), tool("a")]
    assert read_trajectory(messages).tool_names == ["naïve_tool"]
    with pytest.raises(TrajectoryError, match="is not a tool name"):
        read_trajectory(messages, strict_names=True)
    # the loop's refusal reaches the engine through the prediction's details
    from pytest_queryeval.agents.case import envelope_of

    env = envelope_of({"predicted": "SELECT 1", "trajectory": messages},
                      {"agent": {"refused": "trajectory[0]...: 'naïve_tool' is not a tool name"}})
    assert env.trajectory is None and env.refused and env.raw == messages
    with pytest.raises(TrajectoryError, match="at most 256"):
        read_trajectory([call("a", "x" * 257, "x"), tool("a")])


def test_a_file_reads_each_form_and_still_counts_what_ran(pytester: pytest.Pytester,
                                                          shared_data: Path) -> None:
    """End to end through a predictions file: the scores are the reference's, and the DELETE
    in a trajectory given as JSON text (refused: the reference scores a text 0) is counted."""
    _chinook(pytester.path, shared_data)
    rq = ["queryeval__run_query"]
    lines: dict[str, tuple[dict[str, Any], object]] = {  # id: (envelope keys, gold)
        "falsy": ({"trajectory": False}, []),
        "text": ({"trajectory": json.dumps([call("a", "run_query", DELETE), tool("a")])}, rq),
        "gold-null": ({"trajectory": []}, None),
        "naive": ({"trajectory": [call("a", "run_query", GOLD), tool("a"),
                                  call("b", "naïve_tool", "x"), tool("b")]},
                  ["queryeval__run_query", "cloud-sql__list_tables"]),
        "error-0": ({"trajectory": [call("a", "run_query", GOLD), tool("a")], "error": 0}, rq),
    }
    (pytester.path / "runs.jsonl").write_text("".join(
        json.dumps({"id": cid, "predicted": GOLD, **env}) + "\n"
        for cid, (env, _) in lines.items()), encoding="utf-8")
    write_suite(pytester.path, {
        "datasources": {"db": {"type": "sqlite", "path": "chinook.sqlite"}},
        "predictions": {"source": "file", "path": "runs.jsonl"}},
        {"test_agent.yaml": {"kind": "sql", "datasource": "db", "cases": [
            {"id": cid, "question": QUESTION, "gold": GOLD, "agent": {"trajectory": gold}}
            for cid, (_, gold) in lines.items()]}})
    _, report = run_report(pytester, "-p", "no:cacheprovider")
    score = {cid: report.by_id[cid]["metrics"].get(TRAJECTORY_MATCH) for cid in lines}
    assert score == {"falsy": 100.0, "text": 0.0, "gold-null": 100.0, "naive": 50.0,
                     "error-0": 100.0}
    text = report.by_id["text"]
    assert "not text" in text["details"]["agent"]["refused"]
    assert text["metrics"]["write_attempts"] == 1.0
    assert report.by_id["error-0"]["outcome"] == "passed"
    assert "refused" not in report.by_id["naive"]["details"]["agent"]
