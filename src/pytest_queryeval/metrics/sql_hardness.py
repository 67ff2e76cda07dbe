"""SQL hardness (easy / medium / hard / extra) by the "SQL Hardness criteria" of the seq2SQL
evaluation document ("Different Evaluation Metrics for seq2SQL project", the methodology behind
Spider's hardness), computed on a sqlglot parse, so that any query gets a level.

Why a second hardness: Spider's evaluator computes the same criteria on its own grammar, which
knows no function call (``lower()``, ``round()``), no FROM subquery, no CTE and no window; a
quarter of a real user's golds got no difficulty at all. Spider's reference hardness
(:func:`.spider.hardness`) is kept wherever its grammar parses the query and for Spider
conformance; this one is the difficulty of the others, under its own label ``sql_hardness``.

The criteria, as the document states them:

* **components 1**: WHERE, GROUP BY, ORDER BY, LIMIT, JOIN, OR, LIKE, HAVING;
* **components 2**: EXCEPT, UNION, INTERSECT, NESTED;
* **others**: number of aggregations > 1, of select columns > 1, of WHERE conditions > 1, of
  GROUP BY clauses > 1 (a column expression such as ``col1 - col2`` is one column);
* **easy**: at most one component 1, no other, no component 2;
* **medium**: at most two others and at most one component 1, or exactly two components 1 and
  fewer than two others; no component 2;
* **hard**: more than two others and at most two components 1, or three components 1 and at
  most two others, with no component 2; or at most one component 1, no other and exactly one
  component 2;
* **extra** (the document's "extra hard", spelled as Spider spells it): everything else.

How the words are counted on the parse (the document leaves it open; Spider's choices are
followed except where the document says otherwise): each JOIN (a comma in FROM too) is one,
each OR (``a OR b OR c``: two) and each LIKE (``NOT LIKE``, ``ILIKE`` too) in the ON, WHERE and
HAVING conditions is one; HAVING is one (the document lists it; Spider's evaluator does not
count it). Each set operation is one component 2, and so is each subquery of the query (in
SELECT, FROM, WHERE, HAVING, ON) and each CTE: a FROM subquery is NESTED here (Spider's
evaluator does not see it). Only the outermost query is counted: a subquery's own clauses
make it NESTED, not harder again. ``lower(x)`` or ``round(x, 2)`` add nothing; aggregates are
sqlglot's aggregate functions (COUNT, SUM, AVG, MIN, MAX and the others) in SELECT, WHERE,
GROUP BY, ORDER BY and HAVING.

Where the value is computed: importing sqlglot and parsing with it cost a Spider run more than
the rest of its gold handling, so a query that Spider's grammar parses *strictly*
(``parse_sql(strict=True)``: every token consumed, nothing its dict would not show; it also
takes a table alias without AS, which Spider's grammar reads as a second table, because most
real golds write their aliases so) is counted on that dict by :func:`counts_from_spider`,
which declines (None) whatever it cannot show to be sqlglot's count; everything else, and
every dialect but generic SQL and SQLite (:data:`FAST_DIALECTS`), goes to sqlglot as before.
:func:`counts` is sqlglot's count alone; tests/spider/test_sql_hardness_fast.py checks the two
agree on every corpus of the repository.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from .spider.parse import SQL, WHERE_OPS, SpiderParseError, ValUnit, parse_sql

if TYPE_CHECKING:
    from sqlglot import exp

#: ``(not_op, op_id, val_unit, val1, val2)``: a value is a number, a text, a column or a subquery.
CondUnit = tuple[bool, int, ValUnit, object, object]

LEVELS = ("easy", "medium", "hard", "extra")

#: Dialects whose sqlglot parse of a strict Spider query cannot count otherwise than generic SQL:
#: ``'`` strings and ``"`` identifiers with no escape but doubling (a text with a backslash
#: is declined: MySQL-like dialects escape with it), ORDER BY and LIMIT after a set
#: operation attached to the whole (``MODIFIERS_ATTACHED_TO_SET_OP``), and no keyword among
#: the names the strict grammar accepts (the test checks each dialect's keywords).
FAST_DIALECTS: frozenset[str | None] = frozenset((None, "sqlite"))

_LIKE = WHERE_OPS.index("like")
_SET_OPS = ("intersect", "except", "union")


def level(comp1: int, comp2: int, others: int) -> str:
    """The document's four rules, in its order."""
    if comp1 <= 1 and others == 0 and comp2 == 0:
        return "easy"
    if comp2 == 0 and ((others <= 2 and comp1 <= 1) or (comp1 == 2 and others < 2)):
        return "medium"
    if (comp2 == 0 and ((others > 2 and comp1 <= 2) or (2 < comp1 <= 3 and others <= 2))) \
            or (comp1 <= 1 and others == 0 and comp2 == 1):
        return "hard"
    return "extra"


def sql_hardness(sql: str, dialect: str | None = None) -> str:
    """The level of one SELECT query; ValueError when sqlglot cannot parse it as one."""
    fast = spider_counts(sql, dialect)
    return level(*(fast if fast is not None else counts(sql, dialect)))


def spider_counts(sql: str, dialect: str | None = None) -> tuple[int, int, int] | None:
    """:func:`counts` from a strict Spider parse, without sqlglot; None where that is not
    provably sqlglot's count (the caller then asks sqlglot)."""
    if dialect not in FAST_DIALECTS or "\\" in sql or not _quoted_alike(sql):
        return None
    try:
        parsed = parse_sql(sql, None, strict=True)
    except SpiderParseError:
        return None
    return counts_from_spider(parsed)


def _quoted_alike(sql: str) -> bool:
    """Spider pairs quote characters in turn, ``'`` and ``"`` alike; sqlglot closes a quote
    with its own kind (``'`` a string, ``"`` an identifier: either is one operand). They
    delimit the same spans when each pair is of one kind (a doubled quote inside leaves two
    masked values side by side, which the strict grammar refuses)."""
    quotes = [c for c in sql if c in "'\""]
    return len(quotes) % 2 == 0 and quotes[::2] == quotes[1::2]


def counts_from_spider(sql: SQL) -> tuple[int, int, int] | None:
    """:func:`counts` of the query whose strict Spider parse is ``sql``, None where the dict
    does not decide it.

    The grammar chains set operations to the right (``a UNION b ORDER BY x`` puts the ORDER BY
    in ``b``) where sqlglot attaches the trailing ORDER BY and LIMIT to the whole, so the last
    query's are the outer ones; an ORDER BY or LIMIT before a set-operation word is declined
    (sqlglot's placement was not worth proving for it).
    """
    chain = [sql]
    while (nxt := next((chain[-1][op] for op in _SET_OPS if chain[-1][op] is not None),
                       None)) is not None:
        chain.append(nxt)
    if any(q["orderBy"] or q["limit"] is not None for q in chain[:-1]):
        return None
    last = chain[-1]
    order = sql["orderBy"] or last["orderBy"]
    limit = sql["limit"] if sql["limit"] is not None else last["limit"]
    where, group, having = sql["where"], sql["groupBy"], sql["having"]
    units = sql["from"]["table_units"]
    conditions = (sql["from"]["conds"], where, having)
    preds = [p for c in conditions for p in c[::2]]

    comp1 = sum(1 for clause in (where, group, order, having) if clause)
    comp1 += int(limit is not None) + max(len(units) - 1, 0)
    comp1 += sum(1 for c in conditions for word in c[1::2] if word == "or")
    comp1 += sum(1 for p in preds if p[1] == _LIKE)

    comp2 = len(chain) - 1 + sum(1 for kind, _ in units if kind == "sql")
    comp2 += sum(1 for p in preds for v in (p[3], p[4]) if type(v) is dict)

    aggs = sum(int(agg != 0) + _val_aggs(val) for agg, val in sql["select"][1])
    aggs += sum(_cond_aggs(p) for c in (where, having) for p in c[::2])
    aggs += sum(int(u[0] != 0) for u in group)
    aggs += sum(_val_aggs(val) for val in (order[1] if order else []))
    others = int(aggs > 1) + int(len(sql["select"][1]) > 1)
    others += int(len(where) > 1) + int(len(group) > 1)
    return comp1, comp2, others


def _val_aggs(val_unit: ValUnit) -> int:
    """Aggregates of ``(op, col_unit, col_unit)``: ``a + count(b)`` has one in its second."""
    return sum(1 for unit in val_unit[1:] if unit is not None and unit[0] != 0)


def _cond_aggs(pred: CondUnit) -> int:
    """Aggregates of one predicate outside its subqueries: its left side and column values."""
    return _val_aggs(pred[2]) + sum(1 for v in pred[3:] if type(v) is tuple and v[0] != 0)


@functools.lru_cache(maxsize=4096)
def spider_level(sql: str, dialect: str | None = None) -> str | None:
    """:func:`sql_hardness` where it is counted on a strict Spider parse, without importing
    sqlglot (:func:`spider_counts`); None where sqlglot would have to be asked."""
    fast = spider_counts(sql, dialect)
    return None if fast is None else level(*fast)


@functools.lru_cache(maxsize=1)
def sqlglot_version() -> str:
    """The installed sqlglot's version, read from its metadata (not imported): part of the key
    of a level kept across sessions, since another sqlglot may parse a text otherwise."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("sqlglot")
    except PackageNotFoundError:
        return ""


@functools.lru_cache(maxsize=4096)
def cached_sql_hardness(sql: str, dialect: str | None = None) -> str | None:
    """:func:`sql_hardness`, None when the query does not parse; cached: a gold is rated at
    collection and again when scored."""
    try:
        return sql_hardness(sql, dialect)
    except (ValueError, RecursionError):
        return None


def counts(sql: str, dialect: str | None = None) -> tuple[int, int, int]:
    """``(components 1, components 2, others)`` of one SELECT query (ValueError otherwise)."""
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import SqlglotError

    try:
        trees = [t for t in sqlglot.parse(sql, read=dialect) if t is not None]
    except SqlglotError as exc:
        raise ValueError(f"sqlglot cannot parse the query: {exc}") from None
    if len(trees) != 1:
        raise ValueError(f"expected one statement, found {len(trees)}")
    top = trees[0]
    while isinstance(top, exp.Subquery):  # (SELECT ...) as a whole statement
        top = top.this
    comp2 = len(_arg(top, "with").expressions) if _arg(top, "with") is not None else 0
    outer = top
    comp2 += _set_operations(top)
    select = top
    while isinstance(select, exp.Union | exp.Intersect | exp.Except | exp.Subquery):
        select = select.this  # the first query of the set operations is the query
    if not isinstance(select, exp.Select):
        raise ValueError(f"not a SELECT query ({type(select).__name__})")

    where, having = select.args.get("where"), select.args.get("having")
    group = select.args.get("group")
    order = select.args.get("order") or outer.args.get("order")
    joins = select.args.get("joins") or []
    conditions = [j.args.get("on") for j in joins] + [where, having]
    conditions = [c for c in conditions if c is not None]
    comp1 = sum(1 for clause in (where, group, order, having) if clause is not None)
    comp1 += 1 if (select.args.get("limit") or outer.args.get("limit")
                   or select.args.get("fetch")) else 0
    comp1 += len(joins)
    in_conditions = [n for c in conditions for n in _shallow(c)]
    comp1 += sum(1 for n in in_conditions if isinstance(n, exp.Or))
    comp1 += sum(1 for n in in_conditions if isinstance(n, exp.Like | exp.ILike))

    comp2 += sum(1 for _ in _subqueries(select))

    aggregated = [*select.expressions, where, group, order, having]
    aggs = sum(1 for part in aggregated if part is not None
               for n in _shallow(part) if isinstance(n, exp.AggFunc))
    others = int(aggs > 1) + int(len(select.expressions) > 1)
    others += int(where is not None and _leaves(where.this) > 1)
    others += int(group is not None and len(group.expressions) > 1)
    return comp1, comp2, others


def _set_operations(node: exp.Expr) -> int:
    """UNION, INTERSECT and EXCEPT words of a set-operation tree (either side; parentheses
    looked through)."""
    from sqlglot import exp

    while isinstance(node, exp.Subquery):
        node = node.this
    if not isinstance(node, exp.Union | exp.Intersect | exp.Except):
        return 0
    return 1 + _set_operations(node.this) + _set_operations(node.expression)


def _arg(node: exp.Expr, name: str) -> Any:
    """``node.args[name]``; sqlglot 30 renamed ``with`` and ``from`` to ``with_``, ``from_``."""
    value = node.args.get(name)
    return value if value is not None else node.args.get(name + "_")


def _is_query(node: object) -> bool:
    from sqlglot import exp

    return isinstance(node, exp.Subquery | exp.Select | exp.Union | exp.Intersect | exp.Except)


def _shallow(node: exp.Expr) -> Iterator[exp.Expr]:
    """``node`` and its descendants, not entering a subquery."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(c for c in current.iter_expressions() if not _is_query(c))


def _subqueries(select: exp.Expr) -> Iterator[exp.Expr]:
    """The outermost queries inside ``select`` (its CTEs left out: counted apart)."""
    stack = [c for k, c in _children(select) if k not in ("with", "with_")]
    while stack:
        current = stack.pop()
        if _is_query(current):
            yield current
            continue
        stack.extend(current.iter_expressions())


def _children(node: exp.Expr) -> Iterator[tuple[str, exp.Expr]]:
    for key, value in node.args.items():
        for item in value if isinstance(value, list) else [value]:
            if hasattr(item, "iter_expressions"):
                yield key, item


def _leaves(condition: exp.Expr) -> int:
    """Conditions joined by AND / OR (parentheses looked through): ``a AND (b OR c)`` is 3."""
    from sqlglot import exp

    if isinstance(condition, exp.Paren):
        return _leaves(condition.this)
    if isinstance(condition, exp.And | exp.Or):
        return _leaves(condition.this) + _leaves(condition.expression)
    return 1
