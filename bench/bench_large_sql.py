"""A large SQL pair against the engine's own fetch-and-compare, in one process.

Run: ``.venv/bin/python bench/bench_large_sql.py [--rows 1000000] [--runs 3]``

A SQLite table of ``--rows`` rows (int id, text name, real score, text city) is written to a
temporary file. Gold: ``SELECT id, name, score, city FROM t``; prediction: the same columns in
another order (``SELECT city, id, score, name FROM t ORDER BY name``): right, with its columns
merely permuted. Timed, interleaved, medians of ``--runs``:

* reference: ``sqlite3`` ``fetchall`` of both queries and a ``Counter`` of each;
* plugin: what the SQL kind does for the case: both queries through the ``sqlite`` source (the
  sandbox worker, the default), the seven table metrics (``compare_tables``), the four
  alignment metrics and the prediction's row signature;
* alignment alone: ``alignment_metrics`` (with its short cut for permuted columns) against
  ``alignment_details`` (the search, which the short cut spares), on the fetched tables.

Prints the ratios (target: plugin at most 3x the reference); CPU time beside wall time, since
the host's vCPUs are shared.
"""

from __future__ import annotations

import argparse
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import ROOT, machine, score_sql_pair

sys.path.insert(0, str(ROOT / "src"))

import pytest_queryeval.metrics.table  # noqa: F401 - score_sql_pair's, before the timing
from pytest_queryeval._isolation.sandbox import close_all
from pytest_queryeval.metrics.alignment import alignment_details, alignment_metrics
from pytest_queryeval.sources import open_source

GOLD = "SELECT id, name, score, city FROM t"
PRED = "SELECT city, id, score, name FROM t ORDER BY name"


def make_db(path: Path, rows: int) -> None:
    rng = random.Random(0)
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE t (id INTEGER, name TEXT, score REAL, city TEXT)")
    conn.executemany("INSERT INTO t VALUES (?, ?, ?, ?)",
                     ((i, f"name-{rng.randrange(50_000)}", rng.random() * 100 + 1,
                       f"city-{i % 977}") for i in range(rows)))
    conn.commit()
    conn.close()


def timed(fn: object) -> tuple[float, float, object]:
    t0, c0 = time.perf_counter(), time.process_time()
    out = fn()  # type: ignore[operator]
    return time.perf_counter() - t0, time.process_time() - c0, out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    print(f"machine: {machine()}")
    with tempfile.TemporaryDirectory(prefix="qe-bench-large-") as tmp:
        db = Path(tmp) / "large.sqlite"
        make_db(db, args.rows)
        src = open_source("large", {"type": "sqlite", "path": str(db), "timeout": 600,
                                    "max_rows": 10 * args.rows, "max_bytes": 1 << 32,
                                    "max_memory": 8 << 30})

        def reference() -> bool:
            conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
            g = conn.execute(GOLD).fetchall()
            p = conn.execute(PRED).fetchall()
            conn.close()
            return Counter(g) == Counter(p)

        def plugin() -> dict[str, float]:
            g = src.execute(GOLD, trusted=True)
            p = src.execute(PRED)
            return score_sql_pair(g, p, GOLD, PRED)

        src.execute("SELECT 1")  # the worker started, outside the timing
        times: dict[str, list[float]] = {k: [] for k in ("ref", "ref_cpu", "plugin",
                                                          "plugin_cpu")}
        metrics: dict[str, float] = {}
        for _ in range(args.runs):
            wall, cpu, _ = timed(reference)
            times["ref"].append(wall)
            times["ref_cpu"].append(cpu)
            wall, cpu, out = timed(plugin)
            metrics = out  # type: ignore[assignment]
            times["plugin"].append(wall)
            times["plugin_cpu"].append(cpu)
        g = src.execute(GOLD, trusted=True)
        p = src.execute(PRED)
        fast_w, fast_c, fast = timed(lambda: alignment_metrics(g, p, kind="sql"))
        slow_w, slow_c, slow = timed(lambda: alignment_details(g, p, kind="sql").metrics)
        src.close()
        close_all()
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"\n{args.rows:,}-row pair, columns permuted, {args.runs} interleaved runs "
          f"(medians; cpu = this process only, the worker's fetch not counted)")
    print(f"  sqlite3 fetchall + Counter of both   wall {med['ref']:6.2f} s  cpu "
          f"{med['ref_cpu']:6.2f} s")
    print(f"  plugin: source + table + alignment   wall {med['plugin']:6.2f} s  cpu "
          f"{med['plugin_cpu']:6.2f} s")
    print(f"  execution_accuracy {metrics.get('execution_accuracy')}, row_match_f1 "
          f"{metrics.get('row_match_f1')}, exact_match_f1 {metrics.get('exact_match_f1')}")
    print(f"alignment metrics: short cut {fast_w:.2f} s (cpu {fast_c:.2f}), search "
          f"{slow_w:.2f} s (cpu {slow_c:.2f}); same values: {fast == slow}")
    ratio = med["plugin"] / med["ref"]
    print(f"ratio plugin / reference: wall {ratio:.2f}x (target at most 3x: "
          f"{'MET' if ratio <= 3 else 'NOT MET'})")
    return 0 if fast == slow else 1


if __name__ == "__main__":
    sys.exit(main())
