"""Benchmark: table metrics on large result pairs vs straightforward reference algorithms.

Usage::

    .venv/bin/python bench/bench_table_metrics.py [--rows 1000000] [--repeat 3]

For each scenario it prints the median wall time of ``table_metrics`` (all seven metrics) and of
a straightforward implementation of the published algorithms, measured in the same run on the
same tables:

- test-suite EX as published: rows sorted by ``str(x)+str(type(x))`` (quick reject), then every
  column permutation rebuilt as a list of permuted rows, ``set`` + multiset comparison;
- BIRD EX ``set(pred) == set(gold)``; mini-dev Soft-F1 with per-row list membership loops;
- Denodo: ``pandas.DataFrame(rows).astype(str)`` + the same loops, and ``percent_overlapp`` on
  ``DataFrame.values`` (skipped, and said so, when pandas is missing).

``table_metrics`` takes its numpy fast path on these tables when numpy is installed (the
``fast`` extra) and its pure-Python path otherwise; the header line says which. The reference
side does not depend on it.

A fully naive pairwise multiset comparison (``list.remove`` per row, O(n^2)) cannot run at a
million rows; it is timed on small tables and extrapolated quadratically (printed as such).
Tables are built the way a driver returns them: fresh tuples and cell objects allocated in
result order.
"""

from __future__ import annotations

import argparse
import gc
import itertools
import random
import statistics
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from pytest_queryeval.metrics.table import table_metrics
from pytest_queryeval.results import ResultTable

Row = tuple[Any, ...]


def make_row(i: int) -> Row:
    # i + 0: a fresh int object, allocated with its row as a driver allocates every cell (the
    # shuffled tables would otherwise share the gold side's ints, scattered in memory)
    return (i + 0, f"name{i % 50_000}", (i % 1000) / 8)


def build(n: int, seed: int = 1) -> dict[str, tuple[ResultTable, ResultTable, bool]]:
    order = list(range(n))
    random.Random(seed).shuffle(order)
    gold = ResultTable(["id", "name", "score"], [make_row(i) for i in range(n)])
    same = ResultTable(["id", "name", "score"], [make_row(i) for i in range(n)])
    permuted = ResultTable(
        ["score", "id", "name"], [(r[2], r[0], r[1]) for r in (make_row(i) for i in order)]
    )
    one_diff = ResultTable(
        ["id", "name", "score"],
        [make_row(i) if i != order[0] else (-1, "x", 0.5) for i in order],
    )
    return {
        "identical, same order (ORDER BY)": (gold, same, True),
        "shuffled rows + permuted columns": (gold, permuted, False),
        "shuffled, one row differs": (gold, one_diff, False),
    }


# ---- straightforward implementations of the published algorithms ----------------------------


def ref_tsse(g: list[Row], p: list[Row], ordered: bool) -> bool:
    if not g and not p:
        return True
    if len(g) != len(p) or len(g[0]) != len(p[0]):
        return False

    def unorder(r: Row) -> Row:
        return tuple(sorted(r, key=lambda x: str(x) + str(type(x))))

    ug, up = [unorder(r) for r in g], [unorder(r) for r in p]
    if (ug != up) if ordered else (set(ug) != set(up)):
        return False
    width = len(g[0])
    for perm in itertools.product(*[range(width)] * width):
        if len(set(perm)) != width:
            continue
        pp = [tuple(r[i] for i in perm) for r in p]
        if ordered:
            if g == pp:
                return True
        elif set(g) == set(pp):
            counts: defaultdict[Row, int] = defaultdict(int)
            for r in g:
                counts[r] += 1
            ok = True
            for r in pp:
                counts[r] -= 1
                if counts[r] < 0:
                    ok = False
                    break
            if ok:
                return True
    return False


def ref_positional(gold_rows: list[Row], pred_rows: list[Row]) -> tuple[float, float]:
    gold, pred = list(dict.fromkeys(gold_rows)), list(dict.fromkeys(pred_rows))
    match: list[float] = []
    p_only: list[float] = []
    t_only: list[float] = []
    for i, g in enumerate(gold):
        if i >= len(pred):
            match.append(0)
            t_only.append(1)
            continue
        p, w = pred[i], len(g)
        m = po = to = 0
        for v in p:
            if v in g:
                m += 1
            else:
                po += 1
        for v in g:
            if v not in p:
                to += 1
        match.append(m / w)
        p_only.append(po / w)
        t_only.append(to / w)
    for _ in range(len(pred) - len(gold)):
        match.append(0)
        p_only.append(1)
    tp, fp, fn = sum(match), sum(p_only), sum(t_only)
    prec = tp / (tp + fp) if tp + fp else 0
    rec = tp / (tp + fn) if tp + fn else 0
    f1 = 2 * prec * rec / (prec + rec) if prec + rec else 0
    scores = [len(set(g) & set(p)) / len(g) for g, p in zip(gold, pred, strict=False)]
    return f1, (sum(scores) / len(gold_rows) if gold_rows else 0)


def ref_all(gold: ResultTable, pred: ResultTable, ordered: bool) -> None:
    g, p = gold.rows, pred.rows
    ref_tsse(g, p, ordered)
    _ = set(p) == set(g)
    ref_positional(g, p)
    try:
        import pandas as pd
    except ImportError:
        return
    gdf, pdf = pd.DataFrame(g), pd.DataFrame(p)
    ref_positional(
        list(gdf.astype(str).itertuples(index=False, name=None)),
        list(pdf.astype(str).itertuples(index=False, name=None)),
    )
    gflat, pflat = gdf.values.flatten(), pdf.values.flatten()
    gc_, pc_ = Counter(gflat[~pd.isna(gflat)]), Counter(pflat[~pd.isna(pflat)])
    _ = sum(min(gc_[k], pc_[k]) for k in gc_.keys() | pc_.keys())


def naive_pairwise_ex(g: list[Row], p: list[Row]) -> bool:
    remaining = list(g)
    for r in p:
        try:
            remaining.remove(r)
        except ValueError:
            return False
    return not remaining


# ---- timing ------------------------------------------------------------------------------------


def median_time(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        gc.collect()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument(
        "--ref-repeat", type=int, default=None, help="repeats of the reference (default: --repeat)"
    )
    ap.add_argument("--pairwise-rows", type=int, nargs="*", default=[2_000, 4_000, 8_000])
    args = ap.parse_args()
    ref_repeat = args.ref_repeat or args.repeat
    try:
        import pandas  # noqa: F401

        denodo_note = "Denodo part uses pandas, as the reference does"
    except ImportError:
        denodo_note = "pandas missing: reference timing EXCLUDES the Denodo metrics"
    try:
        import numpy  # noqa: F401

        ours_note = "ours: numpy fast path"
    except ImportError:
        ours_note = "ours: pure Python (numpy missing)"
    print(f"rows={args.rows:,}  repeat={args.repeat} (reference {ref_repeat})  {denodo_note}; {ours_note}")
    print(f"{'scenario':38s} {'ours (s)':>10s} {'reference (s)':>14s} {'ratio':>8s}")
    for name, (gold, pred, ordered) in build(args.rows).items():
        ours = median_time(
            lambda g=gold, p=pred, o=ordered: table_metrics(g, p, order_matters=o), args.repeat
        )
        ref = median_time(lambda g=gold, p=pred, o=ordered: ref_all(g, p, o), ref_repeat)
        print(f"{name:38s} {ours:10.2f} {ref:14.2f} {ref / ours:7.1f}x", flush=True)

    print("\nnaive pairwise multiset EX (list.remove per row, O(n^2)), shuffled identical tables:")
    last_n, last_t = 0, 0.0
    for n in args.pairwise_rows:
        tables = build(n)["shuffled, one row differs"]
        g = tables[0].rows
        p = list(reversed(g))
        t = median_time(lambda g=g, p=p: naive_pairwise_ex(g, p), 1)
        gt, pt = tables[0], ResultTable(tables[0].columns, p)
        ours = median_time(lambda g=gt, p=pt: table_metrics(g, p, order_matters=False), 1)
        print(f"  {n:>9,} rows: naive {t:8.3f} s   ours {ours:8.3f} s   ratio {t / ours:8.1f}x (measured)")
        last_n, last_t = n, t
    if last_n:
        est = last_t * (args.rows / last_n) ** 2
        print(
            f"  {args.rows:>9,} rows: naive ~{est:,.0f} s "
            f"(EXTRAPOLATED quadratically from {last_n:,}; not run)"
        )


if __name__ == "__main__":
    main()
