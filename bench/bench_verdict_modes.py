"""Benchmark: what an expected failure costs (issue 43 item 6; target: a ``baseline``-mode run
at most 1.1x a ``strict`` run).

Run: ``.venv/bin/python bench/bench_verdict_modes.py [--cases 576] [--runs 5]``.

A suite of ``--cases`` inline SQL cases with recorded results, half of them below their
threshold (``bench/_common.py``'s ``write_failing_suite``), and its baseline (a
``--queryeval-update-baseline`` refresh, in which the failing half fails). Interleaved runs of
the whole ``python -m pytest`` process, each with a JSON report:

* ``strict``: the failing half fails (pytest's FAILURES section prints them);
* ``baseline``: the same half is "failing since baseline", reported as xfailed;
* ``gates``: the same half is "below threshold", reported as xfailed;
* ``strict, all pass``: the same suite with every prediction right, the cost of a pass.

Before issue 43, each xfail of the two gating modes had pytest build and render a traceback
(every frame's source re-parsed): ~60 ms a case, 8.6 s against 2.8 s on 576 cases. Prints the
medians (wall and CPU of the process and its children) and the ratios to ``strict``; compare
ratios measured in the same run on a shared machine.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import check, machine, median, spread, timed, write_failing_suite


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", type=int, default=576)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    n = args.cases
    print(f"machine: {machine()}")
    env = dict(os.environ)
    with tempfile.TemporaryDirectory(prefix="qe-bench-verdict-") as tmp:
        half, right = Path(tmp) / "half", Path(tmp) / "right"
        failing = write_failing_suite(half, n, 0.5)
        write_failing_suite(right, n, 0.0)
        base = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                "-p", "no:randomly", "--queryeval-json=report.json"]
        _, _, out, rc = timed([*base, "--queryeval-update-baseline",
                             "--queryeval-baseline=baseline.json"], half, env)
        check(rc, out, {0}, "baseline refresh")
        sides = {
            "strict": (half, ["--queryeval-gating=strict"], {1}),
            "baseline": (half, ["--queryeval-gating=baseline",
                                "--queryeval-baseline=baseline.json"], {0}),
            "gates": (half, ["--queryeval-gating=gates"], {0}),
            "pass": (right, ["--queryeval-gating=strict"], {0}),
        }
        wall: dict[str, list[float]] = {k: [] for k in sides}
        cpu: dict[str, list[float]] = {k: [] for k in sides}
        for _ in range(args.runs):  # interleaved: host noise hits every side alike
            for key, (cwd, extra, codes) in sides.items():
                w, c, out, rc = timed([*base, *extra], cwd, env)
                check(rc, out, codes, f"{key} run")
                wall[key].append(w)
                cpu[key].append(c)
                cases = json.loads((cwd / "report.json").read_text())["cases"]
                expected = "passed" if key == "pass" else (
                    "failed" if key == "strict" else "xfailed")
                got = {c["id"] for c in cases if c["outcome"] == expected}
                want = {c["id"] for c in cases} if key == "pass" else failing
                assert got == want, f"{key}: {len(got)} cases {expected}, expected {len(want)}"
    labels = {"strict": f"strict, {len(failing)} of {n} failing",
              "baseline": f"baseline, the {len(failing)} xfailed (failing since baseline)",
              "gates": f"gates, the {len(failing)} xfailed (below threshold)",
              "pass": f"strict, all {n} passing (the cost of a pass)"}
    print(f"\n{n} cases, {args.runs} interleaved runs of each (whole process, JSON report)")
    for key, label in labels.items():
        print(f"  {label:58s} wall {spread(wall[key])}; cpu median {median(cpu[key]):.2f} s")
    for key in ("baseline", "gates", "pass"):
        print(f"ratio {key} / strict: wall {median(wall[key]) / median(wall['strict']):.2f}x, "
              f"cpu {median(cpu[key]) / median(cpu['strict']):.2f}x")
    print(f"ratio baseline / all passing: wall "
          f"{median(wall['baseline']) / median(wall['pass']):.2f}x, cpu "
          f"{median(cpu['baseline']) / median(cpu['pass']):.2f}x")
    ratio = median(cpu["baseline"]) / median(cpu["strict"])
    print(f"target baseline / strict <= 1.1x: {'MET' if ratio <= 1.1 else 'NOT MET'} "
          f"({ratio:.2f}x cpu, {median(wall['baseline']) / median(wall['strict']):.2f}x wall)")


if __name__ == "__main__":
    main()
