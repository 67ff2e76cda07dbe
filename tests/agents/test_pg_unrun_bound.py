"""Issue 58, the forty-sixth re-probe's P6: with ``replay: false`` and no ``budget.seconds``,
the engine's account of an unrun call (its plan, which runs the database's plan-time
routines) was bounded by the default budget, 300 s, not by the datasource's ``timeout``: a
routine behind an inheritance child's index expression that sets ``statement_timeout = 0``
and swallows cancel requests held one case 307 s under ``timeout: 2``. The account is bounded
by the datasource's timeout now (then the cancel, terminate and kill ladder): its error names
2 s. Before the fix the same case ended after 300 s, its error naming 300 s.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tests.agents.test_counts_from_what_ran import call, tool
from tests.agents.test_counts_thirtyfirst_probe import GATES, _suite
from tests.agents.test_pg_walls_fortythird import _database

pytestmark = pytest.mark.postgres


def _setup(role: str) -> list[str]:
    # (the probe's routine swallowed the cancel too: such a routine is refused now, the
    # forty-seventh re-probe's Q7; a sleep past the budget is bounded the same way)
    loop = f"IF current_user = '{role}' THEN PERFORM pg_catalog.pg_sleep(400); END IF;"
    return [
        "CREATE FUNCTION zix() RETURNS text LANGUAGE plpgsql IMMUTABLE "
        f"SET statement_timeout = 0 AS $$BEGIN {loop} RETURN ''; END$$",
        "CREATE TABLE zpar (a text)", "CREATE TABLE zch () INHERITS (zpar)",
        "INSERT INTO zch VALUES ('v')", "CREATE INDEX zch_i ON zch ((a || zix()))",
    ]


def test_an_unrun_calls_account_is_bounded_by_the_datasource_timeout(
        pytester: pytest.Pytester, postgres_server: Any) -> None:
    with _database(postgres_server, "q46_z_" + uuid.uuid4().hex[:6],
                   *_setup(postgres_server.readonly_user)) as name:
        agent = {"forbidden_tables": ["employee"], "replay": False}
        report = _suite(pytester, {"type": "sqlalchemy", "timeout": 2,
                                   "url": postgres_server.readonly_url(name)}, {
            "z": ({"trajectory": [call("c1", "run_query", "SELECT count(*) AS n FROM zpar"),
                                  tool("c1", "1")]}, agent, GATES)})
    error = str(report.by_id["z"].get("error"))
    assert report.outcomes["z"] == "error", report.by_id["z"]
    assert "the engine's account of the tables read could not be taken" in error
    assert "exceeded 2 s" in error, error
