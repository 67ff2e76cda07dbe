"""Local RDF sources (pyoxigraph in a thread or a worker, rdflib in a worker) never touch the
network or the file system for a predicted query: SERVICE and FROM / FROM NAMED outside the
file are refused from the parse tree, rdflib's graph loading is off, and the workers are off
the network. A loopback server that records hits proves nothing called out; a secret file
proves nothing was read."""

from __future__ import annotations

import gc
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_queryeval.errors import QueryEvalError, QueryRefused
from pytest_queryeval.sources.rdf import RdfSource, clear_registry, loaded_store
from tests.fixtures.sparql_standin import HitRecorder

TRIG = """
@prefix ex: <http://example.org/> .
ex:a ex:p "default graph" .
ex:g1 { ex:b ex:p "in g1" . }
"""
SECRET = "queryeval-secret-4711"
ENGINES = [("pyoxigraph", "thread"), ("pyoxigraph", "process"), ("rdflib", "process")]


@pytest.fixture
def trig(tmp_path: Path) -> Path:
    path = tmp_path / "data.trig"
    path.write_text(TRIG, encoding="utf-8")
    (tmp_path / "secret.nt").write_text(
        f'<http://example.org/s> <http://example.org/p> "{SECRET}" .\n', encoding="utf-8")
    return path


@pytest.fixture(autouse=True)
def _fresh_registry() -> Any:
    yield
    clear_registry()


def _attacks(rec: HitRecorder, secret: Path) -> list[tuple[str, str, str]]:
    """(label, query, expected reason) for every way out that was reproduced in issue 16."""
    svc = f"{rec.base_url}/svc"
    service_reason = (f"refused: SERVICE <{svc}> (federated query) is not allowed against a "
                      "local graph: an in-process engine never calls out (datasource option "
                      "allow_service: true allows it)")
    url, file_iri = f"{rec.base_url}/data.nt", secret.as_uri()

    def from_reason(word: str, iri: str) -> str:
        return (f"refused: {word} <{iri}> names no graph of the local file: an in-process "
                "engine never loads a graph (datasource option allow_service: true lets the "
                "query run, without it)")

    return [
        ("service", f"SELECT * WHERE {{ SERVICE <{svc}> {{ ?s ?p ?o }} }}", service_reason),
        ("true-dot-service",
         f"SELECT * WHERE {{ ?s ?p true.SERVICE <{svc}> {{ ?a ?b ?c }} }}", service_reason),
        ("escaped-quote-pname",
         f"PREFIX ex: <http://x/> SELECT * WHERE {{ ?s ex:a\\' ?o . SERVICE <{svc}> "
         "{ ?a ?b ?c } } #'", service_reason),
        ("from-url", f"SELECT ?o FROM <{url}> WHERE {{ ?s ?p ?o }}", from_reason("FROM", url)),
        ("from-named-url", f"SELECT ?o FROM NAMED <{url}> WHERE {{ GRAPH ?g {{ ?s ?p ?o }} }}",
         from_reason("FROM NAMED", url)),
        ("from-file", f"SELECT ?o FROM <{file_iri}> WHERE {{ ?s ?p ?o }}",
         from_reason("FROM", file_iri)),
    ]


@pytest.mark.parametrize(("engine", "isolation"), ENGINES)
def test_no_network_and_no_file_access(engine: str, isolation: str, trig: Path,
                                       hit_recorder: HitRecorder) -> None:
    src = RdfSource("local", {"path": str(trig), "engine": engine, "isolation": isolation,
                              "timeout": 20})
    before = src.execute("SELECT ?o WHERE { ?s ?p ?o } ORDER BY ?o")
    assert [r[0].value for r in before.rows] == ["default graph", "in g1"]
    outcomes = {}
    for label, query, reason in _attacks(hit_recorder, trig.parent / "secret.nt"):
        with pytest.raises(QueryRefused) as info:
            src.execute(query)
        outcomes[label] = info.value.reason()
        assert outcomes[label] == reason, label
    assert hit_recorder.hits == []
    assert src.triple_count() == 2  # nothing loaded into the dataset either
    # FROM naming a graph of the file is an ordinary query (engines differ on whether the
    # union default graph still applies; both see the named graph)
    own = src.execute("SELECT ?o FROM <http://example.org/g1> WHERE { ?s ?p ?o }")
    assert "in g1" in [r[0].value for r in own.rows]


@pytest.mark.parametrize(("engine", "isolation"), ENGINES)
def test_allow_service_lets_federation_through(engine: str, isolation: str, trig: Path,
                                               hit_recorder: HitRecorder) -> None:
    """The datasource option: SERVICE reaches the service (the recorder answers with an error
    page, not SPARQL results, so the query fails, after the hit); FROM still loads nothing."""
    src = RdfSource("fed", {"path": str(trig), "engine": engine, "isolation": isolation,
                            "allow_service": True, "timeout": 20})
    with pytest.raises(QueryEvalError):
        src.execute(f"SELECT * WHERE {{ SERVICE <{hit_recorder.base_url}/svc> {{ ?s ?p ?o }} }}")
    assert hit_recorder.hits and hit_recorder.hits[0][1].startswith("/svc")
    hits = len(hit_recorder.hits)
    secret = (trig.parent / "secret.nt").as_uri()
    t = src.execute(f"SELECT ?o FROM <{secret}> FROM <{hit_recorder.base_url}/x.nt> "
                    "WHERE { ?s ?p ?o }")
    values = {r[0].value for r in t.rows}  # allowed, and still never loaded
    assert SECRET not in values and "leaked" not in values
    assert len(hit_recorder.hits) == hits


def test_an_engine_error_leaves_nothing_for_another_thread_to_drop(
        trig: Path, hit_recorder: HitRecorder) -> None:
    """pyoxigraph fails the SERVICE call while its solutions are read, in the query's thread.
    The error once carried that thread's frames (and so the solutions) to the caller, and
    pyoxigraph reported 'unsendable, but is being dropped on another thread' in whichever
    later test collected them."""
    src = RdfSource("fed", {"path": str(trig), "engine": "pyoxigraph", "isolation": "thread",
                            "allow_service": True, "timeout": 20})
    seen: list[Any] = []
    hook = sys.unraisablehook
    sys.unraisablehook = seen.append
    try:
        with pytest.raises(QueryEvalError) as info:
            src.execute(f"SELECT * WHERE {{ SERVICE <{hit_recorder.base_url}/svc> "
                        "{ ?s ?p ?o } }")
        del info
        gc.collect()
    finally:
        sys.unraisablehook = hook
    assert [str(u.exc_value) for u in seen] == []


@pytest.mark.parametrize("engine", ["pyoxigraph", "rdflib"])
def test_the_worker_is_off_the_network_under_the_guard(engine: str, trig: Path,
                                                       hit_recorder: HitRecorder) -> None:
    """The layer under the guard: a SERVICE query handed straight to the worker (as a guard
    bypass would) gets no connection out."""
    from pytest_queryeval.sources.rdf import resolve_format

    store = loaded_store(trig, engine, resolve_format(trig, None), False, None, 60.0,
                         "process")
    assert store.network in ("namespace", "audit-hook")
    if engine == "pyoxigraph" and store.network != "namespace":
        pytest.skip("no network namespace here (user namespaces disabled): pyoxigraph's own "
                    "HTTP client is then held by the guard alone")
    query = f"SELECT * WHERE {{ SERVICE <{hit_recorder.base_url}/svc> {{ ?s ?p ?o }} }}"
    with pytest.raises(QueryEvalError):
        store.run(query, 20.0, 100, None, 1 << 20)
    assert hit_recorder.hits == []
    if engine == "rdflib":  # and FROM <url> loads nothing even past the guard
        t = store.run(f"SELECT ?o FROM <{hit_recorder.base_url}/x.nt> WHERE {{ ?s ?p ?o }}",
                      20.0, 100, None, 1 << 20)
        assert t.rows == []
        assert hit_recorder.hits == []


def test_allow_service_must_be_a_boolean(trig: Path) -> None:
    from pytest_queryeval.errors import ConfigError

    with pytest.raises(ConfigError, match=r"datasources.x.allow_service: must be true or false"):
        RdfSource("x", {"path": str(trig), "allow_service": "yes"})
