"""Issue 58, the sixty-third re-probe of the agents' walls on PostgreSQL (main c0d0be5b).

The builders' wall read the database's routines, and the builtins that run SQL given as text
(``ts_rewrite(tsquery, text)``, ``query_to_xml``) are no routine of the database's: A, an
operator or an aggregate whose function is ``ts_rewrite``; B, a view over ``query_to_xml(c.q,
...)`` of a table's rows; B2, a domain's ``CHECK`` calling it. A routine without ``execute``
or any setting's name, reached through a type's ``typmod_in``, had them run ``set_config``
held as data around a read, and both cases passed with ``forbidden_tables`` 0. Any object of
the database calling such a builtin (an operator's, an aggregate's or a cast's function, a
stored expression tree) now leaves the counts unknown too.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.agents.test_pg_walls_fiftieth import _NO_SIGNALS
from tests.agents.test_pg_walls_sixtyfirst import _base, assert_counts_unknown
from tests.agents.test_pg_walls_sixtysecond import _COND, _TMIN

pytestmark = pytest.mark.postgres

_REWRITE = "'SELECT ''a''::tsquery, ''b''::tsquery WHERE ' || public.cond62({on}, s)"
_CALLS = {
    "a-an-operator-over-ts-rewrite": f"PERFORM 'a'::tsquery OPERATOR(public.#~#) ({_REWRITE}); ",
    "a-an-aggregate-over-ts-rewrite": f"PERFORM public.rw63(q) FROM (VALUES ({_REWRITE})) v(q); ",
    "b-a-view-over-query-to-xml": "PERFORM x FROM public.v63 WHERE k = '{on}'; ",
    "b2-a-domain-check-over-query-to-xml": "PERFORM c.q::public.d63 FROM public.cmd63 c "
                                           "WHERE c.k = '{on}'; ",
}


def _sets(on: bool) -> str:
    v, o, lp = ("8", "on", "off") if on else ("0", "off", "on")
    return ", ".join(f"pg_catalog.set_config(''{k}'', ''{x}'', true)" for k, x in (
        ("max_parallel_workers_per_gather", v), ("max_parallel_workers", v),
        ("force_parallel_mode", o), ("parallel_leader_participation", lp)))


def _setup(role: str, form: str) -> list[str]:
    call = _CALLS[form]
    on, off = "true", "false"
    body = (f"DECLARE s text; BEGIN IF session_user = '{role}' THEN {call.format(on=on)}"
            "s := (SELECT string_agg(x, ',') FROM public.sec63() x); "
            f"{call.format(on=off)}END IF; RETURN s; END")
    return [*_NO_SIGNALS, *_base(role), "CREATE EXTENSION citext",
            "CREATE OPERATOR public.#~# (LEFTARG = tsquery, RIGHTARG = text, "
            "FUNCTION = pg_catalog.ts_rewrite)",
            "CREATE AGGREGATE public.rw63(text) (SFUNC = pg_catalog.ts_rewrite, STYPE = tsquery, "
            "INITCOND = 'a')",
            "CREATE TABLE public.cmd63 (k text, q text)",
            f"INSERT INTO public.cmd63 VALUES ('true', 'SELECT {_sets(True)}'), "
            f"('false', 'SELECT {_sets(False)}')", f"GRANT SELECT ON public.cmd63 TO {role}",
            "CREATE VIEW public.v63 AS SELECT c.k, pg_catalog.query_to_xml(c.q, true, false, '') "
            "AS x FROM public.cmd63 c", f"GRANT SELECT ON public.v63 TO {role}",
            "CREATE DOMAIN public.d63 AS text CHECK (pg_catalog.query_to_xml(VALUE, true, false, "
            "'') IS NOT NULL)",
            f"CREATE FUNCTION public.cond62(boolean, text) RETURNS text LANGUAGE plpgsql "
            f"VOLATILE AS $f${_COND}$f$",
            "CREATE FUNCTION public.sec63() RETURNS SETOF text LANGUAGE plpgsql VOLATILE AS "
            "$f$BEGIN RETURN QUERY SELECT o.secret FROM sales.orders o; END$f$",
            f"CREATE FUNCTION public.hid63() RETURNS text LANGUAGE plpgsql VOLATILE AS "
            f"$f${body}$f$",
            "CREATE FUNCTION public.t63_tmin(cstring[]) RETURNS int LANGUAGE plpgsql VOLATILE "
            "AS $f$BEGIN PERFORM public.hid63(); RETURN 5; END$f$",
            "ALTER TYPE public.citext SET (TYPMOD_IN = public.t63_tmin)"]


@pytest.mark.parametrize("form", list(_CALLS))
def test_an_object_calling_a_builtin_that_runs_sql_text_makes_the_counts_unknown(
        pytester: pytest.Pytester, postgres_server: Any, form: str) -> None:
    """A, B and B2 end to end: each case an error naming what calls the builtin. Before:
    both passed with forbidden_tables 0.0, the secret in the final case's record."""
    assert_counts_unknown(pytester, postgres_server, _setup(postgres_server.readonly_user, form),
                          _TMIN, "runs SQL given as text")
