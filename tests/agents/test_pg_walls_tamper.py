"""The forty-fifth re-probe's N14 and N15: the role wall's "catalog changed in place" tests
(each test failed before its fix).

N14: the wall read a builtin's row as rewritten when its ``xmin`` was newer than
``template0``'s ``pg_database`` row, which ``ALTER DATABASE template0 ALLOW_CONNECTIONS
true`` and ``false`` write anew: a replacement made before passed ([] []), ``initcap`` read
employee, and ``has_function_privilege(oid, oid, text)`` made ``SELECT false`` blinded the
wall itself (a superuser's definer view read ``/etc/passwd``). N15: a builtin row re-pointed
in place at the database's routine (``=`` of two integers, ``sum(int4)``) was read by no
test. :mod:`pytest_queryeval.sources.pgtamper`.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.agents.test_pg_walls_fortythird import _database, _refusal

pytestmark = pytest.mark.postgres

_EMP_NAMES = ("CREATE FUNCTION emp_names() RETURNS text LANGUAGE sql STABLE "
              "AS 'SELECT string_agg(last_name, '','') FROM employee'")


def _alter_template0(server: Any, *, vacuum: bool = False) -> None:
    """N14's refresh of ``template0``'s ``pg_database`` row (``VACUUM FREEZE`` inside it
    too when ``vacuum``: its ``datfrozenxid`` moved as well)."""
    server.superuser_execute("ALTER DATABASE template0 ALLOW_CONNECTIONS true",
                             database="postgres")
    try:
        if vacuum:
            server.superuser_execute("VACUUM FREEZE", database="template0")
    finally:
        server.superuser_execute("ALTER DATABASE template0 ALLOW_CONNECTIONS false",
                                 database="postgres")


def _refused(server: Any, prefix: str, setup: list[str], query: str, named: str,
             leak: str, *, vacuum: bool = False) -> None:
    """``setup`` in a database of its own, ``template0`` altered after it: ``query`` meets
    the role check's refusal naming ``named``, and ``leak`` is nowhere in it."""
    pytest.importorskip("sqlalchemy")
    from pytest_queryeval.sources.sqlalchemy import SqlAlchemySource

    with _database(server, f"{prefix}_{uuid.uuid4().hex[:6]}", *setup) as name:
        _alter_template0(server, vacuum=vacuum)
        source = SqlAlchemySource("pg", server.readonly_url(name), isolation="thread")
        try:
            got = _refusal(source, query)
            assert named in str(got) and "allow_privileged" in str(got), got
            assert leak not in str(got)
        finally:
            source.close()


def test_a_builtin_replaced_before_template0_is_altered_is_refused(
        postgres_server: Any) -> None:
    """N14 (43a R3 reopened): ``initcap`` replaced in place by an SQL body over employee,
    then ``template0`` altered twice: the role passed and ``SELECT initcap('x')`` gave every
    last name, PASSED with f=0. The mark is now ``template0``'s ``datfrozenxid`` too, which
    no ``ALTER DATABASE`` moves."""
    _refused(postgres_server, "q45t_ic",
             [_EMP_NAMES, "CREATE OR REPLACE FUNCTION pg_catalog.initcap(text) RETURNS text "
                          "LANGUAGE sql STABLE AS $$SELECT public.emp_names()$$"],
             "SELECT initcap('x') AS n", "builtin initcap(text)", "Edwards")


#: N14 (43a R9 reopened): a builtin the wall calls itself, replaced in SQL: id -> (setup,
#: hostile query, what the refusal names).
_SELF = {
    # has_function_privilege(oid, oid, text) := false hid every routine from the wall: a
    # superuser's definer view read /etc/passwd (here /etc/hostname)
    "has-function-privilege": (
        ["CREATE FUNCTION rf(text) RETURNS text LANGUAGE plpgsql STABLE SECURITY DEFINER "
         "AS $$BEGIN RETURN pg_read_file($1); END$$",
         "CREATE VIEW hv AS SELECT rf('/etc/hostname') AS h",
         "CREATE OR REPLACE FUNCTION pg_catalog.has_function_privilege(oid, oid, text) "
         "RETURNS boolean LANGUAGE sql STABLE AS 'SELECT false'"],
        "SELECT h FROM hv", "builtin has_function_privilege(oid,oid,text) in LANGUAGE sql"),
    # oideq := false emptied every join of the wall on OPERATOR(pg_catalog.=): a C second
    # name of tablefunc's crosstab (43a R10) passed
    "oid-equality": (
        ["CREATE EXTENSION tablefunc",
         "CREATE FUNCTION ct(text) RETURNS SETOF record LANGUAGE c STABLE STRICT "
         "AS '$libdir/tablefunc', 'crosstab'",
         "CREATE OR REPLACE FUNCTION pg_catalog.oideq(oid, oid) RETURNS boolean "
         "LANGUAGE sql IMMUTABLE AS 'SELECT false'"],
        "SELECT * FROM ct('SELECT last_name, ''x''::text, last_name FROM employee "
        "ORDER BY 1') AS t(n text, x text)", "builtin oideq(oid,oid) in LANGUAGE sql"),
}


@pytest.mark.parametrize("form", sorted(_SELF))
def test_a_builtin_the_wall_calls_is_internal_whatever_its_age(postgres_server: Any,
                                                                form: str) -> None:
    """Even with ``template0`` altered AND vacuumed inside (both marks moved), a builtin
    the checks call must be ``LANGUAGE internal``; an honest database passes after."""
    pytest.importorskip("sqlalchemy")
    from pytest_queryeval.sources.sqlalchemy import SqlAlchemySource

    setup, query, named = _SELF[form]
    hostname = Path("/etc/hostname").read_text().strip()
    _refused(postgres_server, "q45t_self", setup, query, named, hostname, vacuum=True)
    with _database(postgres_server, "q45t_honest_" + uuid.uuid4().hex[:6],
                   "CREATE EXTENSION tablefunc", _EMP_NAMES) as name:
        source = SqlAlchemySource("pg", postgres_server.readonly_url(name), isolation="thread")
        try:
            assert source.execute("SELECT count(*) FROM genre").rows == [(1,)]
        finally:
            source.close()


#: N15: a builtin row re-pointed in place at the database's routine: id -> (setup, hostile
#: query, what the refusal names).
_REPOINTED = {
    # = of two integers: genre_id + 0 = 1000 matched the employee ids, (8,) for 0
    "operator": (
        ["CREATE FUNCTION evil_eq(int4, int4) RETURNS boolean LANGUAGE plpgsql IMMUTABLE "
         "AS $$BEGIN RETURN $1::text IN (SELECT e.employee_id::text FROM public.employee e)"
         "; END$$",
         "UPDATE pg_catalog.pg_operator SET oprcode = 'public.evil_eq'::regproc "
         "WHERE oid = 'pg_catalog.=(int4,int4)'::regoperator"],
        "SELECT count(*) AS n FROM genre WHERE genre_id + 0 = 1000",
        "operator =(integer,integer) re-pointed at the database's routine "
        "evil_eq(integer,integer)"),
    # sum(int4)'s transition routine counted employee into the sum
    "aggregate": (
        ["CREATE FUNCTION evil_sum(int8, int4) RETURNS int8 LANGUAGE plpgsql IMMUTABLE "
         "AS $$BEGIN RETURN coalesce($1, 0) + $2 + (SELECT count(*) FROM public.employee)"
         "; END$$",
         "UPDATE pg_catalog.pg_aggregate SET aggtransfn = 'public.evil_sum'::regproc, "
         "aggcombinefn = 0 WHERE aggfnoid = 'pg_catalog.sum(int4)'::regprocedure"],
        "SELECT sum(genre_id) AS s FROM genre",
        "aggregate sum(integer) re-pointed at the database's routine "
        "evil_sum(bigint,integer)"),
    # the int4 -> int8 cast's routine
    "cast": (
        ["CREATE FUNCTION evil_i8(int4) RETURNS int8 LANGUAGE plpgsql IMMUTABLE "
         "AS $$BEGIN RETURN (SELECT count(*) FROM public.employee); END$$",
         "UPDATE pg_catalog.pg_cast SET castfunc = 'public.evil_i8'::regproc "
         "WHERE castsource = 'int4'::regtype AND casttarget = 'int8'::regtype"],
        "SELECT genre_id::int8 AS n FROM genre",
        "cast integer -> bigint re-pointed at the database's routine evil_i8(integer)"),
    # the negator the planner swaps in for NOT (a = b)
    "negator": (
        ["CREATE FUNCTION evil_ne(int4, int4) RETURNS boolean LANGUAGE plpgsql IMMUTABLE "
         "AS $$BEGIN RETURN (SELECT count(*) FROM public.employee) > 0; END$$",
         "CREATE OPERATOR public.<~> (LEFTARG = int4, RIGHTARG = int4, FUNCTION = evil_ne)",
         "UPDATE pg_catalog.pg_operator SET oprnegate = 'public.<~>(int4,int4)'::regoperator "
         "WHERE oid = 'pg_catalog.=(int4,int4)'::regoperator"],
        "SELECT count(*) AS n FROM genre WHERE NOT (genre_id = 1)",
        "operator =(integer,integer) re-pointed at the database's operator <~>"),
}


@pytest.mark.parametrize("form", sorted(_REPOINTED))
def test_a_builtin_row_re_pointed_at_the_databases_routine_is_refused(
        postgres_server: Any, form: str) -> None:
    """N15: the role passed ([] []) and the database's routine ran for every call of the
    builtin, f=0."""
    setup, query, named = _REPOINTED[form]
    _refused(postgres_server, "q45t_rp", setup, query, named, "Edwards")


def test_the_role_check_reads_pg_catalog_whatever_the_search_path(
        postgres_server: Any) -> None:
    """Found with N14: ``_ROLE_SQL`` named ``pg_roles`` unqualified, and a database whose
    ``search_path`` is ``public, pg_catalog`` with a ``public.pg_roles`` of no rows hid a
    membership of ``pg_execute_server_program``: a plain PL/pgSQL view ran ``COPY ... TO
    PROGRAM`` as the read-only role."""
    pytest.importorskip("sqlalchemy")
    import os

    from pytest_queryeval.sources.sqlalchemy import SqlAlchemySource

    ro = postgres_server.readonly_user
    mark = f"/tmp/qe45t-{uuid.uuid4().hex}.txt"
    name = "q45t_sp_" + uuid.uuid4().hex[:6]
    postgres_server.superuser_execute(f"GRANT pg_execute_server_program TO {ro}",
                                      database="postgres")
    try:
        with _database(postgres_server, name,
                       "CREATE FUNCTION px() RETURNS int LANGUAGE plpgsql VOLATILE AS $$BEGIN "
                       f"COPY (SELECT 1) TO PROGRAM 'cat > {mark}'; RETURN 1; END$$",
                       "CREATE VIEW pv AS SELECT px() AS n",
                       "CREATE VIEW public.pg_roles AS SELECT * FROM pg_catalog.pg_roles "
                       "WHERE false",
                       f"ALTER DATABASE {name} SET search_path = public, pg_catalog"):
            source = SqlAlchemySource("pg", postgres_server.readonly_url(name),
                                      isolation="thread")
            try:
                got = _refusal(source, "SELECT n FROM pv")
                assert "pg_execute_server_program" in str(got), got
            finally:
                source.close()
        assert not os.path.exists(mark), "the prediction ran a program on the server"
    finally:
        postgres_server.superuser_execute(f"REVOKE pg_execute_server_program FROM {ro}",
                                          database="postgres")
