"""The trajectory a prediction carries: read from any source's envelope, bounded, normalised."""

from __future__ import annotations

import json

import pytest

from pytest_queryeval.agents.trajectory import (
    MAX_MESSAGES,
    TrajectoryError,
    canonical_name,
    read_envelope,
    read_trajectory,
)


def call(cid: str, name: str, args: object) -> dict[str, object]:
    text = args if isinstance(args, str) else json.dumps(args)
    return {"role": "assistant", "content": None,
            "tool_calls": [{"id": cid, "type": "function",
                            "function": {"name": name, "arguments": text}}]}


def result(cid: str, content: str) -> dict[str, object]:
    return {"role": "tool", "tool_call_id": cid, "content": content}


TRAJ = [call("c1", "get_schema", {}), result("c1", "CREATE TABLE t(a INT)"),
        call("c2", "run_query", {"query": "SELECT a FROM t"}), result("c2", "a\n1"),
        call("c3", "ask_user", {"question": "which year?"}), result("c3", "2009"),
        call("c4", "run_query", {"query": "SELECT 2"})]


def test_steps_carry_name_arguments_result_and_error() -> None:
    t = read_trajectory(TRAJ)
    assert [s.name for s in t.steps] == ["get_schema", "run_query", "ask_user", "run_query"]
    assert t.steps[1].arguments == {"query": "SELECT a FROM t"}
    assert t.steps[1].result == "a\n1"
    assert t.steps[3].result is None and t.steps[3].error == "no tool message answers this call"
    assert t.canonical_names()[0] == "queryeval__get_schema"
    assert t.turn_tool_calls() == [3, 1]  # the user's reply to ask_user opens a new round
    assert t.user_turns() == 1


def test_envelope_from_json_text_and_bare_prediction() -> None:
    env = read_envelope(json.dumps({"predicted": "SELECT 2", "trajectory": TRAJ,
                                    "answer": "There are 2."}))
    assert env.predicted == "SELECT 2" and env.answer == "There are 2."
    assert env.trajectory is not None and len(env.trajectory.steps) == 4
    bare = read_envelope("SELECT 1")
    assert bare.predicted == "SELECT 1" and bare.trajectory is None
    # a JSON-kind answer that is not an envelope stays the answer
    assert read_envelope({"a": 1}).predicted == {"a": 1}


@pytest.mark.parametrize(("data", "message"), [
    ("nope", "trajectory: not JSON"),
    ({"role": "assistant"}, "trajectory: must be a list of messages, not dict"),
    ([{"role": "system", "content": "x"}], "trajectory[0].role: must be one of"),
    ([call("a", "x" * 300, {})], "trajectory[0].tool_calls[0].function.name: 'xxxx"),
    ([result("zz", "x")], "trajectory[0].tool_call_id: 'zz' answers no earlier call"),
    ([call("a", "run_query", {}), call("a", "run_query", {})], "call id 'a' is used twice"),
    ([call(f"c{i}", "run_query", {}) for i in range(10_000)],
     f"trajectory: 10,000 messages, over the {MAX_MESSAGES:,}"),
])
def test_refused_with_the_field_named(data: object, message: str) -> None:
    with pytest.raises(TrajectoryError) as info:
        read_trajectory(data)
    assert message in str(info.value)


def test_deep_arguments_are_bounded() -> None:
    deep: object = 1
    for _ in range(100):
        deep = [deep]
    with pytest.raises(TrajectoryError, match="nested deeper than 32"):
        read_trajectory([{"role": "assistant", "content": None, "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "x", "arguments": deep}}]}])


def test_refused_trajectory_is_kept_as_a_reason() -> None:
    env = read_envelope({"predicted": "SELECT 1", "trajectory": [result("q", "x")]})
    assert env.trajectory is None
    assert env.refused == "trajectory[0].tool_call_id: 'q' answers no earlier call"


def test_canonical_name_only_for_plugin_tools() -> None:
    assert canonical_name("run_query") == "queryeval__run_query"
    assert canonical_name("cloud-sql__list_tables") == "cloud-sql__list_tables"
    assert canonical_name("Read") == "Read"


def test_a_refused_trajectorys_calls_are_read_leniently() -> None:
    """Issue 58 item 5: whatever made the trajectory refused (a system message, an id that
    is an object, a call that is a number, arguments nested past every bound), each call that
    names a tool and gives a query is read, so its write can be counted."""
    from pytest_queryeval.agents.trajectory import salvage_steps

    deep: dict[str, object] = {}
    node = deep
    for _ in range(5000):
        node["x"] = {}
        node = node["x"]  # type: ignore[assignment]
    deep["query"] = "DELETE FROM t"
    steps = salvage_steps([
        {"role": "system", "content": "x"},
        {"role": "assistant", "tool_calls": [
            {"id": {"a": 1}, "function": {"name": "run_query", "arguments": deep}}, 5,
            {"id": "b" * 300, "function": {"name": "../../etc/passwd", "arguments": "{}"}}]}])
    assert steps is not None
    assert [(s.name, s.arguments) for s in steps] == [
        ("run_query", {"query": "DELETE FROM t"}), ("../../etc/passwd", {})]
    assert salvage_steps("not JSON") is None and salvage_steps({"a": 1}) is None
