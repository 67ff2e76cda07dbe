"""Golds whose answer is not a function of the data, or is wrong in a way execution cannot see.

Execution match compares a prediction with what the gold returned on this database, this
engine, this day. Some golds return an answer that another engine, plan or storage order would
return differently (``LIMIT`` without ``ORDER BY``, ``group_concat`` in scan order), and some
return a wrong answer every time because text is compared where numbers or dates were meant
(``ORDER BY`` over ``'9.5'`` and ``'10'``: a published benchmark gold picks the wrong driver
this way). Neither shows in a gold's own self-check: the gold matches itself.

Each check reads the gold with sqlglot in the source's dialect, and then decides on the gold's
own data by running a derived query (trusted, under the case's limits): a finding is made only
with evidence from the data (the rows a LIMIT could return instead, two values that sort
wrongly, a group that joins more than one value), so a deterministic gold
(``ORDER BY score DESC, name LIMIT 1``, ``CAST(x AS REAL)``, ``group_concat(x ORDER BY x)``) is
never flagged. A derived query that fails or is cut short decides nothing: no finding.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ...errors import QueryEvalError, SourceUnavailable
from ...results import ResultTable
from ...sources.base import DataSource
from .findings import AuditResult

if TYPE_CHECKING:
    from sqlglot import exp

#: Values shown as evidence per finding.
SHOWN = 3
#: Distinct values of a text date column read to tell its format.
DATE_SAMPLE = 500
_NUMBER = re.compile(r"\s*[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?\s*")
_DATE_LITERAL = re.compile(r"\d{1,4}[-/.]\d{1,2}[-/.]\d{1,4}.*|[A-Za-z]{3,9}\.? \d{1,2},? \d{4}"
                           r"|\d{1,2} [A-Za-z]{3,9}\.? \d{4}")
#: Text date formats tried in order; ISO's ``%Y-%m-%d`` sorts as text only when zero-padded.
_DATE_FORMATS = ("%Y-%m-%d", "%Y/%m/%d", "%m/%d/%Y", "%d/%m/%Y", "%d-%m-%Y", "%m-%d-%Y",
                 "%d.%m.%Y", "%b %d, %Y", "%B %d, %Y", "%d %b %Y", "%d %B %Y", "%m/%d/%y",
                 "%d/%m/%y")

Run = Callable[[str], ResultTable | None]


def audit_smells(src: DataSource, text: str, table: ResultTable, limits: Mapping[str, Any],
                 result: AuditResult, index: int | None) -> None:
    """Every smell of one SQL gold, each a warning finding with its evidence."""
    import sqlglot

    dialect = src.dialect
    try:
        trees = [t for t in sqlglot.parse(text, read=dialect) if t is not None]
    except Exception:  # outside sqlglot's grammar: the lints cannot tell
        return
    if len(trees) != 1:
        return
    tree = trees[0]

    def run(sql: str) -> ResultTable | None:
        try:
            out: ResultTable = src.execute(sql, trusted=True, **limits)
        except SourceUnavailable:
            raise
        except QueryEvalError:
            return None
        return None if out.truncated else out

    for check in (_limit_without_order, _text_ordered_numbers, _unordered_aggregates,
                  _text_min_max, _text_dates):
        try:
            found = list(check(tree, table, run, dialect))
        except SourceUnavailable:
            raise
        except Exception:  # a rewrite sqlglot cannot write: this lint says nothing
            continue
        for code, message in found:
            result.add(code, message, index)


# -- LIMIT without ORDER BY ------------------------------------------------------------------


def _limit_without_order(tree: exp.Expr, table: ResultTable, run: Run, dialect: str | None
                         ) -> Iterable[tuple[str, str]]:
    from sqlglot import exp

    if not isinstance(tree, exp.Select) or tree.args.get("order") is not None:
        return
    limit = _literal_int(tree.args.get("limit"))
    offset = _literal_int(tree.args.get("offset")) or 0
    if limit is None:
        return
    wider = tree.copy()
    wider.set("limit", None)
    wider.set("offset", None)
    counted = run(exp.select(exp.Count(this=exp.Star())).from_(
        wider.subquery("queryeval_candidates")).sql(dialect=dialect))
    if counted is None or not counted.rows:
        return
    candidates = counted.rows[0][0]
    if not isinstance(candidates, int) or candidates <= limit + offset:
        return
    sample = run(wider.limit(min(candidates, limit + offset + 200)).sql(dialect=dialect))
    if sample is None:
        return
    kept = {repr(r) for r in table.rows}
    others = [r for r in sample.rows if repr(r) not in kept]
    if not others:
        return  # every candidate row equals a kept one: the answer does not depend on order
    yield ("limit-without-order",
           f"LIMIT {limit}{f' OFFSET {offset}' if offset else ''} without ORDER BY keeps "
           f"{_rows_word(limit)} of {candidates} candidate rows in the engine's scan order, "
           f"which another engine, plan or load may change: it could as well return "
           f"{_show_rows(others)}. Add the ORDER BY the question implies")


# -- ORDER BY over text that holds numbers ----------------------------------------------------


def _text_ordered_numbers(tree: exp.Expr, table: ResultTable, run: Run, dialect: str | None
                          ) -> Iterable[tuple[str, str]]:
    from sqlglot import exp

    from ...metrics.ties import keyed_query

    if not isinstance(tree, exp.Select) or tree.args.get("order") is None:
        return
    query = keyed_query(tree.sql(dialect=dialect), dialect)
    if isinstance(query, str):
        return
    keyed = run(query.sql)
    if keyed is None or not keyed.rows:
        return
    width = len(keyed.rows[0]) - query.added
    items = tree.args["order"].expressions
    index = [i if where == "out" else width + i for where, i in query.keys]
    for pos, (item, k) in enumerate(zip(items, index, strict=True)):
        desc = bool(item.args.get("desc"))
        values = [r[k] for r in keyed.rows]
        if not _all_numeric_text(values):
            continue
        before = [tuple(r[j] for j in index[:pos]) for r in keyed.rows]
        for i in range(len(values) - 1):
            a, b = values[i], values[i + 1]
            if a is None or b is None or before[i] != before[i + 1]:
                continue
            if (float(a) < float(b)) if desc else (float(a) > float(b)):
                word = "above" if desc else "before"
                yield ("text-sorted-numbers",
                       f"ORDER BY {query.order_by[pos]} sorts text that holds numbers: "
                       f"{_quote(a)} sorts {word} {_quote(b)}, so the order (and what a LIMIT "
                       "keeps) is the text order, not the numbers'. Order by "
                       f"CAST({item.this.sql(dialect=dialect)} AS REAL) if numbers are meant")
                break


# -- order-dependent aggregates without an order ---------------------------------------------


def _unordered_aggregates(tree: exp.Expr, table: ResultTable, run: Run, dialect: str | None
                          ) -> Iterable[tuple[str, str]]:
    from sqlglot import exp

    seen: set[str] = set()
    for node in tree.find_all(exp.GroupConcat, exp.ArrayAgg, exp.JSONArrayAgg):
        if isinstance(node.this, exp.Order) or isinstance(node.parent, exp.WithinGroup):
            continue
        select = node.find_ancestor(exp.Select)
        if select is None or _ordered_source(select):
            continue
        name = node.sql(dialect=dialect)
        if name in seen:
            continue
        seen.add(name)
        arg = node.this
        distinct = isinstance(arg, exp.Distinct)
        inner = arg.expressions[0] if distinct and arg.expressions else arg
        counter = exp.Count(this=exp.Distinct(expressions=[inner.copy()]) if distinct
                            else inner.copy())
        probe = _per_group(select, counter)
        found = run(probe.sql(dialect=dialect)) if probe is not None else None
        if found is None:
            continue
        most = max((r[-1] for r in found.rows if isinstance(r[-1], int)), default=0)
        if most > 1:
            yield ("unordered-aggregate",
                   f"{name} joins up to {most} values per group in the order the engine "
                   "meets them, which another engine, plan or load may change: give it an "
                   "ORDER BY inside the call (or compare the values as a set)")


def _ordered_source(select: exp.Select) -> bool:
    """A FROM subquery with its own ORDER BY: engines that keep it (SQLite) are relied on."""
    from sqlglot import exp

    source = select.args.get("from")
    sub = source.this if source is not None else None
    return isinstance(sub, exp.Subquery) and sub.this.args.get("order") is not None


def _per_group(select: exp.Select, value: exp.Expr) -> exp.Select | None:
    """``select`` reduced to its GROUP BY keys and ``value`` (an aggregate), unordered."""
    from sqlglot import exp

    probe = select.copy()
    group = probe.args.get("group")
    keys = [k.copy() for k in group.expressions] if group is not None else []
    if any(isinstance(k, exp.Literal) for k in keys):
        return None  # GROUP BY 1: the position names a projection we are replacing
    probe.set("expressions", [*keys, value])
    for arg in ("order", "limit", "offset", "having", "distinct"):
        probe.set(arg, None)
    return probe


# -- MIN/MAX of text that holds numbers ------------------------------------------------------


def _text_min_max(tree: exp.Expr, table: ResultTable, run: Run, dialect: str | None
                  ) -> Iterable[tuple[str, str]]:
    from sqlglot import exp

    seen: set[str] = set()
    for node in tree.find_all(exp.Min, exp.Max):
        select = node.find_ancestor(exp.Select)
        if select is None or not isinstance(node.this, exp.Column):
            continue
        name = node.sql(dialect=dialect)
        if name in seen:
            continue
        seen.add(name)
        probe = _per_group(select, node.this.copy())
        if probe is None:
            continue
        probe.set("group", None)  # every value, with its group's keys
        found = run(probe.sql(dialect=dialect))
        if found is None or not found.rows:
            continue
        groups: dict[tuple[Any, ...], list[Any]] = {}
        for row in found.rows:
            groups.setdefault(tuple(row[:-1]), []).append(row[-1])
        is_max = isinstance(node, exp.Max)
        for values in groups.values():
            present = [v for v in values if v is not None]
            if len(set(present)) < 2 or not _all_numeric_text(present):
                continue
            as_text = max(present) if is_max else min(present)
            as_number = (max if is_max else min)(present, key=float)
            if float(as_text) != float(as_number):
                word = "largest" if is_max else "smallest"
                yield ("text-min-max",
                       f"{name} compares text that holds numbers: its {word} value as text is "
                       f"{_quote(as_text)}, as a number {_quote(as_number)}. Use "
                       f"{'MAX' if is_max else 'MIN'}(CAST({node.this.sql(dialect=dialect)} AS "
                       "REAL)) if numbers are meant")
                break


# -- comparisons of dates stored as text in a format that does not sort ----------------------


def _text_dates(tree: exp.Expr, table: ResultTable, run: Run, dialect: str | None
                ) -> Iterable[tuple[str, str]]:
    from sqlglot import exp

    seen: set[str] = set()
    for node in tree.find_all(exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Between):
        if isinstance(node, exp.Between):
            column, literals = node.this, [node.args.get("low"), node.args.get("high")]
        else:
            sides = [node.this, node.expression]
            column = next((s for s in sides if isinstance(s, exp.Column)), None)
            literals = [s for s in sides if s is not column]
        if not isinstance(column, exp.Column) or not literals or not all(
                isinstance(v, exp.Literal) and v.is_string and _DATE_LITERAL.fullmatch(v.this)
                for v in literals):
            continue
        select = node.find_ancestor(exp.Select)
        source = _table_of(select, column) if select is not None else None
        if source is None or column.name in seen:
            continue
        seen.add(column.name)
        col = exp.column(column.name, quoted=column.this.quoted)
        probe = exp.select(col).distinct().from_(source.copy()).where(
            exp.Not(this=exp.Is(this=col.copy(), expression=exp.Null()))).limit(DATE_SAMPLE)
        found = run(probe.sql(dialect=dialect))
        if found is None:
            continue
        values = [r[0] for r in found.rows]
        if len(values) < 2 or not all(isinstance(v, str) for v in values):
            continue
        fmt = _date_format(values)
        if fmt is None:
            continue
        inverted = _inversion(values, fmt)
        if inverted is None:
            continue
        a, b = inverted
        shown = ", ".join(_quote(v.this) for v in literals if v is not None)
        yield ("text-date-compare",
               f"compares {column.sql(dialect=dialect)}, a date stored as text in the format "
               f"{_readable(fmt)}, with {shown} as text: {_quote(a)} sorts before "
               f"{_quote(b)} as text though it is the later date, so the comparison does "
               "not follow the calendar. Compare parsed dates, or store ISO dates (YYYY-MM-DD)")


def _table_of(select: exp.Select, column: exp.Column) -> exp.Table | None:
    """The table ``column`` belongs to: its qualifier's, else the FROM's only table."""
    from sqlglot import exp

    tables = [t for t in select.find_all(exp.Table)
              if t.find_ancestor(exp.Select) is select]
    if column.table:
        return next((t for t in tables if column.table in (t.alias_or_name, t.name)), None)
    return tables[0] if len(tables) == 1 else None


def _date_format(values: Sequence[str]) -> str | None:
    for fmt in _DATE_FORMATS:
        try:
            for v in values:
                dt.datetime.strptime(v.strip(), fmt)
        except ValueError:
            continue
        return fmt
    return None


def _readable(fmt: str) -> str:
    for code, word in (("%Y", "YYYY"), ("%m", "MM"), ("%d", "DD"), ("%y", "YY"),
                       ("%b", "Mon"), ("%B", "Month")):
        fmt = fmt.replace(code, word)
    return fmt


def _inversion(values: Sequence[str], fmt: str) -> tuple[str, str] | None:
    """Two values whose text order contradicts their dates' (the later date first)."""
    ordered = sorted(set(values))
    parsed = [dt.datetime.strptime(v.strip(), fmt) for v in ordered]
    latest = 0
    for i in range(1, len(ordered)):
        if parsed[i] < parsed[latest]:
            return ordered[latest], ordered[i]
        if parsed[i] > parsed[latest]:
            latest = i
    return None


# -- helpers -----------------------------------------------------------------------------------


def _all_numeric_text(values: Sequence[Any]) -> bool:
    present = [v for v in values if v is not None]
    return len(set(present)) >= 2 and all(
        isinstance(v, str) and _NUMBER.fullmatch(v) for v in present)


def _literal_int(node: object) -> int | None:
    from sqlglot import exp

    if node is None:
        return None
    value = node.expression if isinstance(node, exp.Limit | exp.Offset) else node
    if isinstance(value, exp.Literal) and not value.is_string and value.this.isdigit():
        return int(value.this)
    return None


def _quote(value: object) -> str:
    return "'" + str(value).replace("'", "''") + "'" if isinstance(value, str) else repr(value)


def _rows_word(n: int) -> str:
    return "1 row" if n == 1 else f"{n} rows"


def _show_rows(rows: Sequence[tuple[Any, ...]]) -> str:
    shown = ", ".join("(" + ", ".join(_quote(c) if c is not None else "NULL" for c in r) + ")"
                      for r in rows[:SHOWN])
    return shown + (f" and {len(rows) - SHOWN} more" if len(rows) > SHOWN else "")
