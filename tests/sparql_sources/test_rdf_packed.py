"""RDF results cross the worker's pipe in the column form (sources/packed.py): the rows a
worker returns are the rows the same engine returns in process, term for term."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from pytest_queryeval.results import Term
from pytest_queryeval.sources.packed import PackedRows
from pytest_queryeval.sources.rdf import RdfSource, _query, clear_registry

QUERY = """SELECT ?s ?p ?o ?label WHERE { ?s ?p ?o
  OPTIONAL { ?s <http://www.w3.org/2000/01/rdf-schema#label> ?label } }"""


def test_worker_rows_equal_the_in_process_rows(soda: Path) -> None:
    here = RdfSource("here", {"path": str(soda), "isolation": "thread"})
    there = RdfSource("there", {"path": str(soda)})
    other = RdfSource("other", {"path": str(soda), "engine": "rdflib"})
    try:
        expected = here.execute(QUERY, timeout=60)
        got = there.execute(QUERY, timeout=60)
        by_rdflib = other.execute(QUERY, timeout=120)
        assert len(expected) == 3_774
        assert any(c is None for row in expected.rows for c in row)  # unbound labels
        assert {c.type for row in expected.rows for c in row if c is not None} >= {"uri",
                                                                                  "literal"}
        for table in (got, by_rdflib):
            assert table.columns == expected.columns == ["s", "p", "o", "label"]
            assert all(c is None or type(c) is Term for row in table.rows for c in row)
            assert Counter(table.rows) == Counter(expected.rows)
        ask = there.execute("ASK { ?s ?p ?o }", timeout=60)
        assert (ask.columns, ask.rows) == (["boolean"], [(True,)])
    finally:
        for src in (here, there, other):
            src.close()
        clear_registry()


def test_the_worker_reply_is_packed(soda: Path) -> None:
    """What ``_query`` hands the pipe: the column form, not a Term per cell."""
    from pytest_queryeval._isolation.sandbox import worker_state
    from pytest_queryeval.sources.rdf import _GRAPH, _load_pyoxigraph

    store = _load_pyoxigraph(soda, "TURTLE", False, None)
    worker_state()[_GRAPH] = ("pyoxigraph", store.store, None)
    try:
        columns, rows, truncated = _query(QUERY, 10)
    finally:
        del worker_state()[_GRAPH]
    assert columns == ["s", "p", "o", "label"] and truncated
    assert isinstance(rows, PackedRows) and rows.kind == "terms"


def test_a_term_keeps_no_hash_across_processes(tmp_path: Path) -> None:
    """Term caches its hash; a pickle must rebuild it (str hashes differ per process)."""
    import os
    import pickle
    import subprocess
    import sys

    term = Term("literal", "3", "http://www.w3.org/2001/XMLSchema#integer")
    blob = tmp_path / "term.pickle"
    blob.write_bytes(pickle.dumps({term: 1}))
    code = ("import pickle, sys; from pytest_queryeval.results import Term; "
            "d = pickle.loads(open(sys.argv[1], 'rb').read()); "
            "print(d.get(Term('literal', '3', 'http://www.w3.org/2001/XMLSchema#integer')))")
    for seed in ("1", "2"):
        done = subprocess.run([sys.executable, "-c", code, str(blob)], capture_output=True,
                              text=True, env={**os.environ, "PYTHONHASHSEED": seed},
                              check=True)
        assert done.stdout.strip() == "1"


def test_max_bytes_counts_every_cell_not_the_packed_reply(tmp_path: Path) -> None:
    """A result of many equal terms packs small (each distinct term once) but fills the
    parent's memory as rows: the worker caps what ``isolation: thread`` caps, the terms'
    text and 8 bytes a cell (_terms_bytes), not the size of its reply."""
    from pytest_queryeval.sources.rdf import _terms_bytes

    graph = tmp_path / "g.nt"
    long = "v" * 200
    graph.write_text("".join(f'<http://e/s{i}> <http://e/p> "{long}" .\n'
                             for i in range(2000)))
    query = "SELECT ?o WHERE { ?s <http://e/p> ?o }"
    full = RdfSource("full", {"path": str(graph), "isolation": "thread"}).execute(query)
    size = _terms_bytes(full.rows)
    assert len(full) == 2000 and size == 2000 * (200 + 8)
    try:
        for spec in ({"isolation": "thread"}, {}, {"engine": "rdflib"}):
            capped = RdfSource("capped", {"path": str(graph), "max_bytes": size - 1, **spec})
            fits = RdfSource("fits", {"path": str(graph), "max_bytes": size, **spec})
            try:
                cut = capped.execute(query, timeout=60)
                assert cut.truncated and cut.rows == [] and cut.meta["max_bytes"] == size - 1
                assert Counter(fits.execute(query, timeout=60).rows) == Counter(full.rows)
            finally:
                capped.close()
                fits.close()
    finally:
        clear_registry()
