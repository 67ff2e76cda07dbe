"""Issue 58, the forty-ninth re-probe (W1 to W4, K1, K2, O1): past the forty-eighth round's
fixes, an aggregate's state function that catches errors still hid writes the reading of the
database's routines did not find, and two routes still ended another session.

* W1: ``nextval()`` in a called routine's parameter ``DEFAULT``; W2: in an assignment's
  target (``a[nextval('s')] := 1``); W3: a view's ``FOR UPDATE``; W4: ``nextval()`` in a
  view, a domain's ``CHECK``, a row-level security policy. Each caught: write_attempts 0,
  passed. A routine that handles the refusal of a write (``WHEN OTHERS``, 25006, 0A000) now
  leaves the counts unestablished by itself, whatever it reaches.
* O1 (an over-refusal of the round before): a safe cast's ``WHEN invalid_text_representation``
  beside a procedure that inserts made every case an error; it catches no refusal of a write.
* K1: an operator over ``pg_terminate_backend`` used in a state function or an enum's
  comparison; K2: a ``BEGIN ATOMIC`` state function naming it (``prosrc`` is empty). Each
  ended another session of the role and passed; such a role is refused now.

Each test failed before (on 5122dbe2): the cases passed with 0, the victim was ended, the
honest case was an error.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tests.agents.test_counts_from_what_ran import call, tool
from tests.agents.test_counts_thirtyfirst_probe import _suite
from tests.agents.test_pg_walls_fortyeighth import assert_uncounted
from tests.agents.test_pg_walls_fortythird import _database

pytest.importorskip("pglast")

_GATES = {"write_attempts": {"max": 0}}
#: What each caught state function runs (W1 to W4), and the objects it reaches.
_CAUGHT = {
    "default": "PERFORM public.wd();",
    "target": "a[nextval('public.s49')] := 1;",
    "view-lock": "PERFORM count(*) FROM public.vlock49;",
    "view-nextval": "PERFORM * FROM public.vnext49;",
    "domain-nextval": "PERFORM 'x'::public.dnext49;",
    "policy-nextval": "PERFORM count(*) FROM public.pol49;",
}
_OBJECTS = [
    "CREATE SEQUENCE public.s49", "GRANT USAGE ON SEQUENCE public.s49 TO {role}",
    "CREATE FUNCTION public.wd(x bigint DEFAULT nextval('public.s49')) RETURNS int "
    "LANGUAGE plpgsql VOLATILE AS $$BEGIN RETURN 1; END$$",
    "CREATE TABLE public.locked49 (b text)", "INSERT INTO public.locked49 VALUES ('q')",
    "CREATE VIEW public.vlock49 AS SELECT b FROM public.locked49 FOR UPDATE",
    "CREATE VIEW public.vnext49 AS SELECT nextval('public.s49') AS n",
    "CREATE DOMAIN public.dnext49 AS text CHECK (nextval('public.s49') > 0)",
    "CREATE TABLE public.pol49 (b text)", "INSERT INTO public.pol49 VALUES ('q')",
    "ALTER TABLE public.pol49 ENABLE ROW LEVEL SECURITY",
    "CREATE POLICY p49 ON public.pol49 FOR SELECT USING (nextval('public.s49') > 0)",
    "GRANT SELECT ON public.vlock49, public.vnext49, public.pol49 TO {role}",
    "CREATE TABLE public.t49 (b text)", "INSERT INTO public.t49 VALUES ('x'), ('y')",
]


def _aggregate(name: str, role: str, effect: str, handler: str = "OTHERS") -> list[str]:
    """An aggregate whose state function runs ``effect`` for ``role`` under ``handler``."""
    body = (f"IF current_user = '{role}' THEN BEGIN {effect} EXCEPTION WHEN {handler} THEN "
            "RAISE NOTICE 'caught: %', SQLERRM; END; END IF;")
    return [f"CREATE FUNCTION {name}_sf(text, text) RETURNS text LANGUAGE plpgsql VOLATILE AS "
            f"$$DECLARE a int[]; BEGIN {body} RETURN coalesce($1, '') || $2; END$$",
            f"CREATE AGGREGATE {name}_agg(text) (sfunc = {name}_sf, stype = text, "
            "initcond = '')"]


def test_a_handler_of_a_refused_write_is_read_whatever_it_reaches() -> None:
    from pytest_queryeval.sources.pgbodies import read_body

    default = ("CREATE FUNCTION public.wd(x bigint DEFAULT nextval('public.s49')) RETURNS int "
               "LANGUAGE plpgsql VOLATILE AS $$BEGIN RETURN 1; END$$")
    assert read_body("plpgsql", "BEGIN RETURN 1; END nextval('public.s49'::regclass)",
                     default).writes == "nextval()"  # W1: the body and its defaults
    target = "DECLARE a int[]; BEGIN a[nextval('public.s49')] := 1; RETURN ''; END"
    assert read_body("plpgsql", target).writes == "nextval()"  # W2
    for handler, catches in (("OTHERS", True), ("read_only_sql_transaction", True),
                             ("SQLSTATE '25006'", True), ("feature_not_supported", True),
                             ("invalid_text_representation", False), ("division_by_zero", False)):
        body = f"BEGIN PERFORM 1; EXCEPTION WHEN {handler} THEN NULL; END"
        assert read_body("plpgsql", body).catches is catches, handler


@pytest.mark.postgres
def test_a_write_refused_under_a_handler_is_no_count_of_0(
        pytester: pytest.Pytester, postgres_server: Any) -> None:
    """W1 to W4, as a replayed call and as the final query: each an error naming a routine
    that handles the refusal of a write."""
    role = postgres_server.readonly_user
    setup = [s.format(role=role) for s in _OBJECTS]
    for k, effect in _CAUGHT.items():
        setup += _aggregate("c_" + k.replace("-", "_"), role, effect)
    with _database(postgres_server, "q49_w_" + uuid.uuid4().hex[:6], *setup) as name:
        assert_uncounted(pytester, postgres_server, name, {
            k: f"SELECT c_{k.replace('-', '_')}_agg(b) AS n FROM public.t49" for k in _CAUGHT})


@pytest.mark.postgres
def test_a_safe_cast_beside_a_writing_procedure_leaves_the_counts_standing(
        pytester: pytest.Pytester, postgres_server: Any) -> None:
    """O1: an honest database's shape; the honest read passes and a write is counted."""
    setup = [
        "CREATE FUNCTION public.safe_int(t text) RETURNS int LANGUAGE plpgsql IMMUTABLE AS "
        "$$BEGIN RETURN t::int; EXCEPTION WHEN invalid_text_representation THEN RETURN NULL; "
        "END$$",
        "CREATE TABLE public.h49 (b text)", "INSERT INTO public.h49 VALUES ('1'), ('x')",
        "CREATE PROCEDURE public.add_row(v text) LANGUAGE plpgsql AS "
        "$$BEGIN INSERT INTO public.h49 VALUES (v); END$$",
        f"GRANT SELECT ON public.h49 TO {postgres_server.readonly_user}",
    ]
    with _database(postgres_server, "q49_o_" + uuid.uuid4().hex[:6], *setup) as name:
        honest = "SELECT public.safe_int(b) AS n FROM public.h49 ORDER BY b"
        report = _suite(pytester, {"type": "sqlalchemy",
                                   "url": postgres_server.readonly_url(name)}, {
            "honest": ({"trajectory": [call("c1", "run_query", honest), tool("c1", "1")]},
                       {}, _GATES),
            "write": ({"trajectory": [call("c1", "run_query", "DELETE FROM public.h49"),
                                      tool("c1", "1")]}, {}, _GATES)})
    assert report.outcomes["honest"] == "passed", report.by_id["honest"]
    assert report.outcomes["write"] == "failed", report.by_id["write"]
    assert report.by_id["write"]["metrics"]["write_attempts"] == 1.0


_KILL_BY_OPERATOR = ("PERFORM a.pid OPERATOR(public.###) 0::bigint FROM "
                     "pg_catalog.pg_stat_activity a WHERE a.application_name = '{victim}';")


def _signalling(role: str, victim: str) -> list[str]:
    """K1: an aggregate's state function and an enum's comparison ending ``victim`` through
    an operator over ``pg_terminate_backend``; K2: a ``BEGIN ATOMIC`` state function."""
    only = f"IF current_user = '{role}' THEN {_KILL_BY_OPERATOR.format(victim=victim)} END IF;"
    return [
        "CREATE OPERATOR public.### (leftarg = integer, rightarg = bigint, "
        "function = pg_catalog.pg_terminate_backend)",
        "CREATE FUNCTION ko_sf(text, text) RETURNS text LANGUAGE plpgsql VOLATILE AS "
        f"$$BEGIN {only} RETURN coalesce($1, '') || $2; END$$",
        "CREATE AGGREGATE ko_agg(text) (sfunc = ko_sf, stype = text, initcond = '')",
        "CREATE FUNCTION ka_sf(s text, v text) RETURNS text LANGUAGE sql VOLATILE BEGIN ATOMIC "
        "SELECT coalesce(s, '') || v || (SELECT count(pg_catalog.pg_terminate_backend(a.pid)) "
        f"FROM pg_catalog.pg_stat_activity a WHERE a.application_name = '{victim}' "
        f"AND current_user = '{role}')::text; END",
        "CREATE AGGREGATE ka_agg(text) (sfunc = ka_sf, stype = text, initcond = '')",
        "CREATE TABLE public.k49 (b text)", "INSERT INTO public.k49 VALUES ('x'), ('y')",
    ]


@pytest.mark.postgres
@pytest.mark.parametrize("form", ["operator", "atomic"])
def test_a_signal_reached_past_the_routines_texts_refuses_the_role(
        pytester: pytest.Pytester, postgres_server: Any, form: str) -> None:
    import psycopg

    victim = "qe49-victim-" + uuid.uuid4().hex[:6]
    setup = _signalling(postgres_server.readonly_user, victim)
    setup = [s for s in setup if ("ko_" not in s and "###" not in s) or form == "operator"]
    setup = [s for s in setup if "ka_" not in s or form == "atomic"]
    sql = f"SELECT {'ko' if form == 'operator' else 'ka'}_agg(b) AS n FROM public.k49"
    with _database(postgres_server, "q49_k_" + uuid.uuid4().hex[:6], *setup) as name:
        url = postgres_server.readonly_url(name).replace("postgresql+psycopg", "postgresql")
        with psycopg.connect(url, application_name=victim, autocommit=True) as other:
            report = _suite(pytester, {"type": "sqlalchemy",
                                       "url": postgres_server.readonly_url(name)}, {
                "tool": ({"trajectory": [call("c1", "run_query", sql), tool("c1", "1")]},
                         {}, _GATES)})
            assert other.execute("SELECT 1").fetchone() == (1,)  # not ended
    assert report.outcomes["tool"] == "error", report.by_id["tool"]
    assert "can signal the other sessions of its own role" in \
        str(report.by_id["tool"].get("error"))
