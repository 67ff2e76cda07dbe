"""Spider structural evaluation throughput on the 1,034 dev pairs.

Compares, in the same run, the cached scorer (each query text parsed once per schema) with a
naive reference that re-parses both queries of every pair, and with the official evaluator's
in-process figure from research/perf-anchors.md (median 1,123 pairs/s on this machine class).
Also checks that both paths give identical per-item results.

    .venv/bin/python bench/bench_spider.py [--runs 5] [--data ../shared/data]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from pytest_queryeval.metrics.spider import Schema, structure_scores
from pytest_queryeval.sources import spider_tables as schema_mod

OFFICIAL_PAIRS_PER_S = 1123.0  # perf-anchors.md §1, in-process evaluate() loop, median


def load(spider: Path) -> list[tuple[str, str, str]]:
    gold = [ln.strip().split("\t") for ln in
            (spider / "gold_example.txt").read_text().splitlines() if ln.strip()]
    pred = [ln.strip().split("\t")[0] for ln in
            (spider / "pred_example.txt").read_text().splitlines() if ln.strip()]
    return [(g[0], g[1], p) for g, p in zip(gold, pred, strict=True)]


def clear_caches() -> None:
    for _, dbs in schema_mod._TABLES_JSON.values():
        for s in dbs.values():
            s.clear_cache()


def run(pairs: list[tuple[str, str, str]], tables: str,
        naive: bool) -> tuple[float, float, list]:
    """Wall and CPU seconds for one pass (CPU time is the fairer figure on a shared box)."""
    clear_caches()
    out = []
    t0, c0 = time.perf_counter(), time.process_time()
    for gold, db, pred in pairs:
        schema = Schema.from_tables_json(tables, db)
        if naive:
            schema.clear_cache()
        out.append(structure_scores(gold, pred, schema))
    return time.perf_counter() - t0, time.process_time() - c0, out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--data", default=str(Path(__file__).resolve().parents[2] / "shared" / "data"))
    args = ap.parse_args(argv)
    spider = Path(args.data) / "spider"
    pairs = load(spider)
    tables = str(spider / "tables.json")
    # warm-up: imports (sqlglot, used for parse-error reasons) and tables.json parsing
    run(pairs[:50], tables, naive=False)
    times: dict[str, list[float]] = {k: [] for k in ("cached", "naive", "cached_cpu",
                                                      "naive_cpu")}
    cached_res: list = []
    naive_res: list = []
    for _ in range(args.runs):
        wall, cpu, cached_res = run(pairs, tables, naive=False)
        times["cached"].append(wall)
        times["cached_cpu"].append(cpu)
        wall, cpu, naive_res = run(pairs, tables, naive=True)
        times["naive"].append(wall)
        times["naive_cpu"].append(cpu)
    same = all((a.exact, a.hardness, a.partial, a.pred_parse_error)
               == (b.exact, b.hardness, b.partial, b.pred_parse_error)
               for a, b in zip(cached_res, naive_res, strict=True))
    n = len(pairs)
    rate = {k: n / statistics.median(v) for k, v in times.items()}
    best = {k: n / min(v) for k, v in times.items()}
    print(f"pairs: {n}, runs: {args.runs} (median [best]; cold parse cache each run)")
    print("                                     wall pairs/s        cpu pairs/s")
    for key, label in (("cached", "cached (parse once per query text)"),
                       ("naive", "naive (re-parse every pair)       ")):
        print(f"{label}: {rate[key]:8.0f} [{best[key]:6.0f}]   "
              f"{rate[key + '_cpu']:8.0f} [{best[key + '_cpu']:6.0f}]")
    print(f"official evaluator (perf-anchors, idle box, wall): {OFFICIAL_PAIRS_PER_S:.0f}")
    print(f"ratio cached/naive (wall): {rate['cached'] / rate['naive']:.2f}x")
    print(f"cached/official: wall {rate['cached'] / OFFICIAL_PAIRS_PER_S:.2f}x, "
          f"cpu {rate['cached_cpu'] / OFFICIAL_PAIRS_PER_S:.2f}x (target >= 3x)")
    print(f"identical per-item results cached vs naive: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
