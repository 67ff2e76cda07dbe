"""The statement guard alone: what is a single read-only query and what is not."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_queryeval.errors import FormRefused, QueryRefused, QuerySyntaxError
from pytest_queryeval.sources.sqlguard import check_read_only, sqlglot_dialect

from .attacks import POSTGRES, POSTGRES_ALLOWED, SQLITE

ALLOWED = [
    "SELECT 1",
    "SELECT 1;",
    "select count(*) from artist",
    "SELECT name FROM artist WHERE name LIKE '%; DROP TABLE x' -- ; DELETE",
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT x FROM c",
    "(SELECT 1) UNION (SELECT 2)",
    "SELECT a.name FROM artist a JOIN album b ON a.artistid = b.artistid ORDER BY 1 LIMIT 3",
    "VALUES (1), (2)",
    "SELECT \"update\" FROM t",
    "SELECT FROM WHERE",  # unparseable but query-shaped: the engine reports the syntax error
]


@pytest.mark.parametrize("sql", ALLOWED)
@pytest.mark.parametrize("dialect", ["sqlite", "postgres", None])
def test_allowed(sql: str, dialect: str | None) -> None:
    check_read_only(sql, dialect)


@pytest.mark.parametrize("sql", SQLITE)
def test_refused_sqlite(sql: str) -> None:
    with pytest.raises(QueryRefused) as info:
        check_read_only(sql, "sqlite")
    assert info.value.reason().startswith("refused: ")


@pytest.mark.parametrize("sql", POSTGRES)
def test_refused_postgres(sql: str) -> None:
    with pytest.raises(QueryRefused):
        check_read_only(sql, "postgres")


def test_messages_name_the_statement() -> None:
    with pytest.raises(QueryRefused, match="2 statements"):
        check_read_only("SELECT 1; DROP TABLE genre", "sqlite")
    with pytest.raises(QueryRefused, match="DELETE inside"):
        check_read_only("WITH d AS (DELETE FROM g RETURNING *) SELECT * FROM d", "postgres")
    with pytest.raises(QueryRefused, match="DROP is not a read-only query"):
        check_read_only("/* x */ DROP TABLE g", "sqlite")
    # statements sqlglot reads as an expression (a column and its alias) are named as written
    for sql, word in [("LISTEN ch", "LISTEN"), ("DISCARD ALL", "DISCARD"),
                      ("NOTIFY ch", "NOTIFY"), ("CHECKPOINT", "CHECKPOINT"),
                      ("CLUSTER track", "CLUSTER"), ("SAVEPOINT a", "SAVEPOINT"),
                      ("DEALLOCATE p", "DEALLOCATE"), ("MOVE c", "MOVE")]:
        for dialect in ("postgres", "sqlite"):
            with pytest.raises(QueryRefused) as info:
                check_read_only(sql, dialect)
            assert str(info.value) == f"{word} is not a read-only query", (sql, dialect)
    with pytest.raises(QueryRefused, match=r"^REINDEX is not a read-only query"):
        check_read_only("REINDEX TABLE track", "postgres")
    with pytest.raises(QueryRefused, match=r"^2 statements \(SELECT, LISTEN\)"):
        check_read_only("SELECT 1; LISTEN ch", "postgres")
    with pytest.raises(QueryRefused, match="expected an SQL string"):
        check_read_only(None, "sqlite")  # type: ignore[arg-type]


def test_dialect_names() -> None:
    assert sqlglot_dialect("postgresql") == "postgres"
    assert sqlglot_dialect("sqlite") == "sqlite"
    assert sqlglot_dialect("mssql") == "tsql"
    assert sqlglot_dialect("no-such-engine") is None
    assert sqlglot_dialect(None) is None


def test_no_false_refusals_on_real_spider_queries(shared_data: Path) -> None:
    """Every gold and predicted query of the Spider dev examples is a plain query."""
    root = shared_data / "spider"
    refused = []
    count = 0
    for name in ("gold_example.txt", "pred_example.txt", "tsse_gold.txt", "tsse_predict.txt"):
        for line in (root / name).read_text().splitlines():
            sql = line.strip().split("\t")[0]
            if not sql:
                continue
            count += 1
            try:
                check_read_only(sql, "sqlite")
            except QueryRefused as e:
                refused.append((name, sql, e.reason()))
    assert count > 2500
    assert refused == []


@pytest.mark.parametrize("sql", POSTGRES_ALLOWED)
def test_postgres_dialect_queries_allowed(sql: str) -> None:
    check_read_only(sql, "postgres")


@pytest.mark.parametrize(("sql", "reason"), [
    ("SELEC name FROM artist",
     "cannot parse: syntax error at line 1, column 1: 'SELEC' does not start an SQL statement"),
    ("I cannot answer that.",
     "cannot parse: syntax error at line 1, column 1: 'I' does not start an SQL statement"),
    ("Sorry, I can't.",  # the apostrophe stops the tokenizer: the first word is named
     "cannot parse: syntax error at line 1, column 1: 'Sorry' does not start an SQL statement"),
    ("-- the query:\nhello there",
     "cannot parse: syntax error at line 2, column 1: 'hello' does not start an SQL statement"),
    ("`sql\nSELECT 1", "cannot parse: syntax error at line 1, column 1: '`' does not start"),
    ("FROM WHERE", "cannot parse: syntax error at line 1, column 1: 'FROM' does not start"),
    ("SELECT 'abc", "cannot parse: syntax error: Missing ' from 1:7"),
])
@pytest.mark.parametrize("dialect", ["sqlite", "postgres", None])
def test_a_syntax_error_is_not_called_a_refusal(sql: str, reason: str, dialect: str | None) -> None:
    """Issue 19: "cannot parse: syntax error at ..." vs "refused: not a read-only query"."""
    with pytest.raises(QuerySyntaxError) as info:
        check_read_only(sql, dialect)
    assert info.value.reason().startswith(reason)
    assert isinstance(info.value, QueryRefused)  # never executed, like a refusal


@pytest.mark.parametrize("sql", [
    "\ufeffDROP TABLE genre",  # an invisible character before a write is still a refusal
    "hello; DROP TABLE genre",
    "SELEC x FROM t; DELETE FROM t",
    "oops INSERT INTO genre VALUES (1)",
    "LISTEN ch",
    "VACUUM",
])
def test_a_write_is_refused_whatever_comes_first(sql: str) -> None:
    with pytest.raises(QueryRefused) as info:
        check_read_only(sql, "sqlite")
    assert not isinstance(info.value, QuerySyntaxError)
    assert info.value.reason().startswith("refused: ")


def test_each_distinct_text_is_parsed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The kind and the source both check a prediction, and suites repeat texts: one parse
    per (dialect, text), with the same verdict (a refusal raised afresh, same class and
    message)."""
    from pytest_queryeval.sources import sqlguard

    parsed: list[tuple[str, str | None]] = []
    real = sqlguard._check_sqlglot

    def counting(sql: str, dialect: str | None) -> None:
        parsed.append((sql, dialect))
        real(sql, dialect)

    monkeypatch.setattr(sqlguard, "_check_sqlglot", counting)
    ok = "SELECT name FROM artist /* parsed once */ ORDER BY 1"
    assert [check_read_only(ok, "sqlite") for _ in range(3)] == [(), (), ()]
    refused = "DELETE FROM artist /* parsed once */"
    reasons = []
    for _ in range(3):
        with pytest.raises(QueryRefused) as info:
            check_read_only(refused, "sqlite")
        assert type(info.value) is FormRefused  # the statement's form alone: a write here
        reasons.append(info.value.reason())
    assert reasons == ["refused: DELETE is not a read-only query"] * 3
    prose = "Sorry, I cannot answer that /* parsed once */"
    for _ in range(2):
        with pytest.raises(QuerySyntaxError, match="'Sorry' does not start"):
            check_read_only(prose, "sqlite")
    check_read_only(ok, "duckdb")  # another dialect is another verdict
    assert parsed == [(ok, "sqlite"), (refused, "sqlite"), (prose, "sqlite"), (ok, "duckdb")]


def test_the_cached_verdict_is_sqlglots_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """PostgreSQL's own parse depends on what is installed and runs each time: a refusal
    for a missing pglast is not remembered once pglast is back."""
    import sys

    pytest.importorskip("pglast")
    sql = "SELECT 1 /* verdict without pglast */"
    with monkeypatch.context() as m:
        m.setitem(sys.modules, "pglast", None)
        with pytest.raises(QueryRefused, match="needs pglast"):
            check_read_only(sql, "postgres")
    assert check_read_only(sql, "postgres") == ()
