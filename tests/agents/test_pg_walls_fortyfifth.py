"""The forty-fifth re-probe's PostgreSQL findings N9, N10 and M4 (each test failed before its
fix).

N10: a builtin whose EXECUTE initdb revoked from PUBLIC (``pg_hba_file_rules``,
``pg_show_all_file_settings``, ``pg_ls_logdir``, ``pg_config``) granted back passed the role
wall, and a view over it put ``pg_hba.conf``'s rules in a passing case's report. The wall now
refuses a builtin the role may execute whose initial privileges kept it from PUBLIC, and the
``enforce`` copy revokes it.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tests.agents.test_pg_walls_fortythird import _database, _refusal

pytestmark = pytest.mark.postgres

#: N10's grants, and views over two of them.
_GRANTED = (
    "GRANT EXECUTE ON FUNCTION pg_catalog.pg_hba_file_rules() TO PUBLIC",
    "GRANT EXECUTE ON FUNCTION pg_catalog.pg_show_all_file_settings() TO PUBLIC",
    "GRANT EXECUTE ON FUNCTION pg_catalog.pg_ls_logdir() TO {role}",
    "GRANT EXECUTE ON FUNCTION pg_catalog.pg_config() TO PUBLIC",
    "CREATE VIEW hbav AS SELECT type, database, user_name, auth_method "
    "FROM pg_catalog.pg_hba_file_rules()",
    "CREATE VIEW fsv AS SELECT sourcefile, name, setting "
    "FROM pg_catalog.pg_show_all_file_settings()",
)


def _source(server: Any, database: str) -> Any:
    from pytest_queryeval.sources.sqlalchemy import SqlAlchemySource

    return SqlAlchemySource("pg", server.readonly_url(database), isolation="thread")


def test_a_builtin_initdb_kept_from_public_granted_back_is_refused(postgres_server: Any) -> None:
    """N10. Before: ``SELECT * FROM hbav`` returned the server's ``pg_hba.conf`` rules as
    the read-only role (the wall listed none of these builtins)."""
    pytest.importorskip("sqlalchemy")
    setup = [s.format(role=postgres_server.readonly_user) for s in _GRANTED]
    with _database(postgres_server, "q45_granted_" + uuid.uuid4().hex[:6], *setup) as name:
        source = _source(postgres_server, name)
        try:
            got = str(_refusal(source, "SELECT * FROM hbav").reason())
        finally:
            source.close()
    assert got.startswith("unsafe source") and "allow_privileged" in got, got
    assert "can execute builtins granted EXECUTE after initdb" in got, got
    for fn in ("pg_hba_file_rules()", "pg_show_all_file_settings()", "pg_ls_logdir()",
               "pg_config()"):
        assert fn in got, got
    assert "scram-sha-256" not in got and "trust" not in got


def test_a_builtin_public_from_initdb_granted_again_is_not_refused(postgres_server: Any) -> None:
    """What stays allowed: a builtin initdb left to PUBLIC, revoked and granted back (a new
    ACL, no initial privileges of its own), and the honest role of docs/sql-sources.md."""
    pytest.importorskip("sqlalchemy")
    with _database(postgres_server, "q45_public_" + uuid.uuid4().hex[:6],
                   "REVOKE EXECUTE ON FUNCTION pg_catalog.upper(text) FROM PUBLIC",
                   "GRANT EXECUTE ON FUNCTION pg_catalog.upper(text) TO PUBLIC") as name:
        source = _source(postgres_server, name)
        try:
            assert source.execute("SELECT upper(name) FROM genre").rows == [("ROCK",)]
        finally:
            source.close()


def test_enforce_copy_revokes_a_builtin_granted_back(postgres_server: Any) -> None:
    """N10 under ``enforce``: the copy's agent role read ``pg_hba.conf`` through ``hbav``
    (PUBLIC's grant came with the copy); now the copy revokes it, so the agent's source is
    not refused for it and the builtin's read is denied by the server."""
    pytest.importorskip("sqlalchemy")
    from pytest_queryeval.agents.canaries import Target
    from pytest_queryeval.agents.pgplant import _drop, plant_postgres
    from pytest_queryeval.errors import QueryEvalError
    from pytest_queryeval.sources import open_source
    from pytest_queryeval.sources.sqlalchemy import PrivilegedRole
    from pytest_queryeval.tasks.pgcopies import conninfo

    setup = [s.format(role="PUBLIC") for s in _GRANTED]
    with _database(postgres_server, "q45_enforce_" + uuid.uuid4().hex[:6], *setup) as name:
        spec = {"type": "sqlalchemy", "url": postgres_server.url(name),
                "allow_privileged": True}
        planted = plant_postgres(spec, [Target("employee")], 7, True)
        try:
            agent = open_source("agent", {**planted.agent_spec, "isolation": "thread"})
            try:
                with pytest.raises(QueryEvalError) as got:
                    agent.execute("SELECT * FROM hbav")
            finally:
                agent.close()
        finally:
            copy = str(planted.spec["url"]).rsplit("/", 1)[1]
            role = str(planted.agent_spec["url"]).split("//", 1)[1].split(":", 1)[0]
            _drop(conninfo(str(spec["url"]), "postgres"), copy, role)
    assert not isinstance(got.value, PrivilegedRole), got.value
    assert "permission denied for function pg_hba_file_rules" in str(got.value), got.value
