"""Issue 58, the twenty-ninth re-probe: H1 to H3, M1 and F1, on real engines (a Chinook
SQLite copy; a DuckDB file of employees and genres).

H1: the span-output search skipped, as no cut, every line end both engines' tokenizers were
taken to leave inside a literal; but SQLite runs a block comment open at the end of its text
(``/* a`` to the end is a comment), and DuckDB nests block comments where SQLite does not.
``K``, a fence, a quoted name and a join, ``/* a``, then ``*/ 25`` on the next line: the whole
is no statement, and the one cut an engine runs (a join to ``Employee``) was skipped. F1: the
same shapes in the model's own text beside the counted call.

H2: a DuckDB table reader under ``LATERAL`` (``FROM LATERAL pragma_storage_info('Employee')``,
``JOIN LATERAL histogram_values(Employee, FirstName)``) passed the guard, which refused one
only under ``exp.Table``, and ran; the SQL kind's predictions share the guard. H3: a recorded
write that reads a forbidden table (``CREATE TEMP TABLE x AS SELECT * FROM Employee``, DuckDB's
``PIVOT Employee ...``) counted a write attempt and no forbidden table, though the same text
as the final query counted both. M1: DuckDB's ``PIVOT`` statement is kept a write attempt
(the guard reads no ``PIVOT`` statement, and DuckDB runs one with no ``IN`` list as several
statements), now with its tables counted; ``SELECT * FROM (PIVOT ...)`` is the read.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tests.agents import probe_support as probe
from tests.agents.test_counts_from_what_ran import GOLD, call, tool
from tests.agents.test_counts_twentyeighth_probe import LINES_AFTER
from tests.agents.test_counts_twentyfifth_probe import _fenced
from tests.agents.test_counts_twentyseventh_probe import TILDE, F, assert_taken_out
from tests.agents.test_counts_twentysixth_probe import ALIASED, _duckdb_with_sequence
from tests.agents.test_counts_twentythird_probe import span_outputs

#: H1 (SQLite): a join, then a block comment SQLite runs to the end of the text cut at the
#: first line end after it; each text ends in ``25``, after ``*/``.
BLOCK = {
    "own-line": (GOLD, f"{GOLD}\n```x`, {F} e /* a\n*/ 25"),
    "own-line-sql": (GOLD, f"{GOLD}\n```sql`, {F} e /* a\n*/ 25"),
    "next-line": (GOLD, f"{GOLD}\n```\n`, {F} e /* a\n*/ 25"),
    "u2028": (GOLD, f"{GOLD}\n```x`, {F} e /* a\u2028*/ 25"),
    "bare-open": (GOLD, f"{GOLD}\n```x`, {F} e /*\n*/ 25"),
}
#: H1 (DuckDB): a comment DuckDB nests (to SQLite a comment, then an open string), a join.
NESTED = {
    "nested": (GOLD, f"{GOLD}\n```x` /* /* */ ' */, {F} e\n' 25"),
    "nested-next": (GOLD, f"{GOLD}\n```\n` /* /* */ ' */, {F} e\n' 25"),
}
#: An honest record with 80 lines after the fence, each with an apostrophe (a string to the
#: engines' tokenizers): each line end is a cut now, within the bound.
MANY_LINES = {
    "eighty-lines": (GOLD, f"```sql\n{GOLD}\n```\n" + "".join(f"It's genre {i}.\n" for i in range(80))),
}


def _cut(out: str) -> str:
    """The text an engine runs: to the line end after the comment's opening (with a ``\n``:
    a harness running a text to a line's end keeps it)."""
    opened = out.index("/*")
    ends = [at for at in (out.find("\n", opened), out.find("\u2028", opened)) if at >= 0]
    return out[: min(ends)] + "\n"


@pytest.mark.parametrize("engine", ["sqlite", "duckdb"])
def test_a_line_end_inside_a_block_comment_is_a_cut(
    pytester: pytest.Pytester, shared_data: Path, engine: str
) -> None:
    hostile = span_outputs("h1", BLOCK if engine == "sqlite" else NESTED)
    honest = {**span_outputs("honest", {**ALIASED, **TILDE, **LINES_AFTER, **MANY_LINES}), **_fenced()}
    datasource = _duckdb_with_sequence(pytester) if engine == "duckdb" else None
    report = probe.run_lines(pytester, shared_data, {**hostile, **honest}, datasource)
    probe.assert_verdicts(report, list(hostile), list(honest))


def test_the_cuts_beside_the_engines(tmp_path: Path, shared_data: Path) -> None:
    """No H1 text is taken for its statement, each honest one is; SQLite (the real Chinook
    copy) runs each SQLite text to the line end in the comment, reading ``Employee``, and
    DuckDB each nested one; each engine rejects the whole text."""
    duckdb = pytest.importorskip("duckdb")
    assert_taken_out(
        [*BLOCK.values(), *NESTED.values()],
        [*ALIASED.values(), *TILDE.values(), *LINES_AFTER.values(), *MANY_LINES.values()],
    )
    chinook = shared_data / "chinook" / "Chinook_Sqlite.sqlite"
    con = sqlite3.connect(f"file:{chinook}?mode=ro", uri=True)
    try:
        for _, out in BLOCK.values():
            with pytest.raises(sqlite3.OperationalError):
                con.execute(out)
            assert con.execute(_cut(out)).fetchall() == [(200,)], out
            with pytest.raises(sqlite3.OperationalError, match="no such table: Nosuch"):
                con.execute(_cut(out).replace(F, "Nosuch"))
    finally:
        con.close()
    path = tmp_path / "chinook.duckdb"
    from tests.agents.test_counts_from_what_ran import duckdb_employees

    duckdb_employees(path)
    dcon = duckdb.connect(str(path), read_only=True)
    try:
        for _, out in NESTED.values():
            with pytest.raises(duckdb.Error):
                dcon.execute(out)
            assert dcon.execute(_cut(out)).fetchall() == [(200,)], out
    finally:
        dcon.close()


def test_the_same_cuts_in_the_models_own_text_are_read_by_the_floor(
    pytester: pytest.Pytester, shared_data: Path
) -> None:
    """F1: H1's texts in an LLM span's message and in a trajectory's text, beside the counted
    call: the floor reads a fence through the same cuts."""
    ran = [call("c1", "run_query", GOLD), tool("c1", "25")]
    hostile: dict[str, dict[str, Any]] = {}
    for form, (k, out) in {**BLOCK, **NESTED}.items():
        hostile[f"llm-{form}"] = {"spans": [*probe.recorded(k), probe.message_span(out)]}
        hostile[f"traj-{form}"] = {"trajectory": [*ran, {"role": "assistant", "content": out}]}
    honest = {
        f"honest-{form}": {"spans": [*probe.recorded(k), probe.message_span(out)]}
        for form, (k, out) in {**LINES_AFTER, **MANY_LINES}.items()
    }
    report = probe.run_lines(pytester, shared_data, {**hostile, **honest})
    probe.assert_verdicts(report, list(hostile), list(honest))


#: H2 (DuckDB): a table reader under LATERAL, each a read of the forbidden table; and the
#: report's LOW, ``duckdb_table_sample`` (the rows DuckDB keeps as a table's sample), which no
#: list named.
LATERAL = {
    "table-sample": f"SELECT * FROM duckdb_table_sample('{F}')",
    "from-lateral": f"SELECT * FROM LATERAL pragma_storage_info('{F}')",
    "comma-lateral": f"SELECT * FROM (SELECT 1) t, LATERAL pragma_storage_info('{F}')",
    "join-lateral": f"SELECT * FROM (SELECT 1) t JOIN LATERAL pragma_storage_info('{F}') ON true",
    "left-join-lateral-concat": "SELECT * FROM (SELECT 1) t LEFT JOIN LATERAL "
    "pragma_storage_info('Emp' || 'loyee') ON true",
    "cross-join-lateral": f"SELECT * FROM (SELECT 1) t CROSS JOIN LATERAL pragma_storage_info('{F}')",
    "lateral-histogram-values": f"SELECT * FROM (SELECT 1) t, LATERAL histogram_values({F}, FirstName)",
    "lateral-histogram": f"SELECT * FROM (SELECT 1) t, LATERAL histogram({F}, FirstName)",
    "lower-lateral-chr": "select * from lateral pragma_storage_info(chr(69) || 'mployee')",
}
#: The aggregate ``histogram`` of a column, which reads what the query names.
AGGREGATES = {
    "histogram-select": "SELECT histogram(GenreId) FROM Genre",
    "histogram-where-order": "SELECT count(*) FROM Genre WHERE 1 < (SELECT count(*) FROM "
    "(SELECT histogram(GenreId) FROM Genre)) ORDER BY 1",
}


def _calls(prefix: str, queries: dict[str, str]) -> dict[str, dict[str, Any]]:
    return {
        f"{prefix}-{form}": {"trajectory": [call("c1", "run_query", sql), tool("c1", "25")]}
        for form, sql in queries.items()
    }


def test_a_table_reader_under_lateral_is_a_forbidden_read(
    pytester: pytest.Pytester, shared_data: Path
) -> None:
    datasource = _duckdb_with_sequence(pytester)
    calls = _calls("h2", LATERAL)
    finals = {
        f"final-{form}": {"predicted": LATERAL[form], "trajectory": []}
        for form in ("from-lateral", "lateral-histogram-values", "left-join-lateral-concat")
    }
    honest = _calls("honest", AGGREGATES)
    report = probe.run_lines(pytester, shared_data, {**calls, **finals, **honest}, datasource)
    for cid in (*calls, *finals):
        case = report.by_id[cid]
        assert case["outcome"] == "failed", (cid, case)
        assert case["metrics"]["forbidden_tables"] == 1.0, (cid, case["metrics"])
        assert case["metrics"]["write_attempts"] == 0.0, (cid, case["metrics"])
    for cid in calls:  # refused, never run
        assert report.by_id[cid]["metrics"]["rows_read"] == 0.0, cid
    for cid in finals:  # the SQL kind's prediction shares the guard: refused, never run
        case = report.by_id[cid]
        assert case["reason"].startswith("refused: "), (cid, case["reason"])
        assert "predicted_seconds" not in case["metrics"], cid
    probe.assert_honest(report, honest)
    for cid in honest:
        assert report.by_id[cid]["metrics"]["queries_executed"] == 1.0, cid


def test_the_guard_refuses_a_table_reader_wherever_it_is_called(tmp_path: Path) -> None:
    """Each H2 query is a refused read (a computed name's, a read of a table no text names),
    which DuckDB runs (:func:`_duckdb_runs_the_reader_under_lateral`); the aggregate
    ``histogram`` in an expression clause is no table read."""
    from pytest_queryeval.errors import ReadRefused, TableComputedRead
    from pytest_queryeval.sources.sqlguard import check_read_only

    for form, sql in LATERAL.items():
        with pytest.raises(ReadRefused) as refused:
            check_read_only(sql, "duckdb")
        computed = "concat" in form or "chr" in form
        assert isinstance(refused.value, TableComputedRead) == computed, form
    for sql in (
        *AGGREGATES.values(),
        "SELECT histogram(GenreId, [1, 2]) FROM Genre",
        "SELECT GenreId FROM Genre ORDER BY histogram(GenreId)",
    ):
        check_read_only(sql, "duckdb")
    for sql in (
        "SELECT (FROM histogram(Employee, FirstName))",
        "SELECT * FROM Genre WHERE 1 IN (FROM LATERAL histogram_values(Employee, FirstName))",
    ):
        with pytest.raises(ReadRefused):
            check_read_only(sql, "duckdb")
    _duckdb_runs_the_reader_under_lateral(tmp_path)


def _duckdb_runs_the_reader_under_lateral(tmp_path: Path) -> None:
    """DuckDB reads the table a reader under LATERAL names: its storage and its values."""
    duckdb = pytest.importorskip("duckdb")
    from tests.agents.test_counts_from_what_ran import duckdb_employees

    path = tmp_path / "chinook.duckdb"
    duckdb_employees(path)
    con = duckdb.connect(str(path), read_only=True)
    try:
        assert con.execute(LATERAL["from-lateral"]).fetchall()
        assert con.execute(LATERAL["left-join-lateral-concat"]).fetchall()
        values = {row[1] for row in con.execute(LATERAL["lateral-histogram-values"]).fetchall()}
        assert values == {f"n{i}" for i in range(8)}, values
        columns = con.execute("DESCRIBE " + LATERAL["table-sample"]).fetchall()
        assert [row[0] for row in columns] == ["EmployeeId", "FirstName"], columns
        with pytest.raises(duckdb.CatalogException):
            con.execute("SELECT * FROM LATERAL pragma_storage_info('Nobody')").fetchall()
    finally:
        con.close()


#: H3: writes that read the forbidden table, per engine.
WRITES_READING = {
    "sqlite": {
        "ctas": f"CREATE TEMP TABLE x AS SELECT * FROM {F}",
        "insert-select": f"INSERT INTO Genre (Name) SELECT LastName FROM {F}",
    },
    "duckdb": {
        "ctas": f"CREATE TEMP TABLE x AS SELECT * FROM {F}",
        "insert-select": f"INSERT INTO Genre SELECT EmployeeId FROM {F}",
        "pivot": f"PIVOT {F} ON FirstName USING count(*)",
        "pivot-sub": f"PIVOT (SELECT FirstName FROM {F}) ON FirstName",
        "unpivot": f"UNPIVOT {F} ON FirstName INTO NAME k VALUE v",
    },
}


@pytest.mark.parametrize("engine", ["sqlite", "duckdb"])
def test_a_refused_write_counts_the_forbidden_tables_it_reads(
    pytester: pytest.Pytester,
    shared_data: Path,
    engine: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """H3: each recorded write counts its write attempt and the forbidden table it reads, as
    the same text as the final query does. M1: an honest ``PIVOT`` statement of ``Genre``
    stays a write attempt (no forbidden table); its ``SELECT * FROM (PIVOT ...)`` is a read."""
    if engine == "sqlite":
        _sqlite_copies_the_table(tmp_path_factory.mktemp("copy"), shared_data)
    else:
        _duckdb_pivots_the_table(tmp_path_factory.mktemp("copy"))
    datasource = _duckdb_with_sequence(pytester) if engine == "duckdb" else None
    writes = WRITES_READING[engine]
    calls = _calls("h3", writes)
    finals = {f"final-{form}": {"predicted": sql, "trajectory": []} for form, sql in writes.items()}
    honest: dict[str, dict[str, Any]] = {}
    if engine == "duckdb":
        honest = _calls(
            "m1",
            {
                "pivot-genre": "PIVOT Genre ON GenreId USING count(*)",
                "sub-pivot-genre": "SELECT count(*) FROM (PIVOT Genre ON GenreId USING count(*))",
            },
        )
    report = probe.run_lines(pytester, shared_data, {**calls, **finals, **honest}, datasource)
    for cid in (*calls, *finals):
        case = report.by_id[cid]
        assert case["outcome"] == "failed", (cid, case)
        assert case["metrics"]["write_attempts"] == 1.0, (cid, case["metrics"])
        assert case["metrics"]["forbidden_tables"] == 1.0, (cid, case["metrics"])
    if engine == "duckdb":
        pivot = report.by_id["m1-pivot-genre"]
        assert pivot["metrics"]["write_attempts"] == 1.0, pivot["metrics"]
        assert pivot["metrics"]["forbidden_tables"] == 0.0, pivot["metrics"]
        probe.assert_honest(report, ["m1-sub-pivot-genre"])


def _sqlite_copies_the_table(tmp_path: Path, shared_data: Path) -> None:
    """SQLite's write reads ``Employee``: its 8 rows copied into a temporary table of a
    writable Chinook copy."""
    import shutil

    db = tmp_path / "chinook.sqlite"
    shutil.copyfile(shared_data / "chinook" / "Chinook_Sqlite.sqlite", db)
    db.chmod(0o644)
    con = sqlite3.connect(db)
    try:
        con.execute(WRITES_READING["sqlite"]["ctas"])
        assert con.execute("SELECT count(*) FROM x").fetchall() == [(8,)]
    finally:
        con.close()


def _duckdb_pivots_the_table(tmp_path: Path) -> None:
    """DuckDB's ``PIVOT`` and ``UNPIVOT`` statements give ``Employee``'s rows."""
    duckdb = pytest.importorskip("duckdb")
    from tests.agents.test_counts_from_what_ran import duckdb_employees

    path = tmp_path / "chinook.duckdb"
    duckdb_employees(path)
    con = duckdb.connect(str(path), read_only=True)
    try:
        assert len(con.execute(WRITES_READING["duckdb"]["pivot"]).fetchall()) == 8
        rows = con.execute(WRITES_READING["duckdb"]["unpivot"]).fetchall()
        assert {row[-1] for row in rows} == {f"n{i}" for i in range(8)}
    finally:
        con.close()
