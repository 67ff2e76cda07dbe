"""Benchmark: counterexample search (issue 27) on the Chinook corpus, against plain execution.

Run: ``.venv/bin/python bench/bench_neighbours.py [--corpus chinook|concert_singer]
[--databases 200] [--seed 0]``.

For every pair of ``tests/data/neighbours/<corpus>.yaml`` (coincidental passes, each with the
reason it is wrong, and equivalent rewrites; ``concert_singer`` is Spider's database, built
from ``concert_singer.sql`` in a temporary directory), the search runs with the default
budget. Printed:
recall on the coincidental passes (target at least 90 %), false alarms on the equivalent ones
(target 0), the rows of each shrunk counterexample, the search's seconds per case (median and
max), and its ratio to the floor measured in the same run: executing the gold and the
prediction once on the real file and comparing them (what plain execution accuracy costs).
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import ROOT, machine

sys.path.insert(0, str(ROOT / "src"))

import yaml

from pytest_queryeval.metrics.table import table_metrics
from pytest_queryeval.neighbours import Budget, search
from pytest_queryeval.results import ResultTable

CHINOOK = ROOT / "example_suite" / "data" / "chinook.sqlite"
DATA = ROOT / "tests" / "data" / "neighbours"


def database(corpus: str, tmp: Path) -> Path:
    """The corpus's real database file."""
    if corpus == "chinook":
        return CHINOOK
    path = tmp / f"{corpus}.sqlite"
    conn = sqlite3.connect(path)
    conn.executescript((DATA / f"{corpus}.sql").read_text())
    conn.close()
    return path


def same_for(gold: str):  # type: ignore[no-untyped-def]
    ordered = "order by" in gold.lower()
    return lambda g, p: table_metrics(g, p, order_matters=ordered)["execution_accuracy"] == 1.0


def floor_seconds(db: Path, gold: str, predicted: str) -> float:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    t0 = time.perf_counter()
    tables = []
    for sql in (gold, predicted):
        cur = conn.execute(sql)
        tables.append(ResultTable([d[0] for d in cur.description], cur.fetchall()))
    same_for(gold)(*tables)
    conn.close()
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--databases", type=int, default=Budget().databases)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--corpus", choices=("chinook", "concert_singer"), default="chinook")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        run(args, database(args.corpus, Path(tmp)))


def run(args: argparse.Namespace, db: Path) -> None:
    corpus = yaml.safe_load((DATA / f"{args.corpus}.yaml").read_text())
    budget = Budget(databases=args.databases, seconds=Budget().seconds)
    print(f"machine: {machine()}")
    print(f"corpus: {args.corpus} ({db.name})")
    print(f"budget: {budget.databases} databases, {budget.seconds:g} s per case; seed {args.seed}")
    for kind in ("coincidental", "equivalent"):
        times, floors, flagged, rows = [], [], 0, []
        for pair in corpus[kind]:
            floors.append(floor_seconds(db, pair["gold"], pair["predicted"]))
            t0 = time.perf_counter()
            found = search(db, pair["gold"], pair["predicted"], same_for(pair["gold"]),
                           seed=args.seed, budget=budget)
            times.append(time.perf_counter() - t0)
            if found.counterexample is not None:
                flagged += 1
                rows.append(found.counterexample.row_count)
        n = len(corpus[kind])
        label = "recall" if kind == "coincidental" else "false alarms"
        print(f"{kind}: {label} {flagged}/{n}"
              + (f" ({100 * flagged / n:.0f} %, target >= 90 %)" if kind == "coincidental"
                 else " (target 0)"))
        print(f"  search per case: median {statistics.median(times):.3f} s, max {max(times):.3f} s;"
              f" floor (plain EX) median {statistics.median(floors) * 1000:.2f} ms; ratio "
              f"{statistics.median(times) / statistics.median(floors):.0f}x")
        if rows:
            print(f"  counterexample rows: median {statistics.median(rows):g}, max {max(rows)}")


if __name__ == "__main__":
    main()
