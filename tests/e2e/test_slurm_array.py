"""The SLURM array recipe of docs/live-models.md, run for real (issue 43 item 8): a 3-task
``sbatch --array`` job on a single-node cluster (tests/fixtures/slurm.py) runs the documented
line, ``pytest suite --queryeval-shard auto --queryeval-json "shard-${SLURM_ARRAY_TASK_ID}.json"``,
on the generated suite; each task finds its shard in SLURM's own variables, and
``queryeval merge`` of the three reports equals the serial run. On the main of the issue the
shards split correctly and the merge refused them (``near_miss``)."""

from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path

from .generated import make_suite
from .support import assert_same, run_merge, run_pytest

ROOT = Path(__file__).resolve().parents[2]
TASKS = 3


def documented_line() -> str:
    """The recipe's pytest line, as docs/live-models.md has it (``exec pytest suite ...``)."""
    text = (ROOT / "docs" / "live-models.md").read_text(encoding="utf-8")
    match = re.search(r"# SLURM: sbatch --array=.*\n((?:exec )?pytest suite --queryeval-shard "
                      r"auto .*)\n", text)
    assert match, "docs/live-models.md no longer holds the SLURM array recipe"
    return match.group(1)


def test_a_real_slurm_array_runs_the_shards_and_they_merge_as_one_run(slurm_cluster, tmp_path):
    suite = make_suite(tmp_path / "suite")
    serial = run_pytest(suite, "serial", formats=(), junit=False)
    line = documented_line()
    # the suite is the job's folder; pytest as this interpreter runs it
    line = line.replace("pytest suite", f"{shlex.quote(sys.executable)} -m pytest . "
                        "-p no:cacheprovider", 1)
    script = suite / "eval.sh"
    script.write_text(f"#!/bin/bash\n{line}\n", encoding="utf-8")
    job = slurm_cluster.run("sbatch", "--parsable", "--wait", f"--array=1-{TASKS}",
                            f"--chdir={suite}", f"--output={suite}/task-%a.out",
                            str(script), timeout=600)
    outputs = "\n".join(p.read_text(errors="replace") for p in sorted(suite.glob("task-*.out")))
    # the suite has failing cases: each task exits 1, as the serial run does
    assert job.returncode in (0, 1), f"{job.stderr}\n{outputs}\n{slurm_cluster.logs()}"
    shards = [suite / f"shard-{i}.json" for i in range(1, TASKS + 1)]
    assert all(p.is_file() for p in shards), f"{job.stderr}\n{outputs}\n{slurm_cluster.logs()}"
    from tests.support import read_report

    assert [read_report(p)["run"]["shard"] for p in shards] == [f"{i}/{TASKS}"
                                                                 for i in range(1, TASKS + 1)]
    merged = run_merge(suite, "merged", shards, formats=())
    assert merged.status == serial.status, merged.explain()
    assert_same(serial.json, merged.json, "the SLURM array's merged shards versus the serial run")
