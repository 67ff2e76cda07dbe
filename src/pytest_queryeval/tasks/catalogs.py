"""What the collateral check (:mod:`.collateral`) asks of each engine's catalog: its tables,
their columns and primary keys, its schema as lines, and which tables differ between two
copies. One class per engine, each the ``catalog`` of its :data:`.engines.TASK_ENGINES` entry.

Why classes in the engine table: the check switched on the engine's name (``engine ==
"sqlite"``, ``"duckdb"``, else PostgreSQL) in each of its steps, so an engine added to the
table fell into PostgreSQL's catalog queries in every step; an engine now brings its answers
with it, and a connection of an engine that has none is refused by name (:func:`.engines.of`).
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from .dbapi import Connection

#: SQLite copies up to this size are compared page by page first (:meth:`SqliteCatalog.unchanged`).
MAX_PAGED_BYTES = 64 << 20

#: ``(shown name, columns, gold's count, prediction's count)`` of a table whose rows differ.
Differing = tuple[str, list[str], int, int]
#: ``(shown name, columns, gold's quoted name, prediction's quoted name)`` of a table to compare.
Compared = tuple[str, list[str], str, str]


def quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _columns(conn: Connection, quoted: str) -> list[str]:
    cur = conn.execute(f"SELECT * FROM {quoted} WHERE 1 = 0")
    names = [str(d[0]) for d in cast("Sequence[Sequence[Any]]", cur.description)]
    cur.fetchall()
    return names


def _row_hash(*values: object) -> int:
    return hash(values) & 0xFFFFFFFF  # 32 bits: SQLite's sum() of a million stays in 64


class Catalog:
    """An engine whose round trips cost more than a scan of a small table (DuckDB,
    PostgreSQL): every table's columns in one query, every table's count and hash aggregate
    in one query per copy. A subclass gives the queries."""

    #: The module (its first part, ``_`` stripped) a connection of this engine comes from.
    module = ""
    #: The schema whose tables are shown by their bare name.
    default_schema = ""
    #: ``(schema, table, column)`` of every table, in column order.
    columns_sql = ""

    def owns(self, conn: Connection) -> bool:
        """Whether ``conn`` is a connection of this engine."""
        return type(conn).__module__.lstrip("_").split(".")[0] == self.module

    def tables(self, conn: Connection) -> dict[str, str]:
        """Shown name -> the quoted (qualified) name of each base table of the copy."""
        raise NotImplementedError

    def unchanged(self, gold: Connection, pred: Connection, names: set[str]) -> set[str]:
        """The tables of ``names`` known unchanged without reading them (none here)."""
        return set()

    def column_lookup(self, conn: Connection, tables: dict[str, str]
                      ) -> Callable[[str], list[str]]:
        """Shown table name -> its columns in order (all read in one query)."""
        out: dict[str, list[str]] = {}
        for schema, table, column in conn.execute(self.columns_sql).fetchall():
            out.setdefault(str(table) if schema == self.default_schema else f"{schema}.{table}",
                           []).append(str(column))
        return lambda name: out.get(name, [])

    def stats_part(self, i: int, quoted: str, cols: list[str]) -> str:
        """One table's ``SELECT i, count, hash`` of the per-copy query."""
        raise NotImplementedError

    def stats(self, conn: Connection, tables: list[tuple[str, list[str]]]
              ) -> list[tuple[int, Any]]:
        """``(count, hash)`` of each table, in one query."""
        if not tables:
            return []
        parts = [self.stats_part(i, quoted, cols) for i, (quoted, cols) in enumerate(tables)]
        rows = conn.execute(" UNION ALL ".join(parts)).fetchall()
        by_index = {int(i): (int(n), h) for i, n, h in rows}
        return [by_index[i] for i in range(len(tables))]

    def differing(self, gold: Connection, pred: Connection,
                  compared: list[Compared]) -> list[Differing]:
        """The tables of ``compared`` whose count or hash differs: one query per copy (round
        trips cost most here)."""
        g_stats = self.stats(gold, [(g, cols) for _, cols, g, _ in compared])
        p_stats = self.stats(pred, [(p, cols) for _, cols, _, p in compared])
        return [(name, cols, g[0], p[0]) for (name, cols, _, _), g, p
                in zip(compared, g_stats, p_stats, strict=True) if g != p]

    def key_columns(self, conn: Connection, name: str, quoted: str) -> list[str]:
        """The names of the table's primary key columns ([] without one)."""
        raise NotImplementedError

    def schema(self, conn: Connection, kept: Callable[[str], bool]) -> Counter[str]:
        """The copy's schema as lines: each table with its columns and types, each index by
        its table, columns and uniqueness (not its name: the same index under another name is
        the same effect), each view with its columns, each trigger by name and table."""
        raise NotImplementedError


class SqliteCatalog(Catalog):
    """SQLite: a round trip is a function call, so tables are compared one at a time: pages
    first, then counts, a hash only when they agree (a per-row hash function registered on
    the connection)."""

    module = "sqlite3"

    def owns(self, conn: Connection) -> bool:
        return isinstance(conn, sqlite3.Connection)

    def tables(self, conn: Connection) -> dict[str, str]:
        rows = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT "
                            "LIKE 'sqlite\\_%' ESCAPE '\\'").fetchall()
        # qualified: an unqualified name resolves to a temporary object first
        return {str(r[0]): f'"main".{quote(str(r[0]))}' for r in rows}

    def column_lookup(self, conn: Connection, tables: dict[str, str]
                      ) -> Callable[[str], list[str]]:
        return lambda name: _columns(conn, tables[name])

    def unchanged(self, gold: Connection, pred: Connection, names: set[str]) -> set[str]:
        """The tables of ``names`` whose pages (``dbstat``: b-tree and overflow pages) are
        the same pages, byte for byte, in both copies: unchanged for certain, so neither
        counted nor hashed. Both copies start from one image, and a table no statement wrote
        keeps its pages (when the two images are equal but for their change counters, all of
        them, without asking ``dbstat``). Empty when ``dbstat`` is missing or the copies are
        over :data:`MAX_PAGED_BYTES`."""
        g_con, p_con = cast(sqlite3.Connection, gold), cast(sqlite3.Connection, pred)
        try:
            size = int(g_con.execute("PRAGMA page_size").fetchone()[0])
            if max(int(c.execute("PRAGMA page_count").fetchone()[0]) for c in (g_con, p_con)) \
                    * size > MAX_PAGED_BYTES:
                return set()
            # bytes, not memoryviews: a memoryview compares element by element, 100x slower
            g_image, p_image = g_con.serialize(), p_con.serialize()
            if g_image == p_image or (  # else equal but for the change counters (copies slices)
                    len(g_image) == len(p_image) and g_image[28:92] == p_image[28:92]
                    and g_image[100:] == p_image[100:]):
                return set(names)
            sql = "SELECT name, group_concat(pageno) FROM dbstat WHERE aggregate = 0 GROUP BY name"
            g_pages = dict(g_con.execute(sql).fetchall())
            p_pages = dict(p_con.execute(sql).fetchall())
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

    @staticmethod
    def _count(conn: Connection, quoted: str) -> int:
        return int(conn.execute(f"SELECT count(*) FROM {quoted}").fetchone()[0])

    @staticmethod
    def _hash(conn: Connection, quoted: str, cols: list[str]) -> Any:
        """The sum of a 32-bit hash of each row, computed in the engine."""
        con = cast(sqlite3.Connection, conn)
        con.create_function("qe_row_hash", -1, _row_hash, deterministic=True)
        listed = ", ".join(quote(c) for c in cols)
        return con.execute(f"SELECT sum(qe_row_hash({listed})) FROM {quoted}").fetchone()[0]

    def differing(self, gold: Connection, pred: Connection,
                  compared: list[Compared]) -> list[Differing]:
        """Counts first, a hash only when they agree (no round trip to pay for)."""
        counts = {name: (self._count(gold, g), self._count(pred, p))
                  for name, _, g, p in compared}
        return [(name, cols, *counts[name]) for name, cols, g, p in compared
                if counts[name][0] != counts[name][1] or (counts[name][0] and
                self._hash(gold, g, cols) != self._hash(pred, p, cols))]

    def key_columns(self, conn: Connection, name: str, quoted: str) -> list[str]:
        rows = conn.execute("SELECT name FROM pragma_table_info(?, 'main') WHERE pk > 0 "
                            "ORDER BY pk", (name,)).fetchall()
        return [str(r[0]) for r in rows]

    def schema(self, conn: Connection, kept: Callable[[str], bool]) -> Counter[str]:
        out: Counter[str] = Counter()
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


class DuckdbCatalog(Catalog):
    """DuckDB: its ``duckdb_*()`` catalog functions; ``sum(hash(columns))`` per table."""

    module = "duckdb"
    default_schema = "main"
    columns_sql = ("SELECT schema_name, table_name, column_name FROM duckdb_columns() WHERE NOT "
                   "internal AND database_name = current_database() ORDER BY "
                   "schema_name, table_name, column_index")

    def tables(self, conn: Connection) -> dict[str, str]:
        rows = conn.execute("SELECT schema_name, table_name FROM duckdb_tables() WHERE NOT "
                            "internal AND NOT temporary AND database_name = "
                            "current_database()").fetchall()
        # by the database too: in DuckDB, main.t resolves to a temporary t first
        database = quote(str(conn.execute("SELECT current_database()").fetchone()[0]))
        return {(str(t) if s == "main" else f"{s}.{t}"):
                f"{database}.{quote(str(s))}.{quote(str(t))}" for s, t in rows}

    def stats_part(self, i: int, quoted: str, cols: list[str]) -> str:
        return (f"SELECT {i} AS i, count(*) AS n, sum(hash({', '.join(map(quote, cols))})) "
                f"AS h FROM {quoted}")

    def key_columns(self, conn: Connection, name: str, quoted: str) -> list[str]:
        schema, _, table = name.rpartition(".")
        rows = conn.execute("SELECT constraint_column_names FROM duckdb_constraints() WHERE "
                            "constraint_type = 'PRIMARY KEY' AND table_name = ? AND "
                            "schema_name = ?", [table, schema or "main"]).fetchall()
        return [str(c) for c in rows[0][0]] if rows else []

    def schema(self, conn: Connection, kept: Callable[[str], bool]) -> Counter[str]:
        out: Counter[str] = Counter()
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


class PostgresCatalog(Catalog):
    """PostgreSQL: ``pg_catalog`` and ``information_schema``;
    ``sum(hashtextextended(row::text, 0))`` per table."""

    module = "psycopg"
    default_schema = "public"
    columns_sql = ("SELECT table_schema, table_name, column_name FROM information_schema.columns "
                   "WHERE table_schema NOT IN ('pg_catalog', 'information_schema') ORDER BY "
                   "table_schema, table_name, ordinal_position")

    def tables(self, conn: Connection) -> dict[str, str]:
        rows = conn.execute(
            "SELECT n.nspname, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = "
            "c.relnamespace WHERE c.relkind IN ('r', 'p') AND n.nspname NOT IN ('pg_catalog', "
            "'information_schema') AND n.nspname NOT LIKE 'pg\\_toast%' AND n.nspname NOT LIKE "
            "'pg\\_temp%'").fetchall()
        return {(str(t) if s == self.default_schema else f"{s}.{t}"):
                f"{quote(str(s))}.{quote(str(t))}" for s, t in rows}

    def stats_part(self, i: int, quoted: str, cols: list[str]) -> str:
        return (f"SELECT {i} AS i, count(*) AS n, sum(hashtextextended(t::text, 0)) AS h "
                f"FROM {quoted} AS t")

    def key_columns(self, conn: Connection, name: str, quoted: str) -> list[str]:
        rows = conn.execute("SELECT a.attname FROM pg_index i JOIN pg_attribute a ON "
                            "a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey) WHERE "
                            "i.indisprimary AND i.indrelid = %s::regclass",
                            (quoted,)).fetchall()
        return [str(r[0]) for r in rows]

    def schema(self, conn: Connection, kept: Callable[[str], bool]) -> Counter[str]:
        out: Counter[str] = Counter()
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

