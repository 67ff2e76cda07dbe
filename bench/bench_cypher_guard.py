"""Benchmark: what the Cypher guard costs the pytest process on large queries.

Run: ``.venv/bin/python bench/bench_cypher_guard.py [--sizes 750 1500 3000] [--runs 5]
[--only NAME ...]``.

The guard (:func:`pytest_queryeval.cypher.guard.check_server`, with ``linear`` as for an
untrusted, unrehearsed prediction) reads every query a server is sent, in the pytest
process, before the query's own timeout starts. A hostile prediction is free to be long, so
the guard must stay about linear in the query's length: round 66's map weighing scanned to
the query's end once per map, and 3,000 map literals (55 KB) took 7.2 s there instead of
0.65 s. Each shape below is built at each size (its count of repeated parts) and timed
against a floor measured in the same run: the guard's own tokenizer
(:func:`~pytest_queryeval.cypher.guard.tokens`), one linear pass over the text.

Printed per shape and size: the query's length, the guard's median, the tokenizer's median,
their ratio, and the guard's verdict (``sent`` or the refusal's first words); per shape, the
growth of the guard's time from the smallest size to the largest over the growth of the
size (1.0: linear; 2.0 at a 4x size range: quadratic).

Why no wall-clock assertion anywhere: the tests never assert times (the project's
standards); this script is where a regression of the guard's cost shows.
"""

from __future__ import annotations

import argparse
import functools
import math
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import ROOT, machine

sys.path.insert(0, str(ROOT / "src"))


def _maps(n: int) -> str:
    return ("UNWIND range(1, 10) AS k WITH k, "
            + ", ".join(f"{{a: {i}, b: 'x{i}'}} AS m{i}" for i in range(n))
            + " RETURN k ORDER BY k")


def _sort_keys(n: int) -> str:
    return ("UNWIND range(1, 300) AS k WITH k, range(1, 90) AS r RETURN k ORDER BY "
            + ", ".join(["r"] * n) + ", k DESC LIMIT 1000")


def _unions(n: int) -> str:
    # under the guard's MAX_CLAUSES (200; MATCH, WHERE, RETURN and UNION each count): n // 64
    # branches of 64 values each
    years = ", ".join(str(1950 + k) for k in range(64))
    return " UNION ".join(f"MATCH (m:Movie) WHERE m.released IN [{years}] AND m.title <> 't{i}' "
                          "RETURN m.title AS t" for i in range(n // 64))


def _with_chain(n: int) -> str:
    # under MAX_CLAUSES: n // 16 steps, each a new name and a list of 12 values
    steps = n // 16
    return ("MATCH (m:Movie) WITH m, 0 AS a0 "
            + " ".join(f"WITH m, a{i} + 1 AS a{i + 1}, [{', '.join(map(str, range(12)))}] AS l{i}"
                       for i in range(steps))
            + f" RETURN m.title AS t, a{steps} AS a")


def _list_literal(n: int) -> str:
    return "RETURN [" + ", ".join(str(i) for i in range(n * 4)) + "] AS xs"


def _where_or(n: int) -> str:
    # under MAX_OPERATORS (2,000): n // 3 comparisons
    return ("MATCH (m:Movie) WHERE "
            + " OR ".join(f"m.title = 'title {i}'" for i in range(n // 3)) + " RETURN m.title")


#: Each shape: a query of ``n`` repeated parts.
SHAPES: dict[str, Callable[[int], str]] = {
    "map-literals": _maps,
    "sort-keys": _sort_keys,
    "union-branches": _unions,
    "with-chain": _with_chain,
    "list-literal": _list_literal,
    "where-or": _where_or,
}


def _verdict(check: Callable[[str], None], query: str) -> str:
    try:
        check(query)
    except Exception as exc:  # a refusal is a verdict, not a failure of the bench
        return "refused: " + " ".join(str(exc).split()[:6])
    return "sent"


def _median(fn: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[750, 1500, 3000])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--only", nargs="+", choices=sorted(SHAPES))
    args = ap.parse_args()
    from pytest_queryeval.cypher.guard import check_server, tokens

    def guard(q: str) -> None:
        check_server(q, linear=True)

    print(machine())
    print(f"{'shape':<16}{'size':>6}{'KB':>8}{'guard ms':>11}{'tokens ms':>11}{'ratio':>8}"
          "  verdict")
    for name in args.only or SHAPES:
        first: tuple[int, float] | None = None
        last: tuple[int, float] = (0, 0.0)
        for n in args.sizes:
            query = SHAPES[name](n)
            verdict = _verdict(guard, query)
            g = _median(functools.partial(_verdict, guard, query), args.runs)
            t = _median(functools.partial(tokens, query), args.runs)
            print(f"{name:<16}{n:>6}{len(query) / 1024:>8.1f}{g * 1000:>11.1f}"
                  f"{t * 1000:>11.1f}{g / t:>8.1f}  {verdict}")
            first = first or (n, g)
            last = (n, g)
        if first and last[0] > first[0]:
            growth = math.log(last[1] / first[1]) / math.log(last[0] / first[0])
            print(f"{name:<16} growth {first[0]} -> {last[0]}: time ^ {growth:.2f} of size "
                  "(1.0 linear, 2.0 quadratic)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
