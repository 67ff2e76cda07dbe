"""Issue 58, the sixty-seventh re-probe of the agents' walls on PostgreSQL (main 4ebf57b1).

C1, C2: a routine made in ``pg_catalog`` was let through when it was an extension's C routine,
and a superuser's ``ALTER EXTENSION plpgsql ADD FUNCTION`` makes any routine a member. A C
``quote_ident(name)`` over sslinfo's ``ssl_version`` (NULL without SSL) emptied every row of
the catalog read built with it, and a C ``array_cat(oid[], oid[])`` over intarray's
``_int_inter`` the routines' result types: rounds 64's R and 65's D2 opened again, both cases
passing with ``forbidden_tables`` 0, the secret in the final case's record. Only a procedural
language's handler, inline handler or validator made there is let through now.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tests.agents.test_counts_thirtyfirst_probe import _suite
from tests.agents.test_pg_walls_fortythird import _database
from tests.agents.test_pg_walls_sixtyfifth import _setup as _domain_setup
from tests.agents.test_pg_walls_sixtyfirst import _base, _cases, assert_counts_unknown
from tests.agents.test_pg_walls_sixtyfourth import _stats_setup

pytestmark = pytest.mark.postgres

_QUOTE_IDENT = ("CREATE FUNCTION pg_catalog.quote_ident(name) RETURNS text LANGUAGE c STABLE "
                "AS '$libdir/sslinfo', 'ssl_version'",
                "ALTER EXTENSION plpgsql ADD FUNCTION pg_catalog.quote_ident(name)")
_ARRAY_CAT = ("CREATE FUNCTION pg_catalog.array_cat(oid[], oid[]) RETURNS oid[] LANGUAGE c "
              "IMMUTABLE STRICT AS '$libdir/_int', '_int_inter'",
              "ALTER EXTENSION plpgsql ADD FUNCTION pg_catalog.array_cat(oid[], oid[])")


def _forms(role: str) -> dict[str, tuple[list[str], str]]:
    """(the setup, the query) of C1 and C2."""
    return {
        "c1-a-c-quote-ident-in-an-extension": (
            [*_stats_setup(role), *_QUOTE_IDENT], "SELECT lower(public.r64('a', 'b')) AS n"),
        "c2-a-c-array-cat-in-an-extension": (
            [*_domain_setup(role, "d2-a-routine-returning-a-row-type-with-a-domain-column"),
             *_ARRAY_CAT], "SELECT public.peek65() AS n"),
    }


@pytest.mark.parametrize("form", ["c1-a-c-quote-ident-in-an-extension",
                                  "c2-a-c-array-cat-in-an-extension"])
def test_an_extensions_c_routine_made_in_pg_catalog_leaves_the_counts_unknown(
        pytester: pytest.Pytester, postgres_server: Any, form: str) -> None:
    """C1 and C2 end to end: each case an error, no secret in it. Before: both passed with
    forbidden_tables 0.0, the secret in the final case's record."""
    setup, query = _forms(postgres_server.readonly_user)[form]
    assert_counts_unknown(pytester, postgres_server, setup, query)


def test_a_languages_handler_made_in_pg_catalog_keeps_the_counts(
        pytester: pytest.Pytester, postgres_server: Any) -> None:
    """A procedural language whose handler and validator the database made in ``pg_catalog``
    (as a PL's own extension script does): an honest read is counted, not refused."""
    role = postgres_server.readonly_user
    setup = [*_base(role), "CREATE TABLE public.t67 (b text)", "INSERT INTO public.t67 VALUES ('x')",
             f"GRANT SELECT ON public.t67 TO {role}",
             "CREATE FUNCTION pg_catalog.pl67_handler() RETURNS language_handler LANGUAGE c "
             "AS '$libdir/plpgsql', 'plpgsql_call_handler'",
             "CREATE FUNCTION pg_catalog.pl67_validator(oid) RETURNS void LANGUAGE c "
             "AS '$libdir/plpgsql', 'plpgsql_validator'",
             "CREATE LANGUAGE pl67 HANDLER pg_catalog.pl67_handler "
             "VALIDATOR pg_catalog.pl67_validator",
             # an extension's members, as ``CREATE EXTENSION plperl`` makes them
             "ALTER EXTENSION plpgsql ADD FUNCTION pg_catalog.pl67_handler()",
             "ALTER EXTENSION plpgsql ADD FUNCTION pg_catalog.pl67_validator(oid)"]
    with _database(postgres_server, "q67h_" + uuid.uuid4().hex[:6], *setup) as name:
        report = _suite(pytester, {"type": "sqlalchemy", "url": postgres_server.readonly_url(name)},
                        _cases("SELECT count(*) AS a FROM public.t67"))
    for cid in ("tool", "final"):
        assert report.outcomes[cid] == "passed", (cid, report.by_id[cid])
