"""A pinned clock (issue 28 item 5): every reading of the clock in gold and prediction means
one instant, on the real engines, and nothing else is touched."""

from __future__ import annotations

import datetime as dt
import sqlite3

import pytest

from pytest_queryeval.sources.clock import parse_instant, pin_clock

INSTANT = dt.datetime(2024, 5, 1, 12, 0, 0)


def test_sqlite_spellings_run_at_the_instant() -> None:
    sql = ("SELECT date('now'), datetime('now', '-1 day'), CURRENT_DATE, CURRENT_TIMESTAMP, "
           "CURRENT_TIME, strftime('%Y', 'now'), julianday('now') - julianday('2024-04-30')")
    pinned = pin_clock(sql, INSTANT, "sqlite")
    assert len(pinned.replaced) == 7
    assert sqlite3.connect(":memory:").execute(pinned.sql).fetchall() == [
        ("2024-05-01", "2024-04-30 12:00:00", "2024-05-01", "2024-05-01 12:00:00", "12:00:00",
         "2024", 1.5)]


def test_what_is_not_the_clock_is_left_alone() -> None:
    sql = "SELECT upper('now'), now_playing FROM t WHERE note = 'now' AND today_flag = 1"
    pinned = pin_clock(sql, INSTANT, "sqlite")
    assert (pinned.sql, pinned.replaced) == (sql, [])  # the text itself, not re-generated


def test_duckdb_spellings_run_at_the_instant() -> None:
    duckdb = pytest.importorskip("duckdb")
    pinned = pin_clock("SELECT now(), current_date, today(), get_current_timestamp(), "
                       "current_date - INTERVAL 30 DAY", INSTANT, "duckdb")
    assert pinned.replaced[0] == "NOW() -> CAST('2024-05-01 12:00:00' AS TIMESTAMP)"
    assert duckdb.connect().execute(pinned.sql).fetchall() == [
        (INSTANT, INSTANT.date(), INSTANT.date(), INSTANT, dt.datetime(2024, 4, 1))]


def test_postgres_spellings_are_rewritten() -> None:
    pinned = pin_clock("SELECT now(), localtimestamp, transaction_timestamp(), 'now'::date, "
                       "CURRENT_DATE - INTERVAL '30 days'", INSTANT, "postgres")
    assert pinned.sql == ("SELECT CAST('2024-05-01 12:00:00' AS TIMESTAMP), "
                          "CAST('2024-05-01 12:00:00' AS TIMESTAMP), "
                          "CAST('2024-05-01 12:00:00' AS TIMESTAMP), "
                          "CAST('2024-05-01 12:00:00' AS DATE), "
                          "CAST('2024-05-01' AS DATE) - INTERVAL '30 DAYS'")


@pytest.mark.parametrize(("value", "expected"), [
    ("2024-05-01", dt.datetime(2024, 5, 1)),
    (dt.date(2024, 5, 1), dt.datetime(2024, 5, 1)),
    ("2024-05-01T14:00:00+02:00", dt.datetime(2024, 5, 1, 12)),  # kept in UTC
])
def test_the_instant_is_read_as_yaml_gives_it(value: object, expected: dt.datetime) -> None:
    assert parse_instant(value) == expected


@pytest.mark.parametrize("value", ["yesterday", 5, None])
def test_a_wrong_instant_is_named(value: object) -> None:
    with pytest.raises(ValueError, match="now: "):
        parse_instant(value)
