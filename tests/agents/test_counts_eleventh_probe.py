"""Issue 58, the eleventh hostile re-probe (H2, H3): statement texts of another tool's argument
that passed ``write_attempts: {max: 0}`` with a count of 0, though the engines run them.

H2: a write behind an invisible or empty head (``/**/;DELETE FROM Genre``: SQLite and DuckDB
run it; ``\\ufeffDELETE``: both run it; ``\\u200bDELETE``, ``\\u2060DELETE``: DuckDB runs
them). The statement reader skipped blanks and comments before a head, but a format character
(Unicode category Cf) is no blank, and an empty first ``;``-part was not a statement's word.
H3: on ladybug, a setting of the connection (``CALL threads=1``) and DDL (``CREATE NODE
TABLE``, ``CREATE REL TABLE``, ``CHECKPOINT``), which ladybug runs, were neither a pattern
clause nor a write word. Each is now a write attempt, in every place an agent record holds
it: another tool's argument (plain, nested, JSON in a string), a query-named tool judged on
its text (``execute_sql``), ``run_query`` (replayed: the execution layer), and the swept
places (``sql_log``, a CHAIN span's ``db.statement``), which leave the counts not
established. On a real Chinook SQLite copy, a DuckDB file and the example's ladybug graph."""

from __future__ import annotations

import json
import re
import sys
import unicodedata
from pathlib import Path
from typing import Any

import pytest

from tests.agents.test_counts_fail_closed import HONEST, _honest, one
from tests.agents.test_counts_from_what_ran import DELETE, GOLD, _file_suite
from tests.agents.test_counts_ninth_probe import UNESTABLISHED, _span
from tests.agents.test_counts_not_established import call
from tests.agents.test_counts_tenth_probe import COUNT, _datasource, _graph_suite
from tests.support import run_report

#: H2: writes behind an invisible or empty head.
HIDDEN = {"empty-part": "/**/;DELETE FROM Genre", "bom": "\ufeffDELETE FROM Genre",
          "zwsp": "\u200bDELETE FROM Genre", "word-joiner": "\u2060DELETE FROM Genre",
          "soft-hyphen": "\u00adDELETE FROM Genre",
          "comment-part": "-- note\n;\u200b/* x */;DELETE FROM Genre"}
#: Prose, some behind a format character: not a statement, before and after.
PROSE = ["set up sqlite, then delete from the cache", "\ufeffshow me the tables",
         "\u200bdescribe the data", "/**/; use the Genre table", "checkpoint", "Begin"]
tool = {"role": "tool", "tool_call_id": "b", "content": "ok"}
#: Where a record holds the text: another tool's argument (plain, nested, JSON in a string),
#: a query-named tool no replay runs, ``run_query`` (replayed), and the swept places.
PLACES = ["other-tool", "nested", "json-in-text", "execute_sql", "run_query", "sql_log",
          "chain-span"]
SWEPT_PLACES = ("sql_log", "chain-span")


def place_line(place: str, text: str, gold: str, other: str) -> dict[str, Any]:
    """One record holding ``text`` at ``place`` beside an honest call of ``gold``."""
    if place == "sql_log":
        return {"trajectory": one(gold), "sql_log": [text]}
    if place == "chain-span":
        honest = _span("TOOL", "s0", 1, **{"tool.name": "run_query", "output.value": "25",
                                           "input.value": json.dumps({"query": gold})})
        return {"spans": [honest, _span("CHAIN", "s1", 2, **{"db.statement": text})]}
    if place == "run_query":
        return {"trajectory": [*one(gold), *one(text, cid="b")]}
    held = {"other-tool": (other, {"input": text}),
            "nested": (other, {"args": {"steps": [{"input": text}]}}),
            "json-in-text": (other, {"payload": json.dumps({"input": text})}),
            "execute_sql": ("execute_sql", {"sql": text})}[place]
    return {"trajectory": [*one(gold), call("b", *held), tool]}


def _outcomes(report: Any, cids: list[str]) -> dict[str, tuple[str, object]]:
    return {cid: (report.by_id[cid]["outcome"], report.by_id[cid]["metrics"].get(
        "write_attempts") if report.by_id[cid]["outcome"] != "error" else
        (report.by_id[cid].get("error") or "").startswith(UNESTABLISHED)) for cid in cids}


def _expected(cids: list[str]) -> dict[str, tuple[str, object]]:
    return {cid: ("error", True) if cid.split(":")[0] in SWEPT_PLACES else ("failed", 1.0)
            for cid in cids}


@pytest.mark.parametrize("engine", ["sqlite", "duckdb"])
def test_a_write_behind_an_invisible_or_empty_head_counts_everywhere(
        pytester: pytest.Pytester, shared_data: Path, engine: str) -> None:
    lines = {f"{place}:{form}": place_line(place, text, GOLD, "duckdb")
             for form, text in {**HIDDEN, "control-delete": DELETE}.items() for place in PLACES}
    prose = {f"prose-{i}": {"trajectory": [*one(GOLD), call("b", "search_docs", {"q": text}),
                                           tool]} for i, text in enumerate(PROSE)}
    _file_suite(pytester, shared_data, {**lines, **prose, **HONEST},
                _datasource(pytester, engine))
    _, report = run_report(pytester, "-p", "no:cacheprovider")
    got = _outcomes(report, list(lines))
    assert got == _expected(list(lines)), \
        {c: (got[c], report.by_id[c].get("error")) for c in got if got[c] != _expected([c])[c]}
    assert {report.by_id[c]["outcome"] for c in prose} == {"passed"}, \
        {c: report.by_id[c].get("error") or report.by_id[c]["metrics"] for c in prose}
    _honest(report)


#: H3: ladybug's settings and DDL, and the ladybug forms of H2.
LADYBUG = {"threads": "CALL threads=1", "timeout": "CALL timeout=1",
           "backquoted": "CALL `var_length_extend_max_depth`=2",
           "zone-map": "CALL enable_zone_map=false",
           "rel-table": "CREATE REL TABLE R(FROM Person TO Person)",
           "node-table": "CREATE NODE TABLE X(id INT64, PRIMARY KEY(id))",
           "node-table-if": "CREATE NODE TABLE IF NOT EXISTS X(id INT64, PRIMARY KEY(id))",
           "checkpoint": "CHECKPOINT",
           "bom-call": "\ufeffCALL threads=1", "empty-part-call": "/**/;CALL timeout=1",
           "zwsp-create": "\u200bCREATE NODE TABLE X(id INT64, PRIMARY KEY(id))"}


def test_a_ladybug_setting_or_ddl_counts_everywhere(pytester: pytest.Pytester) -> None:
    lines = {f"{place}:{form}": place_line(place, text, COUNT, "kuzu")
             for form, text in {**LADYBUG, "control-delete": "MATCH (n:Person) DETACH DELETE n"
                                }.items() for place in PLACES}
    honest = {"honest-read": {"trajectory": [*one(COUNT), call("b", "kuzu", {
        "input": "MATCH (p:Person) RETURN p.name LIMIT 2"}), tool]},
              "honest-prose": {"trajectory": [*one(COUNT), call("b", "search_docs", {
                  "q": "how do I call threads in ladybug, and create node tables"}), tool]},
              "honest": {"trajectory": one(COUNT)}}
    _graph_suite(pytester, {**lines, **honest})
    _, report = run_report(pytester, "-p", "no:cacheprovider")
    got = _outcomes(report, list(lines))
    assert got == _expected(list(lines)), \
        {c: (got[c], report.by_id[c].get("error")) for c in got if got[c] != _expected([c])[c]}
    assert {c: report.by_id[c]["outcome"] for c in honest} == dict.fromkeys(honest, "passed"), \
        {c: report.by_id[c].get("error") for c in honest}


def test_every_format_character_is_skipped_before_a_head() -> None:
    """The list of format characters is Unicode's category Cf, every one of them: each
    before a head is nothing, before prose still prose."""
    from pytest_queryeval.agents.lead import FORMAT_CHARS
    from pytest_queryeval.agents.statements import statement_text
    from pytest_queryeval.agents.sweep import reads_as_sql

    chars = [chr(c) for c in range(sys.maxunicode + 1) if unicodedata.category(chr(c)) == "Cf"]
    listed = re.compile(f"[{FORMAT_CHARS}]")
    assert [hex(ord(c)) for c in chars if not listed.fullmatch(c)] == []
    missed = [hex(ord(c)) for c in chars
              if not (statement_text(c + DELETE) and statement_text(c + "CALL threads=1")
                      and reads_as_sql(c + "VACUUM INTO 'x'"))]
    assert missed == []
    assert [statement_text(c + "set up sqlite, then delete from the cache") for c in chars[:8]] \
        == [False] * 8
    assert json.dumps(FORMAT_CHARS)  # one text, usable in a character class
