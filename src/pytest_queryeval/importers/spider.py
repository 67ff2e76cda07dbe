"""Spider gold/pred files (or a Spider ``dev.json``) to a queryeval suite.

Writes ``<out>/test_spider.yaml`` (one SQL case per pair: ``gold``, ``db_id``, inline
``predicted`` or a predictions JSONL) and, given ``--tables``, ``<out>/queryeval.yaml`` with a
``spider-schema`` datasource, so ``pytest <out>`` scores the pairs with the Spider structural
metrics and ``--print-table`` shows the official evaluator's table directly. Lines are read the
way the official ``evaluation.py`` reads them (blank lines skipped, tab-separated fields).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..errors import QueryEvalError
from ._common import command, dump_yaml, suite_relative, write_jsonl
from ._inputs import json_line, read_text

CASES_FILE = "test_spider.yaml"
CONFIG_FILE = "queryeval.yaml"


def read_gold(path: Path) -> list[dict[str, Any]]:
    """Gold cases from ``SQL<TAB>db_id`` lines or a Spider ``dev.json`` (with questions)."""
    text = read_text(path)
    if path.suffix == ".json":
        items = json_line(text, path.name)
        return [{"gold": it["query"], "db_id": it["db_id"], "question": it.get("question")}
                for it in items]
    out = []
    for n, line in enumerate(ln for ln in text.splitlines() if ln.strip()):
        fields = line.strip().split("\t")
        if len(fields) != 2:
            raise QueryEvalError(f"{path}: non-blank line {n + 1}: expected 'SQL<TAB>db_id'")
        out.append({"gold": fields[0], "db_id": fields[1]})
    return out


def read_pred(path: Path) -> list[str]:
    return [ln.strip().split("\t")[0] for ln in
            read_text(path).splitlines() if ln.strip()]


def build(gold: list[dict[str, Any]], pred: list[str] | None, *, datasource: str,
          prefix: str, legacy_from_check: bool, inline: bool) -> tuple[dict[str, Any],
                                                                       list[dict[str, Any]]]:
    """The case-file mapping and the predictions records (``{"id", "predicted"}``)."""
    if pred is not None and len(pred) != len(gold):
        raise QueryEvalError(f"{len(gold)} gold queries but {len(pred)} predictions")
    width = max(4, len(str(len(gold) - 1)))
    cases: list[dict[str, object]] = []
    preds: list[dict[str, object]] = []
    for i, g in enumerate(gold):
        case: dict[str, object] = {"id": f"{prefix}-{i:0{width}d}"}
        if g.get("question"):
            case["question"] = g["question"]
        case["gold"] = g["gold"]
        case["db_id"] = g["db_id"]
        if pred is not None:
            if inline:
                case["predicted"] = pred[i]
            else:
                preds.append({"id": case["id"], "predicted": pred[i]})
        cases.append(case)
    structure: dict[str, bool] | bool = {"legacy_from_check": True} if legacy_from_check else True
    suite = {"kind": "sql", "datasource": datasource, "structure": structure, "cases": cases}
    return suite, preds


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        gold = read_gold(args.gold)
        pred = read_pred(args.pred) if args.pred else None
        suite, preds = build(gold, pred, datasource=args.datasource, prefix=args.id_prefix,
                             legacy_from_check=args.legacy_from_check,
                             inline=args.predictions_file is None)
    except (OSError, ValueError, KeyError, TypeError, QueryEvalError) as exc:
        msg = exc.reason() if isinstance(exc, QueryEvalError) else str(exc)
        print(f"{command()} spider: {msg}", file=sys.stderr)
        return 2
    written = _write(args, suite, preds)
    print("wrote " + ", ".join(str(p) for p in written))
    if args.print_table:
        if pred is None or args.tables is None:
            print("--print-table needs --pred and --tables", file=sys.stderr)
            return 2
        return _print_table(args, gold, pred)
    return 0


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog=f"{command()} spider", description=__doc__)
    ap.add_argument("--gold", required=True, type=Path,
                    help="gold file (SQL<TAB>db_id per line) or Spider dev.json")
    ap.add_argument("--pred", type=Path, help="predictions, one SQL per line, same order")
    ap.add_argument("--tables", type=Path, help="Spider tables.json (writes queryeval.yaml)")
    ap.add_argument("--out", required=True, type=Path, help="output directory")
    ap.add_argument("--datasource", default="spider", help="datasource name (default spider)")
    ap.add_argument("--id-prefix", default="spider", help="case id prefix (default spider)")
    ap.add_argument("--predictions-file", metavar="NAME",
                    help="write predictions to <out>/NAME (JSONL) instead of inline; the suite "
                         "config points at it when --tables is given")
    ap.add_argument("--legacy-from-check", action="store_true",
                    help="FROM tables compared only for multi-table golds (old evaluator)")
    ap.add_argument("--print-table", action="store_true",
                    help="also print the official evaluator's table for these pairs")
    return ap


def _write(args: argparse.Namespace, suite: dict[str, Any],
           preds: list[dict[str, Any]]) -> list[Path]:
    """The case file, the predictions file and, with ``--tables``, the suite config; the
    paths written."""
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    (out / CASES_FILE).write_text(dump_yaml(suite), encoding="utf-8")
    written = [out / CASES_FILE]
    if args.predictions_file:
        path = out / args.predictions_file
        write_jsonl(path, preds, ensure_ascii=True)
        written.append(path)
    if args.tables:
        # the official evaluator's scores, recorded: thresholds of the user's gate them
        config: dict[str, object] = {"datasources": {args.datasource: {
            "type": "spider-schema", "tables": suite_relative(args.tables, out)}},
            "record_only": True}
        if args.predictions_file:
            config["predictions"] = {"source": "file", "path": args.predictions_file}
        (out / CONFIG_FILE).write_text(dump_yaml(config), encoding="utf-8")
        written.append(out / CONFIG_FILE)
    return written


def _print_table(args: argparse.Namespace, gold: list[dict[str, Any]], pred: list[str]) -> int:
    """``--print-table``: the official evaluator's table for these pairs, as it prints it."""
    from ..metrics.spider.aggregate import aggregate, format_table
    from ..metrics.spider.cli import evaluate

    pairs = [(g["gold"], g["db_id"], p) for g, p in zip(gold, pred, strict=True)]
    try:
        results = list(evaluate(pairs, args.tables,
                                legacy_from_check=args.legacy_from_check))
    except QueryEvalError as exc:
        print(exc.reason(), file=sys.stderr)
        return 1
    sys.stdout.write(format_table(aggregate(results)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
