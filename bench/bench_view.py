"""Benchmark: ``queryeval view`` over 10 runs x 2,000 cases (issue 44 item 1; targets: the page
interactive in under 2 s in headless Chromium, the file under 20 MB).

The bench writes ``--runs-of-suite`` synthetic JSON reports of ``--cases`` SQL cases each, with
the plugin's own JSON writer and aggregates: records as a live model's run has them (14
metrics, a threshold, a question, a gold and a prediction of 100-200 characters, the diff
lines of a failure), the model's answers drifting from run to run (each case right with its
own probability, three answers per case, so texts repeat across runs as they do), one gate on
the mean and one on the pass rate. Each run names its model (``text2sql-v1`` to ``-v10``), so
the page also holds the models' comparison (issue 49 item 4): one column per model with its
pass rate per kind and difficulty, 45 McNemar pairs and the cases the models disagree on. It
then runs ``queryeval view`` on them and prints:

* the file's size, and the seconds ``queryeval view`` took (reading, building, writing);
* the time to interactive: ``performance.now()`` when the page's script has rendered the grid,
  the trend and the filters (the ``data-render-ms`` the page sets on ``<body>``, from the start
  of the navigation: the file's parse and the JSON's included), median of ``--repeat`` loads
  in headless Chromium (a fresh profile each); the same with a case's panel opened from the
  URL fragment; and the wall time of the whole ``chromium --dump-dom`` process (the browser's
  start and the serialisation of the DOM included, an upper bound);

and whether the targets hold. Chromium: ``QUERYEVAL_CHROMIUM`` or ``chromium`` on the PATH.
"""

from __future__ import annotations

import argparse
import html
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import ROOT, machine

sys.path.insert(0, str(ROOT / "src"))

TARGET_SECONDS = 2.0
TARGET_BYTES = 20_000_000
TABLES = ("orders", "customers", "invoices", "tracks", "albums", "employees")


def _record(i: int, run: int, p_right: float, rng: random.Random, unique: bool,
            ) -> dict[str, object]:
    table = TABLES[i % len(TABLES)]
    gold = (f"SELECT c.name, SUM(o.total) AS spent FROM {table} o JOIN customers c ON "
            f"c.id = o.customer_id WHERE o.region = 'r{i % 7}' GROUP BY c.name "
            f"ORDER BY spent DESC LIMIT {5 + i % 10}")
    right = rng.random() < p_right
    variant = 0 if right else 1 + (run + i) % 2
    predicted = [gold.replace("c.name", "c.name ", 1),
                 gold.replace(f"LIMIT {5 + i % 10}", f"LIMIT {6 + i % 10}"),
                 gold.replace(f"'r{i % 7}'", f"'r{(i + 1) % 7}'")][variant]
    if unique:  # the worst case: no prediction repeats from one run to the next
        predicted = predicted.replace("AS spent", f"AS spent_{run}_{rng.getrandbits(20):05x}")
    ex = 1.0 if right else 0.0
    metrics: dict[str, float | None] = {
        "execution_accuracy": ex, "bird_ex": ex, "soft_f1": 1.0 if right else round(rng.random(), 4),
        "cell_f1": 1.0 if right else round(rng.random(), 4), "exact_set_match": float(right and i % 3 > 0),
        "arity_f1": 1.0, "entity_set_f1": 1.0 if right else round(rng.random(), 4),
        "row_match_f1": 1.0 if right else round(rng.random(), 4), "same_row_count": ex,
        "gold_seconds": round(rng.uniform(0.001, 0.02), 5),
        "predicted_seconds": round(rng.uniform(0.001, 0.02), 5),
        "prediction_seconds": round(rng.uniform(0.4, 3.0), 3), "prompt_tokens": 900 + i % 300,
        "completion_tokens": 40 + i % 60}
    diff = [] if right else [
        f"rows: gold {5 + i % 10}, predicted {6 + i % 10}", "column mapping: identity",
        "missing rows (0 in gold, not in predicted)", "extra rows (1 in predicted, not in gold; first 1):",
        f"  + ('customer {i % 97}', {round(rng.uniform(10, 900), 2)})",
        "structure: limit: gold 5 | pred 6"]
    return {
        "id": f"case-{i:05d}", "nodeid": f"suite/test_{table}.yaml::case-{i:05d}",
        "file": f"suite/test_{table}.yaml", "line": 4 + 6 * (i // len(TABLES)), "kind": "sql",
        "difficulty": ("easy", "medium", "hard", "extra")[i % 4], "tags": [table],
        "severity": None, "question": f"Which customers of region r{i % 7} spent the most on "
        f"{table}, top {5 + i % 10} by total?", "datasource": "shop", "outcome":
        "passed" if right else "failed", "status": "passed" if right else "failed",
        "metrics": metrics, "labels": {}, "thresholds": {"execution_accuracy": {"min": 1.0}},
        "default_thresholds": [], "failed_metrics": [] if right else ["execution_accuracy"],
        "predicted": predicted, "gold": gold, "signature": f"{rng.getrandbits(64):016x}",
        "error": None, "reason": None, "diff": diff, "near_miss": None if right else [],
        "details": {}, "settings": {}, "baseline_status": None, "standing": None,
        "duration_s": round(rng.uniform(0.4, 3.2), 3)}


def write_reports(folder: Path, runs: int, cases: int, unique: bool, seed: int = 0) -> list[Path]:
    from pytest_queryeval.conclude import aggregates_of
    from pytest_queryeval.report.json_report import write_report

    base = random.Random(seed)
    skill = [base.uniform(0.3, 1.0) for _ in range(cases)]
    paths = []
    for run in range(runs):
        rng = random.Random(seed * 1000 + run)
        drift = 0.03 * (run - runs / 2)  # the model gets a little better run by run
        records = [_record(i, run, min(1.0, max(0.0, skill[i] + drift)), rng, unique)
                   for i in range(cases)]
        aggregates = aggregates_of(records)
        overall = aggregates["overall"]
        ex = overall["metrics"]["execution_accuracy"]["mean"]
        gates = [
            {"name": "execution_accuracy.mean", "metric": "execution_accuracy", "stat": "mean",
             "scope": "suite", "value": ex, "op": ">=", "limit": 0.7, "passed": ex >= 0.7},
            {"name": "pass_rate", "metric": "pass_rate", "stat": "pass_rate", "scope": "suite",
             "value": overall["pass_rate"], "op": ">=", "limit": 0.8,
             "passed": overall["pass_rate"] >= 0.8}]
        report = {"version": 1, "run": {
            "started": f"2026-11-{10 + run:02d}T03:00:00+00:00", "model": f"text2sql-v{run + 1}",
            "predictions": f"file:predictions/model-v{run + 1}.jsonl", "gating": "strict",
            "settings": {"sql": {"dialect": "sqlite"}}}, "cases": records,
            "aggregates": aggregates, "gates": gates}
        path = folder / f"run-{run + 1:02d}.json"
        write_report(report, path)
        paths.append(path)
    return paths


def _chromium() -> str:
    for name in (os.environ.get("QUERYEVAL_CHROMIUM"), "chromium", "chromium-browser",
                 "google-chrome"):
        if name and shutil.which(name):
            return str(shutil.which(name))
    raise SystemExit("chromium not found (scripts/install-chromium.sh)")


def load(exe: str, url: str, profile: Path) -> tuple[float, float]:
    """(milliseconds to interactive as the page measured it, wall seconds of the process)."""
    cmd = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
           "--disable-component-update", "--disable-sync", "--no-first-run",
           f"--user-data-dir={profile}", "--hide-scrollbars", "--dump-dom", url]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False)
    wall = time.perf_counter() - t0
    found = re.search(r'<body[^>]* data-render-ms="(\d+)" data-ready="1"', proc.stdout)
    if not found:
        raise SystemExit(f"the page did not render: {proc.stderr[-2000:]}")
    phases = re.search(r'data-phases="([^"]*)"', proc.stdout)
    if phases and os.environ.get("BENCH_VIEW_PHASES"):
        print("   phases (ms since the navigation began):", html.unescape(phases.group(1)))
    return float(found.group(1)), wall


def measure(exe: str, folder: Path, name: str, paths: list[Path], repeat: int,
            ) -> tuple[int, float]:
    """Write the page of ``paths`` and load it; (its size in bytes, the slowest median time to
    interactive in seconds)."""
    from pytest_queryeval.conclude.cli import main as queryeval

    out = folder / f"{name}.html"
    t0 = time.perf_counter()
    assert queryeval(["view", *map(str, paths), "-o", str(out)]) == 0
    build = time.perf_counter() - t0
    size = out.stat().st_size
    json_mb = sum(p.stat().st_size for p in paths) / 1e6
    print(f"[{name}] JSON reports {json_mb:.1f} MB; page {size / 1e6:.2f} MB; "
          f"queryeval view {build:.2f} s")
    worst = 0.0
    for what, fragment in (("grid", ""), ("grid + a case's panel",
                                          "#filter=changed&case=case-00007")):
        ms, walls = [], []
        for i in range(repeat):
            m, w = load(exe, out.as_uri() + fragment, folder / f"profile-{name}-{len(what)}-{i}")
            ms.append(m)
            walls.append(w)
        worst = max(worst, statistics.median(ms) / 1000)
        print(f"[{name}] time to interactive ({what}): median {statistics.median(ms) / 1000:.2f} s "
              f"(loads: {', '.join(f'{x / 1000:.2f}' for x in ms)} s); the whole chromium "
              f"--dump-dom process: median {statistics.median(walls):.2f} s")
    return size, worst


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs-of-suite", type=int, default=10, help="JSON reports (runs)")
    ap.add_argument("--cases", type=int, default=2000, help="cases per run")
    ap.add_argument("--repeat", type=int, default=3, help="page loads per measure")
    args = ap.parse_args()
    print(machine())
    exe = _chromium()
    ok = True
    with tempfile.TemporaryDirectory(prefix="bench_view_") as tmp:
        folder = Path(tmp)
        (folder / "empty.html").write_text('<body data-render-ms="0" data-ready="1">')
        walls = [load(exe, (folder / "empty.html").as_uri(), folder / f"profile-empty-{i}")[1]
                 for i in range(args.repeat)]
        print(f"an empty page: the whole chromium --dump-dom process: median "
              f"{statistics.median(walls):.2f} s (the browser's own start)")
        for name, unique in (("three answers per case", False), ("a new answer every run", True)):
            sub = folder / ("unique" if unique else "repeating")
            sub.mkdir()
            paths = write_reports(sub, args.runs_of_suite, args.cases, unique)
            print(f"{args.runs_of_suite} runs x {args.cases} cases, {name}:")
            size, tti = measure(exe, sub, "unique" if unique else "repeating", paths, args.repeat)
            fine = size < TARGET_BYTES and tti < TARGET_SECONDS
            ok = ok and fine
            print(f"  file size {size / 1e6:.2f} MB (target < {TARGET_BYTES / 1e6:.0f} MB), "
                  f"time to interactive {tti:.2f} s (target < {TARGET_SECONDS:.0f} s): "
                  f"{'OK' if fine else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
