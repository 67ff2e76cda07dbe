"""Benchmark: failures at scale (issue 43 item 6; target: the time per case at 20,000 and
100,000 cases within 1.3x of the 5,000-case figure).

Run: ``.venv/bin/python bench/bench_failures_scale.py [--sizes 5000 20000 100000]
[--failing 0.3] [--runs 1] [--details N] [-- extra pytest args]``.

Per size, a suite of inline SQL cases with recorded results of which ``--failing`` are below
their threshold (``bench/_common.py``'s ``write_failing_suite``), run whole
(``python -m pytest -q --queryeval-json``, pytest's own FAILURES section and short summary
included). ``--details`` sets ini ``queryeval_max_failure_details`` (the failing cases shown in
full; 0: every one; default: the plugin's default, 100). Before issue 43, pytest's summary
scanned every setup and teardown report once per failure: 20,000 cases with 6,000 failing took
136.5 s against 6.5 s for 5,000 with 1,500 failing (21x the time for 4x the cases).

Prints, per size, the medians of the whole process's wall and CPU time (the process and its
children) and their time per case, and the ratio of each size's per-case figure to the first
size's. 100,000 cases take minutes a run on a 2-vCPU machine: pass smaller ``--sizes`` there.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import check, machine, median, spread, timed, write_failing_suite


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[5_000, 20_000, 100_000])
    ap.add_argument("--failing", type=float, default=0.3)
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--details", type=int, default=None,
                    help="ini queryeval_max_failure_details (default: the plugin's)")
    ap.add_argument("pytest_args", nargs="*", help="after --: more pytest arguments")
    args = ap.parse_args()
    print(f"machine: {machine()}")
    ini = "" if args.details is None else f"queryeval_max_failure_details = {args.details}\n"
    env = dict(os.environ)
    rows: list[tuple[int, int, list[float], list[float]]] = []
    with tempfile.TemporaryDirectory(prefix="qe-bench-fail-scale-") as tmp:
        for n in args.sizes:
            root = Path(tmp) / f"s{n}"
            failing = write_failing_suite(root, n, args.failing, ini=ini)
            cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                   "-p", "no:randomly", "--queryeval-json=report.json", *args.pytest_args]
            walls: list[float] = []
            cpus: list[float] = []
            for _ in range(args.runs):
                wall, cpu, out, rc = timed(cmd, root, env, timeout=7200)
                check(rc, out, {1}, f"{n} cases")
                tail = out.rstrip().splitlines()[-1]
                assert f"{len(failing)} failed" in tail, tail
                walls.append(wall)
                cpus.append(cpu)
            rows.append((n, len(failing), walls, cpus))
            print(f"  {n:>7,} cases, {len(failing):>6,} failing: wall {spread(walls)}; "
                  f"cpu median {median(cpus):.2f} s", flush=True)
    n0, _, w0, c0 = rows[0]
    first_wall, first_cpu = median(w0) / n0, median(c0) / n0
    print(f"\nper case ({args.runs} run(s) per size; extra pytest args: "
          f"{' '.join(args.pytest_args) or 'none'}; details: "
          f"{'default' if args.details is None else args.details})")
    worst = 0.0
    for n, nfail, walls, cpus in rows:
        wall, cpu = median(walls) / n, median(cpus) / n
        worst = max(worst, cpu / first_cpu)
        print(f"  {n:>7,} cases ({nfail:,} failing): {wall * 1e3:.3f} ms wall, "
              f"{cpu * 1e3:.3f} ms cpu per case; ratio to {n0:,}: wall "
              f"{wall / first_wall:.2f}x, cpu {cpu / first_cpu:.2f}x")
    print(f"target per case within 1.3x of {n0:,} cases: "
          f"{'MET' if worst <= 1.3 else 'NOT MET'} (worst {worst:.2f}x cpu)")


if __name__ == "__main__":
    main()
