"""The SQLite source against a real copy of Chinook: refusals, read-only, timeout, row cap."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path

import pytest

from pytest_queryeval.errors import (
    ConfigError,
    QueryEvalError,
    QueryFailed,
    QueryRefused,
    QueryTimeout,
    SourceUnavailable,
)
from pytest_queryeval.results import ResultTable
from pytest_queryeval.sources import open_source
from pytest_queryeval.sources.sqlite import SqliteSource

from .attacks import SQLITE, SQLITE_RAW_WRITES
from .conftest import run_bounded, sha256

CROSS_JOIN = "SELECT count(*) FROM track a, track b, track c"
RECURSIVE = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "
RECURSIVE_AGG = RECURSIVE + "SELECT max(x) FROM c"
RECURSIVE_ROWS = RECURSIVE + "SELECT x FROM c"


@pytest.fixture
def source(chinook_sqlite: Path) -> SqliteSource:
    src = open_source("chinook", {"type": "sqlite", "path": str(chinook_sqlite)})
    assert isinstance(src, SqliteSource)
    yield src
    src.close()


def test_query(source: SqliteSource) -> None:
    t = source.execute("SELECT ArtistId, Name FROM Artist ORDER BY ArtistId LIMIT 3")
    assert t.columns == ["ArtistId", "Name"]
    assert t.rows == [(1, "AC/DC"), (2, "Accept"), (3, "Aerosmith")]
    assert not t.truncated
    assert t.seconds >= 0
    assert source.execute("SELECT count(*) FROM track").rows == [(3503,)]


def test_types_come_back_native(source: SqliteSource) -> None:
    t = source.execute("SELECT 1, 1.5, 'x', NULL, x'00ff'")
    assert t.rows == [(1, 1.5, "x", None, b"\x00\xff")]
    # SQLite has no DECIMAL: NUMERIC columns arrive as float (documented).
    assert isinstance(source.execute("SELECT Total FROM Invoice LIMIT 1").rows[0][0], float)
    assert not isinstance(source.execute("SELECT Total FROM Invoice LIMIT 1").rows[0][0], Decimal)


@pytest.mark.parametrize("sql", SQLITE)
def test_refused_and_unchanged(source: SqliteSource, chinook_sqlite: Path, sql: str) -> None:
    before = sha256(chinook_sqlite)
    with pytest.raises(QueryRefused) as info:
        source.execute(sql)
    assert info.value.reason().startswith("refused: ")
    assert sha256(chinook_sqlite) == before
    assert source.execute("SELECT count(*) FROM genre").rows == [(25,)]


@pytest.mark.parametrize("sql", SQLITE_RAW_WRITES)
def test_connection_is_read_only_even_unguarded(
    source: SqliteSource, chinook_sqlite: Path, sql: str
) -> None:
    """``trusted=True`` skips the guard: the ``mode=ro`` connection must still refuse."""
    before = sha256(chinook_sqlite)
    with pytest.raises(QueryRefused, match="read-only"):
        source.execute(sql, trusted=True)
    assert sha256(chinook_sqlite) == before
    assert not Path(str(chinook_sqlite) + "-journal").exists()


def test_engine_error_is_query_failed(source: SqliteSource) -> None:
    with pytest.raises(QueryFailed, match="no such table"):
        source.execute("SELECT * FROM no_such_table")
    with pytest.raises(QueryFailed, match="syntax error"):
        source.execute("SELECT FROM WHERE")


@pytest.mark.parametrize("sql", [CROSS_JOIN, RECURSIVE_AGG])
def test_runaway_query_times_out(source: SqliteSource, sql: str) -> None:
    with pytest.raises(QueryTimeout) as info:
        run_bounded(lambda: source.execute(sql, timeout=0.5))
    assert info.value.reason() == "timeout: query exceeded 0.5 s"
    # The connection is usable afterwards.
    assert source.execute("SELECT count(*) FROM genre").rows == [(25,)]


def test_row_cap_truncates(source: SqliteSource) -> None:
    t = source.execute(RECURSIVE_ROWS, max_rows=2500, timeout=30)
    assert t.truncated
    assert len(t.rows) == 2500
    assert t.rows[-1] == (2500,)
    full = source.execute("SELECT TrackId FROM track", max_rows=3503)
    assert not full.truncated
    assert len(full) == 3503
    cut = source.execute("SELECT TrackId FROM track", max_rows=3502)
    assert cut.truncated
    assert len(cut) == 3502


def test_default_limits_from_spec(chinook_sqlite: Path) -> None:
    src = open_source("c", {"type": "sqlite", "path": str(chinook_sqlite), "timeout": 0.3,
                            "max_rows": 10})
    try:
        assert src.execute("SELECT * FROM track").truncated
        with pytest.raises(QueryTimeout):
            src.execute(CROSS_JOIN)
    finally:
        src.close()


def test_fingerprint_changes_with_content(chinook_sqlite: Path) -> None:
    src = SqliteSource("c", chinook_sqlite)
    fp = src.fingerprint()
    assert fp == src.fingerprint()
    assert fp.startswith(f"sqlite:{chinook_sqlite.stat().st_size}:")
    st = chinook_sqlite.stat()
    data = bytearray(chinook_sqlite.read_bytes())
    data[-1] ^= 0xFF  # same size; restore mtime too: only the content hash can tell
    chinook_sqlite.write_bytes(bytes(data))
    os.utime(chinook_sqlite, ns=(st.st_atime_ns, st.st_mtime_ns))
    src2 = SqliteSource("c", chinook_sqlite)
    assert src2.fingerprint() != fp


def test_missing_file_is_unavailable(tmp_path: Path) -> None:
    src = SqliteSource("gone", tmp_path / "missing.sqlite")
    with pytest.raises(SourceUnavailable, match="no SQLite file"):
        src.execute("SELECT 1")
    not_db = tmp_path / "not.sqlite"
    not_db.write_text("this is not a database, it is text" * 100)
    with pytest.raises(SourceUnavailable):
        SqliteSource("bad", not_db).execute("SELECT 1")


def test_concurrent_use_is_serialised(source: SqliteSource) -> None:
    errors: list[BaseException] = []

    def work() -> None:
        try:
            for _ in range(20):
                assert source.execute("SELECT count(*) FROM album").rows == [(347,)]
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def test_tables_introspection(source: SqliteSource) -> None:
    tables, fks = source.tables()
    assert "Artist" in tables
    assert tables["Artist"] == ["ArtistId", "Name"]
    assert ("Album", "ArtistId", "Artist", "ArtistId") in fks


def test_open_source_errors(chinook_sqlite: Path) -> None:
    with pytest.raises(ConfigError, match="unknown datasource type"):
        open_source("x", {"type": "oracle-of-delphi"})
    with pytest.raises(ConfigError, match="unknown key"):
        open_source("x", {"type": "sqlite", "path": str(chinook_sqlite), "colour": "red"})
    with pytest.raises(ConfigError):
        open_source("x", {"type": "sqlite"})
    assert issubclass(ConfigError, QueryEvalError)


def test_one_huge_value_is_refused_by_the_engine(source: SqliteSource) -> None:
    # the row cap bounds rows; SQLITE_LIMIT_LENGTH bounds a single cell (500 MB asked here)
    with pytest.raises(QueryFailed, match="string or blob too big"):
        source.execute("SELECT length(randomblob(500000000))")
    with pytest.raises(QueryFailed, match="string or blob too big"):
        source.execute("SELECT length(zeroblob(400000000) || 'x')")
    assert source.execute("SELECT length(randomblob(1000000))").rows == [(1_000_000,)]


BIG_VALUES = ("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 5000) "
              "SELECT x, zeroblob(1000000) FROM c")


def test_many_big_values_stop_at_max_bytes(chinook_sqlite: Path) -> None:
    # 5,000 values of 1 MB each: 5 GB under the row cap, each value under the length cap
    src = open_source("chinook", {"type": "sqlite", "path": str(chinook_sqlite),
                                  "max_bytes": 8_000_000})
    t = src.execute(BIG_VALUES)
    assert t.truncated
    assert t.meta == {"max_bytes": 8_000_000}
    assert t.cut_by() == ("holds more than 8,000,000 bytes", "max_bytes")
    # checked batch by batch: stops within one batch (16 rows at 2 columns) of the cap, and
    # the worker sends back only the rows that fit in it
    assert 7 <= len(t.rows) <= 8
    assert [r[0] for r in t.rows] == list(range(1, len(t.rows) + 1))
    # the default (64 MiB) leaves a large honest result whole
    whole = open_source("chinook", {"type": "sqlite", "path": str(chinook_sqlite)}).execute(
        "SELECT a.TrackId, a.Name, b.MediaTypeId FROM Track a, Track b "
        "WHERE b.TrackId <= 20")
    assert not whole.truncated
    assert len(whole) == 3503 * 20


def test_row_cap_still_named_when_rows_run_out_first(source: SqliteSource) -> None:
    t = source.execute("SELECT name FROM track", max_rows=10)
    assert t.truncated
    assert t.meta == {"max_rows": 10}
    assert t.cut_by() == ("has more than 10 rows", "max_rows")


@pytest.mark.parametrize("bad", [0, -1, 1.5, "64MB", True])
def test_max_bytes_must_be_a_positive_whole_number(chinook_sqlite: Path, bad: object) -> None:
    with pytest.raises(ConfigError, match="positive whole number") as info:
        open_source("chinook", {"type": "sqlite", "path": str(chinook_sqlite), "max_bytes": bad})
    assert info.value.key == "datasources.chinook.max_bytes"


@pytest.mark.parametrize("isolation", ["process", "thread"])
def test_a_query_runs_under_the_engines_check_without_the_guards_parse(
        chinook_sqlite: Path, isolation: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """SQLite's authorizer enforces reading only, so a text that starts like a query is not
    parsed by the guard unless the engine fails it; the guard's reasons stay the same."""
    from pytest_queryeval.sources import sqlguard

    parsed: list[str] = []
    real = sqlguard._check_sqlglot

    def counting(sql: str, dialect: str | None) -> None:
        parsed.append(sql)
        real(sql, dialect)

    monkeypatch.setattr(sqlguard, "_check_sqlglot", counting)
    src = open_source("chinook", {"type": "sqlite", "path": str(chinook_sqlite),
                                  "isolation": isolation})
    try:
        tag = f"/* authorizer, {isolation} */"  # the guard's verdicts are cached per text
        ok = f"SELECT name FROM genre {tag} ORDER BY genreid LIMIT 2"
        assert src.execute(ok).rows == [("Rock",), ("Jazz",)]
        assert parsed == []
        # a pragma's table function runs under the authorizer too, unparsed (it was denied
        # and then run without the authorizer, the thirty-sixth re-probe's sqlite_stmt)
        pragma = f"SELECT name FROM pragma_table_info('genre') {tag} ORDER BY cid"
        assert src.execute(pragma).rows == [("GenreId",), ("Name",)]
        assert parsed == []
        # the engine stops these; the guard names why
        with pytest.raises(QueryRefused, match="2 statements"):
            src.execute(f"SELECT 1 {tag}; DROP TABLE genre")
        with pytest.raises(QueryRefused, match=r"load_extension\(\) has side effects"):
            src.execute(f"SELECT load_extension('/nonexistent') {tag}")
        with pytest.raises(QueryFailed, match="no such column: nope"):
            src.execute(f"SELECT nope FROM genre {tag}")
    finally:
        src.close()


def test_the_authorizer_denies_all_but_reading(chinook_sqlite: Path) -> None:
    """The engine's own check, with the guard out of the way (run_query as the worker runs
    a predicted query)."""
    from pytest_queryeval.sources.sandboxed import EngineDenied
    from pytest_queryeval.sources.sqlite import open_read_only, run_query

    conn = open_read_only(chinook_sqlite, "chinook")
    try:
        for sql in ("SELECT load_extension('/nonexistent')",
                    "SELECT file FROM pragma_database_list",
                    "ATTACH DATABASE ':memory:' AS pwned",
                    "PRAGMA user_version = 7", "BEGIN", "DELETE FROM genre"):
            with pytest.raises(EngineDenied, match="not authorized"):
                run_query(conn, sql, 5.0, 100, 1 << 20, guarded=True)
        with pytest.raises(QueryFailed, match=r"access to sqlite_stmt\.sql is prohibited"):
            run_query(conn, "SELECT sql FROM sqlite_stmt", 5.0, 100, 1 << 20, guarded=True)
        got = run_query(conn, "SELECT count(*) FROM genre", 5.0, 100, 1 << 20, guarded=True)
        assert got.rows == [(25,)]
        # a pragma's table function reads under the authorizer (the thirty-sixth re-probe)
        assert run_query(conn, "SELECT count(*) FROM pragma_table_info('genre')", 5.0, 100,
                         1 << 20, guarded=True).rows == [(2,)]
        # unguarded (a gold), the connection is still read-only and pragmas read
        assert run_query(conn, "SELECT count(*) FROM pragma_table_info('genre')", 5.0, 100,
                         1 << 20).rows == [(2,)]
    finally:
        conn.close()


GENRES = "SELECT count(*) FROM genre"
INSTR_16MB = "SELECT instr(hex(zeroblob(8000000)), hex(zeroblob(4000000)) || '1')"


PAIRED = [
    "SELECT name FROM genre /* pair */ ORDER BY genreid LIMIT 2",
    "SELECT name FROM pragma_table_info('genre') /* pair */ ORDER BY cid",
    "SELECT 1 /* pair */; DROP TABLE genre",
    "SELECT load_extension('/nonexistent') /* pair */",
    "SELECT nope FROM genre /* pair */",
    CROSS_JOIN,
    INSTR_16MB,
    *(sql for sql in SQLITE if sql.lstrip().upper().startswith(("SELECT", "WITH"))),

]


def _outcome(run: Callable[[], ResultTable]) -> object:
    """What a query gives: its rows, or its failure."""
    try:
        return run().rows
    except QueryEvalError as e:
        return type(e), e.reason()


def _alone(source: SqliteSource, predicted: str) -> object:
    """What the prediction gives executed on its own."""
    return _outcome(lambda: source.execute(predicted, timeout=0.5))


@pytest.mark.parametrize("predicted", PAIRED)
def test_gold_and_prediction_in_one_round_trip_as_each_alone(
        source: SqliteSource, chinook_sqlite: Path, predicted: str) -> None:
    """execute_pair sends the gold and the prediction together (one write, one wake-up of the
    worker); the gold's table and the prediction's table or failure (the guard's reason, a
    timeout, a worker killed at its own deadline) are what execute gives each alone."""
    before = sha256(chinook_sqlite)
    expected = _alone(source, predicted)
    pair = source.execute_pair(GENRES, predicted, timeout=0.5)
    assert pair is not None
    gold, prediction = pair
    assert gold.rows == [(25,)]
    assert _outcome(prediction) == expected
    assert sha256(chinook_sqlite) == before
    assert source.execute_pair(GENRES, "PRAGMA user_version") is None  # not led like a query
    assert source.execute(GENRES).rows == [(25,)]


@pytest.mark.parametrize("predicted", PAIRED)
def test_a_pair_sent_ahead_gives_what_execute_pair_gives(
        source: SqliteSource, chinook_sqlite: Path, predicted: str) -> None:
    """prefetch_pair sends execute_pair's round trip early (issue 30: the worker runs the next
    case's queries while this one is scored); execute_pair with the same arguments reads it,
    no second trip, and returns what the prediction gives alone: rows, the guard's reason, a
    timeout, a worker killed at its own deadline."""
    before = sha256(chinook_sqlite)
    expected = _alone(source, predicted)
    box = source._box
    assert box is not None
    box.start()  # ready again after a kill: a worker still starting is not sent anything ahead
    assert source.prefetch_pair(GENRES, predicted, timeout=0.5)
    trips = box.round_trips
    pair = source.execute_pair(GENRES, predicted, timeout=0.5)
    assert pair is not None
    assert box.round_trips == trips  # read from the worker, not sent again
    gold, prediction = pair
    assert gold.rows == [(25,)]
    assert _outcome(prediction) == expected
    assert sha256(chinook_sqlite) == before
    assert not source.prefetch_pair(GENRES, "PRAGMA user_version")  # not led like a query
    assert source.execute(GENRES).rows == [(25,)]


def test_a_pair_sent_ahead_and_not_asked_for_is_never_mistaken(source: SqliteSource) -> None:
    """A pair sent ahead whose case never asks (deselected, skipped, the run stopped) is read
    and dropped before the next reply, never taken for another query's result; a pair asked
    with other limits is sent again."""
    source.execute(GENRES)
    box = source._box
    assert box is not None
    kills = box.kills
    assert source.prefetch_pair(GENRES, "SELECT 1 /* never asked */")
    assert source.prefetch_pair(GENRES, "SELECT 2", timeout=5)
    pair = source.execute_pair(GENRES, "SELECT 2", timeout=6)  # not the limits it was sent with
    assert pair is not None
    assert pair[0].rows == [(25,)] and pair[1]().rows == [(2,)]
    assert source.execute("SELECT 3").rows == [(3,)]
    assert source.prefetch_pair(GENRES, "SELECT 4")
    pair = source.execute_pair(GENRES, "SELECT 4")
    assert pair is not None and pair[1]().rows == [(4,)]
    assert box.kills == kills
