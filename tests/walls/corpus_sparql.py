"""Hostile SPARQL, by category (:mod:`.corpus` says what each category expects)."""

from __future__ import annotations

from .corpus import DEEP

SPARQL: dict[str, list[str]] = {
    "writes": [
        "INSERT DATA { <http://example.org/a> <http://example.org/p> 1 }",
        "DELETE WHERE { ?s ?p ?o }",
        "DROP ALL",
        "CLEAR DEFAULT",
        "CREATE GRAPH <http://example.org/g>",
        "SELECT * {} ; INSERT DATA { <http://example.org/a> <http://example.org/p> 1 }",
        "\\u0049NSERT DATA { <http://example.org/a> <http://example.org/p> 1 }",
    ],
    "config": [],
    "engine_writes": [
        "INSERT DATA { <http://example.org/a> <http://example.org/p> 1 }",
        "DELETE WHERE { ?s ?p ?o }",
        "DROP ALL",
    ],
    "files": [
        "SELECT * FROM <file://{file}> WHERE { ?s ?p ?o }",
        "SELECT * FROM NAMED <file://{file}> WHERE { GRAPH ?g { ?s ?p ?o } }",
        "SELECT * WHERE { SERVICE <file://{file}> { ?s ?p ?o } }",
        "LOAD <file://{file}>",
        "SELECT * WHERE { GRAPH <file://{file}> { ?s ?p ?o } }",
    ],
    "deep": [
        "SELECT * WHERE { FILTER(" + "(" * DEEP + "1" + ")" * DEEP + ") }",
        "SELECT * WHERE " + "{" * DEEP + "}" * DEEP,
        "ASK { FILTER(" + "1+" * DEEP + "1) }",
    ],
    "huge_range": [
        "SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i . ?j ?k ?l }",
    ],
    "huge_value": [
        "SELECT (STRLEN(GROUP_CONCAT(CONCAT(STR(?a), STR(?b), STR(?c)))) AS ?n) "
        "WHERE { ?a ?p ?o . ?b ?q ?r . ?c ?s ?t }",
    ],
    "crash": [],
}
