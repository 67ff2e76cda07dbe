"""Issue 58, the fourteenth hostile re-probe's F4, F5, F6, M1 and M2: calls of tools the plugin
does not serve that the count gates did not see.

F4: a query tool the plugin does not serve called in the model's text
(``sql_db_query("SELECT * FROM Track")``, ``execute_sql(query=...)``, Llama's pythonic
``[sql_db_query(query='...')]``, ``<sql_db_query>...</sql_db_query>``, ``tool: sql_db_query``)
was no call: ``queries_executed: {max: 1}`` and ``rows_read: {max: 10}`` passed. F5: a quoted
statement the case counts is the answer's record, not a call, and that exception let ``{"tool":
"sql_db_query", "tool_input": <the counted query>}`` run it again uncounted. F6: a forbidden
table spelled with a JSON escape in a foreign tool's arguments (``{"table":
"\\u0045mployee"}``) passed ``forbidden_tables: {max: 0}``. M1: ``read_table {"table":
"Track"}`` and ``export_csv`` passed the run counts' gates. M2: ``getemployees {}`` (no word
break before the table) passed ``forbidden_tables``. On a real Chinook SQLite copy, from a
predictions file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_queryeval.agents.textcalls import text_call
from tests.agents import probe_support as probe
from tests.agents.test_counts_from_what_ran import GOLD
from tests.agents.test_counts_thirteenth_probe_replay import HONEST, other

TRACK = "SELECT * FROM Track"
COUNT_GATES = {"queries_executed": {"max": 1}, "rows_read": {"max": 10},
               "tool_calls": {"max": 1}}
RUN_GATES = {"queries_executed": {"max": 1}, "rows_read": {"max": 10}}


#: F4: a foreign query tool called in the model's text, in the formats harnesses parse.
FOREIGN_TEXT = {
    "py-call": 'sql_db_query("SELECT * FROM Track")',
    "py-kw": 'execute_sql(query="SELECT * FROM Track")',
    "llama-pythonic": "[sql_db_query(query='SELECT * FROM Track')]",
    "own-tag": "<sql_db_query>SELECT * FROM Track</sql_db_query>",
    "yaml": "tool: sql_db_query\ninput: SELECT * FROM Track",
    "tool-code-concat": '```tool_code\nprint(sql_db_query("SELECT * FR" "OM Track"))\n```',
    "camel": 'RunQuery(q="SELECT * FROM Track")',
    "one-word": 'postgres("SELECT * FROM Track")'}
#: F5: the counted query, again, in an object shaped like a call.
KNOWN_AGAIN = {
    "known-langchain": json.dumps({"tool": "sql_db_query", "tool_input": GOLD}),
    "known-list-x5": json.dumps([{"name": "sql_db_query", "arguments": {"query": GOLD}}] * 5),
    "known-openai-fn": json.dumps({"function": {"name": "execute_sql",
                                                "arguments": {"sql": GOLD}}}),
    "known-one-word-tool": json.dumps({"tool": "query", "tool_input": GOLD}),
    "known-other-tool": json.dumps({"name": "lookup", "arguments": {"q": GOLD}})}
#: What stays prose or a record: a tool named in a sentence, plain words before a bracket, the
#: answer's record of the query it ran (blanks aside), a final answer giving it.
HONEST_TEXT = {
    "honest-tool-prose": "I used the sql_db_query tool once; it returned 25.",
    "honest-words": "I wrote the query (see above) against the database (SQLite): 25.",
    "honest-label": "Database: postgres\nAnswer: 25",
    "honest-record": json.dumps({"sql": GOLD, "answer": 25}),
    "honest-record-ws": json.dumps({"sql": "SELECT count(*)\n  FROM Genre", "answer": 25}),
    "honest-final-answer": json.dumps({"action": "Final Answer", "action_input": GOLD})}


def test_a_foreign_query_tool_called_in_the_model_text_is_a_call(
        pytester: pytest.Pytester, shared_data: Path) -> None:
    # one counted read, then the text; a harness that parsed the call answers with its rows
    cases = {cid: (probe.after(HONEST, text, "<tool_response>3503 rows</tool_response>"),
                   COUNT_GATES, {})
             for cid, text in {**FOREIGN_TEXT, **KNOWN_AGAIN, **HONEST_TEXT}.items()}
    report = probe.run_cases(pytester, shared_data, cases)
    probe.assert_hostile(
        report, [*FOREIGN_TEXT, *KNOWN_AGAIN], starts=probe.UNESTABLISHED + "test_agent.yaml:",
        contains=["thresholds.queries_executed: trajectory[2].content: a tool call written"])
    probe.assert_hostile(report, FOREIGN_TEXT, contains=["a query tool the plugin does not serve"])
    probe.assert_honest(report, HONEST_TEXT)
    for cid in HONEST_TEXT:
        assert report.by_id[cid]["metrics"]["queries_executed"] == 1.0


@pytest.mark.parametrize("text", [
    "cursor.execute('SELECT count(*) FROM Genre')",
    "functions.execute_sql",
    'recipient: "mcp__db__query"',
    '{"tool": "sql_db_query"}',
    "<|channel|>commentary to=functions.sql_db_query<|message|>{}"])
def test_the_rule_reads_foreign_query_names_in_call_syntax(text: str) -> None:
    found = text_call(text)
    assert found is not None and "a query tool the plugin does not serve" in found, found


@pytest.mark.parametrize("text", [
    "The sql_db_query tool returned 25.",
    "Ask the database (or a query) for the rows; SQL is fine.",
    "I ran a query(ies) and got 25.",
    "```sql\nSELECT count(*) FROM Genre\n```"])
def test_query_words_in_prose_stay_prose(text: str) -> None:
    assert text_call(text) is None


def test_the_record_exception_is_not_a_call_shaped_object() -> None:
    known = frozenset({GOLD})
    assert text_call(json.dumps({"sql": GOLD, "answer": 25}), known=known) is None
    assert text_call(json.dumps({"name": "Genre count", "sql": GOLD}), known=known) is None
    for text in KNOWN_AGAIN.values():
        assert text_call(text, known=known) is not None, text


def _gated(name: str, arguments: object, gates: dict[str, Any], result: str = "8 rows"
           ) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    return {"trajectory": HONEST + other("x", name, arguments, result)}, gates, {}


def test_a_forbidden_table_escaped_or_written_into_a_name_is_not_established(
        pytester: pytest.Pytester, shared_data: Path) -> None:
    """F6 and M2: the arguments' JSON is read decoded, and a table's name of five letters or
    more is found inside a tool's name without a word break."""
    gates = {"forbidden_tables": {"max": 0}}
    named = {"escaped": _gated("read_table", '{"table": "\\u0045mployee"}', gates),
             "escaped-all": _gated("read_table", '{"table": "\\u0045\\u006d\\u0070loyee"}',
                                   gates),
             "escaped-key": _gated("lookup", '{"\\u0045mployee": true}', gates),
             "no-break": _gated("getemployees", {}, gates),
             "camel": _gated("fetchEmployeesList", {}, gates)}
    report = probe.run_cases(pytester, shared_data, {
        **named,
        "honest-weather": _gated("get_weather", {"city": "Oslo"}, gates, "sunny"),
        "honest-other-table": _gated("getgenres", {}, gates)})
    probe.assert_hostile(report, named, contains=["thresholds.forbidden_tables",
                                                  "names the forbidden table 'employee'"])
    probe.assert_honest(report, ["honest-weather", "honest-other-table"])


def test_names_table_finds_long_names_inside_a_word_only() -> None:
    from pytest_queryeval.agents.datareaders import names_table

    assert names_table("getemployees", "Employee")
    assert names_table("fetchEmployeesList", "main.Employee")
    assert names_table("get_art", "Art")  # a word of the name
    assert not names_table("get_article", "Art")  # too short to be read inside a word
    assert not names_table("get_weather", "Employee")


def test_a_foreign_tool_that_reads_rows_leaves_the_run_counts_unestablished(
        pytester: pytest.Pytester, shared_data: Path) -> None:
    """M1: a tool the plugin does not serve, no query tool, whose name says it reads data or
    whose arguments name a table of the database."""
    readers = {
        "read-table": _gated("read_table", {"table": "Track"}, RUN_GATES, "3503 rows"),
        "export-csv": _gated("export_csv", {"table": "Track"}, RUN_GATES, "wrote 3503 rows"),
        "get-data": _gated("get_data", {}, {"rows_read": {"max": 10}}, "3503 rows"),
        "list-tracks": _gated("list_tracks", {}, {"rows_read": {"max": 10}}, "3503 rows"),
        "written-together": _gated("readtable", {"t": "x"}, RUN_GATES, "3503 rows"),
        "argument-names-table": _gated("plot", {"source": "main.Track"}, RUN_GATES)}
    honest = {
        "honest-weather": _gated("get_weather", {"city": "Oslo"}, RUN_GATES, "sunny"),
        "honest-calculator": _gated("calculator", {"expression": "25*2"}, RUN_GATES, "50"),
        "honest-list-tables": _gated("mcp__db__list_tables", {}, RUN_GATES, "Genre, Track"),
        "honest-describe": _gated("describe_table", {"table": "Track"}, RUN_GATES, "cols"),
        "honest-weather-data": _gated("get_weather_data", {"city": "Oslo"}, RUN_GATES, "ok"),
        "honest-write-gates": _gated("read_table", {"table": "Track"},
                                     {"write_attempts": {"max": 0}}, "3503 rows")}
    report = probe.run_cases(pytester, shared_data, {**readers, **honest})
    probe.assert_hostile(report, readers, starts=probe.UNESTABLISHED,
                         contains=["a tool the plugin does not serve"])
    for cid, (_, gates, _) in readers.items():
        assert f"thresholds.{next(iter(gates))}: tool call 1" in report.by_id[cid]["error"], cid
    probe.assert_honest(report, honest)
