"""The schema a counterexample database must honour, read from the real SQLite file.

Why copy the DDL rather than model the constraints: SQLite itself then enforces every
constraint of the real schema on each candidate row (types by affinity, PRIMARY KEY, UNIQUE,
NOT NULL, CHECK, and FOREIGN KEY with ``PRAGMA foreign_keys = ON``); a row it refuses is simply
not in the candidate. What is modelled here is only what generation needs to make rows that
are likely to be accepted: each column's affinity, nullability and key role, and the order in
which tables must be filled (parents before children).
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Column:
    name: str
    #: SQLite affinity: INTEGER, REAL, NUMERIC, TEXT or BLOB (from the declared type's rules).
    affinity: str
    not_null: bool
    primary_key: bool
    #: (parent table, parent column) when this column references another table.
    references: tuple[str, str] | None = None


@dataclass(frozen=True)
class Table:
    name: str
    columns: tuple[Column, ...]
    #: The table's CREATE statement, as the real file holds it.
    ddl: str

    @property
    def integer_key(self) -> Column | None:
        """The INTEGER PRIMARY KEY (the rowid alias), which SQLite fills when given NULL."""
        keys = [c for c in self.columns if c.primary_key]
        return keys[0] if len(keys) == 1 and keys[0].affinity == "INTEGER" else None


@dataclass(frozen=True)
class DbSchema:
    #: Tables in an order where every referenced table comes before the tables referencing it.
    tables: tuple[Table, ...]
    #: CREATE INDEX statements (UNIQUE indexes are constraints too).
    indexes: tuple[str, ...] = field(default=())

    def table(self, name: str) -> Table:
        return next(t for t in self.tables if t.name.lower() == name.lower())

    def ddl(self) -> list[str]:
        return [t.ddl for t in self.tables] + list(self.indexes)


def affinity(declared: str) -> str:
    """SQLite's column affinity rules (datatype3.html, section 3.1), in their order."""
    t = declared.upper()
    if "INT" in t:
        return "INTEGER"
    if any(s in t for s in ("CHAR", "CLOB", "TEXT")):
        return "TEXT"
    if "BLOB" in t or not t:
        return "BLOB"
    if any(s in t for s in ("REAL", "FLOA", "DOUB")):
        return "REAL"
    return "NUMERIC"


def introspect(conn: sqlite3.Connection) -> DbSchema:
    """The tables (user tables only), their columns and foreign keys, parents first."""
    rows = conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table' AND sql IS NOT "
                        "NULL AND name NOT LIKE 'sqlite_%' ORDER BY rowid").fetchall()
    tables: dict[str, Table] = {}
    parents: dict[str, set[str]] = {}
    for name, ddl in rows:
        refs = {}
        for fk in conn.execute(f'PRAGMA foreign_key_list("{_q(name)}")').fetchall():
            # (id, seq, table, from, to, on_update, on_delete, match)
            refs[fk[3].lower()] = (fk[2], fk[4] or fk[3])
        cols = []
        for _cid, cname, ctype, notnull, _default, pk in conn.execute(
                f'PRAGMA table_info("{_q(name)}")').fetchall():
            cols.append(Column(cname, affinity(ctype or ""), bool(notnull), bool(pk),
                               refs.get(cname.lower())))
        tables[name] = Table(name, tuple(cols), ddl)
        parents[name] = {ref[0] for ref in refs.values() if ref[0] != name}
    indexes = tuple(sql for (sql,) in conn.execute(
        "SELECT sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL ORDER BY rowid"))
    return DbSchema(tuple(tables[n] for n in _parents_first(parents)), indexes)


def _parents_first(parents: dict[str, set[str]]) -> list[str]:
    """A topological order; a cycle of references is broken in definition order."""
    done: list[str] = []
    seen: set[str] = set()

    def visit(name: str, path: set[str]) -> None:
        if name in seen or name in path or name not in parents:
            return
        for parent in sorted(parents[name]):
            visit(parent, path | {name})
        seen.add(name)
        done.append(name)

    for name in parents:
        visit(name, set())
    return done


def _q(name: str) -> str:
    return name.replace('"', '""')
