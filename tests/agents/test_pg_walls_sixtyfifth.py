"""Issue 58, the sixty-fifth re-probe of the agents' walls on PostgreSQL (main 04e82b58).

D1, D2: a domain's ``CHECK`` runs whenever a value becomes the domain's, and the reading of
routes brought it only where the domain itself was named or was a routine's argument or
result type. Wrapped in a range or a multirange, in a row type's range column, in a range of
a row type, or in a routine's result row or ``OUT`` column, a ``CHECK`` reading ``pg_stats``
raised ``sales.orders``' values, a routine of the database caught the error and returned its
message, and both cases passed with ``forbidden_tables`` 0, the secret in the final case's
record. Each range, row type and routine now names the types it holds.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.agents.test_pg_walls_sixtyfourth import _STATS, assert_read_counted, stats_base


def _peek(perform: str) -> str:
    return ("CREATE FUNCTION public.peek65() RETURNS text LANGUAGE plpgsql STABLE AS $f$BEGIN "
            f"PERFORM {perform}; RETURN 'none'; "
            "EXCEPTION WHEN raise_exception THEN RETURN SQLERRM; END$f$")


_RANGE = "CREATE TYPE public.r65 AS RANGE (SUBTYPE = public.d65{more})"
_ROW = "CREATE TYPE public.c65 AS (a public.d65)"
#: form: (the objects around the domain, what the catching routine does with them)
_FORMS = {
    "d1-a-multirange-over-a-range-of-the-domain": (
        [_RANGE.format(more=", MULTIRANGE_TYPE_NAME = public.r65multi")],
        "'{[go,z)}'::public.r65multi"),
    "d1-a-range-of-a-row-type-with-a-domain-column": (
        [_ROW, "CREATE TYPE public.r65 AS RANGE (SUBTYPE = public.c65)"],
        "'[\"(go)\",\"(z)\")'::public.r65"),
    "d1-a-row-type-with-a-range-column": (
        [_RANGE.format(more=""), "CREATE TYPE public.c66 AS (a public.r65)"],
        "'(\"[go,z)\")'::public.c66"),
    "d1-a-routine-taking-a-range-of-the-domain": (
        [_RANGE.format(more=""), "CREATE FUNCTION public.f66(public.r65) RETURNS text "
         "LANGUAGE sql IMMUTABLE AS $f$SELECT 'ok'$f$"], "public.f66('[go,z)')"),
    "d2-a-routine-returning-a-row-type-with-a-domain-column": (
        [_ROW, "CREATE FUNCTION public.g65() RETURNS public.c65 LANGUAGE sql STABLE AS "
         "$f$SELECT 'go'::text$f$"], "public.g65()"),
    "d2-a-routines-out-column": (
        ["CREATE FUNCTION public.o65(OUT a public.d65, OUT b int) LANGUAGE sql STABLE AS "
         "$f$SELECT 'go'::text, 1$f$"], "public.o65()"),
}


def _setup(role: str, form: str) -> list[str]:
    made, perform = _FORMS[form]
    check = ("CREATE FUNCTION public.chk65(text) RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS "
             f"$f$BEGIN IF $1 = 'go' AND session_user = '{role}' THEN RAISE EXCEPTION 'S:%', "
             f"{_STATS}; END IF; RETURN true; END$f$")
    return [*stats_base(role), check,
            "CREATE DOMAIN public.d65 AS text CHECK (public.chk65(VALUE))", *made,
            _peek(perform)]


pytestmark = pytest.mark.postgres


@pytest.mark.parametrize("form", list(_FORMS))
def test_a_domains_check_inside_another_type_or_a_routines_row_is_read(
        pytester: pytest.Pytester, postgres_server: Any, form: str) -> None:
    """D1 and D2 end to end: each case fails ``forbidden_tables`` (the ``CHECK``'s read of the
    statistics is a read of every table). Before: both passed with 0.0, the secret in the
    final case's record."""
    assert_read_counted(pytester, postgres_server, _setup(postgres_server.readonly_user, form),
                        "SELECT public.peek65() AS n")
