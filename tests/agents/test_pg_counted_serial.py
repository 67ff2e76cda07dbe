"""Issue 58, the forty-sixth re-probe's P1 and P11: reads the backend's counters never saw.

P1: a parallel worker counts its reads in itself and reports them when it exits, never in the
backend that asked (``pg_stat_get_xact_*`` is that backend's own). With the database's
``force_parallel_mode = on`` (a setting its owner may give it), a routine behind a domain, an
index expression or a partition key that read ``employee`` in a statement built at run time
read it in a worker, and every N1-N8 form of the forty-fifth round counted 0. Counted
statements now run with parallel query off (``SET LOCAL``), and a routine of the database that
could turn it back on (its own ``SET`` clause wins inside it) leaves the counts unknown.

P11: a role granted ``SET`` on ``track_counts`` (PostgreSQL 15's parameter privileges) could
turn the counting off inside a routine while the reading around it said ``on``: the counts are
unknown then too. Each test failed before (P1's with 0, P11's with a pass).
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tests.agents.test_counts_from_what_ran import call, tool
from tests.agents.test_counts_thirtyfirst_probe import GATES, _suite
from tests.agents.test_pg_counted_reads import _HONEST, FORMS, _setup, assert_counted
from tests.agents.test_pg_walls_fortythird import _database

pytestmark = pytest.mark.postgres

_STATIC = "RAISE EXCEPTION 'names: %', (SELECT string_agg(last_name, ',') FROM public.employee);"
_BUILT = ("EXECUTE 'SELECT string_agg(last_name, '','') FROM public.' || 'emp' || 'loyee' "
          "INTO r; RAISE EXCEPTION 'names: %', r;")


def _built_setup(role: str, clause: str = "") -> list[str]:
    """:func:`_setup`'s objects, each routine reading ``employee`` in a statement it builds
    at run time (planned when it runs, where a parallel plan can be chosen), with
    ``clause`` (a ``SET`` clause) on each routine."""
    out = []
    for statement in _setup(role):
        if statement.startswith("CREATE FUNCTION"):
            statement = statement.replace("$$BEGIN IF", "$$DECLARE r text; BEGIN IF") \
                .replace(_STATIC, _BUILT).replace(" AS $$", f" {clause} AS $$", 1)
        out.append(statement)
    return out


def _version(postgres_server: Any) -> int:
    import psycopg

    with psycopg.connect(postgres_server.conninfo()) as conn:
        row = conn.execute("SHOW server_version_num").fetchone()
    assert row is not None
    return int(row[0])


def _forced(postgres_server: Any) -> str:
    """The setting that forces a parallel plan (renamed in PostgreSQL 16)."""
    return "debug_parallel_query" if _version(postgres_server) >= 160000 \
        else "force_parallel_mode"


@pytest.fixture(scope="module")
def parallel(postgres_server: Any) -> Any:
    name = "q46_par_" + uuid.uuid4().hex[:6]
    with _database(postgres_server, name, *_built_setup(postgres_server.readonly_user),
                   f"ALTER DATABASE {name} SET {_forced(postgres_server)} = on",
                   f"ALTER DATABASE {name} SET parallel_leader_participation = off"):
        yield name


@pytest.mark.parametrize("form", sorted(FORMS))
def test_a_read_in_a_parallel_worker_counts(postgres_server: Any, parallel: str,
                                           form: str) -> None:
    assert_counted(postgres_server, parallel, form)


def test_a_routine_that_can_turn_parallel_query_on_leaves_the_counts_unknown(
        pytester: pytest.Pytester, postgres_server: Any) -> None:
    """Its ``SET`` clause beats the session's setting inside it: every agent case gated on
    ``forbidden_tables`` on that database is an error naming the routine, never a pass."""
    clause = f"SET {_forced(postgres_server)} = on SET parallel_leader_participation = off"
    with _database(postgres_server, "q46_set_" + uuid.uuid4().hex[:6],
                   *_built_setup(postgres_server.readonly_user, clause)) as name:
        agent = {"forbidden_tables": ["employee"]}
        cases = {f"tool-{form}": ({"trajectory": [call("c1", "run_query", sql),
                                                  tool("c1", "names: Adams,Edwards")]},
                                  agent, GATES)
                 for form, (sql, _) in {**FORMS, "honest": (_HONEST, True)}.items()}
        report = _suite(pytester, {"type": "sqlalchemy", "trusted_routines": ["*"],
                                   "url": postgres_server.readonly_url(name)}, cases)
        for cid in cases:
            assert report.outcomes[cid] == "error", (cid, report.by_id[cid])
            assert "may change a setting the counts depend on" in \
                str(report.by_id[cid].get("error")), cid


def test_a_role_that_may_set_track_counts_leaves_the_counts_unknown(
        pytester: pytest.Pytester, postgres_server: Any) -> None:
    """The grant is the cluster's (this worker's own server), revoked after."""
    role = postgres_server.readonly_user
    if _version(postgres_server) < 150000:
        pytest.skip("parameter privileges are PostgreSQL 15's")
    postgres_server.superuser_execute(f"GRANT SET ON PARAMETER track_counts TO {role}",
                                      database="postgres")
    try:
        with _database(postgres_server, "q46_tc_" + uuid.uuid4().hex[:6]) as name:
            agent = {"forbidden_tables": ["employee"]}
            report = _suite(pytester, {"type": "sqlalchemy", "trusted_routines": ["*"],
                                       "url": postgres_server.readonly_url(name)}, {
                "tool": ({"trajectory": [call("c1", "run_query", _HONEST), tool("c1", "1")]},
                         agent, GATES)})
        assert report.outcomes["tool"] == "error", report.by_id["tool"]
        assert "may SET track_counts" in str(report.by_id["tool"].get("error"))
    finally:
        postgres_server.superuser_execute(f"REVOKE SET ON PARAMETER track_counts FROM {role}",
                                          database="postgres")


def test_the_routines_that_could_blind_the_counts_are_read_once_a_source(
        postgres_server: Any, parallel: str) -> None:
    """The scan of ``pg_proc`` ran before every counted statement; only parallel query off
    (``SET LOCAL``) has to, in each statement's transaction."""
    from sqlalchemy import event

    from pytest_queryeval.sources import pgreads
    from pytest_queryeval.sources.sqlalchemy import SqlAlchemySource

    source = SqlAlchemySource("pg", postgres_server.readonly_url(parallel), isolation="thread", trusted_routines=["*"])
    sent: list[str] = []
    try:
        event.listen(source._engine(counted=True), "before_cursor_execute",
                     lambda _conn, _cursor, statement, *_: sent.append(statement))
        with pgreads.counted():
            for _ in range(3):
                source.execute(_HONEST)
    finally:
        source.close()
    assert sum("parallel_leader_participation|set_config" in s for s in sent) == 1, sent
    assert sum("'max_parallel_workers_per_gather', '0'" in s for s in sent) == 3, sent
