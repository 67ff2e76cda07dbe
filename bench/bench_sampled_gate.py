"""Benchmark: gating a sampled model (issue 59 item 3; targets: at most 1 of 20 unchanged reruns
FAIL and at most 2 of 20 INCONCLUSIVE, at least 9 of 10 regressed runs FAIL, at most 1.5 model
calls per case on average in the gated runs).

Run: ``.venv/bin/python bench/bench_sampled_gate.py [--unchanged 20] [--regressed 10]
[--before]``.

The workload of ``tests/gating/workload.py``: 60 cases of a ``source: python`` sampled model
(36 always right, 12 right 85 % of the time, 12 half the time; the regressed model has 8 of
the always-right cases right 30 % of the time), every call an independent seeded draw. The
baseline is made once, the documented way (``--queryeval-repeat 20
--queryeval-update-baseline``: each case's history of 20 runs; its calls are not counted),
then each gated run is a whole ``python -m pytest`` process with
``--queryeval-gating=evidence --queryeval-baseline=...`` and its own seed. Prints the
verdicts, the exit statuses and the model calls per case (counted from the JSON report's
runs). ``--before`` also measures the two gates the issue found wanting, against a baseline
written from one run: ``--queryeval-gating=baseline`` and ``--queryeval-gating=gates
--queryeval-significance=0.05``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.gating.workload import REGRESSED, UNCHANGED, set_model, write_workload  # noqa: E402

PYTEST = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
          "--queryeval-json=report.json"]


def run(root: Path, seed: int, args: list[str]) -> tuple[int, dict]:
    env = {**os.environ, "QE_SAMPLED_SEED": str(seed)}
    done = subprocess.run([*PYTEST, *args], cwd=root, env=env, capture_output=True, text=True,
                          check=False)
    report = json.loads((root / "report.json").read_text(encoding="utf-8"))
    return done.returncode, report


def calls_of(report: dict) -> int:
    return sum(((c.get("details") or {}).get("repeat") or {}).get("n") or 1
               for c in report["cases"])


def verdict_of(rc: int, report: dict) -> str:
    evidence = report.get("evidence")
    if evidence:
        return str(evidence["verdict"])
    return "PASS" if rc == 0 else "FAIL"


def series(root: Path, label: str, probabilities: list[float], seeds: range,
           args: list[str]) -> tuple[Counter[str], float]:
    set_model(root, probabilities)
    verdicts: Counter[str] = Counter()
    statuses: Counter[int] = Counter()
    calls = 0
    for seed in seeds:
        rc, report = run(root, seed, args)
        verdicts[verdict_of(rc, report)] += 1
        statuses[rc] += 1
        calls += calls_of(report)
    per_case = calls / (len(seeds) * len(probabilities))
    print(f"{label}: {dict(sorted(verdicts.items()))} over {len(seeds)} runs; exit statuses "
          f"{dict(sorted(statuses.items()))}; {per_case:.3f} model calls per case")
    return verdicts, per_case


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--unchanged", type=int, default=20)
    ap.add_argument("--regressed", type=int, default=10)
    ap.add_argument("--baseline-seed", type=int, default=0,
                    help="the seed of the baseline's 20 runs per case (another draw of history)")
    ap.add_argument("--first-seed", type=int, default=1,
                    help="the seed of the first unchanged run (the regressed runs start at "
                         "1000 above it)")
    ap.add_argument("--before", action="store_true",
                    help="also measure --queryeval-gating=baseline and gates + significance")
    args = ap.parse_args()
    first = args.first_seed
    same = range(first, first + args.unchanged)
    worse = range(first + 1000, first + 1000 + args.regressed)
    with tempfile.TemporaryDirectory(prefix="qe-bench-sampled-") as tmp:
        root = write_workload(Path(tmp) / "suite", UNCHANGED)
        rc, report = run(root, args.baseline_seed, ["--queryeval-repeat=20",
                                                    "--queryeval-update-baseline",
                                   "--queryeval-baseline=baseline.json"])
        assert rc == 0, f"baseline refresh exited {rc}"
        print(f"baseline: --queryeval-repeat=20 --queryeval-update-baseline, "
              f"{calls_of(report)} calls (not counted)")
        gate = ["--queryeval-gating=evidence", "--queryeval-baseline=baseline.json"]
        ok, calm = series(root, "evidence, unchanged", UNCHANGED, same, gate)
        bad, hit = series(root, "evidence, regressed", REGRESSED, worse, gate)
        per_case = (calm * len(same) + hit * len(worse)) / (len(same) + len(worse))
        print(f"evidence: {per_case:.3f} model calls per case over all {len(same) + len(worse)} "
              "gated runs")
        met = (ok["FAIL"] <= 1 and ok["INCONCLUSIVE"] <= 2 and bad["FAIL"] >= 9 * len(worse)
               / 10 and per_case <= 1.5)
        print(f"targets (<= 1/20 FAIL, <= 2/20 INCONCLUSIVE unchanged; >= 9/10 FAIL regressed; "
              f"<= 1.5 calls per case): {'met' if met else 'NOT met'}")
        if args.before:
            set_model(root, UNCHANGED)
            rc, _ = run(root, 0, ["--queryeval-update-baseline", "--queryeval-baseline=one.json"])
            for label, extra in (("baseline", ["--queryeval-gating=baseline"]),
                                 ("gates, significance 0.05",
                                  ["--queryeval-gating=gates", "--queryeval-significance=0.05"])):
                flags = [*extra, "--queryeval-baseline=one.json"]
                series(root, f"{label} (one-run baseline), unchanged", UNCHANGED, same, flags)
                series(root, f"{label} (one-run baseline), regressed", REGRESSED, worse, flags)


if __name__ == "__main__":
    main()
