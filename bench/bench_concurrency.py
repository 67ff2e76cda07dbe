"""Benchmark: predictions requested ahead in a bounded pool, ``concurrency: 16`` against
``concurrency: 1``, serially and with ``pytest -n 2`` (issue 17: at least 10x faster).
The bound is the session's, also under ``-n 2`` (the workers share it): ``concurrency: 1``
is one request at a time for the whole run.

Run: ``.venv/bin/python bench/bench_concurrency.py [--cases 200] [--latency 0.5] [--runs 1]``.

A loopback HTTP server in this process stands in for the user's model service: it answers every
request after ``--latency`` seconds (a model behind an API), and counts the requests and the
most it held at once. The suite: ``--cases`` SDMX cases (scored without a data source, so the
run is bound by the model's latency) whose ``predictions:`` is that endpoint. Each
configuration is a whole ``python -m pytest`` process (start-up, collection, xdist workers,
scoring and the JSON report included); runs are interleaved; every run must ask each case
exactly once, never hold more requests at once than the bound, and give the same aggregates.
The processes run as a user's Python does by default: with bytecode caches (a session that
sets ``PYTHONDONTWRITEBYTECODE`` has every interpreter compile pytest, the plugin and their
imports from source, about 3 s per process on a 2-vCPU host; a warm-up run fills the
caches). Prints medians and the ratios of the same run: of whole processes, and of the time
beyond the fixed cost (the same run against an instant model, ``latency 0``: start-up, xdist
workers, scoring, reports), which is the part concurrency acts on and what the ratio tends
to on a quiet machine with a slow model.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parent.parent))  # tests.fixtures

from _common import check, machine, median, run_pytest, spread
from tests.fixtures.model_service import ModelService, Request

SELECTION = {"indicator_selection": [{"dataset_id": "IMF.RES:WEO", "dimensions": [
    {"dimension_name": "INDICATOR", "values": [{"id": "NGDP", "name": "GDP"}]}]}]}


class StandInModelService(ModelService):
    """Stand-in for the user's model service: every answer takes ``latency`` seconds."""

    def __init__(self, latency: float) -> None:
        super().__init__()
        self.latency = latency

    def delay(self, request: Request) -> float:
        return self.latency

    def answer(self, request: Request) -> tuple[int, Any]:
        return 200, {"predicted": SELECTION}


def write_suite(root: Path, url: str, n: int) -> None:
    (root / "pytest.ini").write_text("[pytest]\nqueryeval_files = test_*.yaml\n")
    (root / "queryeval.yaml").write_text(json.dumps({"predictions": {
        "source": "http", "url": url, "response_path": "predicted", "timeout": 60,
        "retries": 0, "concurrency": 1}}))
    cases = [{"id": f"q{i:04d}", "conversation": [
        {"role": "user", "content": f"GDP, question {i}", "target": SELECTION}]}
        for i in range(n)]
    (root / "test_cases.yaml").write_text(json.dumps({
        "kind": "sdmx", "thresholds": {"macro_precision": 1.0}, "cases": cases}))


def aggregates(path: Path) -> Any:
    overall = json.loads(path.read_text())["aggregates"]["overall"]
    return overall["count"], overall["pass_rate"], {
        m: round(s["mean"], 9) for m, s in overall["metrics"].items() if not m.endswith("_seconds")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", type=int, default=200)
    ap.add_argument("--latency", type=float, default=0.5, help="seconds per model answer")
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--high", type=int, default=16, help="the concurrency compared with 1")
    args = ap.parse_args()
    print(f"machine: {machine()}")
    server = StandInModelService(args.latency).start()
    url = f"{server.url}/predict"
    configs = [(f"concurrency: {c}, {label}", c, workers)
               for label, workers in (("serial", []), ("-n 2", ["-n", "2"]))
               for c in (1, args.high)]
    configs += [(f"latency 0, {label}", args.high, workers)
                for label, workers in (("serial", []), ("-n 2", ["-n", "2"]))]
    times: dict[str, list[float]] = {name: [] for name, _, _ in configs}
    peaks: dict[str, int] = {}
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    with tempfile.TemporaryDirectory(prefix="qe-bench-concurrency-") as tmp:
        root = Path(tmp)
        write_suite(root, url, args.cases)
        server.latency = 0.0
        for workers in ([], ["-n", "2"]):  # warm-up: bytecode caches, as after any first run
            run_pytest(root, "-q", "-p", "no:cacheprovider", *workers, env=env)
        expected = None
        for _ in range(args.runs):
            for name, conc, workers in configs:
                server.reset()
                server.latency = 0.0 if name.startswith("latency 0") else args.latency
                t, out, rc = run_pytest(root, "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
                                        f"--queryeval-concurrency={conc}", *workers,
                                        "--queryeval-json=report.json", env=env)
                check(rc, out, {0}, name)
                if set(server.calls.values()) != {1} or len(server.calls) != args.cases:
                    raise SystemExit(f"{name}: a case was not asked exactly once "
                                     f"({len(server.calls)} cases, counts "
                                     f"{sorted(set(server.calls.values()))})")
                if server.peak > conc:
                    raise SystemExit(f"{name}: {server.peak} requests at once, over {conc}")
                got = aggregates(root / "report.json")
                if expected is None:
                    expected = got
                elif got != expected:
                    raise SystemExit(f"{name}: aggregates differ from the first run")
                times[name].append(t)
                peaks[name] = max(peaks.get(name, 0), server.peak)
    print(f"\n{args.cases} cases, a loopback stand-in model answering in {args.latency:g} s; "
          "whole pytest process each (start-up included)")
    for name, _, _ in configs:
        print(f"  {name:<24} {spread(times[name])}   peak in flight {peaks[name]}")
    for label in ("serial", "-n 2"):
        slow = median(times[f"concurrency: 1, {label}"])
        fast = median(times[f"concurrency: {args.high}, {label}"])
        fixed = median(times[f"latency 0, {label}"])
        verdict = "meets" if slow / fast >= 10 else "misses"
        net = (f"{(slow - fixed) / (fast - fixed):.1f}x beyond the fixed {fixed:.1f} s"
               if fast - fixed > 0.5 else f"n/a beyond the fixed {fixed:.1f} s (it varied "
               "more than the model-bound part: a loaded host)")
        print(f"  ratio concurrency 1 / {args.high}, {label}: {slow / fast:.1f}x whole process "
              f"({verdict} the 10x target); {net}")
    serial_slow = median(times["concurrency: 1, serial"])
    print(f"  ratio serial concurrency 1 / -n 2 concurrency {args.high}: "
          f"{serial_slow / median(times[f'concurrency: {args.high}, -n 2']):.1f}x")
    print("  each case asked exactly once in every run; aggregates identical")


if __name__ == "__main__":
    main()
