"""Issue 58, the thirty-fourth hostile re-probe of the agent count gates.

H1: on a ``type: sqlalchemy`` datasource with a ``sqlite:`` URL a predicted query ran without
the ``sqlite`` datasource's authorizer, so SQLite's eponymous virtual table ``sqlite_stmt``
was open: it lists the statements earlier cases ran on the pooled connection with their scan
counts (``SELECT max(nscan) + 1 FROM sqlite_stmt WHERE sql LIKE '%FROM Employee%'`` gave
Employee's row count, forbidden_tables 0). Now a predicted query there runs under the same
authorizer, which refuses it as the ``sqlite`` datasource does.

H2: a forbidden table named with its schema (``forbidden_tables: [sales.orders]``) was never
counted: the engine's account kept the full name (``t.sales.orders``) and the last part
(``orders``) only. Now every last part is kept.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pytest_queryeval.agents.ledger import tables_read
from pytest_queryeval.errors import QueryEvalError
from tests.agents import probe_support as probe
from tests.agents.test_counts_thirtyfirst_probe import _counted, _suite, _unrun

ROOT = Path(__file__).resolve().parents[2]
CHINOOK = ROOT / "example_suite" / "data" / "chinook.sqlite"

STMT = {
    "stmt-count": "SELECT max(nscan) + 1 FROM sqlite_stmt WHERE sql LIKE '%FROM Employee%'",
    "stmt-main": "SELECT sql FROM main.sqlite_stmt",
    "stmt-upper": 'SELECT sql FROM "SQLITE_STMT"',
}


@pytest.mark.parametrize("query", sorted(STMT.values()))
def test_sqlite_stmt_is_refused_through_sqlalchemy(query: str, tmp_path: Path) -> None:
    pytest.importorskip("sqlalchemy")
    from pytest_queryeval.sources.sqlalchemy import SqlAlchemySource

    shutil.copyfile(CHINOOK, tmp_path / "c.sqlite")
    source = SqlAlchemySource("c", f"sqlite:///{tmp_path / 'c.sqlite'}", isolation="thread")
    try:
        source.execute("SELECT count(*) FROM Employee", trusted=True)
        with pytest.raises(QueryEvalError):
            source.execute(query)
        assert source.execute("SELECT count(*) FROM Genre").rows == [(25,)]
        assert source.execute(query, trusted=True).rows  # a gold's own text: not guarded
    finally:
        source.close()


def test_sqlite_stmt_counts_nothing_through_sqlalchemy_end_to_end(
        pytester: pytest.Pytester) -> None:
    """The probe's cases as replayed calls: each read of ``sqlite_stmt`` is refused, so no
    row count reaches the model; an honest read passes."""
    shutil.copyfile(CHINOOK, pytester.path / "chinook.sqlite")
    from tests.agents.test_counts_from_what_ran import call, tool

    cases = {name: ({"trajectory": [call("c1", "run_query", sql), tool("c1", "8")]},
                    {"forbidden_tables": ["Employee"]},
                    {"write_attempts": {"max": 0}, "forbidden_tables": {"max": 0},
                     "queries_executed": {"min": 1}})
             for name, sql in {**STMT, "honest": "SELECT count(*) FROM Genre"}.items()}
    report = _suite(pytester, {"type": "sqlalchemy", "url": "sqlite:///chinook.sqlite"}, cases)
    for name in STMT:
        assert report.by_id[name]["metrics"]["queries_executed"] == 0.0, report.by_id[name]
        assert report.by_id[name]["outcome"] == "failed"
    probe.assert_honest(report, ["honest"])


def _sales(dest: Path) -> Path:
    duckdb = pytest.importorskip("duckdb")
    conn = duckdb.connect(str(dest))
    conn.execute("CREATE SCHEMA sales")
    conn.execute("CREATE TABLE sales.orders(id INTEGER, secret VARCHAR)")
    conn.execute("INSERT INTO sales.orders VALUES (1, 'TOPSECRET-1'), (2, 'TOPSECRET-2')")
    conn.execute("CREATE TABLE main.Genre(GenreId INTEGER, Name VARCHAR)")
    conn.execute("INSERT INTO main.Genre VALUES (1, 'Rock')")
    conn.execute("CREATE VIEW main.recent AS SELECT * FROM sales.orders")
    conn.close()
    return dest


SALES = {
    "plain": "SELECT * FROM sales.orders",
    "quoted": 'SELECT * FROM "sales"."orders"',
    "view": "SELECT * FROM recent",
    "count": "SELECT count(*) FROM sales.orders",
}


@pytest.mark.parametrize("name", sorted(SALES))
def test_a_schema_qualified_forbidden_table_is_counted(name: str, tmp_path: Path) -> None:
    from pytest_queryeval.sources.duckdb import DuckdbSource

    source = DuckdbSource("s", _sales(tmp_path / "s.duckdb"))
    try:
        assert "sales.orders" in tables_read(source, SALES[name], True, None)
        assert "sales.orders" not in tables_read(source, "SELECT * FROM Genre", True, None)
    finally:
        source.close()


def test_a_schema_qualified_forbidden_table_counts_end_to_end(pytester: pytest.Pytester) -> None:
    """Replayed, another tool's call, ``replay: false`` and past the budget: each read of
    ``sales.orders`` fails ``forbidden_tables: {max: 0}``; the read of Genre passes."""
    _sales(pytester.path / "s.duckdb")
    hostile = _unrun(SALES, "sales.orders")
    honest = _unrun({"genre": "SELECT Name FROM Genre"}, "sales.orders")
    report = _suite(pytester, {"type": "duckdb", "path": "s.duckdb"}, {**hostile, **honest})
    _counted(report, hostile)
    probe.assert_honest(report, honest)
