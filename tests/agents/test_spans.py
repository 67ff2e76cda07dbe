"""A trajectory from OpenInference spans: OTLP JSON and a flat span list."""

from __future__ import annotations

from typing import Any

from pytest_queryeval.agents.trajectory import read_envelope


def attr(key: str, value: Any) -> dict[str, Any]:
    kind = "intValue" if isinstance(value, int) else "stringValue"
    return {"key": key, "value": {kind: value}}


def otlp(*spans: dict[str, Any]) -> dict[str, Any]:
    return {"resourceSpans": [{"scopeSpans": [{"spans": list(spans)}]}]}


def test_otlp_llm_and_tool_spans_become_calls_and_results() -> None:
    out = "llm.output_messages.0.message"
    spans = otlp(
        # the tool span ends first in the file but starts later: start time orders them
        {"spanId": "t1", "startTimeUnixNano": "300", "attributes": [
            attr("openinference.span.kind", "TOOL"), attr("tool.name", "run_query"),
            attr("tool_call.id", "call_2"), attr("output.value", "59")]},
        {"spanId": "l1", "startTimeUnixNano": "100", "attributes": [
            attr("openinference.span.kind", "LLM"),
            attr(f"{out}.tool_calls.0.tool_call.id", "call_1"),
            attr(f"{out}.tool_calls.0.tool_call.function.name", "get_schema"),
            attr(f"{out}.tool_calls.0.tool_call.function.arguments", "{}"),
            attr(f"{out}.tool_calls.1.tool_call.id", "call_2"),
            attr(f"{out}.tool_calls.1.tool_call.function.name", "run_query"),
            attr(f"{out}.tool_calls.1.tool_call.function.arguments",
                 '{"query": "SELECT COUNT(*) FROM Customer"}')]},
        {"spanId": "t0", "startTimeUnixNano": "200", "attributes": [
            attr("openinference.span.kind", "TOOL"), attr("tool.name", "get_schema"),
            attr("output.value", "CREATE TABLE Customer (...)")]},
        {"spanId": "c", "startTimeUnixNano": "50", "attributes": [
            attr("openinference.span.kind", "CHAIN")]},
    )
    env = read_envelope({"predicted": "SELECT COUNT(*) FROM Customer", "spans": spans})
    assert env.refused is None and env.trajectory is not None
    steps = env.trajectory.steps
    assert [(s.name, s.call_id, s.result) for s in steps] == [
        ("get_schema", "call_1", "CREATE TABLE Customer (...)"), ("run_query", "call_2", "59")]
    assert steps[1].arguments == {"query": "SELECT COUNT(*) FROM Customer"}


def test_tool_spans_alone_and_a_bad_name_refused() -> None:
    flat = [{"span_id": "a", "start_time": 1, "attributes": {
        "openinference.span.kind": "TOOL", "tool.name": "run_query",
        "input.value": '{"query": "SELECT 1"}', "output.value": "1"}}]
    env = read_envelope({"predicted": "SELECT 1", "spans": flat})
    assert env.trajectory is not None
    assert [(s.call_id, s.name, s.arguments, s.result) for s in env.trajectory.steps] == [
        ("a", "run_query", {"query": "SELECT 1"}, "1")]
    flat[0]["attributes"]["tool.name"] = "../x"  # any text, as EvalBench reads it
    env = read_envelope({"predicted": "SELECT 1", "spans": flat})
    assert env.trajectory is not None and env.trajectory.tool_names == ["../x"]
    flat[0]["attributes"]["tool.name"] = "x" * 300
    env = read_envelope({"predicted": "SELECT 1", "spans": flat})
    assert env.refused is not None and "is not a tool name (a text of at most 256" in env.refused
    assert read_envelope({"predicted": "x", "spans": 3}).refused == (
        "spans: must be OTLP JSON (resourceSpans) or a list of spans")
