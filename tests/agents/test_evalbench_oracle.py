"""EvalBench 1.20.0's TrajectoryMatcher, AgentSteps and TurnCount, against the reference run
unmodified (tests/data/evalbench/PROVENANCE.md): every score equal to the float."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_queryeval.agents.scoring import (
    TOOL_CALLS,
    TRAJECTORY_MATCH,
    TRAJECTORY_MATCH_ORDERED,
    TURN_COUNT,
    score_agent,
)
from pytest_queryeval.agents.spec import AgentSpec
from pytest_queryeval.agents.trajectory import read_envelope
from pytest_queryeval.metrics.evalbench_trajectory import (
    agent_steps,
    multiset_score,
    trajectory_score,
    turn_count,
)


@pytest.fixture(scope="module")
def oracle(shared_data: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((shared_data / "evalbench" / "oracle.json").read_text())
    return data


def _value(side: object) -> object:
    """``{"tuple": [...]}`` stands for a tuple in the oracle (JSON has none)."""
    if isinstance(side, dict) and list(side) == ["tuple"]:
        return tuple(side["tuple"])
    return side


def test_matcher_equals_the_reference_in_every_configuration(oracle: dict[str, Any]) -> None:
    checked = 0
    for item in oracle["pairs"]:
        for config, (want, why) in zip(oracle["configs"], item["scores"], strict=True):
            got, _ = trajectory_score(_value(item["expected"]), _value(item["actual"]),
                                      enforce_order=config["enforce_order"],
                                      filter_native_tools=config["filter_native_tools"],
                                      generated_error=item["error"])
            assert got == want, (item, config, why)
            checked += 1
    assert checked == 419 * 4


def test_rules_of_the_reference_are_in_the_oracle(oracle: dict[str, Any]) -> None:
    by_input = {json.dumps([p["expected"], p["actual"], p["error"]]): p["scores"]
                for p in oracle["pairs"]}
    # generated_error scores 0, a string is not a list, set semantics hide the repeats
    assert by_input[json.dumps([["a__b"], ["a__b"], "timeout after 60 s"])][0][0] == 0.0
    assert by_input[json.dumps([["a__b"], "a__b", None])][0] == [
        0.0, "Trajectory data must be lists."]
    repeated = by_input[json.dumps([["queryeval__run_query"], ["queryeval__run_query"] * 3,
                                    None])]
    assert repeated[0][0] == 100.0  # the quirk: nine calls or one, the same set
    assert repeated[2][0] == pytest.approx(100 / 3)
    # native tools filtered out on both sides: empty against empty
    assert by_input[json.dumps([["Read", "Bash"], ["Read"], None])][0][0] == 100.0


def test_the_multiset_correction_counts_repeats() -> None:
    assert trajectory_score(["a__q"], ["a__q"] * 3)[0] == 100.0
    assert multiset_score(["a__q"], ["a__q"] * 3)[0] == pytest.approx(100 / 3)
    assert multiset_score(["a__q", "a__s"], ["a__s", "a__q"])[0] == 100.0
    assert multiset_score(["a__q"], "x")[0] == 0.0
    assert multiset_score([], [], generated_error="boom")[0] == 0.0


def test_histories_equal_the_reference(oracle: dict[str, Any]) -> None:
    for item in oracle["histories"]:
        assert agent_steps(item["history"]) == item["agent_steps"][0], item
        assert turn_count(item["history"]) == item["turn_count"][0], item


def test_trajectories_score_as_the_reference(oracle: dict[str, Any]) -> None:
    """The whole way: an OpenAI-shaped trajectory in a prediction's envelope, through the
    plugin's reading and canonical names, to EvalBench's numbers."""
    for item in oracle["trajectories"]:
        env = read_envelope({"predicted": "SELECT 1", "trajectory": item["trajectory"],
                             "error": item["error"]})
        assert env.refused is None
        for flt in (True, False):
            spec = AgentSpec(trajectory=tuple(item["gold"]), filter_native_tools=flt)
            metrics, _ = score_agent(spec, env)
            index = 0 if flt else 1  # configs: (jaccard, filter), (jaccard, raw), ordered...
            assert metrics[TRAJECTORY_MATCH] == item["scores"][index][0], item
            assert metrics[TRAJECTORY_MATCH_ORDERED] == item["scores"][index + 2][0], item
        assert metrics[TOOL_CALLS] == item["agent_steps"][0]
        assert metrics[TURN_COUNT] == item["turn_count"][0]
