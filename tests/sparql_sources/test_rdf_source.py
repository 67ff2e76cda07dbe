"""``type: rdf`` with the default engine (pyoxigraph) on real Brick graphs."""

from __future__ import annotations

import os
import shutil
from collections import Counter
from pathlib import Path

import pytest

from pytest_queryeval.errors import (
    ConfigError,
    QueryFailed,
    QueryRefused,
    QuerySyntaxError,
    QueryTimeout,
    SourceUnavailable,
)
from pytest_queryeval.results import Term
from pytest_queryeval.sources import open_source
from pytest_queryeval.sources.rdf import RdfSource, loaded_store

from .conftest import AHU_VAV_SENSOR, BRICK, sha256
from .test_guard import UPDATES

XSD = "http://www.w3.org/2001/XMLSchema#"


def test_reference_join_on_soda(soda: Path) -> None:
    src = open_source("soda", {"type": "rdf", "path": str(soda)})
    assert isinstance(src, RdfSource)
    t = src.execute(AHU_VAV_SENSOR, timeout=30)
    assert t.columns == ["eqp", "sensor"]
    assert len(t) == 230
    assert not t.truncated
    assert all(isinstance(c, Term) and c.type == "uri" for row in t.rows for c in row)
    assert src.triple_count() == 3_774
    assert t.meta["engine"] == "pyoxigraph"
    assert t.meta["order_by"] is False


def test_one_load_shared_by_every_source(soda: Path) -> None:
    a = RdfSource("a", {"path": str(soda)})
    b = RdfSource("b", {"path": str(soda), "timeout": 5})
    assert a._store() is b._store()
    assert a.fingerprint() == b.fingerprint() == f"rdf:pyoxigraph:{sha256(soda)}"


def test_changed_file_is_reloaded(brick_examples: Path, tmp_path: Path) -> None:
    g = tmp_path / "g36.ttl"
    shutil.copyfile(brick_examples / "g36-combined-ahu-vav.ttl", g)
    src = RdfSource("g", {"path": str(g), "isolation": "thread"})
    before, fp = src._store(), src.fingerprint()
    n = src.triple_count()
    with g.open("a") as fh:
        fh.write('\n<http://example.org/extra> <http://example.org/p> "added" .\n')
    st = g.stat()
    os.utime(g, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    assert src._store() is not before
    assert before.store is None  # the old version was dropped, not kept alongside
    assert src.triple_count() == n + 1
    assert src.fingerprint() != fp


def test_ask_is_a_one_cell_boolean_table(soda: Path) -> None:
    src = RdfSource("soda", {"path": str(soda)})
    yes = src.execute(BRICK + "ASK { ?x a brick:AHU }")
    no = src.execute(BRICK + "ask { ?x a brick:Nonexistent_Class }")
    assert (yes.columns, yes.rows) == (["boolean"], [(True,)])
    assert (no.columns, no.rows) == (["boolean"], [(False,)])


def test_row_cap_marks_truncated(soda: Path) -> None:
    src = RdfSource("soda", {"path": str(soda)})
    t = src.execute(AHU_VAV_SENSOR, max_rows=100)
    assert len(t) == 100
    assert t.truncated
    full = src.execute(AHU_VAV_SENSOR, max_rows=230)
    assert len(full) == 230
    assert not full.truncated


def test_unbound_optional_is_none(soda: Path) -> None:
    src = RdfSource("soda", {"path": str(soda)})
    q = BRICK + """SELECT ?ahu ?label WHERE { ?ahu a brick:AHU
                   OPTIONAL { ?ahu <http://example.org/never> ?label } }"""
    t = src.execute(q)
    assert len(t) == 5
    assert all(row[1] is None for row in t.rows)


def test_syntax_error_is_cannot_parse(soda: Path) -> None:
    src = RdfSource("soda", {"path": str(soda)})
    with pytest.raises(QuerySyntaxError) as info:  # the guard's parse: never run
        src.execute("SELECT ?x WHERE { ?x a brick:AHU ")
    assert info.value.reason().startswith("cannot parse: syntax error at line 1, column ")


def test_timeout_abandons_the_query(brick_examples: Path) -> None:
    # A cross product with a filter nothing passes: ~2.7 M pairs, a few seconds of work.
    src = RdfSource("rice", {"path": str(brick_examples / "rice_brick.ttl")})
    slow = ("SELECT ?a WHERE { ?a ?b ?c . ?d ?e ?f "
            "FILTER(STRLEN(STR(?c)) + STRLEN(STR(?f)) < 0) }")
    with pytest.raises(QueryTimeout, match=r"within 0\.2 s"):
        src.execute(slow, timeout=0.2)
    assert src.execute("SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }").rows == [
        (Term("literal", "1665", XSD + "integer"),)]


@pytest.mark.parametrize(("label", "query"), UPDATES, ids=[u[0] for u in UPDATES])
def test_updates_never_reach_the_graph(label: str, query: str, brick_examples: Path) -> None:
    path = brick_examples / "soda_brick.ttl"
    digest = sha256(path)
    src = RdfSource("soda", {"path": str(path)})
    n = src.triple_count()
    with pytest.raises(QueryRefused):
        src.execute(query, trusted=True)  # gold queries are guarded too
    assert src.triple_count() == n == 3_774
    assert sha256(path) == digest


def test_construct_describe_and_service_refused(brick_examples: Path) -> None:
    src = RdfSource("soda", {"path": str(brick_examples / "soda_brick.ttl")})
    for q in ("CONSTRUCT WHERE { ?s ?p ?o }", "DESCRIBE ?s WHERE { ?s ?p ?o }"):
        with pytest.raises(QueryRefused, match="only SELECT and ASK are scored"):
            src.execute(q)
    with pytest.raises(QueryRefused, match="SERVICE"):
        src.execute("SELECT * WHERE { SERVICE <http://127.0.0.1:9/sparql> { ?s ?p ?o } }")


@pytest.mark.parametrize(("ext", "fmt"), [("nt", "N_TRIPLES"), ("rdf", "RDF_XML"),
                                          ("jsonld", "JSON_LD"), ("trig", "TRIG")])
def test_every_format_gives_the_same_table(ext: str, fmt: str, brick_examples: Path,
                                           tmp_path: Path) -> None:
    import pyoxigraph as ox

    ttl = brick_examples / "soda_brick.ttl"
    out = tmp_path / f"soda.{ext}"
    quads = list(ox.parse(path=str(ttl)))
    if fmt == "TRIG":  # put the data in a named graph: the default graph is the union
        g = ox.NamedNode("http://example.org/soda")
        quads = [ox.Quad(q.subject, q.predicate, q.object, g) for q in quads]
    ox.serialize(quads if fmt == "TRIG" else [q.triple for q in quads], str(out),
                 getattr(ox.RdfFormat, fmt))
    q = BRICK + """SELECT ?ahu ?p WHERE { ?ahu a brick:AHU . ?ahu brick:feeds+ ?x .
                   ?x brick:hasPoint|^brick:isPointOf ?p }"""
    ref = RdfSource("ttl", {"path": str(ttl)}).execute(q)
    got = RdfSource(ext, {"path": str(out)}).execute(q)
    assert len(ref) > 0
    assert got.columns == ref.columns
    assert Counter(got.rows) == Counter(ref.rows)


def test_lenient_parsing_for_invalid_iris(brick_examples: Path) -> None:
    path = brick_examples / "ebu3b_brick.ttl"
    with pytest.raises(SourceUnavailable, match="lenient"):
        RdfSource("strict", {"path": str(path)}).triple_count()
    assert RdfSource("lenient", {"path": str(path), "lenient": True}).triple_count() > 14_000


def test_config_errors(soda: Path, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="unknown key"):
        open_source("x", {"type": "rdf", "path": str(soda), "graph": "g"})
    with pytest.raises(ConfigError, match="unknown engine"):
        open_source("x", {"type": "rdf", "path": str(soda), "engine": "jena"})
    with pytest.raises(ConfigError, match="unknown RDF format"):
        open_source("x", {"type": "rdf", "path": str(tmp_path / "g.csv")})
    with pytest.raises(ConfigError, match="needs 'path'"):
        open_source("x", {"type": "rdf"})
    for key, bad in (("timeout", 0), ("max_rows", "many"), ("load_timeout", True)):
        with pytest.raises(ConfigError, match="positive number") as info:
            open_source("x", {"type": "rdf", "path": str(soda), key: bad})
        assert info.value.key == f"datasources.x.{key}"
    missing = open_source("x", {"type": "rdf", "path": str(tmp_path / "absent.ttl")})
    with pytest.raises(SourceUnavailable, match="not found"):
        missing.execute("ASK {}")


def test_registry_key_includes_engine(soda: Path) -> None:
    fmt = ("TURTLE", "turtle", False)
    a = loaded_store(soda, "pyoxigraph", fmt, False, None, 60)
    assert a is loaded_store(soda, "pyoxigraph", fmt, False, None, 60)
    assert a is not loaded_store(soda, "pyoxigraph", fmt, True, None, 60)


def test_process_isolation_kills_a_runaway_query(brick_examples: Path) -> None:
    path = brick_examples / "rice_brick.ttl"
    iso = RdfSource("iso", {"path": str(path)})  # the default: predictions are untrusted
    inproc = RdfSource("in", {"path": str(path), "isolation": "thread"})
    assert iso._store() is not inproc._store()
    q = "SELECT ?s ?p ?o WHERE { ?s ?p ?o }"
    a, b = iso.execute(q), inproc.execute(q)
    assert a.columns == b.columns
    assert Counter(a.rows) == Counter(b.rows)
    assert a.meta["isolation"] == "process"
    worker = iso._store()
    starts = worker.starts
    slow = ("SELECT ?a WHERE { ?a ?b ?c . ?d ?e ?f "
            "FILTER(STRLEN(STR(?c)) + STRLEN(STR(?f)) < 0) }")
    with pytest.raises(QueryTimeout, match="pyoxigraph worker killed"):
        iso.execute(slow, timeout=0.2)
    assert not worker.alive()  # nothing left running
    assert iso.execute("ASK { ?s ?p ?o }").rows == [(True,)]
    assert worker.starts == starts + 1
    with pytest.raises(ConfigError, match="rdflib always runs in a worker process"):
        RdfSource("x", {"path": str(path), "engine": "rdflib", "isolation": "thread"})


def _tenfold(levels: int, select: str) -> str:
    """Each BIND makes a string ten times longer: 10**(levels + 1) characters at the end."""
    binds = ['BIND("xxxxxxxxxx" AS ?v0)'] + [
        f"BIND(CONCAT({', '.join([f'?v{i}'] * 10)}) AS ?v{i + 1})" for i in range(levels)]
    return f"SELECT {select} WHERE {{ {' '.join(binds)} }}"


def test_worker_memory_is_capped(brick_examples: Path) -> None:
    # a 10 GB string in one row, built in well under the timeout: the worker's address space
    # ends at its size after loading plus max_memory, so the query fails there, not the machine
    path = brick_examples / "rice_brick.ttl"
    src = RdfSource("iso", {"path": str(path), "max_memory": 256 * 1024 * 1024})
    worker = src._store()
    starts = worker.starts
    with pytest.raises(QueryFailed, match=r"out of memory\? see max_memory"):
        src.execute(_tenfold(9, "(STRLEN(?v9) AS ?n)"), timeout=120)
    assert not worker.alive()
    # 10 MB is well within the cap, and the next query gets a fresh worker
    assert src.execute(_tenfold(6, "(STRLEN(?v6) AS ?n)")).rows[0][0].value == "10000000"
    assert worker.starts == starts + 1
    # the default cap (2 GiB) ends it too, long before the timeout would
    default = RdfSource("iso", {"path": str(path)})
    with pytest.raises(QueryFailed, match="out of memory"):
        default.execute(_tenfold(9, "(STRLEN(?v9) AS ?n)"), timeout=120)


@pytest.mark.parametrize("isolation", ["process", "thread"])
def test_result_over_max_bytes_is_truncated(brick_examples: Path, isolation: str) -> None:
    path = brick_examples / "rice_brick.ttl"
    src = RdfSource("b", {"path": str(path), "isolation": isolation, "max_bytes": 1_000_000})
    t = src.execute(_tenfold(5, "?v5"))  # one literal of 1,000,000 characters, plus framing
    assert t.truncated
    assert t.rows == []
    assert t.meta["max_bytes"] == 1_000_000
    assert t.cut_by() == ("holds more than 1,000,000 bytes", "max_bytes")
    small = src.execute(_tenfold(4, "?v4"))
    assert not small.truncated
    assert len(small.rows[0][0].value) == 100_000


@pytest.mark.parametrize("key", ["max_bytes", "max_memory"])
def test_size_caps_are_positive_whole_numbers(soda: Path, key: str) -> None:
    with pytest.raises(ConfigError, match="positive whole number") as info:
        open_source("b", {"type": "rdf", "path": str(soda), key: 0})
    assert info.value.key == f"datasources.b.{key}"
