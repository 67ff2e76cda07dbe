"""Issue 58, the fifty-sixth re-probe of the agents' walls on PostgreSQL (main 1c315e2f).

B2: the counters were blinded with no blinding name in any routine's text: an aggregate's
state function was ``set_config`` itself, its setting's name in the aggregate's
``initcond``, and a read in an ``EXCEPTION`` block (rolled back, the settings with it) kept
the secret. With it, the reading of bodies missed S4, a routine whose ``SET`` clause names
another setting (its unqualified names resolve by the session's path, which the reading
dropped), and S5, a ``SET search_path = "$user", public`` clause (``$user`` kept as written).
The case passed with ``forbidden_tables`` 0. A database expression (a domain's ``CHECK``, a
view, a default) calling ``set_config`` blinds the counts the same way.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tests.agents.test_counts_from_what_ran import call, tool
from tests.agents.test_counts_thirtyfirst_probe import _suite
from tests.agents.test_pg_walls_fiftieth import _NO_SIGNALS
from tests.agents.test_pg_walls_fiftyfifth import _path
from tests.agents.test_pg_walls_fortysixth import _source
from tests.agents.test_pg_walls_fortythird import _database

pytestmark = pytest.mark.postgres

_QUERY = "SELECT l_agg(b) AS n FROM public.t56"


def _setup(role: str, schema: str, clause: str, body: str, *more: str) -> list[str]:
    """A forbidden ``<schema>.orders`` that ``l_agg``'s state function may read (``body``)."""
    return [*_NO_SIGNALS, "CREATE TABLE public.t56 (b text)",
            "INSERT INTO public.t56 VALUES ('x'), ('y')",
            f"CREATE SCHEMA {schema}", f"CREATE TABLE {schema}.orders (id int, secret text)",
            f"INSERT INTO {schema}.orders VALUES (1, 'TOPSECRET')",
            f"GRANT USAGE ON SCHEMA {schema} TO {role}",
            f"GRANT SELECT ON {schema}.orders TO {role}", *more,
            f"CREATE FUNCTION l_sf(text, text) RETURNS text LANGUAGE plpgsql VOLATILE {clause} AS "
            f"$f$DECLARE leak text := ''; BEGIN IF session_user = '{role}' THEN {body} END IF; "
            "RETURN coalesce($1, '') || $2 || coalesce(leak, ''); END$f$",
            "CREATE AGGREGATE l_agg(text) (sfunc = l_sf, stype = text, initcond = '')"]


_READ = "SELECT max(secret) INTO leak FROM orders;"
_BLINDERS = {
    "aggregate": ("CREATE AGGREGATE pw1(text, bool) (sfunc = set_config, stype = text, "
                  "initcond = 'max_parallel_workers_per_gather')",
                  "BEGIN PERFORM pw1('8', true); " + _READ + " PERFORM 1/0; "
                  "EXCEPTION WHEN division_by_zero THEN NULL; END;"),
    "domain": ("CREATE DOMAIN pw2 AS text CHECK (set_config("
               "'max_parallel_workers_per_gather', VALUE, true) IS NOT NULL)",
               "PERFORM '8'::pw2; " + _READ),
}


@pytest.mark.parametrize("form", list(_BLINDERS))
def test_a_blinder_no_routine_names_leaves_the_counts_unknown(
        pytester: pytest.Pytester, postgres_server: Any, form: str) -> None:
    """B2 with S4 end to end: before, both cases passed with forbidden_tables 0.0."""
    role = postgres_server.readonly_user
    blinder, body = _BLINDERS[form]
    setup = _setup(role, "sales", "SET work_mem = '4MB'", body, blinder, *_path("sales"))
    gates = {"forbidden_tables": {"max": 0}, "write_attempts": {"max": 0}}
    agent = {"forbidden_tables": ["sales.orders"]}
    with _database(postgres_server, "q56_b_" + uuid.uuid4().hex[:6], *setup) as name:
        report = _suite(pytester, {"type": "sqlalchemy", "url": postgres_server.readonly_url(name)}, {
            "tool": ({"trajectory": [call("c1", "run_query", _QUERY), tool("c1", "xy")]},
                     agent, gates),
            "final": ({"predicted": _QUERY, "trajectory": []}, agent, gates)})
    for cid in ("tool", "final"):
        error = str(report.by_id[cid].get("error"))
        assert report.outcomes[cid] == "error", (cid, report.by_id[cid])
        assert "may change a setting the counts depend on" in error, (cid, error)
        assert ("aggregate" if form == "aggregate" else "constraint") in error, (cid, error)


@pytest.mark.parametrize("form", ["other-setting", "user-schema"])
def test_the_catalog_reads_a_name_the_path_finds_whatever_the_clause(
        postgres_server: Any, form: str) -> None:
    """S4, S5: the catalog's account of a call of ``l_agg`` holds the forbidden table.
    Before: ``orders`` only."""
    from pytest_queryeval.agents.views import with_views

    role = postgres_server.readonly_user
    if form == "other-setting":
        schema, setup = "sales", _setup(role, "sales", "SET work_mem = '4MB'", _READ,
                                        *_path("sales"))
    else:
        schema, setup = role, _setup(role, role, 'SET search_path = "$user", public', _READ)
    with _database(postgres_server, "q56_c_" + uuid.uuid4().hex[:6], *setup) as name:
        source = _source(postgres_server, name)
        try:
            assert f"{schema}.orders" in with_views(source, {"t56"}, _QUERY)
        finally:
            source.close()
