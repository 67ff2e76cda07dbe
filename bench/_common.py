"""Shared helpers of the plugin-level benchmarks: timed pytest subprocesses, medians, ratios."""

from __future__ import annotations

import argparse
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("QUERYEVAL_SHARED_DATA", ROOT.parent / "shared" / "data"))


def run_pytest(cwd: Path, *args: str, timeout: float = 900,
               env: dict[str, str] | None = None) -> tuple[float, str, int]:
    """Wall seconds of one ``python -m pytest`` process (start-up included), its output, rc."""
    env = dict(os.environ) if env is None else env
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "pytest", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout, check=False)
    return time.perf_counter() - t0, done.stdout + done.stderr, done.returncode


def suite_parser(doc: str | None) -> argparse.ArgumentParser:
    """The options of a bench that runs a whole suite: its cases, its interleaved runs."""
    ap = argparse.ArgumentParser(description=(doc or "").split("\n")[0])
    ap.add_argument("--cases", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=3)
    return ap


def measured_env() -> dict[str, str]:
    """This environment with bytecode caches on (``PYTHONDONTWRITEBYTECODE`` removed): a
    measured process starts as a user's does, not compiling every module again."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


#: Flags of every measured pytest process: no cache (a cold run), no random order, no
#: hypothesis plugin (the dev extra's, which a user's run has not).
PYTEST_FLAGS = ("-q", "-p", "no:cacheprovider", "-p", "no:randomly", "-p", "no:hypothesispytest")


def import_bird(base: Path, env: dict[str, str]) -> None:
    """``queryeval-import bird`` of the BIRD files in ``base`` (``bench_bird_run.write_inputs``)
    into ``base/suite``."""
    subprocess.run([sys.executable, "-m", "pytest_queryeval.importers.cli", "bird",
                    str(base / "mini_dev_sqlite.json"), "--pred",
                    str(base / "predict_mini_dev.json"), "--db",
                    str(base / "dbs" / "{db}" / "{db}.sqlite"), "--out", str(base / "suite")],
                   check=True, capture_output=True, env=env)


def write_plain(base: Path, cases: int) -> None:
    """``base/plain``: as many trivial tests as the suite has cases (pytest's own cost)."""
    (base / "plain").mkdir()
    (base / "plain" / "test_plain.py").write_text(
        f"import pytest\n\n@pytest.mark.parametrize('i', range({cases}))\n"
        "def test_trivial(i):\n    assert i >= 0\n")


def median(xs: list[float]) -> float:
    return statistics.median(xs)


def spread(xs: list[float]) -> str:
    return f"median {median(xs):7.2f} s  (min {min(xs):.2f}, max {max(xs):.2f}, n={len(xs)})"


def machine() -> str:
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = ""
    try:
        kib = int(Path("/proc/meminfo").read_text().split()[1])
        mem = f", {kib / 1024 / 1024:.0f} GiB RAM"
    except (OSError, ValueError, IndexError):
        pass
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    return (f"{os.cpu_count()} vCPU {cpu}{mem}; {platform.system()} {platform.release()}; "
            f"Python {platform.python_version()}; load average {load}")


def check(rc: int, out: str, expected: set[int], what: str) -> None:
    if rc not in expected:
        raise SystemExit(f"{what}: pytest exited with {rc}\n{out[-3000:]}")


def score_sql_pair(gold: Any, pred: Any, gold_sql: str, pred_sql: str) -> dict[str, float]:
    """What a SQL case scores on a large pair (the large-result benches): the seven table
    metrics, the four alignment metrics, and the prediction's row signature (computed, as
    the case computes it, not kept). Needs the plugin's ``src`` on ``sys.path``."""
    from pytest_queryeval.metrics.alignment import alignment_metrics
    from pytest_queryeval.metrics.table import compare_tables

    metrics = compare_tables(gold, pred, order_matters=False).metrics()
    metrics.update(alignment_metrics(gold, pred, gold_query=gold_sql, pred_query=pred_sql,
                                     kind="sql"))
    pred.signature(False)
    return metrics


def timed(cmd: list[str], cwd: Path, env: dict[str, str], timeout: float = 900,
          ) -> tuple[float, float, str, int]:
    """Wall and CPU seconds (user + system of the child and its children) of one whole
    process, its output and return code."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout, check=False)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    return wall, cpu, done.stdout + done.stderr, done.returncode


def print_sides(times: dict[str, list[float]], sides: list[tuple[str, str]], width: int,
                ) -> None:
    """One line per side of a whole-run comparison: wall spread and CPU median (``times``
    holds each side's walls under its key and its CPU times under ``<key>_cpu``)."""
    for key, label in sides:
        print(f"  {label:{width}s} wall {spread(times[key])}; cpu median "
              f"{median(times[key + '_cpu']):.2f} s")


def write_failing_suite(root: Path, n: int, failing: float, *, seed: int = 0,
                        per_file: int = 1000, ini: str = "") -> set[str]:
    """``n`` inline SQL cases with recorded results (no data source: only the plugin and
    pytest work), in files of ``per_file``, threshold ``execution_accuracy >= 1``; a random
    ``failing`` fraction of them predicts one wrong row (below threshold), the others a right
    answer in another row order. ``ini`` is added to the ``pytest.ini``. Returns the failing
    case ids."""
    import json
    import random

    rng = random.Random(seed)
    root.mkdir(parents=True, exist_ok=True)
    (root / "pytest.ini").write_text(f"[pytest]\nqueryeval_files = test_*.yaml\n{ini}")
    wrong = set(rng.sample(range(n), round(n * failing)))
    for f in range((n + per_file - 1) // per_file):
        cases = []
        for i in range(f * per_file, min(n, (f + 1) * per_file)):
            rows = [[rng.randrange(100), f"name-{rng.randrange(50)}"] for _ in range(3)]
            pred = [list(r) for r in rows]
            rng.shuffle(pred)
            if i in wrong:
                pred[0][0] += 1000
            cases.append({"id": f"c{i:06d}", "question": f"question {i}",
                          "gold_result": {"columns": ["n", "name"], "rows": rows},
                          "predicted_result": {"columns": ["n", "name"], "rows": pred}})
        (root / f"test_cases_{f:03d}.yaml").write_text(json.dumps(
            {"kind": "sql", "thresholds": {"execution_accuracy": 1.0}, "cases": cases}))
    return {f"c{i:06d}" for i in wrong}
