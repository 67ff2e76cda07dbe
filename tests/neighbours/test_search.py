"""Counterexample databases (issue 27) on the real Chinook file: the corpus of coincidental
passes is caught, its equivalent rewrites are never flagged, every counterexample is a proof
(a real, constraint-checked SQLite file on which the two queries differ), shrunk, and the
search is deterministic."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
import yaml

from pytest_queryeval.neighbours import Budget, search
from pytest_queryeval.neighbours.engines import ENGINES, Failed
from pytest_queryeval.neighbours.search import Rows, _differs
from tests.neighbours.support import BUDGET, result, same_as_the_case

ROOT = Path(__file__).resolve().parents[2]
CHINOOK = ROOT / "example_suite" / "data" / "chinook.sqlite"
CORPUS = yaml.safe_load((ROOT / "tests" / "data" / "neighbours" / "chinook.yaml").read_text())


@pytest.mark.parametrize("pair", CORPUS["coincidental"] + CORPUS["equivalent"],
                         ids=lambda p: p["predicted"][:50])
def test_every_pair_passes_on_the_real_database(pair: dict[str, str]) -> None:
    same = same_as_the_case(pair["gold"])
    assert same(result(CHINOOK, pair["gold"]), result(CHINOOK, pair["predicted"]))


def test_coincidental_passes_are_caught_and_equivalents_never_flagged(tmp_path: Path) -> None:
    missed = [p for p in CORPUS["coincidental"]
              if search(CHINOOK, p["gold"], p["predicted"], same_as_the_case(p["gold"]),
                        budget=BUDGET).counterexample is None]
    recall = 1 - len(missed) / len(CORPUS["coincidental"])
    assert recall >= 0.9, [p["reason"] for p in missed]
    alarms = [p for p in CORPUS["equivalent"]
              if search(CHINOOK, p["gold"], p["predicted"], same_as_the_case(p["gold"]),
                        budget=BUDGET).counterexample is not None]
    assert alarms == []


@pytest.mark.parametrize("pair", CORPUS["coincidental"][:8], ids=lambda p: p["reason"][:40])
def test_a_counterexample_is_a_proof_and_small(pair: dict[str, str], tmp_path: Path) -> None:
    same = same_as_the_case(pair["gold"])
    found = search(CHINOOK, pair["gold"], pair["predicted"], same, budget=BUDGET)
    ce = found.counterexample
    assert ce is not None
    path = tmp_path / "counterexample.sqlite"
    ce.write(path)
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA foreign_keys = ON")
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    finally:
        conn.close()
    gold, pred = result(path, pair["gold"]), result(path, pair["predicted"])
    assert not same(gold, pred)
    assert (gold.rows, pred.rows) == (ce.gold.rows, ce.predicted.rows)
    assert ce.row_count <= 6
    # 1-minimal: leaving out any one row makes the two agree (or a query fail)
    for table, rows in ce.rows.items():
        for i in range(len(rows)):
            fewer: Rows = {**ce.rows, table: rows[:i] + rows[i + 1:]}
            outcome = _differs(ENGINES["sqlite"], ce.schema, fewer, pair["gold"], pair["predicted"], same,
                               seconds=600.0)
            assert isinstance(outcome, Failed) or not outcome[0] or outcome[1] != fewer \
                or outcome[2] is not None


def test_the_search_is_deterministic_and_reuses_the_golds_databases() -> None:
    pair = CORPUS["coincidental"][0]
    same = same_as_the_case(pair["gold"])
    first = search(CHINOOK, pair["gold"], pair["predicted"], same, seed=7, budget=BUDGET)
    again = search(CHINOOK, pair["gold"], pair["predicted"], same, seed=7, budget=BUDGET)
    assert first.counterexample is not None and again.counterexample is not None
    assert first.counterexample.rows == again.counterexample.rows
    assert first.checked == again.checked
    # The gold's suite was built once: every candidate of it checked again was reused.
    assert again.reused == min(again.checked, BUDGET.databases * 3 // 4)
    other_seed = search(CHINOOK, pair["gold"], pair["predicted"], same, seed=8, budget=BUDGET)
    assert other_seed.counterexample is not None


def test_what_ran_before_never_changes_a_search(tmp_path: Path) -> None:
    """A gold's suite is reused only by a prediction that would build the same candidates: one
    that reads another table (here ``customers``, through a join that changes nothing) fills it
    too and draws rows for it, so its candidates are not the others'. Before, a search of
    ``total > 12`` found a different counterexample (database 4, ``day`` NULL, instead of
    database 5) after such a prediction had run in the process: a shard or a resumed attempt
    that ran them apart reported other databases checked and another counterexample."""
    db = tmp_path / "shop.sqlite"
    with sqlite3.connect(db) as conn:
        conn.executescript(
            "CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT);"
            "CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER, total REAL,"
            " day TEXT);"
            "INSERT INTO customers VALUES (1, 'ann'), (2, 'bob');"
            "INSERT INTO orders VALUES (1, 1, 30, '2024-01-03'), (2, 2, 12, '2024-02-05'),"
            " (3, 1, 7, '2023-12-30');")
    conn.close()
    gold = "SELECT id FROM orders WHERE total >= 12"
    joined = "SELECT o.id FROM orders o LEFT JOIN customers c ON c.id = o.id WHERE o.total >= 12"
    near = "SELECT id FROM orders WHERE total > 12"
    same = same_as_the_case(gold)
    budget = Budget(databases=40, seconds=600)

    def found(scope: str) -> tuple[int, str | None, object]:
        got = search(db, gold, near, same, budget=budget, scope=scope)
        ce = got.counterexample
        return got.checked, ce and ce.origin, ce and sorted(ce.rows.items())

    alone = found("alone")
    assert alone[1] == "database 5 of the gold's suite"
    assert search(db, gold, joined, same, budget=budget, scope="after").counterexample is None
    assert found("after") == alone
    reused = search(db, gold, near, same, budget=budget, scope="after")
    assert reused.reused == reused.checked  # the same prediction again: every one reused


def test_a_spent_budget_is_said() -> None:
    pair = CORPUS["equivalent"][0]
    done = search(CHINOOK, pair["gold"], pair["predicted"], same_as_the_case(pair["gold"]),
                  budget=Budget(databases=20, seconds=600))
    assert done.counterexample is None
    assert done.checked == 20 and done.stopped == ""
    timed = search(CHINOOK, pair["gold"], pair["predicted"], same_as_the_case(pair["gold"]),
                   budget=Budget(databases=10_000, seconds=0.0))
    assert timed.stopped == "time budget of 0 s spent"
