"""A killed run keeps what it finished (issue 54 items 1 and 2): ``--queryeval-json r.json``
journals each finished record and each live answer as it comes (``r.json.journal``), and the
retry is the same command as the first attempt (``--queryeval-resume r.json``: a missing file
is nothing to carry). Real pytest processes are killed with SIGKILL and SIGTERM at a point the
stand-in model makes deterministic: it hangs on case ``c5`` once the others are asked, so the
only case in flight is ``c5``, and the retry may ask only it again."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.e2e.support import assert_same
from tests.sdmx_cases import GDP, MEX, dump, sdmx_case, selection
from tests.support import read_report

IDS = [f"c{i}" for i in range(10)]
STUCK = "c5"
#: The stand-in model: counts its requests in calls.log, answers c1 wrongly (a carried failure
#: must still fail the run) and hangs on c5 while the file "block" exists.
MODEL = f"""
import os, pathlib, time
GOOD = {json.dumps(selection(GDP))}
BAD = {json.dumps(selection(MEX))}
def predict(case):
    with open("calls.log", "a") as fh:
        fh.write(case["id"] + "\\n")
    if case["id"] == {STUCK!r} and os.path.exists("block"):
        pathlib.Path("stuck.marker").write_text("x")
        time.sleep(600)
    return BAD if case["id"] == "c1" else GOOD
"""
COMMAND = ("--queryeval-json=r.json", "--queryeval-resume=r.json")


def _suite(path: Path) -> None:
    (path / "model.py").write_text(MODEL)
    (path / "queryeval.yaml").write_text(dump({"predictions": {
        "source": "python", "function": "model:predict", "concurrency": 2}}))
    (path / "test_cases.yaml").write_text(dump({
        "kind": "sdmx", "thresholds": {"macro_precision": 1.0},
        "cases": [sdmx_case(cid, selection(GDP)) for cid in IDS]}))


def _pytest(*args: str) -> list[str]:
    return [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly", *args]


def _calls(path: Path) -> list[str]:
    log = path / "calls.log"
    calls = sorted(log.read_text().split()) if log.exists() else []
    log.unlink(missing_ok=True)
    return calls


def _journal(path: Path) -> tuple[int, int]:
    """(records, answers) the journal files of r.json hold now."""
    records = answers = 0
    for file in path.glob("r.json.journal*"):
        for line in file.read_text(errors="replace").splitlines():
            records += line.startswith('{"record": ')
            answers += line.startswith('{"answer": ')
    return records, answers


def _stuck(path: Path, records: int) -> bool:
    """c5's request hangs, every other answer and at least ``records`` records journaled."""
    got_records, got_answers = _journal(path)
    return (path / "stuck.marker").exists() and got_records >= records \
        and got_answers >= len(IDS) - 1


def _kill_when_stuck(path: Path, sig: int, *args: str, records: int = 5,
                     ) -> subprocess.CompletedProcess[str]:
    """Run the command, wait until every answer but c5's and ``records`` records are
    journaled (c5's request hangs: the one case in flight), then send ``sig`` to its process
    group as a scheduler does."""
    (path / "block").write_text("")
    proc = subprocess.Popen(_pytest(*COMMAND, *args), cwd=path, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    deadline = time.monotonic() + 180
    try:
        while not _stuck(path, records):
            assert proc.poll() is None, proc.communicate()[0][-3000:]
            assert time.monotonic() < deadline, f"never stuck: journal {_journal(path)}"
            time.sleep(0.05)
        os.killpg(proc.pid, sig)
        out = proc.communicate(timeout=120)[0]
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    (path / "block").unlink()
    (path / "stuck.marker").unlink()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, "")


def _retry(path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(_pytest(*COMMAND, *args), cwd=path, capture_output=True, text=True,
                          timeout=300, check=False)


def _uninterrupted(tmp_path: Path) -> dict:
    other = tmp_path / "uninterrupted"
    other.mkdir()
    for name in ("tox.ini",):
        (other / name).write_text((tmp_path / name).read_text())
    _suite(other)
    done = subprocess.run(_pytest("--queryeval-json=r.json"), cwd=other, capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 1, done.stdout[-3000:]
    return read_report(other / "r.json")


@pytest.fixture
def killable(suite: pytest.Pytester) -> Path:
    _suite(suite.path)
    return suite.path


def test_sigkill_loses_only_the_case_in_flight(killable: Path) -> None:
    path = killable
    killed = _kill_when_stuck(path, signal.SIGKILL)
    assert killed.returncode == -signal.SIGKILL
    assert not (path / "r.json").exists()  # killed: no report, but the journal
    first = _calls(path)
    assert first == IDS, first  # every case was asked once, c5's request still hanging
    retry = _retry(path)
    assert retry.returncode == 1, retry.stdout[-3000:]  # c1 fails, carried or not
    assert _calls(path) == [STUCK], "only the case in flight is asked again"
    assert "carried: 5 cases scored by an earlier attempt, not run again (5 from " \
           "r.json.journal; --queryeval-resume)" in retry.stdout, retry.stdout[-3000:]
    report = read_report(path / "r.json")
    assert [c["id"] for c in report["cases"]] == IDS
    assert_same(report, _uninterrupted(path), "the resumed run versus one never killed")
    assert not list(path.glob("r.json.journal*")), "the report supersedes the journal"


def test_sigkill_under_xdist_keeps_each_workers_answers(killable: Path) -> None:
    path = killable
    killed = _kill_when_stuck(path, signal.SIGKILL, "-n", "2", records=1)
    assert killed.returncode == -signal.SIGKILL
    assert {p.name for p in path.glob("r.json.journal*")} >= {"r.json.journal"}
    assert _calls(path) == IDS
    retry = _retry(path, "-n", "2")
    assert retry.returncode == 1, retry.stdout[-3000:]
    assert _calls(path) == [STUCK], "only the case in flight is asked again"
    assert_same(read_report(path / "r.json"), _uninterrupted(path),
                "the resumed run versus one never killed")
    assert not list(path.glob("r.json.journal*"))


def test_sigterm_writes_the_reports_and_the_retry_asks_only_the_case_in_flight(
        killable: Path) -> None:
    path = killable
    stopped = _kill_when_stuck(path, signal.SIGTERM)
    assert stopped.returncode == 143, stopped.stdout[-3000:]
    report = read_report(path / "r.json")
    assert report["run"]["interrupted"] is True
    assert report["run"]["interrupt_reason"].startswith("SIGTERM: ")
    assert report["run"]["exitstatus"] == 143
    assert [c["id"] for c in report["cases"]] == IDS[:5]
    assert "interrupted (SIGTERM: " in stopped.stdout
    assert (path / "r.json.journal").is_file(), "kept: the answers of unscored cases"
    assert _calls(path) == IDS
    retry = _retry(path)
    assert retry.returncode == 1, retry.stdout[-3000:]
    assert _calls(path) == [STUCK]
    assert_same(read_report(path / "r.json"), _uninterrupted(path),
                "the resumed run versus one never stopped")


def test_the_first_attempt_of_the_retry_command_has_nothing_to_carry(killable: Path) -> None:
    path = killable
    done = _retry(path)
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    assert "queryeval: --queryeval-resume r.json: no report or journal of an earlier attempt " \
           "yet: nothing to carry, every case runs" in done.stdout
    assert _calls(path) == IDS
    assert not list(path.glob("r.json.journal*"))
    again = _retry(path)  # the same command once more: everything carried from the report
    assert again.returncode == 1
    assert _calls(path) == []


#: The stand-in as a command (a cacheable live source): the case on stdin, the answer on
#: stdout; counts its requests and hangs on c5 while "block" exists.
COMMAND_MODEL = f"""
import json, os, pathlib, sys, time
case = json.load(sys.stdin)
with open("calls.log", "a") as fh:
    fh.write(case["id"] + "\\n")
if case["id"] == {STUCK!r} and os.path.exists("block"):
    pathlib.Path("stuck.marker").write_text("x")
    time.sleep(600)
print(json.dumps({json.dumps(selection(GDP))}))
"""


def test_the_prediction_cache_keeps_each_answer_as_it_arrives(suite: pytest.Pytester) -> None:
    """``--queryeval-prediction-cache`` without a JSON report (no journal): a killed run's
    answers are each an entry already, and the next run asks only the case in flight."""
    path = suite.path
    (path / "model_cmd.py").write_text(COMMAND_MODEL)
    (path / "queryeval.yaml").write_text(dump({"predictions": {
        "source": "command", "command": [sys.executable, "model_cmd.py"], "concurrency": 2}}))
    (path / "test_cases.yaml").write_text(dump({
        "kind": "sdmx", "cases": [sdmx_case(cid, selection(GDP)) for cid in IDS]}))
    cache = path / "answers"
    command = _pytest("--queryeval-prediction-cache=answers")
    (path / "block").write_text("")
    proc = subprocess.Popen(command, cwd=path, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 180
        while len(list(cache.glob("*/*.json"))) < len(IDS) - 1 \
                or not (path / "stuck.marker").exists():
            assert proc.poll() is None, proc.communicate()[0][-3000:]
            assert time.monotonic() < deadline, sorted(p.name for p in cache.glob("*/*"))
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    assert _calls(path) == IDS
    (path / "block").unlink()
    again = subprocess.run(command, cwd=path, capture_output=True, text=True, timeout=300,
                           check=False)
    assert again.returncode == 0, again.stdout[-3000:]
    assert _calls(path) == [STUCK]
    assert "prediction cache: 9 of 10 answers from the cache, 1 requested" in again.stdout
