"""Ctrl-C during a long-running SQL query (issue 19 item 9): SIGINT to the process group of a
real pytest process, as a terminal sends it, stops the session within seconds, whatever the
engine is doing, and the JSON report of the finished cases is still written. Before, the SQLite
progress handler turned the KeyboardInterrupt into an "interrupted" query error and the run
went on (and a query inside one long function call did not even see it)."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.postgres import PostgresServer

from .conftest import SCORED_CONFTEST, ctrl_c, dump, read_report

#: A liveness bound, not a speed assertion: the queries below run for minutes when not stopped.
STOP_WITHIN = 20.0

#: Announces the long case (so the test knows the run is mid-query), then predicts its query.
MODEL = """
import pathlib

LONG = {long!r}

def predict(case):
    if case["id"] == "long":
        pathlib.Path("long.marker").write_text("x")
        return LONG
    return "SELECT count(*) FROM genre"
"""

LONG_SQLITE = {
    # the progress handler runs: the old code swallowed the interrupt as a query error
    "cartesian": "SELECT count(*) FROM track a, track b, track c",
    # one function call: SQLite never calls the progress handler
    "instr": "SELECT instr(hex(zeroblob(8000000)), hex(zeroblob(4000000)) || '1')",
}


def _suite(pytester: pytest.Pytester, source: dict[str, Any], long: str, gold: str,
           n_before: int, n_after: int, **options: Any) -> list[str]:
    pytester.makepyfile(model=MODEL.format(long=long))
    pytester.makeconftest(SCORED_CONFTEST)
    pytester.makefile(".yaml", queryeval=dump({
        "datasources": {"db": source},
        "predictions": {"source": "python", "function": "model:predict"}}))
    ids = [f"a-{i:02d}" for i in range(n_before)] + ["long"] + \
          [f"b-{i:02d}" for i in range(n_after)]
    pytester.makefile(".yaml", test_cases=dump({
        "kind": "sql", "datasource": "db", "timeout": 600,
        "thresholds": {"execution_accuracy": 1.0}, **options,
        "cases": [{"id": i, "gold": gold} for i in ids]}))
    return ids


def interrupt_mid_query(pytester: pytest.Pytester, *args: str, scored_first: int = 0,
                        ) -> tuple[subprocess.CompletedProcess[str], float]:
    """Run pytest, SIGINT its process group once the long query runs (its prediction was
    requested and, predictions being requested ahead, the ``scored_first`` cases before it
    were scored); the output and the seconds from SIGINT to the end of the process."""
    return ctrl_c(pytester, ["--queryeval-json=report.json", *args], marker="long.marker",
                  scored_first=scored_first, reach_within=120, delay=1.0,
                  stop_within=STOP_WITHIN)


def _check(pytester: pytest.Pytester, done: subprocess.CompletedProcess[str],
           before: list[str]) -> list[str]:
    assert done.returncode == pytest.ExitCode.INTERRUPTED, done.stdout[-3000:]
    report = read_report(pytester.path / "report.json")
    assert report["run"]["interrupted"] is True
    finished = [c["id"] for c in report["cases"]]
    assert "long" not in finished
    assert {c["outcome"] for c in report["cases"]} == {"passed"}
    assert not any(c.startswith("b-") for c in finished) or len(finished) > len(before)
    return finished


@pytest.mark.parametrize(("form", "isolation"), [
    ("cartesian", "process"), ("instr", "process"),
    # in the pytest process (trusted suites): the interrupt the progress handler swallows
    # is raised again
    ("cartesian", "thread")])
def test_ctrl_c_during_a_sqlite_query(suite: pytest.Pytester, chinook_copy: Path,
                                      form: str, isolation: str) -> None:
    ids = _suite(suite, {"type": "sqlite", "path": "chinook.sqlite", "isolation": isolation},
                 LONG_SQLITE[form], "SELECT count(*) FROM genre", 5, 5)
    done, _ = interrupt_mid_query(suite, scored_first=5)
    finished = _check(suite, done, ids[:5])
    assert finished == ids[:5], "exactly the cases finished before Ctrl-C"
    assert "Traceback" not in done.stdout.split("KeyboardInterrupt")[0], done.stdout[-3000:]


def test_ctrl_c_during_a_sqlite_query_under_xdist(suite: pytest.Pytester,
                                                  chinook_copy: Path) -> None:
    ids = _suite(suite, {"type": "sqlite", "path": "chinook.sqlite"}, LONG_SQLITE["instr"],
                 "SELECT count(*) FROM genre", 6, 6)
    done, _ = interrupt_mid_query(suite, "-n", "2", "--dist", "load")
    finished = _check(suite, done, [])
    assert set(finished) <= set(ids) and len(finished) == len(set(finished))


@pytest.mark.postgres
def test_ctrl_c_during_a_postgres_query(suite: pytest.Pytester,
                                        postgres_server: PostgresServer) -> None:
    ids = _suite(suite, {"type": "sqlalchemy", "url": postgres_server.readonly_url()},
                 "SELECT pg_sleep(600)", "SELECT count(*) FROM genre", 5, 5)
    done, _ = interrupt_mid_query(suite, scored_first=5)
    finished = _check(suite, done, ids[:5])
    assert finished == ids[:5], "exactly the cases finished before Ctrl-C"
    # and the server is not left running the query for its client that went away
    import psycopg

    deadline = time.monotonic() + STOP_WITHIN
    with psycopg.connect(postgres_server.conninfo(), autocommit=True) as conn:
        while conn.execute("SELECT count(*) FROM pg_stat_activity "
                           "WHERE query = 'SELECT pg_sleep(600)'").fetchone() != (0,):
            assert time.monotonic() < deadline, "the backend still runs the query"
            time.sleep(0.2)
