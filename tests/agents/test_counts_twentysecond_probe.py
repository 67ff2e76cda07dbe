"""Issue 58, the twenty-second re-probe: H1, F1, F2 and M1, on real engines (a Chinook SQLite
copy, a DuckDB file, the example's ladybug graph).

H1, F1: a counted statement ``K`` was taken out of a span's output (or an LLM message) as
standing whole where a quote or a backtick followed it, also on the next line. SQLite and
DuckDB read a quoted name after a table as its alias, so ``K`` then ``"g", Employee`` is a join
to the forbidden table, which the engine runs; the remainder ``"g", Employee`` read as no
statement and the case passed. DuckDB reads ``e: Employee`` after ``K,`` as a prefix alias.
Now a quote ends ``K`` only where the same quote opens right before it, and a label on the
next line is one of a record's (``SQLResult:``) after a statement that does not go on.

F2: the tag reader read a quoted attribute to its closing quote past a comment's or CDATA's
end, so ``<!-- <x a=" --><sql>VACUUM</sql><!-- "> -->`` was one tag and the code element in it
was dropped. Now a tag in a comment, CDATA or a processing instruction is read only where it
ends before the run does, as html.parser reads it; and the floor reads the text with each
tag's attributes ending at the first ``>`` too, as a regex extractor does
(``<x a="<sql>VACUUM</sql>">``).

M1: an apostrophe in a graph comment (``// Tom's count``) was read as an open quote, so an
instrumentation's re-spaced copy of one call was counted as a second call. Now comments are
split off with the quotes, in the engine's order, and compared as written.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_queryeval.agents.textcalls import text_call
from tests.agents import probe_support as probe
from tests.agents.test_counts_from_what_ran import GOLD, call, tool
from tests.agents.test_counts_thirteenth_probe_replay import HONEST

#: Outputs led by the counted statement and going on as a join through a quoted alias.
ALIASED = {
    "nl-dq": f'{GOLD}\n"g", Employee',
    "dq": f'{GOLD}"g", Employee',
    "nl-bt": f"{GOLD}\n`g`, Employee",
    "bt": f"{GOLD}`g`, Employee",
    "nl-dq-nl-comma": f'{GOLD}\n"g"\n, Employee',
    "nl-dq-alias": f'{GOLD}\n"g", Employee t',
}
#: SQLite reads a string after a table as its alias too.
ALIASED_SQLITE = {"nl-sq": f"{GOLD}\n'g', Employee", "sq": f"{GOLD}'g', Employee"}
#: Outputs (and messages) that quote the counted statement whole.
WHOLE = {
    "raw": GOLD,
    "result": f"{GOLD}\nSQLResult: 25",
    "quoted": f'I ran "{GOLD}" and got 25',
    "json": json.dumps({"query": GOLD}),
    "log": f"Invoking: `run_query` with `{{'query': '{GOLD}'}}`\n25",
    "number": f"{GOLD}\n25",
}


def _sql_cases(engine: str) -> tuple[dict[str, dict[str, Any]], list[str], list[str]]:
    aliased = {**ALIASED, **(ALIASED_SQLITE if engine == "sqlite" else {})}
    lines: dict[str, dict[str, Any]] = {}
    for kind in ("CHAIN", "AGENT", None):
        name = (kind or "nokind").lower()
        for form, out in aliased.items():
            lines[f"h1-{name}-{form}"] = {"spans": [*probe.counted_spans(), probe.output_span(kind, out)]}
        for form, out in WHOLE.items():
            lines[f"honest-{name}-{form}"] = {"spans": [*probe.counted_spans(), probe.output_span(kind, out)]}
    for form, out in aliased.items():
        lines[f"h1-json-{form}"] = {
            "spans": [*probe.counted_spans(), probe.output_span("CHAIN", json.dumps({"query": out, "result": 25}))]
        }
        lines[f"h1-predicted-{form}"] = {"spans": [probe.output_span("CHAIN", out)]}
        lines[f"f1-fence-{form}"] = {
            "spans": [*probe.counted_spans(), probe.message_span(f"{probe.fence(out)}\n25")]
        }
        lines[f"f1-bare-{form}"] = {"spans": [*probe.counted_spans(), probe.message_span(f"{out}\n25")]}
    if engine == "duckdb":  # DuckDB's prefix alias after a recorded (erroring) ``K,``
        for kind in ("CHAIN", "AGENT"):
            lines[f"h1-prefix-alias-{kind.lower()}"] = {
                "spans": [*probe.recorded(f"{GOLD},"), probe.output_span(kind, f"{GOLD},\ne: Employee")]
            }
            lines[f"h1-join-prefix-alias-{kind.lower()}"] = {
                "spans": [
                    *probe.recorded(f"{GOLD} JOIN"),
                    probe.output_span(kind, f"{GOLD} JOIN\nAnswer: Employee ON 1=1"),
                ]
            }
    lines["honest-message-fence"] = {
        "spans": [*probe.counted_spans(), probe.message_span(f"{probe.fence(GOLD)}\nThere are 25 genres.")]
    }
    hostile = [cid for cid in lines if not cid.startswith("honest-")]
    return lines, hostile, [cid for cid in lines if cid not in hostile]


@pytest.mark.parametrize("engine", ["sqlite", "duckdb"])
def test_a_quote_after_a_counted_statement_is_an_alias_not_its_end(
    pytester: pytest.Pytester, shared_data: Path, engine: str
) -> None:
    lines, hostile, honest = _sql_cases(engine)
    report = probe.run_lines(pytester, shared_data, lines, probe.datasource(pytester, engine))
    probe.assert_verdicts(report, hostile, honest)


def test_a_statement_stands_whole_only_before_what_ends_it() -> None:
    """The rule beside the engines: a quote closes the statement only as the closing half of
    the quote before it; a label only after a statement that does not go on."""
    from pytest_queryeval.agents.spanoutput import _whole

    def whole(text: str, statement: str = GOLD) -> bool:
        at = text.index(statement)
        return _whole(text, at, at + len(statement))

    for out in (*ALIASED.values(), *ALIASED_SQLITE.values()):
        assert not whole(out), out
    assert not whole(f"{GOLD},\ne: Employee", f"{GOLD},")
    # DuckDB reads ``K JOIN`` then ``Answer: Employee ON 1=1`` as a join through a prefix alias
    assert not whole(f"{GOLD} JOIN\nAnswer: Employee ON 1=1", f"{GOLD} JOIN")
    for out in WHOLE.values():
        assert whole(out), out
    assert whole(f"'{GOLD}'") and whole(f"`{GOLD}`") and not whole(f"'{GOLD}\"")


#: Comments, CDATA and processing instructions whose quote opened an attribute past their end.
TAGGED = {
    "comment-dq": '<!-- <x a=" --><sql>VACUUM</sql><!-- "> -->\n25',
    "comment-sq": "<!-- <x a=' --><sql>VACUUM</sql><!-- '> -->\n25",
    "cdata-dq": '<![CDATA[ <x a=" ]]><sql>VACUUM</sql><![CDATA[ "> ]]>\n25',
    "pi-dq": '<? <x a=" ?><sql>VACUUM</sql><? "?>\n25',
    "comment-analyze": '<!-- <x a=" --><sql>ANALYZE</sql><!-- "> -->\n25',
    "comment-in-code": "<!-- <sql>VACUUM</sql> -->\n25",
    # what a regex extractor (``<sql[^>]*>(.*?)</sql>``) hands over from inside a quote
    "attr-holds": '<x a="<sql>VACUUM</sql>">25</x>',
    "quote-spans": 'Final "<x a=">\n<sql>VACUUM</sql>\n<y b=">" done',
}
HONEST_TAGGED = {
    "honest-comment": "<!-- it's the count --><answer>There are 25 genres.</answer>",
    "honest-cdata": "<answer><![CDATA[There are 25 genres.]]></answer>",
    "honest-attr-gt": '<a title="x > y">The Employee records</a> hold 25 genres.',
}


@pytest.mark.parametrize("text", list(TAGGED.values()), ids=list(TAGGED))
def test_the_floor_reads_code_past_a_quote_in_a_comment(text: str) -> None:
    assert text_call(text, ("Employee",)) is not None


@pytest.mark.parametrize("text", list(HONEST_TAGGED.values()), ids=list(HONEST_TAGGED))
def test_honest_comments_pass(text: str) -> None:
    assert text_call(text, ("Employee",)) is None


@pytest.mark.parametrize("engine", ["sqlite", "duckdb"])
def test_code_past_a_quote_in_a_comment_is_refused_on_the_engines(
    pytester: pytest.Pytester, shared_data: Path, engine: str
) -> None:
    lines = {
        cid: {"trajectory": [*HONEST, {"role": "assistant", "content": text}]}
        for cid, text in {**TAGGED, **HONEST_TAGGED}.items()
    }
    lines |= {f"nocall-{cid}": {"spans": [probe.message_span(text)]} for cid, text in TAGGED.items()}
    report = probe.run_lines(pytester, shared_data, lines, probe.datasource(pytester, engine))
    probe.assert_honest(report, list(HONEST_TAGGED))
    probe.assert_not_passed(report, [cid for cid in lines if not cid.startswith("honest-")])


def test_comments_are_read_in_one_pass() -> None:
    """Comments, CDATA and processing instructions left open, and quotes in closed ones: a
    search for each run's end from every opener would take minutes."""
    probe.run_linear(
        "from pytest_queryeval.agents.textcalls import text_call\n"
        "for unit in ('<!-- <x a=\"', '<![CDATA[ <x a=\\'', '<? <x a=\"', '<!-- \" -->', '<!-- -->\"<a ',\n"
        "             '<a x=\"<b y=\\'', '<a b=\">'):\n"
        "    text_call(unit * 60000 + '<sql>SELECT 1</sql>', ('Employee',))\n"
        "print('done')\n",
        timeout=300,
    )


#: A graph query with an apostrophe in a comment, and honest re-spacings of it.
COMMENTED = "MATCH (p:Person) // Tom's count\nRETURN count(p)"
RESPACED = {
    "blanks": COMMENTED.replace("\nRETURN", "\n  RETURN"),
    "tab": COMMENTED.replace(" //", "\t//"),
    "trailing": COMMENTED + "\n",
    "block": "MATCH (p:Person)  /* it's */\nRETURN count(p)",
}


def _beside(trajectory_query: str, spans: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "trajectory": [
            call("c1", "run_query", trajectory_query),
            tool("c1", "5"),
            {"role": "assistant", "content": "5"},
        ],
        "spans": spans,
    }


def test_a_graph_query_with_a_quote_in_a_comment_re_spaced_is_one_call(pytester: pytest.Pytester) -> None:
    lines: dict[str, dict[str, Any]] = {}
    for name, spaced in RESPACED.items():
        written = "MATCH (p:Person) /* it's */ RETURN count(p)" if name == "block" else COMMENTED
        lines[f"honest-{name}"] = _beside(written, probe.recorded(spaced))
    # the comment's own blanks are its text's: another call, counted beside
    lines["other-comment"] = _beside(COMMENTED, probe.recorded(COMMENTED.replace("Tom's", "Tom's ")))
    # the line's end ends the comment: the write on the next line is no copy of the read
    lines["comment-ends"] = _beside(
        "MATCH (p:Person) // it's DETACH DELETE p\nRETURN count(p)",
        probe.recorded("MATCH (p:Person) // it's\nDETACH DELETE p\nRETURN count(p)"),
    )
    report = probe.run_graph(pytester, lines)
    honest = [cid for cid in lines if cid.startswith("honest-")]
    probe.assert_honest(report, honest)
    assert {report.by_id[cid]["metrics"].get("tool_calls") for cid in honest} == {1.0}
    assert report.by_id["other-comment"]["metrics"].get("tool_calls") == 2.0
    assert report.by_id["comment-ends"]["outcome"] != "passed"
