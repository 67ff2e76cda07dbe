"""SParC / CoSQL interactions to a suite of SQL conversation cases.

``queryeval import sparc GOLD --pred PRED --tables tables.json --out DIR`` writes
``DIR/test_sparc.yaml``: one ``kind: sql`` case per interaction, whose ``conversation:`` holds
one user turn per gold query (``gold``, and ``predicted`` when PRED has that turn), and, given
``--tables``, ``DIR/queryeval.yaml`` with a ``spider-schema`` datasource, so ``pytest DIR
--queryeval-spider-table`` prints the Spider test-suite evaluator's turn table. A turn passes
on exact set match (``thresholds: {exact_set_match: 1.0}``): a case passes when its whole
interaction matches.

GOLD is either the evaluator's text format (``SQL<TAB>db_id`` per line, one blank line between
interactions, the last one counted without a trailing blank line) or a SParC / CoSQL JSON file
(a list of ``{"database_id", "interaction": [{"utterance", "query"}, ...]}``). PRED is the text
format with one SQL per line. The text format has no questions: each turn's ``content`` is
``turn N``. A predicted interaction with fewer turns leaves the later turns without
``predicted``: they score 0 (the reference's ``zip`` drops them; ``--reference`` asks for that
with ``conversation_scoring: tsse``, and for its ``value`` -> ``1`` rewrite of predictions).
Lines are read exactly as the reference reads them; every problem names its file and line.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import QueryEvalError
from ._common import ImportProblem, command, dump_yaml, provenance, suite_relative, write_jsonl
from ._inputs import load_json, plain_name, read_text

if TYPE_CHECKING:
    from ..metrics.tsse import TextTurn

CASES_FILE = "test_sparc.yaml"
CONFIG_FILE = "queryeval.yaml"


@dataclass(frozen=True, slots=True)
class GoldTurn:
    sql: str
    where: str  # ``file:line`` (text) or ``file: interaction i: turn n`` (JSON)
    utterance: str | None = None


@dataclass(frozen=True, slots=True)
class Interaction:
    db_id: str
    turns: list[GoldTurn]
    where: str


def _sessions(path: Path) -> list[list[TextTurn]]:
    from ..metrics.tsse import parse_sessions

    return parse_sessions(read_text(path))


def read_gold(path: Path) -> list[Interaction]:
    """The interactions of a gold file (text format, or SParC/CoSQL JSON by its ``.json``)."""
    if path.suffix.lower() == ".json":
        return _read_json(path)
    out: list[Interaction] = []
    last_line = 0
    for session in _sessions(path):
        if not session:
            raise ImportProblem(f"{path.name}:{last_line + 1}: an empty interaction (two blank "
                                "lines in a row): the reference would count it as matched")
        turns = []
        db_id = ""
        for t in session:
            where = f"{path.name}:{t.line}"
            if len(t.fields) != 2 or not t.fields[0].strip():
                raise ImportProblem(f"{where}: expected 'SQL<TAB>db_id', got "
                                    f"{len(t.fields)} tab-separated field(s)")
            sql, db = t.fields
            try:
                plain_name(db)
            except ImportProblem as exc:
                raise ImportProblem(f"{where}: {exc}") from None
            if db_id and db != db_id:
                raise ImportProblem(f"{where}: db_id {db!r}, but the interaction's first turn "
                                    f"({path.name}:{session[0].line}) is on {db_id!r}")
            db_id = db
            turns.append(GoldTurn(sql, where))
        out.append(Interaction(db_id, turns, f"{path.name}:{session[0].line}"))
        last_line = session[-1].line + 1
    if not out:
        raise ImportProblem(f"{path.name}: no interaction")
    return out


def _read_json(path: Path) -> list[Interaction]:
    data = load_json(path)
    if not isinstance(data, list) or not data:
        raise ImportProblem(f"{path.name}: expected a JSON list of interactions")
    out: list[Interaction] = []
    for i, item in enumerate(data):
        at = f"{path.name}: interaction {i}"
        if not isinstance(item, dict):
            raise ImportProblem(f"{at}: expected an object")
        db = item.get("database_id")
        if not isinstance(db, str):
            raise ImportProblem(f"{at}: 'database_id' must be a string")
        try:
            plain_name(db, "database_id")
        except ImportProblem as exc:
            raise ImportProblem(f"{at}: {exc}") from None
        turns_in = item.get("interaction")
        if not isinstance(turns_in, list) or not turns_in:
            raise ImportProblem(f"{at}: 'interaction' must be a non-empty list of turns")
        turns = []
        for n, turn in enumerate(turns_in, 1):
            where = f"{at}: turn {n}"
            if not isinstance(turn, dict):
                raise ImportProblem(f"{where}: expected an object")
            sql, utterance = turn.get("query"), turn.get("utterance")
            if not isinstance(sql, str) or not sql.strip():
                raise ImportProblem(f"{where}: 'query' must be a non-empty string")
            if utterance is not None and not isinstance(utterance, str):
                raise ImportProblem(f"{where}: 'utterance' must be a string")
            turns.append(GoldTurn(sql, where, utterance or None))
        out.append(Interaction(db, turns, at))
    return out


def read_pred(path: Path, gold: list[Interaction]) -> list[list[str]]:
    """One list of predicted SQL per interaction (the first tab-separated field of each line),
    as many interactions as the gold; a session may be shorter than its gold, or empty."""
    sessions = _sessions(path)
    if len(sessions) != len(gold):
        raise ImportProblem(f"{path.name}: {len(sessions)} interactions, but the gold has "
                            f"{len(gold)} (one blank line between interactions)")
    out = []
    for n, (session, g) in enumerate(zip(sessions, gold, strict=True)):
        if len(session) > len(g.turns):
            extra = session[len(g.turns)]
            raise ImportProblem(f"{path.name}:{extra.line}: interaction {n + 1} ({g.where}) has "
                                f"{len(g.turns)} gold turn(s); this is predicted turn "
                                f"{len(g.turns) + 1}")
        out.append([t.fields[0] for t in session])
    return out


def check_tables(gold: list[Interaction], tables: Path) -> None:
    """Every database is in ``tables.json``: its schema scores each turn."""
    from ..errors import ConfigError
    from ..metrics.spider import Schema

    for item in gold:
        try:
            Schema.from_tables_json(tables, item.db_id)
        except ConfigError as exc:
            raise ImportProblem(f"{item.where}: {exc.reason()}") from None


def build(gold: list[Interaction], pred: list[list[str]] | None, *, datasource: str,
          prefix: str, reference: bool, inline: bool) -> tuple[dict[str, Any],
                                                                list[dict[str, Any]]]:
    """The case-file mapping and the predictions records (``{"id", "turn", "predicted"}``)."""
    from ..metrics.tsse import TSSE, reference_prediction

    width = max(4, len(str(len(gold) - 1)))
    cases: list[dict[str, object]] = []
    records: list[dict[str, Any]] = []
    for i, item in enumerate(gold):
        cid = f"{prefix}-{i:0{width}d}"
        conversation: list[dict[str, object]] = []
        for n, turn in enumerate(item.turns, 1):
            entry: dict[str, object] = {"role": "user", "content": turn.utterance or f"turn {n}",
                                        "gold": turn.sql}
            if pred is not None and n <= len(pred[i]):
                text = reference_prediction(pred[i][n - 1]) if reference else pred[i][n - 1]
                if inline:
                    entry["predicted"] = text
                else:
                    records.append({"id": cid, "turn": n, "predicted": text})
            conversation.append(entry)
        case: dict[str, object] = {"id": cid, "db_id": item.db_id}
        if pred is not None and inline and not pred[i]:
            # no predicted turn at all: an empty list of the case's predictions says so (every
            # turn missing), where no `predicted:` anywhere would ask another source
            case["predicted"] = []
        case["conversation"] = conversation
        cases.append(case)
    # a turn passes on exact set match, so turn_accuracy is the reference's question match and
    # interaction_accuracy (a case passes) its interaction match
    suite: dict[str, Any] = {"kind": "sql", "datasource": datasource, "structure": True,
                             "thresholds": {"exact_set_match": 1.0}}
    if reference:
        suite["conversation_scoring"] = TSSE
    suite["cases"] = cases
    return suite, records


def print_table(gold: list[Interaction], pred: list[list[str]], tables: Path, *,
                reference: bool) -> None:
    """The reference's tables for these files, computed here (no suite run)."""
    from ..metrics.tsse import ALL, TSSE, format_levels, format_turns, score_texts, turn_table

    scored = score_texts([[(t.sql, g.db_id) for t in g.turns] for g in gold], pred, tables)
    table = turn_table(scored, TSSE if reference else ALL)
    print("\n".join([*format_levels(table), *format_turns(table)]))
    if table.missing:
        what = "dropped (conversation_scoring: tsse)" if reference else "scored 0"
        print(f"{table.missing} gold turn(s) without a predicted turn: {what}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog=f"{command()} sparc",
                                 description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("gold", type=Path, help="gold: 'SQL<TAB>db_id' lines with a blank line "
                                            "between interactions, or SParC/CoSQL JSON")
    ap.add_argument("--pred", type=Path, help="predictions: one SQL per line, a blank line "
                                              "between interactions")
    ap.add_argument("--tables", type=Path, help="Spider tables.json (writes queryeval.yaml)")
    ap.add_argument("--out", required=True, type=Path, help="output directory")
    ap.add_argument("--datasource", default="spider", help="datasource name (default spider)")
    ap.add_argument("--id-prefix", default="sparc", help="case id prefix (default sparc)")
    ap.add_argument("--predictions-file", metavar="NAME",
                    help="write predictions to <out>/NAME (JSONL with 'turn') instead of inline")
    ap.add_argument("--reference", action="store_true",
                    help="score as the reference does: conversation_scoring: tsse (missing "
                         "turns dropped) and 'value' in predictions read as 1")
    ap.add_argument("--print-table", action="store_true",
                    help="also print the reference's tables for these files")
    args = ap.parse_args(argv)
    name = f"{command()} sparc"
    try:
        gold = read_gold(args.gold)
        pred = read_pred(args.pred, gold) if args.pred else None
        if args.tables:
            check_tables(gold, args.tables)
        suite, records = build(gold, pred, datasource=args.datasource, prefix=args.id_prefix,
                               reference=args.reference, inline=args.predictions_file is None)
    except (OSError, ImportProblem) as exc:
        print(f"{name}: {exc}", file=sys.stderr)
        return 2
    if args.print_table and (pred is None or args.tables is None):
        print(f"{name}: --print-table needs --pred and --tables", file=sys.stderr)
        return 2
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    sources = [args.gold, *([args.pred] if args.pred else [])]
    header = provenance("sparc", sources, "SParC / CoSQL (Yale LILY): CC BY-SA 4.0.")
    (out / CASES_FILE).write_text(dump_yaml(suite, header), encoding="utf-8")
    written = [out / CASES_FILE]
    if args.predictions_file:
        path = out / args.predictions_file
        write_jsonl(path, records)
        written.append(path)
    if args.tables:
        config: dict[str, object] = {"datasources": {args.datasource: {
            "type": "spider-schema", "tables": suite_relative(args.tables, out)}}}
        if args.predictions_file:
            config["predictions"] = {"source": "file", "path": args.predictions_file}
        (out / CONFIG_FILE).write_text(dump_yaml(config, header), encoding="utf-8")
        written.append(out / CONFIG_FILE)
    turns = sum(len(g.turns) for g in gold)
    print(f"wrote {', '.join(str(p) for p in written)} ({len(gold)} interactions, {turns} turns)")
    if args.print_table and pred is not None and args.tables is not None:
        try:
            print_table(gold, pred, args.tables, reference=args.reference)
        except QueryEvalError as exc:  # a gold outside the Spider grammar
            print(f"{name}: {exc.reason()}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
