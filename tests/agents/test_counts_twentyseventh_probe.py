"""Issue 58, the twenty-seventh re-probe: H1 to H4, M1, F1, F2 and F4, on real engines (a
Chinook SQLite copy and DuckDB files, one with a sequence).

H1: the fence after a counted statement ``K`` was judged on a text whose blank runs were
rewritten: ``e``, U+2028, a space, ``WHERE 1`` (an alias, then ``WHERE``) lost its space and
read as one name, a syntax error to both engines, so ``K`` then a fence then `` `, Employee
e<U+2028> WHERE 1`` (a join the engines run) was taken for ``K`` and passed with
``forbidden_tables`` 0. H2, H3: a DuckDB call sqlglot cannot parse (a blob literal ``x'AB'``, a
backtick name) was checked on its tokens, which knew no function with effects nor table
reader: ``checkpoint()`` and ``pragma_storage_info('Employee')`` passed uncounted. H4: a lone
surrogate or a NUL after a fenced ``K`` and a later ``;`` raised out of the span reading. M1:
an honest ``~~~sql`` fence errored. F1, F2: ``IN 'Employee'`` and ``VALUES((...) IN Employee)``
in the model's text escaped the floor; F4: so did ``IN Employee`` after a fence the engines
read on, in a trajectory's text.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from tests.agents import probe_support as probe
from tests.agents.test_counts_from_what_ran import GOLD, call, tool
from tests.agents.test_counts_twentyfifth_probe import FENCED, _fenced
from tests.agents.test_counts_twentysixth_probe import ALIASED, IN_TABLE, KR, R15, _duckdb_with_sequence
from tests.agents.test_counts_twentythird_probe import span_outputs

F = "Employee"
#: H1: after the fence, a join whose alias ends in a blank only Python reads, then a space.
MERGED = {
    "u2028-where": (GOLD, f"{GOLD}\n```\n`, {F} e\u2028 WHERE 1"),
    "x85-where": (GOLD, f"{GOLD}\n```\n`, {F} e\x85 WHERE 1"),
    "u2028-tab-where": (GOLD, f"{GOLD}\n```\n`, {F} e\u2028\t\tWHERE 1"),
}
#: H1 on SQLite only (DuckDB reads U+00A0 and U+3000 as blanks, and rejects ``NOT INDEXED``).
MERGED_SQLITE = {
    "nbsp-notindexed": (GOLD, f"{GOLD}\n```\n`, {F} AS e\u00a0 NOT INDEXED"),
    "ideo-notindexed": (GOLD, f"{GOLD}\n```\n`, {F} AS e\u3000 NOT INDEXED"),
}
#: H1 on DuckDB: a file's read after the fence.
MERGED_DUCKDB = {"u2028-read-text": (KR, f"{KR}\n```\n`, read_text('notes.txt') f\u2028 WHERE 1")}
#: M1: an honest record in a tilde fence.
TILDE = {
    "tilde-result": (GOLD, f"~~~sql\n{GOLD}\n~~~\n25"),
    "tilde-prose": (GOLD, f"~~~sql\n{GOLD}\n~~~\nThere are 25 genres."),
}


@pytest.mark.parametrize("engine", ["sqlite", "duckdb"])
def test_the_fence_is_judged_on_the_tokens_the_engines_read(
    pytester: pytest.Pytester, shared_data: Path, engine: str
) -> None:
    merged = {**MERGED, **(MERGED_SQLITE if engine == "sqlite" else MERGED_DUCKDB)}
    hostile = span_outputs("h1", merged)
    honest = {**span_outputs("honest", {**ALIASED, **TILDE}), **_fenced()}
    datasource = _duckdb_with_sequence(pytester) if engine == "duckdb" else None
    report = probe.run_lines(pytester, shared_data, {**hostile, **honest}, datasource)
    probe.assert_verdicts(report, list(hostile), list(honest))


def assert_taken_out(hostile: Iterable[tuple[str, str]],
                     honest: Iterable[tuple[str, str]]) -> None:
    """The span reader on the tokens the engines read (``runcopies.tokens_kept``): no
    ``hostile`` output (the statement that ran, the output) is taken for its statement whole;
    each ``honest`` one, and each fenced record of :data:`FENCED`, is."""
    from pytest_queryeval.agents.runcopies import tokens_kept
    from pytest_queryeval.agents.spanoutput import _whole

    for ran, out in hostile:
        assert not _whole(tokens_kept(out), 0, len(ran)), out
    for ran, out in honest:
        text = tokens_kept(out)
        assert _whole(text, text.index(ran), text.index(ran) + len(ran)), out
    for text in FENCED.values():
        assert _whole(text, text.index(GOLD), text.index(GOLD) + len(GOLD)), text


def test_the_rule_beside_the_engines() -> None:
    """Each H1 text is not taken for its statement, each honest one (a tilde fence too) is;
    SQLite (the real Chinook copy) runs the SQLite texts and reads ``Employee`` in them."""
    assert_taken_out((*MERGED.values(), *MERGED_SQLITE.values(), *MERGED_DUCKDB.values()),
                     (*ALIASED.values(), *TILDE.values()))
    chinook = Path(__file__).parents[2] / "example_suite" / "data" / "chinook.sqlite"
    con = sqlite3.connect(f"file:{chinook}?mode=ro", uri=True)
    try:
        for _, out in (*MERGED.values(), *MERGED_SQLITE.values()):
            assert con.execute(out).fetchall() == [(200,)], out
            with pytest.raises(sqlite3.OperationalError, match="no such table: Nosuch"):
                con.execute(out.replace(F, "Nosuch"))
    finally:
        con.close()


#: H2, H3 (DuckDB): calls sqlglot's DuckDB grammar cannot parse, with a write or a read of a
#: table by name; and the metric each must count.
UNPARSED = {
    "xab-checkpoint": ("SELECT x'AB', * FROM checkpoint()", "write_attempts"),
    "b01-checkpoint": ("SELECT b'01', * FROM checkpoint()", "write_attempts"),
    "bom-checkpoint": ("SELECT \ufeff* FROM checkpoint()", "write_attempts"),
    "backtick-checkpoint": ("SELECT * FROM checkpoint() AS `c`", "write_attempts"),
    "xab-quoted-checkpoint": ('SELECT x\'AB\', * FROM "checkpoint"()', "write_attempts"),
    "fence-checkpoint": (f"{KR}\n```\n`, checkpoint() c\u2028 WHERE 1", "write_attempts"),
    "xab-nextval": ("SELECT x'AB', nextval('s')", "write_attempts"),
    "xab-storage": (f"SELECT x'AB', * FROM pragma_storage_info('{F}')", "forbidden_tables"),
    "backtick-storage": (f"SELECT * FROM pragma_storage_info('{F}') `p`", "forbidden_tables"),
}
#: Calls sqlglot cannot parse that read only what they name: run and passed.
UNPARSED_HONEST = {
    "xab": "SELECT x'AB'",
    "backtick-alias": f"{GOLD} `g`",
}


def test_a_call_sqlglot_cannot_parse_is_refused_for_what_it_calls(
    pytester: pytest.Pytester, shared_data: Path
) -> None:
    datasource = _duckdb_with_sequence(pytester)
    lines = {
        f"h23-{form}": {"trajectory": [call("c1", "run_query", sql), tool("c1", "25")]}
        for form, (sql, _) in UNPARSED.items()
    }
    honest = {
        f"honest-{form}": {"trajectory": [call("c1", "run_query", sql), tool("c1", "25")]}
        for form, sql in UNPARSED_HONEST.items()
    }
    report = probe.run_lines(pytester, shared_data, {**lines, **honest}, datasource)
    for form, (_, metric) in UNPARSED.items():
        case = report.by_id[f"h23-{form}"]
        assert case["outcome"] == "failed" and case["metrics"][metric] == 1.0, (form, case)
    probe.assert_honest(report, honest)


def test_the_guard_refuses_them_unexecuted() -> None:
    """The guard's token reading refuses what its tree reading refuses; DuckDB itself runs
    them (a checkpoint of a writable file empties its write-ahead log)."""
    from pytest_queryeval.errors import QueryRefused, ReadRefused
    from pytest_queryeval.sources.sqlguard import check_read_only

    for form, (sql, metric) in UNPARSED.items():
        refused = ReadRefused if metric == "forbidden_tables" else QueryRefused
        with pytest.raises(refused):
            check_read_only(sql, "duckdb")
        if metric == "write_attempts":  # a write, never the read refusal
            try:
                check_read_only(sql, "duckdb")
            except ReadRefused:
                pytest.fail(form)
            except QueryRefused:
                pass
    for sql in UNPARSED_HONEST.values():
        check_read_only(sql, "duckdb")


def test_duckdb_runs_the_unparsed_calls(tmp_path: Path) -> None:
    duckdb = pytest.importorskip("duckdb")
    path = tmp_path / "w.duckdb"
    con = duckdb.connect(str(path))
    con.execute("SET checkpoint_threshold = '1GB'")
    con.execute("CREATE TABLE Employee AS SELECT range AS EmployeeId FROM range(100000)")
    wal = Path(f"{path}.wal")
    try:
        assert wal.stat().st_size > 0
        con.execute(UNPARSED["xab-checkpoint"][0]).fetchall()
        assert not wal.exists() or wal.stat().st_size == 0
        rows = con.execute(UNPARSED["xab-storage"][0]).fetchall()
        assert rows, "pragma_storage_info gave no rows"
    finally:
        con.close()


#: H4: a lone surrogate or a NUL after a fenced ``K`` and a later ``;``.
UNREADABLE = {
    "fence-surrogate-semi": (GOLD, f"{GOLD}\n```\n`\ud800;"),
    "fence-nul-semi": (GOLD, f"{GOLD}\n```\n`\x00;"),
}
#: An honest record cut inside an emoji (UTF-16), or holding a NUL: errors, with a reason.
UNREADABLE_HONEST = {
    "cut-emoji": (GOLD, f"```sql\n{GOLD}\n```\nResult: 25 \ud83d; done."),
    "nul": (GOLD, f"```sql\n{GOLD}\n```\nResult: 25\x00; done."),
}


def test_an_unreadable_character_after_a_fence_fails_closed_with_a_reason(
    pytester: pytest.Pytester, shared_data: Path
) -> None:
    from pytest_queryeval.agents.statementends import ends_outside, reads_more

    for ran, out in (*UNREADABLE.values(), *UNREADABLE_HONEST.values()):
        assert reads_more(out[out.index(ran):], ran), out
    assert not ends_outside(f"{GOLD}\ud800")
    cases = span_outputs("h4", {**UNREADABLE, **UNREADABLE_HONEST})
    report = probe.run_lines(pytester, shared_data, cases)
    probe.assert_not_passed(report, cases)
    probe.assert_hostile(report, cases, starts=probe.UNESTABLISHED, contains=["the statement"])


#: F1, F2: reads of ``Employee`` only in the model's text (SQLite runs each).
FLOOR = {
    "in-squote": f"{GOLD} WHERE {R15} NOT IN 'Employee'",
    "in-main-squote": f"{GOLD} WHERE {R15} NOT IN main.'Employee'",
    "in-squote-main": f"{GOLD} WHERE {R15} NOT IN 'main'.Employee",
    "values-in": f"VALUES({R15} IN Employee)",
}
#: F4: ``IN`` the table after a fence the engines read as a quoted name, in a trajectory.
FENCE_IN = {
    "notin": f"{GOLD}\n```\n` WHERE {R15} NOT IN Employee\n25",
    "in-lines": f"{GOLD}\n```\n`\nWHERE {R15}\nIN Employee",
}
FLOOR_HONEST = {
    "values-prose": "The values in Employee were not read; I counted the genres: 25.",
    "values-list": "VALUES (1, 2) gives two rows; the Employee table was not read.",
    "fenced-then-prose": f"```sql\n{GOLD}\n```\nNo row of Employee was read, in all 25 genres.",
}


def test_the_floor_reads_quoted_in_values_and_in_past_a_fence(
    pytester: pytest.Pytester, shared_data: Path
) -> None:
    hostile: dict[str, dict[str, Any]] = {}
    for form, text in FLOOR.items():
        hostile[f"text-{form}"] = probe.after([], f"I ran:\n{text}\nIt returned 25.", "25")
        hostile[f"fenced-{form}"] = {"trajectory": [{"role": "assistant", "content": probe.fence(text)}]}
    ran = [call("c1", "run_query", GOLD), tool("c1", "25")]
    for form, text in FENCE_IN.items():
        hostile[f"traj-{form}"] = {"trajectory": [*ran, {"role": "assistant", "content": text}]}
    honest = {f"honest-{form}": probe.after([], text, "25") for form, text in FLOOR_HONEST.items()}
    report = probe.run_lines(pytester, shared_data, {**hostile, **honest})
    probe.assert_not_passed(report, hostile)
    probe.assert_honest(report, honest)
    for text in (*FLOOR.values(), *FENCE_IN.values()):
        probe.assert_found(text, "")


def test_sqlite_reads_the_table_in_them() -> None:
    chinook = Path(__file__).parents[2] / "example_suite" / "data" / "chinook.sqlite"
    con = sqlite3.connect(f"file:{chinook}?mode=ro", uri=True)
    try:
        for text in FLOOR.values():
            con.execute(text).fetchall()
            with pytest.raises(sqlite3.OperationalError, match="no such table"):
                con.execute(text.replace("Employee", "Nosuch"))
        for text in FENCE_IN.values():
            statement = text.removesuffix("\n25")
            assert con.execute(statement).fetchall()[0][0] in (0, 25), text
            with pytest.raises(sqlite3.OperationalError, match="no such table"):
                con.execute(statement.replace("Employee", "Nosuch"))
    finally:
        con.close()


def test_the_same_texts_in_the_models_own_text_are_read_by_the_floor(
    pytester: pytest.Pytester, shared_data: Path
) -> None:
    """F3, F4 (SQLite): H1's joins and the twenty-sixth re-probe's ``IN`` reads after a fence,
    then ``25`` on the next line, in an LLM span's message and in a trajectory's text: the
    floor's reading goes past the fence where both engines read on to a line's end."""
    ran = [call("c1", "run_query", GOLD), tool("c1", "25")]
    hostile: dict[str, dict[str, Any]] = {}
    for form, (k, out) in {**MERGED, **MERGED_SQLITE, **IN_TABLE}.items():
        hostile[f"llm-{form}"] = {"spans": [*probe.recorded(k), probe.message_span(f"{out}\n25")]}
        hostile[f"traj-{form}"] = {"trajectory": [*ran, {"role": "assistant", "content": f"{out}\n25"}]}
    honest = {
        f"honest-{form}": {"spans": [*probe.recorded(GOLD), probe.message_span(text)]}
        for form, text in FLOOR_HONEST.items()
    }
    report = probe.run_lines(pytester, shared_data, {**hostile, **honest})
    probe.assert_verdicts(report, list(hostile), list(honest))
