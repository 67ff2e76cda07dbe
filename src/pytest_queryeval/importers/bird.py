"""BIRD ``dev.json`` / mini_dev JSON (and BIRD prediction files) to a queryeval SQL suite.

``queryeval-import bird DATA.json --out DIR`` writes ``DIR/test_bird.yaml``: one ``kind: sql``
case per item of the data file (a JSON list of ``{question_id, db_id, question, evidence, SQL,
difficulty}``, the format of BIRD's ``dev.json`` and of mini_dev's ``mini_dev_sqlite.json`` /
``_mysql`` / ``_postgresql``). The case keeps the question, the ``evidence`` (a case field, given
to predictors and prompt templates), the gold SQL and the difficulty; its datasource is the
item's ``db_id``. ``DIR/queryeval.yaml`` names one datasource per database (``--db``: a path or
URL pattern with ``{db}``, default BIRD's ``dev_databases/{db}/{db}.sqlite``) and a threshold
on ``bird_ex``, BIRD's EX.

``--pred predict_dev.json`` adds a BIRD prediction file: a JSON object
``{"<index>": "SQL\\t----- bird -----\\t<db_id>"}`` whose keys are positions in the data file
(how mini_dev's ``evaluation_utils.package_sqls`` reads them). The predictions go to
``DIR/predictions.jsonl`` and the suite config points at it. ``queryeval-import
bird-predictions DATA.json PRED.json --out FILE.jsonl`` converts a prediction file alone, for
a suite imported before.

Case ids are ``bird-<question_id>`` (``bird-<index>`` when an item has none). Each file
starts with a comment naming the importer and the input files with their SHA-256.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ._common import ImportProblem, command, datasource_spec, dump_yaml, provenance, tag, write_jsonl
from ._inputs import load_json, plain_name

CASES_FILE = "test_bird.yaml"
CONFIG_FILE = "queryeval.yaml"
PREDICTIONS_FILE = "predictions.jsonl"
#: mini_dev ``evaluation_utils.package_sqls`` / BIRD's ``generate_sql_file`` separator.
SEPARATOR = "\t----- bird -----\t"
DEFAULT_DB = "dev_databases/{db}/{db}.sqlite"


def _load_json(path: Path) -> Any:
    return load_json(path)


def read_data(path: Path) -> list[dict[str, Any]]:
    """The items of a BIRD / mini_dev data file, checked: each needs ``db_id``, ``question``
    and ``SQL`` strings (mini_dev's PostgreSQL and MySQL files use the same keys)."""
    data = _load_json(path)
    if not isinstance(data, list):
        raise ImportProblem(f"{path.name}: expected a JSON list of questions")
    for i, item in enumerate(data):
        if not isinstance(item, dict):
            raise ImportProblem(f"{path.name}: item {i}: expected an object")
        for key in ("db_id", "question", "SQL"):
            if not isinstance(item.get(key), str) or not item[key].strip():
                raise ImportProblem(f"{path.name}: item {i}: {key!r} must be a non-empty string")
        try:  # {db} of --db: a path below the databases folder
            plain_name(item["db_id"])
        except ImportProblem as exc:
            raise ImportProblem(f"{path.name}: item {i}: {exc}") from None
        for key in ("evidence", "difficulty"):
            if item.get(key) is not None and not isinstance(item[key], str):
                raise ImportProblem(f"{path.name}: item {i}: {key!r} must be a string")
    return data


def case_id(item: dict[str, Any], index: int) -> str:
    qid = item.get("question_id")
    return f"bird-{qid if isinstance(qid, int | str) and str(qid).strip() else index}"


def read_predictions(path: Path) -> dict[int, tuple[str, str]]:
    """``{index: (sql, db_id)}`` from a BIRD prediction file."""
    data = _load_json(path)
    if not isinstance(data, dict):
        raise ImportProblem(f"{path.name}: expected a JSON object {{index: 'SQL\\t----- bird "
                            "-----\\tdb_id'}")
    out: dict[int, tuple[str, str]] = {}
    for key, value in data.items():
        try:
            index = int(key)
        except ValueError:
            raise ImportProblem(f"{path.name}: key {key!r} is not an index") from None
        if not isinstance(value, str) or SEPARATOR not in value:
            raise ImportProblem(f"{path.name}: {key}: expected 'SQL\\t----- bird -----\\tdb_id'")
        sql, db_id = value.rsplit(SEPARATOR, 1)
        out[index] = (sql, db_id.strip())
    return out


def prediction_records(data: list[dict[str, Any]], preds: dict[int, tuple[str, str]],
                       pred_name: str) -> list[dict[str, Any]]:
    """The plugin's predictions records (``{"id", "predicted"}``), each checked against the
    data item at its index (same database)."""
    records = []
    for index in sorted(preds):
        sql, db_id = preds[index]
        if not 0 <= index < len(data):
            raise ImportProblem(f"{pred_name}: index {index} is outside the data file "
                                f"({len(data)} items)")
        if db_id != data[index]["db_id"]:
            raise ImportProblem(f"{pred_name}: {index}: db_id {db_id!r}, but the data item at "
                                f"that index is on {data[index]['db_id']!r}")
        records.append({"id": case_id(data[index], index), "predicted": sql})
    return records


def build(data: list[dict[str, Any]], *, source_name: str) -> dict[str, Any]:
    """The case-file mapping."""
    cases: list[dict[str, object]] = []
    seen: set[str] = set()
    for index, item in enumerate(data):
        cid = case_id(item, index)
        if cid in seen:
            raise ImportProblem(f"{source_name}: item {index}: duplicate question_id ({cid})")
        seen.add(cid)
        case: dict[str, object] = {"id": cid, "question": item["question"]}
        if item.get("evidence"):
            case["evidence"] = item["evidence"]
        case["gold"] = item["SQL"]
        case["datasource"] = item["db_id"]
        if item.get("difficulty"):
            case["difficulty"] = item["difficulty"]
        case["tags"] = ["bird", tag(item["db_id"])]
        cases.append(case)
    return {"kind": "sql", "cases": cases}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog=f"{command()} bird",
                                 description="BIRD dev.json / mini_dev JSON to a SQL suite")
    ap.add_argument("data", type=Path, help="dev.json or mini_dev_{sqlite,mysql,postgresql}.json")
    ap.add_argument("--out", required=True, type=Path, help="output directory")
    ap.add_argument("--pred", type=Path, help="a BIRD prediction file (predict_dev.json)")
    ap.add_argument("--db", default=DEFAULT_DB, metavar="PATTERN",
                    help="each database's SQLite path or SQLAlchemy URL, {db} for its db_id "
                         f"(default {DEFAULT_DB}; ${{VAR}} is expanded by the plugin)")
    args = ap.parse_args(argv)
    out: Path = args.out
    try:
        data = read_data(args.data)
        suite = build(data, source_name=args.data.name)
        records = (prediction_records(data, read_predictions(args.pred), args.pred.name)
                   if args.pred else None)
    except (OSError, ImportProblem) as exc:
        print(f"{command()} bird: {exc}", file=sys.stderr)
        return 2
    out.mkdir(parents=True, exist_ok=True)
    sources = [args.data, *([args.pred] if args.pred else [])]
    header = provenance("bird", sources, "BIRD (bird-bench.github.io): CC BY-SA 4.0.")
    (out / CASES_FILE).write_text(dump_yaml(suite, header), encoding="utf-8")
    dbs = sorted({item["db_id"] for item in data})
    config: dict[str, object] = {
        "datasources": {db: datasource_spec(args.db, db, out) for db in dbs},
        "thresholds": {"bird_ex": 1.0},
    }
    written = [out / CASES_FILE, out / CONFIG_FILE]
    if records is not None:
        write_jsonl(out / PREDICTIONS_FILE, records)
        config["predictions"] = {"source": "file", "path": PREDICTIONS_FILE}
        written.append(out / PREDICTIONS_FILE)
    (out / CONFIG_FILE).write_text(dump_yaml(config, header), encoding="utf-8")
    print(f"wrote {', '.join(str(p) for p in written)} ({len(data)} cases, {len(dbs)} "
          f"databases{f', {len(records)} predictions' if records is not None else ''})")
    return 0


def main_predictions(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog=f"{command()} bird-predictions",
        description="a BIRD prediction file to the plugin's predictions JSONL")
    ap.add_argument("data", type=Path, help="the data file the suite was imported from")
    ap.add_argument("pred", type=Path, help="predict_dev.json ({index: 'SQL\\t----- bird "
                                            "-----\\tdb_id'})")
    ap.add_argument("--out", required=True, type=Path, help="the JSONL file to write")
    args = ap.parse_args(argv)
    try:
        records = prediction_records(read_data(args.data), read_predictions(args.pred),
                                     args.pred.name)
    except (OSError, ImportProblem) as exc:
        print(f"{command()} bird-predictions: {exc}", file=sys.stderr)
        return 2
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_jsonl(args.out, records)
    print(f"wrote {args.out} ({len(records)} predictions)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
