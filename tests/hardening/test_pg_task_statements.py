"""Issue 39, items 2, 3 and 8: a PostgreSQL task's prediction never acts beyond its copy.

On the loopback server with dblink installed in the task datasource (``chinook_hostile``,
owned by the fixture's LOGIN CREATEDB role), each form that reached the server on the
unconfined runner (dropping, creating, commenting on and altering databases, altering the
role's settings and password, committing through dblink, signalling other sessions, running a
program, ALTER SYSTEM, SET ROLE, the same from a DO block or a function body; issue 50 item 3:
writes to the system catalogs, a function's ``pg_proc`` row rewritten to run
``pg_terminate_backend``, a password cleared in ``pg_authid``) is a task case's prediction: as the least-privilege role, and as a superuser allowed explicitly. Each case fails
with the refusal that names what it did, and nothing outside the copies changed: the list of
databases and their settings, per-role settings, roles (passwords included), comments on
shared objects, ``postgresql.auto.conf``, the datasource's and another database's rows, a
session of the same role, and the file a program would have written.

The second layer (the prediction's transaction, compared with the server's shared state
before it commits) is held against the same forms with the statement guard out of the way
(``run_task`` directly, as if the guard had missed them). A superuser writable datasource
without ``allow_privileged`` is a usage error before any case runs.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from pytest_queryeval.tasks import pgcopies
from pytest_queryeval.tasks.run import Check, Task, run_task
from tests.fixtures.postgres import DATABASE, TASKS_DATABASE, PostgresServer
from tests.support import run_report, write_suite

pytestmark = pytest.mark.postgres

HOSTILE = "chinook_hostile"
GOLD = "UPDATE genre SET name = upper(name) WHERE genre_id = 1"
CHECK = {"query": "SELECT genre_id, name FROM genre", "compare": "gold"}
OUTSIDE = "acts outside the task's copy of the database"
CATALOG = "writes the system catalogs, which no task may do (not even with allow_privileged"


def _forms(server: PostgresServer, tmp: Path) -> dict[str, tuple[str, str]]:
    """Case id -> (predicted statements, the reason's exact start)."""
    writer = (f"host=127.0.0.1 port={server.port} dbname={HOSTILE} user={server.tasks_user} "
              f"password={server.tasks_password}")
    return {
        "drop-datasource": (f"DROP DATABASE {HOSTILE}", f"refused: DROP DATABASE {OUTSIDE}"),
        "drop-other-database": (f"DROP DATABASE {DATABASE}",
                                f"refused: DROP DATABASE {OUTSIDE}"),
        "create-leftover": ("CREATE DATABASE qe_leftover", f"refused: CREATE DATABASE {OUTSIDE}"),
        "comment-on-datasource": (f"COMMENT ON DATABASE {HOSTILE} IS 'owned'",
                                  f"refused: COMMENT ON DATABASE {OUTSIDE}"),
        "database-setting": (f"ALTER DATABASE {HOSTILE} SET statement_timeout = '1ms'",
                             f"refused: ALTER DATABASE ... SET {OUTSIDE}"),
        "connection-limit": (f"ALTER DATABASE {HOSTILE} CONNECTION LIMIT 0",
                             f"refused: ALTER DATABASE {OUTSIDE}"),
        "rename-datasource": (f"ALTER DATABASE {HOSTILE} RENAME TO qe_renamed",
                              f"refused: ALTER DATABASE ... RENAME {OUTSIDE}"),
        "role-read-only": ("ALTER ROLE CURRENT_USER SET default_transaction_read_only = on",
                           f"refused: ALTER ROLE ... SET {OUTSIDE}"),
        "role-password": ("ALTER ROLE CURRENT_USER PASSWORD 'pwned'",
                          f"refused: ALTER ROLE {OUTSIDE}"),
        "create-role": ("CREATE ROLE qe_probe_role LOGIN", f"refused: CREATE ROLE {OUTSIDE}"),
        "grant-server-program": ("GRANT pg_execute_server_program TO CURRENT_USER",
                                 f"refused: GRANT/REVOKE of a role {OUTSIDE}"),
        "dblink-commit": (
            f"UPDATE genre SET name = upper(name) WHERE genre_id = 1; SELECT dblink_exec("
            f"'{writer}', 'INSERT INTO genre (genre_id, name) VALUES (900, ''dblink'')')",
            f"refused: function dblink_exec() {OUTSIDE}"),
        "terminate-sessions": (
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = current_user"
            " AND pid <> pg_backend_pid()", f"refused: function pg_terminate_backend() {OUTSIDE}"),
        "copy-to-program": (f"COPY (SELECT 1) TO PROGRAM 'id > {tmp / 'program-ran'}'",
                            f"refused: COPY TO PROGRAM {OUTSIDE}"),
        "copy-to-file": (f"COPY genre TO '{tmp / 'copied'}'",
                         f"refused: COPY TO a server file {OUTSIDE}"),
        "alter-system": ("ALTER SYSTEM SET work_mem = '1MB'", f"refused: ALTER SYSTEM {OUTSIDE}"),
        "set-role": ("SET ROLE pg_read_server_files; UPDATE genre SET name = 'x'",
                     f"refused: SET ROLE / SET SESSION AUTHORIZATION {OUTSIDE}"),
        "set-config-role": ("SELECT set_config('role', 'pg_read_server_files', false)",
                            "refused: set_config() of the session's role"),
        "do-alter-database": (f"DO $$ BEGIN ALTER DATABASE {HOSTILE} SET work_mem = '1MB'; "
                              "END $$", f"refused: ALTER DATABASE ... SET {OUTSIDE}"),
        "do-execute": ("DO $$ BEGIN EXECUTE 'ALTER ROLE ' || current_user || ' SET work_mem = "
                       "''1MB'''; END $$",
                       "refused: PL/pgSQL EXECUTE runs a statement built at run time"),
        "function-body": ("CREATE FUNCTION qe_kill() RETURNS bool LANGUAGE sql AS "
                          "$$ SELECT pg_cancel_backend(1) $$; SELECT qe_kill()",
                          f"refused: function pg_cancel_backend() {OUTSIDE}"),
        "trigger-dblink": ("CREATE TRIGGER qe_t AFTER INSERT ON genre "
                           "EXECUTE FUNCTION dblink_exec('x')",
                           f"refused: function dblink_exec() {OUTSIDE}"),
        "lo-export": (f"SELECT lo_export(lo_from_bytea(0, 'x'), '{tmp / 'lo'}')",
                      f"refused: function lo_export() {OUTSIDE}"),
        "prepared-transaction": ("BEGIN; UPDATE genre SET name = 'x'; PREPARE TRANSACTION 'qe'",
                                 f"refused: a prepared (two-phase) transaction {OUTSIDE}"),
        # issue 50 item 3: a harmless function whose pg_proc row is rewritten so that calling
        # it runs what the guard refuses by name; another role's password cleared in pg_authid
        "catalog-rewrite-function": (
            "CREATE FUNCTION qe_f(integer) RETURNS boolean LANGUAGE sql AS $$ SELECT true $$; "
            "UPDATE pg_proc SET prolang = (SELECT oid FROM pg_language WHERE lanname = "
            "'internal'), prosrc = 'pg_terminate_backend' WHERE proname = 'qe_f'; "
            "SELECT qe_f(pid) FROM pg_stat_activity WHERE pid <> pg_backend_pid()",
            f"refused: UPDATE of pg_catalog.pg_proc {CATALOG}"),
        "catalog-quoted": ("UPDATE \"pg_catalog\".\"pg_proc\" SET prosrc = 'pg_read_file_all' "
                           "WHERE proname = 'qe_f'",
                           f"refused: UPDATE of pg_catalog.pg_proc {CATALOG}"),
        "catalog-password": (f"UPDATE pg_authid SET rolpassword = NULL WHERE rolname = "
                             f"'{server.tasks_user}'",
                             f"refused: UPDATE of pg_catalog.pg_authid {CATALOG}"),
        "catalog-in-a-cte": ("WITH w AS (UPDATE PG_CATALOG.PG_AUTHID SET rolpassword = NULL "
                             "RETURNING 1) SELECT count(*) FROM w",
                             f"refused: UPDATE of pg_catalog.pg_authid {CATALOG}"),
        "catalog-through-a-view": ("CREATE VIEW qe_v AS SELECT * FROM pg_proc; UPDATE qe_v SET "
                                   "prosrc = 'pg_terminate_backend' WHERE proname = 'qe_f'",
                                   f"refused: CREATE VIEW over pg_catalog.pg_proc {CATALOG}"),
        "catalog-in-a-function": (
            "CREATE FUNCTION qe_g() RETURNS void LANGUAGE plpgsql AS $$ BEGIN DELETE FROM "
            "pg_catalog.pg_auth_members; END $$; SELECT qe_g()",
            f"refused: DELETE of pg_catalog.pg_auth_members {CATALOG}"),
        "catalog-new-function": ("CREATE FUNCTION pg_catalog.qe_h() RETURNS int LANGUAGE sql "
                                 "AS $$ SELECT 1 $$",
                                 f"refused: CREATE FUNCTION of pg_catalog.qe_h {CATALOG}"),
    }


@pytest.fixture(scope="module")
def hostile(postgres_server: PostgresServer) -> Iterator[PostgresServer]:
    """``chinook_hostile``: Chinook with dblink, owned by the tasks role (LOGIN CREATEDB);
    the pools the in-process runs made are closed after (other tests count the copies)."""
    for _ in range(50):  # chinook_tasks is only ever a template, but a pool may be cloning it
        with contextlib.suppress(psycopg.errors.ObjectInUse):
            postgres_server.superuser_execute(
                f"DROP DATABASE IF EXISTS {HOSTILE}",
                f"CREATE DATABASE {HOSTILE} TEMPLATE {TASKS_DATABASE}", database="postgres")
            break
        time.sleep(0.2)
    postgres_server.install_dblink(HOSTILE)
    postgres_server.hand_to_tasks_role(HOSTILE)
    yield postgres_server
    for pool in [p for url, p in pgcopies._POOLS.items() if f"/{HOSTILE}" in url]:
        pool.close()


def _server_state(server: PostgresServer) -> dict[str, Any]:
    """What a prediction must not change, read as the superuser."""
    with psycopg.connect(server.conninfo("postgres"), autocommit=True) as conn:
        def rows(sql: str) -> list[tuple[Any, ...]]:
            return [tuple(map(str, r)) for r in conn.execute(sql).fetchall()]

        state: dict[str, Any] = {
            "databases": rows("SELECT datname, datdba, datconnlimit, datallowconn, "
                              "datistemplate, datacl FROM pg_database WHERE datname !~ "
                              "'^qe_(task|tpl)_' ORDER BY 1"),
            "settings": rows("SELECT setdatabase, setrole, setconfig FROM pg_db_role_setting "
                             "ORDER BY 1, 2"),
            "roles": rows("SELECT rolname, rolsuper, rolcreaterole, rolcreatedb, rolcanlogin, "
                          "rolreplication, rolbypassrls, rolconnlimit, rolpassword, "
                          "rolvaliduntil FROM pg_authid ORDER BY 1"),
            "members": rows("SELECT roleid::regrole, member::regrole FROM pg_auth_members "
                            "ORDER BY 1, 2"),
            "comments": rows("SELECT datname, shobj_description(oid, 'pg_database') FROM "
                             "pg_database WHERE datname !~ '^qe_(task|tpl)_' ORDER BY 1"),
            "auto.conf": rows("SELECT pg_read_file('postgresql.auto.conf')"),
            "prepared": rows("SELECT gid FROM pg_prepared_xacts"),
        }
    state["datasource"] = server.checksum(HOSTILE)
    state["other database"] = server.checksum(DATABASE)
    return state


def _suite(root: Path, server: PostgresServer, privileged: bool,
           forms: dict[str, tuple[str, str]]) -> None:
    spec: dict[str, Any] = {"type": "sqlalchemy", "writable": "sandbox", "timeout": 60,
                            "url": server.url(HOSTILE) if privileged else server.tasks_url(HOSTILE)}
    if privileged:
        spec["allow_privileged"] = True
    write_suite(root, {"datasources": {"pg": spec}}, {"test_forms.yaml": {
        "kind": "sql", "datasource": "pg",
        "cases": [{"id": "honest", "task": "dml", "gold": GOLD, "predicted": GOLD,
                   "checks": [CHECK]}]
        + [{"id": cid, "task": "ddl", "gold": GOLD, "predicted": sql, "checks": [CHECK]}
           for cid, (sql, _) in forms.items()]}})


@pytest.mark.parametrize("privileged", [False, True], ids=["createdb-role", "superuser"])
def test_task_predictions_never_leave_their_copy(pytester: pytest.Pytester,
                                                 hostile: PostgresServer, tmp_path: Path,
                                                 privileged: bool) -> None:
    tmp_path.chmod(0o777)  # where a program run by the server would write
    forms = _forms(hostile, tmp_path)
    _suite(pytester.path, hostile, privileged, forms)
    before = _server_state(hostile)
    with psycopg.connect(hostile.tasks_conninfo("postgres"), autocommit=True) as victim:
        _, report = run_report(pytester, "-p", "no:cacheprovider", fresh=True)
        assert victim.execute("SELECT 1").fetchone() == (1,)  # the role's session survived
    cases = {c["id"]: c for c in report["cases"]}
    assert cases["honest"]["outcome"] == "passed", cases["honest"]
    got = {cid: (cases[cid]["outcome"],
                 (cases[cid].get("reason") or cases[cid].get("error") or "")[:len(start)])
           for cid, (_, start) in forms.items()}
    assert got == {cid: ("failed", start) for cid, (_, start) in forms.items()}
    assert _server_state(hostile) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == []


#: Forms the statement guard refuses, run past it (``run_task``): the prediction's transaction
#: and the shared-state comparison must still keep them in the copy. Case id -> (statements,
#: the start of the reason after "the prediction failed on its copy: ").
SECOND_LAYER = {
    "role-setting": ("ALTER ROLE CURRENT_USER SET default_transaction_read_only = on",
                     "refused: the prediction changed the server outside its copy (rolled "
                     "back): setting of role "),
    "database-comment": (f"COMMENT ON DATABASE {HOSTILE} IS 'owned'",
                         "refused: the prediction changed the server outside its copy (rolled "
                         "back): comment on shared object "),
    "database-setting": (f"ALTER DATABASE {HOSTILE} SET statement_timeout = '1ms'",
                         "refused: the prediction changed the server outside its copy (rolled "
                         "back): setting of role 0 in database "),
    "connection-limit": (f"ALTER DATABASE {HOSTILE} CONNECTION LIMIT 0",
                         "refused: the prediction changed the server outside its copy (rolled "
                         f"back): database {HOSTILE}: "),
    "drop-database": (f"DROP DATABASE {HOSTILE}",
                      "ActiveSqlTransaction: DROP DATABASE cannot run inside a transaction "
                      "block"),
    "in-a-function": (f"DO $$ BEGIN EXECUTE 'COMMENT ON DATABASE {HOSTILE} IS ''x'''; END $$",
                      "refused: the prediction changed the server outside its copy (rolled "
                      "back): comment on shared object "),
}


def test_the_transaction_keeps_what_the_guard_missed_in_the_copy(
        hostile: PostgresServer) -> None:
    url = hostile.tasks_url(HOSTILE)
    pool = pgcopies.pool_for(url)
    before = _server_state(hostile)
    got: dict[str, str] = {}
    for cid, (sql, _) in SECOND_LAYER.items():
        names = [pool.take()[0] for _ in range(2)]
        try:
            task = Task("postgres", Path(), gold=(GOLD,), predicted=(sql,),
                        checks=(Check(query=CHECK["query"], compare="gold"),),
                        copies=(pgcopies.conninfo(url, names[0]),
                                pgcopies.conninfo(url, names[1])))
            outcome = run_task(task, timeout=60)
        finally:
            for name in names:
                pool.drop(name)
        got[cid] = outcome.predicted_error.removeprefix("the prediction failed on its copy: ")
    assert {cid: reason[:len(SECOND_LAYER[cid][1])] for cid, reason in got.items()} == {
        cid: start for cid, (_, start) in SECOND_LAYER.items()}
    assert _server_state(hostile) == before


def test_the_session_is_reset_before_the_checks(hostile: PostgresServer) -> None:
    """A prediction that hides the real table behind its own schema on the search path (or
    switches the session to read-only) leaves nothing of its session to the checks."""
    url = hostile.tasks_url(HOSTILE)
    pool = pgcopies.pool_for(url)
    names = [pool.take()[0] for _ in range(2)]
    try:
        predicted = ("CREATE SCHEMA fake; CREATE TABLE fake.genre AS SELECT genre_id, "
                     "CASE WHEN genre_id = 1 THEN upper(name) ELSE name END AS name "
                     "FROM public.genre; SET search_path = fake, public",)
        task = Task("postgres", Path(), gold=(GOLD,), predicted=predicted,
                    checks=(Check(query=CHECK["query"], compare="gold"),),
                    copies=(pgcopies.conninfo(url, names[0]), pgcopies.conninfo(url, names[1])))
        outcome = run_task(task, timeout=60)
    finally:
        for name in names:
            pool.drop(name)
    assert (outcome.passed, outcome.predicted_error) == (False, "")
    assert outcome.checks[0].reason.startswith("compare: gold of SELECT genre_id, name FROM "
                                               "genre: 1 rows missing")


def test_a_superuser_writable_datasource_is_a_usage_error(
        pytester: pytest.Pytester, postgres_server: PostgresServer) -> None:
    write_suite(pytester.path, "datasources:\n  pg:\n    type: sqlalchemy\n"
                f"    url: {postgres_server.url(TASKS_DATABASE)}\n    writable: sandbox\n",
                {"test_t.yaml": {"kind": "sql", "datasource": "pg", "cases": [
                    {"id": "raise", "task": "dml", "gold": GOLD, "predicted": GOLD,
                     "checks": [CHECK]}]}})
    result = pytester.runpytest("-p", "no:cacheprovider", "--queryeval-json=r.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    text = result.stderr.str()
    assert (f"queryeval.yaml:4: datasources.pg.url: the role '{postgres_server.user}' is a "
            "superuser: a writable: sandbox datasource runs task predictions as its role") in text
    assert "(no case was run)" in text
    assert not (pytester.path / "r.json").exists() or json.loads(
        (pytester.path / "r.json").read_text())["cases"] == []

