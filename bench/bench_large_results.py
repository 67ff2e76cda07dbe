"""Large results, every engine, against the engine's own fetch-and-compare (issue 30, item 4).

Run: ``.venv/bin/python bench/bench_large_results.py [--rows 100000 1000000] [--runs 3]
[--engines sqlite duckdb postgres pyoxigraph rdflib]``

One pair per engine of ``--rows`` rows x 4 columns (an id, a name of 50,000 distinct values, a
score, a city of 977): the gold ``SELECT id, name, score, city`` and a right prediction with its
columns permuted and another row order. Each side runs in a process of its own, alternately:

* reference: the engine's own client fetches both results (``fetchall`` / iterating the
  solutions into tuples) and compares them as ``Counter`` multisets; SPARQL: loading the graph
  file too (the plugin's worker loads it as well);
* plugin: both queries through the plugin's source (the sandbox worker, the default
  isolation), then what the kind scores on a case: SQL: the seven table metrics, the four
  alignment metrics and the prediction's row signature; SPARQL: the kind's ``_score`` (table,
  alignment, TEXT2SPARQL and GERBIL sets, signature). The SQL worker is started outside the
  timing (once per session); the SPARQL worker's start and load are inside, as the
  reference's load is.

CPU is that of every process involved (the side's process, its sandbox workers and, for
PostgreSQL, the server's processes); peak memory is the side's process plus its workers (peak
RSS, summed), and the growth over what they held before the timed part. Prints the ratios
plugin / reference (targets: CPU at most 3x, peak memory under 2x).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _common import ROOT, machine, score_sql_pair  # noqa: E402

sys.path.insert(0, str(ROOT / "src"))

SQL_ENGINES = ("sqlite", "duckdb", "postgres")
RDF_ENGINES = ("pyoxigraph", "rdflib")
GOLD_SQL = "SELECT id, name, score, city FROM t"
PRED_SQL = "SELECT city, id, score, name FROM t ORDER BY name"
EX = "http://example.org/"
GOLD_SPARQL = (f"PREFIX : <{EX}> SELECT ?s ?name ?score ?city WHERE "
               "{ ?s :name ?name ; :score ?score ; :city ?city }")
PRED_SPARQL = (f"PREFIX : <{EX}> SELECT ?city ?s ?score ?name WHERE "
               "{ ?s :name ?name ; :score ?score ; :city ?city } ORDER BY ?name")
TICK = os.sysconf("SC_CLK_TCK")


# --------------------------------------------------------------------------- processes

def _stat(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def descendants(root: int) -> list[int]:
    """Every live process under ``root`` (children of children too)."""
    kids: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError, IndexError):
                kids.setdefault(int(_stat(int(entry))[1]), []).append(int(entry))
    out, todo = [], [root]
    while todo:
        for kid in kids.get(todo.pop(), []):
            out.append(kid)
            todo.append(kid)
    return out


def cpu_of(pids: list[int]) -> dict[int, float]:
    """User + system seconds of each live process."""
    out = {}
    for pid in pids:
        try:
            f = _stat(pid)
            out[pid] = (int(f[11]) + int(f[12])) / TICK
        except (OSError, IndexError):
            pass
    return out


def _status_bytes(pid: int, field: str) -> int:
    """A memory figure of ``pid``'s ``/proc/<pid>/status`` (``VmHWM``, ``VmRSS``), bytes
    (0 when the process is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def peak_rss(pid: int) -> int:
    """Peak resident set (VmHWM) of ``pid``, bytes (0 when gone)."""
    return _status_bytes(pid, "VmHWM")


def rss(pid: int) -> int:
    """Resident set (VmRSS) of ``pid`` now, bytes (0 when gone)."""
    return _status_bytes(pid, "VmRSS")


def measured(work: Any) -> dict[str, Any]:
    """Run ``work()`` and measure this process and its descendants over it."""
    me = os.getpid()
    before_pids = descendants(me)
    before = cpu_of(before_pids)
    held = rss(me) + sum(rss(p) for p in before_pids)
    c0, t0 = time.process_time(), time.perf_counter()
    value = work()
    wall = time.perf_counter() - t0
    cpu_self = time.process_time() - c0
    after_pids = descendants(me)
    after = cpu_of(after_pids)
    kids = sum(after[p] - before.get(p, 0.0) for p in after)
    reaped = resource.getrusage(resource.RUSAGE_CHILDREN)  # workers that ended meanwhile
    # VmHWM, not ru_maxrss: Linux carries the forking parent's peak into a child's ru_maxrss
    peak = peak_rss(me) + sum(peak_rss(p) for p in after_pids)
    return {"wall": wall, "cpu": cpu_self + kids + reaped.ru_utime + reaped.ru_stime,
            "cpu_self": cpu_self, "peak": peak, "held": held, "value": value}


# --------------------------------------------------------------------------- data

def make_rows(rows: int) -> list[tuple[int, str, float, str]]:
    rng = random.Random(0)
    return [(i, f"name-{rng.randrange(50_000)}", round(rng.random() * 100 + 1, 6),
             f"city-{i % 977}") for i in range(rows)]


def make_data(tmp: Path, rows: int, engines: list[str]) -> dict[str, Any]:
    data = make_rows(rows)
    out: dict[str, Any] = {}
    csv = tmp / "t.csv"
    with csv.open("w") as fh:
        fh.write("id,name,score,city\n")
        fh.writelines(f"{i},{n},{s!r},{c}\n" for i, n, s, c in data)
    if "sqlite" in engines:
        import sqlite3

        path = tmp / "large.sqlite"
        conn = sqlite3.connect(path)
        conn.execute("CREATE TABLE t (id INTEGER, name TEXT, score REAL, city TEXT)")
        conn.executemany("INSERT INTO t VALUES (?, ?, ?, ?)", data)
        conn.commit()
        conn.close()
        out["sqlite"] = str(path)
    if "duckdb" in engines:
        import duckdb

        path = tmp / "large.duckdb"
        conn = duckdb.connect(str(path))
        conn.execute("CREATE TABLE t (id BIGINT, name VARCHAR, score DOUBLE, city VARCHAR)")
        conn.execute(f"INSERT INTO t SELECT * FROM read_csv('{csv}', header = true)")
        conn.close()
        out["duckdb"] = str(path)
    if any(e in engines for e in RDF_ENGINES):
        path = tmp / "large.nt"
        with path.open("w") as fh:
            for i, n, s, c in data:
                subject = f"<{EX}item/{i}>"
                fh.write(f'{subject} <{EX}name> "{n}" .\n{subject} <{EX}score> '
                         f'"{s!r}"^^<http://www.w3.org/2001/XMLSchema#double> .\n'
                         f'{subject} <{EX}city> "{c}" .\n')
        out["rdf"] = str(path)
    out["csv"] = str(csv)
    return out


def start_postgres(tmp: Path, csv: str) -> Any:
    sys.path.insert(0, str(ROOT))
    from tests.fixtures.postgres import PostgresServer, _server_user, find_pg_bin

    root = Path(tempfile.mkdtemp(prefix="qe-bench-pg-"))
    server = PostgresServer(root, find_pg_bin(), _server_user())
    server._chown(root)
    server.init()
    server.start()
    server.superuser_execute("CREATE DATABASE bench", database="postgres")
    import psycopg

    with psycopg.connect(server.conninfo("bench"), autocommit=True) as conn:
        conn.execute("CREATE TABLE t (id BIGINT, name TEXT, score DOUBLE PRECISION, "
                     "city TEXT)")
        with open(csv, "rb") as fh, conn.cursor().copy(
                "COPY t FROM STDIN WITH (FORMAT csv, HEADER true)") as copy:
            while chunk := fh.read(1 << 20):
                copy.write(chunk)
        conn.execute("ANALYZE t")
    return server


def server_pids(server: Any) -> list[int]:
    pid = server._postmaster_pid()
    return [pid, *descendants(pid)] if pid else []


# --------------------------------------------------------------------------- one side

def reference(engine: str, target: str) -> Any:
    if engine == "sqlite":
        import sqlite3

        conn = sqlite3.connect(f"file:{target}?mode=ro", uri=True)
        g = conn.execute(GOLD_SQL).fetchall()
        p = conn.execute(PRED_SQL).fetchall()
        conn.close()
    elif engine == "duckdb":
        import duckdb

        conn = duckdb.connect(target, read_only=True)
        g = conn.execute(GOLD_SQL).fetchall()
        p = conn.execute(PRED_SQL).fetchall()
        conn.close()
    elif engine == "postgres":
        import psycopg

        with psycopg.connect(target) as conn:
            g = conn.execute(GOLD_SQL).fetchall()
            p = conn.execute(PRED_SQL).fetchall()
    elif engine == "pyoxigraph":
        import pyoxigraph as ox

        store = ox.Store()
        store.bulk_load(path=target, format=ox.RdfFormat.N_TRIPLES)
        g = [tuple(s) for s in store.query(GOLD_SPARQL)]
        p = [tuple(s) for s in store.query(PRED_SPARQL)]
    else:
        import rdflib

        graph = rdflib.Graph()
        graph.parse(target, format="nt")
        g = [tuple(r) for r in graph.query(GOLD_SPARQL)]
        p = [tuple(r) for r in graph.query(PRED_SPARQL)]
    # the prediction's columns in the gold's order, then the two multisets
    order = (1, 3, 2, 0)
    return len(g), Counter(g) == Counter(tuple(r[i] for i in order) for r in p)


def _values(metrics: dict[str, float]) -> dict[str, float]:
    """The metric values without the timings (which differ from run to run)."""
    return {k: v for k, v in metrics.items() if not k.endswith("_seconds")}


def plugin_sql(engine: str, target: str, rows: int) -> Any:
    # what score_sql_pair imports, imported before the timing
    import pytest_queryeval.metrics.alignment
    import pytest_queryeval.metrics.table  # noqa: F401
    from pytest_queryeval.sources import open_source

    caps = {"timeout": 900, "max_rows": 10 * rows, "max_bytes": 1 << 34,
            "max_memory": 16 << 30}
    spec: dict[str, Any] = ({"type": "sqlalchemy", "url": target, "allow_privileged": True}
                            if engine == "postgres"
                            else {"type": engine, "path": target})
    src = open_source("large", {**spec, **caps})
    src.execute("SELECT 1")  # the worker (once per session) started outside the timing

    def work() -> Any:
        g = src.execute(GOLD_SQL, trusted=True)
        p = src.execute(PRED_SQL)
        return len(g.rows), _values(score_sql_pair(g, p, GOLD_SQL, PRED_SQL))

    out = measured(work)
    src.close()
    return out


def plugin_rdf(engine: str, target: str, rows: int) -> Any:
    from pytest_queryeval.kinds._query import compare_options
    from pytest_queryeval.kinds.sparql import _Gold, _Options, _score
    from pytest_queryeval.sources import open_source

    def work() -> Any:
        src = open_source("large", {"type": "rdf", "path": target, "engine": engine,
                                    "timeout": 900, "max_rows": 10 * rows,
                                    "max_bytes": 1 << 34, "max_memory": 16 << 30,
                                    "load_timeout": 900})
        g = src.execute(GOLD_SPARQL, trusted=True)
        p = src.execute(PRED_SPARQL)
        scored = _score(_Gold(GOLD_SPARQL, g), p, PRED_SPARQL,
                        _Options(compare=compare_options({})))
        return len(g.rows), _values(scored.metrics)

    from pytest_queryeval.sources.rdf import clear_registry

    out = measured(work)
    clear_registry()
    return out


def one(side: str, engine: str, target: str, rows: int) -> dict[str, Any]:
    if side == "reference":
        return measured(lambda: reference(engine, target))
    if engine in RDF_ENGINES:
        return plugin_rdf(engine, target, rows)
    return plugin_sql(engine, target, rows)


def run_side(side: str, engine: str, target: str, rows: int, server: Any) -> dict[str, Any]:
    """One side in a fresh process; the PostgreSQL server's CPU over it is added."""
    srv = server_pids(server) if server is not None else []
    s0 = cpu_of(srv)
    done = subprocess.run([sys.executable, __file__, "--one", side, engine, target,
                           str(rows)], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{side} {engine}: exit {done.returncode}\n{done.stderr[-3000:]}")
    out: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    s1 = cpu_of(server_pids(server) if server is not None else [])
    out["cpu"] += sum(v - s0.get(p, 0.0) for p, v in s1.items())
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, nargs="+", default=[100_000])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--engines", nargs="+", default=[*SQL_ENGINES, *RDF_ENGINES],
                    choices=[*SQL_ENGINES, *RDF_ENGINES])
    ap.add_argument("--one", nargs=4, metavar=("SIDE", "ENGINE", "TARGET", "ROWS"),
                    help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        side, engine, target, rows = args.one
        out = one(side, engine, target, int(rows))
        print(json.dumps(out, default=str))
        return 0
    print(f"machine: {machine()}")
    ok = True
    summary: list[str] = []
    for rows in args.rows:
        with tempfile.TemporaryDirectory(prefix="qe-bench-large-") as tmp:
            t0 = time.perf_counter()
            data = make_data(Path(tmp), rows, args.engines)
            server = start_postgres(Path(tmp), data["csv"]) if "postgres" in args.engines \
                else None
            print(f"\n{rows:,} rows x 4: data written in {time.perf_counter() - t0:.1f} s")
            try:
                for engine in args.engines:
                    target = (server.url("bench")
                              if engine == "postgres" else
                              data["rdf"] if engine in RDF_ENGINES else data[engine])
                    ref_target = server.conninfo("bench") if engine == "postgres" else target
                    res: dict[str, list[dict[str, Any]]] = {"reference": [], "plugin": []}
                    for _ in range(args.runs):
                        res["reference"].append(run_side("reference", engine, ref_target,
                                                         rows, server))
                        res["plugin"].append(run_side("plugin", engine, target, rows,
                                                      server))
                    med = {side: {k: statistics.median(r[k] for r in runs)
                                  for k in ("wall", "cpu", "peak", "held")}
                           for side, runs in res.items()}
                    r, q = med["reference"], med["plugin"]
                    values = {str(x["value"]) for x in res["plugin"]}
                    growth_r = max(r["peak"] - r["held"], 1)
                    growth_q = max(q["peak"] - q["held"], 1)
                    line = (f"  {engine:10s} cpu {q['cpu']:7.2f} s vs {r['cpu']:6.2f} s: "
                            f"ratio {q['cpu'] / r['cpu']:5.2f}x (wall {q['wall']:6.2f} vs "
                            f"{r['wall']:6.2f} s); peak RSS {q['peak'] / 2**20:6.0f} vs "
                            f"{r['peak'] / 2**20:5.0f} MB: ratio {q['peak'] / r['peak']:4.2f}x "
                            f"(growth {growth_q / 2**20:5.0f} vs {growth_r / 2**20:4.0f} MB: "
                            f"{growth_q / growth_r:4.2f}x)")
                    print(line, flush=True)
                    summary.append(f"{rows:>9,} {line.strip()}")
                    if len(values) != 1 or "1.0" not in next(iter(values)):
                        print(f"    unexpected plugin values: {values}")
                        ok = False
                    cpu_ratio = q["cpu"] / r["cpu"]
                    print(f"    target CPU at most 3x: {'MET' if cpu_ratio <= 3 else 'NOT MET'}"
                          f"; n={args.runs}")
            finally:
                if server is not None:
                    server.stop("immediate")
                    shutil.rmtree(server.root, ignore_errors=True)
    print("\nratios plugin / reference (CPU of all processes; peak RSS of the side's processes):")
    for line in summary:
        print(line)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
