"""The role check of the SQLAlchemy source on the real loopback PostgreSQL server: the
least-privilege role of the fixture runs; a superuser, a role that can write a table, one that
owns objects and one that may read server files are refused with a reason naming the
datasource and what was found, unless the datasource says ``allow_privileged: true``."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest
from psycopg import sql

from pytest_queryeval.errors import SourceUnavailable
from pytest_queryeval.sources import open_source
from tests.fixtures.postgres import PostgresServer

pytestmark = pytest.mark.postgres

ROLES = {
    # role -> (grants, expected phrase in the refusal)
    "qe_writer": (["GRANT INSERT, UPDATE ON genre, album TO {r}",
                   "GRANT TRUNCATE ON artist TO {r}", "GRANT pg_read_all_data TO {r}"],
                  "can write (INSERT, UPDATE, TRUNCATE) on public.album, public.artist, "
                  "public.genre"),
    "qe_owner": (["CREATE TABLE qe_owned (x int)", "ALTER TABLE qe_owned OWNER TO {r}",
                  "GRANT pg_read_all_data TO {r}"],
                 "owns table public.qe_owned"),
    "qe_files": (["GRANT pg_read_server_files TO {r}", "GRANT pg_read_all_data TO {r}"],
                 "is a member of pg_read_server_files"),
}


@pytest.fixture(scope="module")
def roles(postgres_server: PostgresServer) -> Iterator[dict[str, str]]:
    """Each role of ROLES created with its grants; role -> URL."""
    urls = {}
    with psycopg.connect(postgres_server.conninfo(), autocommit=True) as conn:
        for role, (grants, _) in ROLES.items():
            ident = sql.Identifier(role)
            conn.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD 'pw-role'").format(ident))
            for grant in grants:
                conn.execute(sql.SQL(grant).format(r=ident))
            urls[role] = postgres_server.url().replace(
                f"//{postgres_server.user}:{postgres_server.password}@", f"//{role}:pw-role@")
    yield urls
    with psycopg.connect(postgres_server.conninfo(), autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS qe_owned")
        for role in ROLES:
            ident = sql.Identifier(role)
            conn.execute(sql.SQL("DROP OWNED BY {}").format(ident))
            conn.execute(sql.SQL("DROP ROLE {}").format(ident))


def _run(url: str, **extra: object) -> object:
    src = open_source("warehouse", {"type": "sqlalchemy", "url": url, **extra})
    try:
        return src.execute("SELECT count(*) FROM genre").rows
    finally:
        src.close()


def test_read_only_role_runs(postgres_url: str) -> None:
    assert _run(postgres_url) == [(25,)]


def test_superuser_refused(postgres_server: PostgresServer) -> None:
    before = postgres_server.checksum()
    with pytest.raises(SourceUnavailable) as info:
        _run(postgres_server.url())
    assert info.value.reason() == (
        "unsafe source: datasource 'warehouse': the role 'queryeval' is a superuser: predicted "
        "queries must run as a read-only role (one that owns nothing and has only SELECT on "
        "the tables the suite reads), or set allow_privileged: true on the datasource")
    assert postgres_server.password not in info.value.reason()
    assert postgres_server.checksum() == before


@pytest.mark.parametrize("role", sorted(ROLES))
def test_privileged_roles_refused(roles: dict[str, str], role: str) -> None:
    with pytest.raises(SourceUnavailable) as info:
        _run(roles[role])
    reason = info.value.reason()
    assert reason.startswith(f"unsafe source: datasource 'warehouse': the role '{role}' "), reason
    assert ROLES[role][1] in reason, reason


def test_refusal_is_remembered_per_source(postgres_server: PostgresServer) -> None:
    src = open_source("warehouse", {"type": "sqlalchemy", "url": postgres_server.url()})
    try:
        for _ in range(2):
            with pytest.raises(SourceUnavailable, match="is a superuser"):
                src.execute("SELECT 1", trusted=True)  # gold queries too: it is the source
    finally:
        src.close()


def test_allow_privileged(postgres_server: PostgresServer, roles: dict[str, str]) -> None:
    assert _run(postgres_server.url(), allow_privileged=True) == [(25,)]
    assert _run(roles["qe_writer"], allow_privileged=True) == [(25,)]


def test_allow_privileged_must_be_a_boolean(postgres_url: str) -> None:
    from pytest_queryeval.errors import ConfigError

    with pytest.raises(ConfigError) as info:
        _run(postgres_url, allow_privileged="yes")
    assert info.value.located().endswith(
        "datasources.warehouse.allow_privileged: must be true or false, not 'yes'")
