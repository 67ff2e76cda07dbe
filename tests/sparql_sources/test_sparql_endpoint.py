"""``type: sparql`` against a real Oxigraph server on loopback, loaded with Soda Hall (Brick)."""

from __future__ import annotations

import base64
import http.server
import threading
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

from pytest_queryeval.engine import Evaluator
from pytest_queryeval.errors import (
    ConfigError,
    QueryFailed,
    QueryRefused,
    QuerySyntaxError,
    QueryTimeout,
    SourceUnavailable,
)
from pytest_queryeval.kinds.sparql import SparqlKind
from pytest_queryeval.results import Term
from pytest_queryeval.sources import open_source
from pytest_queryeval.sources.rdf import RdfSource
from pytest_queryeval.sources.sparql import SparqlSource
from tests.fixtures.oxigraph import OxigraphServer, free_port
from tests.fixtures.quiet_http import QuietHTTPServer
from tests.support import make_case

from .conftest import AHU_VAV_SENSOR, BRICK, gold_queries
from .test_guard import UPDATES

pytestmark = pytest.mark.oxigraph

XSD = "http://www.w3.org/2001/XMLSchema#"


def source(server: OxigraphServer, **spec: Any) -> SparqlSource:
    src = open_source("ox", {"type": "sparql", "endpoint": server.query_url, **spec})
    assert isinstance(src, SparqlSource)
    return src


def test_reference_join_through_the_endpoint(oxigraph_endpoint: OxigraphServer) -> None:
    t = source(oxigraph_endpoint).execute(AHU_VAV_SENSOR)
    assert t.columns == ["eqp", "sensor"]
    assert len(t) == 230
    assert not t.truncated
    assert t.meta["attempts"] == 1


def test_golds_identical_to_in_process(oxigraph_endpoint: OxigraphServer,
                                       shared_data: Path, soda: Path) -> None:
    remote = source(oxigraph_endpoint)
    local = RdfSource("local", {"path": str(soda)})
    golds = gold_queries(shared_data / "buildingqa", "soda")
    assert len(golds) == 4
    for qid, query in golds:
        a, b = local.execute(query), remote.execute(query)
        assert len(a) > 0, qid
        assert a.columns == b.columns, qid
        assert Counter(a.rows) == Counter(b.rows), qid


def test_literal_forms_match_the_in_process_engine(oxigraph_endpoint: OxigraphServer,
                                                   soda: Path) -> None:
    # The graph's literal with an IRI subject (its label) and one literal of each other form
    # (language tag, boolean, integer, decimal, date, custom datatype), in a fixed order.
    q = """PREFIX xsd: <http://www.w3.org/2001/XMLSchema#>
    SELECT ?s ?o WHERE {
      { ?s ?p ?o FILTER(isIRI(?s) && isLiteral(?o)) }
      UNION { VALUES (?s ?o) { (<http://example.org/v> "Soda"@en) (<http://example.org/v> true)
        (<http://example.org/v> 42) (<http://example.org/v> 1.5)
        (<http://example.org/v> "2020-01-01"^^xsd:date)
        (<http://example.org/v> "7"^^<http://example.org/unit>) } }
    } ORDER BY ?s ?o"""
    a = RdfSource("local", {"path": str(soda)}).execute(q)
    b = source(oxigraph_endpoint).execute(q)
    assert len(b) == 7
    assert a.rows == b.rows
    assert {(c.datatype, c.lang) for _, c in b.rows} == {
        (None, None), (None, "en"), (XSD + "boolean", None), (XSD + "integer", None),
        (XSD + "decimal", None), (XSD + "date", None), ("http://example.org/unit", None)}
    assert b.meta["order_by"] is True


def test_ask_cap_and_syntax_error(oxigraph_endpoint: OxigraphServer) -> None:
    src = source(oxigraph_endpoint, max_rows=10)
    assert src.execute(BRICK + "ASK { ?x a brick:VAV }").rows == [(True,)]
    capped = src.execute(AHU_VAV_SENSOR, max_rows=10)
    assert len(capped) == 10
    assert capped.truncated
    with pytest.raises(QuerySyntaxError, match=r"^syntax error at line 1, column \d+: the query"):
        src.execute("SELECT ?x WHERE { ?x a ")  # the guard's parse: never sent
    with pytest.raises(QueryFailed, match=r"HTTP 400: error at"):
        src.execute("SELECT ?x WHERE { ?x a ?t } GROUP BY ?t")  # parses; Oxigraph rejects it


def test_refused_updates_leave_the_server_unchanged(oxigraph_endpoint: OxigraphServer) -> None:
    before = (oxigraph_endpoint.triple_count(), oxigraph_endpoint.dump_sha256())
    assert before[0] == 3_774
    src = source(oxigraph_endpoint)
    reasons = set()
    for _, query in UPDATES:
        with pytest.raises(QueryRefused) as info:
            src.execute(query, trusted=True)
        reasons.add(info.value.reason().split(":")[0])
    for query in ("CONSTRUCT WHERE { ?s ?p ?o }", "DESCRIBE <http://example.org/x>"):
        with pytest.raises(QueryRefused):
            src.execute(query)
    assert reasons == {"refused"}
    assert (oxigraph_endpoint.triple_count(), oxigraph_endpoint.dump_sha256()) == before


def test_the_unchanged_check_would_see_a_write(oxigraph_endpoint: OxigraphServer) -> None:
    """Sensitivity of the check above: a real write changes count and checksum (then undone)."""
    before = (oxigraph_endpoint.triple_count(), oxigraph_endpoint.dump_sha256())
    triple = '<http://example.org/probe> <http://example.org/p> "probe"'
    oxigraph_endpoint.update(f"INSERT DATA {{ {triple} }}")
    try:
        changed = (oxigraph_endpoint.triple_count(), oxigraph_endpoint.dump_sha256())
        assert changed[0] == before[0] + 1
        assert changed[1] != before[1]
    finally:
        oxigraph_endpoint.update(f"DELETE DATA {{ {triple} }}")
    assert (oxigraph_endpoint.triple_count(), oxigraph_endpoint.dump_sha256()) == before


def test_timeout(oxigraph_endpoint: OxigraphServer) -> None:
    # 3,774 x 3,774 pairs through a filter nothing passes: seconds of server work.
    slow = """SELECT ?a WHERE { ?a ?b ?c . ?d ?e ?f
        FILTER(STRLEN(STR(?a)) + STRLEN(STR(?d)) + STRLEN(STR(?f)) < 0) }"""
    with pytest.raises(QueryTimeout, match="no answer from"):
        source(oxigraph_endpoint, retries=3).execute(slow, timeout=0.5)


def test_server_down_then_back(oxigraph_endpoint: OxigraphServer) -> None:
    src = source(oxigraph_endpoint, retries=2, backoff=0.05)
    oxigraph_endpoint.stop()
    try:
        with pytest.raises(SourceUnavailable, match="after 3 attempt") as info:
            src.execute("ASK { ?s ?p ?o }")
        assert info.value.reason().startswith("source unavailable: cannot reach http://127.0.0.1")
        assert src.last_attempts == 3
    finally:
        oxigraph_endpoint.start()
    assert src.execute("ASK { ?s ?p ?o }").rows == [(True,)]


def test_retry_succeeds_when_the_server_returns(oxigraph_endpoint: OxigraphServer) -> None:
    src = source(oxigraph_endpoint, retries=6, backoff=0.25)  # waits up to 15.75 s in all
    oxigraph_endpoint.stop()
    restarter = threading.Timer(0.3, oxigraph_endpoint.start)
    restarter.start()
    try:
        t = src.execute(AHU_VAV_SENSOR)
    finally:
        restarter.join()
        oxigraph_endpoint.start()
    assert len(t) == 230
    assert t.meta["attempts"] > 1


def test_unknown_port_is_unavailable() -> None:
    src = SparqlSource("nowhere", {"endpoint": f"http://127.0.0.1:{free_port()}/query",
                                   "retries": 1, "backoff": 0})
    with pytest.raises(SourceUnavailable, match="after 2 attempt"):
        src.execute("ASK {}")


# --------------------------------------------------------------------------- basic auth

USER, PASSWORD = "alice", "s3cret-Pa55/word"


class _AuthProxy(http.server.BaseHTTPRequestHandler):
    """Loopback reverse proxy demanding basic auth in front of the real Oxigraph server."""

    upstream = ""
    seen_auth: ClassVar[list[str]] = []

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _forward(self) -> None:
        expected = "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
        got = self.headers.get("Authorization", "")
        self.seen_auth.append(got)
        if got != expected:
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="sparql"')
            self.end_headers()
            return
        body = self.rfile.read(int(self.headers.get("Content-Length", 0) or 0))
        headers = {k: v for k, v in self.headers.items()
                   if k.lower() in ("content-type", "accept")}
        req = urllib.request.Request(self.upstream + self.path, data=body or None,
                                     method=self.command, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                status, ctype, data = resp.status, resp.headers["Content-Type"], resp.read()
        except urllib.error.HTTPError as e:
            status, ctype, data = e.code, e.headers.get("Content-Type", "text/plain"), e.read()
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = _forward


@pytest.fixture
def auth_proxy(oxigraph_endpoint: OxigraphServer) -> Iterator[str]:
    handler = type("Proxy", (_AuthProxy,), {"upstream": oxigraph_endpoint.base_url,
                                            "seen_auth": []})
    server = QuietHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/query"
    finally:
        server.shutdown()
        server.server_close()


def test_basic_auth(auth_proxy: str) -> None:
    ok = open_source("sec", {"type": "sparql", "endpoint": auth_proxy, "user": USER,
                             "password": PASSWORD})
    assert len(ok.execute(AHU_VAV_SENSOR)) == 230
    # Credentials in the URL's userinfo are used the same way (and removed from the URL).
    in_url = SparqlSource("sec", {"endpoint": auth_proxy.replace(
        "http://", f"http://{USER}:{PASSWORD.replace('/', '%2F')}@")})
    assert in_url.execute("ASK { ?s ?p ?o }").rows == [(True,)]
    assert in_url.endpoint == auth_proxy
    bad = SparqlSource("sec", {"endpoint": auth_proxy, "user": USER, "password": "wrong-pw"})
    with pytest.raises(SourceUnavailable, match="authentication failed") as info:
        bad.execute("ASK { ?s ?p ?o }")
    none = SparqlSource("sec", {"endpoint": auth_proxy})
    with pytest.raises(SourceUnavailable, match="HTTP 401"):
        none.execute("ASK { ?s ?p ?o }")
    for text in (str(info.value), repr(ok), ok.fingerprint(), repr(in_url),
                 in_url.fingerprint()):
        assert PASSWORD not in text
        assert "s3cret" not in text
    assert ok.fingerprint() == in_url.fingerprint()


def test_config_errors() -> None:
    with pytest.raises(ConfigError, match="needs 'endpoint'"):
        open_source("x", {"type": "sparql"})
    with pytest.raises(ConfigError, match="http"):
        open_source("x", {"type": "sparql", "endpoint": "ftp://127.0.0.1/sparql"})
    with pytest.raises(ConfigError, match="unknown key"):
        open_source("x", {"type": "sparql", "endpoint": "http://127.0.0.1/q", "graph": "g"})
    with pytest.raises(ConfigError, match=">= 0"):
        open_source("x", {"type": "sparql", "endpoint": "http://127.0.0.1/q", "retries": -1})
    with pytest.raises(ConfigError, match="positive number"):
        open_source("x", {"type": "sparql", "endpoint": "http://127.0.0.1/q", "timeout": "1"})
    with pytest.raises(ConfigError, match="without 'user'"):
        open_source("x", {"type": "sparql", "endpoint": "http://127.0.0.1/q", "password": "p"})


def test_term_types(oxigraph_endpoint: OxigraphServer) -> None:
    t = source(oxigraph_endpoint).execute(
        "SELECT (COUNT(*) AS ?n) WHERE { ?s a <https://brickschema.org/schema/Brick#VAV> }")
    assert t.rows == [(Term("literal", "243", XSD + "integer"),)]


def test_body_over_max_bytes_is_truncated_and_named(oxigraph_endpoint: OxigraphServer) -> None:
    spec = {"type": "sparql", "endpoint": oxigraph_endpoint.query_url, "max_bytes": 20_000}
    t = open_source("ox", spec).execute(AHU_VAV_SENSOR)  # 230 rows: about 50 kB of JSON
    assert t.truncated
    assert t.rows == []
    assert t.meta["max_bytes"] == 20_000
    assert t.cut_by() == ("holds more than 20,000 bytes", "max_bytes")
    gold = BRICK + "SELECT ?a WHERE { ?a a brick:AHU }"
    c = make_case("sparql", gold=gold, datasource="ox", source_spec=spec)
    s = SparqlKind().evaluate(c, AHU_VAV_SENSOR, Evaluator())
    assert s.reason == ("truncated: the predicted result holds more than 20,000 bytes "
                        "(max_bytes); a partial result is never scored")
    assert s.metrics["execution_accuracy"] == 0.0
