"""Issue 24 item 12: SPARQL diffs in the user's language, and the near misses a SPARQL user
meets (a language tag, text versus number), on real pyoxigraph and rdflib results."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_queryeval.engine import Evaluator, run_case
from pytest_queryeval.model import Threshold
from pytest_queryeval.results import Term

from .test_sparql_kind import DictCache, case

EX = {"execution_accuracy": Threshold("execution_accuracy", min=1.0)}
P = "PREFIX ex: <http://example.org/> PREFIX xsd: <http://www.w3.org/2001/XMLSchema#>\n"
TTL = """@prefix ex: <http://example.org/> .
@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .
ex:f ex:name "Foundation"@en ; ex:year 2022 ; ex:budget "3"^^xsd:decimal ; ex:next ex:g .
ex:g ex:name "Grundlage"@de ; ex:year 2023 ; ex:budget "4.5"^^xsd:decimal .
"""


@pytest.fixture(params=["pyoxigraph", "rdflib"])
def spec(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, Any]:
    pytest.importorskip(request.param)
    path = tmp_path / "g.ttl"
    path.write_text(TTL)
    return {"type": "rdf", "path": str(path), "engine": request.param}


def _run(spec: dict[str, Any], gold: str, pred: str) -> Any:
    return run_case(case(spec, P + gold, P + pred, thresholds=EX), Evaluator(cache=DictCache()))


def test_a_diff_prints_terms_as_sparql(spec):
    out = _run(spec, "SELECT ?n ?b WHERE { ex:f ex:name ?n ; ex:budget ?b }",
               "SELECT ?n ?x WHERE { ex:f ex:next ?x . ?x ex:name ?n }")
    assert out.status == "failed"
    assert '  - ("Foundation"@en, "3"^^xsd:decimal)' in out.diff
    assert '  + ("Grundlage"@de, <http://example.org/g>)' in out.diff
    assert not any("Term(" in line for line in out.diff)


def test_unbound_and_escapes():
    from pytest_queryeval.results import show_row

    row = (Term("literal", 'say "hi"\n', "http://example.org/dt"), None, Term("bnode", "b0"))
    assert show_row(row) == '("say \\"hi\\"\\n"^^<http://example.org/dt>, UNDEF, _:b0)'
    assert show_row((1, "a")) == "(1, 'a')"  # SQL rows keep their repr


def test_near_miss_language_tag(spec):
    out = _run(spec, "SELECT ?n WHERE { ex:f ex:name ?n }",
               "SELECT (STR(?n) AS ?s) WHERE { ex:f ex:name ?n }")
    assert out.status == "failed" and out.metrics["execution_accuracy"] == 0.0
    assert out.details["near_miss"] == ["language_tag"]
    assert out.diff[-1] == "near miss: would pass with ignore language tags"


def test_near_miss_text_versus_number(spec):
    out = _run(spec, "SELECT ?y WHERE { ?s ex:year ?y }",
               "SELECT (STR(?y) AS ?t) WHERE { ?s ex:year ?y }")
    assert out.status == "failed" and out.metrics["execution_accuracy"] == 0.0
    assert out.details["near_miss"] == ["text_number"]
    assert out.diff[-1] == "near miss: would pass with text versus number"
    assert '  - ("2022"^^xsd:integer,)' in out.diff
    assert '  + ("2022",)' in out.diff


def test_a_different_label_is_no_near_miss(spec):
    out = _run(spec, "SELECT ?n WHERE { ex:f ex:name ?n }", "SELECT ?n WHERE { ex:g ex:name ?n }")
    assert out.status == "failed" and out.details["near_miss"] == []
