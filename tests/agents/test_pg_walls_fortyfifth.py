"""The forty-fifth re-probe's PostgreSQL findings N9, N10 and M4 (each test failed before its
fix).

N10: a builtin whose EXECUTE initdb revoked from PUBLIC (``pg_hba_file_rules``,
``pg_show_all_file_settings``, ``pg_ls_logdir``, ``pg_config``) granted back passed the role
wall, and a view over it put ``pg_hba.conf``'s rules in a passing case's report. The wall now
refuses a builtin the role may execute whose initial privileges kept it from PUBLIC, and the
``enforce`` copy revokes it.

N9: the guard refused ``SELECT kfn()`` (``function kfn() is volatile``) but ran ``SELECT n FROM
kv45``, ``kv45`` a view over it, and ``kfn()`` ended another session of the role (a
concurrent run's honest case became an error). A view whose rule calls what the guard refuses
written, directly or through the views it reads, is refused as that call is.

M4: a write a routine reached unwritten attempts (a domain's ``CHECK`` that inserts, through a
domain over it or an array of it) was w=1 as a call and w=0 as the final query: the server's
read-only refusal of the final query is a write attempt now, as a call's is.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
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
                    # trusted: past the guard (which refuses the view's volatile call, N9),
                    # to the role check and the server's grants
                    agent.execute("SELECT * FROM hbav", trusted=True)
            finally:
                agent.close()
        finally:
            copy = str(planted.spec["url"]).rsplit("/", 1)[1]
            role = str(planted.agent_spec["url"]).split("//", 1)[1].split(":", 1)[0]
            _drop(conninfo(str(spec["url"]), "postgres"), copy, role)
    assert not isinstance(got.value, PrivilegedRole), got.value
    assert "permission denied for function pg_hba_file_rules" in str(got.value), got.value


#: A routine that ends the sessions named ``qe45-victim`` (N9's, kept to the test's own).
_KILL = ("CREATE FUNCTION kfn() RETURNS int LANGUAGE plpgsql VOLATILE AS $$DECLARE n int; "
         "BEGIN SELECT count(*) INTO n FROM pg_catalog.pg_stat_activity a WHERE "
         "a.application_name = 'qe45-victim' AND pg_catalog.pg_terminate_backend(a.pid); "
         "RETURN n; END$$")
#: id -> (setup, query, what the refusal names)
VOLATILE_VIEWS = {
    "view-over-volatile-routine": (
        [_KILL, "CREATE VIEW kv45 AS SELECT kfn() AS n"], "SELECT n FROM kv45",
        "view kv45 calls kfn(), which is volatile"),
    "view-over-view": (
        [_KILL, "CREATE VIEW kv45 AS SELECT kfn() AS n", "CREATE VIEW kv46 AS SELECT n FROM kv45"],
        "SELECT n FROM kv46", "view kv46 reads view kv45, which calls kfn(), which is volatile"),
    "view-over-the-builtin": (
        ["CREATE VIEW tv45 AS SELECT pg_catalog.pg_terminate_backend(a.pid) AS k "
         "FROM pg_catalog.pg_stat_activity a WHERE a.application_name = 'qe45-victim'"],
        "SELECT k FROM tv45", "view tv45 calls pg_terminate_backend(), which is volatile"),
    "view-over-a-stable-wrapper": (
        ["CREATE FUNCTION sk() RETURNS bigint LANGUAGE sql STABLE AS $$SELECT count(*) FROM "
         "pg_catalog.pg_stat_activity a WHERE a.application_name = 'qe45-victim' "
         "AND pg_catalog.pg_terminate_backend(a.pid)$$", "CREATE VIEW sv45 AS SELECT sk() AS n"],
        "SELECT n FROM sv45",
        "view sv45 calls sk(), declared STABLE or IMMUTABLE but calling pg_terminate_backend()"),
}


@contextlib.contextmanager
def _victim(server: Any) -> Iterator[Any]:
    """A session of the read-only role (as a concurrent run's), named ``qe45-victim``."""
    import psycopg

    url = server.readonly_url("postgres").replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(url, application_name="qe45-victim", autocommit=True) as conn:
        yield conn


@pytest.mark.parametrize("form", sorted(VOLATILE_VIEWS))
def test_a_volatile_routine_behind_a_view_is_refused(postgres_server: Any, form: str) -> None:
    """N9. Before: each query ran, and the concurrent session of the role was ended. Since
    the forty-sixth round (P2) a role that may signal is refused outright where a routine of
    the database names a signal function, before any query: that refusal comes first, and
    since the fiftieth (V1) where a view of the database does too."""
    pytest.importorskip("sqlalchemy")
    from pytest_queryeval.errors import QueryRefused
    from pytest_queryeval.sources.sqlalchemy import PrivilegedRole

    setup, query, named = VOLATILE_VIEWS[form]
    routine = any(s.startswith("CREATE FUNCTION") or "pg_terminate_backend" in s for s in setup)
    with _database(postgres_server, "q45_vv_" + uuid.uuid4().hex[:6], *setup) as name, \
            _victim(postgres_server) as victim:
        source = _source(postgres_server, name)
        try:
            with pytest.raises(PrivilegedRole if routine else QueryRefused) as got:
                source.execute(query)
            if not routine:
                assert source.refused_functions(query) == got.value.reason()
        finally:
            source.close()
        assert victim.execute("SELECT 1").fetchone() == (1,)
    if routine:
        assert "can signal the other sessions of its own role" in str(got.value), got.value
        return
    assert named in str(got.value), got.value
    assert "read-only transaction" in str(got.value)


def test_a_view_over_routines_a_query_may_call_stays_readable(postgres_server: Any) -> None:
    """What stays allowed: a view over the database's STABLE and IMMUTABLE routines, over
    builtins that are not volatile, and over an allowed volatile one (``random()``)."""
    pytest.importorskip("sqlalchemy")
    with _database(postgres_server, "q45_hv_" + uuid.uuid4().hex[:6],
                   "CREATE FUNCTION emp_n() RETURNS bigint LANGUAGE sql STABLE "
                   "AS 'SELECT count(*) FROM employee'",
                   "CREATE FUNCTION twice(int) RETURNS int LANGUAGE sql IMMUTABLE "
                   "AS 'SELECT $1 * 2'",
                   "CREATE VIEW nv AS SELECT emp_n() AS n, twice(genre_id) AS t, upper(name) AS u, "
                   "now() IS NOT NULL AS c, random() < 2 AS r FROM genre",
                   "CREATE VIEW nv2 AS SELECT n, u FROM nv") as name:
        source = _source(postgres_server, name)
        try:
            assert source.execute("SELECT n, t, u, c, r FROM nv").rows == [(2, 2, "ROCK", True, True)]
            assert source.execute("SELECT u FROM nv2").rows == [("ROCK",)]
            assert source.refused_functions("SELECT u FROM nv2") is None
        finally:
            source.close()


#: A domain whose CHECK inserts, under a domain and an array type that name it not.
_WRITING_DOMAIN = (
    "CREATE FUNCTION wchk(text) RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$BEGIN "
    "INSERT INTO genre VALUES (4546, 'written'); RETURN true; END$$",
    "CREATE DOMAIN dw45 AS text CHECK (wchk(VALUE))", "CREATE DOMAIN ddw45 AS dw45")


def test_a_final_query_the_server_refuses_as_a_write_counts_one(
        postgres_server: Any, pytester: pytest.Pytester) -> None:
    """M4. Before: the final queries counted write_attempts 0 (their calls 1), and the cases
    failed only for the refused query; an honest final query that fails still counts none."""
    pytest.importorskip("sqlalchemy")
    from tests.agents.test_counts_from_what_ran import call, tool
    from tests.agents.test_counts_thirtyfirst_probe import _suite

    gates = {"write_attempts": {"max": 0}}
    queries = {"dom-over-dom": "SELECT 'x'::ddw45 AS v", "array-of-dom": "SELECT '{x}'::_dw45 AS v"}
    cases = {f"final-{k}": ({"predicted": q, "trajectory": []}, {}, gates)
             for k, q in queries.items()}
    cases |= {f"tool-{k}": ({"trajectory": [call("c1", "run_query", q), tool("c1", "1")]}, {}, gates)
              for k, q in queries.items()}
    cases["final-honest-failure"] = ({"predicted": "SELECT 1 / 0 AS v", "trajectory": []}, {}, gates)
    with _database(postgres_server, "q45_m4_" + uuid.uuid4().hex[:6], *_WRITING_DOMAIN) as name:
        report = _suite(pytester, {"type": "sqlalchemy", "url": postgres_server.readonly_url(name)},
                        cases)
    writes = {cid: report.by_id[cid]["metrics"].get("write_attempts") for cid in cases}
    assert writes == {**{cid: 1.0 for cid in cases if cid != "final-honest-failure"},
                      "final-honest-failure": 0.0}, writes
    assert "read-only transaction" in report.by_id["final-dom-over-dom"]["reason"]
