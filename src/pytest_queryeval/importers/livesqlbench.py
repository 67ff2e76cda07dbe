"""LiveSQLBench jsonl to a queryeval SQL suite scored by BIRD Soft EX (``soft_ex``).

``queryeval-import livesqlbench livesqlbench_data.jsonl --db PATTERN --out DIR`` writes
``DIR/test_livesqlbench.yaml``, one ``kind: sql`` case per task: ``query`` becomes the
question, ``sol_sql`` the gold, ``conditions`` the case key that decides list versus set
equality in ``soft_ex``, ``difficulty_tier`` the difficulty, ``external_knowledge`` a case field
given to predictors and prompt templates, ``selected_database`` the datasource, and
``category`` / ``high_level`` tags. ``DIR/queryeval.yaml`` names one datasource per database
(``--db``: SQLAlchemy URL or SQLite path with ``{db}``) and the threshold ``soft_ex: 1``,
LiveSQLBench's own test for a ``Query`` task.

Tasks the SQL kind cannot score as the benchmark does are skipped, each listed with its
reason on stdout and in the suite's header: ``Management`` tasks (the benchmark runs their
own test cases after CRUD statements), tasks with ``preprocess_sql`` (it changes the
database first), solutions of several statements, and tasks without ``sol_sql`` (the public
file omits it: merge the ground truth first, with the benchmark's ``integrate_gt_data.py``).

``--pred FILE.jsonl`` adds predictions in the benchmark's post-processed format
(``instance_id`` and ``pred_sqls``) as ``DIR/predictions.jsonl``. A prediction of several
statements is joined with ``;`` and is then refused by the read-only guard (scored 0).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ..metrics.soft_ex import CONDITION_KEYS
from ._common import ImportProblem, datasource_spec, dump_yaml, provenance, tag
from ._inputs import json_line, plain_name, read_text

CASES_FILE = "test_livesqlbench.yaml"
CONFIG_FILE = "queryeval.yaml"
PREDICTIONS_FILE = "predictions.jsonl"


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    items = []
    for n, line in enumerate(read_text(path).splitlines(), start=1):
        if not line.strip():
            continue
        item = json_line(line, f"{path.name}: line {n}")
        if not isinstance(item, dict):
            raise ImportProblem(f"{path.name}: line {n}: expected an object")
        item["_line"] = n
        items.append(item)
    return items


def statements(value: Any, where: str) -> list[str]:
    """``split_field``: a string is one statement, a list is the statements, empty is none."""
    if not value:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(s, str) for s in value):
        return [s for s in value if s.strip()]
    raise ImportProblem(f"{where}: expected a string or a list of strings")


def _knowledge(value: Any) -> Any:
    """``external_knowledge`` as the case field accepts it (a string or a list of names)."""
    if isinstance(value, str) or (isinstance(value, list) and all(
            isinstance(k, str | int | float) and not isinstance(k, bool) for k in value)):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def build(items: list[dict[str, Any]], *, source_name: str,
          ) -> tuple[dict[str, Any], list[str], list[str], set[str]]:
    """(case-file mapping, skipped ``id: reason`` lines, notes, databases used)."""
    cases: list[dict[str, Any]] = []
    skipped: list[str] = []
    notes: list[str] = []
    dbs: set[str] = set()
    seen: set[str] = set()
    for item in items:
        where = f"{source_name}: line {item['_line']}"
        iid, db = item.get("instance_id"), item.get("selected_database")
        if not isinstance(iid, str | int) or not str(iid).strip():
            raise ImportProblem(f"{where}: 'instance_id' is missing")
        if not isinstance(db, str) or not db.strip():
            raise ImportProblem(f"{where}: 'selected_database' is missing")
        try:  # {db} of --db: a path below the databases folder
            plain_name(db, "selected_database")
        except ImportProblem as exc:
            raise ImportProblem(f"{where}: {exc}") from None
        cid = str(iid)
        if cid in seen:
            raise ImportProblem(f"{where}: duplicate instance_id {cid!r}")
        seen.add(cid)
        category = item.get("category", "Query")
        gold = statements(item.get("sol_sql"), f"{where}: sol_sql")
        reason = None
        if category != "Query":
            reason = f"category {category!r}: scored by its own test cases after CRUD statements"
        elif statements(item.get("preprocess_sql"), f"{where}: preprocess_sql"):
            reason = "preprocess_sql changes the database before the task"
        elif not gold:
            reason = ("no sol_sql (the public file omits it: merge the ground truth with the "
                      "benchmark's integrate_gt_data.py)")
        elif len(gold) > 1:
            reason = f"sol_sql has {len(gold)} statements; the SQL kind runs one query"
        if reason is not None:
            skipped.append(f"{cid}: {reason}")
            continue
        conditions = item.get("conditions") or {}
        if not isinstance(conditions, dict):
            raise ImportProblem(f"{where}: 'conditions' must be an object")
        dropped = sorted(set(conditions) - set(CONDITION_KEYS))
        if dropped:
            notes.append(f"{cid}: conditions key(s) {', '.join(dropped)} dropped (soft_ex reads "
                         "only 'order')")
        case: dict[str, Any] = {"id": cid}
        if isinstance(item.get("query"), str):
            case["question"] = item["query"]
        knowledge = item.get("external_knowledge")
        if knowledge:
            case["external_knowledge"] = _knowledge(knowledge)
        case["gold"] = gold[0]
        case["datasource"] = db
        case["conditions"] = {k: v for k, v in conditions.items() if k in CONDITION_KEYS}
        if isinstance(item.get("difficulty_tier"), str) and item["difficulty_tier"].strip():
            case["difficulty"] = tag(item["difficulty_tier"])
        tags = ["livesqlbench", tag(db), tag(str(category))]
        if item.get("high_level") is True:
            tags.append("high_level")
        case["tags"] = tags
        cases.append(case)
        dbs.add(db)
    return {"kind": "sql", "thresholds": {"soft_ex": 1.0}, "cases": cases}, skipped, notes, dbs


def prediction_records(path: Path, ids: set[str]) -> list[dict[str, Any]]:
    records = []
    for item in read_jsonl(path):
        iid = str(item.get("instance_id", ""))
        if iid not in ids:
            continue  # a skipped task, or one of another file
        sqls = statements(item.get("pred_sqls"), f"{path.name}: line {item['_line']}: pred_sqls")
        records.append({"id": iid, "predicted": ";\n".join(sqls)})
    return records


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="queryeval-import livesqlbench",
                                 description="LiveSQLBench jsonl to a SQL suite (soft_ex)")
    ap.add_argument("data", type=Path, help="livesqlbench_data.jsonl with the ground truth merged")
    ap.add_argument("--out", required=True, type=Path, help="output directory")
    ap.add_argument("--db", required=True, metavar="PATTERN",
                    help="each database's SQLAlchemy URL or SQLite path, {db} for "
                         "selected_database (e.g. 'postgresql://user:${PGPASSWORD}@127.0.0.1/{db}')")
    ap.add_argument("--pred", type=Path, help="predictions jsonl (instance_id, pred_sqls)")
    args = ap.parse_args(argv)
    out: Path = args.out
    try:
        suite, skipped, notes, dbs = build(read_jsonl(args.data), source_name=args.data.name)
        records = (prediction_records(args.pred, {c["id"] for c in suite["cases"]})
                   if args.pred else None)
    except (OSError, ImportProblem) as exc:
        print(f"queryeval-import livesqlbench: {exc}", file=sys.stderr)
        return 2
    out.mkdir(parents=True, exist_ok=True)
    sources = [args.data, *([args.pred] if args.pred else [])]
    note = "LiveSQLBench (livesqlbench.ai): CC BY-SA 4.0."
    if skipped:
        note += f"\nSkipped {len(skipped)} task(s):\n" + "\n".join(f"  {s}" for s in skipped)
    header = provenance("livesqlbench", sources, note)
    (out / CASES_FILE).write_text(dump_yaml(suite, header), encoding="utf-8")
    config: dict[str, Any] = {
        "datasources": {db: datasource_spec(args.db, db, out) for db in sorted(dbs)}}
    written = [out / CASES_FILE, out / CONFIG_FILE]
    if records is not None:
        (out / PREDICTIONS_FILE).write_text(
            "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
        config["predictions"] = {"source": "file", "path": PREDICTIONS_FILE}
        written.append(out / PREDICTIONS_FILE)
    (out / CONFIG_FILE).write_text(dump_yaml(config, provenance("livesqlbench", sources)),
                                   encoding="utf-8")
    print(f"wrote {', '.join(str(p) for p in written)} ({len(suite['cases'])} cases, "
          f"{len(skipped)} skipped)")
    for line in [*(f"skipped {s}" for s in skipped), *notes]:
        print(f"  {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
