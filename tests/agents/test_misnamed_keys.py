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
#: Messages under another key, and no trajectory or spans: (record, the key refused).
ALONE: dict[str, tuple[dict[str, Any], str]] = {
    "capitalised": ({"Trajectory": WRITE}, "Trajectory"),
    "trace": ({"trace": WRITE}, "trace"),
    "nested": ({"output": {"messages": WRITE}}, "output"),
}
#: Messages under another key beside a trajectory or spans, empty or not: (record, the key).
BESIDE: dict[str, tuple[dict[str, Any], str]] = {
    "empty-trajectory": ({"trajectory": [], "messages": WRITE}, "messages"),
    "empty-spans": ({"spans": [], "messages": WRITE}, "messages"),
    "false-trajectory": ({"trajectory": False, "tool_calls": WRITE}, "tool_calls"),
    "dict-trajectory": ({"trajectory": {}, "steps": WRITE}, "steps"),
    "bare-calls": ({"trajectory": [], "tool_calls": WRITE[0]["tool_calls"]}, "tool_calls"),
    "beside": ({"trajectory": [call("a", "run_query", GOLD), tool("a")],
                "messages": [call("a", "run_query", GOLD), tool("a"),
                             call("b", "run_query", DELETE), tool("b")]}, "messages"),
}


def test_misnamed_messages_are_refused_and_the_counts_not_established(
        pytester: pytest.Pytester, shared_data: Path) -> None:
    """Each record is refused naming the key; its write is still counted where the calls can
    be read; and a case gated on a count is an error located at its gate, never a pass: with
    no trajectory and no spans nothing says what ran, and beside them which record does is
    ambiguous (the sixth re-probe)."""
    honest = {"trajectory": [], "messages": []}
    traced = {"trajectory": [call("a", "run_query", GOLD), tool("a")],
              "trace": "0af7651916cd43dd8448eb211c80319c"}  # a tracer's id, not messages
    _file_suite(pytester, shared_data, {**{cid: r for cid, (r, _) in ALONE.items()},
                                        **{cid: r for cid, (r, _) in BESIDE.items()},
                                        "honest-empty": honest, "trace-id": traced})
    _, report = run_report(pytester, "-p", "no:cacheprovider")
    for cid, (_, key) in ALONE.items():
        case = report.by_id[cid]
        assert case["details"]["agent"]["refused"] == (
            f"{key}: not read: an agent case reads its tool calls from 'trajectory' (chat "
            f"messages) or 'spans' (OpenInference spans); rename '{key}' to 'trajectory'"), cid
        assert case["outcome"] == "error", cid
        assert "thresholds.write_attempts: the record holds no 'trajectory' and no " \
               f"'spans' (its keys: 'id', 'predicted', '{key}')" in case["error"], cid
    for cid, (_, key) in BESIDE.items():
        case = report.by_id[cid]
        assert case["details"]["agent"]["refused"].startswith(f"'{key}': not read"), cid
        assert case["metrics"]["write_attempts"] == 1.0, (cid, case["metrics"])
        assert case["outcome"] == "error", cid
        assert f"the record holds messages or tool calls under '{key}' beside" in \
               case["error"], cid
        assert case["error"].startswith("the agent's counts could not be established: "
                                        "test_agent.yaml:"), cid
    for cid in ("honest-empty", "trace-id"):
        honest_case = report.by_id[cid]
        assert honest_case["outcome"] == "passed", honest_case
        assert not honest_case["details"]["agent"].get("refused"), honest_case
        assert honest_case["metrics"]["write_attempts"] == 0.0
