"""The seventeenth re-probe's F2 (HIGH): a struct level of a column's type that no value
reaches (a struct-typed null, the item type of an empty list, a null item of a list, the value
type of an empty map) had its crafted field names never compared with a value, so they
rebalanced the printed type text as the sixteenth re-probe's F1 did, and a map literal was
marked as a node on any graph (94 s of comparison in the pytest process). A column is read now
only when a value of it pins every struct level of its type (``graphtypes.fits``). On the real
movies graph."""

from __future__ import annotations

import pytest

from pytest_queryeval.cypher import graphtypes
from tests.cypher.test_cypher_fifteenth_probe import _graph_values

G = "g: {_ID: 1, _LABEL: 'P'}"
N1 = "x INT64), g NODE, h STRUCT(y STRUCT(z"
N3 = "w INT64), v"
#: The re-probe's reproducer: f and h are nulls of struct types whose names no value pins.
NULLS = (
    f"RETURN {{f: CASE WHEN false THEN {{`{N1}`: 1}} END, {G}, "
    f"h: CASE WHEN false THEN {{`{N3}`: 1}} END}} AS t"
)


def _empty(name: str) -> str:
    return f"list_filter([{{`{name}`: 1}}], x -> false)"


def _null_item(name: str) -> str:
    return f"list_transform([{{`{name}`: 1}}], x -> CASE WHEN false THEN x END)"


FORMS = {
    "null": NULLS,
    "empty list": (
        f"RETURN {{f: {_empty('x INT64)[], g NODE, h STRUCT(y STRUCT(z')}, {G}, "
        f"h: {_empty('w INT64)[], v')}}} AS t"
    ),
    "null in a list": (
        f"RETURN {{f: {_null_item('x INT64)[], g NODE, h STRUCT(y STRUCT(z')}, "
        f"{G}, h: {_null_item('w INT64)[], v')}}} AS t"
    ),
    "empty list in a list": (
        f"RETURN {{f: [{_empty('x INT64)[][], g NODE, h STRUCT(y STRUCT(z')}], {G}, "
        f"h: [{_empty('w INT64)[][], v')}]}} AS t"
    ),
    "nulls at two levels": (
        "RETURN {f: {k: CASE WHEN false THEN "
        "{`x INT64)), g NODE, h STRUCT(y STRUCT(z STRUCT(q`: 1} END}, "
        f"{G}, h: CASE WHEN false THEN {{`{N3}`: 1}} END}} AS t"
    ),
    "empty maps": (
        "RETURN {f: map(list_filter(['a'], x -> false), "
        f"{_empty('x INT64)), g NODE, h MAP(STRING, STRUCT(y STRUCT(z STRUCT(q')}), {G}, "
        f"h: map(list_filter(['a'], x -> false), {_empty('w INT64)), v')})}} AS t"
    ),
}


@pytest.mark.parametrize("query", list(FORMS.values()), ids=list(FORMS))
def test_names_no_value_pins_do_not_make_a_map_a_graph_value(ladybug, query):
    table = ladybug.execute(query)
    assert table.rows, table
    assert _graph_values(table.rows) == 0, table.rows


def test_the_forging_reads_a_node_where_nothing_pins_it():
    """The type text of :data:`NULLS` does parse with ``g`` a node: only the pinning keeps
    the map a map (so the test above is not passing by a parse that fails)."""
    text = (
        "STRUCT(f STRUCT(x INT64), g NODE, h STRUCT(y STRUCT(z INT64), "
        "g STRUCT(_ID INT64, _LABEL STRING), h STRUCT(w INT64), v INT64))"
    )
    tree = graphtypes.parse(text)
    assert tree is not None and tree[1][1] == ("g", "node")
    row = ({"f": None, "g": {"_ID": 1, "_LABEL": "P"}, "h": None},)
    assert not graphtypes.fits([row[0]], tree)
    assert _graph_values(graphtypes.mark_rows([row], [text])) == 0


def test_a_level_pinned_in_another_row_or_item_is_read():
    text = "STRUCT(a STRUCT(z INT64), b NODE)[]"
    node = {"_ID": 1, "_LABEL": "P"}
    rows = [([],), ([None, {"a": None, "b": node}],), ([{"a": {"z": 1}, "b": node}],)]
    assert _graph_values(graphtypes.mark_rows(rows, [text])) == 2
    assert _graph_values(graphtypes.mark_rows(rows[:2], [text])) == 0  # z's level: no value


def test_a_map_keyed_by_anything_but_a_scalar_is_unread():
    """A map's key type is in no value of it (ladybug cannot even hand over a struct-keyed
    map), so its names could never be pinned."""
    assert graphtypes.parse("MAP(STRUCT(a INT64), NODE)") is None
    assert graphtypes.parse("MAP(INT64[], NODE)") is None
    assert graphtypes.parse("MAP(STRING, NODE)") == ("map", "node")


@pytest.mark.parametrize(
    ("query", "count"),
    [
        ("MATCH (p:Person) RETURN p ORDER BY p.name LIMIT 2", 2),
        ("MATCH ()-[r:ACTED_IN]->() RETURN r LIMIT 2", 2),
        ("MATCH q = (:Person)-[:ACTED_IN]->(:Movie) RETURN q LIMIT 1", 4),  # a path, 2 nodes, 1 rel
        (
            "MATCH (p:Person)-[:ACTED_IN]->(m:Movie) RETURN p.name, collect(m) AS ms ORDER BY p.name LIMIT 1",
            None,
        ),
        ("MATCH (p:Person)-[r:ACTED_IN]->(m:Movie) RETURN {who: p, films: [m], how: r} AS s LIMIT 2", 6),
        (
            "MATCH (p:Person)-[r:ACTED_IN]->(m:Movie) "
            "RETURN {who: p, how: {role: r.role, films: [m]}} AS s LIMIT 2",
            4,
        ),
    ],
)
def test_honest_graph_values_are_still_marked(ladybug, query, count):
    table = ladybug.execute(query)
    assert table.rows
    if count is None:  # a list of nodes: one per film of the person
        count = len(table.rows[0][1])
    assert _graph_values(table.rows) == count, table.rows


def test_optional_match_nulls_of_node_type_keep_the_nodes(ladybug):
    table = ladybug.execute(
        "MATCH (p:Person) OPTIONAL MATCH (p)-[:DIRECTED]->(m:Movie) RETURN p, m ORDER BY p.name"
    )
    nulls = sum(row[1] is None for row in table.rows)
    assert nulls and nulls < len(table.rows)
    assert _graph_values(table.rows) == 2 * len(table.rows) - nulls


def test_an_honest_column_with_an_unpinned_level_fails_closed(ladybug):
    """The documented cost of the rule (docs/cypher.md): a struct level that is null in every
    row leaves the column unread even when its other values are real nodes."""
    table = ladybug.execute(
        "MATCH (p:Person) RETURN {who: p, how: CASE WHEN false THEN {x: 1} END} AS s LIMIT 1"
    )
    assert table.rows and _graph_values(table.rows) == 0
