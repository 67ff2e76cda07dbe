"""Preempted and killed shards, for real (issue 54 item 6): the generated suite's three shards,
one of them stopped mid-run and run again with the same command, the documented line
(``--queryeval-json shard-I.json --queryeval-resume shard-I.json``); the retry asks the
stand-in model only for what was not answered (it counts its requests), and ``queryeval
merge`` of the shards equals the uninterrupted serial run.

* a three-task SLURM array (``sbatch --array=1-3 --requeue``) on the single-node cluster of
  tests/fixtures/slurm.py: task 2 is preempted with ``scancel --full --signal=TERM`` (it writes
  its reports, interrupted, and exits 143), requeued (``scontrol requeue``: slurmctld starts
  it again once its hold is over, which the test waits for in slurmctld's own record), stopped
  again on its second try with ``--signal=KILL`` (no report: only the journal), requeued
  again, and finishes;
* a plain shard killed with SIGKILL, then the same command again.

Shard 2 of 3 holds ann-total, big-orders, customers, known-gap, on-two-engines[shop] and
two-readings (hashed ids): the stand-in hangs on known-gap while the file ``hold`` exists, so
when the shard is stopped the three cases before it are scored, the two after it are answered
(requested ahead) but not scored, and known-gap is the one case in flight."""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.fixtures.slurm import CRED_EXPIRE, SCHED_INTERVAL, Slurm
from tests.support import read_report

from .generated import ANSWERS, make_suite
from .support import assert_same, env, run_merge, run_pytest
from .test_slurm_array import documented_line

#: One xdist worker runs the whole module: its module-scoped runs are made once, not
#: once per worker (``tests/together.py``).
pytestmark = pytest.mark.xdist_group("tests.e2e.test_preempted_shards")

SHARDS = 3
PREEMPTED = 2
SCORED_FIRST = ["ann-total", "big-orders", "customers"]
AHEAD = ["on-two-engines", "two-readings"]  # on-two-engines[shop]: its [duck] is shard 1's
IN_FLIGHT = "known-gap"
#: The generated suite's stand-in, counting each request (calls.log, calls-I.log in task I of
#: an array) and hanging on
#: known-gap while the file "hold" exists.
COUNTING_STANDIN = f'''"""A stand-in for a live model service that counts its requests and hangs on one case
while told to (tests/e2e/test_preempted_shards.py)."""
import json, os, pathlib, time

ANSWERS = json.loads({__import__("json").dumps(ANSWERS)!r})


def predict(case):
    cid = case["id"].split("[")[0]
    task = os.environ.get("SLURM_ARRAY_TASK_ID")  # the tasks of an array run at once
    with open(f"calls-{{task}}.log" if task else "calls.log", "a") as fh:
        fh.write(cid + "\\n")
    if cid == {IN_FLIGHT!r} and os.path.exists("hold"):
        pathlib.Path("stuck.marker").write_text("x")
        while os.path.exists("hold"):
            time.sleep(0.2)
    answer = ANSWERS[cid]
    return answer[str(case["turn"])] if isinstance(answer, dict) else answer
'''


def _suite(folder: Path) -> Path:
    suite = make_suite(folder)
    (suite / "standin_model.py").write_text(COUNTING_STANDIN, encoding="utf-8")
    return suite


def _calls(suite: Path, task: int | None = None) -> list[str]:
    log = suite / ("calls.log" if task is None else f"calls-{task}.log")
    calls = sorted(log.read_text().split()) if log.exists() else []
    log.unlink(missing_ok=True)
    return calls


def _journal(suite: Path, shard: int) -> tuple[int, int]:
    """(records, answers) the journal files of shard-I.json hold now."""
    records = answers = 0
    for file in suite.glob(f"shard-{shard}.json.journal*"):
        for line in file.read_text(errors="replace").splitlines():
            records += line.startswith('{"record": ')
            answers += line.startswith('{"answer": ')
    return records, answers


def _wait(ready: object, what: str, timeout: float = 300) -> None:
    assert callable(ready)
    deadline = time.monotonic() + timeout
    while not ready():
        assert time.monotonic() < deadline, f"timed out waiting until {what}"
        time.sleep(0.2)


def _stuck(suite: Path, records: int) -> bool:
    """The shard asked for known-gap (hanging), scored ``records`` cases and journaled the
    answers of the others."""
    got = _journal(suite, PREEMPTED)
    return (suite / "stuck.marker").exists() and got[0] >= records \
        and got[1] >= len(SCORED_FIRST) + len(AHEAD)


def _serial(suite: Path) -> dict:
    serial = run_pytest(suite, "serial", formats=(), junit=False)
    assert serial.status == 1, serial.explain()  # the suite has failing cases
    assert not list(suite.glob("serial.json.journal*")), "the report superseded its journal"
    _calls(suite)
    return serial.json


def _merged(suite: Path, reference: dict) -> None:
    shards = [suite / f"shard-{i}.json" for i in range(1, SHARDS + 1)]
    merged = run_merge(suite, "merged", shards, formats=())
    assert merged.status == 1, merged.explain()
    assert_same(reference, merged.json, "the merged shards, one preempted, versus the serial run")


def test_a_killed_plain_shard_is_run_again_with_the_same_command(tmp_path: Path) -> None:
    suite = _suite(tmp_path / "suite")
    reference = _serial(suite)
    line = shlex.split(documented_line().replace("${SLURM_ARRAY_TASK_ID}", "{i}"))
    line = line[line.index("pytest") + 1:]
    assert line[:3] == ["suite", "--queryeval-shard", "auto"]
    command = [sys.executable, "-m", "pytest", ".", "-p", "no:cacheprovider", "-p",
               "no:randomly", "--queryeval-no-step-summary", *line[3:]]

    def shard(i: int) -> list[str]:
        return [a.replace("{i}", str(i)) for a in command] + [f"--queryeval-shard={i}/{SHARDS}"]

    for i in (1, 3):
        done = subprocess.run(shard(i), cwd=suite, capture_output=True, text=True,
                              timeout=600, check=False, env=env())
        assert done.returncode == 1, done.stdout[-3000:]
    _calls(suite)
    (suite / "hold").write_text("")
    proc = subprocess.Popen(shard(PREEMPTED), cwd=suite, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=env(),
                            start_new_session=True)
    try:
        _wait(lambda: _stuck(suite, len(SCORED_FIRST)) or proc.poll() is not None,
              "the shard hangs on known-gap")
        assert proc.poll() is None, proc.communicate()[0][-3000:]
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    assert proc.returncode == -signal.SIGKILL
    assert not (suite / f"shard-{PREEMPTED}.json").exists()
    assert _calls(suite) == sorted([*SCORED_FIRST, *AHEAD, IN_FLIGHT])
    (suite / "hold").unlink()
    again = subprocess.run(shard(PREEMPTED), cwd=suite, capture_output=True, text=True,
                           timeout=600, check=False, env=env())
    assert again.returncode == 1, again.stdout[-3000:]
    assert _calls(suite) == [IN_FLIGHT], "only the case in flight is asked again"
    _merged(suite, reference)


#: The states of an array task that no longer runs.
ENDED = ("FAILED", "COMPLETED", "CANCELLED", "PREEMPTED", "NODE_FAIL", "REQUEUED", "TIMEOUT",
         "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE")


def _record(cluster: Slurm, job: str) -> str:
    """``scontrol show job -o``: slurmctld's record of one array task, on one line."""
    return cluster.run("scontrol", "show", "job", "-o", job, timeout=30).stdout


def _task_state(cluster: Slurm, job: str) -> tuple[str, int]:
    """(JobState, Restarts) of one array task."""
    out = _record(cluster, job)
    state = re.search(r"\bJobState=(\S+)", out)
    restarts = re.search(r"\bRestarts=(\d+)", out)
    return (state.group(1) if state else "?", int(restarts.group(1)) if restarts else 0)


def _requeue(cluster: Slurm, task: str, restarts: int, logs: Callable[[], str]) -> None:
    """``scontrol requeue``, then a bounded poll of slurmctld's own record until the task has
    started again (its ``restarts``-th try). slurmctld holds a requeued job for its credential's
    lifetime (``Reason=BeginTime``, ``CRED_EXPIRE`` + 1 s) and the next scheduling pass starts
    it; its start is never forced (``StartTime=now`` raced with slurmd's revocation of the
    ended try's credential, so the new try failed at once or stayed pending, launch failed and
    held: 3 runs in 10). A try that cannot start fails the test at once, with the record."""
    done = cluster.run("scontrol", "requeue", task, timeout=60)
    assert done.returncode == 0, f"{done.stderr}\n{logs()}"
    deadline = time.monotonic() + CRED_EXPIRE + 1 + SCHED_INTERVAL + 240
    while True:
        record = _record(cluster, task)
        state = re.search(r"\bJobState=(\S+)", record)
        tries = re.search(r"\bRestarts=(\d+)", record)
        if state and tries and int(tries.group(1)) >= restarts and state.group(1) != "PENDING":
            return
        reason = re.search(r"\bReason=(\S+)", record)
        assert not reason or not re.search(r"(?i)held|launch|fail", reason.group(1)), \
            f"try {restarts + 1} of {task} cannot start:\n{record}\n{logs()}"
        assert time.monotonic() < deadline, \
            f"try {restarts + 1} of {task} not started by slurmctld:\n{record}\n{logs()}"
        time.sleep(0.5)


def test_a_preempted_slurm_task_is_requeued_and_resumes_from_its_journal(
        slurm_cluster: Slurm, tmp_path: Path) -> None:
    suite = _suite(tmp_path / "suite")
    reference = _serial(suite)
    line = documented_line().replace("pytest suite", f"{shlex.quote(sys.executable)} -m pytest . "
                                     "-p no:cacheprovider -p no:randomly", 1)
    assert "--queryeval-resume" in line, "the documented line resumes its own report"
    assert line.startswith("exec "), "pytest is the task's process: SIGTERM reaches it"
    script = suite / "eval.sh"
    script.write_text(f"#!/bin/bash\n{line}\n", encoding="utf-8")
    (suite / "hold").write_text("")
    submitted = slurm_cluster.run(
        "sbatch", "--parsable", f"--array=1-{SHARDS}", "--requeue", f"--chdir={suite}",
        f"--output={suite}/task-%a.out", "--open-mode=append", str(script), timeout=60)
    assert submitted.returncode == 0, submitted.stderr
    job = submitted.stdout.strip().split(";")[0]
    task = f"{job}_{PREEMPTED}"

    def logs() -> str:
        outputs = "\n".join(p.read_text(errors="replace") for p in sorted(suite.glob("task-*.out")))
        return f"{outputs}\n{_record(slurm_cluster, task)}\n{slurm_cluster.logs()}"

    def ended() -> bool:
        return _task_state(slurm_cluster, task)[0] in ENDED

    def hangs() -> bool:
        """The try hangs on known-gap; one that ended without getting there fails at once."""
        if (suite / "stuck.marker").exists():
            return True
        assert not ended(), f"the try of {task} ended before known-gap\n{logs()}"
        return False

    # try 1: SIGTERM, as a preemption sends it; the task writes its reports and exits 143
    _wait(lambda: _stuck(suite, len(SCORED_FIRST)), f"task {task} hangs on known-gap\n{logs()}")
    stop = slurm_cluster.run("scancel", "--full", "--signal=TERM", task, timeout=60)
    assert stop.returncode == 0, stop.stderr
    _wait(ended, f"task {task} ends on SIGTERM")
    assert (suite / f"shard-{PREEMPTED}.json").is_file(), \
        f"{_task_state(slurm_cluster, task)}\n{logs()}"
    first = read_report(suite / f"shard-{PREEMPTED}.json")
    assert first["run"]["interrupted"] is True, logs()
    assert first["run"]["interrupt_reason"].startswith("SIGTERM: ")
    assert first["run"]["exitstatus"] == 143
    assert sorted(c["id"] for c in first["cases"]) == SCORED_FIRST
    assert _calls(suite, PREEMPTED) == sorted([*SCORED_FIRST, *AHEAD, IN_FLIGHT])

    # try 2: requeued, the same line resumes; SIGKILL while known-gap hangs again
    (suite / "stuck.marker").unlink()
    _requeue(slurm_cluster, task, 1, logs)
    _wait(hangs, f"try 2 of {task} hangs\n{logs()}")
    assert _calls(suite, PREEMPTED) == [IN_FLIGHT], "try 2 asks only the case in flight"
    kill = slurm_cluster.run("scancel", "--full", "--signal=KILL", task, timeout=60)
    assert kill.returncode == 0, kill.stderr
    _wait(ended, f"task {task} ends on SIGKILL")

    # try 3: requeued again, the model answers: the task finishes
    (suite / "hold").unlink()
    _requeue(slurm_cluster, task, 2, logs)
    for other in (1, 3):
        _wait(lambda i=other: _task_state(slurm_cluster, f"{job}_{i}")[0] in
              ("COMPLETED", "FAILED"), f"task {other} ends\n{logs()}", timeout=600)
    _wait(lambda: _task_state(slurm_cluster, task)[0] in ("COMPLETED", "FAILED")
          and (suite / f"shard-{PREEMPTED}.json").is_file()
          and not read_report(suite / f"shard-{PREEMPTED}.json")["run"].get("interrupted"),
          f"try 3 of {task} finishes\n{logs()}", timeout=600)
    assert _task_state(slurm_cluster, task)[1] >= 2, "requeued twice"
    calls = _calls(suite, PREEMPTED)
    assert calls.count(IN_FLIGHT) == 1 and not set(calls) & {*SCORED_FIRST, *AHEAD}, calls
    assert not list(suite.glob(f"shard-{PREEMPTED}.json.journal*")), logs()
    _merged(suite, reference)
