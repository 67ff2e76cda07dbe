"""Helpers for the hardening tests: suites written into a pytester directory, run through the
real plugin, and the reports read back."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.support import Report, dump, read_report, run_report

__all__ = ["dump", "read_report", "run_suite"]


@pytest.fixture
def chinook_copy(shared_data: Path, pytester: pytest.Pytester) -> Path:
    """A private, *writable* copy of Chinook inside the suite: read-only must be proven."""
    dst = pytester.path / "chinook.sqlite"
    shutil.copyfile(shared_data / "chinook" / "Chinook_Sqlite.sqlite", dst)
    dst.chmod(0o644)
    return dst


def run_suite(pytester: pytest.Pytester, *args: str, subprocess: bool = False,
              ) -> tuple[pytest.RunResult, Report]:
    """Run the suite with a JSON report; return the result and the parsed report."""
    return run_report(pytester, *args, name="report.json", subprocess=subprocess, fresh=True)


def by_id(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["id"]: c for c in report["cases"]}


def no_traceback(result: pytest.RunResult) -> None:
    text = result.stdout.str() + result.stderr.str()
    assert "Traceback (most recent call last)" not in text, text[-3000:]
    assert "INTERNALERROR" not in text, text[-3000:]
    assert "internal error in" not in text, text[-3000:]


#: Every report the plugin writes, by file name (junit is pytest's own, with our properties).
REPORT_ARGS = ("--queryeval-json=report.json", "--junitxml=junit.xml",
               "--queryeval-xlsx=report.xlsx", "--queryeval-html=report.html",
               "--queryeval-markdown=report.md")


def run_with_all_reports(pytester: pytest.Pytester, *args: str, subprocess: bool = False,
                         ) -> tuple[pytest.RunResult, dict[str, Any]]:
    for name in ("report.json", "junit.xml", "report.xlsx", "report.html", "report.md"):
        (pytester.path / name).unlink(missing_ok=True)
    run = pytester.runpytest_subprocess if subprocess else pytester.runpytest
    result = run(*REPORT_ARGS, *args)
    assert (pytester.path / "report.json").is_file(), result.stdout.str()[-3000:]
    return result, read_report(pytester.path / "report.json")


def check_all_reports(directory: Path, ids: list[str]) -> dict[str, str]:
    """Every report exists, parses, and names every case; returns each report's text."""
    import xml.etree.ElementTree as ET
    import zipfile

    import openpyxl

    texts: dict[str, str] = {}
    report = read_report(directory / "report.json")
    assert sorted(c["id"] for c in report["cases"]) == sorted(ids)
    texts["json"] = (directory / "report.json").read_text(encoding="utf-8")
    junit = ET.parse(directory / "junit.xml").getroot()
    names = {tc.get("name") for tc in junit.iter("testcase")}
    assert set(ids) <= names, (ids, names)
    texts["junit"] = (directory / "junit.xml").read_text(encoding="utf-8")
    wb = openpyxl.load_workbook(directory / "report.xlsx")
    cells = [str(c.value) for ws in wb.worksheets for row in ws.iter_rows() for c in row
             if c.value is not None]
    for cid in ids:
        assert cid in cells, f"{cid} not in the workbook"
    with zipfile.ZipFile(directory / "report.xlsx") as z:  # every part, not just cell values
        texts["xlsx"] = "\n".join(z.read(n).decode("utf-8", "replace") for n in z.namelist())
    html = (directory / "report.html").read_text(encoding="utf-8")
    for cid in ids:
        assert cid in html, f"{cid} not in the HTML report"
    texts["html"] = html
    texts["markdown"] = (directory / "report.md").read_text(encoding="utf-8")
    leftovers = [p.name for p in directory.iterdir() if p.name.endswith(".tmp")
                 or (p.name.startswith(".report") and p.is_file())]
    assert not leftovers, f"partial files left behind: {leftovers}"
    return texts


def default_sigint() -> None:
    """``preexec_fn`` of the Ctrl-C tests' pytest processes: SIGINT back to its default, so
    that Python installs its KeyboardInterrupt handler even when this test process inherited
    SIGINT ignored (a shell starts a background job so: ``make test &``), as a terminal's
    foreground process would have it."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


#: A conftest for the Ctrl-C tests' suites: each case's id is appended to ``scored.txt`` once
#: its report is made. Predictions are requested ahead of scoring, so the stuck prediction's
#: marker appears while earlier cases may still be scored: the tests wait for both.
SCORED_CONFTEST = '''
def pytest_runtest_logreport(report):
    if report.when == "call":
        with open("scored.txt", "a") as fh:
            fh.write(report.nodeid.rsplit("::", 1)[-1] + "\\n")
'''


def scored(directory: Path) -> list[str]:
    """The ids ``SCORED_CONFTEST`` recorded so far."""
    path = directory / "scored.txt"
    return path.read_text().split() if path.exists() else []


def ctrl_c(pytester: pytest.Pytester, args: list[str], *, marker: str, scored_first: int = 0,
           reach_within: float, delay: float, stop_within: float,
           sig: int = signal.SIGINT, group: bool = True,
           ) -> tuple[subprocess.CompletedProcess[str], float]:
    """Run ``pytest *args`` in its own process group, wait for ``marker`` (the stuck step has
    begun) and for ``scored_first`` cases to be scored (predictions are requested ahead, so the
    marker alone does not say the earlier cases are done), then ``delay`` seconds, and send
    SIGINT to the group as a terminal's Ctrl-C does (``sig``: another signal, SIGTERM as a
    scheduler sends it; ``group=False``: to the pytest process alone, as ``kill PID``). The
    output, and the seconds from the signal to the end of the process (at most
    ``stop_within``, or the test fails)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=pytester.path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True, preexec_fn=default_sigint)
    stuck = pytester.path / marker
    deadline = time.monotonic() + reach_within
    while not stuck.exists() or len(scored(pytester.path)) < scored_first:
        assert proc.poll() is None, proc.communicate()[0][-3000:]
        assert time.monotonic() < deadline, f"the run never reached the step that writes {marker}"
        time.sleep(0.05)
    time.sleep(delay)
    if group:
        os.killpg(proc.pid, sig)
    else:
        os.kill(proc.pid, sig)
    sent = time.monotonic()
    try:
        out, _ = proc.communicate(timeout=stop_within)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        pytest.fail(f"the session did not stop within {stop_within:g} s of the signal:\n"
                    f"{out[-3000:]}")
    took = time.monotonic() - sent
    while True:  # nothing of the run is left behind (an xdist worker stuck in a query...)
        try:
            os.killpg(proc.pid, 0)
        except ProcessLookupError:
            break
        if time.monotonic() - sent > stop_within:
            os.killpg(proc.pid, signal.SIGKILL)
            pytest.fail("a process of the interrupted run was still running")
        time.sleep(0.1)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, ""), took
