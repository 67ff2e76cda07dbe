"""QALD-9 / QALD-9-plus / QALD-10 JSON to a queryeval SPARQL suite.

Writes ``<out>/test_qald_<dataset>.yaml``: one ``kind: sparql`` case per question, with the
question in the chosen language, the gold query, and the dataset's own answers as
``gold_result``. GERBIL QA scores a system against those recorded answers, not against a fresh
execution of the gold query (the knowledge graph has moved on since), so the suite does the same;
the predicted queries run on the datasource written to ``<out>/queryeval.yaml`` (``--endpoint``
or ``--graph``). Every case carries the GERBIL and TEXT2SPARQL metrics (``qald_f1`` ...), and the
session summary has ``macro_f1_qald``.

Case ids are the question ids; tags ``qald``, the dataset id, the answer type (QALD-9's
``answertype``) and ``aggregation`` / ``onlydbo`` / ``hybrid`` where true. The case file starts
with the provenance comment lines: the source file, its SHA-256 and the dataset id.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ._common import ImportProblem, command, tag
from ._inputs import load_json
from .sparql_common import datasource_spec, write_suite


def read_dataset(path: Path) -> dict[str, Any]:
    """The QALD JSON document (``{dataset: {id}, questions: [...]}``), checked for its shape."""
    data = load_json(path)
    if not isinstance(data, dict) or not isinstance(data.get("questions"), list):
        raise ImportProblem(f"{path.name}: expected a QALD JSON document "
                            "{dataset: {id: ...}, questions: [...]}")
    return data


def question_text(q: dict[str, Any], lang: str) -> str | None:
    """The question string in ``lang`` (QALD: ``question: [{language, string}, ...]``)."""
    for entry in q.get("question") or []:
        if isinstance(entry, dict) and entry.get("language") == lang:
            text = entry.get("string")
            return str(text) if text is not None else None
    return None


def build(data: dict[str, Any], *, lang: str, source_name: str, with_answers: bool = True,
          oracle: bool = False) -> tuple[dict[str, Any], int]:
    """The case-file mapping and the number of questions skipped (none in ``lang``)."""
    dataset = str((data.get("dataset") or {}).get("id") or "qald")
    cases: list[dict[str, object]] = []
    seen: set[str] = set()
    skipped = 0
    for index, q in enumerate(data["questions"]):
        where = f"{source_name}: questions[{index}]"
        if not isinstance(q, dict):
            raise ImportProblem(f"{where}: a question must be a mapping")
        qid = str(q.get("id", index))
        query = (q.get("query") or {}).get("sparql") if isinstance(q.get("query"), dict) else None
        if not isinstance(query, str) or not query.strip():
            raise ImportProblem(f"{where} (id {qid}): no query.sparql")
        if qid in seen:
            raise ImportProblem(f"{where}: duplicate question id {qid}")
        seen.add(qid)
        text = question_text(q, lang)
        if text is None:
            skipped += 1
            continue
        case: dict[str, object] = {"id": qid, "question": text, "gold": query.strip()}
        answers = q.get("answers")
        if with_answers:
            if not isinstance(answers, list) or len(answers) != 1 or not isinstance(
                    answers[0], dict):
                raise ImportProblem(f"{where} (id {qid}): expected one SPARQL JSON result "
                                    "under answers (or give --execute-gold)")
            case["gold_result"] = answers[0]
        if oracle:
            case["predicted"] = query.strip()
        tags = ["qald", tag(dataset)]
        if q.get("answertype"):
            tags.append(tag(f"answertype_{q['answertype']}"))
        tags.extend(flag for flag in ("aggregation", "onlydbo", "hybrid") if _true(q.get(flag)))
        case["tags"] = tags
        cases.append(case)
    return {"kind": "sparql", "datasource": "qald", "cases": cases}, skipped


def _true(value: object) -> bool:
    return value is True or (isinstance(value, str) and value.strip().lower() == "true")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog=f"{command()} qald",
                                 description="QALD-9/10 JSON to a queryeval SPARQL suite")
    ap.add_argument("dataset", type=Path, help="QALD JSON file (e.g. qald_10.json)")
    ap.add_argument("--out", required=True, type=Path, help="output directory")
    ap.add_argument("--lang", default="en", help="question language (default: en)")
    ap.add_argument("--endpoint", metavar="URL", help="SPARQL endpoint the predictions run on")
    ap.add_argument("--graph", type=Path, help="or an RDF file they run on (type: rdf)")
    ap.add_argument("--timeout", type=float, help="per-query timeout of the datasource (s)")
    ap.add_argument("--execute-gold", action="store_true",
                    help="execute the gold queries instead of using the dataset's answers")
    ap.add_argument("--oracle", action="store_true",
                    help="also write each gold as the inline prediction (suite self-check)")
    args = ap.parse_args(argv)
    src: Path = args.dataset
    try:
        spec = datasource_spec(args.endpoint, args.graph, args.out, args.timeout)
        data = read_dataset(src)
        suite, skipped = build(data, lang=args.lang, source_name=src.name,
                               with_answers=not args.execute_gold, oracle=args.oracle)
    except (OSError, ValueError) as exc:
        print(f"{command()} qald: {exc}", file=sys.stderr)
        return 2
    dataset = str((data.get("dataset") or {}).get("id") or "qald")
    note = (f"dataset {dataset}, language {args.lang}; gold answers: "
            f"{'executed gold queries' if args.execute_gold else 'the dataset answers'}")
    skip = f", {skipped} questions without a {args.lang!r} text skipped" if skipped else ""
    write_suite(args.out, "qald", dataset, suite, src, note, spec, skip)
    return 0


if __name__ == "__main__":
    sys.exit(main())
