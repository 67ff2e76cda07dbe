"""Counterexamples on a real DuckDB file: DuckDB enforces the copied constraints (keys, NOT
NULL, CHECK, foreign keys), the counterexample is written as a DuckDB file, and queries that
agree everywhere are never flagged."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from pytest_queryeval.metrics.table import table_metrics
from pytest_queryeval.neighbours import Budget, search
from pytest_queryeval.neighbours.engines import ENGINES, engine_for
from pytest_queryeval.results import ResultTable

duckdb = pytest.importorskip("duckdb")


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    path = tmp_path / "shop.duckdb"
    conn = duckdb.connect(str(path))
    conn.execute("CREATE TABLE customer (id INTEGER PRIMARY KEY, name VARCHAR NOT NULL, "
                 "country VARCHAR)")
    conn.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER NOT NULL "
                 "REFERENCES customer(id), total DOUBLE NOT NULL CHECK (total >= 0))")
    conn.execute("INSERT INTO customer VALUES (1, 'ann', 'NO'), (2, 'bob', 'SE'), (3, 'cy', 'NO')")
    conn.execute("INSERT INTO orders VALUES (1, 1, 30), (2, 2, 12), (3, 1, 7), (4, 3, 50)")
    conn.close()
    return path


def same(g: ResultTable, p: ResultTable) -> bool:
    return table_metrics(g, p, order_matters=False)["execution_accuracy"] == 1.0


def test_the_file_is_recognised_as_duckdb(shop: Path) -> None:
    assert engine_for(shop) is ENGINES["duckdb"]


@pytest.mark.parametrize(("gold", "predicted"), [
    ("SELECT count(*) FROM orders WHERE total >= 12", "SELECT count(*) FROM orders WHERE total > 7"),
    ("SELECT o.id FROM orders o JOIN customer c ON c.id = o.customer_id WHERE c.name = 'ann'",
     "SELECT id FROM orders WHERE customer_id = 1"),
    ("SELECT count(*) FROM customer", "SELECT count(country) FROM customer"),
])
def test_coincidental_passes_are_proven_wrong(shop: Path, gold: str, predicted: str,
                                              tmp_path: Path) -> None:
    real = ENGINES["duckdb"].open_real(shop)
    try:
        deadline = time.monotonic() + 60
        assert same(ENGINES["duckdb"].run(real, gold, deadline),  # type: ignore[arg-type]
                    ENGINES["duckdb"].run(real, predicted, deadline))  # type: ignore[arg-type]
    finally:
        real.close()
    found = search(shop, gold, predicted, same, budget=Budget(databases=200, seconds=600))
    ce = found.counterexample
    assert ce is not None and ce.engine == "duckdb"
    out = tmp_path / "ce.duckdb"
    ce.write(out)
    conn = duckdb.connect(str(out), read_only=True)
    try:
        g = ResultTable(["x"], conn.execute(gold).fetchall())
        p = ResultTable(["x"], conn.execute(predicted).fetchall())
        totals = conn.execute("SELECT total FROM orders").fetchall()
    finally:
        conn.close()
    assert not same(g, p)
    assert all(t >= 0 for (t,) in totals)  # the CHECK constraint held


@pytest.mark.parametrize(("gold", "predicted"), [
    ("SELECT count(*) FROM orders o JOIN customer c ON c.id = o.customer_id",
     "SELECT count(*) FROM orders"),  # NOT NULL foreign key: every order has its customer
    ("SELECT DISTINCT country FROM customer", "SELECT country FROM customer GROUP BY country"),
])
def test_equivalent_rewrites_are_not_flagged(shop: Path, gold: str, predicted: str) -> None:
    found = search(shop, gold, predicted, same, budget=Budget(databases=40, seconds=600))
    assert found.counterexample is None
    assert found.checked == 40
