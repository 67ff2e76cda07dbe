"""Issue 25, item 1: the routes around a text-matching guard, on the real loopback PostgreSQL
server with dblink installed and a victim session of the read-only role.

PostgreSQL's ``U&"\\0064blink_exec"`` escapes, the functions that run SQL given as text
(``query_to_xml``, ``ts_stat``, dblink's second connection) and the volatile functions no list
names must all be refused before the server runs anything: as the recommended read-only role,
and as a superuser allowed explicitly. After each session: the data is unchanged (checksums),
nothing lasts on the server (advisory locks, replication slots, large objects, statistics
resets, killed sessions), every case has its own precise reason in the written report, and the
session ended within the sum of its timeouts plus a margin.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from pytest_queryeval.errors import QueryFailed, QueryTimeout
from pytest_queryeval.sources import open_source
from pytest_queryeval.sources.sqlalchemy import PrivilegedRole
from tests.fixtures.postgres import PostgresServer

from .conftest import by_id, dump, read_report

pytestmark = pytest.mark.postgres

TIMEOUT = 3
#: Start-up, connections, the role check: what a session needs beyond its cases' timeouts.
MARGIN = 60
WRITER = "qe_dblink_writer"
WRITER_PASSWORD = "pw-dblink-writer"
HONEST = "SELECT count(*) FROM genre"
DELETE = "DELETE FROM invoice_line WHERE invoice_line_id = 5"
TEXT_RUNNER = "executes SQL given as text (or on another connection), which no guard can check"
VOLATILE = "is volatile (pg_proc.provolatile = 'v')"


def _attacks(server: PostgresServer, role: str) -> dict[str, tuple[str, str]]:
    """Case id -> (predicted query, the exact start of its reason)."""
    writer = f"host=127.0.0.1 port={server.port} dbname={server.database} user={WRITER} " \
             f"password={WRITER_PASSWORD}"
    return {
        "escaped-dblink-exec": (
            f"SELECT U&\"\\0064blink_exec\"('{writer}', '{DELETE}')",
            f"refused: function dblink_exec() {TEXT_RUNNER}"),
        "query-to-xml-dblink": (
            f"SELECT query_to_xml('SELECT dblink_exec(''{writer}'', ''{DELETE}'')', true, "
            "false, '')",
            f"refused: function query_to_xml() {TEXT_RUNNER}"),
        "dblink-connect-send": (
            f"SELECT dblink_connect('qe', '{writer}') FROM (SELECT 1) s "
            f"WHERE dblink_send_query('qe', '{DELETE}') = 1",
            f"refused: function dblink_connect() {TEXT_RUNNER}"),
        "escaped-terminate-victim": (
            "SELECT U&\"\\0070g_terminate_backend\"(pid) FROM pg_stat_activity "
            f"WHERE usename = '{role}' AND pid <> pg_backend_pid()",
            "refused: function pg_terminate_backend() has side effects"),
        "escaped-cancel-victim": (
            "SELECT U&\"\\0070g_cancel_backend\"(pid) FROM pg_stat_activity "
            f"WHERE usename = '{role}'",
            "refused: function pg_cancel_backend() has side effects"),
        "escaped-advisory-lock": (
            "SELECT U&\"\\0070g_advisory_lock\"(5555)",
            "refused: function pg_advisory_lock() has side effects"),
        "query-to-xml-advisory-lock": (
            "SELECT query_to_xml('SELECT pg_advisory_lock(5556)', true, false, '')",
            f"refused: function query_to_xml() {TEXT_RUNNER}"),
        "ts-stat-advisory-lock": (
            "SELECT * FROM ts_stat('SELECT pg_advisory_lock(5557)::text::tsvector')",
            f"refused: function ts_stat() {TEXT_RUNNER}"),
        "xmlexists-advisory-lock": (
            "SELECT count(*) FROM genre WHERE xmlexists('//row' PASSING BY REF "
            "query_to_xml('SELECT pg_advisory_lock(5558)', true, false, ''))",
            f"refused: function query_to_xml() {TEXT_RUNNER}"),
        "volatile-unlisted": (
            "SELECT U&\"\\0070g_try_advisory_xact_lock\"(5559)",
            f"refused: function pg_try_advisory_xact_lock() {VOLATILE}"),
        "listed-setseed": ("SELECT setseed(0.5)", "refused: function setseed() has side effects"),
        "escaped-replication-slot": (
            "SELECT U&\"\\0070g_create_physical_replication_slot\"('qe_escaped')",
            "refused: function pg_create_physical_replication_slot() has side effects"),
        "query-to-xml-replication-slot": (
            "SELECT query_to_xml('SELECT pg_create_physical_replication_slot(''qe_xml'')', "
            "true, false, '')",
            f"refused: function query_to_xml() {TEXT_RUNNER}"),
        "escaped-stat-reset": ("SELECT U&\"\\0070g_stat_reset\"()",
                               "refused: function pg_stat_reset() has side effects"),
        "escaped-read-file": ("SELECT U&\"\\0070g_read_file\"('/etc/passwd')",
                              "refused: function pg_read_file() has side effects"),
        "escaped-lo-import": ("SELECT U&\"\\006Co_import\"('/dev/zero')",
                              "refused: function lo_import() has side effects"),
    }


@pytest.fixture
def dblink(postgres_server: PostgresServer) -> Iterator[PostgresServer]:
    """dblink installed in the suite's database (its functions PUBLIC, as by default) and a
    role that may DELETE from invoice_line: what a dblink connection string would name. For
    one test at a time: the role check refuses the read-only role while dblink is PUBLIC in
    the suite's database, and a module's fixture stayed on while other modules' tests ran on
    the same xdist worker."""
    postgres_server.install_dblink()
    postgres_server.superuser_execute(
        f"CREATE ROLE {WRITER} LOGIN PASSWORD '{WRITER_PASSWORD}'",
        f"GRANT SELECT, DELETE ON invoice_line TO {WRITER}")
    yield postgres_server
    postgres_server.superuser_execute(
        f"DROP OWNED BY {WRITER}", f"DROP ROLE {WRITER}", "DROP EXTENSION IF EXISTS dblink")


@pytest.fixture
def victim(postgres_server: PostgresServer) -> Iterator[psycopg.Connection[Any]]:
    """An idle session of the read-only role: what a same-role signal would kill."""
    conninfo = postgres_server.conninfo().replace(
        f"user={postgres_server.user} password={postgres_server.password}",
        f"user={postgres_server.readonly_user} password={postgres_server.readonly_password}")
    with psycopg.connect(conninfo, autocommit=True) as conn:
        yield conn


def _server_state(server: PostgresServer) -> dict[str, Any]:
    """What could outlive a rolled-back query, besides the data."""
    with psycopg.connect(server.conninfo(), autocommit=True) as conn:
        return {
            "advisory": conn.execute(
                "SELECT objid FROM pg_locks WHERE locktype = 'advisory'").fetchall(),
            "slots": conn.execute("SELECT slot_name FROM pg_replication_slots").fetchall(),
            "large_objects": conn.execute(
                "SELECT count(*) FROM pg_largeobject_metadata").fetchall(),
            "stats_reset": conn.execute(
                "SELECT stats_reset FROM pg_stat_database WHERE datname = current_database()"
            ).fetchall(),
            "dblink_connections": conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE usename = %s",
                (WRITER,)).fetchall(),
        }


def _role_backends(server: PostgresServer, role: str) -> list[int]:
    with psycopg.connect(server.conninfo(), autocommit=True) as conn:
        return [int(r[0]) for r in conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE usename = %s ORDER BY 1", (role,))]


def _run(suite: pytest.Pytester, budget: float) -> tuple[dict[str, Any], str]:
    """The suite in a subprocess with a JSON report; it must end within ``budget``."""
    t0 = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rA",
         "--queryeval-json=report.json"],
        cwd=suite.path, capture_output=True, text=True, timeout=budget + 30, check=False)
    elapsed = time.monotonic() - t0
    out = done.stdout + done.stderr
    assert elapsed < budget, f"the session took {elapsed:.0f} s, over {budget:g} s"
    assert "Traceback (most recent call last)" not in out, out[-3000:]
    report = suite.path / "report.json"
    assert report.is_file(), out[-3000:]
    return by_id(read_report(report)), out


@pytest.mark.parametrize("privileged", [False, True], ids=["read-only-role", "superuser"])
def test_escaped_and_sql_text_routes_are_refused(
        suite: pytest.Pytester, dblink: PostgresServer, victim: psycopg.Connection[Any],
        privileged: bool) -> None:
    server = dblink
    attacks = _attacks(server, server.readonly_user)
    victim_pid = int(victim.info.backend_pid)
    before = (server.checksum(), _server_state(server))
    ro_before = _role_backends(server, server.readonly_user)
    url = server.url() if privileged else server.readonly_url()
    # the read-only role can execute dblink here, which the role check refuses since the
    # forty-second re-probe (test_a_role_that_reaches_dblink_is_refused): past that check,
    # the guard still refuses each route on its own
    source: dict[str, Any] = {"type": "sqlalchemy", "url": url, "allow_privileged": True}
    suite.makefile(".yaml", queryeval=dump({"datasources": {"pg": source}}))
    cases = [{"id": "honest-first", "gold": HONEST, "predicted": HONEST}]
    cases += [{"id": cid, "gold": HONEST, "predicted": q} for cid, (q, _) in attacks.items()]
    cases.append({"id": "honest-last", "gold": HONEST, "predicted": HONEST})
    suite.makefile(".yaml", test_cases=dump({
        "kind": "sql", "datasource": "pg", "timeout": TIMEOUT,
        "thresholds": {"execution_accuracy": 1.0}, "cases": cases}))
    try:
        recs, out = _run(suite, TIMEOUT * len(cases) + MARGIN)
    finally:
        server.superuser_execute(
            "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots "
            "WHERE slot_name LIKE 'qe\\_%'")
    assert recs["honest-first"]["outcome"] == "passed"
    assert recs["honest-last"]["outcome"] == "passed"
    wrong = {cid: (recs[cid]["outcome"], recs[cid]["reason"] or recs[cid].get("error")) for cid, (_, reason) in attacks.items()
             if recs[cid]["outcome"] != "failed" or not str(recs[cid]["reason"]).startswith(reason)}
    assert not wrong, wrong
    assert recs["dblink-connect-send"]["reason"].endswith(TEXT_RUNNER)
    # the data, and everything that could outlive the query, as before
    assert (server.checksum(), _server_state(server)) == before
    # the victim session of the same role was neither cancelled nor killed
    assert victim.execute("SELECT pg_backend_pid()").fetchone() == (victim_pid,)
    assert victim_pid in _role_backends(server, server.readonly_user)
    # no backend of the session is left behind once pytest has exited
    for _ in range(50):
        if _role_backends(server, server.readonly_user) == ro_before:
            break
        time.sleep(0.1)
    assert _role_backends(server, server.readonly_user) == ro_before
    assert "root:x:0:0" not in out and "root:x:0:0" not in (suite.path / "report.json").read_text()
    # the session started by saying what the role can still do
    if not privileged:
        assert "datasource 'pg': the role it connects as can still execute dblink" in out, \
            out[-3000:]
        assert "signal the other sessions of its own role (pg_cancel_backend, " \
               "pg_terminate_backend)" in out


@pytest.fixture
def scratch(postgres: PostgresServer) -> Iterator[str]:
    """A scratch database, dropped after an immediate restart (a backend may still run)."""
    postgres.superuser_execute("DROP DATABASE IF EXISTS qe_scratch_pg", "CREATE DATABASE "
                               "qe_scratch_pg", database="postgres")
    try:
        yield "qe_scratch_pg"
    finally:
        postgres.stop("immediate")
        postgres.start()
        postgres.superuser_execute("DROP DATABASE IF EXISTS qe_scratch_pg", database="postgres")


def test_backend_that_survives_termination_is_named(postgres: PostgresServer,
                                                    scratch: str) -> None:
    """A superuser's ``lo_import('/dev/zero')`` (a trusted gold, past the guard) ignores the
    cancel request and ``pg_terminate_backend``: the timeout names its pid as still running,
    never as terminated, and the pid is indeed still on the server."""
    src = open_source("su", {"type": "sqlalchemy", "url": postgres.url(scratch),
                             "allow_privileged": True, "isolation": "thread"})
    try:
        with pytest.raises(QueryTimeout) as info:
            src.execute("SELECT lo_import('/dev/zero')", trusted=True, timeout=TIMEOUT)
    finally:
        src.close()
    reason = info.value.reason()
    m = re.fullmatch(
        rf"timeout: query exceeded {TIMEOUT} s; BACKEND PID (\d+) IS STILL RUNNING on the "
        r"server: it ignored the cancel request and pg_terminate_backend, and the connection "
        r"was dropped\. End it there \(pg_terminate_backend\(\1\) as a superuser, or restart "
        r"the server\)", reason)
    assert m is not None, reason
    assert "terminated and" not in reason
    with psycopg.connect(postgres.conninfo(scratch), autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = %s",
                            (int(m[1]),)).fetchone() == (1,)


def test_least_privilege_setup_closes_dblink_and_signalling(
        dblink: PostgresServer, scratch: str, victim: psycopg.Connection[Any]) -> None:
    """docs/sql-sources.md's least-privilege setup (tests/fixtures/postgres.py's
    LEAST_PRIVILEGE_SQL) in a database with dblink: the role's session report is empty, and
    even past the guard (trusted) the role can neither run dblink nor signal its own
    sessions."""
    postgres = dblink
    postgres.install_dblink(scratch)
    postgres.apply_least_privilege(scratch)
    victim_pid = int(victim.info.backend_pid)
    url = postgres.readonly_url(scratch)
    src = open_source("lp", {"type": "sqlalchemy", "url": url, "isolation": "thread"})
    try:
        assert src._capabilities() == []
        for query in (f"SELECT pg_terminate_backend({victim_pid})",
                      f"SELECT pg_cancel_backend({victim_pid})",
                      "SELECT dblink_connect('qe', 'dbname=postgres')",
                      "SELECT * FROM dblink_get_connections()"):
            with pytest.raises(QueryFailed, match="permission denied for function"):
                src.execute(query, trusted=True)
    finally:
        src.close()
    assert victim.execute("SELECT pg_backend_pid()").fetchone() == (victim_pid,)
    # the same role where nothing was revoked (the suite's database, with dblink) can do both:
    # refused without allow_privileged, reported with it
    src = open_source("ro", {"type": "sqlalchemy", "url": postgres.readonly_url(),
                             "isolation": "thread"})
    try:
        with pytest.raises(PrivilegedRole, match=r"can execute dblink \(statements on a "
                           r"connection of its own"):
            src.execute(HONEST)
    finally:
        src.close()
    src = open_source("ro", {"type": "sqlalchemy", "url": postgres.readonly_url(),
                             "isolation": "thread", "allow_privileged": True})
    try:
        assert src._capabilities() == [
            "execute dblink (20 functions, e.g. dblink_exec: statements on a connection of "
            "their own, outside the read-only transaction)",
            "signal the other sessions of its own role (pg_cancel_backend, "
            "pg_terminate_backend)"]
    finally:
        src.close()


def test_no_session_state_outlives_a_query(postgres_server: PostgresServer) -> None:
    """A session advisory lock survives the rollback of its transaction: taken by a query
    past the guard (a trusted gold), it must still be gone once the query is over, although
    the connection stays in the pool (``DISCARD ALL``), and the pooled connection still works."""
    # (allow_privileged: this module's dblink makes the read-only role refused otherwise)
    src = open_source("ro", {"type": "sqlalchemy", "url": postgres_server.readonly_url(),
                             "isolation": "thread", "allow_privileged": True})
    try:
        assert src.execute("SELECT pg_advisory_lock(7777), pg_backend_pid()",
                           trusted=True).rows[0][0] == ""
        assert _server_state(postgres_server)["advisory"] == []
        assert src.execute(HONEST).rows == [(25,)]
        assert src.execute(HONEST).rows == [(25,)]
        pooled = src._engine().pool.checkedin()
        assert pooled >= 1
    finally:
        src.close()
