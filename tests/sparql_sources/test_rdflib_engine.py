"""``engine: rdflib``: identical result tables to pyoxigraph, and a killable worker.

The equivalence test runs every gold query of the in-repo BuildingQA-format benchmark on Soda
Hall, and with the optional extra data every BuildingQA gold query (27 over 4 buildings), on both
engines. rdflib is slow on the 62 k-triple bldg11 (MORTAR_006 ~13 s; MORTAR_009 > 60 s): the known slow
query runs with a short timeout and must time out cleanly (worker killed, the next query served
by a fresh one); every other must give the identical table.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from pytest_queryeval.errors import QueryRefused, QuerySyntaxError, QueryTimeout
from pytest_queryeval.results import ResultTable, Term
from pytest_queryeval.sources.rdf import RdfSource, loaded_store

from .conftest import IN_REPO_BUILDING, REAL_BUILDINGS, buildingqa_root, gold_queries, sha256

#: Generous: rdflib takes up to ~13 s here alone, several times that on a loaded machine.
RDFLIB_TIMEOUT = 180.0
#: Queries known to take rdflib far longer (MORTAR_009: > 60 s, pyoxigraph 34 ms; Soda Hall's
#: VAV -> zone -> room join SODA_002: minutes, pyoxigraph milliseconds): they run with a short
#: timeout to prove it ends them cleanly, without spending minutes on it.
KNOWN_SLOW = {"MORTAR_009": 10.0, "SODA_002": 10.0}
XSD = "http://www.w3.org/2001/XMLSchema#"
BUILDINGS = [IN_REPO_BUILDING, *REAL_BUILDINGS]


def same_table(a: ResultTable, b: ResultTable, ordered: bool) -> bool:
    if a.columns != b.columns or a.truncated or b.truncated:
        return False
    return a.rows == b.rows if ordered else Counter(a.rows) == Counter(b.rows)


LITERALS = """@prefix ex: <http://example.org/> .
@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .
ex:a ex:plain "substance" ; ex:typed "substance"^^xsd:string ; ex:lang "Hallo"@DE-at ;
     ex:dbl "1.0"^^xsd:double ; ex:dec "01.50"^^xsd:decimal ; ex:int "007"^^xsd:integer ;
     ex:bool "1"^^xsd:boolean ; ex:date "2024-01-02"^^xsd:date ; ex:short "0012"^^xsd:short ;
     ex:node _:b .
"""


def test_literal_gotchas_normalised_identically(tmp_path: Path) -> None:
    g = tmp_path / "literals.ttl"
    g.write_text(LITERALS)
    q = "SELECT ?p ?o WHERE { <http://example.org/a> ?p ?o FILTER(!isBlank(?o)) }"
    ox = RdfSource("ox", {"path": str(g)}).execute(q)
    rl = RdfSource("rl", {"path": str(g), "engine": "rdflib"}).execute(q, timeout=60)
    assert same_table(ox, rl, ordered=False)
    got = {row[0].value.rsplit("/", 1)[1]: row[1] for row in ox.rows}
    assert got == {
        "plain": Term("literal", "substance"),
        "typed": Term("literal", "substance"),  # xsd:string == simple literal (RDF 1.1)
        "lang": Term("literal", "Hallo", None, "de-at"),
        "dbl": Term("literal", "1.0", XSD + "double"),
        "dec": Term("literal", "1.5", XSD + "decimal"),
        "int": Term("literal", "7", XSD + "integer"),
        "bool": Term("literal", "true", XSD + "boolean"),
        "date": Term("literal", "2024-01-02", XSD + "date"),
        "short": Term("literal", "12", XSD + "integer"),  # Oxigraph: every integer type
    }
    # The store-level difference stays visible: rdflib keeps two "substance" terms.
    count = "SELECT (COUNT(DISTINCT ?o) AS ?n) WHERE { ?s ?p ?o }"
    assert RdfSource("ox", {"path": str(g)}).execute(count).rows[0][0].value == "9"
    assert RdfSource("rl", {"path": str(g), "engine": "rdflib"}).execute(
        count, timeout=60).rows[0][0].value == "10"


def test_select_star_column_order_is_engine_independent(tmp_path: Path) -> None:
    g = tmp_path / "literals.ttl"
    g.write_text(LITERALS)
    q = "SELECT * WHERE { ?zeta ?alpha ?mid FILTER(isLiteral(?mid)) }"
    ox = RdfSource("ox", {"path": str(g)}).execute(q)
    rl = RdfSource("rl", {"path": str(g), "engine": "rdflib"}).execute(q, timeout=60)
    assert ox.columns == rl.columns == ["alpha", "mid", "zeta"]
    assert same_table(ox, rl, ordered=False)


def test_rdflib_ask_cap_errors_and_refusals(brick_examples: Path) -> None:
    path = brick_examples / "rice_brick.ttl"
    digest = sha256(path)
    src = RdfSource("rice", {"path": str(path), "engine": "rdflib"})
    assert src.execute("ASK { ?s ?p ?o }", timeout=60).rows == [(True,)]
    capped = src.execute("SELECT ?s WHERE { ?s ?p ?o }", max_rows=10, timeout=60)
    assert len(capped) == 10
    assert capped.truncated
    with pytest.raises(QuerySyntaxError):
        src.execute("SELECT ?s WHERE { ?s ?p ", timeout=60)
    with pytest.raises(QueryRefused):
        src.execute("PREFIX ex: <http://e/>\n# harmless\ndelete where { ?s ?p ?o }")
    assert src.triple_count() == 1_665
    assert sha256(path) == digest


def test_rdflib_timeout_kills_the_worker_and_recovers(brick_examples: Path) -> None:
    path = brick_examples / "rice_brick.ttl"
    src = RdfSource("rice", {"path": str(path), "engine": "rdflib"})
    worker = src._store()
    worker.ensure_started()
    starts = worker.starts
    slow = "SELECT ?a WHERE { ?a ?b ?c . ?d ?e ?f FILTER(STRLEN(STR(?c)) + STRLEN(STR(?f)) < 0) }"
    with pytest.raises(QueryTimeout, match="worker killed"):
        src.execute(slow, timeout=1.0)
    assert not worker.alive()
    n = src.execute("SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }", timeout=60)
    assert n.rows == [(Term("literal", "1665", XSD + "integer"),)]
    assert worker.starts == starts + 1
    assert src.fingerprint() == f"rdf:rdflib:{sha256(path)}"


@pytest.mark.slow
@pytest.mark.parametrize("building", BUILDINGS)
def test_buildingqa_gold_queries_identical_on_both_engines(building: str,
                                                           request: pytest.FixtureRequest,
                                                           ) -> None:
    base = buildingqa_root(request, building)
    ttl = base / "eval_buildings" / f"{building}.ttl"
    ox = RdfSource("ox", {"path": str(ttl)})
    rl = RdfSource("rl", {"path": str(ttl), "engine": "rdflib"})
    identical, timed_out = [], []
    for qid, query in gold_queries(base, building):
        a = ox.execute(query, timeout=60)
        assert len(a) > 0, qid
        try:
            b = rl.execute(query, timeout=KNOWN_SLOW.get(qid, RDFLIB_TIMEOUT))
        except QueryTimeout:
            timed_out.append(qid)
            assert not rl._store().alive()  # killed, not left running
            continue
        assert same_table(a, b, ordered=bool(a.meta["order_by"])), qid
        assert not any(c.type == "bnode" for row in a.rows for c in row if c is not None)
        identical.append(qid)
    # After any timeout the source still answers (a fresh worker).
    assert rl.execute("ASK { ?s ?p ?o }", timeout=120).rows == [(True,)]
    print(f"{building}: identical {len(identical)}, rdflib timed out {timed_out}")
    assert len(identical) + len(timed_out) == {"soda": 4, "TUC_building": 5,
                                                "dflexlibs_multizone": 6, "b59": 7,
                                                "bldg11": 9}[building]
    assert set(timed_out) <= set(KNOWN_SLOW), "only the known slow rdflib query may time out"
    fmt = ("TURTLE", "turtle", False)
    loaded_store(ttl, "rdflib", fmt, False, None, 300).close()  # free the worker's memory


#: xsd:decimal lexical forms written in a file, and what Oxigraph itself returns for each.
DECIMALS = {"3.0": "3", "3": "3", "-0.0": "0", "0.50": "0.5", "+1.50": "1.5", "100": "100",
            "003.100": "3.1", "-3.000": "-3"}


def test_decimals_keep_the_engines_lexical_form(tmp_path: Path) -> None:
    """Issue 30 item 1: an integral xsd:decimal was written "3.0" where Oxigraph (and the
    reference evaluators, which compare value strings) have "3": an AVG of 2 and 4 scored
    set_f1 0 against a recorded "3"."""
    import pyoxigraph

    store = pyoxigraph.Store()
    for lexical, expected in DECIMALS.items():
        q = f'SELECT ?x WHERE {{ BIND("{lexical}"^^<{XSD}decimal> AS ?x) }}'
        assert next(iter(store.query(q)))["x"].value == expected  # the engine's own form
        g = tmp_path / "empty.ttl"
        g.write_text("")
        for engine in ("pyoxigraph", "rdflib"):
            got = RdfSource(engine, {"path": str(g), "engine": engine}).execute(q, timeout=60)
            assert got.rows == [(Term("literal", expected, XSD + "decimal"),)], (engine, lexical)
    avg = "SELECT (AVG(?x) AS ?a) WHERE { VALUES ?x { 2 4 } }"
    got = RdfSource("avg", {"path": str(g)}).execute(avg).rows[0][0]
    assert got == Term("literal", "3", XSD + "decimal")
    from pytest_queryeval.metrics import text2sparql
    from pytest_queryeval.results import ResultTable

    recorded = ResultTable(["a"], [(Term("literal", "3", XSD + "integer"),)])
    scores = text2sparql.question_metrics(text2sparql.answers_from_table(recorded),
                                          text2sparql.answers_from_table(
                                              ResultTable(["a"], [(got,)])), order_matters=False)
    assert scores["set_f1"] == 1.0  # the reference compares "3" with "3"
