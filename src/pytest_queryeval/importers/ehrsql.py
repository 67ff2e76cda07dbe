"""EHRSQL 2024 / TrustSQL answer files to a queryeval SQL suite scored as ``scoring_v2.py`` does.

The shared task's scoring of retrieved answers (glee4810/ehrsql-2024
``scoring_program/scoring_v2.py`` @46597893) reads ``ref/answer.json`` (question id -> the gold
answer as text: ``"[['iv'], ['po']]"``, or ``"null"`` for a question the data cannot answer) and
``res/prediction.json`` (the same ids -> the system's retrieved answer, ``"null"`` when it
abstains). Each question becomes one ``kind: sql`` case, with no datasource (the answers are
recorded):

* a gold the reference reads as ``'null'`` -> ``expect: abstain``; otherwise ``gold_result``;
* a prediction the reference reads as ``'null'`` -> ``predicted: "null"``, an abstention under
  the suite's ``abstention: ehrsql``; rows -> ``predicted_result``; any other text (``""``,
  ``"error_pred"``) -> ``predicted:`` as written, an answer that is not rows (a wrong one).

Rows are what the reference's ``process_answer`` iterates: each item of the answer is a row and
each item of a row a cell, so a flat list of strings (``"['ab', 'c']"``) is the rows
``[a, b]`` and ``[c]`` (a string is iterated by character), as the reference reads it; a flat
list of numbers (``"[1, 2]"``) is refused, where the reference raises ``TypeError``. A cell is
kept as the literal gives it (numbers, strings, ``None``, booleans); any other cell (a tuple, a
set) is written as the reference's text of it (``process_item``), which it reads back alike.
``queryeval.yaml`` says ``abstention: ehrsql`` and ``thresholds: {ehrsql_ex: 1}``, so the
reliability score of the run (``aggregates.abstention``) is the reference's, question by question.
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path
from typing import Any

from ..metrics.reliability import process_item, skips
from ._common import ImportProblem, command, dump_yaml, provenance
from ._inputs import load_json

#: What ``queryeval.yaml`` of an imported suite says.
CONFIG: dict[str, Any] = {"abstention": "ehrsql", "thresholds": {"ehrsql_ex": 1.0}}
_PLAIN = (int, float, str, bool, type(None))


def literal(answer: object) -> object:
    """``process_answer``'s first step: a text is replaced by its Python literal, if it is one."""
    if isinstance(answer, str):
        try:
            return ast.literal_eval(answer)
        except Exception:  # the reference's bare except: the text stays
            return answer
    return answer


def rows_of(value: object, where: str) -> list[list[object]]:
    """The rows the reference iterates in ``value`` (each a list of cells)."""
    try:
        return [[c if type(c) in _PLAIN else process_item(c) for c in _items(row)]
                for row in _items(value)]
    except TypeError as exc:
        raise ImportProblem(f"{where}: the EHRSQL reference's process_answer raises TypeError "
                            f"here ({exc}): an answer must be rows (a list of lists)") from None


def _items(value: object) -> list[object]:
    if isinstance(value, str | list | tuple | set | frozenset | dict | range | bytes):
        return list(value)
    raise TypeError(f"'{type(value).__name__}' object is not iterable")


def build(answers: dict[str, object], predictions: dict[str, object] | None,
          questions: dict[str, str], source: str) -> dict[str, Any]:
    """The case-file mapping, one case per id of ``answer.json`` in its order."""
    if predictions is not None and set(predictions) != set(answers):
        only = sorted(set(answers) ^ set(predictions))
        raise ImportProblem(f"the ids of answer.json and prediction.json differ ({len(only)}: "
                            f"{', '.join(only[:5])}); the reference asserts they match")
    cases: list[dict[str, object]] = []
    for key, gold in answers.items():
        case: dict[str, object] = {"id": str(key), "question": questions.get(key, str(key))}
        if skips(gold):
            case["expect"] = "abstain"
        else:
            value = literal(gold)
            if isinstance(value, str):
                raise ImportProblem(f"{source}: {key}: the gold answer {gold!r} is neither rows "
                                    "nor 'null'")
            case["gold_result"] = {"rows": rows_of(value, f"{source}: {key}")}
        if predictions is not None:
            pred = predictions[key]
            if pred is None:
                raise ImportProblem(f"prediction.json: {key}: null (the reference raises "
                                    "TypeError); abstain with the text \"null\"")
            value = literal(pred)
            if skips(pred) or isinstance(value, str):
                case["predicted"] = pred if isinstance(pred, str) else str(pred)
            else:
                case["predicted_result"] = {"rows": rows_of(value, f"prediction.json: {key}")}
        cases.append(case)
    return {"kind": "sql", "cases": cases}


def _questions(path: Path | None) -> dict[str, str]:
    """``data.json``'s ``{"data": [{"id", "question"}]}`` as id -> question."""
    if path is None:
        return {}
    data = load_json(path)
    items = data.get("data") if isinstance(data, dict) else None
    if not isinstance(items, list):
        raise ImportProblem(f"{path.name}: expected {{\"data\": [{{\"id\", \"question\"}}]}}")
    return {str(q["id"]): str(q["question"]) for q in items
            if isinstance(q, dict) and "id" in q and "question" in q}


def _mapping(path: Path) -> dict[str, object]:
    data = load_json(path)
    if not isinstance(data, dict):
        raise ImportProblem(f"{path.name}: expected an object of question id -> answer")
    return {str(k): v for k, v in data.items()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog=f"{command()} ehrsql",
                                 description="EHRSQL 2024 answer.json (+ prediction.json) → "
                                             "SQL suite scored as scoring_v2.py")
    ap.add_argument("answers", type=Path, help="answer.json (ref/answer.json of the scoring)")
    ap.add_argument("--predictions", type=Path,
                    help="prediction.json (res/prediction.json): retrieved answers")
    ap.add_argument("--questions", type=Path, help="data.json: the question texts")
    ap.add_argument("--out", required=True, type=Path, help="output directory")
    args = ap.parse_args(argv)
    try:
        answers = _mapping(args.answers)
        predictions = _mapping(args.predictions) if args.predictions else None
        suite = build(answers, predictions, _questions(args.questions), args.answers.name)
    except (OSError, ValueError) as exc:
        print(f"{command()} ehrsql: {exc}", file=sys.stderr)
        return 2
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    sources = [p for p in (args.answers, args.predictions, args.questions) if p is not None]
    cases_file = out / "test_ehrsql.yaml"
    cases_file.write_text(dump_yaml(suite, provenance("ehrsql", sources)), encoding="utf-8")
    config_file = out / "queryeval.yaml"
    config_file.write_text(dump_yaml(CONFIG), encoding="utf-8")
    print(f"wrote {cases_file} ({len(suite['cases'])} cases), {config_file}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
