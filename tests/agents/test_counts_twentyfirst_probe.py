"""Issue 58, the twenty-first re-probe: H1, H2, H3, F1, F2 and M1, on real engines (the example's
ladybug graph, a Chinook SQLite copy, a DuckDB file).

H1, H2, F1: the readers took every character ``str.splitlines`` reads (U+2028, ``\\v``,
``\\x85`` ...) for a line's end, where the graph engine's ``//`` and SQLite's ``--`` end at ``\\n``
(DuckDB's at ``\\r`` too). ``R`` = ``MATCH (m:Movie) //x`` U+2028 ``DETACH DELETE m`` then
``RETURN count(m)`` is a read (the write is in the comment), and ``C``, the same with ``\\n``,
deletes every movie; the two read alike, so a call id merged them (H1), a span's output of ``C``
was taken for the counted ``R`` (H2), and an LLM message's chain record of ``C`` too (F1). Now a
run of blanks holding anything but spaces and tabs is compared as written.

H3, F2: a counted statement was taken out of a span's output (or an LLM message) wherever it
stood, also as the head of a longer one: ``SELECT count(*) FROM Genre, Employee`` beside the
counted ``SELECT count(*) FROM Genre`` left ``, Employee``, read as no statement, and the engine's
read of the forbidden table passed. Now it is taken out only where it stands whole.

M1: a graph query holding a quote merged by call id only when equal, so an instrumentation
that re-spaced it counted one call twice. Now its quoted parts are compared as written and the
rest re-spaced.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.agents import probe_support as probe
from tests.agents.test_counts_from_what_ran import GOLD, call, duckdb_employees, llm_call, span, tool

#: What some reader took for a line's end and the engines (here) do not.
SEPARATORS = {"u2028": "\u2028", "vt": "\v", "x85": "\x85"}


def _read(sep: str) -> str:
    return f"MATCH (m:Movie) //x{sep}DETACH DELETE m\nRETURN count(m)"


C = _read("\n")


def _tool_span(cid: str, query: str, start: int = 2) -> dict[str, Any]:
    return span(
        "TOOL",
        f"t{start}",
        start,
        **{
            "tool.name": "run_query",
            "tool_call.id": cid,
            "input.value": json.dumps({"query": query}),
            "output.value": "5",
        },
    )


def _recorded(query: str) -> list[dict[str, Any]]:
    return [llm_call("l1", 1, "c1", query), _tool_span("c1", query)]


def _beside(trajectory_query: str, spans: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "trajectory": [
            call("c1", "run_query", trajectory_query),
            tool("c1", "5"),
            {"role": "assistant", "content": "5"},
        ],
        "spans": spans,
    }


def _graph_cases() -> tuple[dict[str, dict[str, Any]], list[str], list[str], list[str]]:
    merged: dict[str, dict[str, Any]] = {}
    unread: dict[str, dict[str, Any]] = {}
    honest: dict[str, dict[str, Any]] = {}
    for name, sep in SEPARATORS.items():
        read = _read(sep)
        merged[f"h1-{name}"] = _beside(read, _recorded(C))
        merged[f"h1-llm-only-{name}"] = _beside(read, [llm_call("l1", 1, "c1", C)])
        for kind in ("CHAIN", "AGENT"):
            unread[f"h2-{kind.lower()}-{name}"] = {"spans": [*_recorded(read), probe.output_span(kind, C)]}
            honest[f"honest-h2-{kind.lower()}-{name}"] = {
                "spans": [*_recorded(read), probe.output_span(kind, read)]
            }
        unread[f"h2-predicted-{name}"] = {"predicted": read, "spans": [probe.output_span("CHAIN", C)]}
        unread[f"f1-chain-{name}"] = {
            "spans": [*_recorded(read), probe.message_span(f"SQLQuery: {C}\nSQLResult: 5\nAnswer: 5")]
        }
        honest[f"honest-h1-{name}"] = _beside(read, _recorded(read))
    return {**merged, **unread, **honest}, list(merged), list(unread), list(honest)


def test_a_graph_text_is_a_counted_one_only_with_the_same_line_ends(pytester: pytest.Pytester) -> None:
    lines, merged, unread, honest = _graph_cases()
    report = probe.run_graph(pytester, lines)
    probe.assert_not_passed(report, merged + unread)
    probe.assert_hostile(report, merged, outcomes=("failed",))
    assert {report.by_id[cid]["metrics"].get("write_attempts") for cid in merged} == {1.0}
    probe.assert_hostile(report, unread, starts=probe.UNESTABLISHED)
    probe.assert_honest(report, honest)


#: A graph query with a quoted name, and honest re-spacings of it an instrumentation records.
QUOTED = "MATCH (p:Person {name: 'Tom Hanks'}) RETURN p.born"
RESPACED = {
    "blanks": QUOTED.replace(" RETURN", "  RETURN"),
    "newline": QUOTED.replace(" RETURN", "\nRETURN"),
    "tab": QUOTED.replace(" RETURN", "\tRETURN"),
    "trailing": QUOTED + "\n",
    "double-quoted": 'MATCH (p:Person {name: "Tom Hanks"})\nRETURN p.born',
    "label": "MATCH (p:`Person` {name: 'Tom Hanks'})  RETURN p.born",
}


def test_a_quoted_graph_query_re_spaced_outside_its_quotes_is_one_call(pytester: pytest.Pytester) -> None:
    lines: dict[str, dict[str, Any]] = {}
    for name, spaced in RESPACED.items():
        written = QUOTED if name not in ("double-quoted", "label") else " ".join(spaced.split())
        lines[f"honest-{name}"] = _beside(written, _recorded(spaced))
    lines["other-name"] = _beside(QUOTED, _recorded(QUOTED.replace("Tom Hanks", "Tom  Hanks")))
    report = probe.run_graph(pytester, lines)
    honest = [cid for cid in lines if cid.startswith("honest-")]
    probe.assert_honest(report, honest)
    assert {report.by_id[cid]["metrics"].get("tool_calls") for cid in honest} == {1.0}
    # a blank inside the quotes is the text's own: another call, counted beside
    assert report.by_id["other-name"]["metrics"].get("tool_calls") == 2.0


#: A span's output that reports a longer statement than the counted one, led by it.
LONGER = {
    "cross": f"{GOLD}, Employee",
    "cross-nospace": f"{GOLD},Employee",
    "alias": f"{GOLD} g, Employee",
    "next-line": f"{GOLD}\n, Employee",
    "json": json.dumps({"query": f"{GOLD}, Employee"}),
    "json-result": json.dumps({"query": f"{GOLD}, Employee", "result": 25}),
}
#: Outputs (and LLM messages) that quote the counted statement whole.
WHOLE = {
    "raw": GOLD,
    "json": json.dumps({"query": GOLD}),
    "chain": f"SQLQuery: {GOLD}\nSQLResult: [(25,)]\nAnswer: 25",
    "log": f"Invoking: `run_query` with `{{'query': '{GOLD}'}}`\n25",
    "statements": f"{GOLD};",
}
#: An LLM message holding a longer statement led by the counted one.
MESSAGES = {
    "fence": f"```sql\n{GOLD}, Employee\n```\n25",
    "bare": f"{GOLD}, Employee\n25",
    "log": f'Invoking: `run_query` with `{{"query": "{GOLD}, Employee"}}`',
}


def _sql_cases() -> tuple[dict[str, dict[str, Any]], list[str], list[str]]:
    lines: dict[str, dict[str, Any]] = {}
    for kind in ("CHAIN", "AGENT"):
        for name, out in LONGER.items():
            lines[f"h3-{kind.lower()}-{name}"] = {"spans": [*probe.counted_spans(), probe.output_span(kind, out)]}
        for name, out in WHOLE.items():
            lines[f"honest-{kind.lower()}-{name}"] = {
                "spans": [*probe.counted_spans(), probe.output_span(kind, out)]
            }
    for name, text in MESSAGES.items():
        lines[f"f2-{name}"] = {"spans": [*probe.counted_spans(), probe.message_span(text)]}
    lines["honest-message-fence"] = {
        "spans": [*probe.counted_spans(), probe.message_span(f"```sql\n{GOLD}\n```\nThere are 25 genres.")]
    }
    hostile = [cid for cid in lines if not cid.startswith("honest-")]
    return lines, hostile, [cid for cid in lines if cid not in hostile]


@pytest.mark.parametrize("engine", ["sqlite", "duckdb"])
def test_a_counted_statement_is_taken_out_of_an_output_only_where_it_stands_whole(
    pytester: pytest.Pytester, shared_data: Path, engine: str
) -> None:
    lines, hostile, honest = _sql_cases()
    report = probe.run_lines(pytester, shared_data, lines, probe.datasource(pytester, engine))
    probe.assert_verdicts(report, hostile, honest)


def test_a_span_output_ending_the_comment_at_another_character_is_no_counted_read(
    pytester: pytest.Pytester, shared_data: Path
) -> None:
    """DuckDB ends ``--`` at ``\\n`` or ``\\r``, not at ``\\v``: the recorded read's comment holds
    the ``DELETE`` that the output's text (``\\n`` for ``\\v``) runs."""
    duckdb_employees(pytester.path / "chinook.duckdb")
    read = f"{GOLD} --x\v; DELETE FROM Genre\n"
    copy = read.replace("\v", "\n")
    lines: dict[str, dict[str, Any]] = {
        f"h2-{kind.lower()}": {"spans": [*_recorded(read), probe.output_span(kind, copy)]}
        for kind in ("CHAIN", "AGENT")
    }
    lines["h2-predicted"] = {"predicted": read, "spans": [probe.output_span("CHAIN", copy)]}
    lines["honest-chain-crlf"] = {
        "spans": [*_recorded(f"{GOLD} --x\n"), probe.output_span("CHAIN", f"{GOLD} --x\r\n")]
    }
    report = probe.run_lines(pytester, shared_data, lines, {"type": "duckdb", "path": "chinook.duckdb"})
    probe.assert_verdicts(report, [cid for cid in lines if cid.startswith("h2-")], ["honest-chain-crlf"])


def test_the_text_rules_themselves() -> None:
    """The rules beside the engines: a line end is compared as written where a line comment
    may stand (``\\r\\n`` as ``\\n``), and a quote's own blanks are its text's."""
    from pytest_queryeval.agents.beside import _same_text
    from pytest_queryeval.agents.runcopies import lined

    for sep in (*SEPARATORS.values(), "\f", "\x1e", "\u2029", "\r"):
        assert not _same_text(_read(sep), C, None), repr(sep)
        assert lined(_read(sep)) != lined(C), repr(sep)
    assert _same_text("MATCH (m) //x\r\nDETACH DELETE m", "MATCH (m)  //x \n DETACH DELETE m", None)
    assert _same_text(QUOTED, RESPACED["newline"], None)
    assert not _same_text(QUOTED, QUOTED.replace("Tom Hanks", "Tom  Hanks"), None)
    assert not _same_text("MATCH (m) //it's\nRETURN m", "MATCH (m) //it's RETURN m", None)
    assert lined("a --x \t b \u2028 c") == "a --x b\u2028c"
