"""The read-only SPARQL guard: every update form is refused, reads with look-alike words pass."""

from __future__ import annotations

import pytest

from pytest_queryeval.errors import QueryRefused, QuerySyntaxError
from pytest_queryeval.sources.sparqlguard import check_query, classify

G = "<http://example.org/g>"

#: (label, request) — every SPARQL 1.1 Update operation, plus disguises.
UPDATES = [
    ("insert-data", 'INSERT DATA { <http://x/a> <http://x/p> "v" }'),
    ("delete-data", 'DELETE DATA { <http://x/a> <http://x/p> "v" }'),
    ("delete-where", "DELETE WHERE { ?s ?p ?o }"),
    ("delete-insert-where", "DELETE { ?s ?p ?o } INSERT { ?s ?p 1 } WHERE { ?s ?p ?o }"),
    ("with-delete", f"WITH {G} DELETE {{ ?s ?p ?o }} WHERE {{ ?s ?p ?o }}"),
    ("load", "LOAD <http://example.org/data.ttl>"),
    ("load-silent-into", f"LOAD SILENT <http://example.org/data.ttl> INTO GRAPH {G}"),
    ("clear-all", "CLEAR ALL"),
    ("clear-default", "CLEAR DEFAULT"),
    ("drop-graph", f"DROP GRAPH {G}"),
    ("drop-silent-all", "DROP SILENT ALL"),
    ("create", f"CREATE GRAPH {G}"),
    ("add", f"ADD DEFAULT TO {G}"),
    ("move", f"MOVE {G} TO DEFAULT"),
    ("copy", f"COPY DEFAULT TO {G}"),
    ("lower-case", "insert data { <http://x/a> <http://x/p> 1 }"),
    ("mixed-case", "dRoP aLl"),
    ("after-prefix", "PREFIX ex: <http://example.org/>\nINSERT DATA { ex:a ex:p ex:b }"),
    ("after-base-prefix", "BASE <http://example.org/>\nPREFIX : <#>\nprefix ex: <x#> CLEAR ALL"),
    ("after-comments", "# just a read, honest\n# SELECT * WHERE {}\nDELETE WHERE { ?s ?p ?o }"),
    ("comment-between", "PREFIX ex: <http://e/> # comment with SELECT\n  DROP ALL"),
    ("no-space-brace", "INSERT{<http://x/a> <http://x/p> 1}WHERE{}"),
    ("select-then-update", "SELECT * WHERE { ?s ?p ?o } ; DROP ALL"),
    ("two-updates", "CLEAR DEFAULT ; LOAD <http://example.org/x.ttl>"),
    ("string-then-update", 'INSERT DATA { <http://x/a> <http://x/p> """SELECT""" }'),
]


@pytest.mark.parametrize(("label", "query"), UPDATES, ids=[u[0] for u in UPDATES])
def test_updates_are_refused(label: str, query: str) -> None:
    with pytest.raises(QueryRefused, match="SPARQL Update is not allowed") as info:
        check_query(query)
    assert info.value.reason().startswith("refused: ")


@pytest.mark.parametrize("query", [
    "CONSTRUCT WHERE { ?s ?p ?o }",
    "PREFIX ex: <http://e/> construct { ?s ex:p ?o } where { ?s ?p ?o }",
    "DESCRIBE <http://example.org/a>",
])
def test_graph_forms_are_refused_with_their_reason(query: str) -> None:
    with pytest.raises(QueryRefused, match="returns a graph, not a result table"):
        check_query(query)


@pytest.mark.parametrize("query", ["", "   "])
def test_empty_requests_are_refused(query: str) -> None:
    with pytest.raises(QueryRefused, match="empty query"):
        check_query(query)


@pytest.mark.parametrize("query", ["# only a comment", "SELECT ?x WHERE { ?x ?p }"])
def test_non_queries_are_syntax_errors_never_run(query: str) -> None:
    with pytest.raises(QuerySyntaxError, match=r"^syntax error at (line 1, column \d+|the end)"):
        check_query(query)


@pytest.mark.parametrize(("query", "reason"), [
    ("hello world", "cannot parse: syntax error at line 1, column 1: expected SELECT or ASK "
                    "after the prologue, found 'hello'"),
    ("PREFIX ex: <http://e/>\n# the query\nSELEC ?x WHERE { ?x ?p ?o }",
     "cannot parse: syntax error at line 3, column 1: expected SELECT or ASK after the "
     "prologue, found 'SELEC'"),
    ("PREFIX ex: <http://e/>", "cannot parse: syntax error at the end: expected SELECT or ASK"),
])
def test_a_syntax_error_is_not_called_a_refusal(query: str, reason: str) -> None:
    """Issue 19: a text that is no SPARQL query form is a syntax error, not "refused"."""
    with pytest.raises(QuerySyntaxError) as info:
        check_query(query)
    assert info.value.reason() == reason or info.value.reason().startswith(reason)


#: Reads containing update words where they are harmless: strings, IRIs, comments, variables,
#: prefixed names, language tags.
READS = [
    'SELECT ?s WHERE { ?s ?p "DELETE WHERE { ?s ?p ?o }" }',
    "SELECT ?s WHERE { ?s ?p '''INSERT\nDATA''' }",
    "SELECT ?s WHERE { ?s <http://example.org/drop/clear#load> ?o }",
    "SELECT ?insert ?delete WHERE { ?insert ?delete $load }",
    "PREFIX copy: <http://e/> SELECT ?s WHERE { ?s copy:move copy:add }",
    "SELECT ?s WHERE { ?s ?p ?o } # DROP ALL",
    'ASK { ?s ?p "x"@add }',
    'SELECT ?s WHERE { ?s ?p ?o FILTER(?o < 5 && ?o > "INSERT") }',
    "select distinct ?s where { ?s a <http://x/C> } order by ?s limit 3",
    'SELECT ?s WHERE { ?s ?p "escaped \\" DROP ALL \\"" }',
]


@pytest.mark.parametrize("query", READS)
def test_reads_pass(query: str) -> None:
    assert check_query(query).form in ("SELECT", "ASK")


def test_order_by_only_counts_on_the_outer_query() -> None:
    inner = "SELECT ?x WHERE { { SELECT ?x WHERE { ?x ?p ?o } ORDER BY ?x LIMIT 3 } }"
    assert not classify(inner).has_order_by
    assert classify(inner + " ORDER BY DESC(?x)").has_order_by
    assert classify("select ?x { ?x ?p ?o } order\n  by ?x").has_order_by


def test_select_star_and_service_are_detected() -> None:
    assert classify("SELECT DISTINCT * { ?s ?p ?o }").select_star
    assert not classify("SELECT (COUNT(*) AS ?n) { ?s ?p ?o }").select_star
    q = "SELECT * { SERVICE <http://dbpedia.org/sparql> { ?s ?p ?o } }"
    assert classify(q).has_service
    check_query(q)  # allowed for an endpoint...
    with pytest.raises(QueryRefused, match="SERVICE"):
        check_query(q, allow_service=False)  # ...never from a local graph


# --------------------------------------------------------------------------- real grammar

#: Requests a hand-written scanner misread (issue 16): each is an update to a real parser.
DISGUISED_UPDATES = [
    ("PREFIX ex:# \\u0053ELECT '''\n<http://x/>\nDROP ALL\n# '''", "DROP"),
    ("\\u0049NSERT DATA { <http://x/a> <http://x/p> 1 }", "INSERT DATA"),
    ("SELECT * {} ; \\u0044ROP ALL", "DROP"),
    ("PREFIX ex: <http://x/>\n# '''\nCLEAR DEFAULT # '''", "CLEAR"),
]


@pytest.mark.parametrize(("query", "ops"), DISGUISED_UPDATES)
def test_disguised_updates_are_refused_naming_the_operation(query: str, ops: str) -> None:
    with pytest.raises(QueryRefused) as info:
        check_query(query)
    assert info.value.reason() == f"refused: SPARQL Update is not allowed (read-only source): {ops}"


SVC = "http://127.0.0.1:9/svc"
#: SERVICE where a scanner did not see it, each with the target the parser resolves.
HIDDEN_SERVICES = [
    (f"SELECT * WHERE {{ ?s ?p true.SERVICE <{SVC}> {{ ?a ?b ?c }} }}", SVC),
    (f"PREFIX ex: <http://x/> SELECT * WHERE {{ ?s ex:a\\' ?o . SERVICE <{SVC}> {{ ?a ?b ?c }} "
     "} #'", SVC),
    ("PREFIX s: <http://127.0.0.1:9/> SELECT * { SERVICE s:svc { ?a ?b ?c } }", SVC),
    ("BASE <http://127.0.0.1:9/> SELECT * { SERVICE <svc> { ?a ?b ?c } }", SVC),
    (f"SELECT * {{ ?s ?p ?o FILTER EXISTS {{ SERVICE SILENT <{SVC}> {{ ?a ?b ?c }} }} }}", SVC),
    (f"SELECT * {{ {{ SELECT ?a {{ SERVICE <{SVC}> {{ ?a ?b ?c }} }} }} }}", SVC),
    (f"SELECT * {{ \\u0053ERVICE <{SVC}> {{ ?a ?b ?c }} }}", SVC),
    ("SELECT * { ?s ?p ?o OPTIONAL { SERVICE ?where { ?a ?b ?c } } }", "?where"),
]


@pytest.mark.parametrize(("query", "target"), HIDDEN_SERVICES)
def test_service_is_found_by_the_parser(query: str, target: str) -> None:
    c = check_query(query)  # an endpoint may federate: its own policy
    assert c.services == (target,)
    shown = target if target.startswith("?") else f"<{target}>"
    with pytest.raises(QueryRefused) as info:
        check_query(query, allow_service=False)
    assert info.value.reason() == (
        f"refused: SERVICE {shown} (federated query) is not allowed against a local graph: an "
        "in-process engine never calls out (datasource option allow_service: true allows it)")


def test_from_clauses_are_resolved_and_checked_against_the_files_graphs() -> None:
    q = ("BASE <http://g.example/> PREFIX g: <http://g.example/> SELECT * FROM g:one "
         "FROM NAMED <two> FROM <file:///etc/passwd> WHERE { ?s ?p ?o }")
    c = classify(q)
    assert c.from_graphs == ("http://g.example/one", "file:///etc/passwd")
    assert c.from_named == ("http://g.example/two",)
    with pytest.raises(QueryRefused, match=r"^FROM <file:///etc/passwd> names no graph of "
                                           r"the local file"):
        check_query(q, allow_service=False, graphs={"http://g.example/one",
                                                    "http://g.example/two"})
    with pytest.raises(QueryRefused, match=r"^FROM NAMED <http://g.example/two> names no graph"):
        check_query(q, allow_service=False, graphs={"http://g.example/one", "file:///etc/passwd"})
    check_query(q, allow_service=True, graphs=set())  # allowed: runs without loading anything
    check_query(q)  # an endpoint: its own policy


def test_the_parse_is_bounded_by_a_deadline_and_the_worker_recovers() -> None:
    slow = "SELECT * WHERE { FILTER(" + "+".join(["1"] * 20_000) + ") }"  # ~15 s to parse
    with pytest.raises(QueryRefused, match=r"^not parsed within 1 s by the guard's SPARQL "
                                           r"parser \(the query was not run\)$"):
        check_query(slow, timeout=1)
    assert check_query("ASK { ?s ?p ?o }", timeout=30).form == "ASK"  # a fresh worker


def test_size_cap_and_deep_nesting() -> None:
    from pytest_queryeval.sources.sparqlguard import MAX_QUERY_CHARS

    big = "SELECT * WHERE { ?s ?p ?o } #" + "x" * MAX_QUERY_CHARS
    with pytest.raises(QueryRefused, match=r"characters long, over the guard's limit of "
                                           r"100,000$"):
        check_query(big)
    deep = "SELECT * WHERE { FILTER(" + "(" * 5000 + "1" + ")" * 5000 + ") }"
    with pytest.raises(QuerySyntaxError, match="nested too deeply for the guard's parser"):
        check_query(deep)
