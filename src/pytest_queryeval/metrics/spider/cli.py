"""``python -m pytest_queryeval.metrics.spider``: the official ``evaluation.py --etype match``
without pytest, for checking a Spider gold/pred pair of files against published numbers.

With ``--verbose`` the output is the official script's stdout byte for byte (mismatched pairs
and ``eval_err_num`` lines, then the table); without it, only the table.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

from ...errors import QueryEvalError
from ...sources.spider_tables import Schema
from .aggregate import aggregate, format_table
from .match import StructureResult, structure_scores


def read_pairs(gold: str | Path, pred: str | Path) -> list[tuple[str, str, str]]:
    """``(gold_sql, db_id, pred_sql)`` as the official script reads them: blank lines
    skipped, fields split on tabs, lines paired in order (extra lines of the longer file
    ignored, like its ``zip``)."""
    glist = [ln.strip().split("\t") for ln in
             Path(gold).read_text(encoding="utf-8").splitlines() if ln.strip()]
    plist = [ln.strip().split("\t") for ln in
             Path(pred).read_text(encoding="utf-8").splitlines() if ln.strip()]
    out = []
    for n, (p, g) in enumerate(zip(plist, glist, strict=False)):
        if len(g) != 2:
            raise QueryEvalError(f"{gold}: pair {n + 1}: expected 'SQL<TAB>db_id'")
        out.append((g[0], g[1], p[0]))
    return out


def evaluate(pairs: list[tuple[str, str, str]], tables: str | Path, *,
             legacy_from_check: bool = False,
             log: TextIO | None = None) -> Iterator[StructureResult]:
    """Score pairs in order; with ``log``, print what the official script prints per pair."""
    errors = 0
    for gold, db, pred in pairs:
        res = structure_scores(gold, pred, Schema.from_tables_json(tables, db),
                               legacy_from_check=legacy_from_check)
        if log is not None:
            if res.pred_parse_error is not None:
                errors += 1
                log.write(f"eval_err_num:{errors}\n")
            if not res.exact:
                log.write(f"{res.hardness} pred: {pred}\n{res.hardness} gold: {gold}\n\n")
        yield res


def main(argv: list[str] | None = None, out: TextIO | None = None) -> int:
    out = out or sys.stdout
    ap = argparse.ArgumentParser(prog="python -m pytest_queryeval.metrics.spider",
                                 description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--gold", required=True, help="gold file: SQL<TAB>db_id per line")
    ap.add_argument("--pred", required=True, help="prediction file: SQL per line")
    ap.add_argument("--table", required=True, help="Spider tables.json")
    ap.add_argument("--legacy-from-check", action="store_true",
                    help="compare FROM tables only for multi-table golds (old evaluator)")
    ap.add_argument("--verbose", action="store_true",
                    help="also print mismatches and eval_err_num lines, like the official script")
    args = ap.parse_args(argv)
    try:
        pairs = read_pairs(args.gold, args.pred)
        results = list(evaluate(pairs, args.table, legacy_from_check=args.legacy_from_check,
                                log=out if args.verbose else None))
    except QueryEvalError as exc:
        print(exc.reason(), file=sys.stderr)
        return 2
    out.write(format_table(aggregate(results)))
    return 0
