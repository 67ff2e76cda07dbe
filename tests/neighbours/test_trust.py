"""Counterexamples a user can trust (issue 49 item 7), on a small library-lending database.

A date column gets dates: on an ISO-date column the search used to build rows dated ``'2024'``
or ``'2024%a'`` and so "refuted" predictions that are right on every well-formed date
(``strftime('%Y', loan_date) = '2024'`` against ``loan_date LIKE '2024-%'``). And groups reach
the thresholds the queries compare counts with: candidates of at most 8 rows a table never held
the group of exactly 15 loans that tells ``HAVING COUNT(*) >= 15`` from ``> 15``.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from pytest_queryeval.metrics.table import table_metrics
from pytest_queryeval.neighbours import Budget, search
from pytest_queryeval.neighbours.schema import introspect
from pytest_queryeval.neighbours.values import both_pools, parse_date
from pytest_queryeval.results import ResultTable
from tests.neighbours.support import HAVING_15 as HAVING
from tests.neighbours.support import LIBRARY_LOANS as LOANS
from tests.neighbours.support import LIBRARY_MEMBERS as MEMBERS

BUDGET = Budget(databases=200, seconds=600)
DDL = ("CREATE TABLE members (id INTEGER PRIMARY KEY, name TEXT NOT NULL)",
       "CREATE TABLE loans (id INTEGER PRIMARY KEY, member_id INTEGER NOT NULL "
       "REFERENCES members(id), loan_date TEXT)")
DUCK_DDL = ("CREATE TABLE members (id INTEGER PRIMARY KEY, name VARCHAR NOT NULL)",
            "CREATE TABLE loans (id INTEGER PRIMARY KEY, member_id INTEGER NOT NULL "
            "REFERENCES members(id), loan_date VARCHAR)")


def same(g: ResultTable, p: ResultTable) -> bool:
    return table_metrics(g, p, order_matters=False)["execution_accuracy"] == 1.0


@pytest.fixture
def library(tmp_path: Path) -> Path:
    path = tmp_path / "library.sqlite"
    conn = sqlite3.connect(path)
    for statement in DDL:
        conn.execute(statement)
    conn.executemany("INSERT INTO members VALUES (?, ?)", MEMBERS)
    conn.executemany("INSERT INTO loans VALUES (?, ?, ?)", LOANS)
    conn.commit()
    conn.close()
    return path


@pytest.fixture
def library_duckdb(tmp_path: Path) -> Path:
    duckdb = pytest.importorskip("duckdb")
    path = tmp_path / "library.duckdb"
    conn = duckdb.connect(str(path))
    for statement in DUCK_DDL:
        conn.execute(statement)
    conn.executemany("INSERT INTO members VALUES (?, ?)", MEMBERS)
    conn.executemany("INSERT INTO loans VALUES (?, ?, ?)", LOANS)
    conn.close()
    return path


def _real(db: Path, sql: str) -> list[Any]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return sorted(conn.execute(sql).fetchall())
    finally:
        conn.close()


YEAR_GOLD = "SELECT count(*) FROM loans WHERE strftime('%Y', loan_date) = '2024'"


@pytest.mark.parametrize("predicted", [
    "SELECT count(*) FROM loans WHERE loan_date LIKE '2024-%'",
    "SELECT count(*) FROM loans WHERE loan_date LIKE '2024%'",
    "SELECT count(*) FROM loans WHERE loan_date >= '2024-01-01' AND loan_date < '2025-01-01'",
    "SELECT count(*) FROM loans WHERE loan_date >= '2024' AND loan_date < '2025'",
])
def test_a_right_prediction_on_an_iso_date_column_is_not_refuted(library: Path,
                                                                  predicted: str) -> None:
    assert _real(library, YEAR_GOLD) == _real(library, predicted) == [(18,)]
    found = search(library, YEAR_GOLD, predicted, same, budget=BUDGET)
    assert found.counterexample is None, found.counterexample.to_sql()  # type: ignore[union-attr]
    assert found.checked == 200


def test_a_date_columns_pools_hold_only_dates_around_the_year(library: Path) -> None:
    conn = sqlite3.connect(library)
    try:
        schema = introspect(conn)

        def sample(table: str, column: str) -> list[Any]:
            return [r[0] for r in conn.execute(f'SELECT DISTINCT "{column}" FROM "{table}"')]

        pools, real = both_pools(sample, schema,
                                 [YEAR_GOLD, "SELECT count(*) FROM loans WHERE loan_date "
                                  "LIKE '2024%'"])
    finally:
        conn.close()
    for pool in (pools[("loans", "loan_date")], real[("loans", "loan_date")]):
        texts = [v for v in pool if v is not None]
        assert all(parse_date(v, "%Y-%m-%d") for v in texts), texts
        # the year's edges, and the days either side of them
        assert {"2023-12-31", "2024-01-01", "2024-12-31", "2025-01-01"} <= set(texts)
        assert "2024" not in texts and "2024%a" not in texts and "%Y" not in texts


def test_a_wrong_date_prediction_is_still_caught_on_dates(library: Path) -> None:
    predicted = ("SELECT count(*) FROM loans WHERE loan_date >= '2024-01-01' "
                 "AND loan_date < '2024-12-31'")
    assert _real(library, YEAR_GOLD) == _real(library, predicted)
    ce = search(library, YEAR_GOLD, predicted, same, budget=BUDGET).counterexample
    assert ce is not None
    dates = [row[2] for row in ce.rows["loans"]]
    assert dates == ["2024-12-31"]  # the last day of the year, and nothing made up


@pytest.mark.parametrize("predicted", [HAVING.format(">"),
                                       HAVING.format(">=").replace("15", "16")])
def test_a_group_of_exactly_the_threshold_tells_ge_from_gt(library: Path,
                                                          predicted: str) -> None:
    gold = HAVING.format(">=")
    assert _real(library, gold) == _real(library, predicted) == [(1,)]
    found = search(library, gold, predicted, same, budget=BUDGET)
    ce = found.counterexample
    assert ce is not None, found
    members = [row[1] for row in ce.rows["loans"]]
    # shrunk: one member with exactly 15 loans, which >= counts and > does not
    assert len(members) == 15 and len(set(members)) == 1
    assert ce.gold.rows == [(members[0],)] and ce.predicted.rows == []  # type: ignore[union-attr]


def test_an_equivalent_threshold_is_not_flagged(library: Path) -> None:
    found = search(library, HAVING.format(">="), HAVING.format(">").replace("15", "14"), same,
                   budget=BUDGET)
    assert found.counterexample is None and found.checked == 200


def test_a_threshold_past_the_cap_is_said_not_reached(library: Path) -> None:
    gold = HAVING.replace("15", "100").format(">=")
    predicted = HAVING.replace("15", "100").format(">")
    found = search(library, gold, predicted, same, budget=Budget(databases=20, seconds=600))
    assert found.counterexample is None
    assert any("100" in note and "64" in note for note in found.notes), found.notes


# -- the same on DuckDB ------------------------------------------------------------------------

DUCK_YEAR_GOLD = "SELECT count(*) FROM loans WHERE substr(loan_date, 1, 4) = '2024'"


def test_duckdb_a_right_date_prediction_is_not_refuted(library_duckdb: Path) -> None:
    predicted = "SELECT count(*) FROM loans WHERE loan_date LIKE '2024-%'"
    found = search(library_duckdb, DUCK_YEAR_GOLD, predicted, same, budget=BUDGET)
    assert found.counterexample is None, found.counterexample.to_sql()  # type: ignore[union-attr]
    assert found.checked == 200


def test_duckdb_a_group_of_exactly_the_threshold_tells_ge_from_gt(library_duckdb: Path) -> None:
    found = search(library_duckdb, HAVING.format(">="), HAVING.format(">"), same, budget=BUDGET)
    ce = found.counterexample
    assert ce is not None and ce.engine == "duckdb"
    members = [row[1] for row in ce.rows["loans"]]
    assert len(members) == 15 and len(set(members)) == 1


def test_a_junction_table_groups_under_one_parent() -> None:
    """A composite key (``PlaylistTrack``: playlist, track) keeps its first column and takes a
    free parent key for the last: one playlist with exactly 20 tracks."""
    db = Path(__file__).resolve().parents[2] / "example_suite" / "data" / "chinook.sqlite"
    query = ("SELECT PlaylistId FROM PlaylistTrack GROUP BY PlaylistId "
             "HAVING count(*) {} 20 AND count(*) < 100")
    gold, predicted = query.format(">="), query.format(">")
    assert _real(db, gold) == _real(db, predicted)
    ce = search(db, gold, predicted, same, budget=BUDGET).counterexample
    assert ce is not None
    playlists = [row[0] for row in ce.rows["PlaylistTrack"]]
    assert len(playlists) == 20 and len(set(playlists)) == 1
    assert ce.gold.rows == [(playlists[0],)] and ce.predicted.rows == []  # type: ignore[union-attr]
