"""The fifteenth re-probe of the Cypher surface: what reached the pytest process's scoring.

N1: a union member's name is printed unquoted in the column's type text and is nowhere in
the value, so a crafted name rewrote the text and a map literal was marked a node; forged
nodes sharing an id then each took a big node's properties (2.9 GB from a 39 KB text). A
type text holding a union is unread now, and a node is its own properties.
N2: malformed graph values were internal errors; they are read as maps.
N3: a cached gold (an untrusted file) whose node properties held nodes cost 2^D; N3b:
malformed tags were internal errors. The codec takes an engine's shapes only (a miss else).
N4: an exhausted column-assignment search escaped the kind as an internal error.
"""

from __future__ import annotations

import shutil
from typing import Any

import pytest

from pytest_queryeval.cypher import cypherbench, graphtypes
from pytest_queryeval.results import GraphNode, GraphPath, GraphRelationship, ResultTable
from pytest_queryeval.sources.codec import CodecError, decode_table, encode_table
from tests.fixtures.bolt_server import GRAPH
from tests.support import run_report, write_suite

FORGED = "{_ID: 1, _LABEL: 'P', name: 'forged'}"
RELSHAPE = "{_SRC: 1, _DST: 1, _LABEL: 'R', _ID: 1}"


def _union(leaf: str, value: str) -> str:
    """The re-probe's forging: two member names whose text makes ``a`` read as ``leaf``."""
    return (f"RETURN union_value(`y STRUCT(a {leaf}, q` := {{a: {value}, "
            "q: union_value(`k INT64), r` := 1)}) AS u")



def _graph_values(v: Any) -> int:
    if isinstance(v, GraphNode | GraphRelationship | GraphPath):
        return 1 + sum(_graph_values(x) for x in v.values())
    if isinstance(v, dict):
        return sum(_graph_values(x) for x in v.values())
    if isinstance(v, list | tuple):  # a row is a tuple
        return sum(_graph_values(x) for x in v)
    return 0


@pytest.mark.parametrize(("leaf", "value"), [
    ("NODE", FORGED), ("REL", RELSHAPE),
    ("RECURSIVE_REL", f"{{_NODES: [{FORGED}], _RELS: []}}")])
def test_a_union_member_name_does_not_make_a_map_a_graph_value(ladybug, leaf, value):
    """N1: the crafted union's value holds no graph value (it was marked GraphNode,
    GraphRelationship, GraphPath before); a real node in a union column is unread too."""
    table = ladybug.execute(_union(leaf, value))
    assert _graph_values(table.rows[0]) == 0, table.rows[0]
    assert graphtypes.parse("UNION(y STRUCT(a NODE, q STRUCT(a STRUCT(_ID INT64), "
                            "q UNION(k INT64), r INT64)))") is None


def test_one_node_occurrence_never_takes_anothers_properties():
    """N1's amplification: R tiny nodes with a big node's id were each given its P
    properties (R * P values); each occurrence is its own properties now, and a
    relationship's end is one shared object whatever the number of relationships."""
    big = GraphNode({"_ID": 1, "_LABEL": "P", **{f"p{i}": i for i in range(500)}})
    tiny = [GraphNode({"_ID": 1, "_LABEL": "P"}) for _ in range(200)]
    rels = [GraphRelationship({"_SRC": 1, "_DST": 1, "_LABEL": "R"}) for _ in range(200)]
    view = cypherbench.neo4j_view(["n", "l", "r"], [(big, tiny, rels)])[0]
    assert sum(len(x) for x in view["l"]) == 0  # was 200 * 500
    assert len(view["n"]) == 500
    assert len({id(r[0]) for r in view["r"]}) == 1 and view["r"][0][0] == view["n"]
    assert str(view["r"][0]) == str((dict(view["n"]), "R", dict(view["n"])))
    rows = cypherbench.neo4j_view(["n", "r"], [(big, rels[0])])
    for gold_text in ("g", "g order by x"):  # the reference's own error, text for text
        assert cypherbench.score("p", gold_text, rows, rows) == (
            None, "TypeError: unhashable type: 'dict'")


MALFORMED = {
    "list-id": GraphNode({"_ID": [1], "_LABEL": "N"}),
    "list-src": GraphRelationship({"_SRC": [1], "_DST": 1, "_LABEL": "R"}),
    "int-path-nodes": GraphPath(_NODES=[1, 2], _RELS=[3]),
    "rel-without-label": GraphPath(_NODES=[GraphNode({"_ID": 1, "_LABEL": "N"}),
                                           GraphNode({"_ID": 2, "_LABEL": "N"})],
                                   _RELS=[GraphRelationship({"b": 1})]),
    "node-in-node": GraphNode({"_ID": 2, "_LABEL": "N",
                               "a": GraphNode({"_ID": 1, "_LABEL": "N"})}),
}


@pytest.mark.parametrize("name", list(MALFORMED))
def test_a_malformed_graph_value_is_read_as_a_map(name):
    """N2: each raised TypeError/AttributeError/KeyError in the view; now a plain map, and
    scored as one (0 against a real node's properties)."""
    value = MALFORMED[name]
    view = cypherbench.neo4j_view(["v"], [(value,)])
    assert type(view[0]["v"]) is dict  # a map (a path's view is a list, a rel's a tuple)
    if name in ("list-id", "list-src", "int-path-nodes"):
        assert view == [{"v": dict(value)}]
    gold = cypherbench.neo4j_view(["m"], [(GraphNode({"_ID": 9, "_LABEL": "M", "t": 1}),)])
    assert cypherbench.score("p", "g", gold, view) == (0.0, None)


def _dag_entry(depth: int) -> dict[str, Any]:
    """The re-probe's cache entry: node k's properties hold node k-1 twice."""
    table = ResultTable(["m"], [(GraphNode({"_ID": 0, "_LABEL": "N", "x": 1}),)])
    data = encode_table(table)
    cell: Any = data["rows"][0][0]  # type: ignore[index]
    for k in range(1, depth + 1):
        ref = {"$node": [["_ID", k - 1]]}
        cell = {"$node": [["_ID", k], ["_LABEL", "N"], ["a", ref], ["b", ref]]}
    data["rows"] = [[cell]]
    return data


@pytest.mark.parametrize("cell", [
    {"$node": [["_ID", 1], ["_LABEL", "N"], ["a", {"$node": [["_ID", 0]]}]]},
    {"$relationship": [["_LABEL", "R"], ["_DST", 1]]},
    {"$path": [["_NODES", {"$list": [1, 2]}], ["_RELS", {"$list": [3]}]]},
    {"$node": [["_ID", {"$list": [1]}], ["_LABEL", "N"]]},
    {"$path": [["_NODES", 5], ["_RELS", 6]]},
])
def test_a_malformed_cached_graph_value_is_a_miss(cell):
    """N3/N3b: decoding raises CodecError (the gold is executed again) where it gave a DAG
    of nodes or a value the view raised on."""
    data = encode_table(ResultTable(["m"], [(1,)]))
    data["rows"] = [[cell]]
    with pytest.raises(CodecError):
        decode_table(data)
    with pytest.raises(CodecError):
        decode_table(_dag_entry(20))


def test_a_poisoned_cypher_gold_cache_entry_is_executed_again(pytester):
    """N3 end to end: the entry of node k holding node k-1 twice (D=20: 71 s, 672 MB) is a
    miss, the gold runs again and the right prediction passes."""
    pytest.importorskip("ladybug")
    shutil.copyfile(GRAPH, pytester.path / "movies.cypher")
    gold = "MATCH (m:Movie) RETURN m LIMIT 1"
    write_suite(pytester.path,
                {"datasources": {"movies": {"type": "ladybug", "path": "movies.cypher"}}},
                {"test_movies.yaml": {"kind": "cypher", "datasource": "movies", "cases": [
                    {"id": "m", "gold": gold, "predicted": gold.replace(" ", "  ", 1)}]}})
    run_report(pytester)
    entries = list((pytester.path / ".pytest_cache").rglob("cypher-gold/*"))
    assert len(entries) == 1
    import json

    entries[0].write_text(json.dumps(_dag_entry(20)))
    _, report = run_report(pytester, fresh=True)
    assert report.outcomes == {"m": "passed"}
    assert report.by_id["m"]["details"]["gold_cached"] is False


def test_an_exhausted_column_assignment_fails_the_case_with_the_reason(pytester, monkeypatch):
    """N4: SearchBudgetExhausted from the table comparison was an internal ERROR; the case
    fails with the reason now (as SQL and SPARQL), a budget of 1 standing in for the
    re-probe's 20,160-row permutation tables."""
    pytest.importorskip("ladybug")
    import importlib

    # the module in sys.modules, which the inner run uses: ``from ... import _table_common``
    # can give a package attribute left by an earlier inner run, a module no longer in use
    _table_common = importlib.import_module("pytest_queryeval.metrics._table_common")
    monkeypatch.setattr(_table_common, "ASSIGNMENT_BUDGET", 1)
    shutil.copyfile(GRAPH, pytester.path / "movies.cypher")
    gold = "UNWIND range(1, 6) AS x RETURN x AS a, 7 - x AS b, x % 2 AS c"
    # a generous timeout: on a loaded machine the default one can end the query first
    write_suite(pytester.path,
                {"datasources": {"movies": {"type": "ladybug", "path": "movies.cypher",
                                            "timeout": 120}}},
                {"test_movies.yaml": {"kind": "cypher", "datasource": "movies", "cases": [
                    {"id": "swapped", "gold": gold,
                     "predicted": "UNWIND range(1, 6) AS x RETURN 7 - x AS b, x AS a, "
                                  "x % 2 AS c"}]}})
    _, report = run_report(pytester, "--queryeval-no-cache")
    assert report.outcomes == {"swapped": "failed"}, report.by_id
    assert str(report.by_id["swapped"]["reason"]).startswith("search budget exhausted"), \
        report.by_id["swapped"]
