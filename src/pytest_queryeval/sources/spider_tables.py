"""The Spider view of a database schema: lower-cased names, ``__t.c__`` ids, foreign-key map.

Column ids and the foreign-key canonicalisation map (``kmap``) follow taoyds/spider
``process_sql.Schema`` and ``evaluation.build_foreign_key_map`` (Apache-2.0), including the
grouping quirk of the latter (a pair joins the *first* group that holds either column, no real
union-find), because exact-match numbers depend on it. A ``Schema`` also owns the parse cache
of the queries scored against it: the same text is parsed once per schema.

It lives in sources/, below the Spider evaluator (:mod:`..metrics.spider`), because the
``spider-schema`` source type serves a ``tables.json`` through it.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from ..errors import ConfigError

#: Entries kept per schema before the parse cache is emptied (bounds memory on huge runs).
CACHE_LIMIT = 50_000


class Schema:
    """Tables and columns of one database as the Spider evaluator sees them."""

    def __init__(self, tables: dict[str, list[str]],
                 column_order: Sequence[str] | None = None,
                 foreign_keys: Iterable[tuple[int, int]] = (),
                 name: str = "") -> None:
        #: table (lower case) -> its columns (lower case), as ``process_sql.Schema.schema``.
        self.tables: dict[str, list[str]] = {
            t.lower(): [c.lower() for c in cols] for t, cols in tables.items()
        }
        self.name = name
        id_map: dict[str, str] = {"*": "__all__"}
        for t, cols in self.tables.items():
            for c in cols:
                id_map[f"{t}.{c}"] = f"__{t}.{c}__"
        for t in self.tables:
            id_map[t] = f"__{t}__"
        self.id_map = id_map
        # valid_col_units of the evaluator: every ``__t.c__`` id, grouped by its ``__t`` prefix.
        by_prefix: dict[str, list[str]] = {}
        for value in id_map.values():
            if "." in value:
                by_prefix.setdefault(value[: value.index(".")], []).append(value)
        self._cols_by_prefix = {k: frozenset(v) for k, v in by_prefix.items()}
        if column_order is None:
            column_order = ["__all__"] + [f"__{t}.{c}__" for t, cols in self.tables.items()
                                          for c in cols]
        self.kmap = _foreign_key_map(list(column_order), foreign_keys)
        self._cache: dict[tuple[str, str], object] = {}  # the Spider matcher's analyses and reasons
        self._lock = threading.Lock()

    # -- construction ---------------------------------------------------------------------
    @classmethod
    def from_tables(cls, tables: dict[str, list[str]],
                    foreign_keys: Iterable[tuple[str, str]] = ()) -> Schema:
        """From ``{table: [columns]}`` and ``("t.c", "t2.c2")`` foreign-key pairs (SQLAlchemy
        introspection builds these)."""
        order = ["__all__"] + [f"__{t.lower()}.{c.lower()}__"
                               for t, cols in tables.items() for c in cols]
        index = {col: i for i, col in reversed(list(enumerate(order)))}
        pairs = []
        for a, b in foreign_keys:
            ka, kb = f"__{a.lower()}__", f"__{b.lower()}__"
            if ka in index and kb in index:
                pairs.append((index[ka], index[kb]))
        return cls(tables, order, pairs)

    @classmethod
    def from_sqlite(cls, path: str | os.PathLike[str]) -> Schema:
        """Introspect a SQLite file (``sqlite_master`` + ``PRAGMA``, like the evaluator)."""
        uri = Path(path).resolve().as_uri() + "?mode=ro"
        conn = sqlite3.connect(uri, uri=True)
        try:
            names = [str(r[0]) for r in
                     conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
            tables: dict[str, list[str]] = {}
            fks: list[tuple[str, str]] = []
            for t in names:
                quoted = '"' + t.replace('"', '""') + '"'
                tables[t] = [str(r[1]) for r in conn.execute(f"PRAGMA table_info({quoted})")]
                for r in conn.execute(f"PRAGMA foreign_key_list({quoted})"):
                    # (id, seq, table, from, to, ...); ``to`` is NULL for "REFERENCES t"
                    ref_table, src, dst = str(r[2]), str(r[3]), r[4]
                    if dst is None:
                        continue
                    fks.append((f"{t}.{src}", f"{ref_table}.{dst}"))
        finally:
            conn.close()
        schema = cls.from_tables(tables, fks)
        schema.name = str(path)
        return schema

    @classmethod
    def from_tables_json(cls, path: str | os.PathLike[str], db_id: str) -> Schema:
        """One database of a Spider ``tables.json`` (parsed once per path; schemas reused, so
        their parse caches are shared by every case of that database)."""
        dbs = _load_tables_json(path)
        try:
            return dbs[db_id]
        except KeyError:
            raise ConfigError(f"db_id {db_id!r} is not in {path}", key="db_id") from None

    @classmethod
    def from_spider_entry(cls, entry: dict[str, Any]) -> Schema:
        """One ``tables.json`` entry (``table_names_original``, ``column_names_original``,
        ``foreign_keys`` by column index)."""
        tables_orig = [str(t) for t in entry["table_names_original"]]
        tables: dict[str, list[str]] = {t: [] for t in tables_orig}
        order: list[str] = []
        for t_idx, col in entry["column_names_original"]:
            if t_idx >= 0:
                t = tables_orig[t_idx]
                tables[t].append(str(col))
                order.append(f"__{t.lower()}.{str(col).lower()}__")
            else:
                order.append("__all__")
        fks = [(int(a), int(b)) for a, b in entry.get("foreign_keys", [])]
        return cls(tables, order, fks, name=str(entry.get("db_id", "")))

    # -- used by the parser and matcher ---------------------------------------------------
    def valid_col_units(self, table_ids: Iterable[str]) -> frozenset[str]:
        """Column ids of the tables of a FROM clause (the evaluator's ``valid_col_units``)."""
        out: set[str] = set()
        for tid in table_ids:
            cols = self._cols_by_prefix.get(tid[:-2])
            if cols:
                out |= cols
        return frozenset(out)

    def cache_get(self, key: tuple[str, str]) -> object:
        return self._cache.get(key)

    def cache_put(self, key: tuple[str, str], value: object) -> None:
        with self._lock:
            if len(self._cache) >= CACHE_LIMIT:
                self._cache.clear()
            self._cache[key] = value

    def clear_cache(self) -> None:
        with self._lock:
            self._cache.clear()

    def __repr__(self) -> str:
        return f"Schema({self.name or '?'}: {len(self.tables)} tables)"


def _foreign_key_map(cols: list[str], foreign_keys: Iterable[tuple[int, int]]) -> dict[str, str]:
    groups: list[set[int]] = []
    for k1, k2 in foreign_keys:
        for group in groups:
            if k1 in group or k2 in group:
                break
        else:
            group = set()
            groups.append(group)
        group.add(k1)
        group.add(k2)
    kmap: dict[str, str] = {}
    for group in groups:
        ordered = sorted(group)
        if ordered[-1] >= len(cols) or ordered[0] < 0:
            continue
        for idx in ordered:
            kmap[cols[idx]] = cols[ordered[0]]
    return kmap


class _Schemas:
    """The databases of one ``tables.json``, each :class:`Schema` built when first asked for
    and then kept: a Spider dev run uses 20 of the file's 166, and building all of them was
    20 ms of the run. A database whose entry is malformed says so when it is used."""

    def __init__(self, entries: dict[str, dict[str, Any]], path: str) -> None:
        self._entries = entries
        self._built: dict[str, Schema] = {}
        self._path = path

    def __getitem__(self, db_id: str) -> Schema:
        schema = self._built.get(db_id)
        if schema is None:
            entry = self._entries[db_id]  # KeyError: not in the file
            try:
                schema = Schema.from_spider_entry(entry)
            except (ValueError, KeyError, TypeError, IndexError) as exc:
                raise ConfigError(f"not a Spider tables.json: {exc}",
                                  file=self._path) from None
            # two threads may build it: the first kept is every caller's (shared caches)
            schema = self._built.setdefault(db_id, schema)
        return schema


_TABLES_JSON: dict[str, tuple[float, _Schemas]] = {}
#: The same, keyed by the path string as given (no stat per call: cases look schemas up often).
_TABLES_BY_ARG: dict[str, _Schemas] = {}
_TABLES_LOCK = threading.Lock()


def _load_tables_json(path: str | os.PathLike[str]) -> _Schemas:
    arg = os.fspath(path)
    fast = _TABLES_BY_ARG.get(arg)
    if fast is not None:
        return fast
    key = str(Path(path).resolve())
    try:
        mtime = os.stat(key).st_mtime
    except OSError as exc:
        raise ConfigError(f"cannot read Spider tables file: {exc}", file=str(path)) from None
    with _TABLES_LOCK:
        hit = _TABLES_JSON.get(key)
        if hit is not None and hit[0] == mtime:
            return hit[1]
        try:
            with open(key, encoding="utf-8") as fh:
                data = json.load(fh)
            dbs = _Schemas({str(e["db_id"]): e for e in data}, str(path))
        except (ValueError, KeyError, TypeError, IndexError) as exc:
            raise ConfigError(f"not a Spider tables.json: {exc}", file=str(path)) from None
        _TABLES_JSON[key] = (mtime, dbs)
        _TABLES_BY_ARG[arg] = dbs
        return dbs
