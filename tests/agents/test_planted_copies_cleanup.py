"""A planted copy (a copy of the user's database with canaries) left by a killed run is removed
by the next run that plants: the exit handler that removes a run's copies never runs on
SIGKILL, and a day of killed CI shards and resumed runs had left 323 copies (266 MB) in the
temporary folder of the machine this was found on."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from pytest_queryeval.agents.canaries import Target
from pytest_queryeval.agents.copies import planted_for

ROOT = Path(__file__).resolve().parents[2]
CHINOOK = ROOT / "example_suite" / "data" / "chinook.sqlite"
SPEC = {"type": "sqlite", "path": str(CHINOOK)}

#: A run that plants a copy, says where, and is killed before its exit handlers run.
KILLED = f"""
import os, signal
from pytest_queryeval.agents.canaries import Target
from pytest_queryeval.agents.copies import planted_for
planted = planted_for({SPEC!r}, [Target("Employee")], seed=7)
print(planted.path, flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_killed_runs_planted_copy_is_removed_by_the_next_run() -> None:
    child = subprocess.run([sys.executable, "-c", KILLED], capture_output=True, text=True,
                           env={**os.environ, "PYTHONPATH": str(ROOT / "src")}, timeout=120)
    assert child.returncode == -signal.SIGKILL, child.stderr
    left = Path(child.stdout.strip())
    folder = left.parent
    assert left.is_file() and folder.parent == Path(tempfile.gettempdir())
    assert folder.name.startswith("queryeval-planted-")
    mine = planted_for(SPEC, [Target("Employee")], seed=8)  # another key: a new copy
    assert mine.path is not None and mine.path.is_file()
    assert mine.path.parent.name.startswith(f"queryeval-planted-{os.getpid()}-")
    assert not folder.exists()  # the killed run's copy, whole
