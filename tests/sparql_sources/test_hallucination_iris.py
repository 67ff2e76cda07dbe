"""IRI hallucination (issue 30 item 7): the IRIs a SPARQL prediction names that the graph
does not hold, checked on the real Soda Hall Brick graph."""

from __future__ import annotations

from pathlib import Path

from pytest_queryeval.metrics.hallucination import ask_known, iri_hallucination, sparql_iris
from pytest_queryeval.sources import open_source

BRICK = "PREFIX brick: <https://brickschema.org/schema/Brick#>\n"


def test_sparql_iris_are_checked_against_the_graph(soda: Path) -> None:
    src = open_source("soda", {"type": "rdf", "path": str(soda)})
    query = BRICK + ("SELECT ?ahu ?v FROM <http://g.example/> WHERE { ?ahu a brick:AHU ; "
                     "brick:feedz ?v . ?v ^brick:feeds ?x ; ex:zone ?z ; "
                     "<https://brickschema.org/schema/Brick#hasPoint> \"1\"^^brick:Unit }")
    iris = sparql_iris(query)
    assert iris == ["https://brickschema.org/schema/Brick#AHU",
                    "https://brickschema.org/schema/Brick#feedz",
                    "https://brickschema.org/schema/Brick#feeds", "ex:zone",
                    "https://brickschema.org/schema/Brick#hasPoint"]

    def known(iri: str) -> bool:
        return src.execute(ask_known(iri)).rows == [(True,)]

    h = iri_hallucination(iris, known)
    assert h.unknown == ("ex:zone", "https://brickschema.org/schema/Brick#feedz")
    assert h.rate == 2 / 5
    assert sparql_iris("not a query") is None
