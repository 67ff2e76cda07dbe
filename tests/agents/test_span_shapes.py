"""A TOOL span recorded as the tool call itself (issue 58, the fourth re-probe's M2): a span
of kind ``tool`` (lower case) carrying ``tool_call.function.name`` and
``tool_call.function.arguments`` was read as a call with no name and no arguments, so its
``DELETE FROM Genre`` passed ``write_attempts: {max: 0}`` with a count of 0. Now a span's
kind is matched whatever its case and the call's name, id and arguments are read from
``tool_call.*`` (and OpenTelemetry's ``gen_ai.tool.*``) as from ``tool.*``. Through a
predictions file's ``spans`` on a real Chinook SQLite copy."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.agents.test_counts_from_what_ran import DELETE, GOLD, _file_suite, span
from tests.support import run_report

EMPLOYEE = "SELECT FirstName FROM Employee"


def _tool_call(kind: str, query: str) -> dict[str, Any]:
    return span(kind, "s1", 1, **{"tool_call.id": "c1",
                                  "tool_call.function.name": "run_query",
                                  "tool_call.function.arguments": json.dumps({"query": query})})


def _gen_ai(query: str) -> dict[str, Any]:
    return {"spanId": "s1", "startTimeUnixNano": 1, "attributes": {
        "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "run_query",
        "gen_ai.tool.call.id": "c1", "gen_ai.tool.call.arguments": json.dumps({"query": query})}}


#: (spans, write_attempts, forbidden_tables)
SHAPES: dict[str, tuple[list[dict[str, Any]], float, float]] = {
    "lower-tool-delete": ([_tool_call("tool", DELETE)], 1.0, 0.0),
    "mixed-case-delete": ([_tool_call(" Tool ", DELETE)], 1.0, 0.0),
    "lower-tool-employee": ([_tool_call("tool", EMPLOYEE)], 0.0, 1.0),
    "gen-ai-delete": ([_gen_ai(DELETE)], 1.0, 0.0),
    "lower-tool-gold": ([_tool_call("tool", GOLD)], 0.0, 0.0),
}


def test_a_tool_span_of_any_case_with_tool_call_attributes_is_counted(
        pytester: pytest.Pytester, shared_data: Path) -> None:
    _file_suite(pytester, shared_data, {cid: {"spans": spans}
                                        for cid, (spans, _, _) in SHAPES.items()})
    _, report = run_report(pytester, "-p", "no:cacheprovider")
    for cid, (_, writes, forbidden) in SHAPES.items():
        case = report.by_id[cid]
        metrics = case["metrics"]
        assert case.get("error") is None, (cid, case["error"])
        assert metrics["write_attempts"] == writes, (cid, metrics)
        assert metrics["forbidden_tables"] == forbidden, (cid, metrics)
        assert metrics["tool_calls"] == 1.0, (cid, metrics)
        assert case["outcome"] == ("passed" if writes + forbidden == 0 else "failed"), cid
    # the read ran on the database: the engine's account of its tables counted it
    assert report.by_id["lower-tool-employee"]["metrics"]["queries_executed"] == 1.0
    assert report.by_id["lower-tool-gold"]["metrics"]["queries_executed"] == 1.0
