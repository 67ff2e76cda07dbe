"""The SQLAlchemy source against a real PostgreSQL server on loopback, loaded with Chinook."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import datetime
from decimal import Decimal

import psycopg
import pytest

from pytest_queryeval.errors import (
    QueryFailed,
    QueryRefused,
    QueryTimeout,
    SourceUnavailable,
)
from pytest_queryeval.sources import open_source
from pytest_queryeval.sources.sqlalchemy import SqlAlchemySource
from tests.fixtures.postgres import PostgresServer

from .attacks import POSTGRES, POSTGRES_ALLOWED, POSTGRES_RAW_WRITES
from .conftest import run_bounded

pytestmark = pytest.mark.postgres

RECURSIVE = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "


@pytest.fixture(scope="module")
def pg_source(postgres_url: str) -> Iterator[SqlAlchemySource]:
    src = open_source("warehouse", {"type": "sqlalchemy", "url": postgres_url, "version": 3})
    assert isinstance(src, SqlAlchemySource)
    yield src
    src.close()


@pytest.fixture(scope="module")
def write_function(postgres_server: PostgresServer) -> str:
    """A function that deletes rows: ``SELECT queryeval_pwned()`` is a plain SELECT to any
    parser, so only the server can stop it: its volatility (pg_proc) for a predicted query,
    the read-only transaction for any."""
    with psycopg.connect(postgres_server.conninfo(), autocommit=True) as conn:
        conn.execute(
            "CREATE OR REPLACE FUNCTION queryeval_pwned() RETURNS int LANGUAGE sql AS "
            "$$ DELETE FROM genre; SELECT 1 $$"
        )
    return "SELECT queryeval_pwned()"


def test_query_and_native_types(pg_source: SqlAlchemySource) -> None:
    t = pg_source.execute("SELECT artist_id, name FROM artist ORDER BY artist_id LIMIT 2")
    assert t.columns == ["artist_id", "name"]
    assert t.rows == [(1, "AC/DC"), (2, "Accept")]
    t = pg_source.execute("SELECT total, invoice_date FROM invoice ORDER BY invoice_id LIMIT 1")
    assert t.rows == [(Decimal("1.98"), datetime(2021, 1, 1))]
    # '%' reaches the server as written (psycopg would read it as a placeholder).
    t = pg_source.execute("SELECT count(*) FROM artist WHERE name LIKE '%a%' AND '%s' = '%s'")
    assert t.rows[0][0] > 0
    assert pg_source.execute("SELECT ARRAY[1, 2], NULL").rows == [((1, 2), None)]
    # a batch of plain values is copied as it is; one with an array or a JSON value is
    # converted cell by cell, whichever row holds it
    t = pg_source.execute("SELECT i, CASE WHEN i = 3 THEN '{\"b\": 1, \"a\": [2]}'::jsonb "
                          "END, CASE WHEN i = 2 THEN ARRAY[i] END FROM generate_series(1, 3) i")
    assert t.rows == [(1, None, None), (2, None, (2,)), (3, '{"a": [2], "b": 1}', None)]
    t = pg_source.execute("SELECT i, 'x' || i FROM generate_series(1, 3) i")
    assert t.rows == [(1, "x1"), (2, "x2"), (3, "x3")]
    assert all(type(r) is tuple for r in t.rows)


@pytest.mark.parametrize("sql", POSTGRES)
def test_refused_and_unchanged(
    pg_source: SqlAlchemySource, postgres_server: PostgresServer, sql: str
) -> None:
    before = postgres_server.checksum()
    with pytest.raises(QueryRefused) as info:
        pg_source.execute(sql)
    assert info.value.reason().startswith("refused: ")
    assert postgres_server.checksum() == before


@pytest.mark.parametrize("sql", POSTGRES_RAW_WRITES)
def test_unguarded_writes_never_land(
    pg_source: SqlAlchemySource, postgres_server: PostgresServer, sql: str
) -> None:
    """``trusted=True`` skips the guard: the read-only, rolled-back transaction still holds."""
    before = postgres_server.checksum()
    with pytest.raises((QueryRefused, QueryFailed)):
        pg_source.execute(sql, trusted=True)
    assert postgres_server.checksum() == before


def test_read_only_transaction_stops_hidden_writes(
    pg_source: SqlAlchemySource, postgres_server: PostgresServer, write_function: str
) -> None:
    before = postgres_server.checksum()
    with pytest.raises(QueryRefused) as refused:
        pg_source.execute(write_function)
    assert refused.value.reason().startswith(
        "refused: function queryeval_pwned() is volatile (pg_proc.provolatile = 'v')")
    # past the guard (trusted), the read-only transaction still stops it
    with pytest.raises(QueryRefused, match="read-only") as info:
        pg_source.execute(write_function, trusted=True)
    assert info.value.reason().startswith("refused: the source is read-only")
    assert postgres_server.checksum() == before
    assert pg_source.execute("SELECT count(*) FROM genre").rows == [(25,)]


def test_engine_error_is_query_failed(pg_source: SqlAlchemySource) -> None:
    with pytest.raises(QueryFailed, match='relation "no_such_table" does not exist'):
        pg_source.execute("SELECT * FROM no_such_table")
    with pytest.raises(QueryFailed, match="syntax error"):
        pg_source.execute("SELECT FROM WHERE")
    assert pg_source.execute("SELECT 1").rows == [(1,)]  # the pool recovered


@pytest.mark.parametrize("sql", [
    "SELECT count(*) FROM track a, track b, track c",
    RECURSIVE + "SELECT max(x) FROM c",
    "SELECT pg_sleep(60)",
])
def test_runaway_query_times_out(pg_source: SqlAlchemySource, sql: str) -> None:
    with pytest.raises(QueryTimeout) as info:
        run_bounded(lambda: pg_source.execute(sql, timeout=0.5))
    assert info.value.reason() == "timeout: query exceeded 0.5 s"
    assert pg_source.execute("SELECT count(*) FROM genre").rows == [(25,)]


def test_row_cap_truncates(pg_source: SqlAlchemySource) -> None:
    t = pg_source.execute(RECURSIVE + "SELECT x FROM c", max_rows=2500)
    assert t.truncated
    assert len(t.rows) == 2500
    assert t.rows[-1] == (2500,)
    full = pg_source.execute("SELECT track_id FROM track", max_rows=3503)
    assert not full.truncated
    assert len(full) == 3503
    assert pg_source.execute("SELECT track_id FROM track", max_rows=3502).truncated


def test_fingerprint_and_messages_hide_the_password(
    postgres_server: PostgresServer, pg_source: SqlAlchemySource
) -> None:
    pw = postgres_server.readonly_password
    fp = pg_source.fingerprint()
    assert pw not in fp
    assert fp == (f"sqlalchemy:postgresql+psycopg://queryeval_ro@127.0.0.1:{postgres_server.port}"
                  "/chinook|version=3")
    assert pw not in repr(pg_source)
    assert pw in pg_source.secrets
    wrong = open_source("w", {"type": "sqlalchemy",
                              "url": postgres_server.url(password="Wr0ng-secret",
                                                         readonly=True)})
    with pytest.raises(SourceUnavailable) as info:
        wrong.execute("SELECT 1")
    assert "Wr0ng-secret" not in info.value.reason()
    assert "password authentication failed" in info.value.reason()
    assert "queryeval_ro:***@" in info.value.reason()


def test_plain_postgresql_url_uses_psycopg(postgres_server: PostgresServer) -> None:
    url = postgres_server.readonly_url().replace("postgresql+psycopg://", "postgresql://")
    src = open_source("plain", {"type": "sqlalchemy", "url": url})
    try:
        assert src.execute("SELECT count(*) FROM album").rows == [(347,)]
    finally:
        src.close()


def test_server_down_is_source_unavailable(postgres: PostgresServer) -> None:
    src = open_source("down", {"type": "sqlalchemy", "url": postgres.readonly_url()})
    try:
        assert src.execute("SELECT 1").rows == [(1,)]  # a pooled connection exists
        with postgres.down():
            with pytest.raises(SourceUnavailable) as info:
                src.execute("SELECT 1")
            assert postgres.readonly_password not in info.value.reason()
        assert src.execute("SELECT 1").rows == [(1,)]  # reconnects once it is back
    finally:
        src.close()


def test_server_killed_mid_query(postgres: PostgresServer) -> None:
    src = open_source("killed", {"type": "sqlalchemy", "url": postgres.readonly_url()})
    outcome: list[BaseException | object] = []

    def run() -> None:
        try:
            outcome.append(src.execute("SELECT pg_sleep(30)", timeout=60))
        except BaseException as e:
            outcome.append(e)

    try:
        worker = threading.Thread(target=run)
        worker.start()
        time.sleep(0.5)  # let the query start (if it has not, it fails to connect: same error)
        postgres.kill()
        worker.join(timeout=60)
        assert not worker.is_alive()
        assert len(outcome) == 1
        assert isinstance(outcome[0], SourceUnavailable), outcome[0]
        postgres.start()
        assert src.execute("SELECT count(*) FROM genre").rows == [(25,)]
    finally:
        src.close()


def test_introspection(pg_source: SqlAlchemySource) -> None:
    tables, fks = pg_source.tables()
    assert tables["artist"] == ["artist_id", "name"]
    assert ("album", "artist_id", "artist", "artist_id") in fks


@pytest.mark.parametrize("sql", POSTGRES_ALLOWED)
def test_postgres_features_pass_guard_and_run(pg_source: SqlAlchemySource, sql: str) -> None:
    t = pg_source.execute(sql)
    assert t.columns
    assert not t.truncated


def test_many_big_values_stop_at_max_bytes(postgres_url: str) -> None:
    # 5,000 values of 1 MB: PostgreSQL caps no value below 1 GB, so the batches shrink to the
    # rows' size (16 rows first, then 16 MiB worth) and max_bytes is checked after each
    src = open_source("warehouse", {"type": "sqlalchemy", "url": postgres_url,
                                    "max_bytes": 20_000_000})
    try:
        t = src.execute("SELECT x, repeat('x', 1000000) FROM generate_series(1, 5000) AS x")
        assert t.truncated
        assert t.meta == {"max_bytes": 20_000_000}
        # the worker sends back only the rows that fit in max_bytes
        assert 18 <= len(t.rows) <= 20
        assert [r[0] for r in t.rows] == list(range(1, len(t.rows) + 1))
        honest = src.execute("SELECT a.track_id, a.name FROM track a, track b "
                             "WHERE b.track_id <= 20 ORDER BY 1")
        assert not honest.truncated
        assert len(honest) == 3503 * 20
    finally:
        src.close()


def test_closing_a_source_releases_its_sandbox_workers_connections(postgres_url: str) -> None:
    """The sandbox worker outlives a session run in-process (a test runner's, a notebook's):
    closing the source disposes the pool the worker built for it, so no idle session is left
    on the database (one left there keeps PostgreSQL from cloning it as a template: the
    red-team's planted copies and the task copies). Fails before the fix: 1 session stayed."""
    import uuid

    from pytest_queryeval.tasks.pgcopies import conninfo

    app = f"qe_close_{uuid.uuid4().hex[:12]}"
    src = open_source("closing", {"type": "sqlalchemy",
                                  "url": f"{postgres_url}?application_name={app}"})
    assert isinstance(src, SqlAlchemySource) and src.isolation == "process"

    def sessions() -> int:
        with psycopg.connect(conninfo(postgres_url)) as conn:
            row = conn.execute("SELECT count(*) FROM pg_stat_activity WHERE application_name "
                               "= %s", [app]).fetchone()
        assert row is not None
        return int(row[0])

    assert src.execute("SELECT 1").rows == [(1,)]
    assert sessions() >= 1  # the worker's pool keeps its connection for the next query
    src.close()
    deadline = time.monotonic() + 5
    while sessions() and time.monotonic() < deadline:  # the server notes the end at once,
        time.sleep(0.05)  # but a backend's exit is asynchronous to the client's close
    assert sessions() == 0
