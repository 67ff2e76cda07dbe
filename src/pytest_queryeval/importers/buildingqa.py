"""BuildingQA ``<bldg>_combined.json`` to a queryeval SPARQL suite.

Writes ``<out>/test_buildingqa_<bldg>.yaml`` (one ``kind: sparql`` case per question: the
question text, the gold query with the ``PREFIX`` lines it needs, tags from the benchmark's
sources) and ``<out>/queryeval.yaml`` with a ``type: rdf`` datasource pointing at the building's
graph file (or, with ``--endpoint``, a ``type: sparql`` endpoint holding it), so
``pytest <out>`` scores a model's predictions with the result-table and BuildingQA alignment
metrics.

The benchmark's gold queries omit their ``PREFIX`` lines; the importer prepends the
declarations of the prefixes each query uses, taken from the graph file itself (parsed, so a
``PREFIX`` inside a literal of the graph is not mistaken for one), then from a short list of
well-known vocabularies. A prefix found in neither is an error naming the query.

The benchmark files carry no licence: the suite refers to them where they are (the graph by
path), it does not copy the graph.

Case ids are ``<query_id>-q<question_number>``; tags: ``buildingqa``, the building id, the query
id, the query's source (``mortar``, ``mortar_updated_only``...) and the question's source
(``human``, ``llm_1``...), all as marker-safe names. ``--oracle`` writes each gold as the
inline prediction too (checks the suite, data and engine end to end: every case must pass).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ._common import ImportProblem, command, dump_yaml, suite_relative, tag
from ._inputs import load_json
from .sparql_common import write_config

CONFIG_FILE = "queryeval.yaml"
#: Used only for prefixes the graph file does not declare.
WELL_KNOWN = {
    "rdf": "http://www.w3.org/1999/02/22-rdf-syntax-ns#",
    "rdfs": "http://www.w3.org/2000/01/rdf-schema#",
    "owl": "http://www.w3.org/2002/07/owl#",
    "xsd": "http://www.w3.org/2001/XMLSchema#",
    "brick": "https://brickschema.org/schema/Brick#",
    "s223": "http://data.ashrae.org/standard223#",
    "qudt": "http://qudt.org/schema/qudt/",
    "unit": "http://qudt.org/vocab/unit/",
    "quantitykind": "http://qudt.org/vocab/quantitykind/",
    "sh": "http://www.w3.org/ns/shacl#",
    "skos": "http://www.w3.org/2004/02/skos/core#",
}


def graph_prefixes(ttl: Path) -> dict[str, str]:
    """Prefixes declared in a graph file (Turtle/TriG/N3...), read with pyoxigraph's parser."""
    import pyoxigraph as ox

    from ..sources.rdf import resolve_format

    fmt = resolve_format(ttl, None)[0]
    parser = ox.parse(path=str(ttl), format=getattr(ox.RdfFormat, fmt), lenient=True)
    for _ in parser:
        pass
    return dict(parser.prefixes)


def with_prefixes(query: str, prefixes: dict[str, str], where: str) -> str:
    """``query`` with ``PREFIX`` lines for the prefixes it uses but does not declare."""
    from ..sources.sparqlguard import declared_prefixes, used_prefixes

    declared = declared_prefixes(query)
    lines = []
    for label in used_prefixes(query):
        if label in declared:
            continue
        iri = prefixes.get(label, WELL_KNOWN.get(label))
        if iri is None:
            raise ImportProblem(f"{where}: prefix {label!r} is used but neither the graph file "
                               "nor the well-known list declares it")
        lines.append(f"PREFIX {label}: <{iri}>")
    body = query.strip()
    return "\n".join([*lines, body]) if lines else body


def read_benchmark(path: Path) -> list[dict[str, Any]]:
    """The buildings of a ``<bldg>_combined.json`` (a list of ``{building_id, queries}``)."""
    data = load_json(path)  # ImportProblem: not JSON, too deep, not a regular file
    if isinstance(data, dict):
        data = [data]
    if not isinstance(data, list) or not all(isinstance(b, dict) and isinstance(
            b.get("queries"), list) for b in data):
        raise ImportProblem(f"{path}: expected a list of {{building_id, queries: [...]}}")
    return data


def build(buildings: list[dict[str, Any]], prefixes: dict[str, str], *, datasource: str,
          source_name: str, oracle: bool = False, human_only: bool = False) -> dict[str, Any]:
    """The case-file mapping for the benchmark's questions."""
    cases: list[dict[str, object]] = []
    seen: set[str] = set()
    for b in buildings:
        bid = str(b.get("building_id", datasource)).removesuffix(".ttl")
        for q in b["queries"]:
            qid = str(q.get("query_id", ""))
            sparql = q.get("sparql_query")
            if not qid or not isinstance(sparql, str):
                raise ImportProblem(f"{source_name}: a query lacks query_id or sparql_query")
            gold = with_prefixes(sparql, prefixes, f"{source_name}: {qid}")
            src = q.get("source") or {}
            base_tags = ["buildingqa", tag(bid), tag(qid)]
            if isinstance(src, dict) and src.get("name"):
                base_tags.append(tag(str(src["name"])))
            comments = "; ".join(str(x) for x in (
                q.get("description"), q.get("retrieved_information"),
                src.get("uri") if isinstance(src, dict) else None) if x)
            for question in q.get("questions", []):
                origin = str(question.get("source", "")) or "unknown"
                if human_only and origin != "human":
                    continue
                cid = f"{qid}-q{question.get('question_number', len(seen) + 1)}"
                if cid in seen:
                    raise ImportProblem(f"{source_name}: duplicate case id {cid}")
                seen.add(cid)
                case: dict[str, object] = {"id": cid, "question": str(question.get("text", ""))}
                case["gold"] = gold
                if oracle:
                    case["predicted"] = gold
                case["tags"] = [*base_tags, tag(origin)]
                if comments:
                    case["comments"] = comments
                cases.append(case)
    return {"kind": "sparql", "datasource": datasource, "cases": cases}


def _default_ttl(json_path: Path) -> Path:
    bldg = json_path.name.removesuffix(".json").removesuffix("_combined")
    return json_path.resolve().parent.parent / "eval_buildings" / f"{bldg}.ttl"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog=f"{command()} buildingqa",
        description="BuildingQA <bldg>_combined.json to a queryeval SPARQL suite")
    ap.add_argument("benchmark", type=Path, help="Benchmark_QA_pairs/<bldg>_combined.json")
    ap.add_argument("--out", required=True, type=Path, help="output directory")
    ap.add_argument("--graph", type=Path,
                    help="the building's graph file (default: ../eval_buildings/<bldg>.ttl)")
    ap.add_argument("--datasource", help="datasource name (default: the building id)")
    ap.add_argument("--engine", choices=("pyoxigraph", "rdflib"), default="pyoxigraph")
    ap.add_argument("--endpoint", metavar="URL",
                    help="use a SPARQL endpoint holding the building (type: sparql) instead of "
                         "the graph file; the file still supplies the prefixes")
    ap.add_argument("--timeout", type=float, help="per-query timeout of the datasource (s)")
    ap.add_argument("--human-only", action="store_true",
                    help="only the questions written by people (not LLM paraphrases)")
    ap.add_argument("--oracle", action="store_true",
                    help="also write each gold as the inline prediction (suite self-check)")
    args = ap.parse_args(argv)
    bench: Path = args.benchmark
    bldg = bench.name.removesuffix(".json").removesuffix("_combined")
    graph: Path = (args.graph or _default_ttl(bench)).resolve()
    name = args.datasource or tag(bldg)
    try:
        if not graph.is_file():
            raise ImportProblem(f"graph file not found: {graph} (give --graph)")
        buildings = read_benchmark(bench)
        suite = build(buildings, graph_prefixes(graph), datasource=name,
                      source_name=bench.name, oracle=args.oracle, human_only=args.human_only)
    except (OSError, ValueError, SyntaxError) as exc:
        print(f"{command()} buildingqa: {exc}", file=sys.stderr)
        return 2
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    cases_file = out / f"test_buildingqa_{tag(bldg)}.yaml"
    cases_file.write_text(dump_yaml(suite), encoding="utf-8")
    spec: dict[str, Any]
    if args.endpoint:
        spec = {"type": "sparql", "endpoint": args.endpoint}
    else:
        spec = {"type": "rdf", "path": suite_relative(graph, out)}
        if args.engine != "pyoxigraph":
            spec["engine"] = args.engine
    if args.timeout is not None:
        spec["timeout"] = args.timeout
    config_file = write_config(out, name, spec)  # added to an existing one (several buildings)
    print(f"wrote {cases_file} ({len(suite['cases'])} cases), {config_file}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
