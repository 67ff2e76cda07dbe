"""TEXT2SPARQL'25/'26 questions YAML to a queryeval SPARQL suite.

The questions file (AKSW/text2sparql-client ``models/questions_file.py``) is
``{dataset: {id, prefix?}, questions: [{id?, question: {lang: text}, query: {sparql},
features?: [...]}]}``. As the reference's ``query`` command does, each question becomes one case
per language (``--languages en,de``, default ``en``), named ``<id>-<lang>`` (the reference's
qname without its dataset prefix), with the gold query executed on the datasource
(``--endpoint`` or ``--graph``). ``features`` are copied, so RESULT_ORDER_MATTERS questions get
``ndcg``; the session summary has ``set_f1_ndcg``. A question without a text in a language has
no case in it (the reference would still ask the system, with no question).

Tags: ``text2sparql``, the dataset prefix, the language and each feature (lower case). The case
file starts with comment lines naming the source file, its SHA-256 and the dataset id.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ._common import ImportProblem, command, tag
from ._inputs import load_yaml
from .sparql_common import datasource_spec, write_suite


def read_questions(path: Path) -> dict[str, Any]:
    """The questions file, checked as the reference's pydantic model checks it."""
    data = load_yaml(path)
    if not isinstance(data, dict) or not isinstance(data.get("dataset"), dict) or not isinstance(
            data.get("questions"), list):
        raise ImportProblem(f"{path.name}: expected {{dataset: {{id, prefix}}, questions: [...]}}")
    if not data["dataset"].get("id"):
        raise ImportProblem(f"{path.name}: dataset.id is missing")
    ids = [q.get("id") if isinstance(q, dict) else None for q in data["questions"]]
    if any(i is not None for i in ids):
        if None in ids:
            raise ImportProblem(f"{path.name}: only some questions have an id")
        if len(set(map(str, ids))) != len(ids):
            raise ImportProblem(f"{path.name}: question ids must be unique")
    return data


def build(data: dict[str, Any], *, languages: list[str], source_name: str,
          oracle: bool = False) -> tuple[dict[str, Any], int]:
    """The case-file mapping and how many (question, language) pairs had no text."""
    prefix = str(data["dataset"].get("prefix") or "")
    cases: list[dict[str, object]] = []
    missing = 0
    for index, q in enumerate(data["questions"]):
        where = f"{source_name}: questions[{index}]"
        if not isinstance(q, dict) or not isinstance(q.get("question"), dict):
            raise ImportProblem(f"{where}: a question needs question: {{lang: text}}")
        qid = str(q["id"]) if q.get("id") is not None else str(index + 1)
        query = q.get("query")
        sparql = query.get("sparql") if isinstance(query, dict) else None
        if not isinstance(sparql, str) or not sparql.strip():
            raise ImportProblem(f"{where} (id {qid}): no query.sparql (a gold query)")
        features = q.get("features") or []
        if not isinstance(features, list) or not all(isinstance(f, str) for f in features):
            raise ImportProblem(f"{where} (id {qid}): features must be a list of names")
        for lang in languages:
            text = q["question"].get(lang)
            if text is None:
                missing += 1
                continue
            case: dict[str, object] = {"id": f"{qid}-{lang}", "question": str(text),
                                    "gold": sparql.strip()}
            if features:
                case["features"] = list(features)
            if oracle:
                case["predicted"] = sparql.strip()
            tags = ["text2sparql", *([tag(prefix)] if prefix else []), tag(lang)]
            case["tags"] = [*tags, *(tag(f) for f in features)]
            cases.append(case)
    return {"kind": "sparql", "datasource": "text2sparql", "cases": cases}, missing


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog=f"{command()} text2sparql",
                                 description="TEXT2SPARQL questions YAML to a SPARQL suite")
    ap.add_argument("questions", type=Path, help="the questions YAML")
    ap.add_argument("--out", required=True, type=Path, help="output directory")
    ap.add_argument("--languages", default="en",
                    help="comma-separated languages, one case per question and language "
                         "(default: en)")
    ap.add_argument("--endpoint", metavar="URL", help="SPARQL endpoint holding the dataset")
    ap.add_argument("--graph", type=Path, help="or an RDF file of it (type: rdf)")
    ap.add_argument("--timeout", type=float, help="per-query timeout of the datasource (s)")
    ap.add_argument("--oracle", action="store_true",
                    help="also write each gold as the inline prediction (suite self-check)")
    args = ap.parse_args(argv)
    src: Path = args.questions
    languages = [x.strip() for x in str(args.languages).split(",") if x.strip()]
    try:
        if not languages:
            raise ImportProblem("--languages: give at least one language")
        spec = datasource_spec(args.endpoint, args.graph, args.out, args.timeout)
        data = read_questions(src)
        suite, missing = build(data, languages=languages, source_name=src.name,
                               oracle=args.oracle)
    except (OSError, ValueError) as exc:
        print(f"{command()} text2sparql: {exc}", file=sys.stderr)
        return 2
    dataset = data["dataset"]
    name = str(dataset.get("prefix") or tag(str(dataset["id"]).rstrip("/").rsplit("/", 1)[-1]))
    note = f"dataset {dataset['id']}, languages {', '.join(languages)}"
    skip = f", {missing} question/language pairs without a text skipped" if missing else ""
    write_suite(args.out, "text2sparql", name, suite, src, note, spec, skip)
    return 0


if __name__ == "__main__":
    sys.exit(main())
