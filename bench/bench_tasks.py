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

The collateral check (issue 41: every table of the prediction's copy compared with the gold's
after the checks) is measured per case on Chinook, SQLite, DuckDB and PostgreSQL, in the
worker's CPU (``TaskOutcome.collateral_cpu_seconds``; PostgreSQL's server work is in the
check's wall time beside it) and as the whole task's time with and
without it (``collateral: false``), for three predictions: the gold's own statement (SQLite's
unchanged pages skip every table), an equivalent one written differently (``UnitPrice + 0.10``)
and one that also writes another table (the case fails; the differing rows are fetched). And
on a table of a million rows, unchanged and changed, on SQLite and DuckDB (``--collateral-only``
runs this part alone).
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


#: The collateral bench's predictions (per engine): the gold's own, an equivalent one, and one
#: that also writes another table.
PREDICTIONS = {
    "sqlite": {"same": RAISE["sqlite"],
               "equivalent": "UPDATE Track SET UnitPrice = 0.10 + UnitPrice WHERE GenreId = 1",
               "collateral": RAISE["sqlite"] + "; UPDATE Customer SET Fax = NULL"},
    "postgres": {"same": RAISE["postgres"],
                 "equivalent": "UPDATE track SET unit_price = 0.10 + unit_price WHERE "
                               "genre_id = 1",
                 "collateral": RAISE["postgres"] + "; UPDATE customer SET fax = NULL"}}


def collateral(engine: str, spec: dict[str, object], n: int, label: str) -> None:
    """The collateral check's cost per case on ``spec`` (Chinook), each prediction of
    :data:`PREDICTIONS` (DuckDB takes SQLite's statements)."""
    statements = PREDICTIONS["postgres" if engine == "postgres" else "sqlite"]
    gold = RAISE["postgres" if engine == "postgres" else "sqlite"]
    check = CHECK["postgres" if engine == "postgres" else "sqlite"]
    for what, predicted in statements.items():
        times: dict[bool, list[float]] = {True: [], False: []}
        cpu: list[float] = []
        wall: list[float] = []
        for on in (True, False):
            c = Case(id="bench", kind="sql", file=ROOT / "bench" / "bench_tasks.py", line=1,
                     gold=gold, source_spec={**spec, "writable": "sandbox", "timeout": 60})
            c.options = {"task": "dml", "checks": [{"query": check, "compare": "gold"}],
                         **({} if on else {"collateral": False})}
            task = build(c, c.gold, (predicted,))
            score(task, c)
            for _ in range(n):
                if engine == "postgres":
                    time.sleep(0.15)  # the pool refills between cases
                t0 = time.perf_counter()
                scored, outcome = score(task, c)
                times[on].append(time.perf_counter() - t0)
                if on:
                    assert outcome is not None
                    assert (scored.reason is None) == (what != "collateral"), scored.reason
                    cpu.append(outcome.collateral_cpu_seconds)
                    wall.append(outcome.collateral_seconds)
        with_, without = statistics.median(times[True]), statistics.median(times[False])
        print(f"{label + ' collateral, ' + what:40} check CPU median "
              f"{statistics.median(cpu) * 1000:6.2f} ms, wall {statistics.median(wall) * 1000:6.2f}"
              f" ms; whole task {with_ * 1000:7.1f} ms with, "
              f"{without * 1000:7.1f} ms without: {with_ / without:.2f}x")


def chinook_duckdb(src: Path, dst: Path) -> None:
    """Chinook as a DuckDB file (the same tables, types and rows; no extension needed)."""
    import duckdb

    lite = sqlite3.connect(src)
    conn = duckdb.connect(str(dst))
    for (table,) in lite.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND "
                                 "name NOT LIKE 'sqlite%'").fetchall():
        cols = lite.execute(f'SELECT name, type, pk FROM pragma_table_info("{table}")').fetchall()
        keys = [c for c, _, pk in cols if pk]
        conn.execute(f'CREATE TABLE "{table}" (' + ", ".join(f'"{c}" {t}' for c, t, _ in cols)
                     + (f", PRIMARY KEY ({', '.join(keys)})" if keys else "") + ")")
        quoted = " || ',' || ".join(f'quote("{c}")' for c, _, _ in cols)
        rows = [r[0] for r in lite.execute(f'SELECT {quoted} FROM "{table}"')]
        for i in range(0, len(rows), 1000):
            conn.execute(f'INSERT INTO "{table}" VALUES '
                         + ", ".join(f"({r})" for r in rows[i:i + 1000]))
    conn.close()
    lite.close()


def million(tmp: Path, n: int) -> None:
    """The collateral check on a table of a million rows (and a small one the prediction
    changes or not), SQLite and DuckDB: the check's CPU per case."""
    import duckdb

    from pytest_queryeval.tasks import Check, Task, run_task
    from pytest_queryeval.tasks.collateral import Collateral

    sq = tmp / "big.sqlite"
    conn = sqlite3.connect(sq)
    conn.executescript(
        "CREATE TABLE flights (id INTEGER PRIMARY KEY, status TEXT, delay INTEGER);"
        "WITH RECURSIVE r(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM r WHERE i < 999999) "
        "INSERT INTO flights SELECT i, 'landed', i % 60 FROM r;"
        "CREATE TABLE crew (id INTEGER PRIMARY KEY, name TEXT);"
        "INSERT INTO crew VALUES (1, 'a'), (2, 'b');")
    conn.commit()
    conn.close()
    dk = tmp / "big.duckdb"
    conn = duckdb.connect(str(dk))
    conn.execute("CREATE TABLE flights AS SELECT i AS id, 'landed' AS status, i % 60 AS delay "
                 "FROM range(1000000) t(i)")
    conn.execute("CREATE TABLE crew (id INTEGER PRIMARY KEY, name VARCHAR)")
    conn.execute("INSERT INTO crew VALUES (1, 'a'), (2, 'b')")
    conn.close()
    gold = "UPDATE crew SET name = 'c' WHERE id = 2"
    for engine, path in (("sqlite", sq), ("duckdb", dk)):
        for what, predicted in (("unchanged", gold),
                                ("changed", gold + "; UPDATE flights SET delay = 0 WHERE id = "
                                                   "500000")):
            task = Task(engine, path, gold=(gold,), predicted=(predicted,),
                        checks=(Check(query="SELECT * FROM crew", compare="gold"),),
                        collateral=Collateral())
            run_task(task, timeout=120)
            cpu = []
            for _ in range(n):
                outcome = run_task(task, timeout=120)
                assert outcome.passed == (what == "unchanged"), outcome.collateral
                assert outcome.collateral is not None
                cpu.append(outcome.collateral_cpu_seconds)
            print(f"{engine + ' 1M-row table ' + what:40} check CPU median "
                  f"{statistics.median(cpu) * 1000:7.1f} ms ({outcome.collateral.reason or 'passed'})")


def show(label: str, copy: list[float], total: list[float]) -> None:
    ms = [x * 1000 for x in copy]
    print(f"{label:28} copy per case: median {statistics.median(ms):8.2f} ms, max "
          f"{max(ms):8.2f} ms; whole task: median {statistics.median(total) * 1000:8.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", type=int, default=30)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--sqlite-only", action="store_true")
    parser.add_argument("--collateral-only", action="store_true")
    args = parser.parse_args()
    n = args.cases
    print(machine())
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "chinook.sqlite"
        shutil.copyfile(ROOT / "example_suite" / "data" / "chinook.sqlite", db)
        if not args.collateral_only:
            show("sqlite (image)", *run("sqlite", {"type": "sqlite", "path": str(db)}, n))
            sqlite_cpu(db, n, args.runs)
        collateral("sqlite", {"type": "sqlite", "path": str(db)}, n, "sqlite")
        duck = Path(tmp) / "chinook.duckdb"
        chinook_duckdb(db, duck)
        collateral("duckdb", {"type": "duckdb", "path": str(duck)}, n, "duckdb")
        million(Path(tmp), max(3, n // 10))
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
        collateral("postgres", spec, n, "postgres")
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
