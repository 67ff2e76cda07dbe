"""Benchmark: ``pytest -n 2`` (pytest-xdist) against a serial run, same suites, same process.

Run: ``.venv/bin/python bench/bench_parallel.py [--runs 3] [--cases 24]``.

* ``example_suite``: the repository's example suite as shipped (SQL, SPARQL, JSON with the
  sentence-transformers model, SDMX): short, so worker start-up (each worker imports torch
  for the JSON cases) weighs against the split;
* ``generated SQL``: ``--cases`` SQL cases on Chinook (SQLite) whose gold and prediction are
  self-join aggregates of about 0.5 s each, run with ``--queryeval-no-cache``: query-bound.

Serial and parallel runs are interleaved; both must give identical aggregates (checked).
Prints medians and the serial / parallel ratio (the machine has 2 vCPUs shared with others).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import ROOT, SHARED, check, machine, median, run_pytest, spread

HEAVY = ("SELECT a.GenreId, count(*) FROM Track a JOIN Track b ON a.GenreId = b.GenreId "
         "AND a.Milliseconds < b.Milliseconds + {k} GROUP BY a.GenreId")


def generated_suite(root: Path, n: int) -> None:
    shutil.copyfile(SHARED / "chinook" / "Chinook_Sqlite.sqlite", root / "chinook.sqlite")
    (root / "pytest.ini").write_text("[pytest]\nqueryeval_files = test_*.yaml\n")
    (root / "queryeval.yaml").write_text(json.dumps({"datasources": {
        "chinook": {"type": "sqlite", "path": "chinook.sqlite", "timeout": 60}}}))
    cases = [{"id": f"q{i:03d}", "gold": HEAVY.format(k=i * 1000),
              "predicted": HEAVY.format(k=i * 1000 + (500 if i % 4 == 0 else 0))}
             for i in range(n)]
    (root / "test_generated.yaml").write_text(json.dumps({
        "kind": "sql", "datasource": "chinook", "cases": cases}))


def aggregates(path: Path) -> Any:
    report = json.loads(path.read_text())
    overall = report["aggregates"]["overall"]
    return overall["count"], overall["pass_rate"], {
        m: round(s["mean"], 9) for m, s in overall["metrics"].items() if not m.endswith("_seconds")}


def measure(label: str, cwd: Path, args: list[str], runs: int, ok: set[int]) -> float:
    serial: list[float] = []
    parallel: list[float] = []
    common = ["-q", "-p", "no:cacheprovider", "-p", "no:randomly", *args]
    for _ in range(runs):
        t, out, rc = run_pytest(cwd, *common, "--queryeval-json=serial.json")
        check(rc, out, ok, f"{label}: serial run")
        serial.append(t)
        t, out, rc = run_pytest(cwd, *common, "-n", "2", "--queryeval-json=parallel.json")
        check(rc, out, ok, f"{label}: -n 2 run")
        parallel.append(t)
        if aggregates(cwd / "serial.json") != aggregates(cwd / "parallel.json"):
            raise SystemExit(f"{label}: -n 2 and serial aggregates differ")
    ratio = median(serial) / median(parallel)
    print(f"\n{label}")
    print(f"  serial   {spread(serial)}")
    print(f"  -n 2     {spread(parallel)}")
    print(f"  ratio serial / -n 2: {ratio:.2f}x (aggregates identical)")
    return ratio


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--cases", type=int, default=24)
    args = ap.parse_args()
    print(f"machine: {machine()}")
    with tempfile.TemporaryDirectory(prefix="qe-bench-parallel-") as tmp:
        base = Path(tmp)
        example, generated = base / "example_suite", base / "generated"
        shutil.copytree(ROOT / "example_suite", example,
                        ignore=shutil.ignore_patterns(".pytest_cache", "__pycache__"))
        generated.mkdir()
        generated_suite(generated, args.cases)
        measure("example_suite (as shipped: SQL, SPARQL, JSON, SDMX)", example, [], args.runs,
                {0})
        measure(f"generated SQL, {args.cases} cases of ~1 s of queries each, no cache",
                generated, ["--queryeval-no-cache"], args.runs, {0, 1})


if __name__ == "__main__":
    main()
