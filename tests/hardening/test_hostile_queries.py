"""Predicted queries as hostile input, through the whole plugin, on SQLite, PostgreSQL and a
real Oxigraph server.

Each suite holds one case per attack between honest cases. Every attack case must fail with its
own ``refused: ...`` reason (never reach the engine), the honest cases must still pass, every case
must be in the JSON report, and the data must be unchanged (file hash, table checksums, server
dump) — including side effects outside the data (replication slots, advisory locks, statistics).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.oxigraph import OxigraphServer
from tests.fixtures.postgres import PostgresServer
from tests.sparql_sources.test_guard import UPDATES
from tests.sql_sources.attacks import POSTGRES, SQLITE

from .conftest import by_id, dump, no_traceback, run_suite

#: Forms the source-level lists do not have: comment and case tricks, ``;`` chains, CTE-wrapped
#: writes, and statements hidden after a harmless query.
SQL_EXTRA = [
    "/* a */ /* b */ dRoP tAbLe genre",
    "SeLeCt 1 ;\n\n-- x\n DeLeTe FROM genre",
    "SELECT 1 /* ; */ ; DELETE FROM genre",
    "SELECT '/*' ; DELETE FROM genre -- */",
    "select * from genre;\tdrop table genre;",
    "SELECT 1;;; DROP TABLE genre",
    "(SELECT 1); DELETE FROM genre",
    "VALUES (1); DELETE FROM genre",
    "SELECT 1 UNION SELECT 2; DROP TABLE genre",
    "SELECT 1 -- \n; DROP TABLE genre",
    "-- SELECT\nDROP TABLE genre",
    "/* SELECT */ DELETE FROM genre",
    "DELETE/**/FROM/**/genre",
    "\ufeffDROP TABLE genre",
    "WITH x AS (SELECT 1) INSERT INTO genre SELECT 999, 'x'",
    "WITH x AS (SELECT 1) UPDATE genre SET name = 'x'",
    "WITH RECURSIVE x(n) AS (SELECT 1) DELETE FROM genre",
    "WITH x AS (SELECT 1) DELETE FROM genre RETURNING *",
    "INSERT INTO genre VALUES (999, 'x') RETURNING *",
    "INSERT INTO genre DEFAULT VALUES",
    "SELECT * FROM genre WHERE genre_id IN (SELECT 1); UPDATE genre SET name = 'x'",
    "CREATE TEMP TABLE t AS SELECT 1",
    "CREATE VIEW v AS SELECT 1",
    "CREATE INDEX i ON genre(name)",
    "SAVEPOINT a",
    "ROLLBACK",
    "COMMIT; DELETE FROM genre",
    "ANALYZE",
]
SQLITE_EXTRA = [
    "SELECT 1; ATTACH DATABASE '/tmp/queryeval-pwned.db' AS x",
    "ATTACH 'file:/tmp/queryeval-pwned.db' AS x",
    "PRAGMA writable_schema = ON",
    "PRAGMA query_only = OFF",
    "PRAGMA main.user_version = 1",
    "SELECT load_extension('/tmp/queryeval-pwned')",
    "CREATE TRIGGER t AFTER INSERT ON genre BEGIN DELETE FROM genre; END",
    "EXPLAIN DELETE FROM genre",
]
#: PostgreSQL: besides statements, functions whose effects outlive the rolled-back read-only
#: transaction (a replication slot retains WAL until the disk fills; a session advisory lock
#: stays held by the pooled connection; statistics resets are not transactional).
POSTGRES_EXTRA = [
    "SELECT pg_create_physical_replication_slot('queryeval_pwned')",
    "SELECT * FROM pg_create_physical_replication_slot('queryeval_pwned2')",
    "SELECT pg_try_advisory_lock(42)",
    "SELECT pg_try_advisory_lock_shared(43)",
    "SELECT pg_catalog.pg_try_advisory_lock(44)",
    "SELECT pg_stat_reset()",
    "SELECT pg_stat_reset_shared('bgwriter')",
    "SELECT pg_catalog.set_config('transaction_read_only', 'off', true)",
    "SELECT PG_TERMINATE_BACKEND(1)",
    "PREPARE p AS DELETE FROM genre",
    "EXECUTE p",
    "CREATE EXTENSION dblink",
    "ALTER SYSTEM SET work_mem = '1GB'",
    "SET ROLE postgres",
    "SET SESSION CHARACTERISTICS AS TRANSACTION READ WRITE",
    "START TRANSACTION READ WRITE",
    "REFRESH MATERIALIZED VIEW mv",
    "VACUUM FULL genre",
    "CHECKPOINT",
    "SELECT * INTO TEMP t FROM genre",
    "CREATE TABLE t AS SELECT 1",
    "DECLARE c CURSOR FOR SELECT 1",
    "SELECT * FROM genre FOR SHARE",
    "SELECT * FROM genre FOR NO KEY UPDATE",
    "SELECT lo_import('/etc/passwd')",
    "SELECT pg_read_file('/etc/passwd')",
]
SPARQL_EXTRA = [
    ("escaped-update-after-select", "SELECT * {} ; \\u0049NSERT DATA { <http://x/a> <http://x/p> 1 }"),
    ("escaped-update", "\\u0049NSERT DATA { <http://x/a> <http://x/p> 1 }"),
    ("select-then-insert", "SELECT * WHERE { ?s ?p ?o } INSERT DATA { <http://x/a> <http://x/p> 1 }"),
    ("tab-separated", "drop\tall"),
    ("newline-separated", "CLEAR\nGRAPH <http://example.org/g>"),
    ("semicolons", "SELECT * {} ;;; INSERT DATA { <http://x/a> <http://x/p> 1 }"),
    ("construct", "CONSTRUCT WHERE { ?s ?p ?o }"),
    ("describe", "DESCRIBE <http://example.org/a>"),
    ("delete-where-lower", "prefix brick: <https://brickschema.org/schema/Brick#>\n"
                           "delete where { ?s a brick:VAV }"),
]

HONEST_SQL = "SELECT count(*) FROM genre"


def _cases(golds: str, attacks: list[tuple[str, str]]) -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = [{"id": "honest-first", "gold": golds, "predicted": golds}]
    cases += [{"id": cid, "gold": golds, "predicted": q} for cid, q in attacks]
    cases.append({"id": "honest-last", "gold": golds, "predicted": golds})
    return cases


def _numbered(queries: list[str]) -> list[tuple[str, str]]:
    seen: list[str] = []
    for q in queries:
        if q not in seen:
            seen.append(q)
    return [(f"attack-{i:03d}", q) for i, q in enumerate(seen)]


#: An empty prediction is an answer, not an abstention (docs/abstention.md, issue 48 item 1):
#: the SQL guard refuses it as an empty statement, scoring 0, before any query runs.
EMPTY = "refused: empty statement"


def expected_reason(query: str, refused: str | tuple[str, ...] = "refused: ") -> str | tuple[str, ...]:
    """How a hostile prediction must fail: refused (an empty one as an empty statement)."""
    return EMPTY if not query.strip() else refused


def _check(report: dict[str, Any], attacks: list[tuple[str, str]]) -> None:
    cases = by_id(report)
    assert len(report["cases"]) == len(attacks) + 2, "a case went missing from the report"
    assert cases["honest-first"]["outcome"] == "passed"
    assert cases["honest-last"]["outcome"] == "passed"
    wrong = []
    for cid, query in attacks:
        rec = cases[cid]
        if rec["outcome"] != "failed" or not str(rec["reason"]).startswith(expected_reason(query)) \
                or rec["metrics"].get("execution_accuracy") != 0.0 or rec["predicted"] != query:
            wrong.append((query, rec["outcome"], rec["reason"] or rec["error"]))
    assert not wrong, "\n".join(map(repr, wrong))


def test_sqlite_file_is_unchanged(suite: pytest.Pytester, chinook_copy: Path) -> None:
    before = hashlib.sha256(chinook_copy.read_bytes()).hexdigest()
    attacks = _numbered([*SQLITE, *SQL_EXTRA, *SQLITE_EXTRA])
    suite.makefile(".yaml", queryeval=dump({"datasources": {
        "chinook": {"type": "sqlite", "path": "chinook.sqlite"}}}))
    suite.makefile(".yaml", test_attacks=dump({
        "kind": "sql", "datasource": "chinook", "thresholds": {"execution_accuracy": 1.0},
        "cases": _cases(HONEST_SQL, attacks)}))
    result, report = run_suite(suite)
    result.assert_outcomes(passed=2, failed=len(attacks))
    _check(report, attacks)
    no_traceback(result)
    assert hashlib.sha256(chinook_copy.read_bytes()).hexdigest() == before
    assert sorted(p.name for p in chinook_copy.parent.glob("chinook.sqlite*")) == ["chinook.sqlite"]
    assert not Path("/tmp/queryeval-pwned.db").exists()
    # every reason is on the terminal too, once per case
    assert result.stdout.str().count("refused: ") >= len([q for _, q in attacks if q.strip()])


def _pg_side_effects(server: PostgresServer) -> dict[str, Any]:
    import psycopg

    with psycopg.connect(server.conninfo(), autocommit=True) as conn:
        return {
            "slots": conn.execute("SELECT slot_name FROM pg_replication_slots").fetchall(),
            "advisory": conn.execute(
                "SELECT objid FROM pg_locks WHERE locktype = 'advisory'").fetchall(),
            "stats_reset": conn.execute(
                "SELECT stats_reset FROM pg_stat_database WHERE datname = 'chinook'").fetchall(),
            "bgwriter_reset": conn.execute("SELECT stats_reset FROM pg_stat_bgwriter").fetchall(),
            "settings": conn.execute(
                "SELECT name, setting FROM pg_settings WHERE source <> 'default' ORDER BY 1"
            ).fetchall(),
            "prepared": conn.execute("SELECT count(*) FROM pg_prepared_xacts").fetchall(),
        }


@pytest.mark.postgres
def test_postgres_data_and_server_state_are_unchanged(suite: pytest.Pytester,
                                                      postgres_server: PostgresServer) -> None:
    before = (postgres_server.checksum(), _pg_side_effects(postgres_server))
    attacks = _numbered([*POSTGRES, *SQL_EXTRA, *POSTGRES_EXTRA])
    suite.makefile(".yaml", queryeval=dump({"datasources": {
        # as the superuser (allowed explicitly): the guard and the read-only transaction
        # alone must keep data and server state unchanged
        "warehouse": {"type": "sqlalchemy", "url": postgres_server.url(),
                      "allow_privileged": True}}}))
    suite.makefile(".yaml", test_attacks=dump({
        "kind": "sql", "datasource": "warehouse", "thresholds": {"execution_accuracy": 1.0},
        "cases": _cases(HONEST_SQL, attacks)}))
    try:
        result, report = run_suite(suite)
        _check(report, attacks)
        result.assert_outcomes(passed=2, failed=len(attacks))
        no_traceback(result)
        assert (postgres_server.checksum(), _pg_side_effects(postgres_server)) == before
    finally:  # a failed run must not leave slots behind for the other tests of this server
        _drop_slots(postgres_server)


def _drop_slots(server: PostgresServer) -> None:
    import psycopg

    with psycopg.connect(server.conninfo(), autocommit=True) as conn:
        conn.execute("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots "
                     "WHERE slot_name LIKE 'queryeval_pwned%'")


@pytest.mark.oxigraph
def test_oxigraph_server_is_unchanged(suite: pytest.Pytester,
                                      oxigraph_endpoint: OxigraphServer) -> None:
    before = (oxigraph_endpoint.triple_count(), oxigraph_endpoint.dump_sha256())
    gold = ("SELECT (COUNT(*) AS ?n) WHERE "
            "{ ?s a <https://brickschema.org/schema/Brick#VAV> }")
    attacks = [(f"sparql-{label}", q) for label, q in [*UPDATES, *SPARQL_EXTRA]]
    suite.makefile(".yaml", queryeval=dump({"datasources": {
        "graph": {"type": "sparql", "endpoint": oxigraph_endpoint.query_url, "retries": 0}}}))
    suite.makefile(".yaml", test_attacks=dump({
        "kind": "sparql", "datasource": "graph", "thresholds": {"execution_accuracy": 1.0},
        "cases": _cases(gold, attacks)}))
    result, report = run_suite(suite)
    _check(report, attacks)
    result.assert_outcomes(passed=2, failed=len(attacks))
    no_traceback(result)
    assert (oxigraph_endpoint.triple_count(), oxigraph_endpoint.dump_sha256()) == before
