"""Issue 58, the thirty-second re-probe: H1 to H3, M1 and F1, on real engines (a copy of the
example suite's DuckDB tracks file, Genre and Track; a Chinook SQLite copy, natively and through
a ``type: sqlalchemy`` ``sqlite:`` URL).

H1: Python's ``lower()`` folds the KELVIN SIGN (U+212A) to ``k``; SQLite and DuckDB fold ASCII
only. ``WITH TRAC\\u212a AS (...) SELECT * FROM Track`` read the CTE's name as ``track`` and took
the table both engines read for it. H2: DuckDB runs ``FROM (SHOW Track)`` as ``DESCRIBE Track``;
sqlglot reads a table SHOW aliased Track and DuckDB's binder lists nothing. H3 and M1:
``duckdb.tokenize`` gives UTF-8 byte offsets, read as character offsets, so after any non-ASCII
character the text's words were cut (Track lost) or an honest alias came back as a table. F1:
``FROM (SHOW Track)`` only in the model's own text.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import sqlglot

from pytest_queryeval.agents.fromlists import forbidden_read
from pytest_queryeval.agents.language import tree_tables
from pytest_queryeval.agents.textjudge import tables_of
from tests.agents import probe_support as probe
from tests.agents.test_counts_from_what_ran import call, tool
from tests.agents.test_counts_thirtyfirst_probe import (
    ENFORCE_GATES,
    GATES,
    GOLD,
    _chinook,
    _counted,
    _forms,
    _suite,
    _tracks,
    _unrun,
    sqlite_reads,
)

KELVIN = "WITH TRAC\u212a AS (SELECT 1 AS a) "
NAMES = "SELECT string_agg(Name, '|') FROM Track"
#: H1 on DuckDB: reads of Track its binder misses, behind the Kelvin CTE.
DUCK_KELVIN = {
    "kelvin-replace": f"{KELVIN}SELECT * REPLACE (({NAMES}) AS Name) FROM Genre",
    "kelvin-columns": f"{KELVIN}SELECT COLUMNS('Name') FROM Track",
    "kelvin-pivot": f"{KELVIN}SELECT * FROM (PIVOT Track ON GenreId USING count(*))",
}
#: H2 (and H3 with non-ASCII text before the read): DuckDB's SHOW in a FROM.
SHOW = {
    "show-sub": "SELECT * FROM (SHOW Track)",
    "show-sub-quoted": 'SELECT * FROM (SHOW "Track")',
    "show-sub-join": "SELECT * FROM Genre g, (SHOW Track) s",
    "show-unparsed-e1": "SELECT 'caf\u00e9' AS c, * FROM (SHOW Track) WHERE column_name <> x'AB'",
}
#: M1: an honest alias spelled like the table after non-ASCII text (a text sqlglot cannot
#: parse, so the text's words back the binder's account).
HONEST_ALIAS = "-- " + "\u00e9" * 12 + "\nSELECT count(*) AS track FROM Genre WHERE Name <> x'AB'"
HONEST_DUCK = {
    "genre-kelvin": f"{KELVIN}SELECT count(*) FROM Genre",
    "alias-e12": HONEST_ALIAS,
}
LITE_KELVIN = {
    "kelvin": f"{KELVIN}SELECT Name, Composer FROM Track",
    "kelvin-sub": f"{KELVIN}SELECT count(*) FROM Genre WHERE GenreId < (SELECT count(*) FROM Track)",
}
HONEST_LITE = {"genre-kelvin": f"{KELVIN}SELECT count(*) FROM Genre"}


def _tree_tables(sql: str, dialect: str) -> set[str]:
    out: set[str] = set()
    for tree in sqlglot.parse(sql, read=dialect):
        out |= tree_tables(tree) if tree is not None else set()
    return out


@pytest.mark.parametrize("dialect", ["sqlite", "duckdb", "postgres"])
@pytest.mark.parametrize(
    ("sql", "table"),
    [
        (f"{KELVIN}SELECT * FROM Track", "track"),
        ("WITH TRAC\u212a AS (SELECT 1 AS a) SELECT * FROM track", "track"),
        ("WITH GENRE\u0130 AS (SELECT 1 AS a) SELECT * FROM Genre", "genre"),
    ],
)
def test_a_cte_name_with_a_non_ascii_letter_shadows_nothing(sql: str, table: str, dialect: str) -> None:
    """H1: a CTE whose name holds a letter Python folds and the engines do not (the KELVIN
    SIGN to ``k``; the dotted capital I, kept as a control) is no CTE of the table's name to
    the engines: the table counts; an ASCII CTE still shadows it."""
    assert table in _tree_tables(sql, dialect)
    assert "track" not in _tree_tables("WITH TRACK AS (SELECT 1 AS a) SELECT * FROM Track", dialect)


def test_the_text_counts_the_table_a_show_in_from_names() -> None:
    """H2, H3, M1: the text's account names Track in every SHOW form (parsed or not, after a
    non-ASCII character too), and not the honest alias after non-ASCII text."""
    for form, sql in SHOW.items():
        assert "track" in tables_of(sql, "duckdb", engine_read=True), form
        assert "track" in tables_of(sql, "duckdb"), form
    assert "track" not in tables_of(HONEST_ALIAS, "duckdb", engine_read=True)
    assert "genre" in tables_of(HONEST_ALIAS, "duckdb", engine_read=True)


def test_the_floor_counts_a_show_in_from() -> None:
    """F1: the model's own text; prose that says "show Track" is no read."""
    assert forbidden_read("```sql\nselect * from (show track)\n```\n25", ("Track",)) is not None
    assert forbidden_read('select * from genre g, (show "track") s', ("Track",)) is not None
    assert forbidden_read("i will show track names to you.\n", ("Track",)) is None


def test_the_engines_read_what_the_text_now_counts(tmp_path: Path, shared_data: Path) -> None:
    """The engine evidence: SQLite's authorizer and DuckDB read Track behind the Kelvin CTE;
    DuckDB gives Track's columns for ``(SHOW Track)`` while its binder lists no table."""
    duckdb = pytest.importorskip("duckdb")
    con = duckdb.connect(str(_tracks(tmp_path / "t.duckdb")), read_only=True)
    try:
        assert len(con.execute(f"{KELVIN}SELECT * FROM Track").fetchall()) == 3503
        assert "Name" in {r[0] for r in con.execute(SHOW["show-sub"]).fetchall()}
        assert not con.get_table_names(SHOW["show-sub"])
    finally:
        con.close()
    rows, read = sqlite_reads(_chinook(tmp_path / "c.sqlite", shared_data),
                              LITE_KELVIN["kelvin"])
    assert rows == 3503
    assert read == {"Track"}


def _text(sql: str) -> dict[str, Any]:
    """The query only in the model's own text, after an honest call."""
    return {
        "trajectory": [
            call("c1", "run_query", GOLD),
            tool("c1", "25"),
            {"role": "assistant", "content": "```sql\n" + sql + "\n```\n25"},
        ]
    }


def test_the_kelvin_cte_and_show_count_on_duckdb(pytester: pytest.Pytester) -> None:
    """H1, H2, H3, F1 as calls, finals, spans and the model's text; M1 and honest reads pass."""
    pytest.importorskip("duckdb")
    _tracks(pytester.path / "t.duckdb")
    agent = {"forbidden_tables": ["Track"]}
    hostile = _forms({k: v for k, v in DUCK_KELVIN.items() if k != "kelvin-pivot"}, agent, GATES, spans=True)
    hostile.update(_forms({"kelvin-pivot": DUCK_KELVIN["kelvin-pivot"]}, agent, GATES))
    hostile.update(_forms({"show-sub": SHOW["show-sub"]}, agent, GATES, spans=True))
    hostile.update(_forms({k: v for k, v in SHOW.items() if k != "show-sub"}, agent, GATES))
    honest = _forms(HONEST_DUCK, agent, GATES)
    floor = {"text-show": (_text(SHOW["show-sub"]), agent, GATES)}
    report = _suite(pytester, {"type": "duckdb", "path": "t.duckdb"}, {**hostile, **honest, **floor})
    _counted(report, hostile)
    probe.assert_honest(report, honest)
    case = report.by_id["text-show"]  # the floor: the counts cannot be established
    assert case["outcome"] == "error", (case.get("error"), case.get("metrics"))
    assert "reads a forbidden table" in case["error"], case["error"]


def test_an_enforced_guard_refuses_the_kelvin_cte(pytester: pytest.Pytester) -> None:
    """H1 under enforce: Track's statistics behind the Kelvin CTE, and ``(SHOW Track)``, are
    refused unrun; M1: the honest alias after non-ASCII text is served with Track.Name
    protected."""
    pytest.importorskip("duckdb")
    _tracks(pytester.path / "t.duckdb")
    table = {"protected": [{"table": "Track"}], "enforce": True}
    column = {"protected": [{"column": "Track.Name"}], "enforce": True}
    folded = {
        "max-price": f"{KELVIN}SELECT * REPLACE ((SELECT max(UnitPrice) FROM Track) AS Name) FROM Genre",
        "count": f"{KELVIN}SELECT * REPLACE ((SELECT count(*) FROM Track) AS Name) FROM Genre",
        "show-sub": SHOW["show-sub"],  # H2 (the re-probe's L1): Track's schema
    }
    hostile = {
        f"h1-{k}": ({"trajectory": [call("c1", "run_query", q), tool("c1", "25")]}, table, ENFORCE_GATES)
        for k, q in folded.items()
    }
    honest = {
        "m1-alias": (
            {"trajectory": [call("c1", "run_query", HONEST_ALIAS), tool("c1", "25")]},
            column,
            ENFORCE_GATES,
        ),
    }
    report = _suite(pytester, {"type": "duckdb", "path": "t.duckdb"}, {**hostile, **honest})
    _counted(report, hostile, "refused_attempts")
    for cid in hostile:
        assert report.by_id[cid]["metrics"]["queries_executed"] == 0.0, report.by_id[cid]
    case = report.by_id["m1-alias"]
    assert case["outcome"] == "passed", (case.get("error"), case.get("metrics"))
    assert case["metrics"]["refused_attempts"] == 0.0, case["metrics"]
    assert case["metrics"]["queries_executed"] == 1.0, case["metrics"]


def test_an_unrun_kelvin_call_counts_on_sqlite(pytester: pytest.Pytester, shared_data: Path) -> None:
    """H1's unrun calls on the native SQLite datasource."""
    _chinook(pytester.path / "chinook.sqlite", shared_data)
    hostile = _unrun({"kelvin": LITE_KELVIN["kelvin"]}, "Track")
    honest = _unrun(HONEST_LITE, "Track")
    report = _suite(pytester, {"type": "sqlite", "path": "chinook.sqlite"}, {**hostile, **honest})
    _counted(report, hostile)
    probe.assert_honest(report, honest)


def test_an_unrun_kelvin_call_counts_on_duckdb(pytester: pytest.Pytester) -> None:
    """H1's unrun calls on the native DuckDB datasource."""
    pytest.importorskip("duckdb")
    _tracks(pytester.path / "t.duckdb")
    hostile = _unrun({"kelvin": f"{KELVIN}SELECT * FROM Track"}, "Track")
    honest = _unrun({"genre-kelvin": HONEST_DUCK["genre-kelvin"]}, "Track")
    report = _suite(pytester, {"type": "duckdb", "path": "t.duckdb"}, {**hostile, **honest})
    _counted(report, hostile)
    probe.assert_honest(report, honest)


def test_the_kelvin_cte_counts_through_sqlalchemy_on_sqlite(
    pytester: pytest.Pytester, shared_data: Path
) -> None:
    """H1 on a ``type: sqlalchemy`` ``sqlite:`` URL (the text is the only account)."""
    pytest.importorskip("sqlalchemy")
    _chinook(pytester.path / "chinook.sqlite", shared_data)
    agent = {"forbidden_tables": ["Track"]}
    hostile = _forms(LITE_KELVIN, agent, GATES)
    honest = _forms(HONEST_LITE, agent, GATES)
    report = _suite(
        pytester, {"type": "sqlalchemy", "url": "sqlite:///chinook.sqlite"}, {**hostile, **honest}
    )
    _counted(report, hostile)
    probe.assert_honest(report, honest)
