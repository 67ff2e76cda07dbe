"""Where a 1,000-case BIRD run's CPU goes, phase by phase, against plain pytest's own figures.

Run: ``.venv/bin/python bench/bench_bird_profile.py [--cases 1000] [--runs 3]``

The suite is ``bench_bird_run.py``'s (Chinook pairs imported with ``queryeval-import bird``,
a ``sqlite`` datasource in the sandbox worker, threshold ``bird_ex``), run by ``python -m
pytest suite -q --queryeval-json=report.json``; plain pytest runs as many trivial tests. Both
are whole processes, interleaved run by run, bytecode caches on, with a small plugin of this
script's (``-p _qe_phases``) that reads the process's CPU clock (``time.process_time``) at
pytest's hooks and, in the plugin's run, around the steps issue 53 names (each step's own time,
the steps it calls apart). The sandbox worker's CPU is read from ``/proc`` before the session
ends. The process's CPU before ``pytest_configure`` is the interpreter's and pytest's start-up
plus every import up to it (``python -c pass`` is printed beside it). Prints the median of each
line over the runs, each as a process's CPU seconds (worker: its own), and the whole-process
CPU of each side (``getrusage`` of the children, the worker included), with the load average.

A line is the step itself, not what it waits for: reading a reply the worker has not sent
yet is waiting (no CPU), and the worker's own time is the worker line. The phases plugin costs
some microseconds per wrapped call: the whole-process figures are those of a separate run
without it (bench_bird_run.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (
    PYTEST_FLAGS,
    import_bird,
    machine,
    measured_env,
    median,
    suite_parser,
    timed,
    write_plain,
)
from bench_bird_run import write_inputs
from bench_sql_suite import pairs

#: The phases plugin, loaded by name from the run's folder (``-p _qe_phases``).
PHASES = r'''
import json, os, time
from pathlib import Path

import pytest

T = {}
STACK = []  # [own-time accumulator name, start, child seconds]
CLOCK = time.process_time
START = CLOCK()


def _add(name, seconds):
    T[name] = T.get(name, 0.0) + seconds


def _wrap(owner, attr, name):
    fn = getattr(owner, attr)

    def timed(*args, **kwargs):
        frame = [name, CLOCK(), 0.0]
        STACK.append(frame)
        try:
            return fn(*args, **kwargs)
        finally:
            STACK.pop()
            spent = CLOCK() - frame[1]
            _add(name, spent - frame[2])
            if STACK:
                STACK[-1][2] += spent

    setattr(owner, attr, timed)


def _instrument():
    try:
        import pytest_queryeval  # noqa: F401
    except ImportError:
        return
    from pytest_queryeval._isolation import sandbox
    from pytest_queryeval.kinds import sql
    from pytest_queryeval.metrics import sql_hardness
    from pytest_queryeval.metrics.spider import parse as spider_parse
    from pytest_queryeval.plugin import nodes
    from pytest_queryeval.report import records
    from pytest_queryeval.sources import sandboxed, sqlguard
    from pytest_queryeval import engine

    _wrap(nodes.QueryEvalItem, "runtest", "case: the plugin's own steps")
    _wrap(nodes, "_prefetch", "next cases' queries sent ahead (the kind's plan)")
    from pytest_queryeval.kinds.sql import spider_text
    _wrap(spider_text, "normalised", "Spider text: sqlglot normalisation (bare aliases)")
    for mod in (sqlguard, sandboxed):
        _wrap(mod, "check_read_only", "SQL guard (parse, read-only check)")
        _wrap(mod, "query_led", "SQL guard (parse, read-only check)")
    from pytest_queryeval.metrics import spider
    from pytest_queryeval.metrics.spider import match as spider_match
    for mod in (spider_parse, spider, spider_match, sql_hardness):
        _wrap(mod, "parse_sql", "Spider parse (structure, hardness)")
    _wrap(sql_hardness, "cached_sql_hardness", "sql_hardness label (sqlglot)")
    _wrap(sandbox.Sandbox, "submit", "execution: sending to the worker")
    _wrap(sandbox.Sandbox, "_collect", "execution: reading the worker's replies")
    _wrap(sandboxed, "query_outcome", "execution: reading the worker's replies")
    _wrap(sql._SqlRun, "score", "metrics (table, alignment, labels)")
    _wrap(sql._SqlRun, "ties", "metrics: tie analysis")
    _wrap(engine, "_near_miss", "metrics: near misses of failing cases")
    for mod in (records, nodes):
        _wrap(mod, "case_record", "records")


def _worker_cpu():
    try:
        from pytest_queryeval._isolation import sandbox
    except ImportError:
        return 0.0
    total = 0.0
    for box in list(sandbox._SHARED.values()):
        pid = box.pid
        if pid is None:
            continue
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def pytest_configure(config):
    T["start-up and imports (to pytest_configure)"] = CLOCK()
    _instrument()
    T["_configured"] = CLOCK()


def pytest_collection(session):
    T["_collect"] = CLOCK()


def pytest_collection_finish(session):
    T["collection (YAML, cases, items)"] = CLOCK() - T.pop("_collect")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtestloop(session):
    start = CLOCK()
    yield
    T["_finish"] = CLOCK()
    T["test loop (all)"] = T["_finish"] - start


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session):
    T["worker (sandbox process)"] = _worker_cpu()


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    T["session finish (report writing, summaries)"] = CLOCK() - T.pop("_finish")
    T["configure (plugins' pytest_configure)"] = T.pop("_configured") - T[
        "start-up and imports (to pytest_configure)"]
    T["process total"] = CLOCK()
    Path(os.environ["QE_PHASES_OUT"]).write_text(json.dumps(T))
'''

#: The order lines are printed in; the test loop's rest is pytest's own per-item work.
ORDER = [
    "start-up and imports (to pytest_configure)",
    "configure (plugins' pytest_configure)",
    "collection (YAML, cases, items)",
    "test loop (all)",
    "  pytest's own per-item work (loop less the lines below)",
    "  case: the plugin's own steps",
    "  next cases' queries sent ahead (the kind's plan)",
    "  Spider text: sqlglot normalisation (bare aliases)",
    "  SQL guard (parse, read-only check)",
    "  Spider parse (structure, hardness)",
    "  sql_hardness label (sqlglot)",
    "  execution: sending to the worker",
    "  execution: reading the worker's replies",
    "  metrics (table, alignment, labels)",
    "  metrics: tie analysis",
    "  metrics: near misses of failing cases",
    "  records",
    "session finish (report writing, summaries)",
    "process total",
    "worker (sandbox process)",
]


def phases(cmd: list[str], cwd: Path, env: dict[str, str], out: Path) -> dict[str, float]:
    env = {**env, "QE_PHASES_OUT": str(out)}
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    if done.returncode not in (0, 1):
        raise SystemExit(f"rc {done.returncode}\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
    t: dict[str, float] = json.loads(out.read_text())
    inner = [k for k in t if k in {s.strip() for s in ORDER if s.startswith("  ")}]
    loop = t.get("test loop (all)", 0.0)
    t["pytest's own per-item work (loop less the lines below)"] = loop - sum(t[k] for k in inner)
    return t


def main() -> int:
    args = suite_parser(__doc__).parse_args()
    env = measured_env()
    print(f"machine: {machine()}")
    with tempfile.TemporaryDirectory(prefix="qe-bench-birdprof-") as tmp:
        base = Path(tmp)
        write_inputs(base, pairs(args.cases))
        import_bird(base, env)
        (base / "_qe_phases.py").write_text(PHASES)
        write_plain(base, args.cases)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(base), env.get("PYTHONPATH")]))
        flags = [*PYTEST_FLAGS, "-p", "_qe_phases"]
        sides = {"plugin": [sys.executable, "-m", "pytest", "suite", *flags,
                            "--queryeval-json=report.json"],
                 "plain": [sys.executable, "-m", "pytest", "plain", *flags]}
        bare = [sys.executable, "-c", "pass"]
        for key, cmd in sides.items():  # warm-up: bytecode caches, the OS page cache
            phases(cmd, base, env, base / f"{key}.json")
        got: dict[str, list[dict[str, float]]] = {k: [] for k in sides}
        whole: dict[str, list[float]] = {k: [] for k in [*sides, "python -c pass"]}
        loads = [os.getloadavg()[0]]
        for _ in range(args.runs):
            for key, cmd in sides.items():
                got[key].append(phases(cmd, base, env, base / f"{key}.json"))
            whole["python -c pass"].append(timed(bare, base, env)[1])
            loads.append(os.getloadavg()[0])
    print(f"\n{args.cases:,} BIRD cases (Chinook), CPU seconds per phase, median of {args.runs} "
          f"interleaved runs each; load average {min(loads):.1f}-{max(loads):.1f}")
    print(f"  {'phase':58s} {'plugin':>8s} {'plain pytest':>13s}")
    for line in ORDER:
        key = line.strip()
        values = {side: median([r.get(key, 0.0) for r in got[side]]) for side in got}
        plain = "" if (line.startswith("  ") and key != ORDER[4].strip()) \
            or key.startswith("worker") else f"{values['plain']:13.3f}"
        print(f"  {line:58s} {values['plugin']:8.3f} {plain:>13s}")
    print(f"  {'python -c pass (the interpreter alone)':58s} "
          f"{median(whole['python -c pass']):8.3f}")
    per_item = {side: median([r["pytest's own per-item work (loop less the lines below)"]
                              for r in got[side]]) / args.cases * 1000 for side in got}
    print(f"pytest's per-item cost: plugin run {per_item['plugin']:.3f} ms, plain pytest "
          f"{per_item['plain']:.3f} ms per item")
    return 0


if __name__ == "__main__":
    sys.exit(main())
