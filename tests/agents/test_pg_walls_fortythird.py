"""Issue 58, the forty-second re-probe's PostgreSQL findings (each test failed before its fix).

Q1, Q2, Q7, Q11 to Q14, Q19, Q20: a database can hand a least-privilege role what acts past
its read-only, rolled-back transaction -- another role's ``SECURITY DEFINER`` routine, a C
second name of a builtin or of ``dblink_exec``, dblink itself, a ``file_fdw`` table -- and a
query reaches it through a view, a domain's ``CHECK``, a parent table, with nothing to read in
its text: a host file in the report, a file written, a program run, a table created in the
suite's database. The role check refuses such a role now, naming the route
(:mod:`pytest_queryeval.sources.pgescape`), and the ``enforce`` copy revokes the routines.

Q9: a builtin the catalog's read calls, replaced in place, blinded every view; Q15, Q16: an
operator ``LIKE`` or ``SIMILAR TO`` calls by name, and an operator class's support routine,
read a forbidden table with 0.
"""

from __future__ import annotations

import contextlib
import os
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.agents.test_counts_thirtyninth import NO_DO_BLOCKS, PG_SETUP
from tests.agents.test_counts_thirtysixth import _counts

pytestmark = pytest.mark.postgres

_RF = ("CREATE FUNCTION rf(text) RETURNS text LANGUAGE plpgsql STABLE SECURITY DEFINER "
       "AS $$BEGIN RETURN pg_read_file($1); END$$")
_HOSTFS = ("CREATE EXTENSION file_fdw", "CREATE SERVER hostfs FOREIGN DATA WRAPPER file_fdw")


@contextlib.contextmanager
def _database(server: Any, name: str, *setup: str) -> Iterator[str]:
    """A database of its own with ``setup`` run in it by the superuser, dropped after. The
    role writes no ``DO`` block there (docs/sql-sources.md, 'Least privilege on PostgreSQL':
    else a routine running ``EXECUTE`` leaves the agents' counts unestablished)."""
    server.superuser_execute(f"DROP DATABASE IF EXISTS {name}", f"CREATE DATABASE {name}",
                             database="postgres")
    try:
        server.superuser_execute(
            NO_DO_BLOCKS, *PG_SETUP[:4], *setup,
            f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {server.readonly_user}",
            database=name)
        yield name
    finally:
        server.superuser_execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)",
                                 database="postgres")


def _mark() -> str:
    """A path the server's user may write and nothing else uses."""
    return f"/tmp/qe43-{uuid.uuid4().hex}.txt"


def _refusal(source: Any, query: str) -> Any:
    """What ``query`` met on ``source``, asserted to be the role check's refusal."""
    from pytest_queryeval.errors import QueryEvalError
    from pytest_queryeval.sources.sqlalchemy import PrivilegedRole

    try:
        got: Any = source.execute(query)
    except QueryEvalError as e:
        got = e
    assert isinstance(got, PrivilegedRole), got
    return got


def _route_forms(server: Any, mark: str) -> dict[str, tuple[list[str], str, str]]:
    """id: (setup, the hostile query, what the refusal names)."""
    dblink_loop = [
        "CREATE EXTENSION dblink", "CREATE EXTENSION postgres_fdw",
        f"CREATE SERVER loop FOREIGN DATA WRAPPER postgres_fdw OPTIONS (host '127.0.0.1', "
        f"port '{server.port}', dbname '{{db}}')",
        f"CREATE USER MAPPING FOR PUBLIC SERVER loop OPTIONS (user '{server.user}', "
        f"password '{server.password}')",
        "GRANT USAGE ON FOREIGN SERVER loop TO PUBLIC"]
    return {
        "q1-view-over-definer": (
            [_RF, "CREATE VIEW hv AS SELECT rf('/etc/hostname') AS h"],
            "SELECT * FROM hv", "run as another role"),
        "q1-operator-over-definer": (
            [_RF, "CREATE OPERATOR ### (LEFTARG = text, RIGHTARG = text, FUNCTION = rf2)"],
            "SELECT 'x' ### '/etc/hostname' AS h", "run as another role"),
        "q7-domain-check-raises": (
            ["CREATE FUNCTION chk(text) RETURNS boolean LANGUAGE plpgsql STABLE SECURITY "
             "DEFINER AS $$BEGIN RAISE EXCEPTION '%', pg_read_file($1); END$$",
             "CREATE DOMAIN fpath AS text CHECK (chk(VALUE))"],
            "SELECT '/etc/hostname'::fpath AS h", "run as another role"),
        "q2-file-fdw-child": (
            [*_HOSTFS, "CREATE TABLE hp (line text)",
             "CREATE FOREIGN TABLE hpc () INHERITS (hp) SERVER hostfs "
             "OPTIONS (filename '/etc/hostname')"],
            "SELECT * FROM hp", "reaches foreign tables"),
        "q14-program-child": (
            [*_HOSTFS, "CREATE TABLE pp (line text)",
             f"CREATE FOREIGN TABLE ppc () INHERITS (pp) SERVER hostfs "
             f"OPTIONS (program 'echo ran >> {mark}; echo ran')"],
            "SELECT * FROM pp", "reaches foreign tables"),
        "q13-copy-to-in-a-view": (
            ["CREATE FUNCTION vol_copy(text) RETURNS int LANGUAGE plpgsql VOLATILE SECURITY "
             "DEFINER AS $$BEGIN EXECUTE format('COPY (SELECT last_name FROM employee) TO %L',"
             " $1); RETURN 1; END$$",
             f"CREATE VIEW wv AS SELECT vol_copy('{mark}') AS n"],
            "SELECT * FROM wv", "run as another role"),
        "q12-adminpack-in-a-view": (
            ["CREATE EXTENSION adminpack",
             "CREATE FUNCTION wf(text, text) RETURNS bigint LANGUAGE sql STABLE SECURITY "
             "DEFINER AS 'SELECT pg_file_write($1, $2, true)'",
             f"CREATE VIEW fv AS SELECT wf('{mark}', 'ran') AS n"],
            "SELECT * FROM fv", "run as another role"),
        "q19-c-second-name-of-crosstab": (
            ["CREATE EXTENSION tablefunc",
             "CREATE FUNCTION ct(text) RETURNS SETOF record LANGUAGE c STABLE STRICT "
             "AS '$libdir/tablefunc', 'crosstab'"],
            "SELECT * FROM ct('SELECT last_name, ''x''::text, last_name FROM employee "
            "ORDER BY 1') AS t(n text, x text)", "does not sandbox"),
        "q20-c-second-name-of-dblink-exec": (
            [*dblink_loop,
             "REVOKE EXECUTE ON ALL FUNCTIONS IN SCHEMA public FROM PUBLIC",
             "CREATE FUNCTION dle(text, text) RETURNS text LANGUAGE c STABLE STRICT "
             "AS '$libdir/dblink', 'dblink_exec'"],
            "SELECT dle('loop', 'CREATE TABLE pwn43 (a int)') AS r", "can execute dblink"),
        "q20-dblink-exec-in-a-view": (
            [*dblink_loop,
             "CREATE FUNCTION dx(text) RETURNS text LANGUAGE sql STABLE "
             "AS $$SELECT dblink_exec('loop', $1)$$",
             "CREATE VIEW xv AS SELECT dx('CREATE TABLE pwn43 (a int)') AS r"],
            "SELECT * FROM xv", "can execute dblink"),
    }


FORMS = ["q1-view-over-definer", "q1-operator-over-definer", "q7-domain-check-raises",
         "q2-file-fdw-child", "q14-program-child", "q13-copy-to-in-a-view",
         "q12-adminpack-in-a-view", "q19-c-second-name-of-crosstab",
         "q20-c-second-name-of-dblink-exec", "q20-dblink-exec-in-a-view"]


@pytest.mark.parametrize("form", FORMS)
def test_a_role_that_reaches_past_the_transaction_is_refused(postgres_server: Any,
                                                             form: str) -> None:
    """Before: each query ran as the read-only role (the host's hostname in its rows or its
    error, the mark file written, ``pwn43`` created in the suite's database)."""
    pytest.importorskip("sqlalchemy")
    from pytest_queryeval.sources.sqlalchemy import SqlAlchemySource

    mark = _mark()
    setup, query, named = _route_forms(postgres_server, mark)[form]
    name = "q43_" + form.split("-")[0] + "_" + uuid.uuid4().hex[:6]
    setup = [s.replace("{db}", name) for s in setup]
    if form == "q1-operator-over-definer":
        setup.insert(1, "CREATE FUNCTION rf2(text, text) RETURNS text LANGUAGE sql STABLE "
                        "SECURITY DEFINER AS 'SELECT pg_read_file($2)'")
    hostname = Path("/etc/hostname").read_text().strip()
    with _database(postgres_server, name, *setup):
        source = SqlAlchemySource("pg", postgres_server.readonly_url(name), isolation="thread")
        try:
            got = _refusal(source, query)
            assert re.search(named, str(got)) and "allow_privileged" in str(got)
            assert hostname not in str(got)
        finally:
            source.close()
        assert not os.path.exists(mark), "the prediction wrote a file on the server"
        import psycopg

        with psycopg.connect(postgres_server.conninfo(name)) as conn:
            assert conn.execute("SELECT to_regclass('pwn43')").fetchone() == (None,)


def test_an_honest_database_with_extensions_is_not_refused(postgres_server: Any) -> None:
    """What stays allowed: an extension's own C routines (tablefunc's ``crosstab``, called by
    its name: the guard's), SQL and PL/pgSQL routines of the database, a definer routine of
    the role's own... here none of another role's; dblink revoked as docs/sql-sources.md
    says."""
    pytest.importorskip("sqlalchemy")
    from pytest_queryeval.sources.sqlalchemy import SqlAlchemySource

    with _database(postgres_server, "q43_honest", "CREATE EXTENSION tablefunc",
                   "CREATE EXTENSION dblink",
                   "REVOKE EXECUTE ON ALL FUNCTIONS IN SCHEMA public FROM PUBLIC",
                   "GRANT EXECUTE ON FUNCTION normal_rand(integer, double precision, "
                   "double precision) TO PUBLIC",
                   "CREATE FUNCTION emp_n() RETURNS bigint LANGUAGE sql STABLE "
                   "AS 'SELECT count(*) FROM employee'") as name:
        source = SqlAlchemySource("pg", postgres_server.readonly_url(name), isolation="thread")
        try:
            assert source.execute("SELECT count(*) FROM genre").rows == [(1,)]
        finally:
            source.close()


def test_enforce_copy_revokes_a_c_second_name_of_dblink_exec(postgres_server: Any) -> None:
    """Q20 under ``enforce``: the copy's agent role executed ``dle`` (PUBLIC, as by default)
    and created ``pwn43e`` in the ORIGINAL database, which the loopback server names."""
    pytest.importorskip("sqlalchemy")
    from pytest_queryeval.agents.canaries import Target
    from pytest_queryeval.agents.pgplant import _drop, plant_postgres
    from pytest_queryeval.errors import QueryEvalError
    from pytest_queryeval.sources import open_source
    from pytest_queryeval.tasks.pgcopies import conninfo

    name = "q43_enforce"
    with _database(postgres_server, name, "CREATE EXTENSION dblink",
                   "CREATE EXTENSION postgres_fdw",
                   f"CREATE SERVER loop FOREIGN DATA WRAPPER postgres_fdw OPTIONS "
                   f"(host '127.0.0.1', port '{postgres_server.port}', dbname '{name}')",
                   f"CREATE USER MAPPING FOR PUBLIC SERVER loop OPTIONS "
                   f"(user '{postgres_server.user}', password '{postgres_server.password}')",
                   "GRANT USAGE ON FOREIGN SERVER loop TO PUBLIC",
                   "CREATE FUNCTION dle(text, text) RETURNS text LANGUAGE c STABLE STRICT "
                   "AS '$libdir/dblink', 'dblink_exec'"):
        spec = {"type": "sqlalchemy", "url": postgres_server.url(name),
                "allow_privileged": True}
        planted = plant_postgres(spec, [Target("employee")], 7, True)
        try:
            agent = open_source("agent", {**planted.agent_spec, "isolation": "thread"})
            try:
                with pytest.raises(QueryEvalError):
                    agent.execute("SELECT dle('loop', 'CREATE TABLE pwn43e (a int)') AS r",
                                  trusted=True)
            finally:
                agent.close()
        finally:
            url = str(spec["url"])
            copy = str(planted.spec["url"]).rsplit("/", 1)[1]
            role = str(planted.agent_spec["url"]).split("//", 1)[1].split(":", 1)[0]
            _drop(conninfo(url, "postgres"), copy, role)
        import psycopg

        with psycopg.connect(postgres_server.conninfo(name)) as conn:
            assert conn.execute("SELECT to_regclass('pwn43e')").fetchone() == (None,)


def test_a_builtin_the_catalog_read_calls_replaced_in_place_leaves_the_count_unknown(
        postgres_server: Any) -> None:
    """Q9: ``CREATE OR REPLACE FUNCTION pg_catalog.pg_get_viewdef(oid)`` keeps the builtin's
    OID, and every view read nothing: a view over a view of employee counted 0."""
    pytest.importorskip("sqlalchemy")
    from pytest_queryeval.agents.views import with_views
    from pytest_queryeval.errors import CountUnknown
    from pytest_queryeval.sources.sqlalchemy import SqlAlchemySource

    with _database(postgres_server, "q43_poison", "CREATE VIEW v_emp AS SELECT * FROM employee",
                   "CREATE VIEW v2 AS SELECT * FROM v_emp",
                   "CREATE OR REPLACE FUNCTION pg_catalog.pg_get_viewdef(oid) RETURNS text "
                   "LANGUAGE sql AS $$SELECT 'SELECT 1'::text$$") as name:
        source = SqlAlchemySource("pg", postgres_server.readonly_url(name), isolation="thread")
        try:
            with pytest.raises(CountUnknown, match="pg_get_viewdef"):
                with_views(source, {"v2"}, "SELECT * FROM v2")
        finally:
            source.close()


UNWRITTEN = [
    # Q15: LIKE calls ~~ by name through the search path, SIMILAR TO calls ~
    (["CREATE TYPE mood AS ENUM ('a', 'b')",
      "CREATE FUNCTION emp_like(mood, mood) RETURNS boolean LANGUAGE plpgsql STABLE "
      "AS $$BEGIN RETURN (SELECT count(*) FROM employee) > 1; END$$",
      "CREATE OPERATOR public.~~ (LEFTARG = mood, RIGHTARG = mood, FUNCTION = emp_like)"],
     "SELECT 'a'::mood LIKE 'b'::mood AS x"),
    (["CREATE TYPE mood AS ENUM ('a', 'b')",
      "CREATE FUNCTION emp_sim(mood, text) RETURNS boolean LANGUAGE plpgsql STABLE "
      "AS $$BEGIN RETURN (SELECT count(*) FROM employee) > 1; END$$",
      "CREATE OPERATOR public.~ (LEFTARG = mood, RIGHTARG = text, FUNCTION = emp_sim)"],
     "SELECT 'a'::mood SIMILAR TO 'b' AS x"),
    # Q16: a default btree operator class whose comparison routine reads employee
    (["CREATE TYPE pt AS (a int)",
      "CREATE FUNCTION emp_cmp(pt, pt) RETURNS int LANGUAGE plpgsql IMMUTABLE "
      "AS $$BEGIN RETURN (SELECT count(*) FROM employee)::int - 2 + "
      "sign(($1).a - ($2).a)::int; END$$",
      *(f"CREATE FUNCTION pt_{n}(pt, pt) RETURNS boolean LANGUAGE sql IMMUTABLE "
        f"AS 'SELECT ($1).a {op} ($2).a'"
        for n, op in (("lt", "<"), ("le", "<="), ("eq", "="), ("ge", ">="), ("gt", ">"))),
      *(f"CREATE OPERATOR {op} (LEFTARG = pt, RIGHTARG = pt, FUNCTION = pt_{n})"
        for n, op in (("lt", "<"), ("le", "<="), ("eq", "="), ("ge", ">="), ("gt", ">"))),
      "CREATE OPERATOR CLASS pt_ops DEFAULT FOR TYPE pt USING btree AS OPERATOR 1 <, "
      "OPERATOR 2 <=, OPERATOR 3 =, OPERATOR 4 >=, OPERATOR 5 >, FUNCTION 1 emp_cmp(pt, pt)"],
     "SELECT x FROM (VALUES (ROW(1)::pt), (ROW(2)::pt)) v(x) ORDER BY x"),
]


@pytest.mark.parametrize(("setup", "sql"), UNWRITTEN, ids=["like", "similar", "opclass"])
def test_an_operator_called_unwritten_counts(postgres_server: Any, setup: list[str],
                                             sql: str) -> None:
    pytest.importorskip("sqlalchemy")
    from pytest_queryeval.sources.sqlalchemy import SqlAlchemySource

    with _database(postgres_server, "q43_op_" + uuid.uuid4().hex[:6], *setup) as name:
        source = SqlAlchemySource("pg", postgres_server.readonly_url(name), isolation="thread")
        try:
            assert _counts(source, "employee", sql) == (1.0, 1.0, 1.0)
        finally:
            source.close()


def test_a_stable_wrapper_over_an_extensions_volatile_routine_is_refused(
        postgres_server: Any) -> None:
    """Q11's class past the role check (``allow_privileged``: only the guard stands): a STABLE
    routine over pageinspect's ``get_raw_page`` (an extension's, OID from 16384) was never a
    hidden volatile call, and employee's page reached the report with no table read."""
    pytest.importorskip("sqlalchemy")
    from pytest_queryeval.errors import QueryRefused
    from pytest_queryeval.sources.sqlalchemy import SqlAlchemySource

    with _database(postgres_server, "q43_ext_volatile", "CREATE EXTENSION pageinspect",
                   "CREATE FUNCTION raw(text) RETURNS text LANGUAGE sql STABLE "
                   "AS $$SELECT encode(get_raw_page($1, 0), 'escape')$$") as name:
        source = SqlAlchemySource("pg", postgres_server.url(name), isolation="thread",
                                  allow_privileged=True)
        try:
            with pytest.raises(QueryRefused, match="calls get_raw_page"):
                source.execute("SELECT raw('employee') AS x")
        finally:
            source.close()


#: The forty-third re-probe (43a) of the role wall: id -> (setup, query, what the refusal
#: names). Each ran as the least-privilege role before (a host file, a program, a table read
#: with 0), past a check that read the role's own attributes or a catalog changed in place.
WALL_43 = {
    # R1: a member of a NOLOGIN superuser role becomes it in a plain routine
    "r1-member-of-a-superuser-role": (
        ["CREATE ROLE qe43_admin{n} NOLOGIN SUPERUSER", "GRANT qe43_admin{n} TO {ro}",
         "CREATE FUNCTION up() RETURNS text LANGUAGE plpgsql AS $$BEGIN PERFORM "
         "set_config('role', 'qe43_admin{n}', true); RETURN pg_read_file('/etc/hostname'); "
         "END$$", "CREATE VIEW hv AS SELECT up() AS h"],
        "SELECT h FROM hv", "is a superuser"),
    # R2, R10: c and internal marked trusted, a C second name of adminpack's file write
    "r2-c-marked-trusted": (
        ["UPDATE pg_language SET lanpltrusted = true WHERE lanname IN ('c', 'internal')",
         "CREATE EXTENSION tablefunc",
         "CREATE FUNCTION ct(text) RETURNS SETOF record LANGUAGE c STABLE STRICT "
         "AS '$libdir/tablefunc', 'crosstab'"],
        "SELECT * FROM ct('SELECT last_name, ''x''::text, last_name FROM employee "
        "ORDER BY 1') AS t(n text, x text)", "LANGUAGE c marked trusted"),
    # R3: a builtin replaced in place by an SQL body that reads a table
    "r3-builtin-replaced-in-place": (
        ["CREATE FUNCTION emp_names() RETURNS text LANGUAGE sql STABLE "
         "AS 'SELECT string_agg(last_name, '','') FROM employee'",
         "CREATE OR REPLACE FUNCTION pg_catalog.initcap(text) RETURNS text LANGUAGE sql "
         "STABLE AS $$SELECT public.emp_names()$$"],
        "SELECT initcap('x') AS n", "builtin initcap"),
    # R11: a contrib routine revoked by its extension, granted back to PUBLIC
    "r11-pg-visibility-granted": (
        ["CREATE EXTENSION pg_visibility",
         "GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA public TO PUBLIC",
         "CREATE VIEW tvm AS SELECT count(*) AS n FROM (SELECT "
         "pg_truncate_visibility_map('public.genre'::regclass)) s"],
        "SELECT n FROM tvm", "does not sandbox"),
    # R13: a cast between two builtin types made by the database
    "r13-cast-between-builtins": (
        ["CREATE FUNCTION xid_one(xid) RETURNS text LANGUAGE sql AS $$SELECT '1'::text$$",
         "CREATE CAST (xid AS text) WITH FUNCTION xid_one(xid)"],
        "SELECT count(*) FROM genre", "cast xid -> text"),
    # R14: a definer comparison routine revoked from PUBLIC, run by sorting unchecked
    "r14-definer-opclass-support": (
        ["CREATE TYPE pt AS (a int)",
         "CREATE FUNCTION pt_cmp(pt, pt) RETURNS int LANGUAGE plpgsql VOLATILE SECURITY "
         "DEFINER AS $$BEGIN RAISE EXCEPTION '%', pg_read_file('/etc/hostname'); END$$",
         "REVOKE EXECUTE ON FUNCTION pt_cmp(pt, pt) FROM PUBLIC",
         *(f"CREATE FUNCTION pt_{n}(pt, pt) RETURNS boolean LANGUAGE sql IMMUTABLE "
           f"AS 'SELECT ($1).a {op} ($2).a'"
           for n, op in (("lt", "<"), ("le", "<="), ("eq", "="), ("ge", ">="), ("gt", ">"))),
         *(f"CREATE OPERATOR {op} (LEFTARG = pt, RIGHTARG = pt, FUNCTION = pt_{n})"
           for n, op in (("lt", "<"), ("le", "<="), ("eq", "="), ("ge", ">="), ("gt", ">"))),
         "CREATE OPERATOR CLASS pt_ops DEFAULT FOR TYPE pt USING btree AS OPERATOR 1 <, "
         "OPERATOR 2 <=, OPERATOR 3 =, OPERATOR 4 >=, OPERATOR 5 >, FUNCTION 1 pt_cmp(pt, pt)"],
        "SELECT x FROM (VALUES (ROW(2)::pt), (ROW(1)::pt)) v(x) ORDER BY x",
        "run as another role"),
    # M1: pg_monitor reads the server's settings, its paths among them
    "m1-member-of-pg-monitor": (
        ["GRANT pg_monitor TO {ro}"],
        "SELECT setting FROM pg_settings WHERE name = 'data_directory'",
        "pg_read_all_settings"),
    # R6, R9: a system view replaced in place blinded the catalog read and this check
    "r9-system-view-replaced-in-place": (
        [_RF, "CREATE VIEW hv AS SELECT rf('/etc/hostname') AS h",
         "CREATE OR REPLACE VIEW pg_catalog.pg_matviews AS SELECT * FROM "
         "(SELECT * FROM pg_catalog.pg_matviews) s WHERE false"],
        "SELECT * FROM hv", "system view pg_matviews"),
}


@pytest.mark.parametrize("form", sorted(WALL_43))
def test_the_wall_holds_against_the_forty_third_re_probe(postgres_server: Any,
                                                         form: str) -> None:
    pytest.importorskip("sqlalchemy")
    from pytest_queryeval.sources.sqlalchemy import SqlAlchemySource

    n = uuid.uuid4().hex[:6]
    setup, query, named = WALL_43[form]
    setup = [s.format(n=n, ro=postgres_server.readonly_user) for s in setup]
    hostname = Path("/etc/hostname").read_text().strip()
    try:
        with _database(postgres_server, f"q43_{form[:2]}_{n}", *setup) as name:
            source = SqlAlchemySource("pg", postgres_server.readonly_url(name),
                                      isolation="thread")
            try:
                got = _refusal(source, query)
                assert named in str(got) and hostname not in str(got)
            finally:
                source.close()
    finally:
        postgres_server.superuser_execute(
            f"DROP ROLE IF EXISTS qe43_admin{n}",
            f"REVOKE pg_monitor FROM {postgres_server.readonly_user}", database="postgres")


#: R4: the negator of a written operator; R5: a domain's CHECK through a row type.
HIDDEN_43 = [
    (["CREATE TYPE mood AS ENUM ('a', 'b')",
      "CREATE FUNCTION dummy_eq(mood, mood) RETURNS boolean LANGUAGE sql IMMUTABLE "
      "AS 'SELECT true'",
      "CREATE FUNCTION emp_neg(mood, mood) RETURNS boolean LANGUAGE plpgsql STABLE "
      "AS $$BEGIN RETURN (SELECT count(*) FROM employee) > 1; END$$",
      "CREATE OPERATOR public.%%% (LEFTARG = mood, RIGHTARG = mood, FUNCTION = emp_neg)",
      "CREATE OPERATOR public.### (LEFTARG = mood, RIGHTARG = mood, FUNCTION = dummy_eq, "
      "NEGATOR = %%%)"],
     "SELECT NOT ('a'::mood ### 'b'::mood) AS x"),
    (["CREATE FUNCTION dom_chk(text) RETURNS boolean LANGUAGE plpgsql STABLE "
      "AS $$BEGIN RETURN (SELECT count(*) FROM employee) > 1; END$$",
      "CREATE DOMAIN dom43 AS text CHECK (dom_chk(VALUE))",
      "CREATE TYPE c43 AS (d dom43)"],
     "SELECT ROW('x')::c43 AS x"),
]


@pytest.mark.parametrize(("setup", "sql"), HIDDEN_43, ids=["negator", "row-type-domain"])
def test_a_read_the_planner_or_a_row_type_makes_counts(postgres_server: Any,
                                                       setup: list[str], sql: str) -> None:
    pytest.importorskip("sqlalchemy")
    from pytest_queryeval.sources.sqlalchemy import SqlAlchemySource

    with _database(postgres_server, "q43_h_" + uuid.uuid4().hex[:6], *setup) as name:
        source = SqlAlchemySource("pg", postgres_server.readonly_url(name), isolation="thread")
        try:
            assert _counts(source, "employee", sql) == (1.0, 1.0, 1.0)
            assert _counts(source, "employee", "SELECT count(*) FROM genre") == (0.0, 0.0, 0.0)
        finally:
            source.close()


def test_a_partial_index_predicate_counts_for_every_read_of_its_table(
        postgres_server: Any) -> None:
    """R12: the planner evaluates ``ixp()`` of ``CREATE INDEX ... ON genre ... WHERE ixp()``
    when it plans any read of genre; ixp read employee with 0."""
    pytest.importorskip("sqlalchemy")
    from pytest_queryeval.sources.sqlalchemy import SqlAlchemySource

    with _database(postgres_server, "q43_ix_" + uuid.uuid4().hex[:6],
                   "CREATE FUNCTION ixp() RETURNS boolean LANGUAGE plpgsql IMMUTABLE "
                   "AS $$BEGIN RETURN (SELECT count(*) FROM employee) > 0; END$$",
                   "CREATE INDEX genre_p43 ON genre (genre_id) WHERE ixp()") as name:
        source = SqlAlchemySource("pg", postgres_server.readonly_url(name), isolation="thread")
        try:
            assert _counts(source, "employee", "SELECT count(*) FROM genre WHERE genre_id = 1"
                           ) == (1.0, 1.0, 1.0)
            assert _counts(source, "genre", "SELECT count(*) FROM employee") == (0.0, 0.0, 0.0)
        finally:
            source.close()


def test_a_range_type_of_the_database_is_not_refused(postgres_server: Any) -> None:
    """M2: ``CREATE TYPE ... AS RANGE`` makes ``LANGUAGE internal`` constructors of the
    database (OIDs from 16384): the type's own, not second names of builtins; the role was
    refused and every case errored."""
    pytest.importorskip("sqlalchemy")
    from pytest_queryeval.sources.sqlalchemy import SqlAlchemySource

    with _database(postgres_server, "q43_range_" + uuid.uuid4().hex[:6],
                   "CREATE TYPE fr43 AS RANGE (subtype = float8)") as name:
        source = SqlAlchemySource("pg", postgres_server.readonly_url(name), isolation="thread")
        try:
            assert source.execute("SELECT count(*) FROM genre").rows == [(1,)]
            assert _counts(source, "employee", "SELECT count(*) FROM genre") == (0.0, 0.0, 0.0)
        finally:
            source.close()


def test_a_grant_on_a_builtin_the_catalog_read_calls_is_no_replacement(
        postgres_server: Any) -> None:
    """43a M3: a REVOKE and GRANT back on ``pg_get_functiondef`` wrote a new row, and every
    case's counts were unknown ('the database made pg_get_functiondef')."""
    pytest.importorskip("sqlalchemy")
    from pytest_queryeval.agents.views import with_views
    from pytest_queryeval.sources.sqlalchemy import SqlAlchemySource

    with _database(postgres_server, "q43_grant_" + uuid.uuid4().hex[:6],
                   "CREATE VIEW v_emp AS SELECT * FROM employee",
                   "REVOKE EXECUTE ON FUNCTION pg_catalog.pg_get_functiondef(oid) FROM PUBLIC",
                   "GRANT EXECUTE ON FUNCTION pg_catalog.pg_get_functiondef(oid) TO PUBLIC"
                   ) as name:
        source = SqlAlchemySource("pg", postgres_server.readonly_url(name), isolation="thread")
        try:
            assert "employee" in with_views(source, {"v_emp"}, "SELECT * FROM v_emp")
        finally:
            source.close()
