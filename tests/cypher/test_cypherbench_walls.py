"""``cypherbench_ex`` scores in the pytest process, after every deadline and outside the
worker's ``max_values``: what it does with a prediction's values must stay in proportion to
them (the fourteenth re-probe).

H4/H3: a map a query built with the keys ladybug gives a node (``_ID``, ``_LABEL``) or a
relationship (``_SRC``, ``_LABEL``, ``_DST``) was read as one, and its "ends" expanded into
node properties: 4^D copies for a chain of depth D, a RecursionError for a map naming
itself, TypeError/KeyError/AttributeError for ids that are lists. Only the engine's own values
are graph values now (marked by the column's type in the worker, by the driver's class over
Bolt); a map is a map, as the neo4j driver gives it to the reference.

H1: the column permutations of an 11-column gold were tried one by one (11!, 24 s of the
pytest process for one case of two rows); now only assignments of predicted columns holding
the same values, and a bounded search where several columns hold the same bag.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable
from types import FrameType
from typing import Any

import pytest

from pytest_queryeval.cypher import cypherbench
from tests.fixtures.bolt_server import GRAPH
from tests.support import run_report, write_suite

MATRIX = "MATCH (p:Person)-[:ACTED_IN]->(:Movie {title: 'The Matrix'}) RETURN p.name"
SELF = "RETURN {_ID: 1, _LABEL: 'N', p0: {_SRC: 1, _LABEL: 'R', _DST: 1}} AS n"
SHAPES = {
    "list-id": "RETURN {_ID: [1], _LABEL: 'N'} AS n",
    "rel-list-ends": "RETURN {_SRC: [1], _LABEL: 'R', _DST: [1]} AS r",
    "path-of-numbers": "RETURN {_NODES: [1, 2], _RELS: [3]} AS p",
    "path-of-maps": "RETURN {_NODES: [{a: 1}, {a: 2}], _RELS: [{b: 1}]} AS p",
}


def _dag(depth: int) -> str:
    """The re-probe's chain: map k holds two "relationships" to map k-1 (4^depth copies)."""
    cols = ["{_ID: 0, _LABEL: 'N', x: 1} AS n0"]
    for k in range(1, depth + 1):
        rel = f"{{_SRC: {k - 1}, _LABEL: 'R', _DST: {k - 1}}}"
        cols.append(f"{{_ID: {k}, _LABEL: 'N', a: {rel}, b: {rel}}} AS n{k}")
    return "RETURN " + ", ".join(cols)


class _Calls:
    """Python calls into cypherbench.py, counted (``sys.setprofile``); past ``limit`` the
    count raises, so a search that would run for minutes stops at once."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.count = 0
        self.names: dict[str, int] = {}

    def __call__(self, frame: FrameType, event: str, arg: Any) -> None:
        if event == "call" and frame.f_code.co_filename == cypherbench.__file__:
            self.count += 1
            name = frame.f_code.co_name
            self.names[name] = self.names.get(name, 0) + 1
            if self.count > self.limit:
                raise RuntimeError(f"more than {self.limit} calls into cypherbench.py")

    def run(self, func: Callable[[], Any]) -> Any:
        sys.setprofile(self)
        try:
            return func()
        finally:
            sys.setprofile(None)



# -- H4/H3: a map is a map -------------------------------------------------------------------

def test_maps_shaped_like_graph_values_are_scored_as_maps_not_errors(pytester):
    """Each crafted map is a wrong prediction: it fails with cypherbench_ex 0, no error; the
    map against a map of other "ids" scores 0 as the reference scores two different maps
    (read as nodes, both were ``{x: 2}``); a real node still scores as its properties."""
    pytest.importorskip("ladybug")
    shutil.copyfile(GRAPH, pytester.path / "movies.cypher")
    node = "MATCH (m:Movie {title: 'The Matrix'}) RETURN m"
    cases = [{"id": "self", "gold": MATRIX, "predicted": SELF},
             {"id": "dag", "gold": MATRIX, "predicted": _dag(10)},
             *({"id": k, "gold": MATRIX, "predicted": v} for k, v in SHAPES.items()),
             {"id": "map-ids", "gold": "RETURN {_ID: 1, _LABEL: 'N', x: 2} AS n",
              "predicted": "RETURN {_ID: 2, _LABEL: 'M', x: 2} AS n"},
             {"id": "node", "gold": node,
              "predicted": "MATCH (m:Movie) WHERE m.title = 'The Matrix' RETURN m"}]
    write_suite(pytester.path,
                {"datasources": {"movies": {"type": "ladybug", "path": "movies.cypher"}}},
                {"test_movies.yaml": {"kind": "cypher", "datasource": "movies",
                                      "cases": cases}})
    _, report = run_report(pytester, "--queryeval-no-cache")
    wrong = ["self", "dag", *SHAPES, "map-ids"]
    assert report.outcomes == {**dict.fromkeys(wrong, "failed"), "node": "passed"}
    for case_id in wrong:
        assert report.by_id[case_id]["metrics"]["cypherbench_ex"] == 0.0, case_id
    assert report.by_id["node"]["metrics"]["cypherbench_ex"] == 1.0


def test_a_chain_of_maps_is_viewed_as_the_maps_it_is(ladybug):
    """The depth-10 chain (4^10 copies of the first map before): the view is the rows as
    they came, and building it calls cypherbench.py about once a value."""
    from pytest_queryeval.results import GraphNode

    table = ladybug.execute(_dag(10))
    assert not any(isinstance(v, GraphNode) for v in table.rows[0])
    calls = _Calls(limit=2_000)
    view = calls.run(lambda: cypherbench.neo4j_view(table.columns, table.rows))
    assert view == [dict(zip(table.columns, table.rows[0], strict=True))]
    assert calls.count < 400, calls.names  # ~114 values, each reached by _learn and _value
    assert cypherbench.score("p", "g", view, view) == (1.0, None)
    assert cypherbench.score(SELF, MATRIX, view, cypherbench.neo4j_view(
        *_cols_rows(ladybug.execute(SELF)))) == (0.0, None)


def _cols_rows(table: Any) -> tuple[list[str], list[tuple[Any, ...]]]:
    return table.columns, table.rows


def test_the_engines_nodes_and_relationships_are_marked_where_the_result_is_made(ladybug):
    """Nodes in lists and maps, relationships, paths: marked by the column's type; a node's
    properties as a relationship's end are one object every relationship ending there shares (R relationships to a
    node of P properties cost R, not R * P)."""
    from pytest_queryeval.results import GraphNode, GraphRelationship

    table = ladybug.execute(
        "MATCH p = (a:Person)-[r:ACTED_IN]->(m:Movie {title: 'The Matrix'}) "
        "RETURN m, collect(r) AS rs, {who: a, how: [r]} AS s, p LIMIT 1")
    m, rs, s, p = table.rows[0]
    assert type(m) is GraphNode and type(s) is dict and type(s["who"]) is GraphNode
    assert all(type(r) is GraphRelationship for r in [*rs, *s["how"]])
    assert type(p).__name__ == "GraphPath"
    view = cypherbench.neo4j_view(table.columns, table.rows)[0]
    assert view["m"]["title"] == "The Matrix"
    ends = {id(r[2]) for r in view["rs"]}  # one dict for the node as every rel's end
    assert len(ends) == 1 and view["rs"][0][2] == view["m"]


def test_over_bolt_a_map_is_a_map_and_a_node_a_node(bolt_server):
    """A FalkorDB suite is read on the plugin's copy, whose host process sends JSON: the
    driver's classes survive it (every mapping wrapped), and a map stays a map."""
    from pytest_queryeval.cypher.bolt import BoltSource
    from pytest_queryeval.results import GraphNode

    bolt_server.unstick()
    src = BoltSource.from_spec("graph", {"type": "bolt", "url": bolt_server.url, "timeout": 10})
    try:
        crafted = src.execute(SELF)
        real = src.execute("MATCH (m:Movie {title: 'The Matrix'}) RETURN m, {m: m} AS s")
    finally:
        src.close()
        bolt_server.unstick()
    (n,) = crafted.rows[0]
    assert type(n) is dict and type(n["p0"]) is dict
    assert cypherbench.neo4j_view(crafted.columns, crafted.rows) == [{"n": n}]
    m, s = real.rows[0]
    assert type(m) is GraphNode and type(s) is dict and type(s["m"]) is GraphNode
    assert cypherbench.neo4j_view(real.columns, real.rows)[0]["m"]["title"] == "The Matrix"


def test_a_cached_gold_keeps_its_graph_values():
    """The gold cache's codec keeps the class (a cached node scored as a map would differ)."""
    from pytest_queryeval.results import GraphNode, GraphPath, GraphRelationship, ResultTable
    from pytest_queryeval.sources.codec import decode_table, encode_table

    node = GraphNode({"_ID": {"offset": 0, "table": 0}, "_LABEL": "N", "x": 1})
    rel = GraphRelationship({"_SRC": {"offset": 0, "table": 0}, "_DST": {}, "_LABEL": "R"})
    path = GraphPath(_NODES=[node], _RELS=[])
    table = ResultTable(["n", "r", "p", "m"], [(node, rel, path, {"_ID": 1, "_LABEL": "N"})])
    back = decode_table(encode_table(table)).rows[0]
    assert [type(v) for v in back] == [GraphNode, GraphRelationship, GraphPath, dict]
    assert back == table.rows[0] and type(back[2]["_NODES"][0]) is GraphNode


# -- H1: column permutations -----------------------------------------------------------------

def _rows(width: int) -> tuple[list[dict[str, int]], list[dict[str, int]]]:
    """The re-probe's pair: two rows, the prediction's first rotated by one column."""
    cols = [f"c{i}" for i in range(width)]
    g1, g2 = tuple(range(width)), tuple(range(100, 100 + width))
    gold = [dict(zip(cols, g1, strict=True)), dict(zip(cols, g2, strict=True))]
    pred = [dict(zip(cols, g1[1:] + g1[:1], strict=True)), dict(zip(cols, g2, strict=True))]
    return gold, pred


@pytest.mark.parametrize("width", [11, 14])
def test_a_wide_gold_is_decided_without_trying_its_permutations(width):
    gold, pred = _rows(width)
    calls = _Calls(limit=5_000)
    assert calls.run(lambda: cypherbench.score("p", "g", gold, pred)) == (0.0, None)
    assert calls.names.get("_extend", 0) == 0  # no column has a twin: nothing to search
    # the same rows, columns permuted: found, in order too
    perm = [dict(zip(r, reversed(r.values()), strict=True)) for r in gold]
    assert calls.run(lambda: cypherbench.score("p", "g", gold, perm)) == (1.0, None)
    assert calls.run(lambda: cypherbench.score("p", "g ORDER BY x", gold, perm)) == (1.0, None)


def test_columns_holding_the_same_bag_are_searched_and_past_the_bound_not_decided(
        monkeypatch):
    """Columns sharing a bag of values: the search finds the permutation where there is one,
    says no where there is none, and past MAX_SEARCH_CELLS scores None with the reason (as
    where the reference raises) after a bounded number of assignments."""
    width = 8
    square = [tuple((r + c) % width for c in range(width)) for r in range(width)]
    gold = [dict(zip(map(str, range(width)), row, strict=True)) for row in square]
    shifted = [dict(zip(map(str, range(width)), row[3:] + row[:3], strict=True))
               for row in square]
    calls = _Calls(limit=100_000)
    assert calls.run(lambda: cypherbench.score("p", "g", gold, shifted)) == (1.0, None)
    # every column the same bag of 0s and 1s, each row's cells the gold's: no permutation
    g4 = [(0, 1, 0, 1), (1, 0, 0, 0), (1, 1, 1, 1), (0, 0, 1, 0), (0, 1, 1, 0), (1, 0, 0, 1)]
    p4 = [(1, 0, 1, 0), (0, 0, 0, 1), (1, 1, 1, 1), (0, 1, 0, 0), (0, 1, 0, 1), (1, 0, 1, 0)]
    calls = _Calls(limit=100_000)
    ex = calls.run(lambda: cypherbench.score("p", "g", *(
        [dict(zip("abcd", r, strict=True)) for r in t] for t in (g4, p4))))
    assert ex == (0.0, None) and calls.names["_extend"] <= 4 * 3 * 2
    monkeypatch.setattr(cypherbench, "MAX_SEARCH_CELLS", 5 * width)
    calls = _Calls(limit=100_000)
    ex, why = calls.run(lambda: cypherbench.score("p", "g", gold, shifted))
    assert ex is None and "passed 40 row cells" in str(why)
    assert calls.names["_extend"] <= 5
