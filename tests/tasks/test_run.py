"""DML and DDL tasks on throwaway copies (issue 28 items 1, 2 and 4, engine side): each check
kind on real SQLite and DuckDB files, the real file never touched, a task without a check an
error, a failing gold an error, hostile Python checks bounded like hostile queries."""

from __future__ import annotations

import hashlib
import os
import sqlite3
from pathlib import Path

import pytest

from pytest_queryeval.errors import QueryTimeout
from pytest_queryeval.tasks import Check, Task, run_task

RAISE = "UPDATE Track SET UnitPrice = UnitPrice + 0.1 WHERE GenreId = 1"
ROCK_PRICES = "SELECT TrackId, UnitPrice FROM Track WHERE GenreId = 1"


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def task(path: Path, predicted: str, *checks: Check, engine: str = "sqlite") -> Task:
    return Task(engine, path, gold=(RAISE,), predicted=(predicted,), checks=checks)


def test_compare_gold_passes_the_same_change_and_fails_another(chinook: Path) -> None:
    before = digest(chinook)
    check = Check(query=ROCK_PRICES, compare="gold")
    assert run_task(task(chinook, RAISE.replace("+ 0.1", "+ 0.10"), check)).passed
    wrong = run_task(task(chinook, "UPDATE Track SET UnitPrice = UnitPrice + 0.1", check))
    assert wrong.passed  # the rock prices are the same ...
    everything = Check(query="SELECT TrackId, UnitPrice FROM Track", compare="gold")
    wrong = run_task(task(chinook, "UPDATE Track SET UnitPrice = UnitPrice + 0.1", everything))
    assert not wrong.passed  # ... but every other track changed too
    assert wrong.checks[0].reason.startswith("compare: gold of SELECT TrackId, UnitPrice FROM "
                                             "Track: 2206 rows missing (in the gold's copy, not "
                                             "the prediction's), 2206 rows extra")
    assert digest(chinook) == before  # the real file is never written


def test_expected_rows_schema_and_python_checks(chinook: Path) -> None:
    rows = Check(query="SELECT count(*) FROM Track WHERE GenreId = 1 AND UnitPrice > 1.0",
                 rows=((1297,),))
    assert run_task(task(chinook, RAISE, rows)).passed
    failed = run_task(task(chinook, "UPDATE Track SET UnitPrice = 0.5 WHERE GenreId = 1", rows))
    assert failed.checks[0].reason.endswith("expected 1 rows [(1297,)], got 1 rows [(0,)]")
    python = Check(python="tests.tasks.hostile_checks:prices_raised")
    assert run_task(task(chinook, RAISE, python)).passed
    failed = run_task(task(chinook, "UPDATE Track SET UnitPrice = 0.5", python))
    assert failed.checks[0].reason == ("python tests.tasks.hostile_checks:prices_raised: 0 rock "
                                       "tracks cost more than 1.00")
    ddl = Task("sqlite", chinook, gold=("CREATE INDEX ix_genre ON Track(GenreId)",),
               predicted=("ALTER TABLE Track ADD COLUMN Rating INTEGER",),
               checks=(Check(tables=(("Track", ("GenreId", "Rating")),), indexes=("ix_genre",)),))
    outcome = run_task(ddl)
    assert (outcome.passed, outcome.checks[0].reason) == (False, "schema: no index ix_genre")


def test_no_check_a_failing_gold_or_setup_is_an_error(chinook: Path) -> None:
    assert run_task(task(chinook, RAISE)).error.startswith("a dml/ddl task needs at least one "
                                                           "check")
    broken = Task("sqlite", chinook, gold=("UPDATE Nope SET x = 1",), predicted=(RAISE,),
                  checks=(Check(query=ROCK_PRICES, compare="gold"),))
    assert run_task(broken).error == ("the gold failed on its copy: OperationalError: no such "
                                      "table: Nope")
    setup = Task("sqlite", chinook, gold=(RAISE,), predicted=(RAISE,), setup=("DROP TABLE x",),
                 checks=(Check(query=ROCK_PRICES, compare="gold"),))
    assert run_task(setup).error.startswith("setup failed on the gold copy: OperationalError")
    failing = run_task(task(chinook, "UPDATE Track SET Nope = 1",
                            Check(query=ROCK_PRICES, compare="gold")))
    assert failing.predicted_error.startswith("the prediction failed on its copy")
    assert not failing.passed and not failing.error


def test_the_gold_audit_runs_the_checks_on_the_golds_copy(chinook: Path) -> None:
    stale = Check(query="SELECT count(*) FROM Track WHERE GenreId = 1 AND UnitPrice > 1.0",
                  rows=((0,),))  # written before the change: the gold fails its own check
    outcome = run_task(task(chinook, RAISE, stale), audit=True)
    assert not outcome.passed and outcome.checks[0].reason.endswith("got 1 rows [(1297,)]")


def test_duckdb_copies(tmp_path: Path) -> None:
    duckdb = pytest.importorskip("duckdb")
    path = tmp_path / "shop.duckdb"
    conn = duckdb.connect(str(path))
    conn.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, total DOUBLE)")
    conn.execute("INSERT INTO orders VALUES (1, 30), (2, 12), (3, 7)")
    conn.close()
    before = digest(path)
    check = Check(query="SELECT id, total FROM orders", compare="gold")
    gold = "UPDATE orders SET total = total * 2 WHERE total > 10"
    good = Task("duckdb", path, gold=(gold,), predicted=("UPDATE orders SET total = 2 * total "
                                                          "WHERE total >= 12",), checks=(check,))
    assert run_task(good).passed
    bad = Task("duckdb", path, gold=(gold,), predicted=("UPDATE orders SET total = total * 2",),
               checks=(check,))
    assert not run_task(bad).passed
    assert digest(path) == before


def test_hostile_python_checks_are_bounded(chinook: Path) -> None:
    with pytest.raises(QueryTimeout):
        run_task(task(chinook, RAISE, Check(python="tests.tasks.hostile_checks:spin")),
                 timeout=2)
    hog = run_task(task(chinook, RAISE, Check(python="tests.tasks.hostile_checks:hog")),
                   timeout=60, max_memory=256 << 20)
    assert hog.error == ("a check broke: python tests.tasks.hostile_checks:hog raised "
                         "MemoryError: ")
    outcome = run_task(task(chinook, RAISE, Check(python="tests.tasks.hostile_checks:big_file")),
                       timeout=60)
    # the worker's file-size cap stops the 2 GB write (EFBIG), a broken check: an error
    assert outcome.error.startswith("a check broke: python tests.tasks.hostile_checks:big_file "
                                    "raised OSError: [Errno 27] File too large")
    # the worker recovers: the next task runs
    assert run_task(task(chinook, RAISE, Check(query=ROCK_PRICES, compare="gold"))).passed


def test_a_source_in_wal_mode_is_copied_with_its_wal(chinook: Path) -> None:
    """The copies hold what a reader of the file sees, committed WAL frames included, and
    take writes (an in-memory database cannot be in WAL mode: its image says rollback)."""
    writer = sqlite3.connect(chinook)
    try:
        writer.execute("PRAGMA journal_mode = wal")
        writer.execute("UPDATE Genre SET Name = 'Rock and Roll' WHERE GenreId = 1")
        writer.commit()  # in the WAL only: the open connection keeps it from a checkpoint
        wal = Path(str(chinook) + "-wal")
        before = digest(chinook), digest(wal)
        names = Check(query="SELECT Name FROM Genre WHERE GenreId = 1",
                      rows=(("Rock and Roll",),))
        assert run_task(task(chinook, RAISE, names)).passed
        assert run_task(task(chinook, RAISE, Check(query=ROCK_PRICES, compare="gold"))).passed
        assert (digest(chinook), digest(wal)) == before
    finally:
        writer.close()


def test_a_source_written_between_cases_is_copied_fresh(chinook: Path) -> None:
    """The worker keeps the file's image between cases; a change to the file (here the same
    size and modification time) is read again."""
    def genre_is(name: str) -> Check:
        return Check(query="SELECT Name FROM Genre WHERE GenreId = 1", rows=((name,),))

    assert run_task(task(chinook, RAISE, genre_is("Rock"))).passed
    stat = chinook.stat()
    with sqlite3.connect(chinook) as conn:
        conn.execute("UPDATE Genre SET Name = 'Rack' WHERE GenreId = 1")
    conn.close()
    os.utime(chinook, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # the same mtime as before
    assert chinook.stat().st_size == stat.st_size
    assert run_task(task(chinook, RAISE, genre_is("Rack"))).passed
