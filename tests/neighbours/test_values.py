"""Counterexamples a reviewer believes (issue 41 item 5): a counterexample's values are drawn
from the column's own domain and format before edge values, so an April filter is proven wrong
with a real date in the column's format, not a cut string such as ``'2024-05-0'``, and a code
column shows codes it already holds."""

from __future__ import annotations

import sqlite3
from datetime import datetime
from pathlib import Path

import pytest

from pytest_queryeval.neighbours import search
from pytest_queryeval.neighbours.values import date_format, date_neighbours, is_realistic
from tests.neighbours.support import BUDGET, result, same_as_the_case

FORMATS = {"date": "%Y-%m-%d", "datetime": "%Y-%m-%d %H:%M:%S"}
CARRIERS = ("AA", "DL", "UA")


def flights(directory: Path, shape: str) -> Path:
    """A flights table whose ``sched_dep`` is ISO text (dates or date-times), with no flight at
    the end of April or on the first of May, and a ``carrier`` code column."""
    path = directory / f"flights-{shape}.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE flights (id INTEGER PRIMARY KEY, carrier TEXT NOT NULL, "
                 "sched_dep TEXT NOT NULL, seats INTEGER NOT NULL)")
    days = ["2024-03-14", "2024-04-02", "2024-04-11", "2024-04-19", "2024-05-12", "2024-06-03"]
    for i, day in enumerate(days):
        when = day if shape == "date" else f"{day} {8 + i:02d}:15:00"
        conn.execute("INSERT INTO flights VALUES (?, ?, ?, ?)",
                     (i + 1, CARRIERS[i % 3], when, 100 + 20 * i))
    conn.commit()
    conn.close()
    return path


#: Pairs that agree on the real data and differ on a date at the end of April or the start of
#: May: an off-by-one month end, and a date-time compared with a bare date.
PAIRS = {
    "date": ("SELECT carrier, count(*) FROM flights WHERE sched_dep >= '2024-04-01' "
             "AND sched_dep < '2024-05-01' GROUP BY carrier",
             "SELECT carrier, count(*) FROM flights WHERE sched_dep BETWEEN '2024-04-01' "
             "AND '2024-05-01' GROUP BY carrier"),
    "datetime": ("SELECT carrier, count(*) FROM flights WHERE sched_dep >= '2024-04-01' "
                 "AND sched_dep < '2024-05-01' GROUP BY carrier",
                 "SELECT carrier, count(*) FROM flights WHERE sched_dep >= '2024-04-01' "
                 "AND sched_dep <= '2024-04-30' GROUP BY carrier"),
}


@pytest.mark.parametrize("shape", sorted(PAIRS))
def test_an_april_filter_is_proven_wrong_with_real_dates_and_codes(
        shape: str, tmp_path: Path) -> None:
    db = flights(tmp_path, shape)
    gold, predicted = PAIRS[shape]
    same = same_as_the_case(gold)
    assert same(result(db, gold), result(db, predicted))
    found = search(db, gold, predicted, same, budget=BUDGET)
    ce = found.counterexample
    assert ce is not None
    rows = ce.rows["flights"]
    assert rows, ce.to_sql()
    dates = [r[2] for r in rows]
    fmt = FORMATS[shape]
    for value in dates:
        # Written exactly in the column's format: no cut or extended string.
        assert datetime.strptime(value, fmt).strftime(fmt) == value, ce.to_sql()
    assert {r[1] for r in rows} <= set(CARRIERS), ce.to_sql()
    # Still a proof, on a real file.
    path = tmp_path / "counterexample.sqlite"
    ce.write(path)
    assert result(path, gold).rows != result(path, predicted).rows


def test_a_column_s_date_format_is_read_from_its_values() -> None:
    assert date_format(["2024-04-02", "2024-05-12"]) == "%Y-%m-%d"
    assert date_format(["2024-04-02 08:15:00", None]) == "%Y-%m-%d %H:%M:%S"
    assert date_format(["2024-04-02", "2024-4-3"]) is None
    assert date_format(["JFK", "LAX"]) is None
    assert date_format([]) is None


def test_a_date_literal_s_neighbours_are_valid_dates_in_the_column_s_format() -> None:
    assert date_neighbours("2024-05-01", "%Y-%m-%d") == [
        "2024-05-01", "2024-04-30", "2024-05-02", "2024-05-31", "2024-06-01"]
    near = date_neighbours("2024-02%", "%Y-%m-%d %H:%M:%S")
    assert "2024-02-29 00:00:00" in near and "2024-02-29 23:59:59" in near
    assert "2024-03-01 00:00:00" in near
    assert date_neighbours("JFK", "%Y-%m-%d") == []


def test_a_number_within_the_column_s_range_is_realistic() -> None:
    pool: list[object] = [100, 220, None, "2024-04-02"]
    assert is_realistic(150, pool) and is_realistic(None, pool) and is_realistic(220, pool)
    assert not is_realistic(221, pool) and not is_realistic("2024-05-0", pool)


def test_a_shrink_keeps_a_row_that_references_a_later_key_of_its_own_table(
        tmp_path: Path) -> None:
    """The rows a candidate held come back in the order they were inserted: rebuilt in the
    engine's rowid order, an employee whose manager has a higher id would be refused, and the
    shrink would start from another database (a 15-row counterexample instead of 4)."""
    from pytest_queryeval.neighbours.engines import ENGINES
    from pytest_queryeval.neighbours.search import _differs

    db = tmp_path / "staff.sqlite"
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE staff (id INTEGER PRIMARY KEY, boss INTEGER REFERENCES staff(id))")
    conn.execute("INSERT INTO staff VALUES (1, NULL)")
    conn.commit()
    conn.close()
    eng = ENGINES["sqlite"]
    real = eng.open_real(db)
    schema = eng.introspect(real)
    real.close()
    rows = {"staff": [(3, None), (1, 3)]}
    gold = "SELECT count(*) FROM staff WHERE boss IS NOT NULL"
    same = same_as_the_case(gold)
    outcome = _differs(eng, schema, rows, gold, "SELECT 0", same, 5.0)
    assert isinstance(outcome, tuple) and outcome[0]
    held = outcome[1]
    assert held == rows
    again = _differs(eng, schema, held, gold, "SELECT 0", same, 5.0)
    assert isinstance(again, tuple) and again[0] and again[1] == rows
