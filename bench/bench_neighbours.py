"""Benchmark: counterexample search (issue 27) on the Chinook corpus, against plain execution.

Run: ``.venv/bin/python bench/bench_neighbours.py [--corpus chinook|concert_singer]
[--databases 200] [--seed 0] [--engines sqlite,duckdb,postgres] [--repeat 3]
[--postgres-url URL]``.

For every pair of ``tests/data/neighbours/<corpus>.yaml`` (coincidental passes, each with the
reason it is wrong, and equivalent rewrites; ``concert_singer`` is Spider's database, built
from ``concert_singer.sql`` in a temporary directory), the search runs with the default
budget. Printed:
recall on the coincidental passes (target at least 90 %), false alarms on the equivalent ones
(target 0), the rows of each shrunk counterexample, the search's seconds per case (median and
max), and its ratio to the floor measured in the same run: executing the gold and the
prediction once on the real file and comparing them (what plain execution accuracy costs).

With ``--engines sqlite,duckdb`` the same pairs are also searched on a DuckDB copy of the
database (the real DDL transpiled by sqlglot, the same rows), each pair ``--repeat`` times on
each engine in turn: printed are each engine's median seconds per case, DuckDB's ratio to
SQLite (target at most 3x) and whether the two engines give every pair the same verdict.

``postgres`` in ``--engines`` loads the same database into PostgreSQL (the DDL transpiled by
sqlglot with its names unquoted, as the corpus's queries name them, the same rows) and searches
there through a throwaway database (:mod:`pytest_queryeval.neighbours.pgengine`). The server is
``--postgres-url`` (a role with CREATEDB: the bench makes, loads and drops
``queryeval_bench_<corpus>`` with it), else the tests' loopback server is started
(``tests/fixtures/postgres.py``: PostgreSQL's binaries installed); without either the engine is
skipped with a line saying so.
"""

from __future__ import annotations

import argparse
import gzip
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import ROOT, machine

sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(1, str(ROOT))  # tests.fixtures.postgres: the loopback server

import yaml

from pytest_queryeval.metrics.table import table_metrics
from pytest_queryeval.neighbours import Budget, search
from pytest_queryeval.results import ResultTable

CHINOOK = ROOT / "example_suite" / "data" / "chinook.sqlite"
DATA = ROOT / "tests" / "data" / "neighbours"


def database(corpus: str, tmp: Path) -> Path:
    """The corpus's real database file."""
    if corpus == "chinook":
        return CHINOOK
    path = tmp / f"{corpus}.sqlite"
    conn = sqlite3.connect(path)
    conn.executescript((DATA / f"{corpus}.sql").read_text())
    conn.close()
    return path


def same_for(gold: str):  # type: ignore[no-untyped-def]
    ordered = "order by" in gold.lower()
    return lambda g, p: table_metrics(g, p, order_matters=ordered)["execution_accuracy"] == 1.0


def floor_seconds(db: Path, gold: str, predicted: str) -> float:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    t0 = time.perf_counter()
    tables = []
    for sql in (gold, predicted):
        cur = conn.execute(sql)
        tables.append(ResultTable([d[0] for d in cur.description], cur.fetchall()))
    same_for(gold)(*tables)
    conn.close()
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--databases", type=int, default=Budget().databases)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--corpus", choices=("chinook", "concert_singer"), default="chinook")
    ap.add_argument("--engines", default="sqlite",
                    help="comma-separated: sqlite, duckdb, postgres (the per-engine comparison)")
    ap.add_argument("--postgres-url", default="",
                    help="a PostgreSQL server's SQLAlchemy URL, its role with CREATEDB (default: "
                         "start the tests' loopback server)")
    ap.add_argument("--repeat", type=int, default=3,
                    help="runs of each pair per engine in the per-engine comparison")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = database(args.corpus, Path(tmp))
        engines = [e.strip() for e in args.engines.split(",") if e.strip()]
        if engines == ["sqlite"]:
            run(args, db)
        else:
            per_engine(args, db, engines, Path(tmp))


def duckdb_copy(db: Path, tmp: Path) -> Path:
    """The SQLite file as a DuckDB file: its DDL transpiled by sqlglot, the same rows."""
    import duckdb
    import sqlglot

    from pytest_queryeval.neighbours.schema import introspect

    path = tmp / (db.stem + ".duckdb")
    src = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    dst = duckdb.connect(str(path))
    try:
        for table in introspect(src).tables:
            dst.execute(sqlglot.transpile(table.ddl, read="sqlite", write="duckdb")[0])
            rows = src.execute(f'SELECT * FROM "{table.name}"').fetchall()
            if rows:
                marks = ", ".join("?" for _ in table.columns)
                dst.executemany(f'INSERT INTO "{table.name}" VALUES ({marks})', rows)
    finally:
        dst.close()
        src.close()
    return path


def postgres_statements(db: Path) -> list[str]:
    """The SQLite file as PostgreSQL statements: its DDL transpiled by sqlglot with the names
    unquoted (folded to lower case, as the corpus's unquoted names are), the same rows."""
    import sqlglot
    from sqlglot import exp

    from pytest_queryeval.neighbours.pgengine import pg_literal
    from pytest_queryeval.neighbours.schema import introspect

    src = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    out: list[str] = []
    try:
        for table in introspect(src).tables:
            tree = sqlglot.parse_one(table.ddl, read="sqlite")
            for ident in tree.find_all(exp.Identifier):
                ident.set("quoted", False)
            out.append(tree.sql(dialect="postgres"))
            # a reference between columns of different types (Spider's concert_singer: text
            # to integer), which SQLite allows and PostgreSQL refuses, is left out
            for fk in list(tree.find_all(exp.ForeignKey)):
                fk.parent.pop() if isinstance(fk.parent, exp.Constraint) else fk.pop()
            out.append("-- or: " + tree.sql(dialect="postgres"))
            rows = src.execute(f'SELECT * FROM "{table.name}"').fetchall()
            for at in range(0, len(rows), 500):
                values = ", ".join("(" + ", ".join(pg_literal(v) for v in r) + ")"
                                   for r in rows[at:at + 500])
                out.append(f"INSERT INTO {table.name} VALUES {values}")
    finally:
        src.close()
    return out


def postgres_copy(args: argparse.Namespace, db: Path, tmp: Path, stack: ExitStack) -> str:
    """The URL of a PostgreSQL copy of ``db`` ('' when no server: the engine is skipped)."""
    import psycopg

    from pytest_queryeval.tasks.pgcopies import conninfo

    name = f"queryeval_bench_{args.corpus}"
    url = args.postgres_url
    if not url:
        try:
            from tests.fixtures.postgres import CHINOOK_SQL, start_server

            sql = tmp / "data" / CHINOOK_SQL[0] / CHINOOK_SQL[1]
            sql.parent.mkdir(parents=True, exist_ok=True)
            with gzip.open(ROOT / "tests" / "data" / CHINOOK_SQL[0] / (CHINOOK_SQL[1] + ".gz"),
                           "rb") as fin, sql.open("wb") as fout:
                shutil.copyfileobj(fin, fout)
            server = start_server(tmp / "data")
        except Exception as exc:
            print(f"postgres: SKIPPED, no server: give --postgres-url or install PostgreSQL "
                  f"(scripts/install-postgres.sh): {type(exc).__name__}: {exc}")
            return ""
        stack.callback(shutil.rmtree, server.root, True)
        stack.callback(server.stop, "immediate")
        url = server.tasks_url("postgres")
    with psycopg.connect(conninfo(url), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"'.encode())
        conn.execute(f'CREATE DATABASE "{name}" TEMPLATE template0'.encode())
    with psycopg.connect(conninfo(url, name), autocommit=True) as conn:
        created = False
        for statement in postgres_statements(db):
            if statement.startswith("-- or: "):
                if not created:
                    conn.execute(statement.removeprefix("-- or: ").encode())
                continue
            try:
                conn.execute(statement.encode())
                created = True
            except psycopg.errors.DatatypeMismatch:
                created = False

    def drop() -> None:
        from pytest_queryeval.neighbours.pgengine import _drop_all

        _drop_all()  # the throwaway databases first: they came from the bench database's role
        with psycopg.connect(conninfo(url), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'.encode())

    stack.callback(drop)
    from sqlalchemy.engine import make_url

    return make_url(url).set(database=name).render_as_string(hide_password=False)


def per_engine(args: argparse.Namespace, db: Path, engines: list[str], tmp: Path) -> None:
    """Each pair searched on each engine, ``--repeat`` times in turn (the machine is shared:
    medians of per-case medians)."""
    with ExitStack() as stack:
        _per_engine(args, db, engines, tmp, stack)


def _per_engine(args: argparse.Namespace, db: Path, engines: list[str], tmp: Path,
                stack: ExitStack) -> None:
    from pytest_queryeval.neighbours.engines import ENGINES
    from pytest_queryeval.neighbours.named import engine_named

    corpus = yaml.safe_load((DATA / f"{args.corpus}.yaml").read_text())
    files = {"sqlite": db, "duckdb": duckdb_copy(db, tmp) if "duckdb" in engines else db}
    adapters = {e: ENGINES[e] for e in engines if e in ENGINES}
    if "postgres" in engines:
        url = postgres_copy(args, db, tmp, stack)
        if url:
            adapters["postgres"] = engine_named("postgres", url)
            files["postgres"] = db  # unused: the engine is bound to the URL
        else:
            engines = [e for e in engines if e != "postgres"]
    budget = Budget(databases=args.databases, seconds=600.0)
    pairs = [(kind, pair) for kind in ("coincidental", "equivalent") for pair in corpus[kind]]
    print(f"machine: {machine()}")
    print(f"corpus: {args.corpus}, {len(pairs)} pairs; budget {budget.databases} databases; "
          f"seed {args.seed}; {args.repeat} runs per pair and engine")
    times: dict[str, list[list[float]]] = {e: [[] for _ in pairs] for e in engines}
    verdicts: dict[str, list[bool]] = {}
    for rep in range(args.repeat):
        for engine in engines:
            found = []
            for n, (_kind, pair) in enumerate(pairs):
                t0 = time.perf_counter()
                out = search(files[engine], pair["gold"], pair["predicted"],
                             same_for(pair["gold"]), seed=args.seed, budget=budget,
                             engine=adapters[engine], scope=f"{engine}-{rep}")
                times[engine][n].append(time.perf_counter() - t0)
                found.append(out.counterexample is not None)
            verdicts.setdefault(engine, found)
            if found != verdicts[engine]:
                print(f"  {engine}: run {rep + 1} gave other verdicts than run 1")
    medians = {e: [statistics.median(t) for t in times[e]] for e in engines}
    for engine in engines:
        flagged = sum(verdicts[engine][n] for n, (k, _p) in enumerate(pairs)
                      if k == "coincidental")
        alarms = sum(verdicts[engine][n] for n, (k, _p) in enumerate(pairs)
                     if k == "equivalent")
        print(f"{engine}: search per case median {statistics.median(medians[engine]):.3f} s, "
              f"max {max(medians[engine]):.3f} s, total {sum(medians[engine]):.1f} s; "
              f"recall {flagged}, false alarms {alarms}")
    base = medians.get("sqlite")
    for engine in engines:
        if engine == "sqlite" or base is None:
            continue
        ratios = [t / b for t, b in zip(medians[engine], base, strict=True)]
        same = sum(a == b for a, b in zip(verdicts[engine], verdicts["sqlite"], strict=True))
        print(f"{engine} / sqlite: median per-case ratio {statistics.median(ratios):.1f}x, "
              f"max {max(ratios):.1f}x, total {sum(medians[engine]) / sum(base):.1f}x "
              f"(target <= 3x); same verdict on {same}/{len(pairs)} pairs")
        for n, (kind, pair) in enumerate(pairs):
            if verdicts[engine][n] != verdicts["sqlite"][n]:
                print(f"  differs ({kind}, {engine} "
                      f"{'found one' if verdicts[engine][n] else 'found none'}): "
                      f"{pair['gold']} / {pair['predicted']}")


def run(args: argparse.Namespace, db: Path) -> None:
    corpus = yaml.safe_load((DATA / f"{args.corpus}.yaml").read_text())
    budget = Budget(databases=args.databases, seconds=Budget().seconds)
    print(f"machine: {machine()}")
    print(f"corpus: {args.corpus} ({db.name})")
    print(f"budget: {budget.databases} databases, {budget.seconds:g} s per case; seed {args.seed}")
    for kind in ("coincidental", "equivalent"):
        times, floors, flagged, rows = [], [], 0, []
        for pair in corpus[kind]:
            floors.append(floor_seconds(db, pair["gold"], pair["predicted"]))
            t0 = time.perf_counter()
            found = search(db, pair["gold"], pair["predicted"], same_for(pair["gold"]),
                           seed=args.seed, budget=budget)
            times.append(time.perf_counter() - t0)
            if found.counterexample is not None:
                flagged += 1
                rows.append(found.counterexample.row_count)
        n = len(corpus[kind])
        label = "recall" if kind == "coincidental" else "false alarms"
        print(f"{kind}: {label} {flagged}/{n}"
              + (f" ({100 * flagged / n:.0f} %, target >= 90 %)" if kind == "coincidental"
                 else " (target 0)"))
        print(f"  search per case: median {statistics.median(times):.3f} s, max {max(times):.3f} s;"
              f" floor (plain EX) median {statistics.median(floors) * 1000:.2f} ms; ratio "
              f"{statistics.median(times) / statistics.median(floors):.0f}x")
        if rows:
            print(f"  counterexample rows: median {statistics.median(rows):g}, max {max(rows)}")


if __name__ == "__main__":
    main()
