"""The GitHub Actions matrix of docs/live-models.md, its ``run:`` steps executed as written
(issue 43 item 2): four shards of the README's two-case suite, so at least one shard selects no
case, each step's shell line exits 0 (a failing case is judged by the merge: ``|| [ $? -eq 1 ]``),
and the gate job's merge finds every shard and fails on the suite's failing case and gate, as
one run does. On the main of the issue the empty shard exited 5, wrote no report, and the merge
failed on ``missing shard(s)``."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import yaml

from pytest_queryeval.suite.shard import shard_of
from tests.docs.test_readme_first_suite import first_suite_section, materialise

from .support import env

ROOT = Path(__file__).resolve().parents[2]


def workflow() -> dict[str, object]:
    text = (ROOT / "docs" / "live-models.md").read_text(encoding="utf-8")
    match = re.search(r"```yaml\n(# \.github/workflows/model-gate\.yml\n.*?)```", text, re.S)
    assert match, "docs/live-models.md no longer holds the GitHub Actions matrix"
    data = yaml.safe_load(match.group(1))
    assert isinstance(data, dict)
    return data


def _steps(job: dict[str, object]) -> list[str]:
    steps = job["steps"]
    assert isinstance(steps, list)
    return [str(s["run"]) for s in steps if isinstance(s, dict) and "run" in s
            and not str(s["run"]).startswith("pip install")]


def _bash(script: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    # the step's commands, with this interpreter's pytest and queryeval
    script = re.sub(r"^pytest ", f"{sys.executable} -m pytest -p no:cacheprovider ", script,
                    flags=re.M)
    script = re.sub(r"^queryeval merge ", f"{sys.executable} -m pytest_queryeval.conclude.cli merge ",
                    script, flags=re.M)
    return subprocess.run(["bash", "-eo", "pipefail", "-c", script], cwd=cwd,
                          capture_output=True, text=True, timeout=600, check=False, env=env())


def test_the_documented_matrix_runs_and_its_merge_finds_every_shard(tmp_path):
    jobs = workflow()["jobs"]
    assert isinstance(jobs, dict)
    shard_job, gate_job = jobs["shard"], jobs["gate"]
    matrix = shard_job["strategy"]["matrix"]["shard"]
    suite = tmp_path / "suite"
    suite.mkdir()
    materialise(first_suite_section(), suite)
    ids = ["ann-total", "big-orders"]
    assert any(all(shard_of(i, len(matrix)) != n for i in ids) for n in matrix)  # one is empty
    # the committed baseline the gate job compares with (a refresh of the whole suite)
    subprocess.run([sys.executable, "-m", "pytest", "suite", "-p", "no:cacheprovider",
                    "--queryeval-update-baseline", "--queryeval-no-step-summary"],
                   cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False,
                   env=env())
    assert (suite / "queryeval-baseline.json").is_file()
    (shard_step,) = _steps(shard_job)
    for n in matrix:
        step = _bash(shard_step.replace("${{ matrix.shard }}", str(n)), tmp_path)
        assert step.returncode == 0, f"shard {n}: {step.stdout[-3000:]}\n{step.stderr[-2000:]}"
        assert (tmp_path / f"shard-{n}.json").is_file()
    (merge_step,) = _steps(gate_job)
    gate = _bash(merge_step, tmp_path)
    assert "missing shard" not in gate.stdout + gate.stderr, gate.stdout
    assert gate.returncode == 1, f"{gate.stdout[-3000:]}\n{gate.stderr[-2000:]}"
    assert gate.stdout.strip().splitlines()[-1] == \
        "queryeval: FAILED: 1 failed case (big-orders); gate pass_rate 0.5 < 0.9"
    assert (tmp_path / "report.json").is_file() and (tmp_path / "report.html").is_file()
