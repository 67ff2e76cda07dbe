"""The PostgreSQL task statement guard (issue 39 item 2) on its own: what reaches beyond the
copy's database is refused with a reason naming it, what stays in the database (writes, DDL,
functions and triggers that act on the copy, session settings) is not. The same forms run on
the real server in tests/hardening/test_pg_task_statements.py."""

from __future__ import annotations

import pytest

from pytest_queryeval.errors import QueryRefused
from pytest_queryeval.tasks.pgconfine import check_task_statements, runs_outside_transactions

OUT = "acts outside the task's copy of the database"


@pytest.mark.parametrize(("sql", "reason"), [
    ("DROP DATABASE shop", f"DROP DATABASE {OUT}"),
    ("ALTER DATABASE shop RESET ALL", f"ALTER DATABASE ... SET {OUT}"),
    ("ALTER DATABASE shop OWNER TO mallory", f"ALTER DATABASE ... OWNER TO {OUT}"),
    ("SECURITY LABEL ON ROLE x IS 'y'", f"SECURITY LABEL ON ROLE {OUT}"),
    ("GRANT SET ON PARAMETER work_mem TO PUBLIC", f"GRANT/REVOKE ON PARAMETER {OUT}"),
    ("REASSIGN OWNED BY CURRENT_USER TO x", f"REASSIGN OWNED {OUT}"),
    ("DROP OWNED BY CURRENT_USER", f"DROP OWNED {OUT}"),
    ("CREATE TABLESPACE t LOCATION '/tmp'", f"CREATE TABLESPACE {OUT}"),
    ("CREATE SUBSCRIPTION s CONNECTION 'host=x' PUBLICATION p", f"CREATE SUBSCRIPTION {OUT}"),
    ("CREATE SERVER s FOREIGN DATA WRAPPER postgres_fdw", f"CREATE SERVER {OUT}"),
    ("CHECKPOINT", f"CHECKPOINT {OUT}"),
    ("LOAD 'auto_explain'", f"LOAD {OUT}"),
    ("COPY genre FROM PROGRAM 'cat /etc/passwd'", f"COPY FROM PROGRAM {OUT}"),
    ("RESET SESSION AUTHORIZATION", f"RESET ROLE / RESET SESSION AUTHORIZATION {OUT}"),
    ("ALTER FUNCTION f() SET role = 'x'", f"SET ROLE / SET SESSION AUTHORIZATION {OUT}"),
    ("SELECT set_config(current_setting('x'), 'y', false)",
     "set_config() of the session's role (or of a setting named at run time)"),
    ("SELECT U&\"\\0064blink_exec\"('a', 'b')", f"function dblink_exec() {OUT}"),
    ("SELECT pg_catalog.pg_ls_dir('.')", f"function pg_ls_dir() {OUT}"),
    ("SELECT pg_stat_reset_shared('bgwriter')", f"function pg_stat_reset_shared() {OUT}"),
    ("CREATE AGGREGATE a(text, bool) (sfunc = set_config, stype = text)",
     f"function set_config() {OUT}"),
    ("ALTER FUNCTION pg_terminate_backend(int, bigint) RENAME TO harmless",
     f"function pg_terminate_backend() {OUT}"),
    ("SELECT ts_stat('SELECT 1')", "function ts_stat() runs SQL given as text"),
    ("UPDATE genre SET name = 'x' WHERE genre_id IN (SELECT pg_cancel_backend(1)::int)",
     f"function pg_cancel_backend() {OUT}"),
    ("DO $$ DECLARE r record; BEGIN FOR r IN EXECUTE 'SELECT 1' LOOP END LOOP; END $$",
     "PL/pgSQL FOR ... EXECUTE runs a statement built at run time"),
    ("DO $$ BEGIN IF pg_reload_conf() THEN RAISE NOTICE 'x'; END IF; END $$",
     f"function pg_reload_conf() {OUT}"),
    ("DO LANGUAGE plperl $$ 1 $$", "a DO block in LANGUAGE plperl is not checked"),
    ("CREATE PROCEDURE p() LANGUAGE plpgsql AS $$ BEGIN DROP ROLE x; END $$",
     f"DROP ROLE {OUT}"),
    ("CREATE FUNCTION f() RETURNS int LANGUAGE c AS 'dblink', 'dblink_exec'",
     "a function in LANGUAGE c is not checked"),
])
def test_refused_with_its_name(sql: str, reason: str) -> None:
    with pytest.raises(QueryRefused) as info:
        check_task_statements(["UPDATE genre SET name = name", sql])
    assert str(info.value).startswith(reason)


@pytest.mark.parametrize("sql", [
    "UPDATE track SET unit_price = unit_price * 1.1 WHERE genre_id = 1",
    "CREATE INDEX CONCURRENTLY ix ON track (genre_id)",
    "ALTER TABLE track ADD COLUMN rating int; COMMENT ON COLUMN track.rating IS 'stars'",
    "BEGIN; DELETE FROM invoice_line WHERE invoice_id = 1; COMMIT",
    "SET search_path = public; SELECT set_config('statement_timeout', '5s', true)",
    "CREATE FUNCTION bump() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN NEW.name := "
    "upper(NEW.name); RETURN NEW; END $$; CREATE TRIGGER t BEFORE INSERT ON genre FOR EACH ROW "
    "EXECUTE FUNCTION bump()",
    "CREATE FUNCTION n() RETURNS bigint LANGUAGE sql BEGIN ATOMIC SELECT count(*) FROM genre; END",
    "DO $$ BEGIN INSERT INTO genre VALUES (99, 'dblink_exec'); END $$",
    "GRANT SELECT ON genre TO PUBLIC; CREATE SCHEMA s; DROP TABLE IF EXISTS s.x",
    "COPY (SELECT 1) TO STDOUT",
    "this is not SQL at all",  # the server's parser rejects it too, before anything runs
])
def test_what_stays_in_the_database_is_not_refused(sql: str) -> None:
    check_task_statements([sql])


@pytest.mark.parametrize(("sql", "outside"), [
    ("VACUUM track", True), ("REINDEX TABLE CONCURRENTLY track", True),
    ("DROP INDEX CONCURRENTLY ix", True), ("DROP DATABASE shop", False),
    ("UPDATE genre SET name = name", False),
])
def test_only_in_database_statements_run_outside_the_transaction(sql: str,
                                                                 outside: bool) -> None:
    assert runs_outside_transactions([sql]) is outside
