"""The guard never refuses a query the engine runs (issue 30 item 2): where rdflib's grammar
and Oxigraph's parser disagree, the engine's parse decides; what the guard refuses stays
refused."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_queryeval.errors import QueryRefused, QuerySyntaxError
from pytest_queryeval.sources import open_source
from pytest_queryeval.sources.sparqlguard import check_query, classify
from tests.support import strings_in

from .conftest import BRICK

ROOT = Path(__file__).resolve().parents[2]

#: Queries Oxigraph (and GraphDB) run and rdflib's grammar refuses, with the form and
#: ORDER BY the guard must read from them.
ENGINE_ONLY = [
    (BRICK + "SELECT ?vav WHERE { ?ahu a brick:AHU ; brick:feeds + ?vav } ORDER BY ?vav",
     "SELECT", True),
    (BRICK + "SELECT ?x WHERE { ?a (brick:feeds|brick:hasPart) * ?x }", "SELECT", False),
    ("SELECT * WHERE { ?s ?p ?o } ORDER BY ?s OFFSET 5LIMIT 5", "SELECT", True),
    (BRICK + "ASK { ?a brick:feeds + ?b }", "ASK", False),
    (BRICK + "SELECT ?v { { SELECT ?v { ?a brick:feeds + ?v } ORDER BY ?v LIMIT 2 } }",
     "SELECT", False),
]


@pytest.mark.parametrize(("query", "form", "ordered"), ENGINE_ONLY)
def test_queries_the_engine_reads_pass_with_their_features(query: str, form: str,
                                                           ordered: bool) -> None:
    from rdflib.plugins.sparql.parser import parseQuery

    with pytest.raises(Exception):  # noqa: B017 (the premise: rdflib refuses it)
        parseQuery(query)
    c = check_query(query, allow_service=False)
    assert (c.form, c.has_order_by) == (form, ordered)


def test_a_space_before_a_path_plus_runs_on_the_graph(soda: Path) -> None:
    """The BuildingQA row of the issue: scored 1/1/1/1 before the guard parsed with rdflib."""
    src = open_source("soda", {"type": "rdf", "path": str(soda)})
    spaced = src.execute(ENGINE_ONLY[0][0], timeout=30)
    tight = src.execute(ENGINE_ONLY[0][0].replace("feeds + ?vav", "feeds+ ?vav"), timeout=30)
    assert len(spaced) == len(tight) > 200
    assert spaced.rows == tight.rows


def test_what_the_guard_refuses_stays_refused() -> None:
    spaced_path = "?a <http://x/p> + ?b"
    with pytest.raises(QueryRefused, match="SERVICE"):  # rdflib reads SERVICE here
        check_query("SELECT * { SERVICE <http://127.0.0.1:9/s> { ?a ?b ?c } }",
                    allow_service=False)
    # rdflib cannot parse it and it names SERVICE: the rdflib verdict (a syntax error) stands,
    # so the engine never evaluates it (Oxigraph would call out on an ASK)
    with pytest.raises(QuerySyntaxError):
        check_query(f"ASK {{ SERVICE <http://127.0.0.1:9/s> {{ {spaced_path} }} }}")
    with pytest.raises(QueryRefused):  # Oxigraph's query parser never reads an update
        check_query(f"DELETE WHERE {{ {spaced_path} }}")
    with pytest.raises(QueryRefused, match="returns a graph"):
        check_query(f"CONSTRUCT {{ ?a <http://x/p> ?b }} WHERE {{ {spaced_path} }}")
    from_query = ("PREFIX g: <http://g.example/> SELECT * FROM g:one FROM NAMED "
                  f"<file:///etc/passwd> WHERE {{ {spaced_path} }}")
    c = classify(from_query)
    assert (c.form, c.from_graphs, c.from_named) == (
        "SELECT", ("http://g.example/one",), ("file:///etc/passwd",))
    with pytest.raises(QueryRefused, match="FROM NAMED <file:///etc/passwd> names no graph"):
        check_query(from_query, allow_service=False, graphs={"http://g.example/one"})
    with pytest.raises(QuerySyntaxError):  # neither parser reads it
        check_query("SELECT ?x WHERE { ?x ?p }")


def _queries(node: Any) -> Iterator[str]:
    return (s for s in strings_in(node)
            if "{" in s and any(w in s.upper() for w in ("SELECT", "ASK")))


def _corpus(extra: Path | None) -> list[str]:
    """Every SPARQL query of the published corpora under tests/data (text2sparql, QALD,
    GERBIL, the BuildingQA-format file), plus the real BuildingQA files when present."""
    import yaml

    found: list[str] = []
    for path in sorted((ROOT / "tests" / "data").rglob("*")):
        if path.suffix == ".json":
            found += _queries(json.loads(path.read_text(encoding="utf-8")))
        elif path.suffix in (".yml", ".yaml"):
            found += _queries(yaml.safe_load(path.read_text(encoding="utf-8")))
    if extra is not None:
        for path in sorted(extra.glob("brick/buildingqa/Benchmark_QA_pairs/*.json")):
            found += _queries(json.loads(path.read_text(encoding="utf-8")))
    return found


def test_every_published_query_the_engine_reads_passes_the_guard(request: pytest.FixtureRequest
                                                                 ) -> None:
    import pyoxigraph

    try:
        extra: Path | None = Path(request.getfixturevalue("extra_data"))
    except pytest.skip.Exception:
        extra = None
    queries = _corpus(extra)
    assert len(queries) >= 10
    store = pyoxigraph.Store()
    engine_reads = 0
    for query in queries:
        try:
            store.query(query)
        except SyntaxError:
            continue  # e.g. BuildingQA's queries without their PREFIX lines
        engine_reads += 1
        assert check_query(query).form in ("SELECT", "ASK"), query
    assert engine_reads >= 10
