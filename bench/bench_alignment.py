"""Benchmark: fast BuildingQA alignment metrics against the brute-force reference algorithm.

Run: ``.venv/bin/python bench/bench_alignment.py [--quick]``. Prints medians and ratios, both
implementations timed in this process. Cases:

* bldg11 walk-through: gold AHU->VAV->sensor query (377 rows) vs the 2-pattern cross product
  (4,268 rows), real graph loaded with pyoxigraph;
* synthetic 20,000 x 4 vs 20,000 x 5 (generator of perf-anchors.md §2): the brute force cannot
  finish at that size (quadratic in rows, 120 permutations), so it runs on scaled-down sizes and
  is extrapolated quadratically, and the output says so;
* synthetic 100,000 x 8 vs 100,000 x 10 (same generator, 1,814,400 permutations): fast only.
"""

from __future__ import annotations

import argparse
import itertools
import os
import random
import statistics
import string
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "src"), str(ROOT)]

from tests.sparql_metrics.brute_force import bf_table_metrics  # noqa: E402

from pytest_queryeval.metrics.alignment import alignment_details  # noqa: E402
from pytest_queryeval.results import ResultTable, Term  # noqa: E402

SHARED = ROOT.parent / "shared" / "data"


class Timing:
    """Median wall and CPU seconds of a few runs (CPU time is the fairer figure on a shared box)."""

    def __init__(self, wall: list[float], cpu: list[float]) -> None:
        self.wall = statistics.median(wall)
        self.cpu = statistics.median(cpu)

    def ms(self) -> str:
        return f"{self.wall * 1e3:10.2f} ms wall {self.cpu * 1e3:10.2f} ms CPU"

    def s(self) -> str:
        return f"{self.wall:8.2f} s wall {self.cpu:8.2f} s CPU"


def timed(fn: Callable[[], Any], runs: int) -> tuple[Timing, Any]:
    wall, cpu, out = [], [], None
    for _ in range(runs):
        w0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        wall.append(time.perf_counter() - w0)
        cpu.append(time.process_time() - c0)
    return Timing(wall, cpu), out


def synthetic(n: int, gold_cols: int, pred_cols: int, true_index: int, seed: int = 0):
    """perf-anchors.md §2: random 10-char strings from a 2,000-word vocabulary; half of the
    predicted rows copy gold rows under shuffled columns (plus extra columns), half are random.
    ``true_index`` is the position of the true alignment in itertools.permutations order."""
    rnd = random.Random(seed)
    vocab = ["".join(rnd.choices(string.ascii_lowercase, k=10)) for _ in range(2000)]
    terms = [Term("literal", v) for v in vocab]
    gold = [tuple(rnd.choice(terms) for _ in range(gold_cols)) for _ in range(n)]
    true = next(itertools.islice(itertools.permutations(range(pred_cols), gold_cols), true_index, None))
    extra = [j for j in range(pred_cols) if j not in true]
    pred = []
    for k in range(n):
        row: list[Term] = [rnd.choice(terms) for _ in range(pred_cols)]
        if k < n // 2:
            for i, j in enumerate(true):
                row[j] = gold[k][i]
        pred.append(tuple(row))
    rnd.shuffle(pred)
    g = ResultTable([f"g{i}" for i in range(gold_cols)], gold)
    p = ResultTable([f"p{j}" for j in range(pred_cols)], pred)
    return g, p, true, extra


def fast(g: ResultTable, p: ResultTable):
    return alignment_details(g, p, kind="sparql", arity_from="result")


def bldg11_tables():
    import pyoxigraph as ox

    sys.path.insert(0, str(ROOT / "tests"))
    from tests.sparql_metrics.helpers import run_select
    from tests.sparql_metrics.test_bldg11_walkthrough import GOLD, PRED, PREFIXES

    store = ox.Store()
    path = SHARED / "brick" / "buildingqa" / "eval_buildings" / "bldg11.ttl"
    store.bulk_load(path=str(path), format=ox.RdfFormat.TURTLE)
    return run_select(store, GOLD), run_select(store, PREFIXES + PRED["cross"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer runs, smaller brute-force sizes")
    ap.add_argument("--skip-100k", action="store_true")
    args = ap.parse_args()
    runs = 3 if args.quick else 7
    bf_runs = 1 if args.quick else 3

    print(f"python {sys.version.split()[0]}; fast: median of {runs} runs; ratios use CPU time")
    print("\n== bldg11 walk-through: 377 gold rows vs 4,268 predicted rows, 2 x 2 columns")
    gold, pred = bldg11_tables()
    t_fast, d = timed(lambda: fast(gold, pred), runs)
    t_bf, want = timed(lambda: bf_table_metrics(gold, pred, "sparql"), bf_runs)
    print(f"  fast        {t_fast.ms()}   {_fmt(d.metrics)}")
    print(f"  brute force {t_bf.ms()}   {_fmt(want)}   (median of {bf_runs})")
    print(
        f"  speed-up    {t_bf.cpu / t_fast.cpu:,.0f} x (CPU), {t_bf.wall / t_fast.wall:,.0f} x (wall);"
        f" same scores and mapping: {_same(d.metrics, want) and d.mapping == want['mapping']}"
    )

    print("\n== synthetic 20,000 x 4 vs 20,000 x 5 (5P4 = 120 mappings, true one at index 69)")
    g, p, true, _ = synthetic(20_000, 4, 5, 69)
    t_fast, d = timed(lambda: fast(g, p), runs)
    print(f"  fast        {t_fast.ms()}   {_fmt(d.metrics)}")
    print(f"              mapping {d._perm} (true {true}); {d.leaves} full, {d.nodes} partial scored")
    sizes = (60, 120) if args.quick else (100, 200)
    last: Timing | None = None
    for n in sizes:
        gs, ps, _, _ = synthetic(n, 4, 5, 69)
        tb, want = timed(lambda: bf_table_metrics(gs, ps, "sparql"), 1)  # noqa: B023
        tf, ds = timed(lambda: fast(gs, ps), runs)  # noqa: B023
        last = tb
        print(
            f"  n={n:<5} brute force {tb.s()} (1 run); fast {tf.ms()}; same scores: {_same(ds.metrics, want)}"
        )
    assert last is not None
    n0, scale = sizes[-1], (20_000 / sizes[-1]) ** 2
    est_cpu, est_wall = last.cpu * scale, last.wall * scale
    print(
        f"  brute force at n=20,000 NOT RUN (quadratic in rows): extrapolated from n={n0} x{scale:,.0f}"
        f" = ~{est_cpu:,.0f} s CPU (~{est_cpu / 86400:.1f} days);"
        f" ratio ~{est_cpu / t_fast.cpu:,.0f} x (CPU), ~{est_wall / t_fast.wall:,.0f} x (wall)"
    )

    if not args.skip_100k:
        print("\n== synthetic 100,000 x 8 vs 100,000 x 10 (10P8 = 1,814,400 mappings), fast only")
        g, p, true, _ = synthetic(100_000, 8, 10, 1_000_000)
        t_fast, d = timed(lambda: fast(g, p), 1 if args.quick else 3)
        print(f"  fast        {t_fast.s()}   {_fmt(d.metrics)}")
        print(f"              mapping {d._perm} (true {true}); {d.leaves} full, {d.nodes} partial scored")
    print(f"\nload average at end: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


def _fmt(m: dict[str, object]) -> str:
    keys = ("entity_set_f1", "row_match_f1", "exact_match_f1")
    return " ".join(f"{k.split('_')[0]}={float(m[k]):.4f}" for k in keys)  # type: ignore[arg-type]


def _same(a: dict[str, object], b: dict[str, object]) -> bool:
    keys = ("entity_set_f1", "row_match_f1", "exact_match_f1")
    return all(a[k] == b[k] for k in keys)


if __name__ == "__main__":
    main()
