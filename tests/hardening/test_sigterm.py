"""SIGTERM is an interrupt (issue 54 item 2): schedulers stop work with SIGTERM (SLURM
preemption, a Kubernetes eviction, a CI job's timeout), and until now it ended the process
at once, with no report. Handled as Ctrl-C is: the session stops asking, writes every report
marked interrupted with the signal, drops its PostgreSQL copies, and exits 143 (128 + 15)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.sdmx_cases import GDP, sdmx_case, selection

from .conftest import REPORT_ARGS, check_all_reports, ctrl_c, dump, no_traceback, read_report
from .test_interrupt import _no_partial_files, _suite

REASON = "SIGTERM: the process was asked to stop (a scheduler's preemption, an eviction, a " \
         "time limit)"


def _terminate(pytester: pytest.Pytester, *args: str, scored_first: int, group: bool,
               ) -> subprocess.CompletedProcess[str]:
    return ctrl_c(pytester, [*REPORT_ARGS, *args], marker="stuck.marker",
                  scored_first=scored_first, reach_within=120, delay=0.2, stop_within=120,
                  sig=signal.SIGTERM, group=group)[0]


def test_sigterm_to_the_process_writes_every_report(suite: pytest.Pytester,
                                                    chinook_copy: Path) -> None:
    ids = _suite(suite, n_before=6, n_after=4)
    done = _terminate(suite, scored_first=6, group=False)  # `kill PID`, a CI runner's timeout
    assert done.returncode == 143, done.stdout[-3000:]
    report = read_report(suite.path / "report.json")
    assert report["run"]["interrupted"] is True
    assert report["run"]["interrupt_reason"] == REASON
    assert report["run"]["exitstatus"] == 143
    assert [c["id"] for c in report["cases"]] == ids[:6]
    assert f"queryeval: FAILED: interrupted ({REASON})" in done.stdout, done.stdout[-3000:]
    check_all_reports(suite.path, ids[:6])
    _no_partial_files(suite.path)


def test_sigterm_to_the_group_under_xdist(suite: pytest.Pytester, chinook_copy: Path) -> None:
    ids = _suite(suite, n_before=8, n_after=8)
    done = _terminate(suite, "-n", "2", "--dist", "load", scored_first=6, group=True)
    assert done.returncode == 143, done.stdout[-3000:]
    report = read_report(suite.path / "report.json")
    assert report["run"]["interrupt_reason"] == REASON
    finished = [c["id"] for c in report["cases"]]
    assert finished and "c-stuck" not in finished and set(finished) <= set(ids)
    assert {c["outcome"] for c in report["cases"]} == {"passed"}
    check_all_reports(suite.path, finished)


def test_sigterm_before_any_case_finished(suite: pytest.Pytester, chinook_copy: Path) -> None:
    _suite(suite, n_before=0, n_after=0)
    done = _terminate(suite, scored_first=0, group=True)
    assert done.returncode == 143, done.stdout[-3000:]
    report = read_report(suite.path / "report.json")
    assert report["cases"] == [] and report["run"]["interrupt_reason"] == REASON
    assert report["run"]["exitstatus"] == 143
    assert f"interrupted before any case finished ({REASON})" in done.stdout


def test_the_handler_is_the_sessions_only(suite: pytest.Pytester) -> None:
    """Installed while a session runs, the one before it given back after (pytest run in
    this process, as a test or an IDE runs it)."""
    suite.makefile(".yaml", test_cases=dump({"kind": "sdmx", "cases": [
        sdmx_case("a", selection(GDP), selection(GDP))]}))
    suite.makeconftest('''
import signal

def pytest_runtest_call(item):
    with open("during.txt", "w") as fh:
        fh.write(getattr(signal.getsignal(signal.SIGTERM), "__qualname__", "?"))
''')

    def before(signum: int, frame: Any) -> None:
        raise AssertionError("not called")

    previous = signal.signal(signal.SIGTERM, before)
    try:
        result = suite.runpytest("--queryeval-json=r.json")
        result.assert_outcomes(passed=1)
        assert signal.getsignal(signal.SIGTERM) is before
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert (suite.path / "during.txt").read_text() == "TermHandler._handle"
    no_traceback(result)


PG_MODEL = """
import pathlib, time

def predict(case):
    if case["id"] == "stuck":
        pathlib.Path("stuck.marker").write_text("x")
        time.sleep(600)
    return "UPDATE track SET unit_price = unit_price + 0.1 WHERE genre_id = 1"
"""


def test_sigterm_drops_the_postgresql_copies(suite: pytest.Pytester,
                                             postgres_server: Any) -> None:
    """A task case made the session's template and copies; SIGTERM while the next case's
    prediction hangs: the session ends through its exit handlers, which drop them all."""
    from tests.fixtures.postgres import TASKS_DATABASE

    suite.makepyfile(pg_model=PG_MODEL)
    suite.makefile(".yaml", queryeval=json.dumps({
        "datasources": {"pg": {"type": "sqlalchemy", "writable": "sandbox", "timeout": 60,
                               "url": postgres_server.tasks_url(TASKS_DATABASE)}},
        "predictions": {"source": "python", "function": "pg_model:predict"}}))
    raise_ = "UPDATE track SET unit_price = unit_price + 0.1 WHERE genre_id = 1"
    suite.makefile(".yaml", test_pg=json.dumps({"kind": "sql", "datasource": "pg", "cases": [
        {"id": cid, "task": "dml", "gold": raise_,
         "checks": [{"query": "SELECT track_id, unit_price FROM track", "compare": "gold"}]}
        for cid in ("first", "stuck")]}))
    proc = subprocess.Popen([sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
                             "--queryeval-json=r.json"], cwd=suite.path, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)
    pid = proc.pid
    try:
        import time

        journal = suite.path / "r.json.journal"
        deadline = time.monotonic() + 120
        while not (suite.path / "stuck.marker").exists() or not journal.exists() \
                or '{"record": ' not in journal.read_text():  # "first" finished
            assert proc.poll() is None, proc.communicate()[0][-3000:]
            assert time.monotonic() < deadline
            time.sleep(0.05)
        made = _copies(postgres_server, pid)
        assert made, "the task case made its template and copies"
        proc.send_signal(signal.SIGTERM)
        out = proc.communicate(timeout=120)[0]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 143, out[-3000:]
    assert _copies(postgres_server, pid) == set(), "every copy and the template dropped"
    report = read_report(suite.path / "r.json")
    assert [c["id"] for c in report["cases"]] == ["first"]
    assert report["run"]["interrupt_reason"] == REASON


def _copies(server: Any, pid: int) -> set[str]:
    import psycopg

    with psycopg.connect(server.conninfo("postgres"), autocommit=True) as conn:
        return {str(r[0]) for r in conn.execute(
            "SELECT datname FROM pg_database WHERE datname LIKE %s",
            (f"qe\\_%\\_{pid}\\_%",)).fetchall()}
