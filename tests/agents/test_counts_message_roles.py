"""Issue 58, the twelfth hostile re-probe (H13, gen_t3.py): ``tool_calls`` on a ``user`` or a
``tool`` message were neither read (no reader reads a call there) nor searched (the leftover
search took them as read), so a ``DELETE FROM Genre`` there passed ``write_attempts: {max:
0}`` with 0. They are now searched, and a count-gated case holding them is not established.
On a real Chinook SQLite copy, from a predictions file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.agents.test_counts_fail_closed import one
from tests.agents.test_counts_from_what_ran import DELETE, GOLD, _file_suite
from tests.agents.test_counts_ninth_probe import UNESTABLISHED
from tests.support import run_report

CALLS = [{"id": "x1", "type": "function", "function": {
    "name": "run_query", "arguments": json.dumps({"query": DELETE})}}]


def test_tool_calls_on_a_user_or_tool_message_are_searched(pytester: pytest.Pytester,
                                                           shared_data: Path) -> None:
    answered = one(GOLD)
    lines = {"user-tool_calls": {"trajectory": [*answered, {"role": "user", "content": "ok",
                                                            "tool_calls": CALLS}]},
             "tool-tool_calls": {"trajectory": [answered[0], {**answered[1],
                                                              "tool_calls": CALLS}]},
             "honest-empty": {"trajectory": [*answered, {"role": "user", "content": "ok",
                                                         "tool_calls": []}]}}
    _file_suite(pytester, shared_data, lines)
    _, report = run_report(pytester, "-p", "no:cacheprovider")
    for cid in ("user-tool_calls", "tool-tool_calls"):
        case = report.by_id[cid]
        assert case["outcome"] == "error", (cid, case["outcome"], case["metrics"])
        assert case["error"].startswith(UNESTABLISHED) and ".tool_calls" in case["error"], \
            case["error"]
    assert report.by_id["honest-empty"]["outcome"] == "passed"
