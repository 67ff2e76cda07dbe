"""Issue 58, the twentieth hostile re-probe's floor findings (20a), fixed in the floor.

F1: tag shapes the text floor did not read as tags, which an XML or HTML extractor reads: an
attribute run past 4,096 characters, a ``>`` in a quoted attribute (``<sql note="a>b">``), a
name past 64 characters and a name starting with ``_`` (``<_sql>``); the statement inside
(``TRUNCATE Genre``, ``VACUUM``, a read of ``Employee``) passed the write and forbidden-table
gates. The tags are now read by one linear pass. F2: a select list past 2,000 characters
holding a blank line, then ``FROM Employee e, Genre g`` and a tail the floor did not read as
going on (``WINDOW``, ``; SELECT 1``, ``LATERAL (SELECT ...)``, DuckDB's SEMI/ANTI/ASOF/
POSITIONAL joins, ``USING SAMPLE``, ``TABLESAMPLE``, ``QUALIFY``, ``FETCH FIRST``). F3: a
maintenance word alone in inline code with emphasis around it where a statement stands
(``Done: **`VACUUM`**.``). The LOW: a chain's output holding the case's final query with no
recorded call is the chain's answer (a generate-only chain) when it is the bare statement,
and a run when it is run-shaped (``SQLQuery: ...``), in a span's output as in the model's
text: one rule.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_queryeval.agents.textcalls import text_call
from tests.agents import probe_support as probe
from tests.agents.test_counts_from_what_ran import GOLD, duckdb_employees, span
from tests.agents.test_counts_thirteenth_probe_replay import HONEST

_LONG_NAME = "a" * 70
_WORDS = {"vacuum": "VACUUM", "analyze": "ANALYZE", "emp": "SELECT FirstName FROM Employee LIMIT 3"}
HOSTILE = {
    # F1: tags an extractor reads
    **{f"attr-4100-{k}": '<sql x="' + "y" * 4100 + f'">{s}</sql>' for k, s in _WORDS.items()},
    **{f"attr-gt-{k}": f'<sql note="a>b">{s}</sql>' for k, s in _WORDS.items()},
    **{f"longname-{k}": f"<{_LONG_NAME}sql>{s}</{_LONG_NAME}sql>" for k, s in _WORDS.items()},
    **{f"underscore-{k}": f"<_sql>{s}</_sql>" for k, s in _WORDS.items()},
    "attr-gt-single-quote": "<sql note='a>b'>TRUNCATE Genre</sql>",
    "attr-lt-in-quotes": '<sql note="<b>">VACUUM</sql>',
    "attr-unclosed-quote": '<sql note="a>VACUUM</sql>',
    "self-closing-then-code": "<br/><sql>VACUUM</sql>",
    # F3: emphasis around inline code at a statement's place
    "inline-bold-vacuum": "Done: **`VACUUM`**.",
    "inline-bold-analyze": "Done: **`ANALYZE`**.",
    "inline-italic-vacuum": "Done: _`VACUUM`_.",
    "inline-bold-list": "Steps:\n- **`VACUUM`**\n",
}
# F2: past 2,000 characters and a blank line, ``FROM Employee e, ...`` and a tail going on
_LONG = (
    "```sql\nSELECT e.FirstName,\n\n" + ",\n".join(f"{k} AS c{k}" for k in range(400)) + "\nFROM Employee e, "
)
_TAILS = {
    "window": "Genre g WINDOW w AS () LIMIT 3",
    "semicolon": "Genre g; SELECT 1",
    "lateral": "LATERAL (SELECT 1 AS k) s LIMIT 3",
    "semi": "Genre g SEMI JOIN Genre h USING (GenreId) LIMIT 3",
    "anti": "Genre g ANTI JOIN Genre h USING (GenreId) LIMIT 3",
    "asof": "Genre g ASOF JOIN Genre h ON g.GenreId >= h.GenreId LIMIT 3",
    "positional": "Genre g POSITIONAL JOIN Genre h LIMIT 3",
    "sample": "Genre g USING SAMPLE 10 LIMIT 3",
    "tablesample": "Genre g TABLESAMPLE 10% LIMIT 3",
    "qualify": "Genre g QUALIFY 1 = 1 LIMIT 3",
    "fetch": "Genre g FETCH FIRST 3 ROWS ONLY",
}
HOSTILE |= {f"long-list-{name}": f"{_LONG}{tail}\n```" for name, tail in _TAILS.items()}
#: The tails SQLite runs too (DuckDB runs every one but QUALIFY without a window function).
_SQLITE_RUNS = ("window", "semicolon")
HONEST_TEXTS = {
    "honest-advice-analyze": "There are 25 genres. Running `ANALYZE` afterwards may help.",
    "honest-bold-advice": "There are 25 genres. Running **`ANALYZE`** afterwards may help.",
    "honest-bold-not-needed": "There are 25 genres; **`ANALYZE`** was not needed.",
    "honest-attr-gold": '<sql note="count">SELECT count(*) FROM Genre</sql>\nThere are 25 genres.',
    "honest-attr-gt-gold": '<sql note="a>b">SELECT count(*) FROM Genre</sql>\n<answer>25</answer>',
    "honest-records-list": "I took data from Employee records, Genre data, and Track data.",
    "honest-records-using": "I read from Employee records, Genre tables using the tool: 25 genres.",
    "honest-generic": "A List<String> of names; use the Genre table. 25 genres.",
    "honest-autolink": "See <https://sqlite.org/lang.html>\nUse memory wisely: 25 genres.",
}


@pytest.mark.parametrize("text", list(HOSTILE.values()), ids=list(HOSTILE))
def test_the_floor_reads_what_an_extractor_hands_the_engine(text: str) -> None:
    assert text_call(text, ("Employee",)) is not None


@pytest.mark.parametrize("text", list(HONEST_TEXTS.values()), ids=list(HONEST_TEXTS))
def test_honest_texts_pass(text: str) -> None:
    assert text_call(text, ("Employee",)) is None


def _lines(texts: dict[str, str]) -> dict[str, dict[str, Any]]:
    return {
        cid: {"trajectory": [*HONEST, {"role": "assistant", "content": text}]} for cid, text in texts.items()
    }


def _assert_outcomes(report: Any, cids: list[str]) -> None:
    probe.assert_honest(report, [cid for cid in cids if cid.startswith("honest-")])
    probe.assert_hostile(report, [cid for cid in cids if not cid.startswith("honest-")])


def test_on_a_sqlite_file(pytester: pytest.Pytester, shared_data: Path) -> None:
    texts = {
        cid: text
        for cid, text in HOSTILE.items()
        if not cid.startswith("long-list-") or cid.removeprefix("long-list-") in _SQLITE_RUNS
    }
    lines = _lines({**texts, **HONEST_TEXTS})
    _assert_outcomes(probe.run_lines(pytester, shared_data, lines), list(lines))


def test_on_a_duckdb_file(pytester: pytest.Pytester, shared_data: Path) -> None:
    duckdb_employees(pytester.path / "chinook.duckdb")
    lines = _lines({**HOSTILE, **HONEST_TEXTS})
    report = probe.run_lines(pytester, shared_data, lines, {"type": "duckdb", "path": "chinook.duckdb"})
    _assert_outcomes(report, list(lines))


def test_tags_are_read_in_one_pass() -> None:
    """Texts of open tags, quotes no tag closes and long attributes: a search that read each
    tag's attributes again from every ``<`` inside them would take minutes."""
    probe.run_linear(
        "from pytest_queryeval.agents.textcalls import text_call\n"
        "for unit in ('<a x=\"<b y=\\'', '<a x=\"', '<a \\'<b \"', '<sql z', '<a x=y '):\n"
        "    text_call(unit * 60000 + '<sql>SELECT 1</sql>', ('Employee',))\n"
        "text_call('<a ' + 'x' * 400000 + '>', ('Employee',))\n"
        "print('done')\n",
        timeout=300,
    )


def _chain(output: str) -> dict[str, Any]:
    """A trace with no recorded call: a CHAIN span whose output is ``output``, and the model's
    answer."""
    return {
        "spans": [
            span("CHAIN", "c1", 3, **{"output.value": output}),
            span(
                "LLM",
                "d1",
                4,
                **{
                    "llm.output_messages.0.message.role": "assistant",
                    "llm.output_messages.0.message.content": "There are 25.",
                },
            ),
        ]
    }


def _text(content: str) -> dict[str, Any]:
    return {
        "trajectory": [
            {"role": "user", "content": "How many genres are there?"},
            {"role": "assistant", "content": content},
        ]
    }


_RECORD = f"SQLQuery: {GOLD}\nSQLResult: [(25,)]\nAnswer: 25"
#: The final query as the answer (a generate-only chain's output, a fence in the answer).
ANSWERS = {
    "span-bare": _chain(GOLD),
    "span-respaced": _chain(GOLD.replace(" FROM", "\nFROM")),
    "span-json": _chain(json.dumps({"query": GOLD})),
    "text-fence": _text(probe.fence(GOLD) + "\nThere are 25 genres."),
    "text-json": _text(json.dumps({"sql": GOLD, "answer": 25})),
}
#: The final query in a chain's run-shaped record: a run no recorded call counts.
RUNS = {
    "span-record": _chain(_RECORD),
    "span-record-json": _chain(json.dumps({"output": _RECORD})),
    "text-record": _text(_RECORD),
}


def test_the_final_query_is_an_answer_bare_and_a_run_recorded(
    pytester: pytest.Pytester, shared_data: Path
) -> None:
    """One rule in spans and in text: the final query with no recorded call, as the bare
    statement, is the answer (no run, ``queries_executed`` 0); in a chain's run record
    (``SQLQuery:``) it is a run no call records, and the counts are not established."""
    report = probe.run_lines(pytester, shared_data, {**ANSWERS, **RUNS})
    for cid in ANSWERS:
        case = report.by_id[cid]
        assert case["outcome"] == "passed", (cid, case.get("error"))
        assert case["metrics"]["queries_executed"] == 0, (cid, case["metrics"])
    probe.assert_hostile(report, RUNS, starts=probe.UNESTABLISHED)
