"""Which values of a ladybug result are the engine's nodes, relationships and paths, read from
each column's type, and marked so in the worker before its reply is pickled.

Why by the type: ladybug hands a node over as the plain ``dict`` of ``_ID``, ``_LABEL`` and
its properties, and a map a query builds (``RETURN {_ID: 1, _LABEL: 'N'}``) comes out the
same. A metric that took such maps for nodes followed ids the prediction chose: the
fourteenth re-probe's H4 grew 4^D copies from a 1 KB text and turned five map shapes into
internal errors. The column's type (``NODE``, ``REL``, ``RECURSIVE_REL``, nested in ``[]``,
``STRUCT(...)``, ``MAP(...)``; a ``UNION`` is not read, below) is the engine's own word for
what a value is: those values become :class:`~pytest_queryeval.results.GraphNode`, ``GraphRelationship`` and
``GraphPath``; a map stays a ``dict``.

A struct's field names are printed in the type unquoted, so a name holding a space, a comma or
a parenthesis could make the text read as another type: a field name that is not a plain word
makes the column's type unread (its values all stay plain maps). And a column is marked only
when every value of it has the shape read, at every level (:func:`fits`): each struct value
exactly the fields read, in order, whether or not the struct holds a graph type, a scalar no
map or list. Crafted field names that balanced out (``{d: {k1: {`z INT64), k2 NODE), e STRUCT(w
STRUCT(v`: 1}, k2: {...}}}``) read a struct holding no graph value where the value had other
keys, which was never checked, and a map literal was marked as a node (the sixteenth re-probe's
F1: 276 s of comparison in the pytest process from a 341-byte text). Nor is a name checked
that no value reaches: a struct-typed null, the item type of an empty list, the value type of
an empty map, a null item of a list. Crafted names inside ``CASE WHEN false THEN {`x INT64), g
NODE, h STRUCT(y STRUCT(z`: 1} END`` balanced the text as F1's did and a map literal beside it
was marked as a node again (the seventeenth re-probe's F2: 94 s in the pytest process). So
every struct level of the type read must be pinned by at least one value of the column (its
rows, a list's items, a map's values) whose keys are the names read there, else the column is
unread; a map's key type is never in a value, so a ``MAP`` whose key type is not a plain
scalar is unread too. With every level pinned, each name read is a whole name of the value,
so the text was split where the engine wrote it. A union member's name is
printed the same way but is nowhere in the value, so nothing can check it: a crafted member
name (``union_value(`y STRUCT(a NODE, q` := {...})``) rewrote the text so that a map literal
read as a node (the fifteenth re-probe's N1: 2.9 GB in the pytest process from a 39 KB text). A
type text holding ``UNION`` anywhere is therefore unread, whatever the union holds. (The Python
binding gives the column types as this text only: ``get_column_data_types`` returns strings.)
"""

from __future__ import annotations

import re
from typing import Any

from ..results import GraphNode, GraphPath, GraphRelationship

#: A parsed type: ``"node"``, ``"rel"``, ``"path"``, ``"scalar"`` (any other named type),
#: ``("list", T)``, ``("map", T)`` (the values' type), ``("struct", ((name, T), ...))``;
#: None for a type that is not read (a ``UNION``, a text this parser does not know).
Tree = Any

_WORD = re.compile(r"[^\W\d]\w*")
_NAME = re.compile(r"[A-Z][A-Z0-9_]*")
_SUFFIX = re.compile(r"\[\d*\]")
_ARGS = re.compile(r"\(\d+(?:, ?\d+)*\)")
_LEAVES = {"NODE": "node", "REL": "rel", "RECURSIVE_REL": "path"}


class _Unread(ValueError):
    """A type text this parser does not read: its values are left as they are."""


def parse(text: str) -> Tree:
    """``text`` (a column's type) as a :data:`Tree`; None when it holds no graph value or
    cannot be read (:class:`_Unread`, a nesting past Python's recursion)."""
    if "NODE" not in text and "REL" not in text:
        return None
    if "UNION" in text:  # a member's name cannot be checked against the value (above)
        return None
    try:
        tree, end = _type(text, 0)
    except (_Unread, RecursionError):
        return None
    return tree if end == len(text) and _type_holds_graph(tree) else None


def _type_holds_graph(tree: Tree) -> bool:
    if isinstance(tree, str):
        return tree != "scalar"
    if tree[0] == "struct":
        return any(_type_holds_graph(t) for _, t in tree[1])
    return bool(_type_holds_graph(tree[1]))


def _type(s: str, i: int) -> tuple[Tree, int]:
    m = _NAME.match(s, i)
    if m is None:
        raise _Unread(s)
    name, i = m.group(), m.end()
    tree: Tree
    if name == "UNION":
        raise _Unread(s)
    if name == "STRUCT" and s.startswith("(", i):
        fields, i = _fields(s, i + 1)
        tree = ("struct", fields)
    elif name == "MAP" and s.startswith("(", i):
        key, i = _type(s, i + 1)
        if key != "scalar" or not s.startswith(", ", i):  # a key's names: never in a value
            raise _Unread(s)
        value, i = _type(s, i + 2)
        if not s.startswith(")", i):
            raise _Unread(s)
        tree, i = ("map", value), i + 1
    else:
        tree = _LEAVES.get(name, "scalar")
        args = _ARGS.match(s, i)  # DECIMAL(18, 3)
        if args is not None:
            i = args.end()
    while (suffix := _SUFFIX.match(s, i)) is not None:
        tree, i = ("list", tree), suffix.end()
    return tree, i


def _fields(s: str, i: int) -> tuple[tuple[tuple[str, Tree], ...], int]:
    fields = []
    while True:
        m = _WORD.match(s, i)
        if m is None or not s.startswith(" ", m.end()):
            raise _Unread(s)
        tree, i = _type(s, m.end() + 1)
        fields.append((m.group(), tree))
        if s.startswith(")", i):
            return tuple(fields), i + 1
        if not s.startswith(", ", i):
            raise _Unread(s)
        i += 2


def fits(column: list[Any], tree: Tree) -> bool:
    """Whether the values of one column (``column``) pin every struct level of ``tree``: at
    each level, every non-null value has the shape read (a struct exactly the fields read, in
    order; a scalar no map or list), and each struct level has at least one such value. A
    level no value reaches (a null, an empty list, an empty map, a null item of a list) is
    text that nothing checked: the column is then unread (the seventeenth re-probe's F2)."""
    try:
        return _fits(column, tree)
    except RecursionError:
        return False


def _fits(values: list[Any], tree: Tree) -> bool:
    values = [v for v in values if v is not None]
    if tree == "scalar":
        return not any(isinstance(v, dict | list) for v in values)
    if tree in ("node", "rel", "path"):
        return all(isinstance(v, dict) for v in values)
    kind, inner = tree
    if kind == "list":
        return all(isinstance(v, list) for v in values) and _fits([x for v in values for x in v], inner)
    if not all(isinstance(v, dict) for v in values):
        return False
    if kind == "map":
        return _fits([x for v in values for x in v.values()], inner)
    names = tuple(name for name, _ in inner)
    return (
        bool(values)
        and all(tuple(v) == names for v in values)
        and all(_fits([v[name] for v in values], t) for name, t in inner)
    )


def mark(v: Any, tree: Tree) -> Any:
    """``v`` with the values ``tree`` says are graph values marked as such; anything of
    another shape than the type says is left as it is (a plain map stays a map)."""
    if tree is None or tree == "scalar" or v is None:
        return v
    if tree == "node":
        return GraphNode(v) if _is(v, "_ID", "_LABEL") else v
    if tree == "rel":
        return GraphRelationship(v) if _is(v, "_SRC", "_DST", "_LABEL") else v
    if tree == "path":
        return _path(v)
    kind, inner = tree
    if kind == "list":
        return [mark(x, inner) for x in v] if isinstance(v, list) else v
    if not isinstance(v, dict):
        return v
    if kind == "map":
        return {k: mark(x, inner) for k, x in v.items()}
    if tuple(v) != tuple(name for name, _ in inner):
        return v
    return {name: mark(v[name], t) for name, t in inner}


def _is(v: Any, *keys: str) -> bool:
    return isinstance(v, dict) and all(k in v for k in keys)


def _path(v: Any) -> Any:
    if not _is(v, "_NODES", "_RELS"):
        return v
    nodes, rels = v["_NODES"], v["_RELS"]
    if not isinstance(nodes, list) or not isinstance(rels, list):
        return v
    return GraphPath(_NODES=[mark(n, "node") for n in nodes],
                     _RELS=[mark(r, "rel") for r in rels])


def mark_rows(rows: list[tuple[Any, ...]], types: list[str]) -> list[tuple[Any, ...]]:
    """Every row with its graph values marked (:func:`mark`), by each column's type text."""
    trees = [parse(t) for t in types]
    if all(t is None for t in trees):
        return rows
    for c, tree in enumerate(trees):  # a column its values do not pin is unread
        if tree is not None and not fits([row[c] for row in rows], tree):
            trees[c] = None
    return [tuple(mark(v, t) for v, t in zip(row, trees, strict=True)) for row in rows]
