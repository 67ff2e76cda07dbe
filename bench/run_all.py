"""Run every ``bench/bench_*.py`` script (each is standalone and prints its own results) and
print a summary; ``make bench`` runs this.

    .venv/bin/python bench/run_all.py [--full] [--only NAME ...] [--output PATH]

By default each script gets the arguments below, chosen so the whole run stays under about ten
minutes on a 2-vCPU machine; ``--full`` runs every script with its own defaults (longer, more
repetitions). A script without an entry runs with its defaults. The summary lists each script's
status, wall time and its result lines (medians, ratios, targets); ``--output`` also writes the
complete output to a file.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _common import machine  # noqa: E402

#: Arguments of the default (time-boxed) run, per script.
QUICK_ARGS: dict[str, list[str]] = {
    "bench_alignment.py": ["--quick"],
    "bench_baseline_size.py": ["--cases", "500"],
    "bench_cache.py": ["--runs", "2"],
    "bench_concurrency.py": ["--cases", "200"],  # ~4 min: 100 s of it concurrency 1, serial
    "bench_failures_scale.py": ["--sizes", "5000", "20000"],  # 100,000: ~10 min alone
    "bench_json.py": ["--cases", "200"],
    "bench_large_results.py": ["--rows", "100000", "--runs", "1"],  # ~3 min: rdflib's own
    "bench_large_sql.py": ["--rows", "200000", "--runs", "1"],
    "bench_memory.py": ["--runs", "1"],
    "bench_merge.py": ["--runs", "1", "--cases", "2000"],
    "bench_no_suite.py": ["--runs", "5"],
    "bench_overhead.py": ["--runs", "1"],
    "bench_parallel.py": ["--runs", "2", "--cases", "12"],
    "bench_rehearsal.py": ["--repeat", "10", "--runs", "3"],
    "bench_sandbox.py": ["--repeat", "50", "--runs", "3"],
    "bench_spider.py": ["--runs", "3"],
    "bench_tasks.py": ["--cases", "20"],
    "bench_bird_run.py": ["--runs", "3"],  # skipped without mini_dev's evaluation_ex.py
    "bench_bird_profile.py": ["--runs", "1"],
    "bench_spider_run.py": ["--runs", "3"],  # skipped without the official evaluator
    "bench_sql_suite.py": ["--runs", "1"],
    "bench_table_metrics.py": ["--repeat", "1"],  # 1M rows: ~95 s per repetition here
    "bench_verdict_modes.py": ["--runs", "3"],
}
#: A line is a result line when it mentions one of these.
RESULT = re.compile(r"ratio|faster|speed-?up|target|median|per case|pairs/s|rescues|"
                    r"\d+(\.\d+)?x\b", re.IGNORECASE)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--full", action="store_true", help="each script's own (longer) defaults")
    ap.add_argument("--only", nargs="*", default=None, help="script names (bench_x or x)")
    ap.add_argument("--timeout", type=float, default=900, help="per script, seconds")
    ap.add_argument("--output", type=Path, help="also write the complete output here")
    args = ap.parse_args()
    scripts = sorted(HERE.glob("bench_*.py"))
    if args.only:
        wanted = {n if n.startswith("bench_") else f"bench_{n}" for n in args.only}
        scripts = [s for s in scripts if s.stem in wanted or s.name in wanted]
    header = f"machine: {machine()}\nstarted: {time.strftime('%Y-%m-%d %H:%M:%S %Z')}"
    print(header, flush=True)
    log: list[str] = [header]
    summary: list[tuple[str, str, float, list[str]]] = []
    t_all = time.perf_counter()
    for script in scripts:
        extra = [] if args.full else QUICK_ARGS.get(script.name, [])
        cmd = [sys.executable, str(script), *extra]
        banner = f"\n===== {script.name} {' '.join(extra)}".rstrip()
        print(banner, flush=True)
        log.append(banner)
        lines: list[str] = []
        t0 = time.perf_counter()
        status = "ok"
        try:
            proc = subprocess.Popen(cmd, cwd=HERE.parent, stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, text=True)
            assert proc.stdout is not None
            deadline = t0 + args.timeout
            for line in proc.stdout:  # stream, so a long benchmark shows progress
                print(line, end="", flush=True)
                lines.append(line.rstrip("\n"))
                if time.perf_counter() > deadline:
                    proc.kill()
                    status = f"killed after {args.timeout:g} s"
                    break
            rc = proc.wait()
            if status == "ok" and rc != 0:
                status = f"exit {rc}"
        except OSError as exc:
            status = f"could not start: {exc}"
        seconds = time.perf_counter() - t0
        log.extend(lines)
        summary.append((script.name, status, seconds, [x for x in lines if RESULT.search(x)]))
    out = [f"\n===== summary ({time.perf_counter() - t_all:.0f} s in all)"]
    for name, status, seconds, results in summary:
        out.append(f"{name}: {status}, {seconds:.0f} s")
        out.extend(f"    {x.strip()}" for x in results)
    print("\n".join(out))
    log.extend(out)
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text("\n".join(log) + "\n", encoding="utf-8")
    return 0 if all(s == "ok" for _, s, _, _ in summary) else 1


if __name__ == "__main__":
    raise SystemExit(main())
