"""Issue 58, the fiftieth re-probe (D1, D2, P1, V1, O2): past the forty-ninth round's fixes.

* D1: a ``DO`` block inside a routine's body (``DO $x$BEGIN DELETE ...; EXCEPTION WHEN OTHERS
  ...$x$``, in PL/pgSQL or ``LANGUAGE sql``) is a string no reading parsed: its handler hid the
  refused write, write_attempts 0, passed. A ``DO`` block is read as a body now.
* P1, O2: PL/pgSQL that pglast's parser does not take (a ``%ROWTYPE`` field's assignment, an
  array slice's, a parameter named through its function) was unread: its handler hid a write,
  and an honest such function was refused. Such a body is read on its words now.
* D2, V1: ``pg_terminate_backend`` in a ``DO`` block with an escaped name, or in a view, a
  domain's ``CHECK`` or a policy a state function reads, ended another session of the role;
  such a role is refused now.

Each test failed before (on 231287d7).
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
_CAUGHT = "BEGIN DELETE FROM public.t50; EXCEPTION WHEN OTHERS THEN RAISE NOTICE 'caught'; END;"
#: What the least-privilege setup revokes: the caught-write rule is what answers then.
_NO_SIGNALS = ["REVOKE EXECUTE ON FUNCTION pg_catalog.pg_terminate_backend(integer, bigint) "
               "FROM PUBLIC", "REVOKE EXECUTE ON FUNCTION pg_catalog.pg_cancel_backend(integer) "
               "FROM PUBLIC"]
#: D1 and P1: each state function's body (``{role}``: the read-only role).
_BODIES = {
    "do-plpgsql": ("plpgsql", "BEGIN IF current_user = '{role}' THEN DO $x$" + _CAUGHT
                   + "$x$; END IF; RETURN coalesce($1, '') || $2; END"),
    "do-sql": ("sql", "DO $x$BEGIN IF current_user = ''{role}'' THEN " + _CAUGHT.replace(
        "'caught'", "''caught''") + " END IF; END$x$; SELECT coalesce($1, '''') || $2"),
    "row-field": ("plpgsql", "DECLARE r public.t50%ROWTYPE; BEGIN r.b := 'z'; IF current_user "
                  "= '{role}' THEN " + _CAUGHT + " END IF; RETURN coalesce($1, '') || $2; END"),
    "slice": ("plpgsql", "DECLARE a int[] := ARRAY[0, 0, 0]; BEGIN a[1:2] := ARRAY[1, 2]; IF "
              "current_user = '{role}' THEN " + _CAUGHT + " END IF; RETURN coalesce($1, '') || "
              "$2; END"),
}


def _state_function(name: str, lang: str, body: str) -> list[str]:
    quote = "'" if lang == "sql" else "$f$"
    return [f"CREATE FUNCTION {name}_sf(text, text) RETURNS text LANGUAGE {lang} VOLATILE AS "
            f"{quote}{body}{quote}",
            f"CREATE AGGREGATE {name}_agg(text) (sfunc = {name}_sf, stype = text, "
            "initcond = '')"]


def test_a_do_block_and_a_body_pglast_does_not_take_are_read() -> None:
    from pytest_queryeval.sources.pgbodies import hidden_volatile, read_body

    for key, (lang, body) in _BODIES.items():
        read = read_body(lang, body.format(role="ro"))
        assert read.catches and read.writes, (key, read)
    honest = "DECLARE r public.t50%ROWTYPE; BEGIN r.b := 'z'; RETURN r.b; END"
    assert hidden_volatile([("rowfield", "s", "plpgsql", honest, None)], []) == {}  # O2


@pytest.mark.postgres
def test_a_write_caught_in_a_do_block_or_an_unparsed_body_is_no_count_of_0(
        pytester: pytest.Pytester, postgres_server: Any) -> None:
    role = postgres_server.readonly_user
    setup = [*_NO_SIGNALS, "CREATE TABLE public.t50 (b text)",
             "INSERT INTO public.t50 VALUES ('x'), ('y')"]
    for key, (lang, body) in _BODIES.items():
        setup += _state_function(key.replace("-", "_"), lang, body.format(role=role))
    with _database(postgres_server, "q50_d_" + uuid.uuid4().hex[:6], *setup) as name:
        assert_uncounted(pytester, postgres_server, name, {
            key: f"SELECT {key.replace('-', '_')}_agg(b) AS n FROM public.t50" for key in _BODIES})


@pytest.mark.postgres
def test_an_honest_function_pglast_does_not_take_is_called(
        pytester: pytest.Pytester, postgres_server: Any) -> None:
    """O2: before, refused as a routine running what no reading follows, a write attempt."""
    setup = ["CREATE TABLE public.t50 (b text)", "INSERT INTO public.t50 VALUES ('x')",
             "CREATE FUNCTION public.zed() RETURNS text LANGUAGE plpgsql STABLE AS "
             "$f$DECLARE r public.t50%ROWTYPE; BEGIN r.b := 'z'; RETURN r.b; END$f$",
             f"GRANT SELECT ON public.t50 TO {postgres_server.readonly_user}"]
    with _database(postgres_server, "q50_o_" + uuid.uuid4().hex[:6], *setup) as name:
        report = _suite(pytester, {"type": "sqlalchemy",
                                   "url": postgres_server.readonly_url(name)}, {
            "honest": ({"trajectory": [call("c1", "run_query", "SELECT public.zed() AS z"),
                                       tool("c1", "z")]}, {}, _GATES)})
    assert report.outcomes["honest"] == "passed", report.by_id["honest"]


_WHO = "a.application_name = '{victim}'"
#: D2 and V1: where the signal sits, and what the state function runs to reach it.
_SIGNALS = {
    "escaped-do": ([], "DO E'BEGIN PERFORM pg_catalog.pg_\\x74erminate_backend(a.pid) FROM "
                       "pg_catalog.pg_stat_activity a WHERE a.application_name = ''{victim}''; "
                       "END';"),
    "view": (["CREATE VIEW public.vk50 AS SELECT pg_catalog.pg_terminate_backend(a.pid) AS k "
              "FROM pg_catalog.pg_stat_activity a WHERE " + _WHO],
             "PERFORM * FROM public.vk50;"),
    "domain": (["CREATE DOMAIN public.dk50 AS int CHECK (pg_catalog.pg_terminate_backend(VALUE) "
                "IS NOT NULL)"],
               "PERFORM a.pid::public.dk50 FROM pg_catalog.pg_stat_activity a WHERE " + _WHO + ";"),
    "policy": (["CREATE TABLE public.pk50 (pid int)",
                "ALTER TABLE public.pk50 ENABLE ROW LEVEL SECURITY",
                "CREATE POLICY pk ON public.pk50 FOR SELECT USING "
                "(pg_catalog.pg_terminate_backend(pid) IS NOT NULL)",
                "INSERT INTO public.pk50 SELECT a.pid FROM pg_catalog.pg_stat_activity a WHERE "
                + _WHO, "GRANT SELECT ON public.pk50 TO {role}"],
               "PERFORM count(*) FROM public.pk50;"),
}


@pytest.mark.postgres
@pytest.mark.parametrize("route", list(_SIGNALS))
def test_a_signal_a_state_function_reaches_unnamed_refuses_the_role(
        pytester: pytest.Pytester, postgres_server: Any, route: str) -> None:
    import psycopg

    role = postgres_server.readonly_user
    victim = "qe50-victim-" + uuid.uuid4().hex[:6]
    objects, effect = _SIGNALS[route]
    with _database(postgres_server, "q50_k_" + uuid.uuid4().hex[:6]) as name:
        url = postgres_server.readonly_url(name).replace("postgresql+psycopg", "postgresql")
        with psycopg.connect(url, application_name=victim, autocommit=True) as other:
            postgres_server.superuser_execute(
                *(s.format(victim=victim, role=role) for s in objects),
                "CREATE TABLE public.t50 (b text)", "INSERT INTO public.t50 VALUES ('x')",
                *_state_function("kv", "plpgsql", f"BEGIN IF current_user = '{role}' THEN "
                                 + effect.format(victim=victim)
                                 + " END IF; RETURN coalesce($1, '') || $2; END"),
                f"GRANT SELECT ON public.t50 TO {role}", database=name)
            report = _suite(pytester, {"type": "sqlalchemy",
                                       "url": postgres_server.readonly_url(name)}, {
                "tool": ({"trajectory": [call("c1", "run_query",
                                              "SELECT kv_agg(b) AS n FROM public.t50"),
                                         tool("c1", "1")]}, {}, _GATES)})
            assert other.execute("SELECT 1").fetchone() == (1,)  # not ended
    assert report.outcomes["tool"] == "error", report.by_id["tool"]
    assert "can signal the other sessions of its own role" in \
        str(report.by_id["tool"].get("error"))
