"""Benchmark: plugin overhead per case, against plain pytest in the same run.

Run: ``.venv/bin/python bench/bench_overhead.py [--cases 10000] [--runs 3]``.

* queryeval: ``--cases`` inline SQL cases with recorded results (``gold_result`` /
  ``predicted_result``: no data source, so only the plugin works) in files of 1,000, collected,
  run, scored (table and alignment metrics), thresholded, aggregated and written to a JSON report;
* reference: a plain pytest run of the same number of trivial parametrized Python tests;
* start-up: a pytest run of one trivial test, and a queryeval run of one case of the same
  suite (process start-up, plus the plugin's imports of the SQL kind and metrics).

Prints the medians and the per-case cost of each: the marginal cost, ``(T(n) - T(1)) / (n - 1)``
against the one-case run of the same kind, is the figure the target (under 1 ms per case) is
about; the cost with only pytest's start-up subtracted (which also spreads the plugin's one-off
imports over the cases) is printed beside it.
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
        qe, plain, one, qe_one = base / "qe", base / "plain", base / "one", base / "qe_one"
        for d in (qe, plain, one, qe_one):
            d.mkdir()
        write_suite(qe, n)
        write_suite(qe_one, 1)
        write_plain(plain, n)
        write_plain(one, 1)
        common = ("-q", "-p", "no:cacheprovider", "-p", "no:randomly")
        times: dict[str, list[float]] = {"startup": [], "plain": [], "qe": [], "collect": [],
                                         "qe_one": []}
        for _ in range(args.runs):  # interleaved, so host noise hits every variant alike
            t, out, rc = run_pytest(one, *common)
            check(rc, out, {0}, "start-up run")
            times["startup"].append(t)
            t, out, rc = run_pytest(qe_one, *common, "--queryeval-json=report.json")
            check(rc, out, {0}, "queryeval one-case run")
            times["qe_one"].append(t)
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
                       ("qe_one", "queryeval run + JSON report, 1 case"),
                       ("plain", f"plain pytest, {n:,} parametrized tests"),
                       ("collect", f"queryeval --collect-only, {n:,} cases"),
                       ("qe", f"queryeval run + JSON report, {n:,} cases")):
        print(f"  {label:48s} {spread(times[key])}")
    per_plain = (median(times["plain"]) - start) / (n - 1) * 1e3
    per_qe = (median(times["qe"]) - median(times["qe_one"])) / (n - 1) * 1e3
    per_qe_start = (median(times["qe"]) - start) / n * 1e3
    per_collect = (median(times["collect"]) - start) / n * 1e3
    print(f"\nper case, marginal (one-case run of each subtracted): queryeval {per_qe:.3f} ms, "
          f"plain pytest {per_plain:.3f} ms; ratio {per_qe / per_plain:.2f}x")
    print(f"per case, pytest start-up subtracted: queryeval {per_qe_start:.3f} ms "
          f"(collection {per_collect:.3f} ms, the plugin's imports included)")
    print(f"target under 1 ms per case: {'MET' if per_qe < 1.0 else 'NOT MET'} "
          f"({per_qe:.3f} ms marginal, {per_qe_start:.3f} ms with the imports; "
          f"{passed:,} of {n:,} cases passed)")


if __name__ == "__main__":
    main()
