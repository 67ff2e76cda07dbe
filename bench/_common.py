"""Shared helpers of the plugin-level benchmarks: timed pytest subprocesses, medians, ratios."""

from __future__ import annotations

import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

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
