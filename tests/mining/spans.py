"""OpenInference spans of a traced agent, written as an instrumentor exports them (OTLP JSON):
a stand-in for a team's production tracer (Phoenix, Logfire), which cannot run here. The
queries' results are real: each query runs on the real Chinook file when the spans are made."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

OUT = "llm.output_messages.0.message"


def attr(key: str, value: Any) -> dict[str, Any]:
    kind = "intValue" if isinstance(value, int) else "stringValue"
    return {"key": key, "value": {kind: value}}


def run(db: Path, query: str) -> tuple[str, bool]:
    """The result text a ``run_query`` tool returns, and whether it failed."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        rows = con.execute(query).fetchmany(20)
    except sqlite3.Error as exc:
        return json.dumps({"error": str(exc)}), True
    finally:
        con.close()
    return json.dumps({"rows": [list(r) for r in rows]}), False


def trace_spans(trace_id: str, question: str, steps: list[tuple[str, dict[str, Any]]],
                answer: str, db: Path, *, start: int = 1_000, tags: list[str] | None = None,
                ) -> list[dict[str, Any]]:
    """One agent run: a root CHAIN span, an LLM span per tool call, a TOOL span per result."""
    t = start
    root: dict[str, Any] = {"traceId": trace_id, "spanId": f"{trace_id}-root", "name": "agent",
                            "startTimeUnixNano": str(t), "attributes": [
                                attr("openinference.span.kind", "CHAIN"),
                                attr("input.value", json.dumps({"question": question})),
                                attr("output.value", answer)]}
    if tags:
        root["attributes"].append(attr("tag.tags", json.dumps(tags)))
    spans = [root]
    for n, (name, arguments) in enumerate(steps):
        call = f"{trace_id}-call{n}"
        t += 10
        spans.append({"traceId": trace_id, "spanId": f"{call}-llm",
                      "parentSpanId": root["spanId"], "startTimeUnixNano": str(t),
                      "endTimeUnixNano": str(t + 5), "attributes": [
                          attr("openinference.span.kind", "LLM"),
                          attr("llm.input_messages.0.message.role", "user"),
                          attr("llm.input_messages.0.message.content", question),
                          attr(f"{OUT}.tool_calls.0.tool_call.id", call),
                          attr(f"{OUT}.tool_calls.0.tool_call.function.name", name),
                          attr(f"{OUT}.tool_calls.0.tool_call.function.arguments",
                               json.dumps(arguments))]})
        result, failed = (run(db, arguments["query"]) if name == "run_query"
                          else ('{"tables": ["Genre", "Track"]}', False))
        t += 10
        tool: dict[str, Any] = {
            "traceId": trace_id, "spanId": f"{call}-tool", "parentSpanId": root["spanId"],
            "startTimeUnixNano": str(t), "endTimeUnixNano": str(t + 5), "attributes": [
                attr("openinference.span.kind", "TOOL"), attr("tool.name", name),
                attr("tool_call.id", call), attr("input.value", json.dumps(arguments)),
                attr("output.value", result)]}
        if failed:
            tool["status"] = {"code": "STATUS_CODE_ERROR"}
        spans.append(tool)
    root["endTimeUnixNano"] = str(t + 20)
    return spans


def otlp(spans: list[dict[str, Any]]) -> dict[str, Any]:
    return {"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}
