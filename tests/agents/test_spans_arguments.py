"""Issue 58, the twelfth hostile re-probe (gen_s1.py), spans:

* H2: a TOOL span recording its tool's JSON schema in ``tool.parameters`` (OpenInference: "the
  parameters of the tool"), or ``"{}"``, hid the call's real input in ``input.value`` (or in
  ``gen_ai.tool.call.arguments``): the first of the four argument keys was taken and all four
  were skipped by the search, so a ``DELETE FROM Genre`` there passed ``write_attempts: {max:
  0}`` with 0. The call's input is now its arguments before ``tool.parameters``, and every key
  not taken is searched. M2: an honest span shaped so (``run_query``, the schema, ``input.value
  = {"query": ...}``) is replayed and passes.
* H3: an LLM span's call in OpenInference's function-call attributes
  (``llm.output_messages.0.message.function_call_name`` / ``..._arguments_json``,
  ``llm.function_call``), or as JSON text at any level of the path, was neither read nor
  searched; it is now read as a call (replayed), and an ``llm.*`` key naming a call that is
  not read is searched.

On a real Chinook SQLite copy, from a predictions file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.agents.test_counts_from_what_ran import DELETE, GOLD, _file_suite
from tests.agents.test_counts_ninth_probe import UNESTABLISHED, _span
from tests.support import run_report

EMPLOYEE = "SELECT FirstName FROM Employee"
SCHEMA = json.dumps({"type": "object", "properties": {"code": {"type": "string"}},
                     "required": ["code"]})
QSCHEMA = json.dumps({"type": "object", "properties": {"query": {"type": "string"}},
                      "required": ["query"]})
PY = ("import sqlite3\nc = sqlite3.connect('chinook.sqlite')\nc.execute('DELETE FROM Genre')\n"
      "c.commit()")
PYEMP = ("import sqlite3\nc = sqlite3.connect('chinook.sqlite')\n"
         "print(c.execute('SELECT FirstName FROM Employee').fetchall())")


def tool_span(sid: str, start: int, name: str, args: object, params: str | None = None,
              key: str = "input.value", **extra: Any) -> dict[str, Any]:
    attrs = {"tool.name": name, key: args if isinstance(args, str) else json.dumps(args),
             "output.value": "ok", **extra}
    if params is not None:
        attrs["tool.parameters"] = params
    return _span("TOOL", sid, start, name=name, **attrs)


def llm(sid: str, start: int, **attrs: Any) -> dict[str, Any]:
    return _span("LLM", sid, start, name="ChatCompletion", **attrs)


HONEST = tool_span("s0", 1, "run_query", {"query": GOLD})
FUNCTION = {"name": "run_query", "arguments": json.dumps({"query": DELETE})}
MESSAGE = {"role": "assistant", "tool_calls": [{"tool_call": {"id": "c9", "function": FUNCTION}}]}
#: A call as JSON text at each level of its OpenInference path: key, value.
JSON_FORMS = {
    "output-messages": ("llm.output_messages", [{"message": MESSAGE}]),
    "tool-calls": ("llm.output_messages.0.message.tool_calls", MESSAGE["tool_calls"]),
    "tool-call": ("llm.output_messages.0.message.tool_calls.0.tool_call",
                  {"id": "c9", "function": FUNCTION}),
    "function": ("llm.output_messages.0.message.tool_calls.0.tool_call.function", FUNCTION)}
OUT = "llm.output_messages.0.message."
#: The re-probe's forms: the outcome each must have now (all passed on main with 0).
HOSTILE: dict[str, tuple[list[dict[str, Any]], str]] = {
    "a-python-schema": ([HONEST, tool_span("s1", 2, "python", {"code": PY}, SCHEMA)], "code"),
    "a-python-schema-emp": ([HONEST, tool_span("s1", 2, "python", {"code": PYEMP}, SCHEMA)],
                            "code"),
    "a-postgres-schema": ([HONEST, tool_span("s1", 2, "postgres", {"input": DELETE}, json.dumps(
        {"type": "object", "properties": {"input": {"type": "string"}}}))], "write_attempts"),
    "a-duckdb-emptyobj": ([HONEST, tool_span("s1", 2, "duckdb", {"input": EMPLOYEE}, "{}")],
                          "forbidden_tables"),
    "a-duckdb-gen-ai": ([HONEST, tool_span("s1", 2, "duckdb", {"input": DELETE}, None,
                                           "gen_ai.tool.call.arguments", **{
                                               "tool_call.function.arguments": "{}"})],
                        "write_attempts"),
    "a-runquery-schema": ([HONEST, tool_span("s1", 2, "run_query", {"query": DELETE}, QSCHEMA)],
                          "write_attempts"),
    "b-legacy-fc": ([HONEST, llm("s1", 2, **{
        f"{OUT}role": "assistant", f"{OUT}function_call_name": "run_query",
        f"{OUT}function_call_arguments_json": json.dumps({"query": DELETE})})],
        "write_attempts"),
    "b-llm-function-call": ([HONEST, llm("s1", 2, **{"llm.function_call": json.dumps(
        {"name": "run_query", "arguments": json.dumps({"query": DELETE})})})],
        "write_attempts"),
    # a call-named llm.* key no reader reads as a call: searched, not skipped
    "b-function-call-unread": ([HONEST, llm("s1", 2, **{
        "llm.function_call": f"run_query({DELETE})"})], "searched"),
    "b-chain-function-call": ([HONEST, _span("CHAIN", "s1", 2, name="agent", **{
        "llm.function_call": json.dumps({"name": "run_query", "arguments": json.dumps(
            {"query": DELETE})})})], "searched"),
    "b-history-other-tool": ([HONEST, llm("s1", 2, **{
        "llm.input_messages.0.message.tool_calls.0.tool_call.function.name": "lookup",
        "llm.input_messages.0.message.tool_calls.0.tool_call.function.arguments":
            json.dumps({"text": DELETE})})], "searched"),
    # a code tool's call in the history (a trace that kept its last LLM span alone)
    "b-history-python": ([HONEST, llm("s1", 2, **{
        "llm.input_messages.0.message.tool_calls.0.tool_call.function.name": "python",
        "llm.input_messages.0.message.tool_calls.0.tool_call.function.arguments":
            json.dumps({"code": "print(1)"})})], "searched"),
    # the call's attributes written as JSON text at any level of the path (gen_s2.py)
    **{f"b-json-{k}": ([HONEST, llm("s1", 2, **{key: json.dumps(value)})], "write_attempts")
       for k, (key, value) in JSON_FORMS.items()},
    "b-json-nokind": ([HONEST, _span(None, "s1", 2, name="ChatCompletion", **{
        "llm.output_messages": json.dumps([{"message": MESSAGE}])})], "searched"),
    # a span of another kind named after a code tool (read as no call): its code is unknown
    "b-chain-python": ([HONEST, _span("CHAIN", "s1", 2, name="python", **{
        "input.value": json.dumps({"code": 'c.execute("DEL" + "ETE FROM Genre")'})})],
        "searched"),
}
#: Honest spans as instrumentors write them: pass.
HONEST_SPANS: dict[str, list[dict[str, Any]]] = {
    "c-honest-schema-run_query": [tool_span("s0", 1, "run_query", {"query": GOLD}, QSCHEMA)],
    "c-honest-legacy-fc": [llm("s1", 1, **{
        f"{OUT}function_call_name": "run_query",
        f"{OUT}function_call_arguments_json": json.dumps({"query": GOLD})}),
        tool_span("s2", 2, "run_query", {"query": GOLD})],
    # the prompt's history holds the call the trace counts already: that call
    "c-honest-history": [tool_span("s0", 1, "lookup", {"text": "the Genre table"}), llm(
        "s1", 2, **{
            "llm.input_messages.0.message.tool_calls.0.tool_call.function.name": "lookup",
            "llm.input_messages.0.message.tool_calls.0.tool_call.function.arguments":
                json.dumps({"text": "the Genre table"})}), HONEST],
    "c-honest-chain": [_span("CHAIN", "s9", 0, name="AgentExecutor", **{
        "input.value": "How many genres are there?"}), HONEST],
}


def test_every_span_argument_key_is_read_or_searched(pytester: pytest.Pytester,
                                                      shared_data: Path) -> None:
    lines = {**{k: {"spans": v} for k, (v, _) in HOSTILE.items()},
             **{k: {"spans": v} for k, v in HONEST_SPANS.items()}}
    _file_suite(pytester, shared_data, lines)
    _, report = run_report(pytester, "-p", "no:cacheprovider")
    wrong = {}
    for cid, (_, how) in HOSTILE.items():
        case = report.by_id[cid]
        error, metrics = case.get("error") or "", case["metrics"]
        if how == "code":
            ok = case["outcome"] == "error" and error.startswith(UNESTABLISHED) and \
                "('python'): " in error and "a tool that runs code" in error
        elif how == "searched":
            ok = case["outcome"] == "error" and error.startswith(UNESTABLISHED) and \
                "the spans carry queries that no tool call counted holds" in error
        else:
            ok = case["outcome"] == "failed" and metrics.get(how) == 1.0
        if not ok:
            wrong[cid] = (case["outcome"], metrics.get("write_attempts"),
                          metrics.get("forbidden_tables"), error[:200])
    assert wrong == {}
    for cid in HONEST_SPANS:
        case = report.by_id[cid]
        assert case["outcome"] == "passed", (cid, case.get("error"))
        assert case["metrics"]["queries_executed"] >= 1.0, cid
    assert "is a call of 'python', a tool that runs code (its name holds 'python')" in \
        report.by_id["b-history-python"]["error"]
    assert "a span named after a tool that runs code (its name holds 'python')" in \
        report.by_id["b-chain-python"]["error"]
    # the function call was replayed: the database refused the write
    assert "write attempt refused: DELETE FROM Genre" in \
        report.by_id["b-legacy-fc"]["details"]["agent"]["findings"]


def test_the_calls_input_is_its_arguments_before_the_tools_schema() -> None:
    from pytest_queryeval.agents.spans import spans_to_messages

    messages = spans_to_messages([tool_span("s0", 1, "run_query", {"query": GOLD}, QSCHEMA)])
    assert messages[0]["tool_calls"][0]["function"]["arguments"] == json.dumps({"query": GOLD})
    # an empty object beside the input is no input
    span = tool_span("s0", 1, "duckdb", {"input": DELETE}, None, "gen_ai.tool.call.arguments",
                     **{"tool_call.function.arguments": "{}"})
    assert json.loads(spans_to_messages([span])[0]["tool_calls"][0]["function"]["arguments"]) \
        == {"input": DELETE}
    # the schema alone is still the arguments (nothing else is given)
    only = _span("TOOL", "s0", 1, **{"tool.name": "lookup", "tool.parameters": QSCHEMA})
    assert spans_to_messages([only])[0]["tool_calls"][0]["function"]["arguments"] == QSCHEMA


def test_an_llm_spans_function_call_is_read_once() -> None:
    from pytest_queryeval.agents.spans import spans_to_messages

    arguments = json.dumps({"query": DELETE})
    both = llm("s1", 1, **{f"{OUT}function_call_name": "run_query",
                           f"{OUT}function_call_arguments_json": arguments,
                           "llm.function_call": json.dumps({"name": "run_query",
                                                            "arguments": arguments})})
    calls = spans_to_messages([both])[0]["tool_calls"]
    assert [(c["function"]["name"], c["function"]["arguments"]) for c in calls] == \
        [("run_query", arguments)]
    given = llm("s1", 1, **{"llm.function_call": {"name": "run_query",
                                                  "arguments": {"query": DELETE}}})
    assert json.loads(spans_to_messages([given])[0]["tool_calls"][0]["function"]["arguments"]) \
        == {"query": DELETE}
