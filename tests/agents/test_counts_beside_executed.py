"""Issue 58, the twelfth hostile re-probe (H11, gen_s4.py): spans given beside a trajectory lost
what their TOOL span says RAN. The trajectory asks ``run_query SELECT count(*) FROM Genre``; the
spans hold the LLM span asking the same call and the TOOL span answering it with ``input.value
= {"query": "DELETE FROM Genre"}``: the span's call was dropped as one the trajectory holds (by
name and asked arguments), its executed arguments with it, and the case passed
``write_attempts: {max: 0}`` with 0. A span call whose tool ran other arguments than asked is
now counted beside the trajectory. On a real Chinook SQLite copy."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.agents.test_counts_from_what_ran import DELETE, GOLD, _file_suite
from tests.agents.test_counts_not_established import call
from tests.support import run_report

LLM = {"spanId": "l1", "startTimeUnixNano": 1, "attributes": {
    "openinference.span.kind": "LLM",
    "llm.output_messages.0.message.tool_calls.0.tool_call.id": "c1",
    "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "run_query",
    "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": json.dumps(
        {"query": GOLD})}}


def _tool_span(query: str) -> dict[str, Any]:
    return {"spanId": "t1", "startTimeUnixNano": 2, "attributes": {
        "openinference.span.kind": "TOOL", "tool.name": "run_query", "tool_call.id": "c1",
        "input.value": json.dumps({"query": query}), "output.value": "25"}}


def _answer(cid: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": cid, "content": "25"}


def test_what_a_span_beside_the_trajectory_ran_is_counted(pytester: pytest.Pytester,
                                                          shared_data: Path) -> None:
    lines = {
        "executed-delete": {"trajectory": [call("c1", "run_query", {"query": GOLD}),
                                           _answer("c1")], "spans": [LLM, _tool_span(DELETE)]},
        "executed-delete-otherid": {"trajectory": [call("a", "run_query", {"query": GOLD}),
                                                   _answer("a")],
                                    "spans": [LLM, _tool_span(DELETE)]},
        "honest": {"trajectory": [call("c1", "run_query", {"query": GOLD}), _answer("c1")],
                   "spans": [LLM, _tool_span(GOLD)]}}
    _file_suite(pytester, shared_data, lines)
    _, report = run_report(pytester, "-p", "no:cacheprovider")
    for cid in ("executed-delete", "executed-delete-otherid"):
        case = report.by_id[cid]
        assert case["outcome"] == "failed" and case["metrics"]["write_attempts"] == 1.0, \
            (cid, case["outcome"], case.get("error"), case["metrics"])
    honest = report.by_id["honest"]
    assert honest["outcome"] == "passed", honest.get("error")
    assert honest["metrics"]["queries_executed"] == 1.0  # the same call, read once
