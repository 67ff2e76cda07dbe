"""The copy of a FalkorDB server's graph that the rehearsal (:mod:`.rehearsal`) runs
predictions on: read over Bolt from the user's server, written as Cypher into the plugin's
own FalkorDB.

Why read this way: the only door the plugin has to the user's server is its Bolt listener,
and that listener dies writing a date, a local time or date-time or a duration (4.16.3), at
any depth of a list. So no stored value is ever returned as it is: every property comes back
as parts the listener can write (:func:`_safe`): a temporal value as its text, a point as its
two numbers, a list item by item, three lists deep. A property nested deeper fails the copy
(:class:`TooDeep`): any stand-in would be a difference between the copy and the server that a
prediction could choose its reply by (the ninth re-probe: a date stand-in, tested by
``typeOf``, let a date through to the server).

The copy keeps what a query's cost and reply depend on: the same nodes and relationships
under the same ids (gaps in the server's ids are filled and emptied again), their labels and
types, and every property value. It is not where values are read: a prediction that the rehearsal
passes is run on the user's server, and its rows come from there.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

#: The nodes read per query: well under a server's ``RESULTSET_SIZE`` (docs/cypher.md).
PAGE = 10_000
#: How long one statement written to the copy may be (characters).
BATCH_CHARS = 200_000
#: How many list levels a property is copied through.
LIST_DEPTH = 3
_PRIMITIVE = "['String', 'Integer', 'Float', 'Boolean']"
#: FalkorDB's names (``typeOf``) of what its Bolt listener cannot write, and the function
#: that builds each again from its text.
TEMPORAL = {"Date": "date", "Datetime": "localdatetime", "LocalDateTime": "localdatetime",
            "Time": "localtime", "LocalTime": "localtime", "Duration": "duration"}


class TooDeep(ValueError):
    """A value the copy cannot read or hold as it is: the copy is then not made at all (any
    stand-in would be a difference a prediction could pick its reply by)."""

Run = Callable[[str], Sequence[Sequence[Any]]]


def _safe(v: str, depth: int) -> str:
    """A Cypher expression of ``[type, primitive, temporal text, [latitude, longitude],
    vector, items]`` for the value ``v``, each part ``null`` but the one of ``v``'s type: it
    never holds a value the Bolt listener cannot write (it writes a vector as a list of
    floats). FalkorDB evaluates every branch of a ``CASE`` (a ``toString()`` of a list fails
    the query even where its branch is not taken), so each function is given ``v`` only
    where ``v`` is of its type; and its parser takes time exponential in how deep a query
    nests (this form at 3 lists deep: 0.08 s; with a ``CASE`` around each level, 1.3 s)."""
    temporal = "[" + ", ".join(f"'{t}'" for t in TEMPORAL) + "]"
    items = (f"[x{depth} IN CASE WHEN typeOf({v}) = 'List' THEN {v} ELSE [] END | "
             f"{_safe(f'x{depth}', depth - 1)}]") if depth else "null"
    point = f"CASE WHEN typeOf({v}) = 'Point' THEN {v} END"
    return (f"[typeOf({v}), CASE WHEN typeOf({v}) IN {_PRIMITIVE} THEN {v} END, "
            f"toString(CASE WHEN typeOf({v}) IN {temporal} THEN {v} END), "
            f"[{point}.latitude, {point}.longitude], "
            f"CASE WHEN typeOf({v}) = 'Vectorf32' THEN {v} END, {items}]")


def _properties(var: str) -> str:
    return f"[k IN keys({var}) | [k, {_safe(f'{var}[k]', LIST_DEPTH)}]]"


Node = tuple[list[str], dict[str, str]]
Edge = tuple[int, int, str, dict[str, str]]


@dataclass
class Graph:
    """What :func:`export` read: each node id's labels and properties and each relationship
    id's ends, type and properties (``None`` for an id nothing holds); every property value
    already a Cypher literal (:func:`literal`)."""

    nodes: list[Node | None] = field(default_factory=list)
    edges: list[Edge | None] = field(default_factory=list)
    #: The statements that make the server's indexes again (:func:`_indexes`).
    indexes: list[str] = field(default_factory=list)


def export(run: Run) -> Graph:
    """The server's graph, :data:`PAGE` nodes at a time."""
    graph = Graph()
    ((top,),) = run("MATCH (n) RETURN max(id(n))") or ((None,),)
    if top is None:
        return graph
    graph.nodes = [None] * (int(top) + 1)
    found: dict[int, Edge] = {}
    for lo in range(0, int(top) + 1, PAGE):
        span = f"WHERE id(n) >= {lo} AND id(n) < {lo + PAGE}"
        _check_weight(run, f"MATCH (n) {span}", "n", "node")
        _check_weight(run, f"MATCH (n)-[e]->() {span}", "e", "relationship")
        for i, labels, props in run(f"MATCH (n) {span} RETURN id(n), labels(n), "
                                    f"{_properties('n')}"):
            graph.nodes[int(i)] = ([str(x) for x in labels], _literals(props, f"node {i}"))
        found.update(_edges(run, span))
    graph.edges = [None] * (max(found) + 1 if found else 0)
    for i, edge in found.items():
        graph.edges[i] = edge
    graph.indexes = list(_indexes(run))
    return graph


def _indexes(run: Run) -> Iterator[str]:
    """The server's range, full-text and vector indexes, made again on the copy: a
    prediction that queries one (``db.idx.fulltext.queryNodes``) must find it, and an index
    changes what a query costs. One the copy cannot make is left out (:func:`optional`)."""
    try:
        rows = run("CALL db.indexes() YIELD label, types, options, entitytype "
                   "RETURN label, types, options, entitytype")
    except Exception:  # a server without db.indexes(): a copy without indexes
        return
    for label, types, options, entity in rows:
        node = str(entity).upper() != "RELATIONSHIP"
        target = f"(n:{name(str(label))})" if node else f"()-[n:{name(str(label))}]-()"
        for prop, kinds in dict(types or {}).items():
            for kind in kinds or ():
                head = {"RANGE": "INDEX", "FULLTEXT": "FULLTEXT INDEX",
                        "VECTOR": "VECTOR INDEX"}.get(str(kind).upper())
                if head is None:
                    continue
                opts = ""
                if head == "VECTOR INDEX":
                    given = dict(dict(options or {}).get(prop) or {})
                    opts = " OPTIONS {" + ", ".join(
                        f"{name(str(k))}: {string(v) if isinstance(v, str) else _number(v)}"
                        for k, v in given.items()) + "}"
                yield f"CREATE {head} FOR {target} ON (n.{name(str(prop))}){opts}"


def _number(v: Any) -> str:
    return _float(v) if isinstance(v, float) else str(int(v))


def optional(statement: str) -> bool:
    """Whether the copy is whole without ``statement`` (an index)."""
    return statement.startswith("CREATE ") and " INDEX FOR " in statement[:30]


#: The most a node's or a relationship's properties may weigh (:func:`_weight`) to be read
#: in one Bolt message (65,535 bytes, with the reading's own parts around each value).
MAX_WEIGHT = 48_000


def _weight(var: str) -> str:
    """A Cypher estimate of the bytes ``var``'s properties take in the copy's reading: each
    value's parts, three bytes a character of its strings, a list's items three levels down
    (a deeper list fails the copy anyway, :func:`_safe`). The tenth re-probe's ``[range(1,
    5000)]`` (a list of one list) weighed 115 counted one level down, and the reading then
    met the listener's cut message and ran out its deadline."""
    def text(v: str) -> str:
        return f"coalesce(3 * size(CASE WHEN typeOf({v}) = 'String' THEN {v} END), 0)"

    def items(v: str, level: int) -> str:
        x = f"x{level}"
        inner = f" + {items(x, level + 1)}" if level < 3 else ""
        return (f"reduce(t{level} = 0, {x} IN CASE WHEN typeOf({v}) = 'List' THEN {v} "
                f"ELSE [] END | t{level} + 48 + {text(x)}{inner})")

    return (f"reduce(s = 0, k IN keys({var}) | s + 64 + 3 * size(k) + "
            f"{text(f'{var}[k]')} + {items(f'{var}[k]', 1)})")


def _check_weight(run: Run, match: str, var: str, what: str) -> None:
    """Fail the copy at a node or relationship whose properties one Bolt message cannot
    carry intact: FalkorDB's listener (4.16.3) cuts a longer message's size to 16 bits, and
    the driver then waits for bytes that never come."""
    rows = run(f"{match} WITH {var}, {_weight(var)} AS w WHERE w > {MAX_WEIGHT} "
               f"RETURN id({var}), w LIMIT 1")
    for i, weight in rows:
        raise TooDeep(f"{what} {i}'s properties take about {int(weight):,} bytes, more than "
                      "one Bolt message a FalkorDB server's listener sends intact (64 KiB) "
                      "can carry: the copy a prediction is rehearsed on cannot be read")


def _edges(run: Run, span: str) -> Iterator[tuple[int, Edge]]:
    """The relationships from the nodes of ``span`` by id, :data:`PAGE` at a time (a node may
    have more than a server's ``RESULTSET_SIZE``)."""
    skip = 0
    while True:
        rows = run(f"MATCH (n)-[e]->(m) {span} RETURN id(e), id(n), id(m), type(e), "
                   f"{_properties('e')} SKIP {skip} LIMIT {PAGE}")
        for i, a, b, kind, props in rows:
            yield int(i), (int(a), int(b), str(kind), _literals(props, f"relationship {i}"))
        if len(rows) < PAGE:
            return
        skip += PAGE


def _literals(props: Sequence[Sequence[Any]], what: str) -> dict[str, str]:
    out = {}
    for key, value in props:
        try:
            out[str(key)] = literal(value, LIST_DEPTH)
        except TooDeep as exc:
            raise TooDeep(f"{what}'s property {key!r} holds {exc}, which the copy a "
                          "prediction is rehearsed on cannot hold") from None
    return out


def literal(encoded: Any, depth: int) -> str:
    """The Cypher literal of one value that :func:`_safe` read."""
    kind, value, text, (lat, lon), vector, items = encoded
    if kind == "String":
        return string(str(value))
    if kind == "Boolean":
        return "true" if value else "false"
    if kind == "Integer":
        return str(int(value))
    if kind == "Float":
        return _float(float(value))
    if kind in TEMPORAL and text is not None:
        return f"{TEMPORAL[kind]}({string(str(text))})"
    if kind == "Point":
        return f"point({{latitude: {_float(float(lat))}, longitude: {_float(float(lon))}}})"
    if kind == "Vectorf32":
        return "vecf32([" + ", ".join(_float(float(x)) for x in vector) + "])"
    if kind == "List":
        if items is None:
            raise TooDeep(f"a list nested more than {LIST_DEPTH} deep")
        return "[" + ", ".join(literal(x, depth - 1) for x in items) + "]"
    return "null"


def _float(x: float) -> str:
    if math.isnan(x):
        return "(0.0 / 0.0)"
    if math.isinf(x):
        return "(1.0 / 0.0)" if x > 0 else "(-1.0 / 0.0)"
    return repr(x)


def string(text: str) -> str:
    """A single-quoted Cypher string literal FalkorDB reads back as ``text``."""
    body = (text.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n")
            .replace("\r", "\\r").replace("\t", "\\t"))
    return f"'{body}'"


def name(text: str) -> str:
    """A backquoted label, type or key."""
    return "`" + text.replace("`", "``") + "`"


def _map(props: dict[str, str]) -> str:
    return "{" + ", ".join(f"{name(k)}: {v}" for k, v in props.items()) + "}"


def statements(graph: Graph) -> Iterator[str]:
    """The statements that build the copy on an empty graph under the server's ids: a fresh
    graph gives ids in the order things are made, so nodes are made in id order, then the
    relationships; a gap in the ids is filled by a node with no label (a relationship gap by
    a loop of a type the graph has, on one more node) and deleted by id at the end, leaving
    no name behind. Why the ids: a prediction that picks a node or a relationship by its id
    must meet on the copy what it meets on the server."""
    yield from _runs((() if node is None else tuple(node[0]),
                      "{}" if node is None else _map(node[1])) for node in graph.nodes)
    gap_nodes = [i for i, node in enumerate(graph.nodes) if node is None]
    gap_edges = [i for i, edge in enumerate(graph.edges) if edge is None]
    anchor = len(graph.nodes)
    if gap_edges:
        yield "CREATE ()"
        gap_nodes.append(anchor)
    some = next((e[2] for e in graph.edges if e is not None), "")
    edge_runs: list[tuple[str, list[str]]] = []
    for edge in graph.edges:
        a, b, kind, values = (anchor, anchor, some, {}) if edge is None else edge
        row = f"[{a}, {b}, {_map(values)}]"
        if edge_runs and edge_runs[-1][0] == kind:
            edge_runs[-1][1].append(row)
        else:
            edge_runs.append((kind, [row]))
    for kind, rows in edge_runs:
        for batch in _batches(rows):
            yield (f"UNWIND [{', '.join(batch)}] AS r MATCH (a) WHERE id(a) = r[0] "
                   f"MATCH (b) WHERE id(b) = r[1] CREATE (a)-[e:{name(kind)}]->(b) SET e = r[2]")
    for batch in _batches([str(i) for i in gap_edges]):
        yield f"MATCH ()-[e]->() WHERE id(e) IN [{', '.join(batch)}] DELETE e"
    for batch in _batches([str(i) for i in gap_nodes]):
        yield f"MATCH (n) WHERE id(n) IN [{', '.join(batch)}] DELETE n"
    yield from graph.indexes


def _runs(nodes: Iterable[tuple[tuple[str, ...], str]]) -> Iterator[str]:
    """Nodes in order, one statement per run of one label set (labels cannot be given as
    values)."""
    runs: list[tuple[tuple[str, ...], list[str]]] = []
    for labels, props in nodes:
        if runs and runs[-1][0] == labels:
            runs[-1][1].append(props)
        else:
            runs.append((labels, [props]))
    for labels, maps in runs:
        head = "".join(f":{name(x)}" for x in labels)
        for batch in _batches(maps):
            yield f"UNWIND [{', '.join(batch)}] AS p CREATE (n{head}) SET n = p"


def _batches(items: list[str]) -> Iterator[list[str]]:
    batch: list[str] = []
    size = 0
    for item in items:
        if batch and size + len(item) > BATCH_CHARS:
            yield batch
            batch, size = [], 0
        batch.append(item)
        size += len(item) + 2
    if batch:
        yield batch
