"""Issue 58, the forty-sixth re-probe's P2: PostgreSQL lets PUBLIC signal the other sessions
of its own role (the source warns of it). A routine of the database that calls
``pg_terminate_backend`` behind a domain's ``CHECK`` ran unnamed for ``SELECT 'x'::kdd`` (a
domain over that domain), ended another session of the role, and the replayed call passed.
A role that may signal, on a database whose routines name a signal function, is refused now
(the datasource's error, before any prediction runs), unless ``allow_privileged``. Failed
before: the victim session was ended and the case passed.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tests.agents.test_counts_from_what_ran import call, tool
from tests.agents.test_counts_thirtyfirst_probe import GATES, _suite
from tests.agents.test_pg_walls_fortythird import _database

pytestmark = pytest.mark.postgres


def _setup(role: str, victim: str) -> list[str]:
    kill = (f"IF current_user = '{role}' THEN EXECUTE 'SELECT count(*) FROM "
            "pg_catalog.pg_stat_activity a WHERE pg_catalog.pg_terminate_backend(CASE WHEN "
            f"a.application_name = ''{victim}'' THEN a.pid END)' INTO n; END IF;")
    return [
        "CREATE FUNCTION kchk(text) RETURNS boolean LANGUAGE plpgsql IMMUTABLE "
        f"AS $$DECLARE n int; BEGIN {kill} RETURN true; END$$",
        "CREATE DOMAIN kd AS text CHECK (kchk(VALUE))", "CREATE DOMAIN kdd AS kd",
    ]


def test_a_role_that_may_signal_is_refused_where_routines_signal(
        pytester: pytest.Pytester, postgres_server: Any) -> None:
    import psycopg

    victim = "qe46-victim-" + uuid.uuid4().hex[:6]
    with _database(postgres_server, "q46_k_" + uuid.uuid4().hex[:6],
                   *_setup(postgres_server.readonly_user, victim)) as name:
        url = postgres_server.readonly_url(name).replace("postgresql+psycopg", "postgresql")
        with psycopg.connect(url, application_name=victim, autocommit=True) as other:
            report = _suite(pytester, {"type": "sqlalchemy",
                                       "url": postgres_server.readonly_url(name)}, {
                "tool": ({"trajectory": [call("c1", "run_query", "SELECT 'x'::kdd AS v"),
                                         tool("c1", "x")]}, {"forbidden_tables": ["employee"]},
                         GATES)})
            assert other.execute("SELECT 1").fetchone() == (1,)  # not ended
    assert report.outcomes["tool"] == "error", report.by_id["tool"]
    assert "can signal the other sessions of its own role" in \
        str(report.by_id["tool"].get("error"))
