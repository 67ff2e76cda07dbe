"""A gold's neighbours, and the weak golds the audit names (issue 27 item 5): a gold whose
result on the real Chinook file equals an obviously different neighbour's cannot tell the two
apart there."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from pytest_queryeval.metrics.table import table_metrics
from pytest_queryeval.neighbours.mutate import indistinguishable, neighbours
from pytest_queryeval.results import ResultTable

#: One xdist worker runs the whole module: its module-scoped runs are made once, not
#: once per worker (``tests/together.py``).
pytestmark = pytest.mark.xdist_group("tests.neighbours.test_mutate")

CHINOOK = Path(__file__).resolve().parents[2] / "example_suite" / "data" / "chinook.sqlite"


def test_each_edit_makes_one_neighbour() -> None:
    got = [(n.edit, n.sql) for n in neighbours(
        "SELECT DISTINCT BillingCity FROM Invoice WHERE Total > 10 AND BillingCountry = 'USA' "
        "ORDER BY BillingCity DESC LIMIT 3")]
    assert sorted(edit for edit, _ in got) == sorted([
        "no DISTINCT", "WHERE without Total > 10", "WHERE without BillingCountry = 'USA'",
        ">= for >", "<> for =", "LIMIT 4 for LIMIT 3", "ASC for DESC"])
    assert dict(got)[">= for >"] == (
        "SELECT DISTINCT BillingCity FROM Invoice WHERE Total >= 10 AND "
        "BillingCountry = 'USA' ORDER BY BillingCity DESC LIMIT 3")
    assert sorted(n.edit for n in neighbours("SELECT max(Total) FROM Invoice GROUP BY CustomerId "
                                       "HAVING count(*) >= 7")) == [
        "> for >=", "MIN for MAX", "no HAVING (COUNT(*) >= 7)"]
    assert neighbours("not sql at all (") == []


def test_a_null_filter_an_aggregate_skips_anyway_is_no_neighbour() -> None:
    """Issue 48 item 5: AVG (SUM, MIN, MAX, COUNT) skips NULLs, so ``WHERE x IS NOT NULL``
    under an aggregate of x alone is the same query without it; with another output, a
    GROUP BY or another column it is a real neighbour."""
    def edits(sql: str) -> list[str]:
        return sorted(n.edit for n in neighbours(sql))

    assert edits("SELECT avg(ReportsTo) FROM Employee WHERE ReportsTo IS NOT NULL") == []
    assert edits("SELECT AVG(DISTINCT reportsto) AS a, max(ReportsTo) FROM Employee "
                 "WHERE ReportsTo IS NOT NULL AND Title = 'IT Staff'") == [
        "<> for =", "MIN for MAX", "WHERE without Title = 'IT Staff'"]
    dropped = "no WHERE (NOT ReportsTo IS NULL)"
    assert edits("SELECT ReportsTo FROM Employee WHERE ReportsTo IS NOT NULL") == [dropped]
    assert edits("SELECT avg(ReportsTo), count(*) FROM Employee "
                 "WHERE ReportsTo IS NOT NULL") == [dropped]
    assert edits("SELECT avg(EmployeeId) FROM Employee WHERE ReportsTo IS NOT NULL") == [dropped]
    assert edits("SELECT Title, avg(ReportsTo) FROM Employee WHERE ReportsTo IS NOT NULL "
                 "GROUP BY Title") == [dropped]


@pytest.fixture(scope="module")
def run():  # type: ignore[no-untyped-def]
    conn = sqlite3.connect(f"file:{CHINOOK}?mode=ro", uri=True)

    def execute(sql: str) -> ResultTable | None:
        try:
            cur = conn.execute(sql)
            return ResultTable([d[0] for d in cur.description], cur.fetchall())
        except sqlite3.Error:
            return None
    yield execute
    conn.close()


def same(a: ResultTable, b: ResultTable) -> bool:
    return table_metrics(a, b, order_matters=False)["execution_accuracy"] == 1.0


@pytest.mark.parametrize(("gold", "weak"), [
    # every invoice costs at least 0.99: the filter matches every row
    ("SELECT count(*) FROM Invoice WHERE Total >= 0.99", ["no WHERE (Total >= 0.99)"]),
    # no invoice totals exactly 14: > cannot be told from >= here
    ("SELECT count(*) FROM Invoice WHERE Total > 14", [">= for >"]),
    # genre names are unique: DISTINCT removes nothing
    ("SELECT DISTINCT Name FROM Genre", ["no DISTINCT"]),
    # AVG skips NULLs: the neighbour without IS NOT NULL is the same query (issue 48)
    ("SELECT avg(ReportsTo) FROM Employee WHERE ReportsTo IS NOT NULL", []),
    # a strong gold: every neighbour gives another result
    ("SELECT count(*) FROM Invoice WHERE Total > 13.86", []),
])
def test_weak_golds_are_named(run, gold: str, weak: list[str]) -> None:  # type: ignore[no-untyped-def]
    assert [n.edit for n in indistinguishable(gold, run, same)] == weak
