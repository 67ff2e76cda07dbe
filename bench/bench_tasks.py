"""Benchmark: what a dml task's copies add per case, on SQLite and on PostgreSQL (issue 28).

Run: ``.venv/bin/python bench/bench_tasks.py [--cases 30] [--runs 5] [--sqlite-only]``.

Each engine runs ``--cases`` times the same Chinook task (an UPDATE checked with ``compare:
gold``) through :func:`pytest_queryeval.tasks.case.score`, the path a case takes, and prints
the per-case ``copy_seconds`` (both copies: SQLite by the backup API into memory, PostgreSQL
the wait for two copies from the pool plus the connections to them) and the whole task's time.
PostgreSQL runs on a throwaway loopback cluster (``tests/fixtures/postgres.py``) twice: with the
pool (the default, copies made ahead in a background thread) and without one (each copy cloned
on demand), and prints what a clone and a drop cost alone. Targets (the issue's): at most 1 ms
per SQLite case, at most 100 ms added per PostgreSQL case with the pool.

SQLite is also measured in CPU time (the machine is shared: a wall time measures the neighbours
too): the worker's CPU for a case's two copies (``TaskOutcome.copy_cpu_seconds``), the median of
``--runs`` runs of ``--cases`` cases, beside what two backup-API copies (the former way) and the
floor, two plain byte copies of the file, cost in this process in the same run.
"""

from __future__ import annotations

import argparse
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import ROOT, SHARED, machine

sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))

from pytest_queryeval.model import Case
from pytest_queryeval.tasks import pgcopies
from pytest_queryeval.tasks.case import build, score
from pytest_queryeval.tasks.run import _sqlite_copy

RAISE = {"sqlite": "UPDATE Track SET UnitPrice = UnitPrice + 0.1 WHERE GenreId = 1",
         "postgres": "UPDATE track SET unit_price = unit_price + 0.1 WHERE genre_id = 1"}
CHECK = {"sqlite": "SELECT TrackId, UnitPrice FROM Track WHERE GenreId = 1",
         "postgres": "SELECT track_id, unit_price FROM track WHERE genre_id = 1"}


def case(engine: str, spec: dict[str, object]) -> Case:
    c = Case(id="bench", kind="sql", file=ROOT / "bench" / "bench_tasks.py", line=1,
             gold=RAISE[engine], source_spec={**spec, "writable": "sandbox", "timeout": 60})
    c.options = {"task": "dml", "checks": [{"query": CHECK[engine], "compare": "gold"}]}
    return c


def run(engine: str, spec: dict[str, object], n: int,
        cpu: list[float] | None = None) -> tuple[list[float], list[float]]:
    c = case(engine, spec)
    task = build(c, c.gold, (RAISE[engine],))
    score(task, c)  # warm: the worker's start-up and, for PostgreSQL, the template
    copy, total = [], []
    for _ in range(n):
        t0 = time.perf_counter()
        scored, outcome = score(task, c)
        total.append(time.perf_counter() - t0)
        assert scored.reason is None, scored.reason
        copy.append(scored.metrics["copy_seconds"])
        if cpu is not None:
            cpu.append(outcome.copy_cpu_seconds)
    return copy, total


def cpu_per_case(make: Callable[[], object], n: int) -> float:
    """This process's CPU seconds per call of ``make`` (the median of 5 rounds of n)."""
    rounds = []
    for _ in range(5):
        t0 = time.process_time()
        for _ in range(n):
            make()
        rounds.append((time.process_time() - t0) / n)
    return statistics.median(rounds)


def sqlite_cpu(db: Path, n: int, runs: int) -> None:
    """The worker's CPU per case for its two copies, against the former way and the floor."""
    spec = {"type": "sqlite", "path": str(db)}
    medians = []
    for _ in range(runs):
        cpu: list[float] = []
        run("sqlite", spec, n, cpu)
        medians.append(statistics.median(cpu))
    data = db.read_bytes()

    def backups() -> None:
        for _ in range(2):
            src = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
            dst = sqlite3.connect(":memory:", isolation_level=None)
            src.backup(dst)
            src.close()
            dst.close()

    def images() -> None:
        for conn in [_sqlite_copy(db), _sqlite_copy(db)]:
            conn.close()

    former = cpu_per_case(backups, n)
    here = cpu_per_case(images, n)
    floor = cpu_per_case(lambda: (bytearray(data), bytearray(data)), n)
    now = statistics.median(medians)
    print(f"{'sqlite copies, CPU':28} in the worker, median of {runs} runs: {now * 1000:.3f} ms "
          f"per case (runs: {', '.join(f'{m * 1000:.3f}' for m in medians)})")
    print(f"{'':28} in this process: two image copies {here * 1000:.3f} ms, two backup-API "
          f"copies (the former way) {former * 1000:.3f} ms, floor (two byte copies of "
          f"{len(data) >> 10} KiB) {floor * 1000:.3f} ms: {here / floor:.1f}x and "
          f"{former / floor:.1f}x the floor")


def show(label: str, copy: list[float], total: list[float]) -> None:
    ms = [x * 1000 for x in copy]
    print(f"{label:28} copy per case: median {statistics.median(ms):8.2f} ms, max "
          f"{max(ms):8.2f} ms; whole task: median {statistics.median(total) * 1000:8.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", type=int, default=30)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--sqlite-only", action="store_true")
    args = parser.parse_args()
    n = args.cases
    print(machine())
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "chinook.sqlite"
        shutil.copyfile(ROOT / "example_suite" / "data" / "chinook.sqlite", db)
        show("sqlite (image)", *run("sqlite", {"type": "sqlite", "path": str(db)}, n))
        sqlite_cpu(db, n, args.runs)
    if args.sqlite_only:
        return
    from tests.fixtures.postgres import start_server

    server = start_server(SHARED)
    try:
        url = server.tasks_url()  # the LOGIN CREATEDB role of docs/tasks.md, not the superuser
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
