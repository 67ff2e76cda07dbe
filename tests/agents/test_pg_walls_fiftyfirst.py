"""Issue 58, the fifty-first re-probe (X1, X2): a state function running ``EXECUTE 'DO
$x$BEGIN DELETE ...; EXCEPTION WHEN OTHERS ...$x$'`` (directly, or two calls away) hid the
refused write: write_attempts 0, passed. The ``DO`` block is text no reading follows; where
the role may write ``DO`` blocks (``USAGE`` on PL/pgSQL, PUBLIC's by default) a routine that
runs statements built at run time leaves the agents' counts unestablished, and where it may
not (docs/sql-sources.md's least privilege) the block fails before it runs. Failed before (on
39f480a0): both cases passed with 0.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tests.agents.test_counts_from_what_ran import call, tool
from tests.agents.test_counts_thirtyfirst_probe import _suite
from tests.agents.test_pg_walls_fiftieth import _NO_SIGNALS
from tests.agents.test_pg_walls_fortythird import _database

pytestmark = pytest.mark.postgres

_GATES = {"write_attempts": {"max": 0}}
_DO = ("EXECUTE 'DO $x$BEGIN DELETE FROM public.t51; EXCEPTION WHEN OTHERS THEN "
       "RAISE NOTICE ''caught''; END$x$';")


def _setup(role: str) -> list[str]:
    only = f"IF current_user = '{role}' THEN {_DO} END IF;"
    return [
        *_NO_SIGNALS, "CREATE TABLE public.t51 (b text)",
        "INSERT INTO public.t51 VALUES ('x'), ('y')",
        f"GRANT SELECT ON public.t51 TO {role}",
        "CREATE FUNCTION zz_do() RETURNS void LANGUAGE plpgsql VOLATILE AS "
        f"$f$BEGIN {only} END$f$",
        "CREATE FUNCTION aa_mid() RETURNS void LANGUAGE sql VOLATILE AS 'SELECT zz_do()'",
        "CREATE FUNCTION x_sf(text, text) RETURNS text LANGUAGE plpgsql VOLATILE AS "
        "$f$BEGIN PERFORM aa_mid(); RETURN coalesce($1, '') || $2; END$f$",
        "CREATE AGGREGATE x_agg(text) (sfunc = x_sf, stype = text, initcond = '')",
    ]


@pytest.mark.parametrize("do_blocks", [True, False])
def test_a_do_block_a_routine_builds_is_no_count_of_0(
        pytester: pytest.Pytester, postgres_server: Any, do_blocks: bool) -> None:
    role = postgres_server.readonly_user
    grant = [f"GRANT USAGE ON LANGUAGE plpgsql TO {role}"] if do_blocks else []
    sql = "SELECT x_agg(b) AS n FROM public.t51"
    with _database(postgres_server, "q51_x_" + uuid.uuid4().hex[:6],
                   *_setup(role), *grant) as name:
        report = _suite(pytester, {"type": "sqlalchemy",
                                   "url": postgres_server.readonly_url(name)}, {
            "tool": ({"trajectory": [call("c1", "run_query", sql), tool("c1", "xy")]}, {},
                     _GATES),
            "final": ({"predicted": sql, "trajectory": []}, {}, _GATES)})
    for cid in ("tool", "final"):
        case = report.by_id[cid]
        if do_blocks:  # the role may write DO blocks: no count stands
            assert report.outcomes[cid] == "error", case
            assert "runs statements built at run time" in str(case.get("error")), case
        elif cid == "final":  # the DO block fails before it runs (no USAGE): no write hid
            assert report.outcomes[cid] == "failed", case
            assert "permission denied for language plpgsql" in str(case), case
