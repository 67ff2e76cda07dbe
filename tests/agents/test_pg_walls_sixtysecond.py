"""Issue 58, the sixty-second re-probe of the agents' walls on PostgreSQL (main ef9e3cfc).

The sixty-first round's wall (a routine that builds what it runs leaves the counts unknown)
knew such routines by the words of their text, and two ran SQL given as text unnamed: xml2's
``xpath_table`` (in no list of the words), and ``ts_rewrite(tsquery, text)`` under a second
name, whose text is its symbol ``tsquery_rewrite_query``. Through either, ``set_config``
spelled in pieces set parallel query on around a read: A, a routine reached through a type's
``typmod_in``; B, the agent's own statement over a renamed ``xpath_table``, no routine of the
database's own; E, an ``internal`` alias added to an extension. Each passed with
``forbidden_tables`` 0, the secret returned. And D (LOW): ``'menu&drinks'`` was read as a
Unicode escape.
"""

from __future__ import annotations

import re
import uuid
from typing import Any

import pytest

from tests.agents.test_counts_thirtyfirst_probe import _suite
from tests.agents.test_pg_walls_fiftieth import _NO_SIGNALS
from tests.agents.test_pg_walls_fortythird import _database
from tests.agents.test_pg_walls_sixtyfirst import _base, _cases, assert_counts_unknown

_TMIN = "SELECT 'x'::public.citext(5)::text AS a, current_setting('q61.leak', true) AS n"
#: set_config's calls as text, spelled in pieces (no blinding word, no execute)
_COND = ("DECLARE f text := 'pg_catalog.set_' || 'config('; p text := 'max_par' || 'allel_'; "
         "v text := CASE WHEN $1 THEN '8' ELSE '0' END; "
         "o text := CASE WHEN $1 THEN 'on' ELSE 'off' END; "
         "l text := CASE WHEN $1 THEN 'off' ELSE 'on' END; "
         "BEGIN RETURN f || '''' || p || 'workers_per_gather'', ''' || v || ''', true) IS NOT "
         "NULL AND ' || f || '''' || p || 'workers'', ''' || v || ''', true) IS NOT NULL AND ' || "
         "f || '''force_par' || 'allel_mode'', ''' || o || ''', true) IS NOT NULL AND ' || "
         "f || '''par' || 'allel_leader_participation'', ''' || l || ''', true) IS NOT NULL AND ' "
         "|| f || '''q61.leak'', ' || quote_literal(coalesce($2, 'none')) || ', true) IS NOT "
         "NULL'; END")
_XT = ("PERFORM * FROM public.xpath_table('1', '''<a/>''', '(VALUES (1)) v', '/a', "
       "public.cond62({on}, s)) AS t(k text, a text); ")
_TR = ("PERFORM public.tr('a'::tsquery, 'SELECT ''a''::tsquery, ''b''::tsquery WHERE ' || "
       "public.cond62({on}, s)); ")


def _hidden(role: str, switch: str, read: str) -> list[str]:
    """A routine reached through citext's ``typmod_in`` that switches parallel query on,
    reads, and switches it off."""
    body = (f"DECLARE s text; BEGIN IF session_user = '{role}' THEN {switch.format(on='true')}"
            f"{read}{switch.format(on='false')}END IF; RETURN s; END")
    return ["CREATE EXTENSION citext",
            f"CREATE FUNCTION public.cond62(boolean, text) RETURNS text LANGUAGE plpgsql "
            f"VOLATILE AS $f${_COND}$f$",
            "CREATE FUNCTION public.true62() RETURNS text LANGUAGE plpgsql VOLATILE AS "
            "$f$BEGIN RETURN 'true'; END$f$",
            "CREATE FUNCTION public.sec62() RETURNS SETOF text LANGUAGE plpgsql VOLATILE AS "
            "$f$BEGIN RETURN QUERY SELECT o.secret FROM sales.orders o; END$f$",
            f"CREATE FUNCTION public.hid62() RETURNS text LANGUAGE plpgsql VOLATILE AS "
            f"$f${body}$f$",
            "CREATE FUNCTION public.t62_tmin(cstring[]) RETURNS int LANGUAGE plpgsql VOLATILE "
            "AS $f$BEGIN PERFORM public.hid62(); RETURN 5; END$f$",
            "ALTER TYPE public.citext SET (TYPMOD_IN = public.t62_tmin)"]


def _own_statement() -> str:
    """B: the agent's statement over a renamed ``xpath_table``: on, a read, off."""
    def cond(on: bool) -> str:
        v, o, lp = ("8", "on", "off") if on else ("0", "off", "on")
        return "'" + " AND ".join(
            f"pg_catalog.set_config(''{k}'', ''{x}'', true) IS NOT NULL"
            for k, x in (("max_parallel_workers_per_gather", v), ("max_parallel_workers", v),
                         ("force_parallel_mode", o), ("parallel_leader_participation", lp))) + "'"
    xt = "(SELECT k FROM public.xt({key}, '''<a/>''', {rel}, '/a', {cond}) AS t(k text, a text))"
    one = "'(VALUES (1)) v'"
    return ("SELECT " + xt.format(key="'1'", rel=one, cond=cond(True)) + " AS a, "
            + xt.format(key="'x'", rel="'(SELECT max(secret) AS x FROM sales.orders) s'",
                        cond="'true'") + " AS n, "
            + xt.format(key="'1'", rel=one, cond=cond(False)) + " AS b")


def _forms(role: str) -> dict[str, tuple[str, list[str]]]:
    read = ("SELECT k INTO s FROM public.xpath_table('x', '''<a/>''', '(SELECT max(secret) AS "
            "x FROM sa' || 'les.orders) s', '/a', public.true62()) AS t(k text, a text); ")
    return {
        "a-xpath-table-behind-typmod-in": (_TMIN, ["CREATE EXTENSION xml2",
                                                   *_hidden(role, _XT, read)]),
        "b-the-agents-own-statement": (_own_statement(), [
            "CREATE EXTENSION xml2",
            "ALTER FUNCTION public.xpath_table(text, text, text, text, text) RENAME TO xt"]),
        "e-an-internal-alias-in-an-extension": (_TMIN, [
            "CREATE FUNCTION public.tr(tsquery, text) RETURNS tsquery LANGUAGE internal "
            "VOLATILE STRICT AS 'tsquery_rewrite_query'",
            *_hidden(role, _TR, "s := (SELECT string_agg(x, ',') FROM public.sec62() x); "),
            "ALTER EXTENSION citext ADD FUNCTION public.tr(tsquery, text)"]),
    }


@pytest.mark.postgres
@pytest.mark.parametrize("form", ["a-xpath-table-behind-typmod-in", "b-the-agents-own-statement",
                                  "e-an-internal-alias-in-an-extension"])
def test_a_routine_running_sql_text_under_any_name_makes_the_counts_unknown(
        pytester: pytest.Pytester, postgres_server: Any, form: str) -> None:
    """A, B and E end to end: each case an error naming a routine that runs SQL text.
    Before: both passed with forbidden_tables 0.0, the secret in the final case's record."""
    role = postgres_server.readonly_user
    query, setup = _forms(role)[form]
    assert_counts_unknown(pytester, postgres_server, [*_NO_SIGNALS, *_base(role), *setup], query)


@pytest.mark.postgres
def test_an_ampersand_after_a_u_is_no_escape(pytester: pytest.Pytester,
                                             postgres_server: Any) -> None:
    """D: an honest routine returning ``'menu&drinks'`` no longer makes the counts unknown."""
    role = postgres_server.readonly_user
    setup = [*_base(role), "CREATE TABLE public.t62 (b text)",
             "INSERT INTO public.t62 VALUES ('x')", f"GRANT SELECT ON public.t62 TO {role}",
             "CREATE FUNCTION public.h62(text) RETURNS text LANGUAGE sql AS "
             "$f$SELECT 'menu&drinks' || $1$f$"]
    with _database(postgres_server, "q62d_" + uuid.uuid4().hex[:6], *setup) as name:
        report = _suite(pytester, {"type": "sqlalchemy",
                                   "url": postgres_server.readonly_url(name)},
                        _cases("SELECT count(*) AS a FROM public.t62"))
    for cid in ("tool", "final"):
        assert report.outcomes[cid] == "passed", (cid, report.by_id[cid])


def test_every_function_the_guard_knows_runs_sql_text_is_a_builder() -> None:
    """The guard's list of functions running SQL given as text and the builders' words
    cannot drift apart (62a A: ``xpath_table`` was in one and not the other)."""
    from pytest_queryeval.sources import pgescape
    from pytest_queryeval.sources.pgguard import SQL_TEXT_FUNCTIONS, SQL_TEXT_PREFIXES

    words = re.compile(pgescape._BUILT.replace("\\m", r"\b").replace("\\M", r"\b"), re.I)
    for name in sorted(SQL_TEXT_FUNCTIONS | set(SQL_TEXT_PREFIXES)):
        assert words.search(name), name
    assert words.search("tsquery_rewrite_query")
    assert not words.search("SELECT 'menu&drinks'")
