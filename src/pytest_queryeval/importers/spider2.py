"""Spider 2.0-lite (``spider2-lite.jsonl``, gold result CSVs, ``spider2lite_eval.jsonl``) to a
queryeval SQL suite scored with ``spider2_ex``.

Writes ``<out>/test_spider2_lite.yaml`` (one ``kind: sql`` case per instance of the eval file:
the question, the gold result file(s) as ``gold_result``, ``condition_cols``, ``ignore_order``,
the database's family as a tag; with ``--documents``, the instance's external-knowledge document
as ``external_knowledge``) and ``<out>/queryeval.yaml`` (a ``type: sqlite`` datasource per
SQLite database when ``--sqlite-dir`` is given; the BigQuery and Snowflake instances use the
datasource names ``--bigquery`` / ``--snowflake``, which the user defines with their own
credentials). Each file starts with the provenance header of every importer (input files and
their SHA-256).

Gold files are found the way the reference's ``resolve_gold_paths`` finds them: ``<id>.csv``
alone when it exists (one gold), else every ``<id>_<letter>.csv``, sorted (several golds, any
match wins; a per-gold ``condition_cols`` list pairs with them in that order). The files are
referred to where they are, not copied. With ``--pred-dir`` (the reference's submission
folder, ``<id>.sql`` per instance), only the instances with a prediction are written, as the
reference evaluates only those, and the predictions go to ``<out>/predictions.jsonl``.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path
from typing import Any

from .._util.boundedio import loads_json
from ..errors import QueryEvalError
from ._common import (
    ImportProblem,
    command,
    datasource_spec,
    dump_yaml,
    provenance,
    suite_relative,
    tag,
    write_jsonl,
)
from ._inputs import plain_name, read_text

CASES_FILE = "test_spider2_lite.yaml"
CONFIG_FILE = "queryeval.yaml"
PREDICTIONS_FILE = "predictions.jsonl"
_FAMILIES = (("bq", "bigquery"), ("ga", "bigquery"), ("local", "sqlite"), ("sf", "snowflake"))


def family(instance_id: str) -> str | None:
    """The engine an instance runs on, by the reference's id prefixes."""
    for prefix, name in _FAMILIES:
        if instance_id.startswith(prefix):
            return name
    return None


def read_jsonl(path: Path) -> dict[str, dict[str, Any]]:
    """``instance_id`` → record; a malformed line is an error naming the file and line."""
    out: dict[str, dict[str, Any]] = {}
    for n, line in enumerate(read_text(path).splitlines(), start=1):
        if not line.strip():
            continue
        try:  # a BoundedReadError (too deep, not JSON) is a ValueError
            item = loads_json(line)
            out[str(item["instance_id"])] = item
        except (ValueError, KeyError, TypeError) as exc:
            raise QueryEvalError(f"{path}:{n}: not a JSON object with an instance_id ({exc})"
                                 ) from None
    return out


def gold_files(instance_id: str, exec_result: Path, listing: list[str]) -> tuple[list[str], bool]:
    """The reference's ``resolve_gold_paths``: (file names, several-golds mode)."""
    if (exec_result / f"{instance_id}.csv").exists():
        return [f"{instance_id}.csv"], False
    pattern = re.compile(rf"^{re.escape(instance_id)}(_[a-z])?\.csv$")
    return sorted(f for f in listing if pattern.match(f)), True


def _rel(path: Path, out: Path) -> str:
    return suite_relative(path, out)


def build(questions: dict[str, dict[str, Any]], standard: dict[str, dict[str, Any]],
          exec_result: Path, out: Path, *, predictions: dict[str, str] | None,
          sqlite_dir: Path | None, bigquery: str, snowflake: str,
          documents: Path | None = None,
          ) -> tuple[dict[str, Any], dict[str, Any], list[dict[str, Any]], list[str]]:
    """(case file, config, prediction records, warnings)."""
    listing = sorted(os.listdir(exec_result))
    ids = sorted(standard)
    if predictions is not None:
        ids = [i for i in ids if i in predictions]
    cases: list[dict[str, object]] = []
    sources: dict[str, object] = {}
    records: list[dict[str, object]] = []
    warnings: list[str] = []
    for iid in ids:
        files, multi = gold_files(iid, exec_result, listing)
        if not files:
            warnings.append(f"{iid}: no gold result file in {exec_result} (skipped; the "
                            "reference scores it 0)")
            continue
        meta = questions.get(iid, {})
        fam = family(iid)
        case: dict[str, object] = {"id": iid}
        if meta.get("question"):
            case["question"] = meta["question"]
        paths = [_rel(exec_result / f, out) for f in files]
        case["gold_result"] = paths if multi else paths[0]
        std = standard[iid]
        if std.get("condition_cols") not in (None, []):
            case["condition_cols"] = std["condition_cols"]
        case["ignore_order"] = bool(std.get("ignore_order", False))
        datasource = _datasource_name(iid, fam, meta, bigquery, snowflake, warnings)
        if datasource is None:
            continue
        case["datasource"] = datasource
        if fam == "sqlite" and sqlite_dir is not None:
            db = str(meta.get("db"))
            sources[db] = datasource_spec(str(sqlite_dir / "{db}.sqlite"), db, out)
        tags = ["spider2_lite", fam]
        if meta.get("db"):
            tags.append(tag(f"db_{meta['db']}"))
        case["tags"] = tags
        _add_knowledge(case, iid, meta, documents)
        cases.append(case)
        if predictions is not None:
            records.append({"id": iid, "predicted": predictions[iid]})
    suite = {"kind": "sql", "thresholds": {"spider2_ex": 1.0}, "cases": cases}
    config: dict[str, object] = {}
    if sources:
        config["datasources"] = dict(sorted(sources.items()))
    if predictions is not None:
        config["predictions"] = {"source": "file", "path": PREDICTIONS_FILE}
    return suite, config, records, warnings


def _datasource_name(iid: str, fam: str | None, meta: dict[str, Any], bigquery: str,
                     snowflake: str, warnings: list[str]) -> str | None:
    """The datasource an instance runs on, by its family: a local one's database, or the
    names the user defines for the cloud ones; None (with a warning) when it has none, as
    the reference does not run it."""
    if fam == "sqlite":
        db = meta.get("db")
        if not db:
            warnings.append(f"{iid}: no 'db' in the questions file (skipped)")
            return None
        return plain_name(str(db), f"{iid}: db")  # {db}.sqlite
    if fam == "bigquery":
        return bigquery
    if fam == "snowflake":
        return snowflake
    warnings.append(f"{iid}: unknown instance id prefix (the reference does not run it)")
    return None


def _add_knowledge(case: dict[str, object], iid: str, meta: dict[str, Any],
                   documents: Path | None) -> None:
    """The instance's external-knowledge document: its text with ``--documents`` (where the
    file is), else its name as a comment."""
    doc = meta.get("external_knowledge")
    if isinstance(doc, str) and doc:
        if documents is not None and (documents / plain_name(
                doc, f"{iid}: external_knowledge")).is_file():
            case["external_knowledge"] = read_text(documents / doc)
        else:
            case["comments"] = f"external knowledge document: {doc}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog=f"{command()} spider2-lite", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gold-dir", required=True, type=Path,
                    help="evaluation_suite/gold (holds exec_result/ and spider2lite_eval.jsonl)")
    ap.add_argument("--eval", type=Path,
                    help="eval jsonl (default <gold-dir>/spider2lite_eval.jsonl)")
    ap.add_argument("--questions", type=Path, help="spider2-lite.jsonl (questions, db)")
    ap.add_argument("--pred-dir", type=Path, help="folder of <instance_id>.sql predictions")
    ap.add_argument("--sqlite-dir", type=Path,
                    help="folder of the local <db>.sqlite files (writes their datasources)")
    ap.add_argument("--bigquery", default="bigquery", help="datasource name for bq/ga instances")
    ap.add_argument("--snowflake", default="snowflake", help="datasource name for sf instances")
    ap.add_argument("--documents", type=Path,
                    help="resource/documents: external-knowledge files become external_knowledge")
    ap.add_argument("--out", required=True, type=Path, help="output directory")
    args = ap.parse_args(argv)
    gold_dir: Path = args.gold_dir
    eval_path: Path = args.eval or gold_dir / "spider2lite_eval.jsonl"
    exec_result = gold_dir / "exec_result"
    try:
        if not exec_result.is_dir():
            raise QueryEvalError(f"{exec_result}: no such folder (expected the gold result CSVs)")
        standard = read_jsonl(eval_path)
        questions = read_jsonl(args.questions) if args.questions else {}
        predictions = None
        if args.pred_dir:
            predictions = {p.stem: read_text(p)
                           for p in sorted(args.pred_dir.glob("*.sql"))}
        out: Path = args.out
        suite, config, records, warnings = build(
            questions, standard, exec_result, out, predictions=predictions,
            sqlite_dir=args.sqlite_dir, bigquery=args.bigquery, snowflake=args.snowflake,
            documents=args.documents)
    except (OSError, QueryEvalError, ImportProblem) as exc:
        msg = exc.reason() if isinstance(exc, QueryEvalError) else str(exc)
        print(f"{command()} spider2-lite: {msg}", file=sys.stderr)
        return 2
    for w in warnings:
        print(f"{command()} spider2-lite: {w}", file=sys.stderr)
    out.mkdir(parents=True, exist_ok=True)
    sources = [eval_path] + ([args.questions] if args.questions else [])
    note = (f"Gold result CSVs: {exec_result.name}/ (referred to, not copied). Scored with "
            "spider2_ex: xlang-ai/Spider2\nspider2-lite/evaluation_suite/evaluate.py (MIT).")
    if args.pred_dir:
        note += f"\nPredictions: {len(records)} .sql files of {args.pred_dir.name}/."
    (out / CASES_FILE).write_text(dump_yaml(suite, provenance("spider2-lite", sources, note)),
                                  encoding="utf-8")
    written = [out / CASES_FILE]
    if records:
        write_jsonl(out / PREDICTIONS_FILE, records, ensure_ascii=True)
        written.append(out / PREDICTIONS_FILE)
    if config:
        (out / CONFIG_FILE).write_text(dump_yaml(config, provenance("spider2-lite", sources)),
                                       encoding="utf-8")
        written.append(out / CONFIG_FILE)
    print("wrote " + ", ".join(str(p) for p in written))
    return 0


if __name__ == "__main__":
    sys.exit(main())
