"""Inputs that ended a session (issue 58 item 7): one byte that is not UTF-8 in a predictions
file was an INTERNALERROR with no report (exit 3); a FIFO at an xdist worker's journal path
blocked that worker forever; a JSON report path that is a FIFO nobody reads blocked the end of
the run, and a SIGTERM then tried to write the reports to the same FIFO, so the run never
ended. Each is now a named error or warning, the other reports and the exit status stand, and
the run ends."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import stat
import subprocess
import sys
import threading
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.support import read_report, run_report, write_suite

from .conftest import REPORT_ARGS, ctrl_c, no_traceback
from .test_interrupt import _suite as _interrupted_suite


def _sql_suite(pytester: pytest.Pytester, predictions: str, ids: str = "abc") -> None:
    with sqlite3.connect(pytester.path / "db.sqlite") as con:
        con.execute("CREATE TABLE t (x INTEGER)")
    con.close()
    cases = [{"id": cid, "question": "q", "gold": "SELECT 1"} for cid in ids]
    write_suite(pytester.path, {"datasources": {"db": {"type": "sqlite", "path": "db.sqlite"}},
                                "predictions": {"source": "file", "path": predictions}},
                {"test_q.yaml": {"kind": "sql", "datasource": "db", "cases": cases}})


@pytest.mark.parametrize(("name", "text", "where"), [
    ("preds.jsonl", b'{"id": "a", "predicted": "SELECT 1"}\n'
                    b'{"id": "b", "predicted": "SELECT 1"}\r\n'
                    b'{"id": "c", "predicted": "SELECT \xff 1"}\n', "preds.jsonl:3: "
     "not UTF-8 text: byte 0xff at column 34"),
    ("preds.json", b'{"a": "SELECT 1",\n "b": "SELECT 1",\n "c": "SELECT \xe9"}', "preds.json:3: "
     "not UTF-8 text: byte 0xe9 at column 15"),
], ids=["jsonl", "json"])
def test_a_byte_that_is_not_utf8_is_its_lines_error(pytester: pytest.Pytester, name: str,
                                                    text: bytes, where: str) -> None:
    """As a line that is not JSON: the file is refused naming the line and the column, each
    case is that error, and every report is written (before: INTERNALERROR, exit 3)."""
    _sql_suite(pytester, name)
    (pytester.path / name).write_bytes(text)
    result, report = run_report(pytester, "-p", "no:cacheprovider", fresh=True)
    no_traceback(result)
    assert result.ret == 1
    assert report.outcomes == dict.fromkeys("abc", "error")
    assert report.by_id["a"]["error"] == f"prediction error: {where}"
    assert report.by_id["c"]["error"] == f"prediction error: {where}"


def test_the_same_file_in_utf8_passes(pytester: pytest.Pytester) -> None:
    _sql_suite(pytester, "preds.jsonl")
    (pytester.path / "preds.jsonl").write_text("".join(
        json.dumps({"id": cid, "predicted": "SELECT 1 -- é"}) + "\n" for cid in "abc"))
    result, report = run_report(pytester, "-p", "no:cacheprovider", fresh=True)
    assert result.ret == 0 and report.outcomes == dict.fromkeys("abc", "passed")


def _run(pytester: pytest.Pytester, *args: str, timeout: float = 300,
         ) -> subprocess.CompletedProcess[str]:
    """``pytest *args`` in its own process group; a run that does not end within ``timeout``
    (it would on main: blocked in ``open`` of a FIFO) fails the test, its processes killed."""
    proc = subprocess.Popen([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
                            cwd=pytester.path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        pytest.fail(f"the run did not end within {timeout:g} s:\n{out[-3000:]}")
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, "")


def _passing(pytester: pytest.Pytester, ids: str = "abcd") -> None:
    _sql_suite(pytester, "preds.jsonl", ids)
    (pytester.path / "preds.jsonl").write_text("".join(
        json.dumps({"id": cid, "predicted": "SELECT 1"}) + "\n" for cid in ids))


@pytest.mark.parametrize("name", ["r.json.journal.gw1", "r.json.journal"])
def test_a_fifo_at_a_journal_path_is_refused_and_the_run_goes_on(pytester: pytest.Pytester,
                                                                 name: str) -> None:
    """A FIFO where an xdist worker's journal goes blocked that worker in ``open`` forever
    (the run never ended); the controller's journal path was refused already. Now either is
    a note naming the file, the run has its report and its status, the FIFO is left as it is."""
    _passing(pytester)
    os.mkfifo(pytester.path / name)
    done = _run(pytester, "-n", "2", "--queryeval-json=r.json")
    assert done.returncode == 0, done.stdout[-3000:]
    assert f"queryeval: cannot write the journal {name}: a FIFO (named pipe), not a regular " \
           "file" in done.stdout, done.stdout[-3000:]
    assert "Traceback" not in done.stdout and "INTERNALERROR" not in done.stdout
    assert read_report(pytester.path / "r.json").outcomes == dict.fromkeys("abcd", "passed")
    assert stat.S_ISFIFO(os.lstat(pytester.path / name).st_mode)


def test_a_json_report_fifo_nobody_reads_is_a_named_report_not_written(
        pytester: pytest.Pytester) -> None:
    """The end of the run waited for a reader forever. Now for ``FIFO_WAIT`` seconds: the JSON
    report is named not written, the other reports are written and the status is the run's;
    the journal, which the report would have superseded, is kept."""
    _passing(pytester)
    os.mkfifo(pytester.path / "r.json")
    done = _run(pytester, "--queryeval-json=r.json", "--queryeval-markdown=r.md")
    assert done.returncode == 0, done.stdout[-3000:]
    assert f"error: JSON report NOT written: {pytester.path / 'r.json'}: a FIFO (named pipe) " \
           "that no process opened for reading for 10 s: nothing written" \
           in done.stdout, done.stdout[-3000:]
    assert "queryeval: PASSED" in done.stdout
    assert "4 of 4 judged cases passed" in (pytester.path / "r.md").read_text()
    assert (pytester.path / "r.json.journal").is_file()
    assert stat.S_ISFIFO(os.lstat(pytester.path / "r.json").st_mode)


#: The wait for a reader made longer than the test's timeout (only SIGTERM can end it), and a
#: marker once the session finishes (the reports are being written).
FINISHING_CONFTEST = '''
import pathlib
import pytest
from pytest_queryeval._util import fifo

fifo.FIFO_WAIT = 3600.0

@pytest.hookimpl(hookwrapper=True)
def pytest_sessionfinish(session):
    pathlib.Path("finishing.marker").write_text("x")
    yield
'''


def test_sigterm_while_the_json_report_waits_for_a_reader_ends_the_run(
        pytester: pytest.Pytester) -> None:
    """A scheduler's SIGTERM while the reports are written ends the wait for the FIFO's reader
    at once (before: ignored while finishing, so the run never ended); the run was not
    interrupted, so its status is its cases' (0), and the other reports are written."""
    _passing(pytester)
    pytester.makeconftest(FINISHING_CONFTEST)
    os.mkfifo(pytester.path / "r.json")
    proc = subprocess.Popen([sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
                             "--queryeval-json=r.json", "--queryeval-markdown=r.md"],
                            cwd=pytester.path, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 300
        while not (pytester.path / "finishing.marker").exists():
            assert proc.poll() is None, proc.communicate()[0][-3000:]
            assert time.monotonic() < deadline, "the run never reached its end"
            time.sleep(0.05)
        time.sleep(0.5)
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            pytest.fail("SIGTERM did not end the run waiting for the FIFO's reader")
    assert proc.returncode == 0, out[-3000:]
    assert f"error: JSON report NOT written: {pytester.path / 'r.json'}: a FIFO (named pipe) " \
           "that no process opened for reading, and the process was asked to stop " \
           "(SIGTERM): nothing written" in out, out[-3000:]
    assert "4 of 4 judged cases passed" in (pytester.path / "r.md").read_text()


def test_sigterm_mid_run_with_a_json_report_fifo_nobody_reads(suite: pytest.Pytester,
                                                             chinook_copy: Path) -> None:
    """SIGTERM in the middle of the run: every report but the JSON one is written with the
    finished cases, the JSON one is named not written at once, and the run exits 143 (before:
    the interrupted run's reports waited for the FIFO's reader forever)."""
    ids = _interrupted_suite(suite, n_before=6, n_after=4)
    os.mkfifo(suite.path / "report.json")
    done = ctrl_c(suite, list(REPORT_ARGS), marker="stuck.marker", scored_first=6,
                  reach_within=120, delay=0.2, stop_within=120, sig=signal.SIGTERM,
                  group=False)[0]
    assert done.returncode == 143, done.stdout[-3000:]
    assert f"error: JSON report NOT written: {suite.path / 'report.json'}: a FIFO (named " \
           "pipe) that no process opened for reading, and the process was asked to stop " \
           "(SIGTERM): nothing written" in done.stdout, done.stdout[-3000:]
    assert "FAILED: interrupted (SIGTERM" in (suite.path / "report.md").read_text()
    html = (suite.path / "report.html").read_text()
    assert all(cid in html for cid in ids[:6]) and "c-stuck" not in html
    junit = ET.parse(suite.path / "junit.xml").getroot()
    assert {tc.get("name") for tc in junit.iter("testcase")} >= set(ids[:6])
    assert (suite.path / "report.xlsx").is_file()
    assert stat.S_ISFIFO(os.lstat(suite.path / "report.json").st_mode)


def test_a_fifo_reader_that_stops_reading_cuts_the_report_short(tmp_path: Path) -> None:
    """A reader that opened the FIFO and reads nothing more: the write waits 10 s
    (``FIFO_WAIT``) for it to take the next bytes, then gives up (before: blocked for ever
    once the pipe's buffer was full)."""
    from pytest_queryeval._util import safefile

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # opened, never read
    failed: list[BaseException] = []

    def write() -> None:
        try:
            with safefile.atomic_output(fifo, special="stream") as fh:
                fh.write(b"x" * (4 << 20))  # far beyond a pipe's buffer
        except OSError as exc:
            failed.append(exc)

    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    thread.join(120)
    os.close(reader)
    assert not thread.is_alive(), "the write to a FIFO nobody reads never ended"
    assert [str(e) for e in failed] == [
        "a FIFO (named pipe) whose reader took nothing for 10 s: the report is cut short"]
    assert os.listdir(tmp_path) == ["pipe"]
