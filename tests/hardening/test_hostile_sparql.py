"""Hostile SPARQL predictions through the whole plugin (issue 16): local graphs with pyoxigraph
(worker and thread) and rdflib, a stand-in for Fuseki that serves query and update on one URL,
and an endpoint that trickles its answer.

Each attack case must fail with its own precise reason, the honest cases must pass, the data
must be unchanged (file hash, triple count and checksum), nothing may call out (a loopback
server records every hit), a local file named in a query must never reach a report, and the
session must end within the sum of its timeouts plus a margin.
"""

from __future__ import annotations

import hashlib
import time
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.sparql_standin import HitRecorder, QueryUpdateEndpoint, TrickleServer
from tests.sparql_sources.test_guard import DISGUISED_UPDATES, UPDATES

from .conftest import by_id, check_all_reports, dump, no_traceback, run_with_all_reports

TRIG = """
@prefix ex: <http://example.org/> .
ex:a ex:p "one" .
ex:b ex:p "two" .
ex:g1 { ex:c ex:p "three" . }
"""
SECRET = "queryeval-secret-0815"
HONEST = "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }"
TIMEOUT = 10
#: Generous: interpreter and worker start-up on a loaded machine, not the queries.
MARGIN = 60.0


def _cases(attacks: list[tuple[str, str, str]]) -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = [{"id": "honest-first", "gold": HONEST, "predicted": HONEST}]
    cases += [{"id": cid, "gold": HONEST, "predicted": q} for cid, q, _ in attacks]
    cases.append({"id": "honest-last", "gold": HONEST, "predicted": HONEST})
    return cases


def _run(suite: pytest.Pytester, source: dict[str, Any],
         attacks: list[tuple[str, str, str]]) -> tuple[dict[str, Any], float]:
    suite.makefile(".yaml", queryeval=dump({"datasources": {"graph": source}}))
    suite.makefile(".yaml", test_attacks=dump({
        "kind": "sparql", "datasource": "graph", "thresholds": {"execution_accuracy": 1.0},
        "timeout": TIMEOUT, "cases": _cases(attacks)}))
    t0 = time.monotonic()
    result, report = run_with_all_reports(suite)
    seconds = time.monotonic() - t0
    no_traceback(result)
    result.assert_outcomes(passed=2, failed=len(attacks))
    cases = by_id(report)
    assert cases["honest-first"]["outcome"] == cases["honest-last"]["outcome"] == "passed"
    wrong = [(cid, cases[cid]["outcome"], cases[cid]["reason"], reason)
             for cid, _, reason in attacks
             if cases[cid]["outcome"] != "failed" or not str(cases[cid]["reason"]).startswith(reason)
             or cases[cid]["metrics"].get("execution_accuracy") != 0.0]
    assert not wrong, "\n".join(map(repr, wrong))
    return report, seconds


def _local_attacks(rec: HitRecorder, secret: Path) -> list[tuple[str, str, str]]:
    svc, url, file_iri = f"{rec.base_url}/svc", f"{rec.base_url}/data.nt", secret.as_uri()
    service = f"refused: SERVICE <{svc}> (federated query) is not allowed against a local graph"
    attacks = [
        ("service", f"SELECT * WHERE {{ SERVICE <{svc}> {{ ?s ?p ?o }} }}", service),
        ("service-true-dot", f"SELECT * WHERE {{ ?s ?p true.SERVICE <{svc}> {{ ?a ?b ?c }} }}",
         service),
        ("service-escaped-quote",
         f"PREFIX ex: <http://x/> SELECT * WHERE {{ ?s ex:a\\' ?o . SERVICE <{svc}> "
         "{ ?a ?b ?c } } #'", service),
        ("service-silent-in-exists",
         f"SELECT * {{ ?s ?p ?o FILTER EXISTS {{ SERVICE SILENT <{svc}> {{ ?a ?b ?c }} }} }}",
         service),
        ("service-variable", "SELECT * { ?s ?p ?o OPTIONAL { SERVICE ?x { ?a ?b ?c } } }",
         "refused: SERVICE ?x (federated query)"),
        ("from-url", f"SELECT ?o FROM <{url}> WHERE {{ ?s ?p ?o }}",
         f"refused: FROM <{url}> names no graph of the local file"),
        ("from-named-url", f"SELECT ?o FROM NAMED <{url}> WHERE {{ GRAPH ?g {{ ?s ?p ?o }} }}",
         f"refused: FROM NAMED <{url}> names no graph of the local file"),
        # (reports show machine paths relative to the suite: file://secret.nt)
        ("from-file", f"SELECT ?o FROM <{file_iri}> WHERE {{ ?s ?p ?o }}",
         "refused: FROM <file://"),
    ]
    attacks += [(f"disguised-update-{i}", q, "refused: SPARQL Update is not allowed")
                for i, (q, _) in enumerate(DISGUISED_UPDATES)]
    return attacks


@pytest.mark.parametrize(("engine", "isolation"),
                         [("pyoxigraph", "process"), ("pyoxigraph", "thread"),
                          ("rdflib", "process")])
def test_local_graph_no_network_no_file_no_write(suite: pytest.Pytester, engine: str,
                                                 isolation: str,
                                                 hit_recorder: HitRecorder) -> None:
    graph = suite.path / "data.trig"
    graph.write_text(TRIG, encoding="utf-8")
    secret = suite.path / "secret.nt"
    secret.write_text(f'<http://example.org/s> <http://example.org/p> "{SECRET}" .\n',
                      encoding="utf-8")
    before = hashlib.sha256(graph.read_bytes()).hexdigest()
    attacks = _local_attacks(hit_recorder, secret)
    report, seconds = _run(suite, {"type": "rdf", "path": "data.trig", "engine": engine,
                                   "isolation": isolation}, attacks)
    assert hit_recorder.hits == []
    assert "names no graph of the local file" in by_id(report)["from-file"]["reason"]
    texts = check_all_reports(suite.path, [c["id"] for c in report["cases"]])
    for name, text in texts.items():
        assert SECRET not in text, name
        assert "leaked" not in text, name
    assert hashlib.sha256(graph.read_bytes()).hexdigest() == before
    assert seconds < TIMEOUT * len(report["cases"]) + MARGIN  # a bound, not a speed


def test_query_and_update_on_one_url_keeps_its_data(suite: pytest.Pytester,
                                                    query_update_endpoint: QueryUpdateEndpoint,
                                                    ) -> None:
    ep = query_update_endpoint
    before = (ep.triple_count(), ep.checksum())
    attacks = [(f"update-{label}", q, "refused: SPARQL Update is not allowed")
               for label, q in UPDATES]
    attacks += [(f"disguised-{i}", q, f"refused: SPARQL Update is not allowed (read-only "
                                      f"source): {ops}")
                for i, (q, ops) in enumerate(DISGUISED_UPDATES)]
    report, seconds = _run(suite, {"type": "sparql", "endpoint": ep.url, "retries": 0},
                           attacks)
    assert (ep.triple_count(), ep.checksum()) == before == (3, before[1])
    assert ep.requests, "the honest cases reached the endpoint"
    assert {op for _, op in ep.requests} == {"query"}, ep.requests
    assert seconds < TIMEOUT * len(report["cases"]) + MARGIN


def test_a_trickling_endpoint_costs_each_case_its_timeout(suite: pytest.Pytester) -> None:
    server = TrickleServer(interval=0.5, only_if="?slow")
    try:
        slow = "SELECT ?slow WHERE { ?slow ?p ?o }"
        attacks = [(f"trickle-{i}", slow, "timeout: no answer from ") for i in range(3)]
        suite.makefile(".yaml", queryeval=dump({"datasources": {"graph": {
            "type": "sparql", "endpoint": server.url, "retries": 0}}}))
        suite.makefile(".yaml", test_attacks=dump({
            "kind": "sparql", "datasource": "graph", "thresholds": {"execution_accuracy": 1.0},
            "timeout": 2, "cases": _cases(attacks)}))
        t0 = time.monotonic()
        result, report = run_with_all_reports(suite)
        seconds = time.monotonic() - t0
    finally:
        server.close()
    no_traceback(result)
    cases = by_id(report)
    for cid, _, reason in attacks:
        assert cases[cid]["outcome"] == "failed"
        assert cases[cid]["reason"].startswith(reason), cases[cid]["reason"]
        assert cases[cid]["reason"].endswith("within 2 s"), cases[cid]["reason"]
    assert cases["honest-last"]["outcome"] == "passed"
    # each trickling answer would take about 4 minutes; each case costs its 2 s timeout
    assert seconds < 2 * len(attacks) + MARGIN
