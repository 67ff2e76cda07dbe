"""Where candidate cell values come from: the real database and the two queries.

The test-suite method (Zhong, Yu and Klein 2020, ``fuzz/fuzz.py``) fills random databases with
values of the real columns and, weighted up, the literals of the query, because a difference
between two queries hides at the values they compare against: ``Total > 10`` and
``Total >= 11`` differ only on a row whose Total lies between 10 and 11, ``LIKE 'A%'`` and
``= 'A'`` only on a name that starts with A and goes on. So each column's pool holds a sample
of its real values, and every literal a query compares that column with, with its boundaries
(``v - 1``, ``v``, ``v + 1``, halves for reals, the string cut and extended, the ``LIKE``
pattern's fixed text). NULL is added where the column allows it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from .schema import Column, DbSchema


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


def _python(lit: Any) -> Any:
    return str(lit.this) if lit.is_string else _number(str(lit.this))


def _compared_column(lit: Any) -> str | None:
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


def boundaries(value: Any, column: Column) -> list[Any]:
    """A literal and the values just around it, in the column's affinity."""
    if isinstance(value, str):
        out: list[Any] = [value]
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


def column_pools(sample: Callable[[str, str], list[Any]], schema: DbSchema,
                 queries: Iterable[str], dialect: str = "sqlite"
                 ) -> dict[tuple[str, str], list[Any]]:
    """(table, column) -> candidate values, deduplicated in a fixed order; ``sample(table,
    column)`` gives the real values."""
    compared: dict[str, list[Any]] = {}
    loose: list[Any] = []
    for sql in queries:
        by_col, other = literal_values(sql, dialect)
        for name, found in by_col.items():
            compared.setdefault(name, []).extend(found)
        loose.extend(other)
    pools: dict[tuple[str, str], list[Any]] = {}
    for table in schema.tables:
        for col in table.columns:
            values: list[Any] = []
            for lit in compared.get(col.name.lower(), []):
                values += boundaries(lit, col)
            values += sample(table.name, col.name)
            values += [v for v in loose if _fits(v, col)]
            if not col.not_null:
                values.append(None)
            pools[(table.name, col.name)] = _dedup(values)
    return pools


def _fits(value: Any, col: Column) -> bool:
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
