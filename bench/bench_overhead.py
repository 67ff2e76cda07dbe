"""Benchmark: plugin overhead per case, against plain pytest in the same run.

Run: ``.venv/bin/python bench/bench_overhead.py [--cases 10000] [--runs 3]``.

* queryeval: ``--cases`` inline SQL cases with recorded results (``gold_result`` /
  ``predicted_result``: no data source, so only the plugin works) in files of 1,000, collected,
  run, scored (table and alignment metrics), thresholded, aggregated and written to a JSON report;
* reference: a plain pytest run of the same number of trivial parametrized Python tests;
* start-up: a pytest run of one trivial test (process and plugin start-up, subtracted from both).

Prints the medians, the per-case cost of each (start-up subtracted) and their ratio; the
target is under 1 ms per case for queryeval.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import check, machine, median, run_pytest, spread

PER_FILE = 1000


def write_suite(root: Path, n: int, seed: int = 0) -> None:
    rng = random.Random(seed)
    (root / "pytest.ini").write_text("[pytest]\nqueryeval_files = test_*.yaml\n")
    for f in range((n + PER_FILE - 1) // PER_FILE):
        cases = []
        for i in range(f * PER_FILE, min(n, (f + 1) * PER_FILE)):
            rows = [[rng.randrange(100), f"name-{rng.randrange(50)}"] for _ in range(3)]
            pred = [list(r) for r in rows]
            rng.shuffle(pred)  # right answers in another row order: every case passes, as in
            # the plain reference (pytest's own failure summary is quadratic in failures)
            cases.append({"id": f"c{i:05d}", "question": f"question {i}",
                          "gold_result": {"columns": ["n", "name"], "rows": rows},
                          "predicted_result": {"columns": ["n", "name"], "rows": pred},
                          "tags": ["bench"]})
        (root / f"test_cases_{f:02d}.yaml").write_text(json.dumps(
            {"kind": "sql", "thresholds": {"execution_accuracy": 1.0}, "cases": cases}))


def write_plain(root: Path, n: int) -> None:
    (root / "test_plain.py").write_text(
        "import pytest\n\n"
        f"@pytest.mark.parametrize('i', range({n}))\n"
        "def test_trivial(i):\n    assert i >= 0\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    n = args.cases
    print(f"machine: {machine()}")
    with tempfile.TemporaryDirectory(prefix="qe-bench-overhead-") as tmp:
        base = Path(tmp)
        qe, plain, one = base / "qe", base / "plain", base / "one"
        for d in (qe, plain, one):
            d.mkdir()
        write_suite(qe, n)
        write_plain(plain, n)
        write_plain(one, 1)
        common = ("-q", "-p", "no:cacheprovider", "-p", "no:randomly")
        times: dict[str, list[float]] = {"startup": [], "plain": [], "qe": [], "collect": []}
        for _ in range(args.runs):  # interleaved, so host noise hits every variant alike
            t, out, rc = run_pytest(one, *common)
            check(rc, out, {0}, "start-up run")
            times["startup"].append(t)
            t, out, rc = run_pytest(plain, *common)
            check(rc, out, {0}, "plain run")
            times["plain"].append(t)
            t, out, rc = run_pytest(qe, "--collect-only", *common)
            check(rc, out, {0}, "queryeval collection")
            times["collect"].append(t)
            t, out, rc = run_pytest(qe, *common, "--queryeval-json=report.json")
            check(rc, out, {0}, "queryeval run")
            times["qe"].append(t)
        report = json.loads((qe / "report.json").read_text())
        assert report["aggregates"]["overall"]["count"] == n, "cases went missing"
        passed = sum(c["outcome"] == "passed" for c in report["cases"])
    start = median(times["startup"])
    print(f"\n{n:,} cases, {args.runs} interleaved runs each (wall time of the whole process)")
    for key, label in (("startup", "pytest start-up (1 trivial test)"),
                       ("plain", f"plain pytest, {n:,} parametrized tests"),
                       ("collect", f"queryeval --collect-only, {n:,} cases"),
                       ("qe", f"queryeval run + JSON report, {n:,} cases")):
        print(f"  {label:48s} {spread(times[key])}")
    per_plain = (median(times["plain"]) - start) / n * 1e3
    per_qe = (median(times["qe"]) - start) / n * 1e3
    per_collect = (median(times["collect"]) - start) / n * 1e3
    print(f"\nper case (start-up subtracted): queryeval {per_qe:.3f} ms "
          f"(collection {per_collect:.3f} ms), plain pytest {per_plain:.3f} ms")
    print(f"ratio queryeval / plain pytest per case: {per_qe / per_plain:.2f}x")
    print(f"target under 1 ms per case: {'MET' if per_qe < 1.0 else 'NOT MET'} "
          f"({passed:,} of {n:,} cases passed)")


if __name__ == "__main__":
    main()
