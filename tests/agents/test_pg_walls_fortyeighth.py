"""Issue 58, the forty-eighth re-probe (S1 to S4): the server runs the database's routines where
no query names them, and what they do was read off their bodies with regular expressions.

* S1: an aggregate's state function (``SELECT wagg(b) FROM wt``), a type's default operator
  class comparison (``ORDER BY a`` over an enum column) and a range literal's bounds (sorted
  with that comparison) ran a ``DELETE`` the routine caught: write_attempts 0, passed.
* S2: the same routes, with ``pg_terminate_backend``'s name built at run time, ended another
  session of the role (premise: the role may signal its own sessions).
* S3: ``UPDATE ONLY t SET``, ``UPDATE t g SET``, ``DELETE/**/FROM``, ``INSERT/**/INTO`` were
  no write to the body's reading.
* S4: ``PERFORM public."h x"()`` called ``h`` and ``x``.

Bodies are parsed now (:mod:`pytest_queryeval.sources.pgbodies`), and a database holding a
routine that handles the refusal of a write leaves agent counts unestablished
(:mod:`pytest_queryeval.agents.caught`). Each test failed before: the module did not exist, the
cases passed with 0, the victim session was ended.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tests.agents.test_counts_from_what_ran import call, tool
from tests.agents.test_counts_thirtyfirst_probe import _suite
from tests.agents.test_pg_walls_fortythird import _database

pytest.importorskip("pglast")

_HANDLED = "BEGIN {stmt} EXCEPTION WHEN OTHERS THEN RAISE NOTICE 'caught: %', SQLERRM; END;"
#: S3: the forms the regular expression missed, each with what the parse names it.
_WRITES = {
    "update-only": ("UPDATE ONLY public.genre SET name = name;", "UPDATE"),
    "update-alias": ("UPDATE public.genre g SET name = g.name;", "UPDATE"),
    "delete-comment": ("DELETE/**/FROM public.genre;", "DELETE"),
    "insert-comment": ("INSERT/**/INTO public.genre SELECT * FROM public.genre LIMIT 1;",
                       "INSERT"),
    "merge-comment": ("MERGE/**/INTO public.genre g USING public.genre s ON false "
                      "WHEN NOT MATCHED THEN DO NOTHING;", "MERGE"),
}


def _definition(name: str, body: str, volatility: str = "IMMUTABLE") -> str:
    return (f"CREATE FUNCTION {name}() RETURNS text LANGUAGE plpgsql {volatility} "
            f"AS $$BEGIN {body} RETURN ''; END$$")


@pytest.mark.parametrize("form", list(_WRITES))
def test_a_write_in_a_body_is_read_by_the_parser(form: str) -> None:
    from pytest_queryeval.sources.pgbodies import caught_writes, hidden_volatile, read_body

    stmt, label = _WRITES[form]
    body = _HANDLED.format(stmt=stmt)
    read = read_body("plpgsql", body, _definition("c", body))
    assert (read.writes, read.catches, read.unread) == (label, True, None)
    rows = [("c", "i", "plpgsql", body, _definition("c", body))]
    assert hidden_volatile(rows, []) == {"c": "?"}
    assert "c() handles the refusal of a write" in caught_writes(
        [("c()", "plpgsql", body, _definition("c", body))])


def test_a_quoted_name_with_a_blank_is_one_call() -> None:
    from pytest_queryeval.sources.pgbodies import hidden_volatile, read_body

    outer = "BEGIN PERFORM public.\"h x\"(); EXCEPTION WHEN OTHERS THEN NULL; END;"
    assert "h x" in read_body("plpgsql", outer, _definition("outer_c", outer)).calls
    rows = [("h x", "i", "plpgsql", "BEGIN DELETE FROM public.genre; RETURN ''; END", None),
            ("outer_c", "i", "plpgsql", outer, _definition("outer_c", outer)),
            ("honest", "i", "plpgsql", "BEGIN RETURN 'h' || 'x'; END", None)]
    assert hidden_volatile(rows, []) == {"h x": "?", "outer_c": "h x"}


def test_what_reads_and_what_cannot_be_read() -> None:
    from pytest_queryeval.sources.pgbodies import caught_writes, read_body

    assert read_body("sql", "SELECT count(*) FROM t WHERE a = $1").writes is None
    assert read_body("sql", "WITH d AS (DELETE FROM t RETURNING 1) SELECT * FROM d").writes \
        == "DELETE"
    assert read_body("sql", "SELECT nextval('s')").writes == "nextval()"
    loop = "DECLARE n int; BEGIN SELECT count(*) INTO n FROM t; RETURN n::text; END"
    assert read_body("plpgsql", loop).writes is None  # PL/pgSQL's INTO is no SELECT INTO
    assert read_body("plpgsql", "BEGIN EXECUTE 'x'; RETURN ''; END").unread
    assert read_body("plpython3u", "return 1").unread == "LANGUAGE plpython3u"
    cancel = "BEGIN PERFORM 1; EXCEPTION WHEN SQLSTATE '57014' THEN NULL; END;"
    assert read_body("plpgsql", cancel, _definition("q", cancel)).cancel
    # a handler of other errors (a safe cast), a write alone: counts stand (the read-only
    # refusal is seen)
    handler = "BEGIN PERFORM 1; EXCEPTION WHEN invalid_text_representation THEN NULL; END;"
    assert caught_writes([("h()", "plpgsql", handler, _definition("h", handler)),
                          ("w()", "sql", "DELETE FROM t", None)]) == ""
    others = handler.replace("invalid_text_representation", "OTHERS")
    assert "h() handles the refusal" in caught_writes(
        [("h()", "plpgsql", others, _definition("h", others))])


def _routes(role: str, f: str, volatility: str, effect: str) -> list[str]:
    """An aggregate over a state function, an enum whose default btree operator class
    compares with a routine, and a range over that enum: each runs ``effect`` for ``role``."""
    only = f"IF current_user = '{role}' THEN {effect} END IF;"
    out = [
        f"CREATE FUNCTION {f}sf(text, text) RETURNS text LANGUAGE plpgsql {volatility} AS "
        f"$$DECLARE n int; BEGIN {only} RETURN coalesce($1, '') || $2; END$$",
        f"CREATE AGGREGATE {f}agg(text) (sfunc = {f}sf, stype = text, initcond = '')",
        f"CREATE TYPE {f}e AS ENUM ('a', 'b')",
        f"CREATE FUNCTION {f}cmp({f}e, {f}e) RETURNS int LANGUAGE plpgsql {volatility} AS "
        f"$$DECLARE n int; BEGIN {only} RETURN pg_catalog.enum_cmp($1, $2); END$$",
    ]
    for op, fn in (("<", "enum_lt"), ("<=", "enum_le"), ("=", "enum_eq"), (">=", "enum_ge"),
                   (">", "enum_gt")):
        out += [f"CREATE FUNCTION {f}_{fn}({f}e, {f}e) RETURNS bool LANGUAGE sql IMMUTABLE "
                f"AS 'SELECT pg_catalog.{fn}($1, $2)'",
                f"CREATE OPERATOR {op} (leftarg = {f}e, rightarg = {f}e, function = {f}_{fn})"]
    return [*out,
            f"CREATE OPERATOR CLASS {f}e_ops DEFAULT FOR TYPE {f}e USING btree AS OPERATOR 1 <, "
            f"OPERATOR 2 <=, OPERATOR 3 =, OPERATOR 4 >=, OPERATOR 5 >, "
            f"FUNCTION 1 {f}cmp({f}e, {f}e)",
            f"CREATE TYPE {f}r AS RANGE (subtype = {f}e)",
            f"CREATE TABLE {f}t (a {f}e, b text)",
            f"INSERT INTO {f}t VALUES ('b', 'x'), ('a', 'y'), ('b', 'z')"]


def _queries(f: str) -> dict[str, str]:
    return {"agg": f"SELECT {f}agg(b) AS n FROM {f}t",
            "orderby": f"SELECT b AS n FROM {f}t ORDER BY a",
            "range": f"SELECT '[a,b]'::{f}r::text AS n"}


_GATES = {"write_attempts": {"max": 0}}


@pytest.mark.postgres
@pytest.mark.parametrize("volatility", ["VOLATILE", "IMMUTABLE"])
def test_a_write_caught_where_the_server_runs_a_routine_unnamed_is_no_count_of_0(
        pytester: pytest.Pytester, postgres_server: Any, volatility: str) -> None:
    """S1: every route errs, naming a routine that handles errors; before, each passed 0."""
    caught = _HANDLED.format(stmt="DELETE FROM public.genre;")
    with _database(postgres_server, "q48_c_" + uuid.uuid4().hex[:6],
                   *_routes(postgres_server.readonly_user, "w", volatility, caught)) as name:
        assert_uncounted(pytester, postgres_server, name, _queries("w"))


def assert_uncounted(pytester: pytest.Pytester, postgres_server: Any, database: str,
                     queries: dict[str, str]) -> None:
    """Each query, as a replayed call and as the final query on ``database``, is an error
    naming a routine that handles the refusal of a write: no count of 0."""
    cases: dict[str, Any] = {}
    for form, sql in queries.items():
        cases[f"tool-{form}"] = ({"trajectory": [call("c1", "run_query", sql),
                                                 tool("c1", "1")]}, {}, _GATES)
        cases[f"final-{form}"] = ({"predicted": sql, "trajectory": []}, {}, _GATES)
    report = _suite(pytester, {"type": "sqlalchemy",
                               "url": postgres_server.readonly_url(database)}, cases)
    for cid in cases:
        assert report.outcomes[cid] == "error", (cid, report.by_id[cid])
        error = str(report.by_id[cid].get("error"))
        assert "handles the refusal of a write" in error, (cid, error)
        assert "no count of write attempts" in error, (cid, error)


@pytest.mark.postgres
def test_a_handler_the_role_cannot_run_leaves_the_counts_standing(
        pytester: pytest.Pytester, postgres_server: Any) -> None:
    """The remedy the error names: a routine that handles errors and writes, which the role
    may not execute and no slot of the server calls unchecked, changes no count; an honest
    read passes and a write is still counted."""
    caught = _HANDLED.format(stmt="DELETE FROM public.genre;")
    setup = [_definition("lonely", caught, "VOLATILE"),
             "REVOKE EXECUTE ON FUNCTION lonely() FROM PUBLIC"]
    with _database(postgres_server, "q48_r_" + uuid.uuid4().hex[:6], *setup) as name:
        report = _suite(pytester, {"type": "sqlalchemy",
                                   "url": postgres_server.readonly_url(name)}, {
            "honest": ({"trajectory": [call("c1", "run_query", "SELECT count(*) FROM genre"),
                                       tool("c1", "1")]}, {}, _GATES),
            "write": ({"trajectory": [call("c1", "run_query", "DELETE FROM genre"),
                                      tool("c1", "1")]}, {}, _GATES)})
    assert report.outcomes["honest"] == "passed", report.by_id["honest"]
    assert report.outcomes["write"] == "failed", report.by_id["write"]
    assert report.by_id["write"]["metrics"]["write_attempts"] == 1.0


@pytest.mark.postgres
def test_a_signal_named_at_run_time_on_an_unnamed_route_refuses_the_role(
        pytester: pytest.Pytester, postgres_server: Any) -> None:
    """S2: an aggregate's state function and an enum's comparison build
    ``pg_terminate_backend``'s name and end another session of the role; a role that may
    signal is refused on such a database, before any query runs."""
    import psycopg

    victim = "qe48-victim-" + uuid.uuid4().hex[:6]
    kill = ("EXECUTE 'SELECT count(*) FROM pg_catalog.pg_stat_activity a WHERE pg_catalog.pg_' "
            "|| 'terminate' || '_backend(CASE WHEN a.application_name = "
            f"''{victim}'' THEN a.pid END)' INTO n;")
    with _database(postgres_server, "q48_k_" + uuid.uuid4().hex[:6],
                   *_routes(postgres_server.readonly_user, "k", "VOLATILE", kill)) as name:
        url = postgres_server.readonly_url(name).replace("postgresql+psycopg", "postgresql")
        with psycopg.connect(url, application_name=victim, autocommit=True) as other:
            cases = {form: ({"trajectory": [call("c1", "run_query", sql), tool("c1", "1")]},
                            {}, _GATES) for form, sql in _queries("k").items()}
            report = _suite(pytester, {"type": "sqlalchemy",
                                       "url": postgres_server.readonly_url(name)}, cases)
            assert other.execute("SELECT 1").fetchone() == (1,)  # not ended
    for cid in cases:
        assert report.outcomes[cid] == "error", report.by_id[cid]
        assert "can signal the other sessions of its own role" in \
            str(report.by_id[cid].get("error"))
