"""``type: sparql`` against hostile predictions and hostile endpoints.

The endpoint here is the query+update stand-in of ``tests/fixtures/sparql_standin.py`` (a real
pyoxigraph store behind one URL that runs ``update=`` requests, as a Fuseki dataset URL does):
whatever the text says, only query operations reach it and its data stays unchanged. A
trickling server shows the timeout is a deadline on the whole answer.
"""

from __future__ import annotations

import time
import urllib.parse
import urllib.request

import pytest

from pytest_queryeval.errors import QueryEvalError, QueryRefused, QueryTimeout
from pytest_queryeval.sources.sparql import SparqlSource, _query_request
from tests.fixtures.sparql_standin import QueryUpdateEndpoint, TrickleServer

from .test_guard import UPDATES

#: Texts that a scanner can misread as a read, each with what a real parser sees.
DISGUISED = [
    # the prologue's comment hides the IRI; the escaped SELECT sits in that comment
    ("escaped-select-in-comment", "PREFIX ex:# \\u0053ELECT '''\n<http://x/>\nDROP ALL\n# '''"),
    ("escaped-insert", "\\u0049NSERT DATA { <http://x/a> <http://x/p> 1 }"),
    ("escaped-drop-after-select", "SELECT * {} ; \\u0044ROP ALL"),
    ("long-string-then-clear", "PREFIX ex: <http://x/>\n# '''\nCLEAR DEFAULT # '''"),
    ("escaped-quote-in-pname", "PREFIX ex: <http://x/>\nDELETE WHERE { ?s ex:a\\' ?o } #'"),
]


def _source(url: str, **spec: object) -> SparqlSource:
    return SparqlSource("standin", {"endpoint": url, "retries": 0, **spec})


def test_the_standin_really_runs_updates(query_update_endpoint: QueryUpdateEndpoint) -> None:
    """Sensitivity: an ``update=`` request to the one URL does change the data."""
    ep = query_update_endpoint
    assert ep.triple_count() == 3
    body = urllib.parse.urlencode({"update": "DROP ALL"}).encode()
    urllib.request.urlopen(urllib.request.Request(ep.url, data=body), timeout=10).close()
    assert ep.triple_count() == 0


@pytest.mark.parametrize(("label", "query"), DISGUISED + UPDATES,
                         ids=[u[0] for u in DISGUISED + UPDATES])
@pytest.mark.parametrize("method", ["POST", "GET"])
def test_updates_never_reach_a_query_and_update_url(
        query_update_endpoint: QueryUpdateEndpoint, label: str, query: str,
        method: str) -> None:
    ep = query_update_endpoint
    before = (ep.triple_count(), ep.checksum())
    with pytest.raises(QueryRefused, match="SPARQL Update is not allowed"):
        _source(ep.url, method=method).execute(query)
    assert (ep.triple_count(), ep.checksum()) == before
    assert ep.requests == []  # refused before any request


@pytest.mark.parametrize(("label", "query"), [*DISGUISED[:3], ("plain-drop", "DROP ALL")])
def test_the_protocol_alone_keeps_the_data(query_update_endpoint: QueryUpdateEndpoint,
                                           label: str, query: str) -> None:
    """Second layer: even a text the guard never saw goes as ``query=`` and fails there."""
    ep = query_update_endpoint
    before = (ep.triple_count(), ep.checksum())
    for method in ("POST", "GET"):
        status, _headers, body = _query_request(ep.url, query, method=method, auth=None,
                                                timeout=10, max_bytes=1 << 20)
        assert status == 400, body
    assert (ep.triple_count(), ep.checksum()) == before
    assert ep.requests == [("POST", "query"), ("GET", "query")]


def test_reads_still_work(query_update_endpoint: QueryUpdateEndpoint) -> None:
    src = _source(query_update_endpoint.url)
    t = src.execute("SELECT ?s WHERE { ?s <http://example.org/p> ?o } ORDER BY ?s")
    assert [r[0].value for r in t.rows] == [f"http://example.org/{c}" for c in "abc"]
    assert src.execute("ASK { ?s ?p 'two' }", max_rows=1).rows == [(True,)]
    assert {op for _, op in query_update_endpoint.requests} == {"query"}


@pytest.mark.parametrize("in_headers", [False, True], ids=["body", "headers"])
def test_a_trickling_endpoint_ends_at_the_timeout(in_headers: bool) -> None:
    server = TrickleServer(interval=0.25, in_headers=in_headers)
    try:
        src = _source(server.url, timeout=1.5)
        t0 = time.monotonic()
        with pytest.raises(QueryTimeout, match=r"no answer from .* within 1.5 s"):
            src.execute("SELECT ?x WHERE { ?x ?p ?o }")
        elapsed = time.monotonic() - t0
    finally:
        server.close()
    assert server.hits == 1  # a timeout is not retried
    # the whole answer would take about 2 minutes; the deadline ends it
    assert elapsed < 1.5 + 10, elapsed


def test_a_huge_body_is_never_buffered_whole(query_update_endpoint: QueryUpdateEndpoint,
                                             ) -> None:
    q = "SELECT ?a ?b ?c WHERE { ?a ?p ?x . ?b ?q ?y . ?c ?r ?z }"  # 27 rows, ~4 kB
    table = _source(query_update_endpoint.url, max_bytes=1000).execute(q)
    assert table.truncated and table.rows == [] and table.meta["max_bytes"] == 1000


def test_the_endpoints_own_error_is_kept_short(query_update_endpoint: QueryUpdateEndpoint,
                                               ) -> None:
    # parses (the guard's grammar), but Oxigraph rejects the ungrouped ?x: HTTP 400
    with pytest.raises(QueryEvalError, match=r"^HTTP 400: parse error: error at 1:41") as info:
        _source(query_update_endpoint.url).execute("SELECT ?x WHERE { ?x ?p ?o } GROUP BY ?y")
    assert len(str(info.value)) < 600
