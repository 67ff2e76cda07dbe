"""The audit's text and JSON lints and its tie-break rewrites, without pytest plumbing."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from pytest_queryeval.audit import AuditResult
from pytest_queryeval.kinds.goldchecks.jsonlint import lint_json as _lint_json
from pytest_queryeval.kinds.goldchecks.query import SPARQL_RULES, SQL_RULES, lint_text, tie_variants
from pytest_queryeval.kinds.goldchecks.query import lint_table as _lint_table
from pytest_queryeval.results import ResultTable


@pytest.mark.parametrize(("sql", "found"), [
    ("SELECT count(*) FROM t WHERE d <= CURRENT_DATE", "CURRENT_DATE"),
    ("SELECT count(*) FROM t WHERE d <= current_timestamp", "CURRENT_TIMESTAMP"),
    ("SELECT now() - d FROM t", "NOW()"),
    ("SELECT * FROM t WHERE d > GETDATE()", "GETDATE()"),
    ("SELECT * FROM t WHERE d > julianday('now') - 30", "julianday('now')"),
    ("SELECT strftime('%Y', 'now')", "strftime('%Y', 'now')"),
    ("SELECT * FROM t WHERE d < 'yesterday'::date", "'yesterday'::"),
    ("SELECT * FROM t WHERE d < DATE 'today'", "DATE 'today'"),
])
def test_clock_functions_are_found(sql: str, found: str) -> None:
    [(code, message)] = lint_text(sql, SQL_RULES)
    assert code == "clock-dependent" and found in message


@pytest.mark.parametrize("sql", [
    "SELECT now_playing FROM t",                    # a column, not a call
    "SELECT * FROM t WHERE note = 'now'",           # a value, not SQLite's clock
    "SELECT * FROM t -- CURRENT_DATE would be wrong here",
    "SELECT 'CURRENT_DATE' AS label FROM t",
])
def test_no_clock_in_names_strings_and_comments(sql: str) -> None:
    assert lint_text(sql, SQL_RULES) == []


def test_random_functions() -> None:
    assert [c for c, _ in lint_text("SELECT * FROM t ORDER BY RANDOM() LIMIT 1", SQL_RULES)] == [
        "nondeterministic"]
    assert [c for c, _ in lint_text('SELECT (STRUUID() AS ?u) WHERE {}', SPARQL_RULES)] == [
        "nondeterministic"]
    assert lint_text('SELECT ?s WHERE { ?s ?p "NOW()" }', SPARQL_RULES) == []


def test_tie_variants_extend_the_outer_order_by(tmp_path: Path) -> None:
    low, high = tie_variants("SELECT a, b FROM t ORDER BY a LIMIT 2", SQL_RULES, ["a", "b"], "sqlite")
    assert low.replace(" ASC NULLS LAST", "") == "SELECT a, b FROM t ORDER BY a, 1, 2 LIMIT 2"
    assert high == "SELECT a, b FROM t ORDER BY a, 1 DESC, 2 DESC LIMIT 2"
    assert tie_variants("SELECT a FROM t ORDER BY a", SQL_RULES, ["a"], "sqlite") is None
    assert tie_variants("SELECT a FROM (SELECT a FROM t ORDER BY a LIMIT 1)", SQL_RULES, ["a"],
                        "sqlite") is None  # the outer query orders nothing
    low, high = tie_variants("SELECT ?x ?n WHERE { ?x ?p ?n } ORDER BY DESC(?n) LIMIT 5",
                             SPARQL_RULES, ["x", "n"])
    assert low == "SELECT ?x ?n WHERE { ?x ?p ?n } ORDER BY DESC(?n) ASC(?x) ASC(?n) LIMIT 5"
    assert high.endswith("ORDER BY DESC(?n) DESC(?x) DESC(?n) LIMIT 5")
    assert tie_variants("SELECT ?x WHERE { ?x ?p ?n } LIMIT 5", SPARQL_RULES, ["x"]) is None
    # the rewritten SQL runs, and separates the tied rows
    db = tmp_path / "t.sqlite"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE t (a INT, b TEXT)")
        conn.executemany("INSERT INTO t VALUES (?, ?)", [(1, "x"), (2, "y"), (2, "z")])
        low, high = tie_variants("SELECT b FROM t ORDER BY a LIMIT 2", SQL_RULES, ["b"], "sqlite")
        assert conn.execute(low).fetchall() == [("x",), ("y",)]
        assert conn.execute(high).fetchall() == [("x",), ("z",)]


def test_json_lints() -> None:
    found = AuditResult()
    _lint_json('{"a": NaN}', found)
    assert [f.code for f in found.findings] == ["invalid-json"]
    assert "NaN is not JSON" in found.findings[0].message
    found = AuditResult()
    _lint_json('{"a": 1, "b": {"c": 1, "c": 2}}', found)
    assert [(f.code, f.severity) for f in found.findings] == [("duplicate-json-key", "warning")]
    assert "c" in found.findings[0].message
    found = AuditResult()
    _lint_json({"a": float("inf")}, found)
    assert [f.code for f in found.findings] == ["invalid-json"]
    found = AuditResult()
    _lint_json({"a": [1, "x"]}, found)
    assert found.findings == []


def test_slow_gold_is_over_half_its_timeout() -> None:
    found = AuditResult()
    _lint_table(ResultTable(["n"], [(1,)], seconds=0.6), found, None, 1.0)
    assert [f.code for f in found.findings] == ["slow-gold"]
    assert "took 0.60 s, over half its 1 s timeout" in found.findings[0].message
    found = AuditResult()
    _lint_table(ResultTable(["n"], [(1,)], seconds=0.4), found, None, 1.0)
    assert found.findings == []
