"""Values as the ``neo4j`` driver gives them, in the one form the kind compares: what
:class:`.bolt.BoltSource` returns from a server and the copy's host process
(:mod:`.copyhost`) returns from the copy of a FalkorDB graph.

Why a module of its own: the host process imports it without the source (and the source's
rehearsal, which starts that process).
"""

from __future__ import annotations

import importlib
from typing import Any

from ..results import GraphNode, GraphPath, GraphRelationship

#: How :func:`wire` marks each mapping: a plain map, or the driver's node, relationship, path.
_WIRE: dict[str, type[dict[str, Any]]] = {
    "m": dict, "n": GraphNode, "r": GraphRelationship, "p": GraphPath}


def graph_types() -> tuple[type, type, type]:
    """The driver's graph classes, looked up on each result (not cached: pytester's inline
    runs import the driver anew, and a class kept from an earlier import matches nothing)."""
    graph = importlib.import_module("neo4j.graph")
    return graph.Node, graph.Relationship, graph.Path


def value(v: Any, types: tuple[type, type, type]) -> Any:
    """A driver value as the ladybug source gives it: a node the mapping of ``_ID``,
    ``_LABEL`` and its properties; a relationship with ``_SRC`` and ``_DST`` too; a path
    ``{"_NODES": [...], "_RELS": [...]}``; temporal values as Python's, a duration the
    driver's. Why: the kind's
    comparisons and :func:`.cypherbench.neo4j_view` read that one form, so a suite scores the
    same on either source."""
    node_type, relationship_type, path_type = types
    if isinstance(v, node_type):
        return _node(v, types)
    if isinstance(v, relationship_type):
        return _relationship(v, types)
    if isinstance(v, path_type):
        path: Any = v
        return GraphPath(_NODES=[_node(n, types) for n in path.nodes],
                         _RELS=[_relationship(r, types) for r in path.relationships])
    if isinstance(v, list):
        return [value(x, types) for x in v]
    if isinstance(v, dict):
        return {str(k): value(x, types) for k, x in v.items()}
    if v is None or isinstance(v, bool | int | float | str | bytes):
        return v
    return _temporal(v)


def plain_row(values: Any) -> list[Any]:
    """A record's values as :meth:`BoltSource.execute` gives them (:func:`value`): what the
    copy's host process (:mod:`.copyhost`) hands out."""
    types = graph_types()
    return [value(v, types) for v in values]


def _node(n: Any, types: tuple[type, type, type]) -> GraphNode:
    return GraphNode({"_ID": n.element_id, "_LABEL": ":".join(sorted(n.labels)),
            **{k: value(x, types) for k, x in n.items()}})


def _relationship(r: Any, types: tuple[type, type, type]) -> GraphRelationship:
    start, end = r.start_node, r.end_node
    return GraphRelationship({"_SRC": None if start is None else start.element_id,
            "_DST": None if end is None else end.element_id,
            "_LABEL": r.type, "_ID": r.element_id,
            **{k: value(x, types) for k, x in r.items()}})


def wire(v: Any) -> Any:
    """A :func:`value` as JSON carries it from the copy's host process (:mod:`.copyhost`):
    every mapping wrapped in a one-key object naming its class (``{"m": {...}}`` a map,
    ``"n"`` a node, ``"r"`` a relationship, ``"p"`` a path). Why every mapping: a map a query
    built may hold any key, so only a wrapper no value can spell keeps a node a node and a
    map a map (:class:`~pytest_queryeval.results.GraphNode`)."""
    if isinstance(v, list):
        return [wire(x) for x in v]
    if isinstance(v, dict):
        mark = next(m for m, cls in _WIRE.items() if type(v) is cls)
        return {mark: {k: wire(x) for k, x in v.items()}}
    return v


def unwire(v: Any) -> Any:
    """The inverse of :func:`wire` (read in the pytest process)."""
    if isinstance(v, list):
        return [unwire(x) for x in v]
    if isinstance(v, dict):
        (mark, inner), = v.items()
        return _WIRE[mark]((k, unwire(x)) for k, x in inner.items())
    return v


def _temporal(v: Any) -> Any:
    """``neo4j.time`` values as ``datetime`` ones, but a duration stays the driver's
    ``Duration`` (months, days, seconds and nanoseconds apart, as the server gave them: a
    ``timedelta`` would merge ``P1D`` with ``PT24H`` and lose months, and CypherBench's
    reference reads the driver's tuple); a point the list of its coordinates."""
    if isinstance(v, importlib.import_module("neo4j.time").Duration):
        return v
    native = getattr(v, "to_native", None)
    if callable(native):
        return native()
    if isinstance(v, tuple):  # a spatial point
        return [float(c) for c in v]
    return v
