"""The collateral check: what the prediction changed that the gold did not (issue 41).

Why: a task's checks look at the tables its author thought of; a prediction that also runs
``UPDATE passengers SET ff_tier = NULL`` passes them all. So after the checks, every table of
the prediction's copy is compared with the same table of the gold's copy (and, for DDL, the
schema: tables' columns, indexes, views, triggers), and a difference fails the case.

Why bounded this way: a copy may hold a table of millions of rows. On SQLite, a table whose
pages are the same in both copies is unchanged (:func:`_same_pages`); any other costs a
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

import sqlite3
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from .dbapi import Connection

#: Rows fetched per side of a table whose count or hash differs (over it: counts only).
ROW_CAP = 10_000
#: Differing rows shown per table in the diff.
SHOWN = 3
#: SQLite copies up to this size are compared page by page first (:func:`_same_pages`).
MAX_PAGED_BYTES = 64 << 20


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
    g_tables, p_tables = _tables(gold), _tables(pred)

    def kept(name: str) -> bool:
        return name.lower() not in ignored and name.lower().rsplit(".", 1)[-1] not in ignored

    parts: list[str] = []
    lines: list[str] = []
    sqlite = isinstance(gold, sqlite3.Connection)
    same = _same_pages(cast(sqlite3.Connection, gold), cast(sqlite3.Connection, pred),
                       set(g_tables) & set(p_tables)) if sqlite else set()
    g_colmap = {} if sqlite else _all_columns(gold)
    p_colmap = {} if sqlite else _all_columns(pred)
    compared: list[tuple[str, list[str]]] = []
    for name in sorted(set(g_tables) | set(p_tables), key=str.lower):
        if not kept(name):
            continue
        if name not in p_tables:
            parts.append(f"{name} (dropped)")
            continue
        if name not in g_tables:
            parts.append(f"{name} (created)")
            continue
        g_cols = _columns(gold, g_tables[name]) if sqlite else g_colmap.get(name, [])
        p_cols = _columns(pred, p_tables[name]) if sqlite else p_colmap.get(name, [])
        if [c.lower() for c in g_cols] != [c.lower() for c in p_cols]:
            parts.append(f"{name} (columns differ)")
            if not spec.schema:  # for DDL, the schema's lines name the columns
                lines.append(f"collateral: {name}: columns: gold's copy "
                             f"({', '.join(g_cols)}), prediction's ({', '.join(p_cols)})")
            continue
        if name not in same:  # SQLite pages say nothing of columns (ADD COLUMN keeps them)
            compared.append((name, g_cols))
    if sqlite:  # counts first, a hash only when they agree (no round trip to pay for)
        counts = {name: (_count(gold, g_tables[name]), _count(pred, p_tables[name]))
                  for name, _ in compared}
        differ = [(name, cols, *counts[name]) for name, cols in compared
                  if counts[name][0] != counts[name][1] or (counts[name][0] and
                  _hash(cast(sqlite3.Connection, gold), g_tables[name], cols)
                  != _hash(cast(sqlite3.Connection, pred), p_tables[name], cols))]
    else:  # one query per copy for every table's count and hash: round trips cost most here
        g_stats = _stats(gold, [(g_tables[n], cols) for n, cols in compared])
        p_stats = _stats(pred, [(p_tables[n], cols) for n, cols in compared])
        differ = [(name, cols, g[0], p[0]) for (name, cols), g, p
                  in zip(compared, g_stats, p_stats, strict=True) if g != p]
    for name, cols, g_count, p_count in differ:
        summary, shown = _table_diff(gold, pred, name, (g_tables[name], p_tables[name]), cols,
                                     g_count, p_count)
        if summary:
            parts.append(f"{name} ({summary})")
            lines += shown
    parts.sort(key=str.lower)
    if spec.schema:
        only_gold, only_pred = _schema_diff(_schema(gold, kept), _schema(pred, kept))
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


# -- per engine -----------------------------------------------------------------------------


def _engine(conn: Connection) -> str:
    """The engine of a copy's connection, named: a connection of another engine is refused,
    never read as DuckDB's."""
    if isinstance(conn, sqlite3.Connection):
        return "sqlite"
    module = type(conn).__module__
    if module.startswith("psycopg"):
        return "postgres"
    if module.lstrip("_").startswith("duckdb"):
        return "duckdb"
    raise ValueError(f"the collateral check does not read a {module} connection")


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _tables(conn: Connection) -> dict[str, str]:
    """Shown name -> the quoted (qualified) name of each base table of the copy."""
    engine = _engine(conn)
    if engine == "sqlite":
        rows = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT "
                            "LIKE 'sqlite\\_%' ESCAPE '\\'").fetchall()
        # qualified: an unqualified name resolves to a temporary object first
        return {str(r[0]): f'"main".{_q(str(r[0]))}' for r in rows}
    if engine == "duckdb":
        rows = conn.execute("SELECT schema_name, table_name FROM duckdb_tables() WHERE NOT "
                            "internal AND NOT temporary AND database_name = "
                            "current_database()").fetchall()
        # by the database too: in DuckDB, main.t resolves to a temporary t first
        database = _q(str(conn.execute("SELECT current_database()").fetchone()[0]))
        return {(str(t) if s == "main" else f"{s}.{t}"): f"{database}.{_q(str(s))}.{_q(str(t))}"
                for s, t in rows}
    else:
        rows = conn.execute(
            "SELECT n.nspname, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = "
            "c.relnamespace WHERE c.relkind IN ('r', 'p') AND n.nspname NOT IN ('pg_catalog', "
            "'information_schema') AND n.nspname NOT LIKE 'pg\\_toast%' AND n.nspname NOT LIKE "
            "'pg\\_temp%'").fetchall()
        default = "public"
    return {(str(t) if s == default else f"{s}.{t}"): f"{_q(str(s))}.{_q(str(t))}"
            for s, t in rows}


def _same_pages(gold: sqlite3.Connection, pred: sqlite3.Connection,
                names: set[str]) -> set[str]:
    """SQLite: the tables of ``names`` whose pages (``dbstat``: b-tree and overflow pages) are
    the same pages, byte for byte, in both copies: unchanged for certain, so neither counted
    nor hashed. Both copies start from one image, and a table no statement wrote keeps its
    pages (when the two images are equal but for their change counters, all of them, without
    asking ``dbstat``). Empty when ``dbstat`` is missing or the copies are over
    :data:`MAX_PAGED_BYTES`."""
    try:
        size = int(gold.execute("PRAGMA page_size").fetchone()[0])
        if max(int(c.execute("PRAGMA page_count").fetchone()[0]) for c in (gold, pred)) \
                * size > MAX_PAGED_BYTES:
            return set()
        # bytes, not memoryviews: a memoryview compares element by element, 100x slower
        g_image, p_image = gold.serialize(), pred.serialize()
        if g_image == p_image or (  # else equal but for the change counters (copies slices)
                len(g_image) == len(p_image) and g_image[28:92] == p_image[28:92]
                and g_image[100:] == p_image[100:]):
            return set(names)
        sql = "SELECT name, group_concat(pageno) FROM dbstat WHERE aggregate = 0 GROUP BY name"
        g_pages = dict(gold.execute(sql).fetchall())
        p_pages = dict(pred.execute(sql).fetchall())
    except sqlite3.Error:
        return set()
    same: set[str] = set()
    for name, pages in g_pages.items():
        if name not in names or p_pages.get(name) != pages:
            continue
        spans = [((int(n) - 1) * size, int(n) * size) for n in str(pages).split(",")]
        if all(g_image[a:b] == p_image[a:b] for a, b in spans):
            same.add(str(name))
    return same


def _columns(conn: Connection, quoted: str) -> list[str]:
    cur = conn.execute(f"SELECT * FROM {quoted} WHERE 1 = 0")
    names = [str(d[0]) for d in cast("Sequence[Sequence[Any]]", cur.description)]
    cur.fetchall()
    return names


def _all_columns(conn: Connection) -> dict[str, list[str]]:
    """DuckDB, PostgreSQL: shown table name -> its columns in order, in one query."""
    if _engine(conn) == "duckdb":
        sql = ("SELECT schema_name, table_name, column_name FROM duckdb_columns() WHERE NOT "
               "internal AND database_name = current_database() ORDER BY "
               "schema_name, table_name, column_index")
        default = "main"
    else:
        sql = ("SELECT table_schema, table_name, column_name FROM information_schema.columns "
               "WHERE table_schema NOT IN ('pg_catalog', 'information_schema') ORDER BY "
               "table_schema, table_name, ordinal_position")
        default = "public"
    out: dict[str, list[str]] = {}
    for schema, table, column in conn.execute(sql).fetchall():
        out.setdefault(str(table) if schema == default else f"{schema}.{table}",
                       []).append(str(column))
    return out


def _stats(conn: Connection, tables: list[tuple[str, list[str]]]) -> list[tuple[int, Any]]:
    """DuckDB, PostgreSQL: ``(count, hash)`` of each table, in one query."""
    if not tables:
        return []
    if _engine(conn) == "duckdb":
        parts = [f"SELECT {i} AS i, count(*) AS n, sum(hash({', '.join(map(_q, cols))})) AS h "
                 f"FROM {quoted}" for i, (quoted, cols) in enumerate(tables)]
    else:
        parts = [f"SELECT {i} AS i, count(*) AS n, sum(hashtextextended(t::text, 0)) AS h "
                 f"FROM {quoted} AS t" for i, (quoted, _) in enumerate(tables)]
    rows = conn.execute(" UNION ALL ".join(parts)).fetchall()
    by_index = {int(i): (int(n), h) for i, n, h in rows}
    return [by_index[i] for i in range(len(tables))]


def _row_hash(*values: object) -> int:
    return hash(values) & 0xFFFFFFFF  # 32 bits: SQLite's sum() of a million stays in 64


def _count(conn: Connection, quoted: str) -> int:
    return int(conn.execute(f"SELECT count(*) FROM {quoted}").fetchone()[0])


def _hash(conn: sqlite3.Connection, quoted: str, cols: list[str]) -> Any:
    """SQLite: the sum of a 32-bit hash of each row, computed in the engine."""
    conn.create_function("qe_row_hash", -1, _row_hash, deterministic=True)
    listed = ", ".join(_q(c) for c in cols)
    return conn.execute(f"SELECT sum(qe_row_hash({listed})) FROM {quoted}").fetchone()[0]


def _key_columns(conn: Connection, name: str, quoted: str, cols: list[str]) -> list[int]:
    """The positions of the table's primary key columns ([] without one)."""
    engine = _engine(conn)
    if engine == "sqlite":
        rows = conn.execute("SELECT name FROM pragma_table_info(?, 'main') WHERE pk > 0 "
                            "ORDER BY pk", (name,)).fetchall()
        keys = [str(r[0]) for r in rows]
    elif engine == "duckdb":
        schema, _, table = name.rpartition(".")
        rows = conn.execute("SELECT constraint_column_names FROM duckdb_constraints() WHERE "
                            "constraint_type = 'PRIMARY KEY' AND table_name = ? AND "
                            "schema_name = ?", [table, schema or "main"]).fetchall()
        keys = [str(c) for c in rows[0][0]] if rows else []
    else:
        rows = conn.execute("SELECT a.attname FROM pg_index i JOIN pg_attribute a ON "
                            "a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey) WHERE "
                            "i.indisprimary AND i.indrelid = %s::regclass",
                            (quoted,)).fetchall()
        keys = [str(r[0]) for r in rows]
    lowered = [c.lower() for c in cols]
    return [lowered.index(k.lower()) for k in keys if k.lower() in lowered]


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


def _table_diff(gold: Connection, pred: Connection, name: str, names: tuple[str, str],
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
    keys = _key_columns(gold, name, quoted, cols)
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


# -- schema (DDL) ---------------------------------------------------------------------------


def _schema(conn: Connection, kept: Callable[[str], bool]) -> Counter[str]:
    """The copy's schema as lines: each table with its columns and types, each index by its
    table, columns and uniqueness (not its name: the same index under another name is the
    same effect), each view with its columns, each trigger by name and table."""
    engine = _engine(conn)
    out: Counter[str] = Counter()
    if engine == "sqlite":
        for kind, name, table in conn.execute(
                "SELECT type, name, tbl_name FROM sqlite_master WHERE name NOT LIKE "
                "'sqlite\\_%' ESCAPE '\\' OR type = 'index'").fetchall():
            if not kept(str(table)):
                continue
            if kind in ("table", "view"):
                cols = conn.execute("SELECT name, type, \"notnull\", pk FROM pragma_table_info(?)",
                                    (name,)).fetchall()
                out[f"{kind} {name}(" + ", ".join(
                    f"{c} {t}".strip() + (" NOT NULL" if nn else "") + (" PRIMARY KEY" if pk else "")
                    for c, t, nn, pk in cols) + ")"] += 1
            elif kind == "index":
                unique = conn.execute("SELECT \"unique\" FROM pragma_index_list(?) WHERE name = ?",
                                      (table, name)).fetchone()
                cols = [str(r[0]) if r[0] is not None else "<expression>" for r in conn.execute(
                    "SELECT name FROM pragma_index_info(?) ORDER BY seqno", (name,)).fetchall()]
                out[f"{'unique ' if unique and unique[0] else ''}index on {table}"
                    f"({', '.join(cols)})"] += 1
            elif kind == "trigger":
                out[f"trigger {name} on {table}"] += 1
        return out
    if engine == "duckdb":
        for table, col, typ, nullable in conn.execute(
                "SELECT table_name, column_name, data_type, is_nullable FROM duckdb_columns() "
                "WHERE NOT internal AND database_name = current_database() "
                "ORDER BY table_name, column_index").fetchall():
            if kept(str(table)):
                out[f"column {table}.{col} {typ}{'' if nullable else ' NOT NULL'}"] += 1
        for table, unique, expressions in conn.execute(
                "SELECT table_name, is_unique, expressions FROM duckdb_indexes() WHERE "
                "database_name = current_database()").fetchall():
            if kept(str(table)):
                out[f"{'unique ' if unique else ''}index on {table}{expressions}"] += 1
        for (view,) in conn.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal "
                                    "AND database_name = current_database()").fetchall():
            if kept(str(view)):
                out[f"view {view}"] += 1
        return out
    for table, col, typ, nullable in conn.execute(
            "SELECT table_name, column_name, data_type, is_nullable FROM "
            "information_schema.columns WHERE table_schema NOT IN ('pg_catalog', "
            "'information_schema') AND table_schema NOT LIKE 'pg\\_temp%' "
            "ORDER BY table_schema, table_name, ordinal_position").fetchall():
        if kept(str(table)):
            out[f"column {table}.{col} {typ}{' NOT NULL' if nullable == 'NO' else ''}"] += 1
    for table, definition in conn.execute(
            "SELECT tablename, regexp_replace(indexdef, 'INDEX \\S+ ON', 'INDEX ON') FROM "
            "pg_indexes WHERE schemaname NOT IN ('pg_catalog', 'information_schema')").fetchall():
        if kept(str(table)):
            out[str(definition)] += 1
    for (view,) in conn.execute("SELECT viewname FROM pg_views WHERE schemaname NOT IN "
                                "('pg_catalog', 'information_schema')").fetchall():
        if kept(str(view)):
            out[f"view {view}"] += 1
    for name, table in conn.execute(
            "SELECT t.tgname, c.relname FROM pg_trigger t JOIN pg_class c ON c.oid = "
            "t.tgrelid WHERE NOT t.tgisinternal").fetchall():
        if kept(str(table)):
            out[f"trigger {name} on {table}"] += 1
    return out


def _schema_diff(gold: Counter[str], pred: Counter[str]) -> tuple[list[str], list[str]]:
    return sorted((gold - pred).elements()), sorted((pred - gold).elements())
