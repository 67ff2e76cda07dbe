"""The SQLAlchemy source on a dialect without server-side timeouts (SQLite through SQLAlchemy):
the generic path — client watchdog, ``PRAGMA query_only``, rollback — on a real file."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_queryeval.errors import QueryRefused, QueryTimeout
from pytest_queryeval.sources import open_source
from pytest_queryeval.sources.sqlalchemy import SqlAlchemySource, mask_url

from .attacks import SQLITE, SQLITE_RAW_WRITES
from .conftest import sha256


@pytest.fixture
def source(chinook_sqlite: Path) -> Iterator[SqlAlchemySource]:
    src = open_source("lite", {"type": "sqlalchemy", "url": f"sqlite:///{chinook_sqlite}"})
    assert isinstance(src, SqlAlchemySource)
    yield src
    src.close()


def test_query(source: SqlAlchemySource) -> None:
    assert source.dialect == "sqlite"
    t = source.execute("SELECT Name FROM Artist WHERE Name LIKE 'AC/%' ORDER BY 1")
    assert t.rows == [("AC/DC",)]


@pytest.mark.parametrize("sql", SQLITE[:12])
def test_refused(source: SqlAlchemySource, chinook_sqlite: Path, sql: str) -> None:
    before = sha256(chinook_sqlite)
    with pytest.raises(QueryRefused):
        source.execute(sql)
    assert sha256(chinook_sqlite) == before


@pytest.mark.parametrize("sql", SQLITE_RAW_WRITES)
def test_unguarded_writes_stopped_by_query_only(
    source: SqlAlchemySource, chinook_sqlite: Path, sql: str
) -> None:
    before = sha256(chinook_sqlite)
    with pytest.raises(QueryRefused, match="read-only"):
        source.execute(sql, trusted=True)
    assert sha256(chinook_sqlite) == before


def test_watchdog_timeout(source: SqlAlchemySource) -> None:
    with pytest.raises(QueryTimeout):
        source.execute("SELECT count(*) FROM track a, track b, track c", timeout=0.5)
    assert source.execute("SELECT count(*) FROM genre").rows == [(25,)]


def test_row_cap(source: SqlAlchemySource) -> None:
    t = source.execute("SELECT TrackId FROM Track", max_rows=100)
    assert t.truncated
    assert len(t) == 100


def test_mask_url() -> None:
    assert mask_url("postgresql://u:p%40ss@h/db and x://a:b@c") == "postgresql://u:***@h/db and x://a:***@c"
    assert mask_url("sqlite:///tmp/x.db") == "sqlite:///tmp/x.db"


def test_password_in_query_string_is_masked() -> None:
    url = "trino://user@host:8443/cat?password=Sup3rSecret&http_scheme=https"
    src = SqlAlchemySource("t", url)
    assert "Sup3rSecret" not in src.fingerprint()
    assert "Sup3rSecret" not in repr(src)
    assert "Sup3rSecret" in src.secrets
    assert src.scrub(f"failed for {url}") == (
        "failed for trino://user@host:8443/cat?password=***&http_scheme=https")


def test_bad_spec_values_are_config_errors(chinook_sqlite: Path) -> None:
    from pytest_queryeval.errors import ConfigError

    with pytest.raises(ConfigError):
        open_source("x", {"type": "sqlite", "path": str(chinook_sqlite), "timeout": "soon"})
    with pytest.raises(ConfigError, match="SQLAlchemy URL"):
        open_source("x", {"type": "sqlalchemy", "url": "not a url"})
