"""The copy of a FalkorDB server's graph that the rehearsal (:mod:`.rehearsal`) runs
predictions on: read over Bolt from the user's server, written as Cypher into the plugin's
own FalkorDB.

Why read this way: the only door the plugin has to the user's server is its Bolt listener,
and that listener dies writing a date, a local time or date-time or a duration (4.16.3), at
any depth of a list. So no stored value is ever returned as it is: every property comes back
as ``[its type, a value the listener can write]`` (:func:`_safe`): a temporal value as its
text, a point as its two numbers, a list item by item, three lists deep. Anything deeper is
copied as a date: the copy then refuses a query that returns it, as the server's listener
would die on it.

The copy keeps what a query's cost depends on: the same nodes under the same ids (gaps in the
server's ids are filled and emptied again), their labels, the relationships with their types
and every property value. It is not where values are read: a prediction that the rehearsal
passes is run on the user's server, and its rows come from there.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from typing import Any

#: The nodes read per query: well under a server's ``RESULTSET_SIZE`` (docs/cypher.md).
PAGE = 10_000
#: How long one statement written to the copy may be (characters).
BATCH_CHARS = 200_000
#: How many list levels a property is copied through.
LIST_DEPTH = 3
_PRIMITIVE = "['String', 'Integer', 'Float', 'Boolean', 'Null']"
#: FalkorDB's names (``typeOf``) of what its Bolt listener cannot write, and the function
#: that builds each again from its text.
TEMPORAL = {"Date": "date", "Datetime": "localdatetime", "LocalDateTime": "localdatetime",
            "Time": "localtime", "LocalTime": "localtime", "Duration": "duration"}
#: What a list nested deeper than :data:`LIST_DEPTH` is copied as.
TOO_DEEP = "date('1970-01-01')"

Run = Callable[[str], Sequence[Sequence[Any]]]


def _safe(v: str, depth: int) -> str:
    """A Cypher expression of ``[type, value]`` for the value ``v`` that never holds a value
    the Bolt listener cannot write (it writes a vector as a list of floats). FalkorDB
    evaluates every branch of a ``CASE`` (a ``toString()`` of a list fails the query even
    where its branch is not taken), so each function is given ``v`` only where ``v`` is of
    its type, and ``null`` elsewhere."""
    temporal = "[" + ", ".join(f"'{t}'" for t in TEMPORAL) + "]"
    lists = "['List']"
    point = f"(CASE WHEN typeOf({v}) = 'Point' THEN {v} END)"
    walked = f"(CASE WHEN typeOf({v}) IN {lists} THEN {v} ELSE [] END)"
    inner = f"[x{depth} IN {walked} | {_safe(f'x{depth}', depth - 1)}]" if depth else "null"
    return (f"[typeOf({v}), CASE WHEN typeOf({v}) IN {_PRIMITIVE} THEN {v} "
            f"WHEN typeOf({v}) IN {temporal} "
            f"THEN toString(CASE WHEN typeOf({v}) IN {temporal} THEN {v} END) "
            f"WHEN typeOf({v}) = 'Point' THEN [{point}.latitude, {point}.longitude] "
            f"WHEN typeOf({v}) = 'Vectorf32' THEN {v} "
            f"WHEN typeOf({v}) IN {lists} THEN {inner} ELSE null END]")


def _properties(var: str) -> str:
    return f"[k IN keys({var}) | [k, {_safe(f'{var}[k]', LIST_DEPTH)}]]"


def export(run: Run) -> tuple[int, list[tuple[list[str], dict[str, str]] | None],
                              list[tuple[int, int, str, dict[str, str]]]]:
    """The server's graph: its highest node id, each id's labels and properties (``None`` for
    an id no node holds), and its relationships ``(from, to, type, properties)``; every
    property value already a Cypher literal (:func:`literal`)."""
    ((top,),) = run("MATCH (n) RETURN max(id(n))") or ((None,),)
    if top is None:
        return -1, [], []
    nodes: list[tuple[list[str], dict[str, str]] | None] = [None] * (int(top) + 1)
    edges: list[tuple[int, int, str, dict[str, str]]] = []
    for lo in range(0, int(top) + 1, PAGE):
        span = f"WHERE id(n) >= {lo} AND id(n) < {lo + PAGE}"
        for i, labels, props in run(f"MATCH (n) {span} RETURN id(n), labels(n), "
                                    f"{_properties('n')}"):
            nodes[int(i)] = ([str(x) for x in labels], _literals(props))
        edges.extend(_edges(run, span))
    return int(top), nodes, edges


def _edges(run: Run, span: str) -> Iterator[tuple[int, int, str, dict[str, str]]]:
    """The relationships from the nodes of ``span``, :data:`PAGE` at a time (a node may have
    more than a server's ``RESULTSET_SIZE``)."""
    skip = 0
    while True:
        rows = run(f"MATCH (n)-[e]->(m) {span} RETURN id(n), id(m), type(e), "
                   f"{_properties('e')} SKIP {skip} LIMIT {PAGE}")
        for a, b, kind, props in rows:
            yield int(a), int(b), str(kind), _literals(props)
        if len(rows) < PAGE:
            return
        skip += PAGE


def _literals(props: Sequence[Sequence[Any]]) -> dict[str, str]:
    return {str(k): literal(v, LIST_DEPTH) for k, v in props}


def literal(encoded: Any, depth: int) -> str:
    """The Cypher literal of one ``[type, value]`` that :func:`_safe` read."""
    kind, value = encoded
    if kind == "Null" or (value is None and kind not in ("List", "Vectorf32")):
        return "null"
    if kind == "String":
        return string(str(value))
    if kind == "Boolean":
        return "true" if value else "false"
    if kind == "Integer":
        return str(int(value))
    if kind == "Float":
        return _float(float(value))
    if kind in TEMPORAL:
        return f"{TEMPORAL[kind]}({string(str(value))})"
    if kind == "Point":
        lat, lon = value
        return f"point({{latitude: {_float(float(lat))}, longitude: {_float(float(lon))}}})"
    if kind == "Vectorf32":
        return "vecf32([" + ", ".join(_float(float(x)) for x in value) + "])"
    if kind == "List":
        if value is None:
            return TOO_DEEP
        return "[" + ", ".join(literal(x, depth - 1) for x in value) + "]"
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


def statements(top: int, nodes: list[tuple[list[str], dict[str, str]] | None],
               edges: list[tuple[int, int, str, dict[str, str]]]) -> Iterator[str]:
    """The statements that build the copy on an empty graph: every id up to ``top`` in order
    (a fresh graph gives ids in the order nodes are made), the gaps as placeholder nodes
    deleted at the end, then the relationships."""
    runs: list[tuple[tuple[str, ...], list[str]]] = []
    for node in nodes:
        labels = ("_queryeval_gap",) if node is None else tuple(node[0])
        props = "{}" if node is None else _map(node[1])
        if runs and runs[-1][0] == labels:
            runs[-1][1].append(props)
        else:
            runs.append((labels, [props]))
    for labels, maps in runs:
        head = "".join(f":{name(x)}" for x in labels)
        for batch in _batches(maps):
            yield f"UNWIND [{', '.join(batch)}] AS p CREATE (n{head}) SET n = p"
    by_type: dict[str, list[str]] = {}
    for a, b, kind, values in edges:
        by_type.setdefault(kind, []).append(f"[{a}, {b}, {_map(values)}]")
    for kind, rows in by_type.items():
        for batch in _batches(rows):
            yield (f"UNWIND [{', '.join(batch)}] AS r MATCH (a) WHERE id(a) = r[0] "
                   f"MATCH (b) WHERE id(b) = r[1] CREATE (a)-[e:{name(kind)}]->(b) SET e = r[2]")
    if any(node is None for node in nodes):
        yield "MATCH (n:_queryeval_gap) DELETE n"


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
