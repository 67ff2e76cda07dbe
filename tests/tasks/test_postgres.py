"""dml/ddl tasks on the loopback PostgreSQL server (issue 28 item 2): copies by ``CREATE
DATABASE ... TEMPLATE`` from a pool, the datasource's database never written, every copy
dropped after its case, and the copies of a killed session swept by the next pool."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psycopg
import pytest

from pytest_queryeval.tasks import pgcopies
from tests.fixtures.postgres import TASKS_DATABASE
from tests.support import read_report

RAISE = "UPDATE track SET unit_price = unit_price + 0.1 WHERE genre_id = 1"


def copies(server: Any) -> set[str]:
    with psycopg.connect(server.conninfo("postgres"), autocommit=True) as conn:
        return {str(r[0]) for r in conn.execute(
            "SELECT datname FROM pg_database WHERE datname LIKE 'qe\\_%'").fetchall()}


def test_tasks_on_template_copies(pytester: pytest.Pytester, postgres_server: Any) -> None:
    before = postgres_server.checksum(TASKS_DATABASE)
    # databases this process made before (another test's counterexample spaces, dropped at
    # exit) are not this run's: only the names new since now must be gone after close()
    ours_before = {n for n in copies(postgres_server) if f"_{pgcopies.os.getpid()}_" in n}
    url = postgres_server.tasks_url(TASKS_DATABASE)
    pytester.makeini("[pytest]\nqueryeval_files = test_*.yaml\n")
    pytester.makefile(".yaml", queryeval=json.dumps({"datasources": {
        "pg": {"type": "sqlalchemy", "url": url, "writable": "sandbox", "timeout": 60}}}))
    pytester.makefile(".yaml", test_pg=json.dumps({"kind": "sql", "datasource": "pg", "cases": [
        {"id": "raise", "task": "dml", "gold": RAISE,
         "predicted": "UPDATE track SET unit_price = 0.1 + unit_price WHERE genre_id = 1",
         "checks": [{"query": "SELECT track_id, unit_price FROM track", "compare": "gold"},
                    {"query": "SELECT count(*) FROM track WHERE unit_price > 1.0",
                     "rows": [[1510]]}]},
        {"id": "too-wide", "task": "dml", "gold": RAISE,
         "predicted": "UPDATE track SET unit_price = unit_price + 0.1",
         "checks": [{"query": "SELECT track_id, unit_price FROM track", "compare": "gold"}]},
        {"id": "index", "task": "ddl",
         "gold": ["CREATE INDEX ix_genre ON track (genre_id)",
                  "ALTER TABLE track ADD COLUMN rating INT"],
         "predicted": "CREATE INDEX ix_genre ON track (genre_id); "
                      "ALTER TABLE track ADD COLUMN rating INT",
         "checks": [{"schema": {"tables": {"track": ["genre_id", "rating"]},
                                "indexes": ["ix_genre"]}}]},
        # issue 41: the checks pass, but the prediction also wrote tables the gold did not
        {"id": "collateral", "task": "dml", "gold": RAISE,
         "predicted": f"{RAISE}; UPDATE customer SET fax = NULL; DELETE FROM invoice_line "
                      "WHERE unit_price > 1",
         "checks": [{"query": "SELECT track_id, unit_price FROM track", "compare": "gold"}]},
        {"id": "collateral-ignored", "task": "dml", "gold": RAISE,
         "predicted": f"{RAISE}; UPDATE customer SET fax = NULL",
         "collateral": {"ignore": ["customer"]},
         "checks": [{"query": "SELECT track_id, unit_price FROM track", "compare": "gold"}]}]}))
    pytester.runpytest("--queryeval-json=r.json", "-p", "no:cacheprovider")
    cases = {c["id"]: c for c in read_report(pytester.path / "r.json")["cases"]}
    assert cases["raise"]["outcome"] == "passed", cases["raise"]
    assert cases["raise"]["metrics"]["copy_seconds"] >= 0
    assert cases["too-wide"]["outcome"] == "failed"
    assert cases["too-wide"]["reason"].startswith("1 of 1 check failed: compare: gold of "
                                                  "SELECT track_id, unit_price FROM track: "
                                                  "2206 rows missing")
    assert cases["index"]["outcome"] == "passed"
    assert cases["collateral"]["reason"] == (
        "collateral: the prediction changed tables the gold did not: customer (12 rows "
        "differ), invoice_line (111 rows missing)")
    assert cases["collateral-ignored"]["outcome"] == "passed"
    assert postgres_server.checksum(TASKS_DATABASE) == before  # the datasource's database is never written
    pool = pgcopies.pool_for(url)
    pool.close()
    assert {n for n in copies(postgres_server)
            if f"_{pgcopies.os.getpid()}_" in n} - ours_before == set()


def test_a_killed_sessions_copies_are_swept(postgres_server: Any, tmp_path: Path) -> None:
    url = postgres_server.tasks_url(TASKS_DATABASE)
    script = tmp_path / "crash.py"
    script.write_text(
        "import os, sys\n"
        "from pytest_queryeval.tasks import pgcopies\n"
        "pool = pgcopies.pool_for(sys.argv[1])\n"
        "print(pool.take()[0], pool.template, flush=True)\n"
        "os._exit(9)  # as a kill -9: no atexit, nothing dropped\n")
    out = subprocess.run([sys.executable, str(script), url], capture_output=True, text=True,
                         timeout=120, check=False)
    left = set(out.stdout.split())
    assert len(left) == 2, out.stderr
    assert left <= copies(postgres_server)
    time.sleep(0.1)
    dropped = pgcopies.sweep(pgcopies.conninfo(url, "postgres"))
    assert left <= set(dropped)
    assert not left & copies(postgres_server)


def test_ctrl_c_drops_the_sessions_copies(postgres_server: Any, tmp_path: Path) -> None:
    """A KeyboardInterrupt ends the process through its exit handlers: the pool drops every
    copy and the template it made, the one a case holds included."""
    url = postgres_server.tasks_url(TASKS_DATABASE)
    script = tmp_path / "interrupted.py"
    script.write_text(
        "import sys\n"
        "from pytest_queryeval.tasks import pgcopies\n"
        "pool = pgcopies.pool_for(sys.argv[1])\n"
        "print(pool.take()[0], pool.template, flush=True)\n"
        "raise KeyboardInterrupt\n")
    out = subprocess.run([sys.executable, str(script), url], capture_output=True, text=True,
                         timeout=120, check=False)
    made = set(out.stdout.split())
    assert len(made) == 2 and "KeyboardInterrupt" in out.stderr
    assert not made & copies(postgres_server)


def test_fan_out_over_all_three_engines(pytester: pytest.Pytester, postgres_server: Any,
                                        postgres_url: str) -> None:
    """One case on SQLite, DuckDB and PostgreSQL Chinook (issue 28's fan-out test): a gold per
    dialect (DuckDB's transpiled from SQLite's), a prediction per source where the schemas'
    spellings differ (PostgreSQL's Chinook is snake_case)."""
    import shutil

    from .test_dialects_fanout import CHINOOK, duckdb_copy

    shutil.copyfile(CHINOOK, pytester.path / "chinook.sqlite")
    duckdb_copy(pytester.path / "chinook.duckdb")
    pytester.makeini("[pytest]\nqueryeval_files = test_*.yaml\n")
    pytester.makefile(".yaml", queryeval=json.dumps({
        "datasources": {"lite": {"type": "sqlite", "path": "chinook.sqlite"},
                        "duck": {"type": "duckdb", "path": "chinook.duckdb"},
                        "pg": {"type": "sqlalchemy", "url": postgres_url}},
        "predictions": {"source": "file", "path": "predictions.jsonl"},
        "thresholds": {"execution_accuracy": 1.0}}))
    pytester.makefile(".yaml", test_three=json.dumps({"kind": "sql", "cases": [
        {"id": "genres", "datasource": ["lite", "duck", "pg"], "transpile": {"from": "sqlite"},
         "gold": {"sqlite": "SELECT Name FROM Genre WHERE GenreId < 4",
                  "postgres": "SELECT name FROM genre WHERE genre_id < 4"}}]}))
    (pytester.path / "predictions.jsonl").write_text(
        json.dumps({"id": "genres", "predicted": "SELECT Name FROM Genre WHERE GenreId <= 3"})
        + "\n" + json.dumps({"id": "genres[pg]", "predicted": "SELECT name FROM genre WHERE "
                                                             "genre_id IN (1, 2, 3)"}) + "\n")
    pytester.runpytest("--queryeval-json=r.json", "-p", "no:cacheprovider")
    data = read_report(pytester.path / "r.json")
    cases = {c["id"]: c for c in data["cases"]}
    assert {i: (c["outcome"], c["dialect"]) for i, c in cases.items()} == {
        "genres[lite]": ("passed", "sqlite"), "genres[duck]": ("passed", "duckdb"),
        "genres[pg]": ("passed", "postgres")}
    assert cases["genres[duck]"]["details"]["gold_dialect"]["transpiled_from"] == "sqlite"
    assert cases["genres[pg]"]["details"]["gold_dialect"] == {"dialect": "postgres"}
    assert sorted(data["aggregates"]["by_dialect"]) == ["duckdb", "postgres", "sqlite"]


def test_a_database_in_use_cannot_be_copied_and_the_error_says_what_to_do(
        pytester: pytest.Pytester, postgres_server: Any) -> None:
    """``CREATE DATABASE ... TEMPLATE`` needs a database no other session uses: with one
    connected all along, the task case is an error naming the cause and the fix."""
    url = postgres_server.url()  # chinook: this test keeps a session on it
    pytester.makeini("[pytest]\nqueryeval_files = test_*.yaml\n")
    pytester.makefile(".yaml", queryeval=json.dumps({"datasources": {  # the owner of chinook
        "pg": {"type": "sqlalchemy", "url": url, "writable": "sandbox", "timeout": 60,
               "allow_privileged": True}}}))
    pytester.makefile(".yaml", test_busy=json.dumps({"kind": "sql", "datasource": "pg", "cases": [
        {"id": "raise", "task": "dml", "gold": RAISE, "predicted": RAISE,
         "checks": [{"query": "SELECT count(*) FROM track", "rows": [[3503]]}]}]}))
    with psycopg.connect(postgres_server.conninfo()):
        pytester.runpytest("--queryeval-json=r.json", "-p", "no:cacheprovider")
    case = read_report(pytester.path / "r.json")["cases"][0]
    assert case["outcome"] == "error"
    assert "ObjectInUse" in case["error"]
    assert "point the writable: sandbox datasource at a database of its own" in case["error"]
    pgcopies._POOLS.pop(url, None)
