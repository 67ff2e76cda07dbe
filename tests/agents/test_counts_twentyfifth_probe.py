"""Issue 58, the twenty-fifth re-probe: H1, H2, H3 and M1, on real engines (a Chinook SQLite
copy and a DuckDB file).

H1: the blanks after a counted statement ``K`` were every blank to Python, and SQLite reads
U+2028, U+0085, U+00A0 or ``\\x1c`` as a name's (DuckDB some of them): ``K`` then ``\\u20281,
Employee`` on the next line is an alias and a join to the forbidden table, and the case passed
with ``forbidden_tables`` 0. H2, H3: ``;`` and a fence ended ``K`` wherever ``K`` ended, and a
number or a label after a ``K`` that ends in a comment: ``K --x`` then a vertical tab, ``;``
and ``, Employee`` (SQLite ends ``--`` only at ``\\n``), or ``K`` ending in an open ``'``, ``$a$``
or ``[`` then ``;`` or a fence and ``') t, Employee``, are one statement to the engine. Now
only both engines' blanks are blanks there, and ``K`` ends only outside every literal and
comment in both engines' own readers. M1: the twenty-fourth's fix refused a fence after ``K``
whenever any backtick followed, so honest records (two fenced queries, inline code later)
errored; now a fence ends ``K`` where what the engines read with it reads no other table.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tests.agents import probe_support as probe
from tests.agents.test_counts_from_what_ran import GOLD, call, span, tool
from tests.agents.test_counts_twentythird_probe import span_outputs

F = "Employee"
LC = f"{GOLD} --x"
BC = f"{GOLD} /* x"
SQ = f"{GOLD} g, (SELECT '"
BT = f"{GOLD} AS `"
BR = f"{GOLD} g, (SELECT 1 AS ["
DQ = f"{GOLD} g, (SELECT $a$"
NESTED = f"{GOLD} /* a /* b */"
QG = 'SELECT count(*) FROM "Genre"'
#: H1: a blank to Python only, before a number on the next line (or on K's own line).
BLANK_NAME = {
    "u2028": (GOLD, f"{GOLD}\n\u20281, {F}"),
    "x85": (GOLD, f"{GOLD}\n\x851, {F}"),
    "u1680": (GOLD, f"{GOLD}\n\u16801, {F} e"),
    "nbsp": (GOLD, f"{GOLD}\n\xa01, {F}"),
    "u3000": (GOLD, f"{GOLD}\n\u30001, {F}"),
    "u202f": (GOLD, f"{GOLD}\r\n\u202f1, {F}"),
    "x1c": (GOLD, f"{GOLD}\n\x1c1, {F}"),
    "x1f": (GOLD, f"{GOLD}\n\x1f1, {F}"),
    "qname-u2028": (QG, f"{QG}\u20281, {F}"),
    "alias-x85": (f"{GOLD} g", f"{GOLD} g\x851, {F}"),
}
#: H2: K ends in a comment the engines read on past the line end the reading saw.
COMMENT_END = {
    "lc-vt-semi": (LC, f"{LC}\v;\n, {F}"),
    "lc-u2028-num": (LC, f"{LC}\u20281\n, {F}"),
    "lc-x85-fence": (LC, f"{LC}\x85```\n, {F}"),
    "lc-ff-label": (LC, f"{LC}\fSQLResult: 25\n, {F}"),
    "lc-x1c-semi-where": (LC, f"{LC}\x1c;\n, {F} e WHERE e.rowid > 0"),
    "lc-cr-num": (LC, f"{LC}\r1\n, {F}"),
    "bc-fence": (BC, f"{BC}\n```\n*/, {F}"),
    "bc-semi": (BC, f"{BC}\n;\n*/, {F}"),
}
#: H3: K ends inside an open literal (an error alone, still a recorded call), then ``;`` or a
#: fence the engine reads as the literal's.
OPEN_LITERAL = {
    "sq-semi": (SQ, f"{SQ}\n;\n') t, {F}"),
    "sq-semi-sameline": (SQ, f"{SQ} ;\n') t, {F}"),
    "sq-fence": (SQ, f"{SQ}\n```\n') t, {F}"),
    "bt-semi": (BT, f"{BT}\n;\n`, {F}"),
    "br-fence": (BR, f"{BR}\n```\n]) t, {F}"),
    "dollar-fence": (DQ, f"{DQ}\n```\n$a$) t, {F}"),
    "nested-semi": (NESTED, f"{NESTED}\n;\n*/, {F}"),
    "nested-fence": (NESTED, f"{NESTED}\n```\n*/, {F}"),
}
HOSTILE = {**BLANK_NAME, **COMMENT_END, **OPEN_LITERAL}
NOTE = f"{GOLD} -- all genres"
#: Honest records: a number after K, a comment a line end closes in both engines.
ENDED = {
    "number": (GOLD, f"{GOLD}\n25"),
    "comment-result": (NOTE, f"{NOTE}\nSQLResult: 25"),
    "comment-crlf-number": (NOTE, f"{NOTE}\r\n25"),
    "semi": (GOLD, f"{GOLD};\n25"),
}
K2 = "SELECT count(*) FROM Album"
#: M1: honest texts that hold the counted ``GOLD`` and ``K2`` fenced, a backtick later.
FENCED = {
    "two-fences": f"```sql\n{GOLD}\n```\n25 genres.\n```sql\n{K2}\n```\n347",
    "fence-then-inline": f"```sql\n{GOLD}\n```\nThe `Genre` table has 25 rows.",
    "fence-then-inline-result": f"```sql\n{GOLD}\n```\nResult: `25`",
    "one-fence-twice": f"```sql\n{GOLD}\n```\n\n```\n25\n```",
    "bare-k-fence-result": f"{GOLD}\n```\n25\n```",
}
#: 24a H2's hostile fences, which must still be refused beside M1's honest ones.
FENCE_JOINS = {
    "fence": (GOLD, f"{GOLD}\n```\n`, {F}"),
    "fence-number": (GOLD, f"{GOLD}\n```\n25\n`, {F}"),
    "fence-sql": (GOLD, f"{GOLD}\n```sql\n`, {F}"),
    "fence-space": (GOLD, f"{GOLD}\n``` `, {F}"),
}


def _two_calls(kind: str | None, text: str) -> dict[str, Any]:
    spans = [*probe.recorded(GOLD, "l0", "c0", "t0"), *probe.recorded(K2, "l1", "c1", "t1", start=3)]
    return {"spans": [*spans, probe.output_span(kind, text)]}


def _fenced() -> dict[str, dict[str, Any]]:
    return {
        f"m1-{(kind or 'nokind').lower()}-{form}": _two_calls(kind, text)
        for form, text in FENCED.items()
        for kind in ("CHAIN", "AGENT", None)
    }


@pytest.mark.parametrize("engine", ["sqlite", "duckdb"])
def test_a_statement_ends_only_where_both_engines_end_it(
    pytester: pytest.Pytester, shared_data: Path, engine: str
) -> None:
    hostile = {**span_outputs("h", HOSTILE), **span_outputs("join", FENCE_JOINS)}
    honest = {**span_outputs("honest", ENDED), **_fenced()}
    report = probe.run_lines(pytester, shared_data, {**hostile, **honest}, probe.datasource(pytester, engine))
    probe.assert_verdicts(report, list(hostile), list(honest))


def test_the_rule_beside_the_engines() -> None:
    """Each hostile text is not taken for its statement, each honest one is; and SQLite (the
    real Chinook copy) runs the hostile texts that are SQLite's as a join to ``Employee``."""
    from pytest_queryeval.agents.spanoutput import _whole

    for ran, out in (*HOSTILE.values(), *FENCE_JOINS.values()):
        assert not _whole(out, 0, len(ran)), out
    for ran, out in ENDED.values():
        assert _whole(out, 0, len(ran)), out
    for text in FENCED.values():
        assert _whole(text, text.index(GOLD), text.index(GOLD) + len(GOLD)), text
    chinook = Path(__file__).parents[2] / "example_suite" / "data" / "chinook.sqlite"
    con = sqlite3.connect(f"file:{chinook}?mode=ro", uri=True)
    try:
        for form in (
            "u2028",
            "x85",
            "nbsp",
            "u3000",
            "u202f",
            "qname-u2028",
            "alias-x85",
            "lc-vt-semi",
            "lc-u2028-num",
            "lc-cr-num",
            "bc-fence",
            "sq-semi",
            "sq-fence",
            "bt-semi",
            "br-fence",
            "fence",
        ):
            out = {**HOSTILE, **FENCE_JOINS}[form][1]
            assert con.execute(out).fetchall() == [(200,)], form
    finally:
        con.close()


def test_duckdb_reads_the_same_joins() -> None:
    """DuckDB (an in-memory copy of the two tables' sizes) runs its hostile texts as the join."""
    duckdb = pytest.importorskip("duckdb")
    con = duckdb.connect()
    con.execute("CREATE TABLE Genre AS SELECT range AS GenreId FROM range(25)")
    con.execute("CREATE TABLE Employee AS SELECT range AS EmployeeId FROM range(8)")
    for form in (
        "u2028",
        "x85",
        "x1c",
        "x1f",
        "lc-vt-semi",
        "lc-x85-fence",
        "sq-semi",
        "sq-semi-sameline",
        "bt-semi",
        "dollar-fence",
        "nested-semi",
        "nested-fence",
        "fence",
    ):
        out = {**HOSTILE, **FENCE_JOINS}[form][1].replace(" e WHERE e.rowid > 0", "")
        assert con.execute(out).fetchall() == [(200,)], form
    con.close()


#: F6: the model's text under other spellings of its role (and the user's, still not the model's).
WRITTEN = {
    "delete": "I ran:\n```sql\nDELETE FROM Genre\n```",
    "forbidden": f"I ran:\n```sql\nSELECT count(*) FROM {F}\n```",
    "chain": "SQLQuery: DELETE FROM Genre\nSQLResult: []",
}
MODEL_ROLES = {
    "model": "model",
    "ai": "ai",
    "assistant-blank": "assistant ",
    "aimessage": "AIMessage",
    "empty": "",
}


def _history(role: str, content: str) -> dict[str, Any]:
    """An LLM span whose prompt history holds ``content`` under ``role``."""
    past, out = "llm.input_messages.0.message.", "llm.output_messages.0.message."
    return span(
        "LLM",
        "p1",
        3,
        **{
            past + "role": role,
            past + "content": content,
            out + "role": "assistant",
            out + "content": "25 genres.",
        },
    )


def test_the_models_text_under_any_role_spelling_is_searched(
    pytester: pytest.Pytester, shared_data: Path
) -> None:
    ran = probe.recorded(GOLD)
    answer = tool("c1", "25")
    gold_call = call("c1", "run_query", GOLD)
    hostile: dict[str, dict[str, Any]] = {}
    for rk, role in MODEL_ROLES.items():
        for wk, text in WRITTEN.items():
            hostile[f"history-{rk}-{wk}"] = {"spans": [*ran, _history(role, text)]}
            hostile[f"traj-{rk}-{wk}"] = {"trajectory": [gold_call, answer, {"role": role, "content": text}]}
    honest = {
        "history-user": {"spans": [*ran, _history("user", WRITTEN["forbidden"])]},
        "history-system": {"spans": [*ran, _history("system", WRITTEN["delete"])]},
        "traj-human": {
            "trajectory": [{"role": "HumanMessage", "content": WRITTEN["delete"]}, gold_call, answer]
        },
    }
    report = probe.run_lines(pytester, shared_data, {**hostile, **honest})
    probe.assert_verdicts(report, list(hostile), list(honest))


#: F4: a statement only in the model's text, a blank to Python that the engines read as a
#: name's between an alias and a number: ``g\x851`` is one alias, then a join to ``Employee``.
NAMELIKE = {
    "x85": "\x85",
    "u2028": "\u2028",
    "u1680": "\u1680",
    "nbsp": "\xa0",
    "u3000": "\u3000",
    "x1c": "\x1c",
}


@pytest.mark.parametrize("engine", ["sqlite", "duckdb"])
def test_a_blank_the_engines_read_as_a_name_is_read_so_by_the_floor(
    pytester: pytest.Pytester, shared_data: Path, engine: str
) -> None:
    hostile: dict[str, dict[str, Any]] = {}
    for bk, blank in NAMELIKE.items():
        for tk, text in {"g": f"{GOLD} g{blank}1, {F}", "as": f"{GOLD} AS g{blank}1, {F}"}.items():
            hostile[f"text-{tk}-{bk}"] = probe.after([], f"I ran:\n{text}\nIt returned 200.", "200")
            hostile[f"fenced-{tk}-{bk}"] = {
                "trajectory": [{"role": "assistant", "content": probe.fence(text)}]
            }
    honest = {"prose-nbsp": probe.after([], f"I counted the genres with {GOLD}\xa0and got 25.", "25")}
    report = probe.run_lines(pytester, shared_data, {**hostile, **honest}, probe.datasource(pytester, engine))
    probe.assert_verdicts(report, list(hostile), list(honest))


def test_the_engines_reading_after_many_fences_is_linear() -> None:
    """Many counted statements before a fence, with ``;`` the reading tries as the statement's
    end: a reading per place over the rest of the text takes minutes at this length, a bounded
    one well under a second."""
    probe.run_linear(
        "from pytest_queryeval.agents.runcopies import RunCopies\n"
        "from pytest_queryeval.agents.spanoutput import _Search\n"
        "K = 'SELECT count(*) FROM Genre'\n"
        "for unit in (K + '\\n```\\n;', K + '\\n```\\n`;', K + '\\n```\\n', K + '\\n```\\n' + ';' * 4000 + '\\n'):\n"
        "    search = _Search(set(), {K}, [10**6], ['Employee'], RunCopies([]))\n"
        "    search.without_known_lines(unit * (2_000_000 // len(unit)))\n"
        "print('done')\n",
        timeout=120,
    )
