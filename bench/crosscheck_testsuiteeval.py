"""Cross-check: the test-suite evaluator's own database generator on the concert_singer corpus.

Reference: ruiqi-zhong/TestSuiteEval (Zhong, Yu and Klein, "Semantic Evaluation for
Text-to-SQL with Distilled Test Suites", EMNLP 2020), commit
7bf637883cf092867d33f58ee6f365f5a05e0ee2 (2020-12-01, the newest there is). Its code is run
unmodified: this driver only calls its functions (``fuzz.fuzz.generate_random_db_with_queries_wrapper``,
``fuzz.neighbor.generate_neighbor_queries_path``, ``sql_util.run.exec_db_path_``,
``sql_util.eq.result_eq``). It needs numpy and sqlparse (not this project's venv: a throwaway
one), and has no licence file, so nothing of it is copied here.

Run: ``python bench/crosscheck_testsuiteeval.py PATH_TO_TESTSUITEEVAL_CHECKOUT [--databases 100]
[--seed 0] [--distil] [--oracle OUT.yaml]``.

For every pair of ``tests/data/neighbours/concert_singer.yaml`` the reference fuzzes
``--databases`` random databases for the gold, as its test-suite construction does (the
schema and values of the real database, from ``concert_singer.sql``, and the gold's literals;
seeded per gold, so every prediction of one gold meets the same databases; the driver
re-executes itself with PYTHONHASHSEED=0, as the reference's value pools are sets of strings). A pair is
distinguished when some generated database gives gold and prediction different results under
Spider's exec comparison (``result_eq``, order kept when the gold has ORDER BY; a prediction
that fails where the gold runs counts as different). ``--distil`` also keeps, greedily as the
paper does, only the databases that separate the gold from a neighbour query not yet separated
(the distilled suite), and reports the verdict of that smaller suite. Printed: the per-pair
table, recall on the coincidental passes, false alarms on the equivalent rewrites, the budget
and the seconds.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import random
import shutil
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "neighbours"
COMMIT = "7bf637883cf092867d33f58ee6f365f5a05e0ee2"


def load_reference(checkout: Path) -> dict[str, Any]:
    """Import the reference's functions; it resolves paths (``tmp/``) against its own root."""
    os.chdir(checkout)
    (checkout / "tmp").mkdir(exist_ok=True)
    sys.path.insert(0, str(checkout))
    import numpy as np
    from fuzz.fuzz import generate_random_db_with_queries_wrapper
    from fuzz.neighbor import generate_neighbor_queries_path
    from sql_util.eq import result_eq
    from sql_util.run import exec_db_path_

    return {
        "np": np,
        "fuzz": generate_random_db_with_queries_wrapper,
        "neighbours": generate_neighbor_queries_path,
        "eq": result_eq,
        "exec": exec_db_path_,
    }


def differ(ref: dict[str, Any], db: str, gold: str, other: str) -> bool | None:
    """Spider's exec verdict on one database: None when the gold itself fails there."""
    gflag, gres = ref["exec"](db, gold)
    if gflag != "result":
        return None
    pflag, pres = ref["exec"](db, other)
    if pflag != "result":
        return True
    return not ref["eq"](gres, pres, order_matters="order by" in gold.lower())


def main() -> None:
    if os.environ.get("PYTHONHASHSEED") != "0":
        # The reference iterates sets of strings (its value pools), whose order follows the
        # hash seed: without a fixed one the same --seed gives other databases.
        os.execve(sys.executable, [sys.executable, *sys.argv],
                  {**os.environ, "PYTHONHASHSEED": "0"})
    ap = argparse.ArgumentParser()
    ap.add_argument("checkout", type=Path)
    ap.add_argument("--databases", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--distil", action="store_true")
    ap.add_argument("--oracle", type=Path)
    args = ap.parse_args()
    corpus = yaml.safe_load((DATA / "concert_singer.yaml").read_text())
    sql = (DATA / "concert_singer.sql").read_text()
    ref = load_reference(args.checkout.resolve())
    tmp = Path(tempfile.mkdtemp(prefix="tse-"))
    orig = tmp / "concert_singer.sqlite"
    conn = sqlite3.connect(orig)
    conn.executescript(sql)
    conn.close()

    suites: dict[str, tuple[list[str], list[str], float]] = {}

    def suite_for(gold: str) -> tuple[list[str], list[str], float]:
        """The fuzzed databases of one gold (and the distilled subset), built once."""
        if gold in suites:
            return suites[gold]
        index = len(suites)
        random.seed(args.seed * 1000 + index)
        ref["np"].random.seed(args.seed * 1000 + index)
        t0 = time.perf_counter()
        dbs = []
        with contextlib.redirect_stdout(io.StringIO()):
            for i in range(args.databases):
                target = str(tmp / f"g{index}_{i}.sqlite")
                ref["fuzz"]((str(orig), target, [gold], {}))
                dbs.append(target)
        distilled: list[str] = []
        if args.distil:
            with contextlib.redirect_stdout(io.StringIO()):
                alive = set(ref["neighbours"](str(orig), gold))
            for db in dbs:
                killed = {n for n in alive if differ(ref, db, gold, n)}
                if killed:
                    distilled.append(db)
                    alive -= killed
        suites[gold] = (dbs, distilled, time.perf_counter() - t0)
        return suites[gold]

    rows = []
    for kind in ("coincidental", "equivalent"):
        for i, pair in enumerate(corpus[kind]):
            gold, pred = pair["gold"], pair["predicted"]
            fresh = gold not in suites
            dbs, distilled, build = suite_for(gold)
            t0 = time.perf_counter()
            hits = [db for db in dbs if differ(ref, db, gold, pred)]
            check = time.perf_counter() - t0
            rows.append({
                "kind": kind, "index": i, "gold": gold, "predicted": pred,
                "distinguished": bool(hits), "databases_distinguishing": len(hits),
                "distilled": len(distilled),
                "distilled_distinguished": bool(set(hits) & set(distilled)),
                "seconds": round((build if fresh else 0.0) + check, 3),
            })
    shutil.rmtree(tmp)
    show(rows, args)
    if args.oracle:
        args.oracle.write_text(yaml.safe_dump(
            [{k: r[k] for k in ("kind", "index", "gold", "predicted", "distinguished",
                                "databases_distinguishing")} for r in rows],
            sort_keys=False, width=200))


def show(rows: list[dict[str, Any]], args: argparse.Namespace) -> None:
    print(f"TestSuiteEval @{COMMIT[:12]}: {args.databases} fuzzed databases per gold, seed {args.seed}")
    print(f"{'kind':12} {'#':>2}  {'dist':5} {'dbs':>4} {'suite':>5} {'s':>6}  predicted")
    for r in rows:
        suite = f"{r['distilled']}{'+' if r['distilled_distinguished'] else '-'}" if args.distil else "-"
        print(f"{r['kind']:12} {r['index']:>2}  {r['distinguished']!s:5} "
              f"{r['databases_distinguishing']:>4} {suite:>5} {r['seconds']:>6.2f}  {r['predicted']}")
    for kind, word in (("coincidental", "recall"), ("equivalent", "false alarms")):
        sel = [r for r in rows if r["kind"] == kind]
        n = sum(r["distinguished"] for r in sel)
        line = f"{kind}: {word} {n}/{len(sel)}"
        if args.distil:
            line += f" (distilled suite: {sum(r['distilled_distinguished'] for r in sel)}/{len(sel)})"
        print(line)
    secs = sorted(r["seconds"] for r in rows)
    print(f"seconds per pair (fuzzing counted once per gold, at its first pair): median "
          f"{secs[len(secs) // 2]:.2f}, max {secs[-1]:.2f}, total {sum(secs):.1f}")


if __name__ == "__main__":
    main()
