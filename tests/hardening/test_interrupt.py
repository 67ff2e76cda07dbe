"""Ctrl-C mid-run: SIGINT to the process group of a real pytest process (as a terminal sends
it) leaves a valid JSON report of the finished cases, the other reports complete, and no
partial or temporary files."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from .conftest import (
    REPORT_ARGS,
    SCORED_CONFTEST,
    check_all_reports,
    ctrl_c,
    dump,
    read_report,
)

#: A predictor that hangs on case "c-stuck" after announcing it (so the test knows the run is
#: mid-way), and answers the others at once.
SLOW_MODEL = """
import pathlib, time

def predict(case):
    if case["id"] == "c-stuck":
        pathlib.Path("stuck.marker").write_text("x")
        time.sleep(120)
    return "SELECT count(*) FROM genre"
"""


def _suite(pytester: pytest.Pytester, n_before: int, n_after: int) -> list[str]:
    pytester.makepyfile(slow_model=SLOW_MODEL)
    pytester.makeconftest(SCORED_CONFTEST)
    pytester.makefile(".yaml", queryeval=dump({
        "datasources": {"local": {"type": "sqlite", "path": "chinook.sqlite"}},
        "predictions": {"source": "python", "function": "slow_model:predict"}}))
    ids = [f"c-{i:02d}" for i in range(n_before)] + ["c-stuck"] + \
          [f"d-{i:02d}" for i in range(n_after)]
    pytester.makefile(".yaml", test_cases=dump({
        "kind": "sql", "datasource": "local", "thresholds": {"execution_accuracy": 1.0},
        "cases": [{"id": i, "gold": "SELECT count(*) FROM genre"} for i in ids]}))
    return ids


def _interrupt(pytester: pytest.Pytester, *args: str, scored_first: int = 0,
               ) -> subprocess.CompletedProcess[str]:
    """SIGINT once the stuck case's prediction was requested and ``scored_first`` cases were
    scored."""
    return ctrl_c(pytester, [*REPORT_ARGS, *args], marker="stuck.marker",
                  scored_first=scored_first, reach_within=120, delay=0.2, stop_within=120)[0]


def _no_partial_files(directory: Path) -> None:
    """Only the suite, the reports, and the journal an interrupted run keeps beside its JSON
    report (the controller's, and each xdist worker's answers: docs/reports.md)."""
    expected = {"chinook.sqlite", "queryeval.yaml", "test_cases.yaml", "slow_model.py",
                "stuck.marker", "report.json", "junit.xml", "report.xlsx", "report.html",
                "report.md", "tox.ini", "__pycache__", "conftest.py", "scored.txt",
                "report.json.journal", "report.json.journal.gw0", "report.json.journal.gw1"}
    assert {p.name for p in directory.iterdir()} <= expected, sorted(
        p.name for p in directory.iterdir())


def test_ctrl_c_serial(suite: pytest.Pytester, chinook_copy: Path) -> None:
    ids = _suite(suite, n_before=6, n_after=4)
    done = _interrupt(suite, scored_first=6)
    assert done.returncode == pytest.ExitCode.INTERRUPTED, done.stdout[-3000:]
    assert "KeyboardInterrupt" in done.stdout
    report = read_report(suite.path / "report.json")
    assert report["run"]["interrupted"] is True
    finished = [c["id"] for c in report["cases"]]
    assert finished == ids[:6], "exactly the finished cases, in order"
    assert {c["outcome"] for c in report["cases"]} == {"passed"}
    assert report["aggregates"]["overall"]["count"] == 6
    check_all_reports(suite.path, ids[:6])
    _no_partial_files(suite.path)


def test_ctrl_c_under_xdist(suite: pytest.Pytester, chinook_copy: Path) -> None:
    ids = _suite(suite, n_before=8, n_after=8)
    # the workers request every prediction at the start (the marker comes at once): wait
    # until cases are scored while the stuck one's request hangs
    done = _interrupt(suite, "-n", "2", "--dist", "load", scored_first=6)
    assert done.returncode == pytest.ExitCode.INTERRUPTED, done.stdout[-3000:]
    report = read_report(suite.path / "report.json")
    assert report["run"]["interrupted"] is True
    finished = [c["id"] for c in report["cases"]]
    assert finished, "the other worker went on while one was stuck"
    assert "c-stuck" not in finished
    assert set(finished) <= set(ids)
    assert len(finished) == len(set(finished))
    assert {c["outcome"] for c in report["cases"]} == {"passed"}
    check_all_reports(suite.path, finished)
    _no_partial_files(suite.path)
