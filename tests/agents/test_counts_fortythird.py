"""Issue 58, the forty-second re-probe's Q8 and Q10: quotes the comment scan did not know
(each test failed before its fix).

The string-aware reading of comments knew ``'...'``, ``"..."`` and ``$$...$$`` only, so a
``--`` inside a PostgreSQL or DuckDB ``$a$...$a$`` dollar quote or ``E'\\'...'`` string, or
inside SQLite's ``[...]`` or `` `...` `` quoted name, began a comment in every reading but the
text as written; a check that needs the comments gone (SQLite's ``IN/**/v_emp``,
PostgreSQL's ``U&"v!0032" --x<CR>UESCAPE '!'``, DuckDB's ``n_v--x<CR>()``) read nothing
past such a quote: a forbidden table counted 0 on every path. Each engine family's quotes
are read now (:data:`pytest_queryeval.sources.sqlcomments.QUOTINGS`), and a Unicode-escaped
name is decoded where it stands outside a string too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.agents.test_counts_from_what_ran import call, tool
from tests.agents.test_counts_thirtyfirst_probe import GATES, _counted, _suite
from tests.agents.test_counts_thirtyninth import PG_SETUP, SQLITE_SETUP, _sqlite_with
from tests.agents.test_counts_thirtysixth import MACROS, _counts, tracks_with


@pytest.mark.parametrize(("family", "sql", "kept"), [
    ("postgres", "SELECT $a$--$a$ AS s --c\n, x", "SELECT $a$--$a$ AS s  \n, x"),
    ("postgres", "SELECT $a$ $b$--$b$ $a$ AS s --c", "SELECT $a$ $b$--$b$ $a$ AS s  "),
    ("postgres", "SELECT E'\\'--' AS s --c\n, x", "SELECT E'\\'--' AS s  \n, x"),
    ("postgres", "SELECT e'a''--' AS s --c", "SELECT e'a''--' AS s  "),
    ("postgres", "SELECT '\\' --c\n, x", "SELECT '\\'  \n, x"),  # no escape in ''
    ("postgres", "SELECT a$b$--c\n, x", "SELECT a$b$ \n, x"),  # a name, no dollar quote
    ("postgres", "SELECT $a$x$a$$b$--$b$ --c", "SELECT $a$x$a$$b$--$b$  "),  # one after one
    ("postgres", "SELECT ARRAY[1 --c\n]", "SELECT ARRAY[1  \n]"),
    ("sqlite", "SELECT 1 AS [--] --c\n, x", "SELECT 1 AS [--]  \n, x"),
    ("sqlite", "SELECT 1 AS `--` /* c */ x", "SELECT 1 AS `--`   x"),
    ("sqlite", "SELECT 1 AS `a``--` --c", "SELECT 1 AS `a``--`  "),
    ("sqlite", "SELECT $a$--$a$ x", "SELECT $a$ "),  # ``$a$`` a parameter to SQLite
    ("sqlite", "SELECT E'\\' --c", "SELECT E'\\'  "),
    ("mysql", "SELECT '\\'--' AS s --c", "SELECT '\\'--' AS s  "),
    ("mysql", 'SELECT "\\"--" AS s --c', 'SELECT "\\"--" AS s  '),
    ("mysql", "SELECT `--` AS s --c", "SELECT `--` AS s  "),
])
def test_each_family_keeps_a_comment_mark_inside_its_quotes(family: str, sql: str,
                                                             kept: str) -> None:
    from pytest_queryeval.sources.sqlcomments import readings, uncommented

    assert uncommented(sql, True, family) == kept
    assert kept in readings(sql)


def test_every_form_at_once_is_a_reading_too() -> None:
    from pytest_queryeval.sources.sqlcomments import readings, uncommented

    sql = "SELECT $a$--$a$ AS s, E'\\'--' AS t, [--] AS u, `--` AS v --c"
    assert uncommented(sql, True, True) == sql[:-3] + " "
    assert sql[:-3] + " " in readings(sql)
    assert uncommented("SELECT $a$ /* $a$ AS s /* x */ y */ z", True, True) == \
        "SELECT $a$ /* $a$ AS s   y */ z"


def test_readings_scan_only_the_quotings_that_read_a_text_apart() -> None:
    """A family whose quotes a text does not hold is not scanned again: the readings are
    those of every family scanned."""
    import random

    from pytest_queryeval.sources.sqlcomments import (
        _COMMENT_MARKS,
        STRING_READINGS,
        readings,
        uncommented,
    )

    pieces = ["--", "/*", "*/", "\n", "\r", "'", '"', "$$", "$a$", " ", "e'", "\\", "[", "]",
              "`", "x", "a$"]
    rng = random.Random(43)
    for _ in range(3000):
        sql = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 12)))
        every = {sql} if "--" not in sql and "/*" not in sql else {
            sql, *(uncommented(sql, nested, strings) for strings in (*STRING_READINGS, False)
                   for nested in (True, False)), _COMMENT_MARKS.sub(" ", sql)}
        assert set(readings(sql)) == every, sql


def test_an_unclosed_escaped_string_is_read_to_the_end_at_once() -> None:
    from pytest_queryeval.sources.sqlcomments import uncommented

    sql = "SELECT E'" + "a" * 200_000 + "\\"
    assert uncommented(sql, True, "postgres") == sql
    assert uncommented("SELECT '" + "\\a" * 100_000, True, "mysql").startswith("SELECT '")


#: Q8 (SQLite): a function of the agent's own harness, so no engine compiles the text and the
#: text's account (``x IN <table>``) is the only one.
SQLITE_FORMS = [
    ("Employee", "SELECT my_harness_fn(1) AS [--] WHERE 'Adams' IN/**/v_emp"),
    ("Employee", "SELECT my_harness_fn(1) AS `--` WHERE 'Adams' IN/**/v_emp"),
    ("Sec1", "SELECT my_harness_fn(Name) AS [--] FROM Genre WHERE Name IN -- x\nSec1"),
    ("Sec1", "SELECT my_harness_fn(Name) AS [/*] FROM Genre WHERE Name IN/**/Sec1 AND 1 = [*/]"),
    # the probe's own forms (the text as written reads them since the forty-second's fix)
    ("Employee", "SELECT my_harness_fn(1) AS [--] WHERE 'Adams' IN v_emp"),
    ("Sec1", "SELECT my_harness_fn(Name) AS [--] FROM Genre WHERE Name IN Sec1"),
    # the forty-third re-probe's T1: SQLite ends a line comment at \n alone, so a [ after a
    # \r inside it opened a quote in every family's reading
    ("Employee", "SELECT my_harness_fn(1) AS a --\r[$z$\n, '--' AS b WHERE 'Adams' IN/**/v_emp"),
    ("Sec1", "SELECT my_harness_fn(Name) AS a --\r[$z$\n, '--' AS b FROM Genre "
             "WHERE Name IN/**/Sec1"),
]


@pytest.mark.parametrize(("forbidden", "sql"), SQLITE_FORMS)
def test_a_sqlite_in_list_after_a_quoted_comment_mark_counts(forbidden: str, sql: str,
                                                             tmp_path: Path) -> None:
    from pytest_queryeval.sources.sqlite import SqliteSource

    source = SqliteSource("c", _sqlite_with(tmp_path, *SQLITE_SETUP[:3]))
    try:
        assert _counts(source, forbidden, sql) == (1.0, 1.0, 1.0)
        assert _counts(source, forbidden, "SELECT my_harness_fn(1) AS [--] WHERE 1 IN (1)") \
            == (0.0, 0.0, 0.0)
    finally:
        source.close()


def test_a_sqlite_in_list_after_a_quoted_comment_mark_fails_the_gate(
        pytester: pytest.Pytester) -> None:
    """End to end: the replayed call, the unrun one and the final query of Q8's forms."""
    _sqlite_with(pytester.path, *SQLITE_SETUP[:3])
    cases: dict[str, tuple[dict[str, Any], dict[str, Any], dict[str, Any]]] = {}
    for n, (forbidden, sql) in enumerate(SQLITE_FORMS[:3]):
        agent = {"forbidden_tables": [forbidden]}
        cases[f"tool-{n}"] = ({"trajectory": [call("c1", "run_query", sql), tool("c1", "2")]},
                              agent, GATES)
        cases[f"unrun-{n}"] = ({"trajectory": [call("c1", "execute_sql", sql),
                                               tool("c1", "2")]}, agent, GATES)
    honest = "SELECT count(*) AS [--] FROM Genre"
    cases["honest"] = ({"trajectory": [call("c1", "run_query", honest), tool("c1", "25")]},
                       {"forbidden_tables": ["Employee"]}, GATES)
    report = _suite(pytester, {"type": "sqlite", "path": "c.sqlite"}, cases)
    _counted(report, [c for c in cases if c != "honest"])
    assert report.by_id["honest"]["outcome"] == "passed", report.by_id["honest"]


#: Q10 (PostgreSQL): v2 is a view over the forbidden v_emp, named with Unicode escapes whose
#: ``UESCAPE`` a comment ended by a carriage return separates, after an odd string.
PG_FORMS = [
    ("v_emp", "SELECT $a$--$a$ AS s, * FROM U&\"v!0032\" --x\rUESCAPE '!' LIMIT 2"),
    ("v_emp", "SELECT E'\\'--' AS s, * FROM U&\"v!0032\" --x\rUESCAPE '!' LIMIT 2"),
    ("v_emp", "SELECT $a$--$a$ AS s, my_harness_fn(1), * FROM U&\"v!0032\" --x\rUESCAPE '!'"),
    ("employee", "SELECT $a$--$a$ AS s, U&\"emp!005fcount!005fpl\" --x\rUESCAPE '!' () AS n"),
    # a dollar quote's tag is case-sensitive: ``$a$`` does not close ``$A$``
    ("employee", "SELECT $A$ $a$--$A$ AS s, U&\"emp!005fcount!005fpl\" --x\rUESCAPE '!' () AS n"),
    # a U& quote's opening inside a string: the name after it is decoded where it stands
    ("employee", "SELECT 'u&' AS s, U&\"emp!005fcount!005fpl\" UESCAPE '!' () AS n, 'x' AS t"),
    ("v_emp", "SELECT $a$--$a$ AS s, * FROM U&\"v\\0032\" LIMIT 2"),
    ("v_emp", "SELECT E'\\'--' AS s, * FROM U&\"v\\0032\" LIMIT 2"),
    # T5: ``×$z$`` is a name to the engine, a dollar quote to a scan reading \w
    ("v_emp", "SELECT '--' AS a, $q$[$q$ AS b, 1 AS \u00d7$z$, * FROM U&\"v!0032\"/**/UESCAPE "
              "'!' LIMIT 2"),
]
DATABASE = "q43_quotes"


@pytest.fixture(scope="module")
def views(postgres_server: Any) -> Any:
    pytest.importorskip("sqlalchemy")
    from pytest_queryeval.sources.sqlalchemy import SqlAlchemySource

    postgres_server.superuser_execute(f"DROP DATABASE IF EXISTS {DATABASE}",
                                      f"CREATE DATABASE {DATABASE}")
    postgres_server.superuser_execute(
        *PG_SETUP[:6], "CREATE VIEW v_emp AS SELECT last_name FROM employee",
        "CREATE VIEW v2 AS SELECT * FROM v_emp",
        f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {postgres_server.readonly_user}",
        database=DATABASE)
    source = SqlAlchemySource("pg", postgres_server.readonly_url(DATABASE), isolation="thread")
    yield source
    source.close()


@pytest.mark.postgres
@pytest.mark.parametrize(("forbidden", "sql"), PG_FORMS)
def test_a_unicode_escaped_name_after_an_odd_string_counts(views: Any, forbidden: str,
                                                           sql: str) -> None:
    assert _counts(views, forbidden, sql) == (1.0, 1.0, 1.0)


@pytest.mark.postgres
@pytest.mark.parametrize("sql", ["SELECT $a$--$a$ AS s, count(*) FROM genre",
                                 "SELECT E'\\'--' AS s, U&\"name\" FROM genre --x\rLIMIT 2"])
def test_an_honest_postgresql_read_after_an_odd_string_counts_nothing(views: Any,
                                                                       sql: str) -> None:
    assert _counts(views, "v_emp", sql) == (0.0, 0.0, 0.0)


@pytest.mark.postgres
def test_a_unicode_escaped_view_after_an_odd_string_fails_the_gate(
        pytester: pytest.Pytester, views: Any, postgres_server: Any,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """End to end: Q10's forms replayed, unrun and as the final query."""
    monkeypatch.setenv("QE_PG_URL", postgres_server.readonly_url(DATABASE))
    agent = {"forbidden_tables": ["v_emp"]}
    cases: dict[str, tuple[dict[str, Any], dict[str, Any], dict[str, Any]]] = {}
    for n, (_, sql) in enumerate(PG_FORMS[:3]):
        cases[f"tool-{n}"] = ({"trajectory": [call("c1", "run_query", sql), tool("c1", "2")]},
                              agent, GATES)
        cases[f"unrun-{n}"] = ({"trajectory": [call("c1", "execute_sql", sql),
                                               tool("c1", "2")]}, agent, GATES)
        cases[f"final-{n}"] = ({"predicted": sql, "trajectory": []}, agent, GATES)
    report = _suite(pytester, {"type": "sqlalchemy", "url": "${QE_PG_URL}"}, cases)
    _counted(report, list(cases))


#: DuckDB (Q3's strings with a comment the call needs gone, the forty-first's O8).
DUCK_FORMS = ["SELECT $a$--$a$ AS s, n_v--x\r() AS n", "SELECT E'\\'--' AS s, n_v--x\r() AS n",
              "SELECT $a$--$a$ AS s, n_v/* /* */ x */() AS n",
              # T2, T4
              "SELECT '--' AS a, $q$[$q$ AS b, 1 AS \u00d7$z$, n_v/**/() AS n"]


@pytest.mark.parametrize("sql", DUCK_FORMS)
def test_a_duckdb_macro_call_after_an_odd_string_counts(sql: str, tmp_path: Path) -> None:
    from pytest_queryeval.sources.duckdb import DuckdbSource

    source = DuckdbSource("t", tracks_with(tmp_path, *MACROS))
    try:
        assert _counts(source, "v_t", sql) == (1.0, 1.0, 1.0)
    finally:
        source.close()


@pytest.mark.parametrize("sql", [s.replace("n_v", "td") for s in DUCK_FORMS])
def test_a_duckdb_path_macro_after_an_odd_string_is_refused(sql: str, tmp_path: Path) -> None:
    from pytest_queryeval.errors import QueryRefused
    from pytest_queryeval.sources.duckdb import DuckdbSource

    source = DuckdbSource("t", tracks_with(
        tmp_path, "CREATE MACRO td() AS replace(current_setting('temp_directory'), '/', '|')"))
    try:
        with pytest.raises(QueryRefused, match="host's file system"):
            source.execute(sql)
    finally:
        source.close()


@pytest.mark.parametrize("text", [
    "SELECT $a$--$a$ AS s, * FROM/**/Employee",
    "SELECT 1 AS [--], * FROM --x\nEmployee",
    "SELECT E'\\'--' AS s, * FROM/**/Employee",
    "SELECT $A$ $a$--$A$ AS s, * FROM/**/Employee",  # tags are case-sensitive
])
def test_the_floor_reads_past_a_quoted_comment_mark(text: str) -> None:
    """The text-call floor (rule 5) reads the model's text with the same readings."""
    from tests.agents import probe_support as probe

    probe.assert_found(text, "reads a forbidden table")
