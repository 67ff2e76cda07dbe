"""Benchmark: what a dml task's copies add per case, on SQLite and on PostgreSQL (issue 28).

Run: ``.venv/bin/python bench/bench_tasks.py [--cases 30]``.

Each engine runs ``--cases`` times the same Chinook task (an UPDATE checked with ``compare:
gold``) through :func:`pytest_queryeval.tasks.case.score`, the path a case takes, and prints
the per-case ``copy_seconds`` (both copies: SQLite by the backup API into memory, PostgreSQL
the wait for two copies from the pool plus the connections to them) and the whole task's time.
PostgreSQL runs on a throwaway loopback cluster (``tests/fixtures/postgres.py``) twice: with the
pool (the default, copies made ahead in a background thread) and without one (each copy cloned
on demand), and prints what a clone and a drop cost alone. Targets (the issue's): at most 1 ms
per SQLite case, at most 100 ms added per PostgreSQL case with the pool.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import ROOT, SHARED, machine

sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))

from pytest_queryeval.model import Case
from pytest_queryeval.tasks import pgcopies
from pytest_queryeval.tasks.case import build, score

RAISE = {"sqlite": "UPDATE Track SET UnitPrice = UnitPrice + 0.1 WHERE GenreId = 1",
         "postgres": "UPDATE track SET unit_price = unit_price + 0.1 WHERE genre_id = 1"}
CHECK = {"sqlite": "SELECT TrackId, UnitPrice FROM Track WHERE GenreId = 1",
         "postgres": "SELECT track_id, unit_price FROM track WHERE genre_id = 1"}


def case(engine: str, spec: dict[str, object]) -> Case:
    c = Case(id="bench", kind="sql", file=ROOT / "bench" / "bench_tasks.py", line=1,
             gold=RAISE[engine], source_spec={**spec, "writable": "sandbox", "timeout": 60})
    c.options = {"task": "dml", "checks": [{"query": CHECK[engine], "compare": "gold"}]}
    return c


def run(engine: str, spec: dict[str, object], n: int) -> tuple[list[float], list[float]]:
    c = case(engine, spec)
    task = build(c, c.gold, (RAISE[engine],))
    score(task, c)  # warm: the worker's start-up and, for PostgreSQL, the template
    copy, total = [], []
    for _ in range(n):
        t0 = time.perf_counter()
        scored, _ = score(task, c)
        total.append(time.perf_counter() - t0)
        assert scored.reason is None, scored.reason
        copy.append(scored.metrics["copy_seconds"])
    return copy, total


def show(label: str, copy: list[float], total: list[float]) -> None:
    ms = [x * 1000 for x in copy]
    print(f"{label:28} copy per case: median {statistics.median(ms):8.2f} ms, max "
          f"{max(ms):8.2f} ms; whole task: median {statistics.median(total) * 1000:8.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", type=int, default=30)
    n = parser.parse_args().cases
    print(machine())
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "chinook.sqlite"
        shutil.copyfile(ROOT / "example_suite" / "data" / "chinook.sqlite", db)
        show("sqlite (backup API)", *run("sqlite", {"type": "sqlite", "path": str(db)}, n))
    from tests.fixtures.postgres import start_server

    server = start_server(SHARED)
    try:
        url = server.url()
        spec = {"type": "sqlalchemy", "url": url}
        pool = pgcopies.pool_for(url)
        copy, total = [], []
        for _ in range(n):  # a case every 150 ms: the pool refills between cases
            time.sleep(0.15)
            c, t = run("postgres", spec, 1)
            copy += c
            total += t
        show("postgres (pool)", copy, total)
        pool.size = 0
        show("postgres (no pool)", *run("postgres", spec, n))
        clone, drop = [], []
        for _ in range(min(n, 10)):
            t0 = time.perf_counter()
            name = pool._clone(pool.template)
            clone.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            pool._drop_now(name)
            drop.append(time.perf_counter() - t0)
        print(f"{'postgres clone / drop':28} median {statistics.median(clone) * 1000:.1f} ms / "
              f"{statistics.median(drop) * 1000:.1f} ms")
        pool.close()
    finally:
        server.stop("immediate")
        shutil.rmtree(server.root, ignore_errors=True)


if __name__ == "__main__":
    main()
