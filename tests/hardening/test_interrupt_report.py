"""Ctrl-C and aborts always leave a report: interrupted during collection, or while the only
case is stuck, the session still writes ``report.json`` (zero cases, ``run.interrupted`` and
the reason), so CI that uploads it finds one and sees why it is empty."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.sdmx_cases import GDP, sdmx_case, selection

from .conftest import REPORT_ARGS, check_all_reports, ctrl_c, dump, read_report
from .test_interrupt import _no_partial_files, _suite

CTRL_C = "KeyboardInterrupt: Ctrl-C or SIGINT"

#: Announces that the plugin has begun collecting the (large) case file; the collection itself
#: is the plugin's real work: parsing 50,000 cases and making their items takes seconds.
COLLECTING_CONFTEST = '''
import pathlib

def pytest_collectstart(collector):
    if collector.nodeid == "test_cases.yaml":
        pathlib.Path("collecting.marker").write_text("x")
'''


def _zero_case_report(directory: Path, reason: str) -> dict:
    report = read_report(directory / "report.json")
    assert report["cases"] == []
    assert report["run"]["interrupted"] is True
    assert report["run"]["interrupt_reason"] == reason
    assert report["run"]["exitstatus"] == pytest.ExitCode.INTERRUPTED
    assert report["aggregates"]["overall"]["count"] == 0
    return report


def test_ctrl_c_while_the_only_case_is_stuck(suite: pytest.Pytester, chinook_copy: Path) -> None:
    _suite(suite, n_before=0, n_after=0)  # one case, "c-stuck", whose prediction hangs
    done = ctrl_c(suite, [*REPORT_ARGS], marker="stuck.marker", reach_within=120, delay=0.2,
                  stop_within=120)[0]
    assert done.returncode == pytest.ExitCode.INTERRUPTED, done.stdout[-3000:]
    _zero_case_report(suite.path, CTRL_C)
    check_all_reports(suite.path, [])  # the other reports too, with no case
    assert "interrupted before any case finished (KeyboardInterrupt: Ctrl-C or SIGINT)" \
        in done.stdout
    _no_partial_files(suite.path)


def test_ctrl_c_during_collection(suite: pytest.Pytester) -> None:
    suite.makeconftest(COLLECTING_CONFTEST)
    suite.makefile(".yaml", queryeval=dump({
        "datasources": {"local": {"type": "sqlite", "path": "chinook.sqlite"}}}))
    suite.makefile(".yaml", test_cases=dump({
        "kind": "sql", "datasource": "local",
        "cases": [{"id": f"c-{i:05d}", "gold": "SELECT 1"} for i in range(50_000)]}))
    done = ctrl_c(suite, ["--queryeval-json=report.json"], marker="collecting.marker",
                  reach_within=120, delay=0.2, stop_within=120)[0]
    assert done.returncode == pytest.ExitCode.INTERRUPTED, done.stdout[-3000:]
    assert "collected 0 items" in done.stdout, done.stdout[-3000:]  # stopped mid-collection
    report = _zero_case_report(suite.path, CTRL_C)
    assert "suite" not in report["run"]  # the suite was never known


def test_pytest_exit_before_any_case_leaves_a_report(suite: pytest.Pytester) -> None:
    """An abort from a hook (``pytest.exit``, e.g. a fixture server that did not start)."""
    suite.makeconftest('''
import pytest

def pytest_collection_finish(session):
    pytest.exit("the database server did not start")
''')
    suite.makefile(".yaml", test_cases=dump({"kind": "sdmx", "cases": [
        sdmx_case("a", selection(GDP), selection(GDP))]}))
    result = suite.runpytest("--queryeval-json=report.json")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    _zero_case_report(suite.path, "pytest.exit: the database server did not start")


def test_collection_errors_stop_the_session_with_a_report(suite: pytest.Pytester) -> None:
    """pytest's own abort: "Interrupted: 1 error during collection" (exit 2), no case run."""
    suite.makepyfile(test_broken="def test_x(:\n")
    suite.makefile(".yaml", test_cases=dump({"kind": "sdmx", "cases": [
        sdmx_case("a", selection(GDP), selection(GDP))]}))
    result = suite.runpytest("--queryeval-json=report.json")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    _zero_case_report(suite.path, "1 error during collection")
