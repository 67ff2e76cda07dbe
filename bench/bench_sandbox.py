"""Benchmark: the sandbox's per-query cost, against in-process execution, on the example suite.

Run: ``.venv/bin/python bench/bench_sandbox.py [--repeat 200] [--runs 5]``.

Every gold and model-v2 query of ``example_suite/sql`` runs on ``example_suite/data/chinook.sqlite``
through two sources of the same file: ``isolation: thread`` (in the pytest process, as before the
sandbox) and ``isolation: process`` (the default: a warm worker process, started before timing).
Each run executes every query ``--repeat`` times per source, interleaved query by query, so host
noise hits both alike; the median over ``--runs`` runs is reported. Printed: per-query time of
each, the overhead per query (process minus thread, in microseconds: pickling the request and the
rows, two pipe transfers), the ratio process / thread, and the round trip of an empty call.
Target: overhead under 1 ms per query warm. The cold start (a worker's first query: Python
start-up and imports) is printed apart; it is paid once per session and again after a kill.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import ROOT, machine

sys.path.insert(0, str(ROOT / "src"))

import yaml

from pytest_queryeval._isolation.sandbox import close_all, shared_sandbox
from pytest_queryeval.sources import open_source

SUITE = ROOT / "example_suite"


def queries() -> list[str]:
    """The example suite's SQL golds (every alternative) and model-v2 predictions."""
    out: list[str] = []
    ids: set[str] = set()
    for path in sorted((SUITE / "sql").glob("test_*.yaml")):
        for case in yaml.safe_load(path.read_text(encoding="utf-8"))["cases"]:
            ids.add(case["id"])
            gold = case.get("gold")
            out.extend(gold if isinstance(gold, list) else [gold] if gold else [])
            if isinstance(case.get("predicted"), str):
                out.append(case["predicted"])
    for line in (SUITE / "predictions" / "model-v2.jsonl").read_text().splitlines():
        rec = json.loads(line)
        if rec["id"] in ids and isinstance(rec.get("predicted"), str):
            out.append(rec["predicted"])
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=200, help="executions per query per run")
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    print(f"machine: {machine()}")
    db = str(SUITE / "data" / "chinook.sqlite")
    thread = open_source("chinook", {"type": "sqlite", "path": db, "isolation": "thread"})
    process = open_source("chinook", {"type": "sqlite", "path": db, "isolation": "process"})
    qs = []
    for q in queries():  # the ones that run (a wrong prediction may fail: still a query)
        try:
            thread.execute(q, trusted=True)
            qs.append(q)
        except Exception:
            pass
    t0 = time.perf_counter()
    process.execute(qs[0], trusted=True)
    cold = time.perf_counter() - t0
    rows = sum(len(thread.execute(q, trusted=True).rows) for q in qs)
    per_thread: list[float] = []
    per_process: list[float] = []
    for _ in range(args.runs):
        spent = {"thread": 0.0, "process": 0.0}
        for q in qs:
            for name, src in (("thread", thread), ("process", process)):
                t = time.perf_counter()
                for _ in range(args.repeat):
                    src.execute(q, trusted=True)
                spent[name] += time.perf_counter() - t
        n = len(qs) * args.repeat
        per_thread.append(spent["thread"] / n * 1e6)
        per_process.append(spent["process"] / n * 1e6)
    box = shared_sandbox("bench")  # the bare round trip: an empty call, no query
    box.call(os.getpid, timeout=60)
    trips = []
    for _ in range(args.runs):
        t = time.perf_counter()
        for _ in range(2000):
            box.call(os.getpid, timeout=60)
        trips.append((time.perf_counter() - t) / 2000 * 1e6)
    close_all()
    th, pr = statistics.median(per_thread), statistics.median(per_process)
    over = pr - th
    print(f"\n{len(qs)} queries of the example suite ({rows:,} result rows in all), "
          f"{args.repeat} executions each per run, {args.runs} runs (medians)")
    print(f"  in process (isolation: thread)     {th:9.1f} us per query "
          f"(runs: {', '.join(f'{x:.1f}' for x in per_thread)})")
    print(f"  sandbox worker (isolation: process) {pr:8.1f} us per query "
          f"(runs: {', '.join(f'{x:.1f}' for x in per_process)})")
    print(f"  round trip of an empty call (os.getpid) {statistics.median(trips):6.1f} us")
    print(f"  cold start of the worker (first query, once per session and after a kill): "
          f"{cold * 1e3:.0f} ms")
    print(f"\nsandbox overhead per query (warm): {over:.1f} us; ratio process / in-process "
          f"{pr / th:.2f}x")
    print(f"target under 1 ms per query warm: {'MET' if over < 1000 else 'NOT MET'} "
          f"({over / 1000:.3f} ms)")


if __name__ == "__main__":
    main()
