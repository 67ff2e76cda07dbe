"""What the counterexample-search corpus tests share: the default budget, the case's own
comparison, a read-only result, and Spider's concert_singer database built from its SQL."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from pytest_queryeval.metrics.table import table_metrics
from pytest_queryeval.neighbours import Budget
from pytest_queryeval.results import ResultTable

DATA = Path(__file__).resolve().parents[2] / "tests" / "data" / "neighbours"
#: The default budget's database count (the reference's run fuzzed 200 databases per gold
#: too); the seconds bound is generous so that a loaded machine changes nothing (the outcome
#: is decided by the database count).
BUDGET = Budget(databases=200, seconds=600)


def same_as_the_case(gold: str) -> Any:
    """EX as a case with this gold scores it (order matters where the gold orders)."""
    ordered = "order by" in gold.lower()

    def same(g: ResultTable, p: ResultTable) -> bool:
        return table_metrics(g, p, order_matters=ordered)["execution_accuracy"] == 1.0
    return same


def result(db: Path, sql: str) -> ResultTable:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        cur = conn.execute(sql)
        return ResultTable([d[0] for d in cur.description], [tuple(r) for r in cur.fetchall()])
    finally:
        conn.close()


def concert_singer(directory: Path) -> Path:
    """Spider's concert_singer database, built from ``concert_singer.sql`` in ``directory``."""
    path = directory / "concert_singer.sqlite"
    conn = sqlite3.connect(path)
    try:
        conn.executescript((DATA / "concert_singer.sql").read_text())
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
    finally:
        conn.close()
    return path


#: A small library-lending database (issue 49 item 7): member 1 borrowed 17 books, the others a
#: few, and every loan_date is an ISO date; ``COUNT(*) >= 15`` and ``> 15`` agree on it.
LIBRARY_MEMBERS = [(1, "Ada"), (2, "Ben"), (3, "Cleo"), (4, "Dev")]
LIBRARY_LOANS = ([(i, 1, f"2024-{1 + i % 12:02d}-{1 + i % 27:02d}") for i in range(1, 18)]
                 + [(18, 2, "2023-12-31"), (19, 2, "2024-01-01"), (20, 3, "2025-01-01"),
                    (21, 3, "2023-06-30"), (22, 4, "2025-02-14")])
#: Members with at least (or more than) 15 loans.
HAVING_15 = "SELECT member_id FROM loans GROUP BY member_id HAVING COUNT(*) {} 15"
