"""Golds whose answer is not a function of the data (issue 41 item 3): each smell a finding
with its evidence, decided on the gold's own data, on real SQLite, DuckDB and PostgreSQL
databases, and no finding on the deterministic forms of the same golds."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any

import pytest

from pytest_queryeval.audit import audit_case
from pytest_queryeval.engine import Evaluator
from tests.support import make_case

#: Five drivers: points stored as text ('9.5' sorts above '10'), birth dates as M/D/YYYY text.
ROWS = [(1, "ann", "9.5", "12/31/1990", "red"), (2, "bob", "10", "1/5/1991", "red"),
        (3, "cat", "8", "3/3/1989", "blue"), (4, "dan", "12.25", "11/2/1992", "blue"),
        (5, "eve", "7", "2/14/1988", "green")]
SCHEMA = ("CREATE TABLE drivers (id INTEGER PRIMARY KEY, name TEXT, points TEXT, born TEXT, "
          "team TEXT)")
SCORES = "CREATE TABLE scores (id INTEGER PRIMARY KEY, name TEXT, score REAL, played TEXT)"
SCORE_ROWS = [(1, "a", 3.0, "2024-01-05"), (2, "b", 5.0, "2024-02-10"),
              (3, "c", 5.0, "2024-11-01")]


class _Cache(dict[str, Any]):
    def set(self, key: str, value: Any) -> None:
        self[key] = value


def _insert(execute: Callable[[str], Any]) -> None:
    execute(SCHEMA)
    execute(SCORES)
    for r in ROWS:
        execute("INSERT INTO drivers VALUES ({}, '{}', '{}', '{}', '{}')".format(*r))
    for r in SCORE_ROWS:
        execute("INSERT INTO scores VALUES ({}, '{}', {}, '{}')".format(*r))


@pytest.fixture(scope="module")
def sqlite_spec(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    path = tmp_path_factory.mktemp("smells") / "f1.sqlite"
    with sqlite3.connect(path) as con:
        _insert(con.execute)
    con.close()
    return {"type": "sqlite", "path": str(path)}


@pytest.fixture(scope="module")
def duckdb_spec(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    duckdb = pytest.importorskip("duckdb")
    path = tmp_path_factory.mktemp("smells") / "f1.duckdb"
    con = duckdb.connect(str(path))
    _insert(con.execute)
    con.close()
    return {"type": "duckdb", "path": str(path)}


@pytest.fixture(scope="module")
def postgres_spec(postgres_server: Any) -> dict[str, Any]:
    postgres_server.superuser_execute("DROP DATABASE IF EXISTS smells", "CREATE DATABASE smells")
    postgres_server.superuser_execute(
        SCHEMA.replace("INTEGER PRIMARY KEY", "integer PRIMARY KEY"),
        SCORES.replace("REAL", "double precision"),
        *("INSERT INTO drivers VALUES ({}, '{}', '{}', '{}', '{}')".format(*r) for r in ROWS),
        *("INSERT INTO scores VALUES ({}, '{}', {}, '{}')".format(*r) for r in SCORE_ROWS),
        f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {postgres_server.readonly_user}",
        database="smells")
    postgres_server.apply_least_privilege("smells")
    return {"type": "sqlalchemy", "url": postgres_server.readonly_url("smells")}


ENGINES = ["sqlite", "duckdb", pytest.param("postgres", marks=pytest.mark.postgres)]


@pytest.fixture(params=ENGINES)
def spec(request: pytest.FixtureRequest) -> dict[str, Any]:
    return dict(request.getfixturevalue(f"{request.param}_spec"))


def _findings(spec: dict[str, Any], gold: str) -> dict[str, str]:
    case = make_case("sql", gold=gold, source_spec=spec, datasource="f1")
    result = audit_case(case, Evaluator(cache=_Cache()))
    return {f.code: f.message for f in result.findings}


def test_limit_without_order_by(spec: dict[str, Any]) -> None:
    found = _findings(spec, "SELECT name FROM drivers WHERE team = 'red' LIMIT 1")
    message = found["limit-without-order"]
    assert message.startswith("LIMIT 1 without ORDER BY keeps 1 row of 2 candidate rows in "
                              "the engine's scan order")
    assert "it could as well return ('ann')" in message or "('bob')" in message


def test_order_by_text_that_holds_numbers(spec: dict[str, Any]) -> None:
    found = _findings(spec, "SELECT name FROM drivers ORDER BY points DESC LIMIT 1")
    assert found["text-sorted-numbers"] == (
        "ORDER BY points DESC sorts text that holds numbers: '7' sorts above '12.25', so the "
        "order (and what a LIMIT keeps) is the text order, not the numbers'. Order by "
        "CAST(points AS REAL) if numbers are meant")


def test_unordered_group_concat(spec: dict[str, Any]) -> None:
    gold = {"sqlite": "SELECT team, group_concat(name) FROM drivers GROUP BY team",
            "duckdb": "SELECT team, string_agg(name, ',') FROM drivers GROUP BY team",
            "sqlalchemy": "SELECT team, string_agg(name, ',') FROM drivers GROUP BY team"}
    found = _findings(spec, gold[spec["type"]])
    assert "joins up to 2 values per group in the order the engine meets them" in (
        found["unordered-aggregate"])
    arrays = _findings(spec, "SELECT team, " + {"sqlite": "json_group_array(name)",
                                                "duckdb": "array_agg(name)",
                                                "sqlalchemy": "array_agg(name)"}[spec["type"]]
                       + " FROM drivers GROUP BY team")
    assert "unordered-aggregate" in arrays


def test_min_max_of_text_that_holds_numbers(spec: dict[str, Any]) -> None:
    found = _findings(spec, "SELECT MAX(points) FROM drivers")
    assert found["text-min-max"] == (
        "MAX(points) compares text that holds numbers: its largest value as text is '9.5', as "
        "a number '12.25'. Use MAX(CAST(points AS REAL)) if numbers are meant")
    grouped = _findings(spec, "SELECT team, MIN(points) FROM drivers GROUP BY team")
    assert "its smallest value as text is '10', as a number '9.5'" in grouped["text-min-max"]


def test_a_text_date_compared_in_a_format_that_does_not_sort(spec: dict[str, Any]) -> None:
    found = _findings(spec, "SELECT name FROM drivers WHERE born < '6/1/1991'")
    assert found["text-date-compare"] == (
        "compares born, a date stored as text in the format MM/DD/YYYY, with '6/1/1991' as "
        "text: '11/2/1992' sorts before '12/31/1990' as text though it is the later date, so "
        "the comparison does not follow the calendar. Compare parsed dates, or store ISO "
        "dates (YYYY-MM-DD)")


@pytest.mark.parametrize("gold", [
    "SELECT name FROM scores ORDER BY score DESC, name LIMIT 1",
    "SELECT name FROM drivers ORDER BY CAST(points AS REAL) DESC LIMIT 1",
    "SELECT count(*) FROM drivers LIMIT 1",
    "SELECT name FROM drivers WHERE id = 3 LIMIT 1",
    "SELECT MAX(CAST(points AS REAL)) FROM drivers",
    "SELECT MAX(score) FROM scores",
    "SELECT name FROM scores WHERE played < '2024-03-01'",
    "SELECT team, count(*) FROM drivers GROUP BY team ORDER BY team",
    "SELECT group_concat(name) FROM drivers WHERE id = 1",
])
def test_no_false_alarm_on_deterministic_golds(spec: dict[str, Any], gold: str) -> None:
    if spec["type"] != "sqlite":
        gold = gold.replace("group_concat(name)", "string_agg(name, ',')")
    smells = {"limit-without-order", "text-sorted-numbers", "unordered-aggregate",
              "text-min-max", "text-date-compare"}
    assert not smells & set(_findings(spec, gold))


@pytest.mark.parametrize("engine", ["duckdb", pytest.param("postgres",
                                                           marks=pytest.mark.postgres)])
def test_an_ordered_aggregate_is_not_flagged(engine: str, request: pytest.FixtureRequest
                                             ) -> None:
    spec = request.getfixturevalue(f"{engine}_spec")
    found = _findings(spec, "SELECT team, string_agg(name, ',' ORDER BY name) FROM drivers "
                            "GROUP BY team")
    assert "unordered-aggregate" not in found
    found = _findings(spec, "SELECT team, array_agg(name ORDER BY name) FROM drivers "
                            "GROUP BY team")
    assert "unordered-aggregate" not in found


def test_the_findings_reach_the_suite_report(pytester: pytest.Pytester, sqlite_spec) -> None:
    """Through ``--queryeval-audit-golds`` as a user runs it: a warning, located, in the JSON."""
    from tests.support import run_report, write_suite

    write_suite(pytester.path, config={"datasources": {"f1": sqlite_spec}},
                files={"test_f1.yaml": {"kind": "sql", "datasource": "f1", "cases": [
                    {"id": "top", "question": "Who scored most?",
                     "gold": "SELECT name FROM drivers ORDER BY points DESC LIMIT 1"}]}})
    result, report = run_report(pytester, "--queryeval-audit-golds=warn")
    assert result.ret == 0
    found = [(f["id"], f["code"], f["severity"]) for f in report["audit"]["findings"]]
    assert ("top", "text-sorted-numbers", "warning") in found
