"""LiveSQLBench jsonl to a queryeval SQL suite: Query tasks scored by BIRD Soft EX (``soft_ex``),
Management tasks by their own test cases on throwaway copies.

``queryeval-import livesqlbench livesqlbench_data.jsonl --db PATTERN --out DIR`` writes
``DIR/test_livesqlbench.yaml``, one ``kind: sql`` case per Query task: ``query`` becomes the
question, ``sol_sql`` the gold, ``conditions`` the case key that decides list versus set
equality in ``soft_ex``, ``difficulty_tier`` the difficulty, ``external_knowledge`` a case field
given to predictors and prompt templates, ``selected_database`` the datasource, and
``category`` / ``high_level`` tags. ``DIR/queryeval.yaml`` names one datasource per database
(``--db``: SQLAlchemy URL or SQLite path with ``{db}``) and the threshold ``soft_ex: 1``,
LiveSQLBench's own test for a ``Query`` task.

A ``Management`` task becomes a case of ``DIR/test_livesqlbench_management.yaml`` (gated on
``execution_accuracy``: every test case passes), ``task: ddl`` when a statement of its
``sol_sql`` (comments aside) begins with CREATE, ALTER, DROP, TRUNCATE, COMMENT, GRANT or
REVOKE, else ``task: dml`` (the plugin scores both alike; the kind is for reports):
``preprocess_sql`` becomes ``setup``, ``sol_sql`` the ``gold`` statements, ``clean_up_sql`` (or
``clean_up_sqls``, as the published files spell it) ``cleanup``, and each of its ``test_cases``
a ``livesqlbench_test`` check, run with the reference's helpers in the sandbox worker
(:mod:`..tasks.livesqlbench`). Its datasource is ``<db>_sandbox`` (``--sandbox-db``, default
``--db``), marked ``writable: sandbox``. A
Management task without test cases is imported without checks, so the plugin reports it as an
error (the benchmark passes it whenever the prediction executes), and the import says so. A
``follow_up`` is not imported (LiveSQLBench's evaluator scores top-level instances only;
follow-ups are BIRD-Interact's second turn), and the import says so.

Query tasks the SQL kind cannot score as the benchmark does are skipped, each listed with its
reason on stdout and in the suite's header: tasks with ``preprocess_sql`` (it changes the
database first), solutions of several statements, and tasks without ``sol_sql`` (the public
file omits it: merge the ground truth first, with the benchmark's ``integrate_gt_data.py``).

``--pred FILE.jsonl`` adds predictions in the benchmark's post-processed format
(``instance_id`` and ``pred_sqls``) as ``DIR/predictions.jsonl``. A Query prediction of several
statements is joined with ``;`` and is then refused by the read-only guard (scored 0); a
Management prediction's statements are joined with ``;`` on a line of its own (so a trailing
``--`` comment cannot swallow it) and run in order on the task's copy.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Collection
from pathlib import Path
from typing import Any

from ..metrics.soft_ex import CONDITION_KEYS
from ._common import ImportProblem, command, datasource_spec, dump_yaml, provenance, tag, write_jsonl
from ._inputs import json_line, plain_name, read_text

CASES_FILE = "test_livesqlbench.yaml"
#: The Management tasks' file: its cases are gated on ``execution_accuracy`` (every test case
#: passes), not on the Query file's ``soft_ex``.
TASKS_FILE = "test_livesqlbench_management.yaml"
CONFIG_FILE = "queryeval.yaml"
PREDICTIONS_FILE = "predictions.jsonl"
#: The suffix of the writable datasource of a database's Management tasks.
SANDBOX_SUFFIX = "_sandbox"
#: A Management task whose solution begins a statement with one of these is ``task: ddl``.
DDL_KEYWORDS = ("CREATE", "ALTER", "DROP", "TRUNCATE", "COMMENT", "GRANT", "REVOKE")
#: How a Management prediction's statements are joined into the one text a task runs.
STATEMENT_JOIN = "\n;\n"
_COMMENTS = re.compile(r"--[^\n]*|/\*.*?\*/", re.DOTALL)


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


def statements(value: object, where: str) -> list[str]:
    """``split_field``: a string is one statement, a list is the statements, empty is none."""
    if not value:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(s, str) for s in value):
        return [s for s in value if s.strip()]
    raise ImportProblem(f"{where}: expected a string or a list of strings")


def _knowledge(value: object) -> str | list[str | int | float]:
    """``external_knowledge`` as the case field accepts it (a string or a list of names)."""
    if isinstance(value, str) or (isinstance(value, list) and all(
            isinstance(k, str | int | float) and not isinstance(k, bool) for k in value)):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def task_kind(gold: list[str]) -> str:
    """``ddl`` when a statement of the solution (comments aside) begins with a DDL keyword."""
    for sql in gold:
        for stmt in _COMMENTS.sub(" ", sql).split(";"):
            words = stmt.split(None, 1)
            if words and words[0].upper() in DDL_KEYWORDS:
                return "ddl"
    return "dml"


def _management(item: dict[str, Any], cid: str, db: str, gold: list[str], where: str,
                notes: list[str]) -> dict[str, object]:
    """The ``task:`` case of a Management task (see the module doc)."""
    case: dict[str, object] = {"id": cid}
    if isinstance(item.get("query"), str):
        case["question"] = item["query"]
    knowledge = item.get("external_knowledge")
    if knowledge:
        case["external_knowledge"] = _knowledge(knowledge)
    case["task"] = task_kind(gold)
    case["datasource"] = db + SANDBOX_SUFFIX
    setup = statements(item.get("preprocess_sql"), f"{where}: preprocess_sql")
    if setup:
        case["setup"] = setup
    case["gold"] = gold
    cleanup = statements(item.get("clean_up_sql") or item.get("clean_up_sqls"),
                         f"{where}: clean_up_sql")
    if cleanup:
        case["cleanup"] = cleanup
    tests = item.get("test_cases") or []
    if not isinstance(tests, list) or not all(isinstance(t, str) for t in tests):
        raise ImportProblem(f"{where}: 'test_cases' must be a list of Python sources")
    if tests:
        case["checks"] = [{"livesqlbench_test": t} for t in tests]
    else:
        notes.append(f"{cid}: Management task without test_cases: imported without checks, "
                     "so the plugin reports it as an error (LiveSQLBench passes it whenever "
                     "the prediction executes)")
    return case


def _follow_up(item: dict[str, Any], cid: str, notes: list[str]) -> None:
    if isinstance(item.get("follow_up"), dict):
        notes.append(f"{cid}: follow_up not imported (LiveSQLBench's evaluator scores "
                     "top-level instances only)")


def build(items: list[dict[str, Any]], *, source_name: str,
          ) -> tuple[dict[str, Any], list[str], list[str], set[str]]:
    """(case-file mapping, skipped ``id: reason`` lines, notes, databases used; a database of
    Management tasks is named with :data:`SANDBOX_SUFFIX`)."""
    cases: list[dict[str, object]] = []
    skipped: list[str] = []
    notes: list[str] = []
    dbs: set[str] = set()
    seen: set[str] = set()
    for item in items:
        where = f"{source_name}: line {item['_line']}"
        cid, db = _instance(item, where, seen)
        category = item.get("category", "Query")
        gold = statements(item.get("sol_sql"), f"{where}: sol_sql")
        conditions = item.get("conditions") or {}
        if not isinstance(conditions, dict):
            raise ImportProblem(f"{where}: 'conditions' must be an object")
        if category == "Management" and gold:
            case = _management(item, cid, db, gold, where, notes)
            _conditions(case, conditions, cid, notes)
            _tags(case, item, db, category)
            _follow_up(item, cid, notes)
            cases.append(case)
            dbs.add(db + SANDBOX_SUFFIX)
            continue
        reason = _skip_reason(item, category, gold, where)
        if reason is not None:
            skipped.append(f"{cid}: {reason}")
            continue
        case = {"id": cid}
        if isinstance(item.get("query"), str):
            case["question"] = item["query"]
        knowledge = item.get("external_knowledge")
        if knowledge:
            case["external_knowledge"] = _knowledge(knowledge)
        case["gold"] = gold[0]
        case["datasource"] = db
        _conditions(case, conditions, cid, notes)
        _tags(case, item, db, category)
        _follow_up(item, cid, notes)
        cases.append(case)
        dbs.add(db)
    return {"kind": "sql", "thresholds": {"soft_ex": 1.0}, "cases": cases}, skipped, notes, dbs


def _instance(item: dict[str, Any], where: str, seen: set[str]) -> tuple[str, str]:
    """The instance's id (unique in the file, added to ``seen``) and its database (a plain
    name: ``--db`` finds it below the databases folder)."""
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
    return cid, db


def _skip_reason(item: dict[str, Any], category: object, gold: list[str],
                 where: str) -> str | None:
    """Why a Query instance is not imported (the SQL kind runs one query on the database as
    it is), or None."""
    if category not in ("Query", "Management"):
        return f"category {category!r}: not a LiveSQLBench category (Query, Management)"
    if not gold:
        return ("no sol_sql (the public file omits it: merge the ground truth with the "
                "benchmark's integrate_gt_data.py)")
    if statements(item.get("preprocess_sql"), f"{where}: preprocess_sql"):
        return "preprocess_sql changes the database before the task"
    if len(gold) > 1:
        return f"sol_sql has {len(gold)} statements; the SQL kind runs one query"
    return None


def _conditions(case: dict[str, object], conditions: dict[str, Any], cid: str,
                notes: list[str]) -> None:
    dropped = sorted(set(conditions) - set(CONDITION_KEYS))
    if dropped:
        notes.append(f"{cid}: conditions key(s) {', '.join(dropped)} dropped (soft_ex reads "
                     "only 'order')")
    case["conditions"] = {k: v for k, v in conditions.items() if k in CONDITION_KEYS}


def _tags(case: dict[str, object], item: dict[str, Any], db: str, category: object) -> None:
    if isinstance(item.get("difficulty_tier"), str) and item["difficulty_tier"].strip():
        case["difficulty"] = tag(item["difficulty_tier"])
    tags = ["livesqlbench", tag(db), tag(str(category))]
    if item.get("high_level") is True:
        tags.append("high_level")
    case["tags"] = tags


def prediction_records(path: Path, ids: set[str], tasks: Collection[str] = (),
                       ) -> list[dict[str, Any]]:
    """The predictions of the imported cases; ``tasks``: the ids of Management cases."""
    records = []
    for item in read_jsonl(path):
        iid = str(item.get("instance_id", ""))
        if iid not in ids:
            continue  # a skipped task, or one of another file
        sqls = statements(item.get("pred_sqls"), f"{path.name}: line {item['_line']}: pred_sqls")
        join = STATEMENT_JOIN if iid in tasks else ";\n"
        records.append({"id": iid, "predicted": join.join(sqls)})
    return records


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog=f"{command()} livesqlbench",
                                 description="LiveSQLBench jsonl to a SQL suite (Query tasks: "
                                             "soft_ex; Management tasks: their test cases on "
                                             "throwaway copies)")
    ap.add_argument("data", type=Path, help="livesqlbench_data.jsonl with the ground truth merged")
    ap.add_argument("--out", required=True, type=Path, help="output directory")
    ap.add_argument("--db", required=True, metavar="PATTERN",
                    help="each database's SQLAlchemy URL or SQLite path, {db} for "
                         "selected_database (e.g. 'postgresql://user:${PGPASSWORD}@127.0.0.1/{db}')")
    ap.add_argument("--sandbox-db", metavar="PATTERN",
                    help="the database Management tasks are copied from, as --db (default: "
                         "--db); on PostgreSQL a database of its own, e.g. "
                         "'postgresql://user:${PGPASSWORD}@127.0.0.1/{db}_sandbox', made once "
                         "with CREATE DATABASE alien_sandbox TEMPLATE alien")
    ap.add_argument("--pred", type=Path, help="predictions jsonl (instance_id, pred_sqls)")
    args = ap.parse_args(argv)
    out: Path = args.out
    try:
        suite, skipped, notes, dbs = build(read_jsonl(args.data), source_name=args.data.name)
        records = (prediction_records(args.pred, {c["id"] for c in suite["cases"]},
                                      {c["id"] for c in suite["cases"] if "task" in c})
                   if args.pred else None)
    except (OSError, ImportProblem) as exc:
        print(f"{command()} livesqlbench: {exc}", file=sys.stderr)
        return 2
    out.mkdir(parents=True, exist_ok=True)
    sources = [args.data, *([args.pred] if args.pred else [])]
    note = "LiveSQLBench (livesqlbench.ai): CC BY-SA 4.0."
    if skipped:
        note += f"\nSkipped {len(skipped)} task(s):\n" + "\n".join(f"  {s}" for s in skipped)
    header = provenance("livesqlbench", sources, note)
    tasks = [c for c in suite["cases"] if "task" in c]
    queries = [c for c in suite["cases"] if "task" not in c]
    files = []
    if queries or not tasks:
        (out / CASES_FILE).write_text(dump_yaml({**suite, "cases": queries}, header),
                                      encoding="utf-8")
        files.append(out / CASES_FILE)
    if tasks:
        (out / TASKS_FILE).write_text(dump_yaml(
            {"kind": "sql", "thresholds": {"execution_accuracy": 1.0}, "cases": tasks}, header),
            encoding="utf-8")
        files.append(out / TASKS_FILE)
    config: dict[str, object] = {"datasources": {db: _datasource(db, args, out)
                                              for db in sorted(dbs)}}
    written = [*files, out / CONFIG_FILE]
    if records is not None:
        write_jsonl(out / PREDICTIONS_FILE, records)
        config["predictions"] = {"source": "file", "path": PREDICTIONS_FILE}
        written.append(out / PREDICTIONS_FILE)
    (out / CONFIG_FILE).write_text(dump_yaml(config, provenance("livesqlbench", sources)),
                                   encoding="utf-8")
    print(f"wrote {', '.join(str(p) for p in written)} ({len(suite['cases'])} cases, "
          f"{len(skipped)} skipped)")
    for line in [*(f"skipped {s}" for s in skipped), *notes]:
        print(f"  {line}")
    return 0


def _datasource(name: str, args: argparse.Namespace, out: Path) -> dict[str, Any]:
    """A database's datasource; ``<db>_sandbox`` is the writable one of its Management tasks."""
    if not name.endswith(SANDBOX_SUFFIX):
        return datasource_spec(args.db, name, out)
    spec = datasource_spec(args.sandbox_db or args.db, name[:-len(SANDBOX_SUFFIX)], out)
    return {**spec, "writable": "sandbox"}


if __name__ == "__main__":
    sys.exit(main())
