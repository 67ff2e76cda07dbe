"""The DuckDB source against a real DuckDB file built from Chinook: refusals at the guard and
at the connection, read-only, file access off, timeout, row and byte caps, schema, identity."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import pytest

from pytest_queryeval.engine import Evaluator
from pytest_queryeval.errors import ConfigError, MissingDependency, QueryRefused, QueryTimeout
from pytest_queryeval.kinds import get_kind
from pytest_queryeval.sources import open_source
from pytest_queryeval.sources.duckdb import DuckdbSource

from .attacks import DUCKDB, DUCKDB_FILE_READS, DUCKDB_RAW
from .conftest import make_case, run_bounded, sha256
from .duckdb_data import build_chinook_duckdb

duckdb = pytest.importorskip("duckdb")

RUNAWAY = "SELECT count(*) FROM range(1000000) a, range(1000000) b"


@pytest.fixture(scope="session")
def chinook_duckdb_master(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("duckdb")
    return build_chinook_duckdb(work / "chinook.duckdb", work)


@pytest.fixture
def chinook_duckdb(chinook_duckdb_master: Path, tmp_path: Path) -> Path:
    """A private, writable copy: a read-only source must keep it byte-for-byte unchanged."""
    dst = tmp_path / "chinook.duckdb"
    shutil.copyfile(chinook_duckdb_master, dst)
    return dst


@pytest.fixture(params=["process", "thread"])
def source(request: pytest.FixtureRequest, chinook_duckdb: Path,
           monkeypatch: pytest.MonkeyPatch) -> Iterator[DuckdbSource]:
    monkeypatch.chdir(chinook_duckdb.parent)  # relative 'pwned.*' paths land next to the file
    src = open_source("chinook", {"type": "duckdb", "path": str(chinook_duckdb), "timeout": 2,
                                  "isolation": request.param})
    assert isinstance(src, DuckdbSource)
    yield src
    src.close()


def test_query(source: DuckdbSource) -> None:
    t = source.execute("SELECT artist_id, name FROM artist ORDER BY artist_id LIMIT 3")
    assert t.columns == ["artist_id", "name"]
    assert t.rows == [(1, "AC/DC"), (2, "Accept"), (3, "Aerosmith")]
    assert not t.truncated
    assert source.execute("SELECT count(*) FROM track").rows == [(3503,)]
    # DuckDB has DECIMAL: it arrives as Decimal (unlike SQLite's floats)
    assert source.execute("SELECT max(unit_price) FROM track").rows == [(Decimal("1.99"),)]


@pytest.mark.parametrize("sql", DUCKDB)
def test_refused_and_unchanged(source: DuckdbSource, chinook_duckdb: Path, sql: str) -> None:
    before = sha256(chinook_duckdb)
    with pytest.raises(QueryRefused) as info:
        source.execute(sql)
    assert info.value.reason().startswith(("refused: ", "cannot parse: "))
    assert sha256(chinook_duckdb) == before
    assert sorted(p.name for p in chinook_duckdb.parent.iterdir()) == ["chinook.duckdb"]
    assert source.execute("SELECT count(*) FROM genre").rows == [(25,)]


@pytest.mark.parametrize("sql", DUCKDB_RAW)
def test_connection_refuses_even_unguarded(source: DuckdbSource, chinook_duckdb: Path,
                                           sql: str) -> None:
    """``trusted=True`` skips the guard: read_only, external access off and the locked
    configuration must still refuse, each with its reason."""
    before = sha256(chinook_duckdb)
    with pytest.raises(QueryRefused) as info:
        source.execute(sql, trusted=True)
    reason = info.value.reason()
    assert reason.startswith(("refused: the source is read-only",
                              "refused: the source allows no file, network or extension access"))
    assert "\n" not in reason
    assert sha256(chinook_duckdb) == before
    assert sorted(p.name for p in chinook_duckdb.parent.iterdir()) == ["chinook.duckdb"]
    assert source.execute("SELECT count(*) FROM genre").rows == [(25,)]
    assert source.execute("SELECT current_setting('enable_external_access')").rows == [(False,)]


@pytest.mark.parametrize("sql", DUCKDB_FILE_READS)
def test_select_cannot_read_files(source: DuckdbSource, sql: str) -> None:
    with pytest.raises(QueryRefused) as info:
        source.execute(sql)
    assert info.value.reason().startswith((
        "refused: the source allows no file, network or extension access (Permission Error",
        # every function that opens a file is refused by the guard before the engine (they
        # open the database file itself, which external access off allows: issue 58's
        # re-probes)
        *(f"refused: function {name}() reads a file or URL"
          for name in ("read_csv", "read_text", "glob", "read_blob", "read_parquet"))))


def test_runaway_query_times_out(source: DuckdbSource) -> None:
    with pytest.raises(QueryTimeout) as info:
        run_bounded(lambda: source.execute(RUNAWAY), limit=60)
    assert info.value.reason() == "timeout: query exceeded 2 s"
    assert source.execute("SELECT count(*) FROM genre").rows == [(25,)]


def test_row_cap(source: DuckdbSource) -> None:
    t = source.execute("SELECT range FROM range(1000000)", max_rows=10)
    assert t.rows == [(i,) for i in range(10)]
    assert t.truncated and t.meta == {"max_rows": 10}


def test_byte_cap(chinook_duckdb: Path) -> None:
    src = open_source("chinook", {"type": "duckdb", "path": str(chinook_duckdb),
                                  "max_bytes": 1_000_000})
    try:
        t = src.execute("SELECT repeat('x', 1000) FROM range(200000)")
        assert t.truncated and t.meta == {"max_bytes": 1_000_000}
        assert 0 < len(t.rows) < 1000
    finally:
        src.close()


def test_tables_and_keys(source: DuckdbSource) -> None:
    tables, fks = source.tables()
    assert tables == {"artist": ["artist_id", "name"], "album": ["album_id", "title", "artist_id"],
                      "genre": ["genre_id", "name"],
                      "track": ["track_id", "name", "album_id", "genre_id", "milliseconds",
                                "unit_price"]}
    assert sorted(fks) == [("album", "artist_id", "artist", "artist_id"),
                           ("track", "album_id", "album", "album_id"),
                           ("track", "genre_id", "genre", "genre_id")]


def test_fingerprint(source: DuckdbSource, chinook_duckdb: Path) -> None:
    fp = source.fingerprint()
    assert fp.startswith(f"duckdb:{chinook_duckdb.stat().st_size}:")
    source.execute("SELECT count(*) FROM track")
    assert source.fingerprint() == fp


def test_bad_spec_keys(chinook_duckdb: Path) -> None:
    with pytest.raises(ConfigError, match=r"unknown key.*read_only"):
        open_source("d", {"type": "duckdb", "path": str(chinook_duckdb), "read_only": False})
    with pytest.raises(ConfigError, match="isolation"):
        open_source("d", {"type": "duckdb", "path": str(chinook_duckdb), "isolation": "none"})
    with pytest.raises(ConfigError, match="threads"):
        open_source("d", {"type": "duckdb", "path": str(chinook_duckdb), "threads": 0})


@pytest.mark.parametrize("isolation", ["process", "thread"])
def test_missing_package_names_the_extra(chinook_duckdb: Path, isolation: str,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "duckdb", None)  # import duckdb -> ImportError
    src = open_source("d", {"type": "duckdb", "path": str(chinook_duckdb),
                            "isolation": isolation})
    with pytest.raises(MissingDependency) as info:
        src.execute("SELECT 1")
    assert info.value.reason() == ("missing dependency: type: duckdb needs DuckDB: "
                                   "pip install 'pytest-queryeval[duckdb]'")


def test_sql_kind_scores_execution_and_structure(chinook_duckdb: Path, session: Evaluator) -> None:
    """Through the SQL kind: execution metrics, and structure metrics from the schema that
    ``tables()`` reads (the Spider grammar needs the tables and keys)."""
    spec = {"type": "duckdb", "path": str(chinook_duckdb)}
    gold = "SELECT name FROM artist WHERE artist_id < 4 ORDER BY name"
    case = make_case(gold, spec=spec, options={"structure": True})
    kind = get_kind("sql")
    same = kind.evaluate(case, "SELECT name FROM artist WHERE artist_id <= 3 ORDER BY name",
                         session)
    assert same.reason is None
    assert same.metrics["execution_accuracy"] == 1.0
    assert same.metrics["exact_set_match"] == 0.0  # < 4 is not <= 3, structurally
    assert same.metrics["select_f1"] == 1.0
    other = kind.evaluate(case, "SELECT name FROM genre WHERE genre_id < 4 ORDER BY name",
                          session)
    assert other.metrics["execution_accuracy"] == 0.0
    refused = kind.evaluate(case, "SET enable_external_access = true", session)
    assert refused.reason == "refused: SET is not a read-only query"


def test_the_workers_table_accounts_keep_few_connections_open(
        chinook_duckdb_master: Path, tmp_path: Path) -> None:
    """The table account (``worker_tables``) takes its connection from the worker's bounded
    cache: its own cache had no bound, so an agent suite on many files opened a DuckDB
    instance a file until the worker's address space ran out and every later read there
    failed "out of memory" (a count unknown). Run in this process, whose worker state is a
    plain dict."""
    from pytest_queryeval._isolation.sandbox import worker_state
    from pytest_queryeval.sources import duckdb as duckdb_source

    conns = worker_state().setdefault("duckdb", {})
    before = dict(conns)
    conns.clear()
    try:
        for i in range(duckdb_source._WORKER_CONNECTIONS + 3):
            path = tmp_path / f"copy{i}.duckdb"
            shutil.copyfile(chinook_duckdb_master, path)
            duckdb_source.worker_tables(str(path), "d", "SELECT * FROM Genre",
                                        64 * 1024 * 1024, 1, 10.0)
            assert len(conns) <= duckdb_source._WORKER_CONNECTIONS
        assert (str(path), 1) in conns  # the last one kept, most recently used
    finally:
        for conn in conns.values():
            conn.close()
        conns.clear()
        conns.update(before)
