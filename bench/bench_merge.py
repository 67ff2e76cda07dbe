"""``queryeval merge`` of a sharded run: 10 shards of 10,000 cases each (target: < 2 s per
10,000 cases).

The shard reports are written first, in the plugin's format: SQL case records with the
metrics, thresholds, details and Spider structure items a real run records, the run's
``suite`` and ``suite_ids`` (every shard carries all 100,000 ids, as a real shard does). Then,
interleaved and repeated, in this process:

* merge: ``queryeval merge shard-*.json -o merged.json`` (read, check, union, aggregates,
  gates, flaky list, the terminal summary and the merged JSON report written);
* reference: ``json.load`` of the same ten files and nothing else: the least any merge that
  reads the reports must spend.

Printed: the median of each, per 10,000 cases, and the ratio merge / reference, in wall time
and in CPU time of this process (the figure to trust on a shared machine); then one more
merge under ``tracemalloc`` for its peak memory (Python allocations) per 10,000 cases, with
the HTML report written (its size is bounded: at most 2,000 case rows); ``--retried 2`` writes
a second attempt of the first two shards (a retry of an interrupted first attempt), which
the merge resolves (the latest complete record of each case wins).

    python bench/bench_merge.py [--shards 10] [--cases 10000] [--runs 3] [--retried 2]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import machine

from pytest_queryeval.conclude.merge import run as merge_run
from pytest_queryeval.suite.shard import shard_of

METRICS = ("execution_accuracy", "bird_ex", "soft_f1", "cell_f1", "percent_overlap",
           "percent_subset", "same_row_count", "arity_f1", "entity_set_f1", "row_match_f1",
           "exact_match_f1", "exact_set_match", "gold_seconds", "predicted_seconds")


def _record(case_id: str, n: int) -> dict[str, object]:
    ok = n % 5 != 0
    metrics = {m: (1.0 if ok else 0.5) for m in METRICS}
    metrics["gold_seconds"] = 0.001 + (n % 7) / 1000
    metrics["predicted_seconds"] = 0.002 + (n % 11) / 1000
    return {
        "id": case_id, "nodeid": f"suite/test_part{n % 10}.yaml::{case_id}",
        "file": f"suite/test_part{n % 10}.yaml", "line": 3 + 4 * n, "kind": "sql",
        "difficulty": ("easy", "medium", "hard", "extra")[n % 4], "tags": ["smoke"] if n % 3
        else [], "question": f"How many rows in table {n}?", "datasource": "chinook",
        "outcome": "passed" if ok else "failed", "status": "passed" if ok else "failed",
        "metrics": metrics, "labels": {"hardness": "easy"},
        "thresholds": {"execution_accuracy": {"min": 1.0}},
        "failed_metrics": [] if ok else ["execution_accuracy"],
        "predicted": f"SELECT count(*) FROM t{n}", "gold": f"SELECT COUNT(*) FROM t{n}",
        "error": None, "reason": None, "diff": [] if ok else ["missing rows: (3,)"],
        "details": {"gold_cached": True, "row_counts": {"gold": 1, "predicted": 1}},
        "settings": {}, "baseline_status": None, "standing": None,
    }


def write_shards(folder: Path, shards: int, per_shard: int, retried: int = 0) -> list[Path]:
    ids = [f"case-{n:07d}" for n in range(shards * per_shard)]
    parts: dict[int, list[dict[str, object]]] = {i: [] for i in range(1, shards + 1)}
    for n, case_id in enumerate(ids):
        parts[shard_of(case_id, shards)].append(_record(case_id, n))
    suite = {"cases": len(ids), "digest": "bench"}
    gates = [{"name": "execution_accuracy", "metric": "execution_accuracy", "stat": "mean",
              "scope": ".", "kind": None, "tag": None, "value": 0.8, "op": ">=", "limit": 0.7,
              "cases": 0, "allow_empty": False, "reason": None, "passed": True}]
    paths = []
    for index, records in parts.items():
        run = {"started": "2026-11-23T00:00:00+00:00", "finished": "2026-11-23T00:01:00+00:00",
               "duration_s": 60.0, "exitstatus": 1, "interrupted": False,
               "queryeval_version": "bench", "model": None, "predictions": None,
               "gating": "strict", "settings": {}, "workers": 0,
               "shard": f"{index}/{shards}", "suite": suite, "suite_ids": ids}
        path = folder / f"shard-{index}.json"
        if index <= retried:  # an interrupted first attempt (a tenth of the cases), retried
            first = {**run, "interrupted": True, "exitstatus": 2}
            path.write_text(json.dumps({"version": 1, "run": first,
                                        "cases": records[: len(records) // 10],
                                        "aggregates": {}, "gates": gates, "flaky": []}))
            paths.append(path)
            path = folder / f"shard-{index}.try2.json"
            run = {**run, "started": "2026-11-23T01:00:00+00:00"}
        path.write_text(json.dumps({"version": 1, "run": run, "cases": records,
                                    "aggregates": {}, "gates": gates, "flaky": []}))
        paths.append(path)
    return paths


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shards", type=int, default=10)
    ap.add_argument("--cases", type=int, default=10000, help="cases per shard (about)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--retried", type=int, default=2, help="shards with a second attempt")
    args = ap.parse_args()
    print(f"machine: {machine()}")
    with tempfile.TemporaryDirectory(prefix="qe-bench-merge-") as tmp:
        folder = Path(tmp)
        paths = write_shards(folder, args.shards, args.cases, args.retried)
        total = args.shards * args.cases
        size = sum(p.stat().st_size for p in paths) / 1e6
        print(f"{args.shards} shard reports, {total:,} cases in all, {size:.0f} MB of JSON")
        merge_times: list[float] = []
        load_times: list[float] = []
        merge_cpu: list[float] = []
        load_cpu: list[float] = []
        out = folder / "merged.json"
        for _ in range(args.runs):
            t0, c0 = time.perf_counter(), time.process_time()
            for path in paths:
                with open(path, encoding="utf-8") as fh:
                    json.load(fh)
            load_times.append(time.perf_counter() - t0)
            load_cpu.append(time.process_time() - c0)
            sink = io.StringIO()
            t0, c0 = time.perf_counter(), time.process_time()
            with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
                status = merge_run([*map(str, paths), "-o", str(out)])
            merge_times.append(time.perf_counter() - t0)
            merge_cpu.append(time.process_time() - c0)
            if status != 1 or len(json.loads(out.read_text())["cases"]) != total:
                print(sink.getvalue()[-2000:])
                raise SystemExit(f"merge exited {status} or lost cases")
        import tracemalloc

        sink = io.StringIO()
        tracemalloc.start()
        with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
            merge_run([*map(str, paths), "-o", str(out), "--queryeval-html",
                       str(folder / "merged.html")])
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        html_mb = (folder / "merged.html").stat().st_size / 1e6
        json_mb = out.stat().st_size / 1e6
    per = 10000 / total
    merge_med, load_med = statistics.median(merge_times), statistics.median(load_times)
    print(f"merge     : median {merge_med:6.2f} s  (min {min(merge_times):.2f}, "
          f"n={args.runs}) = {merge_med * per:.2f} s per 10,000 cases (target < 2 s)")
    print(f"reference : json.load of the same files, median {load_med:6.2f} s = "
          f"{load_med * per:.2f} s per 10,000 cases")
    print(f"ratio merge / json.load: {merge_med / load_med:.1f}x")
    cpu_med, lcpu_med = statistics.median(merge_cpu), statistics.median(load_cpu)
    print(f"cpu time  : merge median {cpu_med:6.2f} s = {cpu_med * per:.2f} s per 10,000 cases "
          f"(min {min(merge_cpu) * per:.2f}); json.load {lcpu_med * per:.2f} s per 10,000; "
          f"ratio {cpu_med / lcpu_med:.1f}x")
    print(f"peak memory (tracemalloc, with the HTML report): {peak / 1e6:.0f} MB = "
          f"{peak / 1e6 * per:.1f} MB per 10,000 cases, for {size:.0f} MB of shard JSON")
    print(f"merged JSON {json_mb:.0f} MB, HTML report {html_mb:.1f} MB (at most 2,000 case rows)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
