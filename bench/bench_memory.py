"""Memory per case: the plugin against plain pytest, in the same run (target: at most 2x plain
pytest's memory per test, linear in cases).

Run: ``.venv/bin/python bench/bench_memory.py [--cases 10000] [--runs 3] [--large]``.

The suites are ``bench_overhead.py``'s: ``--cases`` inline SQL cases with recorded results in
files of 1,000 (collected, run, scored, thresholded, aggregated, a JSON report written), and a
plain pytest run of as many trivial parametrized tests. Each is also run with one case / test,
and what is printed is the peak resident set size (``ru_maxrss`` of the ``pytest`` process
itself, read with ``os.wait4``) and the marginal memory per case,
``(peak(n) - peak(1)) / (n - 1)``: start-up and imports are paid once per process, not per case.
``--large`` adds the same measurement at 100,000 cases (about 10 minutes on 2 vCPUs).
Runs are interleaved; each figure is the median of ``--runs``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import machine, median
from bench_overhead import write_plain, write_suite


def peak_rss(cwd: Path, *args: str) -> tuple[float, str, int]:
    """Peak RSS in KB of one ``python -m pytest`` process (not its children), output, rc."""
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen([sys.executable, "-m", "pytest", *args], cwd=cwd,
                                stdout=out, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        text = out.read().decode("utf-8", "replace")
    return float(usage.ru_maxrss), text, proc.returncode  # KB on Linux


def measure(base: Path, n: int, runs: int) -> dict[str, list[float]]:
    dirs = {name: base / f"{name}-{n}" for name in ("qe", "plain", "qe1", "plain1")}
    for d in dirs.values():
        d.mkdir()
    write_suite(dirs["qe"], n)
    write_suite(dirs["qe1"], 1)
    write_plain(dirs["plain"], n)
    write_plain(dirs["plain1"], 1)
    common = ("-q", "-p", "no:cacheprovider", "-p", "no:randomly")
    extra = {"qe": ("--queryeval-json=report.json",), "qe1": ("--queryeval-json=report.json",),
             "plain": (), "plain1": ()}
    peaks: dict[str, list[float]] = {k: [] for k in dirs}
    for _ in range(runs):  # interleaved: host noise hits every variant alike
        for key, d in dirs.items():
            kb, out, rc = peak_rss(d, *common, *extra[key])
            if rc != 0:
                raise SystemExit(f"{key} run at {n} exited {rc}\n{out[-3000:]}")
            peaks[key].append(kb)
    return peaks


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--large", action="store_true", help="also measure at 100,000 cases")
    args = ap.parse_args()
    print(f"machine: {machine()}")
    sizes = [args.cases] + ([100_000] if args.large and args.cases != 100_000 else [])
    with tempfile.TemporaryDirectory(prefix="qe-bench-memory-") as tmp:
        for n in sizes:
            peaks = measure(Path(tmp), n, args.runs)
            med = {k: median(v) for k, v in peaks.items()}
            qe = (med["qe"] - med["qe1"]) / (n - 1)
            plain = (med["plain"] - med["plain1"]) / (n - 1)
            print(f"\n{n:,} cases, peak RSS, median of {args.runs} interleaved runs:")
            print(f"  queryeval, 1 case    {med['qe1'] / 1024:8.1f} MB")
            print(f"  queryeval, {n:,} {med['qe'] / 1024:8.1f} MB  "
                  f"(min {min(peaks['qe']) / 1024:.1f}, max {max(peaks['qe']) / 1024:.1f})")
            print(f"  plain, 1 test        {med['plain1'] / 1024:8.1f} MB")
            print(f"  plain, {n:,} tests {med['plain'] / 1024:8.1f} MB  "
                  f"(min {min(peaks['plain']) / 1024:.1f}, "
                  f"max {max(peaks['plain']) / 1024:.1f})")
            print(f"per case: queryeval {qe:.2f} KB, plain pytest {plain:.2f} KB; "
                  f"ratio {qe / plain:.2f}x (target <= 2x: "
                  f"{'MET' if qe <= 2 * plain else 'NOT MET'})")


if __name__ == "__main__":
    main()
