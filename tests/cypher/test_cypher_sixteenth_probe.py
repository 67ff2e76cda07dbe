"""The sixteenth re-probe's F1 (HIGH): crafted struct field names (no union) balanced out in
the column's printed type, so that a struct holding no graph value was read where the value had
other keys, never checked, and a map literal was marked as a node (276 s of comparison in the
pytest process from a 341-byte text). A column is marked now only when every value of it has
the shape read at every level (``graphtypes.fits``). On the real movies graph."""

from __future__ import annotations

import pytest

from pytest_queryeval.cypher import graphtypes
from tests.cypher.test_cypher_fifteenth_probe import _graph_values
from tests.fixtures.bolt_server import GRAPH

FORGED = ("RETURN {d: {k1: {`z INT64), k2 NODE), e STRUCT(w STRUCT(v`: 1}, "
          "k2: {_ID: 1, _LABEL: 'P', `y STRUCT(x`: 1}}, e: {`q INT64), r`: 1}} AS t")
FORGED_REL = ("RETURN {d: {k1: {`z INT64), k2 REL[][]), e STRUCT(w STRUCT(v`: 1}, "
              "k2: [[{_SRC: 1, _DST: 2, _LABEL: 'T', `y STRUCT(x`: 1}]]}, "
              "e: {`q INT64), r`: 1}} AS t")



@pytest.mark.parametrize("query", [FORGED, FORGED_REL])
def test_struct_field_names_do_not_make_a_map_a_graph_value(ladybug, query):
    table = ladybug.execute(query)
    assert _graph_values(table.rows[0]) == 0, table.rows[0]


def test_real_nodes_in_structs_and_lists_are_still_marked(ladybug):
    table = ladybug.execute("MATCH (p:Person)-[r:ACTED_IN]->(m:Movie) "
                            "RETURN {who: p, films: [m], how: r} AS s LIMIT 2")
    assert [_graph_values(row) for row in table.rows] == [3, 3]


def test_a_value_of_another_shape_than_its_type_is_unread():
    tree = graphtypes.parse("STRUCT(a STRUCT(z INT64), b NODE)")
    assert graphtypes.fits([{"a": {"z": 1}, "b": {"_ID": 1, "_LABEL": "P"}}], tree)
    assert not graphtypes.fits([{"a": {"z INT64), b NODE": 1}, "b": {}}], tree)
    assert not graphtypes.fits([{"a": {"z": [1]}, "b": None}], tree)
    rows = [({"a": {"z": 1}, "b": {"_ID": 1, "_LABEL": "P"}},),
            ({"a": {"y": 1}, "b": {"_ID": 2, "_LABEL": "P"}},)]
    marked = graphtypes.mark_rows(rows, ["STRUCT(a STRUCT(z INT64), b NODE)"])
    assert _graph_values(marked) == 0  # one value that does not fit: the column is unread


@pytest.mark.parametrize("cell", [
    {"$term": [1]}, {"$timedelta": [1]}, {"$timedelta": [10**12, 0, 0]},
    None])
def test_a_malformed_cached_cell_is_a_miss(cell):
    """C1 (LOW): an IndexError or OverflowError of a cache cell was the case's internal
    error; it is a miss (the gold runs again)."""
    from pytest_queryeval.results import ResultTable
    from pytest_queryeval.sources.codec import CodecError, decode_table, encode_table

    if cell is None:  # a nesting past Python's recursion
        cell = 1
        for _ in range(5000):
            cell = {"$list": [cell]}
    data = encode_table(ResultTable(["m"], [(1,)]))
    data["rows"] = [[cell]]
    with pytest.raises(CodecError):
        decode_table(data)


def test_a_cache_file_nested_past_the_json_readers_recursion_is_a_miss(pytester):
    """C1 end to end: a cypher-gold entry of lists 100,000 deep made the JSON reader raise
    RecursionError, the case's internal error; the gold runs again and the case passes."""
    import shutil

    from tests.support import run_report, write_suite

    pytest.importorskip("ladybug")
    shutil.copyfile(GRAPH, pytester.path / "movies.cypher")
    gold = "MATCH (m:Movie) RETURN m.title LIMIT 1"
    write_suite(pytester.path,
                {"datasources": {"movies": {"type": "ladybug", "path": "movies.cypher"}}},
                {"test_movies.yaml": {"kind": "cypher", "datasource": "movies", "cases": [
                    {"id": "m", "gold": gold, "predicted": gold.replace(" ", "  ", 1)}]}})
    run_report(pytester)
    entries = list((pytester.path / ".pytest_cache").rglob("cypher-gold/*"))
    assert len(entries) == 1
    entries[0].write_text("[" * 100_000 + "]" * 100_000)
    _, report = run_report(pytester, fresh=True)
    assert report.outcomes == {"m": "passed"}, report.by_id
    assert report.by_id["m"]["details"]["gold_cached"] is False
