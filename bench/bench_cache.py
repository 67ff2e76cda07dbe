"""Benchmark: the gold-result cache, a second run of an unchanged suite versus the first.

Run: ``.venv/bin/python bench/bench_cache.py [--runs 3] [--cases 30] [--live-cases 10]``.

Each round empties a private pytest cache directory, runs the suite (cold: every gold query
executes) and runs it again unchanged (warm: gold results come from the cache). Suites:

* ``heavy golds``: ``--cases`` SQL cases on Chinook (SQLite) whose gold is a self-join
  aggregate (about 0.5 s each) and whose prediction is a recorded result: the cache's effect;
* ``heavy golds, live predictions``: the same golds, predictions that are the same queries
  executed live (predicted results are never cached: at most 2x by construction);
* ``example_suite sql+sparql``: the repository's example suite as it is (cheap golds: start-up
  dominates).

Prints medians, the cold/warm ratio of each, and checks both runs give identical scores.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import ROOT, SHARED, check, machine, median, run_pytest, spread

HEAVY = ("SELECT a.GenreId, count(*) FROM Track a JOIN Track b ON a.GenreId = b.GenreId "
         "AND a.Milliseconds < b.Milliseconds + {k} GROUP BY a.GenreId")


def heavy_suite(root: Path, n: int, live: bool) -> None:
    db = root / "chinook.sqlite"
    shutil.copyfile(SHARED / "chinook" / "Chinook_Sqlite.sqlite", db)
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    cases: list[dict[str, Any]] = []
    for i in range(n):
        gold = HEAVY.format(k=i * 1000)
        case: dict[str, Any] = {"id": f"heavy-{i:03d}", "gold": gold}
        if live:
            case["predicted"] = gold
        else:
            rows = [list(r) for r in conn.execute(gold)]
            case["predicted_result"] = {"columns": ["GenreId", "count(*)"], "rows": rows}
        cases.append(case)
    conn.close()
    (root / "pytest.ini").write_text("[pytest]\nqueryeval_files = test_*.yaml\n")
    (root / "queryeval.yaml").write_text(json.dumps({"datasources": {
        "chinook": {"type": "sqlite", "path": "chinook.sqlite", "timeout": 60}}}))
    (root / "test_heavy.yaml").write_text(json.dumps({
        "kind": "sql", "datasource": "chinook", "thresholds": {"execution_accuracy": 1.0},
        "cases": cases}))


def scores(report: dict[str, Any]) -> dict[str, Any]:
    return {c["id"]: (c["outcome"], {k: v for k, v in c["metrics"].items()
                                     if not k.endswith("_seconds")}) for c in report["cases"]}


def measure(label: str, cwd: Path, args: list[str], runs: int) -> float:
    cold: list[float] = []
    warm: list[float] = []
    cache = cwd / ".bench-cache"
    common = ["-q", "-p", "no:randomly", "-o", f"cache_dir={cache}", "--queryeval-json=r.json"]
    for _ in range(runs):
        shutil.rmtree(cache, ignore_errors=True)
        t, out, rc = run_pytest(cwd, *common, *args)
        check(rc, out, {0}, f"{label}: cold run")
        cold.append(t)
        first = scores(json.loads((cwd / "r.json").read_text()))
        t, out, rc = run_pytest(cwd, *common, *args)
        check(rc, out, {0}, f"{label}: warm run")
        warm.append(t)
        second = json.loads((cwd / "r.json").read_text())
        if scores(second) != first:
            raise SystemExit(f"{label}: the cached run scored differently")
        cached = [c["details"].get("gold_cached") for c in second["cases"]
                  if c["kind"] == "sql"]
        if cached and not all(cached):
            raise SystemExit(f"{label}: the second run did not use the cache")
    ratio = median(cold) / median(warm)
    print(f"\n{label}")
    print(f"  first run (cold cache)   {spread(cold)}")
    print(f"  second run (warm cache)  {spread(warm)}")
    print(f"  ratio first / second: {ratio:.2f}x")
    return ratio


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--cases", type=int, default=30)
    ap.add_argument("--live-cases", type=int, default=10)
    args = ap.parse_args()
    print(f"machine: {machine()}")
    with tempfile.TemporaryDirectory(prefix="qe-bench-cache-") as tmp:
        base = Path(tmp)
        recorded, live, example = base / "recorded", base / "live", base / "example"
        for d in (recorded, live):
            d.mkdir()
        heavy_suite(recorded, args.cases, live=False)
        heavy_suite(live, args.live_cases, live=True)
        shutil.copytree(ROOT / "example_suite", example)
        r1 = measure(f"heavy golds ({args.cases} SQL cases, recorded predictions)", recorded, [],
                     args.runs)
        measure(f"heavy golds ({args.live_cases} SQL cases, the same queries as live predictions)",
                live, [], args.runs)
        measure("example_suite sql + sparql (as shipped)", example, ["sql", "sparql"], args.runs)
    print(f"\ntarget >= 5x on the gold-heavy suite: {'MET' if r1 >= 5 else 'NOT MET'} ({r1:.2f}x)")


if __name__ == "__main__":
    main()
