"""A gold's near neighbours: the queries one small edit away, each obviously different.

The test-suite method (``fuzz/neighbor.py``) keeps a database only when it tells the gold from
such neighbours. The gold audit asks the reverse question on the real database: when the gold
returns the same result as a neighbour there, the data cannot tell the two apart, and neither
can execution accuracy: a model that writes the neighbour passes. ``Total > 10`` that equals
``Total >= 10`` on this data, a ``WHERE`` whose condition matches every row, a ``DISTINCT`` that
removes nothing: the audit names each (``this gold cannot tell > from >= here``).

Edits, each applied at one place of the gold: a comparison operator turned into its neighbour
(``>`` and ``>=``, ``<`` and ``<=``, ``=`` and ``<>``), a ``WHERE``/``HAVING`` conjunct left out,
``DISTINCT`` removed, ``MIN`` and ``MAX`` exchanged, ``ASC`` and ``DESC`` exchanged, ``LIMIT n``
made ``n + 1``. An edit that gives the same query in other words is left out: ``x IS NOT NULL``
under ``AVG(x)`` (the aggregate skips NULLs) is no neighbour.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from sqlglot import exp

#: Most neighbours built for one gold (a long gold has many edit places).
MAX_NEIGHBOURS = 60


@dataclass(frozen=True)
class Neighbour:
    #: What was edited, in the words of the audit's message (``> for >=``).
    edit: str
    sql: str


def neighbours(gold: str, dialect: str = "sqlite") -> list[Neighbour]:
    """The gold's neighbours (in sqlglot's walk order, the same every run); [] when sqlglot
    cannot read the gold."""
    import sqlglot

    try:
        tree = sqlglot.parse_one(gold, read=dialect)
    except Exception:
        return []
    out: list[Neighbour] = []
    seen = {tree.sql(dialect=dialect)}
    for edit, changed in _edits(tree):
        text = changed.sql(dialect=dialect)
        if text not in seen:
            seen.add(text)
            out.append(Neighbour(edit, text))
        if len(out) >= MAX_NEIGHBOURS:
            break
    return out


_FLIPS: dict[str, tuple[str, str]] = {
    "GT": ("GTE", ">= for >"), "GTE": ("GT", "> for >="),
    "LT": ("LTE", "<= for <"), "LTE": ("LT", "< for <="),
    "EQ": ("NEQ", "<> for ="), "NEQ": ("EQ", "= for <>"),
}


def _edits(tree: exp.Expr) -> Iterator[tuple[str, exp.Expr]]:
    from sqlglot import exp

    for node in list(tree.walk()):
        path = _path(tree, node)
        name = type(node).__name__.upper()
        if name in _FLIPS and isinstance(node, exp.Binary):
            target, label = _FLIPS[name]
            yield label, _replace(tree, path, partial(_flipped, getattr(exp, target)))
        if isinstance(node, exp.Where | exp.Having):
            conjuncts = list(node.this.flatten()) if isinstance(node.this, exp.And) else [node.this]
            word = "WHERE" if isinstance(node, exp.Where) else "HAVING"
            for i, part in enumerate(conjuncts):
                if isinstance(node, exp.Where) and _null_filter_needless(node, part):
                    continue  # leaving it out is the same query: no neighbour
                rest = [c for j, c in enumerate(conjuncts) if j != i]
                shown = part.sql()[:60]
                if rest:
                    yield f"{word} without {shown}", _replace(tree, path, partial(_kept, rest))
                else:
                    yield f"no {word} ({shown})", _replace(tree, path, _removed)
        if isinstance(node, exp.Select) and node.args.get("distinct") is not None:
            yield "no DISTINCT", _replace(tree, path, partial(_with, "distinct", None))
        if isinstance(node, exp.Max | exp.Min):
            other = exp.Min if isinstance(node, exp.Max) else exp.Max
            label = "MIN for MAX" if isinstance(node, exp.Max) else "MAX for MIN"
            yield label, _replace(tree, path, partial(_aggregate, other))
        if isinstance(node, exp.Ordered):
            desc = bool(node.args.get("desc"))
            yield ("ASC for DESC" if desc else "DESC for ASC"), _replace(
                tree, path, partial(_direction, not desc))
        if isinstance(node, exp.Limit):
            value = node.expression
            if isinstance(value, exp.Literal) and not value.is_string and value.this.isdigit():
                n = int(value.this)
                yield f"LIMIT {n + 1} for LIMIT {n}", _replace(tree, path, partial(_limit, n + 1))


def _null_filter_needless(where: exp.Where, part: exp.Expr) -> bool:
    """``col IS NOT NULL`` in the WHERE of a SELECT whose every output is an aggregate that
    skips NULLs (AVG, SUM, MIN, MAX, COUNT) over that very column, without GROUP BY or HAVING:
    the aggregate leaves the NULL rows out anyway, so the query without the condition returns
    the same on every database. No data can tell the two apart, and none needs to: it is the
    same query written twice, not a weakness of the gold."""
    from sqlglot import exp

    if not (isinstance(part, exp.Not) and isinstance(part.this, exp.Is)
            and isinstance(part.this.expression, exp.Null)):
        return False
    column = part.this.this
    select = where.parent
    if not isinstance(select, exp.Select) or not select.expressions \
            or select.args.get("group") or select.args.get("having"):
        return False
    for projection in select.expressions:
        agg = projection.unalias()
        if not isinstance(agg, exp.Avg | exp.Sum | exp.Min | exp.Max | exp.Count):
            return False
        arg = agg.this
        if isinstance(arg, exp.Distinct) and len(arg.expressions) == 1:
            arg = arg.expressions[0]
        if not _same_column(arg, column):
            return False
    return True


def _same_column(a: exp.Expr | None, b: exp.Expr) -> bool:
    """The same column reference; unquoted names compared as SQL does, case-insensitively."""
    from sqlglot import exp

    if not isinstance(a, exp.Column) or not isinstance(b, exp.Column):
        return False
    if a == b:
        return True
    quoted = any(i.quoted for node in (a, b) for i in node.find_all(exp.Identifier))
    return not quoted and a.sql().lower() == b.sql().lower()


def _flipped(cls: type[exp.Binary], node: exp.Expr) -> exp.Expr:
    return cls(this=node.this, expression=node.expression)


def _kept(rest: list[exp.Expr], node: exp.Expr) -> exp.Expr:
    from sqlglot import exp

    return type(node)(this=exp.and_(*rest))


def _removed(node: exp.Expr) -> None:
    del node


def _aggregate(cls: type[exp.Max | exp.Min], node: exp.Expr) -> exp.Expr:
    return cls(this=node.this)


def _direction(desc: bool, node: exp.Expr) -> exp.Expr:
    """The other direction with that direction's default NULL placement (SQLite: NULLs first
    ascending, last descending), as if only the keyword had been changed."""
    copy = _with("desc", desc, node)
    copy.set("nulls_first", not desc)
    return copy


def _limit(n: int, node: exp.Expr) -> exp.Expr:
    from sqlglot import exp

    del node
    return exp.Limit(expression=exp.Literal.number(n))


def _with(key: str, value: bool | None, node: exp.Expr) -> exp.Expr:
    copy = node.copy()
    copy.set(key, value)
    return copy


def _path(root: exp.Expr, node: exp.Expr) -> list[tuple[str, int | None]]:
    """How to reach ``node`` from ``root`` (argument key and list index per step)."""
    steps: list[tuple[str, int | None]] = []
    while node is not root and node.parent is not None:
        key = cast(str, node.arg_key)  # set on every node that has a parent
        value = node.parent.args.get(key)
        index = next(i for i, v in enumerate(value) if v is node) if isinstance(value, list) \
            else None
        steps.append((key, index))
        node = node.parent
    return list(reversed(steps))


def _replace(tree: exp.Expr, path: list[tuple[str, int | None]],
             make: Callable[[exp.Expr], exp.Expr | None]) -> exp.Expr:
    """A copy of ``tree`` with the node at ``path`` replaced by ``make(node)`` (None removes it)."""
    copy = tree.copy()
    node = copy
    for key, index in path:
        value = node.args[key]
        node = value[index] if index is not None else value
    new = make(node)
    if node is copy:
        return new if new is not None else copy  # the root itself: its replacement
    if new is None:
        node.pop()
    else:
        node.replace(new)
    return copy


def indistinguishable(gold: str, run: Callable[[str], Any], same: Callable[[Any, Any], bool],
                      dialect: str = "sqlite") -> list[Neighbour]:
    """The neighbours whose result ``run`` gives the same as the gold's under ``same``; a
    neighbour that fails to run is left out."""
    base = run(gold)
    if base is None:
        return []
    out = []
    for n in neighbours(gold, dialect):
        result = run(n.sql)
        if result is not None and same(base, result):
            out.append(n)
    return out
