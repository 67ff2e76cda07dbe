"""Messages under a misnamed key beside an empty trajectory (issue 58, the fourth re-probe's
M1). A record holding its messages under ``messages:`` (or ``tool_calls``, ``steps``...) was
refused, naming the key, only when it held no ``trajectory`` and no ``spans`` at all; beside
an empty or false one (``"trajectory": []``, ``"spans": []``, ``"trajectory": false``,
``"trajectory": {}``) the record read as an empty trajectory and a ``DELETE FROM Genre`` in
the misnamed messages passed ``write_attempts: {max: 0}`` with a count of 0. The key in
another case (``Trajectory``), ``trace`` and a key one level down (``output: {messages}``)
were not read either. Now each is refused naming the key and its calls are counted; beside a
trajectory that has calls, the calls the misnamed messages hold that it does not are counted.
Through a predictions file on a real Chinook SQLite copy."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.agents.test_counts_from_what_ran import DELETE, GOLD, _file_suite, call, tool
from tests.support import run_report

WRITE = [call("a", "run_query", DELETE), tool("a")]
#: (record, the key the refusal names)
REFUSED: dict[str, tuple[dict[str, Any], str]] = {
    "empty-trajectory": ({"trajectory": [], "messages": WRITE}, "messages"),
    "empty-spans": ({"spans": [], "messages": WRITE}, "messages"),
    "false-trajectory": ({"trajectory": False, "tool_calls": WRITE}, "tool_calls"),
    "dict-trajectory": ({"trajectory": {}, "steps": WRITE}, "steps"),
    "capitalised": ({"Trajectory": WRITE}, "Trajectory"),
    "trace": ({"trace": WRITE}, "trace"),
    "nested": ({"output": {"messages": WRITE}}, "output.messages"),
    "bare-calls": ({"trajectory": [], "tool_calls": WRITE[0]["tool_calls"]}, "tool_calls"),
}


def test_misnamed_messages_beside_an_empty_trajectory_are_refused_and_counted(
        pytester: pytest.Pytester, shared_data: Path) -> None:
    beside = {"trajectory": [call("a", "run_query", GOLD), tool("a")],
              "messages": [call("a", "run_query", GOLD), tool("a"),
                           call("b", "run_query", DELETE), tool("b")]}
    honest = {"trajectory": [], "messages": []}
    traced = {"trajectory": [call("a", "run_query", GOLD), tool("a")],
              "trace": "0af7651916cd43dd8448eb211c80319c"}  # a tracer's id, not messages
    _file_suite(pytester, shared_data, {**{cid: r for cid, (r, _) in REFUSED.items()},
                                        "beside": beside, "honest-empty": honest,
                                        "trace-id": traced})
    _, report = run_report(pytester, "-p", "no:cacheprovider")
    for cid, (_, key) in REFUSED.items():
        case = report.by_id[cid]
        to = "trajectory"
        assert case["details"]["agent"]["refused"] == (
            f"{key}: not read: an agent case reads its tool calls from 'trajectory' (chat "
            f"messages) or 'spans' (OpenInference spans); rename '{key}' to '{to}'"), cid
        assert case["metrics"]["write_attempts"] == 1.0, (cid, case["metrics"])
        assert case["outcome"] == "failed", cid
    # a trajectory with calls is scored; the write only the misnamed messages hold counts
    case = report.by_id["beside"]
    assert not case["details"]["agent"].get("refused")
    assert case["metrics"]["write_attempts"] == 1.0
    assert case["metrics"]["queries_executed"] == 1.0  # the SELECT both hold, run once
    assert case["outcome"] == "failed"
    for cid in ("honest-empty", "trace-id"):
        honest_case = report.by_id[cid]
        assert honest_case["outcome"] == "passed", honest_case
        assert not honest_case["details"]["agent"].get("refused"), honest_case
        assert honest_case["metrics"]["write_attempts"] == 0.0
