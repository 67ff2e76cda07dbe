"""Where candidate cell values come from: the real database and the two queries.

The test-suite method (Zhong, Yu and Klein 2020, ``fuzz/fuzz.py``) fills random databases with
values of the real columns and, weighted up, the literals of the query, because a difference
between two queries hides at the values they compare against: ``Total > 10`` and
``Total >= 11`` differ only on a row whose Total lies between 10 and 11, ``LIKE 'A%'`` and
``= 'A'`` only on a name that starts with A and goes on. So each column's pool holds a sample
of its real values, and every literal a query compares that column with, with its boundaries
(``v - 1``, ``v``, ``v + 1``, halves for reals, the string cut and extended, the ``LIKE``
pattern's fixed text). NULL is added where the column allows it.

A counterexample is read by a person, and ``sched_dep = '2024-05-0'`` reads like a bug even when
it proves the point. So each column also has a *realistic* pool (:func:`realistic_pools`): values
in the column's own domain and format. A text column whose values are all dates in one format
(:func:`date_format`) gets valid dates in that format around the query's date literals (the day
before and after, the month's first and last day, the next month's first); a text column of
other values gets its existing values and the literals as written; a number column its real
values, the literals with ``v - 1`` and ``v + 1``, and loose numbers within its range. The edge
values (a string cut, extended, case-changed) stay in the full pool: the search tries realistic
candidates first and falls back to them, and a found database has its edge values replaced by
realistic ones wherever the difference survives (:func:`is_realistic`). A date column's full
pool holds dates only: a row dated ``'2024'`` is data the column never holds, and a
"counterexample" built on it refutes a prediction that is right on every real row.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable, Iterable
from itertools import pairwise
from typing import TYPE_CHECKING, Any

from .schema import Column, DbSchema

if TYPE_CHECKING:
    from sqlglot import exp


def literal_values(sql: str, dialect: str = "sqlite") -> tuple[dict[str, list[Any]], list[Any]]:
    """Literals of ``sql``: those compared with a column (by lower-cased column name), and the
    others. A text sqlglot cannot read gives nothing."""
    import sqlglot
    from sqlglot import exp

    try:
        tree = sqlglot.parse_one(sql, read=dialect)
    except Exception:
        return {}, []
    by_column: dict[str, list[Any]] = {}
    loose: list[Any] = []
    for lit in tree.find_all(exp.Literal):
        value = _python(lit)
        if value is None:
            continue
        column = _compared_column(lit)
        if column is None:
            loose.append(value)
        else:
            by_column.setdefault(column, []).append(value)
    return by_column, loose


def _python(lit: exp.Literal) -> str | int | float | None:
    return str(lit.this) if lit.is_string else _number(str(lit.this))


def _compared_column(lit: exp.Expr) -> str | None:
    """The column a literal is compared with (``col > 3``, ``col IN (1, 2)``, ``col BETWEEN 1
    AND 3``, ``col LIKE 'A%'``), looking through a negation, a cast or arithmetic."""
    from sqlglot import exp

    node = lit.parent
    while isinstance(node, exp.Neg | exp.Cast | exp.Paren | exp.Tuple):
        node = node.parent
    if isinstance(node, exp.In | exp.Between):
        target = node.this
    elif isinstance(node, exp.Binary):
        target = node.left if node.right is lit or lit in node.right.walk() else node.right
    else:
        return None
    col = target.find(exp.Column) if not isinstance(target, exp.Column) else target
    return col.name.lower() if col is not None else None


#: Text date formats recognised in a column's values, most specific first: a column is a date
#: column when every sampled value is one of these, written exactly so (``2024-4-1`` is not).
DATE_FORMATS = ("%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%d",
                "%Y/%m/%d", "%Y-%m")
#: Formats a query's literal may be read in (a ``LIKE '2024-04%'`` prefix is a month).
_LITERAL_FORMATS = (*DATE_FORMATS, "%Y-%m-%d %H:%M:%S.%f", "%Y")


def parse_date(text: str, fmt: str) -> _dt.datetime | None:
    """``text`` as a date when it is written exactly in ``fmt`` (so it round-trips), else None."""
    try:
        when = _dt.datetime.strptime(text, fmt)
    except ValueError:
        return None
    return when if when.strftime(fmt) == text else None


def date_format(values: Iterable[Any]) -> str | None:
    """The one format all of a text column's (non-NULL) values are written in, when they are
    all dates; None for any other column, or one with no text value."""
    texts = [v for v in values if v is not None]
    if not texts or not all(isinstance(v, str) for v in texts):
        return None
    for fmt in DATE_FORMATS:
        if all(parse_date(v, fmt) is not None for v in texts):
            return fmt
    return None


def date_neighbours(value: str, fmt: str) -> list[str]:
    """Valid dates in ``fmt`` around a literal that reads as a date (or a month, a year, a LIKE
    prefix of one): the day itself, the days before and after, the first and last day of its
    month, the first of the next month, and for a format with a time the end of the day
    before. Empty when the literal is no date."""
    text = value.replace("%", "").replace("_", "").rstrip("-/ T:")
    when = None
    lit_fmt = ""
    for lit_fmt in _LITERAL_FORMATS:
        when = parse_date(text, lit_fmt)
        if when is not None:
            break
    if when is None:
        return []
    day = _dt.timedelta(days=1)
    first = when.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    next_first = (first + 32 * day).replace(day=1)
    out = [when, when - day, when + day, first, first - day, next_first - day, next_first]
    if lit_fmt == "%Y" and when.year < 9999:
        # a year (``strftime('%Y', d) = '2024'``) ends on Dec 31: its last day and the next
        # year's first are where a range written for it goes wrong
        out += [when.replace(month=12, day=31), when.replace(year=when.year + 1)]
    if "%H" in fmt:
        out += [when - _dt.timedelta(seconds=1), next_first - _dt.timedelta(seconds=1),
                when + _dt.timedelta(hours=12)]
        if lit_fmt == "%Y" and when.year < 9999:
            out.append(when.replace(year=when.year + 1) - _dt.timedelta(seconds=1))
    formatted = []
    for w in out:
        if 1 <= w.year <= 9999:
            formatted.append(w.strftime(fmt))
    return _dedup(formatted)


def boundaries(value: str | int | float, column: Column, fmt: str | None = None) -> list[Any]:
    """A literal and the values just around it, in the column's affinity; for a date column
    (``fmt``), valid dates around it first."""
    if isinstance(value, str):
        out: list[Any] = date_neighbours(value, fmt) if fmt else []
        out.append(value)
        fixed = value.replace("%", "").replace("_", "")
        if fixed != value:
            out += [fixed, fixed + "x", "x" + fixed]
        out += [value[:-1], value + "a", value.upper(), value.lower(), ""]
        if column.affinity in ("INTEGER", "REAL", "NUMERIC"):
            out += [v for v in (_number(value),) if v is not None]
        return out
    if isinstance(value, bool):
        return [int(value), 1 - int(value)]
    if column.affinity == "INTEGER" or isinstance(value, int):
        base = int(value)
        return [base - 1, base, base + 1]
    return [value - 1, value - 0.5, value, value + 0.5, value + 1]


def _number(text: str) -> int | float | None:
    try:
        return int(text)
    except ValueError:
        try:
            return float(text)
        except ValueError:
            return None


Pools = dict[tuple[str, str], list[Any]]


def both_pools(sample: Callable[[str, str], list[Any]], schema: DbSchema,
               queries: Iterable[str], dialect: str = "sqlite") -> tuple[Pools, Pools]:
    """(table, column) -> candidate values, deduplicated in a fixed order (``sample(table,
    column)`` gives the real values), and the realistic ones: per column, only values of its
    own domain and format (module docstring)."""
    compared: dict[str, list[Any]] = {}
    loose: list[Any] = []
    for sql in queries:
        by_col, other = literal_values(sql, dialect)
        for name, found in by_col.items():
            compared.setdefault(name, []).extend(found)
        loose.extend(other)
    pools: Pools = {}
    real: Pools = {}
    for table in schema.tables:
        for col in table.columns:
            seen = sample(table.name, col.name)
            fmt = date_format(seen) if col.affinity in ("TEXT", "BLOB", "NUMERIC") else None
            values: list[Any] = []
            fitting: list[Any] = []
            for lit in compared.get(col.name.lower(), []):
                near = boundaries(lit, col, fmt)
                values += near
                fitting += _realistic_part(lit, near, col, fmt)
            fitting += _between(compared.get(col.name.lower(), []), col)
            values += seen
            fitting += seen
            values += [v for v in loose if _fits(v, col)]
            fitting += [v for v in loose if _fits(v, col) and _in_domain(v, seen, fmt)]
            if not col.not_null:
                values.append(None)
                fitting.append(None)
            if fmt is not None:
                # a date column gets dates: a row dated '2024' or '2024%a' is data the column
                # never holds, and a difference only it shows refutes nothing a user wrote
                values = [v for v in values if v is None
                          or (isinstance(v, str) and parse_date(v, fmt) is not None)]
            pools[(table.name, col.name)] = _dedup(values)
            real[(table.name, col.name)] = _dedup(fitting)
    return pools, real


def date_columns(pools: Pools) -> frozenset[tuple[str, str]]:
    """The columns whose pool holds only dates of one format (:func:`both_pools` keeps a date
    column's pool so): a candidate makes up no value for them, not even an edge one."""
    return frozenset(key for key, pool in pools.items() if date_format(pool) is not None)


def size_thresholds(sql: str, dialect: str = "sqlite") -> list[int]:
    """Row counts ``sql`` tells apart: each whole number it compares a ``COUNT`` with
    (``HAVING COUNT(*) >= 15`` differs from ``> 15`` only on a group of exactly 15 rows), and
    a ``LIMIT``/``OFFSET`` of 8 or more (``LIMIT 10`` differs from ``LIMIT 11`` only on 11
    rows; smaller ones the candidates' own sizes reach). A text sqlglot cannot read gives none."""
    import sqlglot
    from sqlglot import exp

    try:
        tree = sqlglot.parse_one(sql, read=dialect)
    except Exception:
        return []
    out: list[int] = []
    for lit in tree.find_all(exp.Literal):
        value = None if lit.is_string else _number(str(lit.this))
        if not isinstance(value, int) or value < 1:
            continue
        node = lit.parent
        while isinstance(node, exp.Neg | exp.Cast | exp.Paren | exp.Tuple):
            node = node.parent
        if isinstance(node, exp.Limit | exp.Offset):
            if value >= 8:
                out.append(value)
        elif isinstance(node, exp.In | exp.Between):
            if node.this.find(exp.Count) is not None:
                out.append(value)
        elif isinstance(node, exp.Binary) and not isinstance(node, exp.Connector):
            other = node.left if node.right is lit or lit in node.right.walk() else node.right
            if other.find(exp.Count) is not None:
                out.append(value)
    return sorted(set(out))


def _realistic_part(literal: object, near: list[Any], col: Column, fmt: str | None) -> list[Any]:
    """Of a literal's boundaries, those of the column's domain: valid dates in a date column's
    format; the literal itself (a LIKE pattern's fixed text) in another text column; the
    numbers around a number (``v - 1``, ``v``, ``v + 1``, halves)."""
    if fmt is not None:
        return [v for v in near if isinstance(v, str) and parse_date(v, fmt) is not None]
    if isinstance(literal, str):
        if col.affinity in ("INTEGER", "REAL", "NUMERIC"):
            return [v for v in near if not isinstance(v, str)]
        return [literal] if "%" not in literal and "_" not in literal else []
    return list(near)


def _between(literals: list[Any], col: Column) -> list[Any]:
    """A number strictly between each two neighbouring numeric literals compared with the
    column: ``Total > 14`` and ``Total >= 14.5`` differ only on a total such as 14.25, a value
    of the column's own kind that no literal's ``v - 1``/``v + 1`` reaches."""
    numbers = sorted({v for v in literals
                      if isinstance(v, int | float) and not isinstance(v, bool)})
    out: list[Any] = []
    for low, high in pairwise(numbers):
        if col.affinity == "INTEGER":
            if high - low >= 2:
                out.append(int(low + (high - low) // 2))
        elif col.affinity in ("REAL", "NUMERIC"):
            out.append((low + high) / 2)
    return out


def _in_domain(value: object, seen: list[Any], fmt: str | None) -> bool:
    """A value not from a literal compared with the column: realistic when it is a date in the
    column's format, one of its existing values, or a number within its observed range."""
    if fmt is not None:
        return isinstance(value, str) and parse_date(value, fmt) is not None
    if value in seen:
        return True
    numbers = [v for v in seen if isinstance(v, int | float) and not isinstance(v, bool)]
    if isinstance(value, int | float) and numbers:
        return min(numbers) <= value <= max(numbers)
    return False


def is_realistic(value: object, pool: list[Any]) -> bool:
    """Whether a cell's value is one a reader takes for real data: NULL, one of the column's
    realistic pool (:func:`both_pools`), or a number within that pool's range."""
    if value is None:
        return True
    if any(type(v) is type(value) and v == value for v in pool):
        return True
    numbers = [v for v in pool if isinstance(v, int | float) and not isinstance(v, bool)]
    return isinstance(value, int | float) and not isinstance(value, bool) and bool(numbers) \
        and min(numbers) <= value <= max(numbers)


def _fits(value: object, col: Column) -> bool:
    if isinstance(value, str):
        return col.affinity in ("TEXT", "BLOB")
    return col.affinity in ("INTEGER", "REAL", "NUMERIC")


def _dedup(values: list[Any]) -> list[Any]:
    seen: set[tuple[str, Any]] = set()
    out: list[Any] = []
    for v in values:
        key = (type(v).__name__, v)
        if key not in seen:
            seen.add(key)
            out.append(v)
    return out
