"""Issue 58, the twentieth re-probe: H1, H2 and F5, on the example's real ladybug graph.

Cypher's ``//`` comment ends at its line: ``R`` = ``MATCH (m:Movie) //x DETACH DELETE m`` then
``RETURN count(m)`` on the next line is a read, and ``C``, the same text with the line break
moved after ``//x``, deletes every movie. The readers compared the two with blanks collapsed
(or with SQL's tokenizer, which reads ``//`` as two ``/``), so they were one text:

H1: a trajectory's call ``c1`` holding ``R`` beside spans recording ``c1`` as ``C`` was merged
as one call, the trajectory's kept and replayed, and the write ladybug ran not counted: passed
``write_attempts: {max: 0}`` with 0. Now a graph's texts merge only when equal, or, holding no
quote, equal with their blanks read as :func:`~pytest_queryeval.agents.runcopies.lined` reads
them (a line break where a line comment may stand kept).

H2: a CHAIN, AGENT or kind-less span's ``output.value`` reporting it ran ``C`` was taken for the
counted call ``R`` (or, with no recorded call, for the predicted ``R``): passed with 0.

F5: an LLM span's message holding ``C`` as a chain's record, a fence or bare text, beside the
recorded ``R``: ``C`` was taken out of the text as the counted statement, and passed with 0.

Each hostile form fails or errors; the same with the texts' line breaks where the counted
call has them passes.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.agents import probe_support as probe
from tests.agents.test_counts_from_what_ran import call, llm_call, span, tool
from tests.agents.test_counts_tenth_probe import COUNT

#: Writes a line comment swallows in ``R`` and runs in ``C``.
WRITES = {"detach": "DETACH DELETE m", "set": "SET m.released = 0",
          "delete-rel": "MATCH (m)<-[r]-() DELETE r"}


def _read(write: str) -> str:
    return f"MATCH (m:Movie) //x {write}\nRETURN count(m)"


def _copy(write: str) -> str:
    return f"MATCH (m:Movie) //x\n{write} RETURN count(m)"


R, C = _read(WRITES["detach"]), _copy(WRITES["detach"])


def _tool_span(cid: str, arguments: str, start: int = 2) -> dict[str, Any]:
    return span("TOOL", f"t{start}", start, **{
        "tool.name": "run_query", "tool_call.id": cid, "input.value": arguments,
        "output.value": "5"})


def _recorded(query: str) -> list[dict[str, Any]]:
    """The counted call as traced: an LLM span calling ``run_query`` and its TOOL span."""
    return [llm_call("l1", 1, "c1", query), _tool_span("c1", json.dumps({"query": query}))]


def _beside(trajectory_query: str, spans: list[dict[str, Any]]) -> dict[str, Any]:
    return {"trajectory": [call("c1", "run_query", trajectory_query), tool("c1", "5"),
                           {"role": "assistant", "content": "5"}], "spans": spans}


def _merged_cases() -> tuple[dict[str, dict[str, Any]], list[str], list[str]]:
    lines: dict[str, dict[str, Any]] = {}
    for k, write in WRITES.items():
        read, copy = _read(write), _copy(write)
        lines[f"h1-{k}"] = _beside(read, _recorded(copy))
        lines[f"h1-llm-only-{k}"] = _beside(read, [llm_call("l1", 1, "c1", copy)])
        lines[f"h1-tool-raw-{k}"] = _beside(read, [llm_call("l1", 1, "c1", copy),
                                                   _tool_span("c1", copy)])
        lines[f"honest-same-{k}"] = _beside(read, _recorded(read))
    lines["h1-tool-only-detach"] = _beside(R, [_tool_span("c1", json.dumps({"query": C}))])
    hostile = [cid for cid in lines if cid.startswith("h1-")]
    return lines, hostile, [cid for cid in lines if cid not in hostile]


def _output_span(kind: str | None, value: str) -> dict[str, Any]:
    attributes = {"output.value": value, **({"openinference.span.kind": kind} if kind else {})}
    return {"spanId": "o1", "startTimeUnixNano": 3, "attributes": attributes}


#: A span's output reporting the statement it ran: as it is, as the call's arguments, with a
#: result.
_OUTPUTS = {"raw": lambda q: q, "json": lambda q: json.dumps({"query": q}),
            "result": lambda q: json.dumps({"query": q, "result": 5})}


def _output_cases() -> tuple[dict[str, dict[str, Any]], list[str], list[str]]:
    lines: dict[str, dict[str, Any]] = {}
    for kind in ("CHAIN", "AGENT", None):
        name = (kind or "nokind").lower()
        for form, shape in _OUTPUTS.items():
            lines[f"h2-{name}-{form}"] = {"spans": [*_recorded(R), _output_span(kind, shape(C))]}
            lines[f"honest-h2-{name}-{form}"] = {"spans": [*_recorded(R),
                                                           _output_span(kind, shape(R))]}
    for kind in ("CHAIN", "AGENT"):  # no recorded call: the predicted read is the known text
        lines[f"h2-predicted-{kind.lower()}"] = {"predicted": R, "spans": [_output_span(kind, C)]}
    hostile = [cid for cid in lines if cid.startswith("h2-")]
    return lines, hostile, [cid for cid in lines if cid not in hostile]


#: An LLM span's message holding a statement: a chain's record, a fence, bare text.
MESSAGES = {"chain": "SQLQuery: {}\nSQLResult: 5\nAnswer: 5", "fence": "```sql\n{}\n```\n5",
            "bare": "{}\n5"}


def _message_cases() -> tuple[dict[str, dict[str, Any]], list[str], list[str]]:
    lines: dict[str, dict[str, Any]] = {}
    multi = "MATCH (m:Movie)\nRETURN count(m)"
    for form, text in MESSAGES.items():
        lines[f"f5-{form}"] = {"spans": [*_recorded(R), probe.message_span(text.format(C))]}
        lines[f"honest-f5-{form}"] = {"spans": [*_recorded(multi),
                                                probe.message_span(text.format(multi))]}
    hostile = [cid for cid in lines if cid.startswith("f5-")]
    return lines, hostile, [cid for cid in lines if cid not in hostile]


def test_a_graph_call_merged_by_id_runs_the_same_text(pytester: pytest.Pytester) -> None:
    lines, hostile, honest = _merged_cases()
    report = probe.run_graph(pytester, lines)
    probe.assert_not_passed(report, hostile)
    probe.assert_hostile(report, hostile, outcomes=("failed",))
    assert {report.by_id[cid]["metrics"].get("write_attempts") for cid in hostile} == {1.0}
    probe.assert_honest(report, honest)


def test_a_span_output_is_a_counted_graph_query_only_with_its_line_breaks(
        pytester: pytest.Pytester) -> None:
    lines, hostile, honest = _output_cases()
    report = probe.run_graph(pytester, lines)
    probe.assert_verdicts(report, hostile, honest)


def test_a_counted_graph_query_is_taken_out_of_a_message_only_with_its_line_breaks(
        pytester: pytest.Pytester) -> None:
    lines, hostile, honest = _message_cases()
    report = probe.run_graph(pytester, lines)
    probe.assert_verdicts(report, hostile, honest)


def test_graph_texts_merge_only_when_equal_and_sql_texts_by_their_tokens() -> None:
    """The merge's text rule itself: a graph's texts (no SQL dialect) are the same only when
    equal; an SQL dialect's re-spaced between tokens still are (the nineteenth's M1)."""
    from pytest_queryeval.agents.beside import _same_text
    from pytest_queryeval.agents.runcopies import lined

    assert not _same_text(R, C, None)
    assert _same_text(COUNT, "MATCH (m:Movie)\n RETURN  count(m)", None)
    arrow = "MATCH (p:Person)-->(m:Movie) RETURN count(m)"
    assert _same_text(arrow, "MATCH (p:Person)-->(m:Movie)  RETURN  count(m)", None)
    assert not _same_text("MATCH (m {t: 'a  b'}) RETURN m", "MATCH (m {t: 'a b'}) RETURN m", None)
    assert not _same_text("MATCH (`a  b`) RETURN 1", "MATCH (`a b`) RETURN 1", None)
    assert _same_text("SELECT count(*)  FROM Genre", "SELECT count(*)\nFROM Genre", "sqlite")
    assert lined(R) != lined(C)
    assert lined(" a //x \t b\r\n c ") == "a //x b\nc"
    assert lined("- -x\nDELETE") != lined("--x DELETE")
    assert lined("SELECT count(*)\nFROM Genre") == "SELECT count(*) FROM Genre"
