"""The collateral check: what the prediction changed that the gold did not (issue 41).

Why: a task's checks look at the tables its author thought of; a prediction that also runs
``UPDATE passengers SET ff_tier = NULL`` passes them all. So after the checks, every table of
the prediction's copy is compared with the same table of the gold's copy (and, for DDL, the
schema: tables' columns, indexes, views, triggers), and a difference fails the case.

Why bounded this way: a copy may hold a table of millions of rows. On SQLite, a table whose
pages are the same in both copies is unchanged (:meth:`.catalogs.SqliteCatalog.unchanged`); any other costs a
``count(*)`` on both copies and, only when the counts agree, the sum of a per-row hash function
registered on the connection. On DuckDB and PostgreSQL, where a round trip costs more than a
scan of a small table, one query per copy computes every table's count and hash aggregate
(DuckDB ``sum(hash(columns))``, PostgreSQL ``sum(hashtextextended(row::text, 0))``). Either way
no row leaves the engine for an unchanged table. Only a table whose count or hash differs has its rows
fetched, and only when each side holds at most :data:`ROW_CAP` rows; a larger one is reported
by its counts alone. Hashes are compared within one worker process (both copies are open in
it), so Python's per-process hash seed is the same on both sides.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .catalogs import Catalog, Compared
from .engines import of

if TYPE_CHECKING:
    from .dbapi import Connection

#: Rows fetched per side of a table whose count or hash differs (over it: counts only).
ROW_CAP = 10_000
#: Differing rows shown per table in the diff.
SHOWN = 3


@dataclass(frozen=True)
class Collateral:
    """What the collateral check compares: every table but ``ignore`` (names matched
    case-insensitively, bare or schema-qualified), and the schema when ``schema``."""

    ignore: tuple[str, ...] = ()
    schema: bool = False


def compare(gold: Connection, pred: Connection, spec: Collateral) -> tuple[str, list[str]]:
    """``(reason, diff lines)`` naming what differs between the two copies; ``("", [])`` when
    nothing does."""
    ignored = {i.lower() for i in spec.ignore}
    catalog = of(gold).catalog
    g_tables, p_tables = catalog.tables(gold), catalog.tables(pred)

    def kept(name: str) -> bool:
        return name.lower() not in ignored and name.lower().rsplit(".", 1)[-1] not in ignored

    parts: list[str] = []
    lines: list[str] = []
    same = catalog.unchanged(gold, pred, set(g_tables) & set(p_tables))
    g_columns = catalog.column_lookup(gold, g_tables)
    p_columns = catalog.column_lookup(pred, p_tables)
    compared: list[Compared] = []
    for name in sorted(set(g_tables) | set(p_tables), key=str.lower):
        if not kept(name):
            continue
        if name not in p_tables:
            parts.append(f"{name} (dropped)")
            continue
        if name not in g_tables:
            parts.append(f"{name} (created)")
            continue
        g_cols, p_cols = g_columns(name), p_columns(name)
        if [c.lower() for c in g_cols] != [c.lower() for c in p_cols]:
            parts.append(f"{name} (columns differ)")
            if not spec.schema:  # for DDL, the schema's lines name the columns
                lines.append(f"collateral: {name}: columns: gold's copy "
                             f"({', '.join(g_cols)}), prediction's ({', '.join(p_cols)})")
            continue
        if name not in same:  # SQLite pages say nothing of columns (ADD COLUMN keeps them)
            compared.append((name, g_cols, g_tables[name], p_tables[name]))
    differ = catalog.differing(gold, pred, compared)
    for name, cols, g_count, p_count in differ:
        summary, shown = _table_diff(catalog, gold, pred, name,
                                     (g_tables[name], p_tables[name]), cols, g_count, p_count)
        if summary:
            parts.append(f"{name} ({summary})")
            lines += shown
    parts.sort(key=str.lower)
    if spec.schema:
        only_gold, only_pred = _schema_diff(catalog.schema(gold, kept), catalog.schema(pred, kept))
        if only_gold or only_pred:
            parts.append("schema (" + ", ".join(f"{n} {what}" for n, what in (
                (len(only_gold), "only in the gold's copy"),
                (len(only_pred), "only in the prediction's")) if n) + ")")
            lines += [f"collateral: schema: {x} only in the gold's copy" for x in only_gold]
            lines += [f"collateral: schema: {x} only in the prediction's copy" for x in only_pred]
    if not parts:
        return "", []
    return ("collateral: the prediction changed tables the gold did not: " + ", ".join(parts),
            lines)


def _fetch(conn: Connection, quoted: str) -> list[tuple[Any, ...]]:
    from decimal import Decimal

    def value(v: object) -> Any:
        if isinstance(v, Decimal):
            return float(v)
        try:
            hash(v)
        except TypeError:
            return repr(v)  # lists, dicts (DuckDB, PostgreSQL): compared by their text
        return v

    return [tuple(value(v) for v in r) for r in conn.execute(f"SELECT * FROM {quoted}")
            .fetchall()]


def _order(row: tuple[Any, ...]) -> tuple[tuple[int, Any], ...]:
    """Rows in a readable order (numbers as numbers, NULL last), whatever their types."""
    return tuple((0, v) if isinstance(v, int | float) and not isinstance(v, bool)
                 else (2, "") if v is None else (1, str(v)) for v in row)


def _table_diff(catalog: Catalog, gold: Connection, pred: Connection, name: str,
                names: tuple[str, str],
                cols: list[str], g_count: int,
                p_count: int) -> tuple[str, list[str]]:
    """A summary of how the prediction's table (whose count or hash differs) differs from the
    gold's ('' when its rows, as a multiset, do not) and a few diff lines."""
    if max(g_count, p_count) > ROW_CAP:
        if g_count == p_count:
            return f"{g_count} rows each, different content; over the {ROW_CAP}-row cap: " \
                   "rows not listed", []
        return f"{g_count} rows in the gold's copy, {p_count} in the prediction's; over the " \
               f"{ROW_CAP}-row cap: rows not listed", []
    from ..results import show_row

    quoted = names[0]  # each copy's table by its own qualified name
    g_rows, p_rows = _fetch(gold, quoted), _fetch(pred, names[1])
    missing_c = Counter(g_rows) - Counter(p_rows)
    extra_c = Counter(p_rows) - Counter(g_rows)
    missing = sorted(missing_c.elements(), key=_order)
    extra = sorted(extra_c.elements(), key=_order)
    lowered = [c.lower() for c in cols]
    keys = [lowered.index(k.lower()) for k in catalog.key_columns(gold, name, quoted)
            if k.lower() in lowered]
    changed: list[tuple[tuple[Any, ...], tuple[Any, ...]]] = []
    if keys:
        by_key = {tuple(r[k] for k in keys): r for r in extra}
        if len(by_key) == len(extra):
            kept_missing = []
            for r in missing:
                other = by_key.pop(tuple(r[k] for k in keys), None)
                if other is None:
                    kept_missing.append(r)
                else:
                    changed.append((r, other))
            missing, extra = kept_missing, list(by_key.values())
    parts = [f"{len(x)} rows {what}" for x, what in ((changed, "differ"), (missing, "missing"),
                                                     (extra, "added")) if x]
    lines: list[str] = []
    if changed:
        lines.append(f"collateral: {name}: {len(changed)} rows differ (first "
                     f"{min(SHOWN, len(changed))}; - gold's copy, + prediction's):")
        for g, p in changed[:SHOWN]:
            lines += [f"  - {show_row(g)}", f"  + {show_row(p)}"]
    if missing:
        lines.append(f"collateral: {name}: {len(missing)} rows missing (in the gold's copy, not "
                     f"the prediction's; first {min(SHOWN, len(missing))}):")
        lines += [f"  - {show_row(r)}" for r in missing[:SHOWN]]
    if extra:
        lines.append(f"collateral: {name}: {len(extra)} rows added (in the prediction's copy, "
                     f"not the gold's; first {min(SHOWN, len(extra))}):")
        lines += [f"  + {show_row(r)}" for r in extra[:SHOWN]]
    if not parts:  # the same rows: only a hash that saw something the rows do not
        return "", []
    return ", ".join(parts), lines


def _schema_diff(gold: Counter[str], pred: Counter[str]) -> tuple[list[str], list[str]]:
    return sorted((gold - pred).elements()), sorted((pred - gold).elements())
