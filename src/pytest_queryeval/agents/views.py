"""The views of an SQL datasource and the relations each reads, from the engine's catalog:
how a read of a view counts the forbidden tables and views under it whatever the engine's
own account of a query says.

Why apart from the engines' accounts: each engine names the base tables it reads for a query
it compiles, and nothing for one it cannot compile (a second statement, a placeholder, a
function of the agent's own harness: ``SELECT 1; SELECT count(*) FROM tunes`` and ``SELECT
Name FROM tunes WHERE TrackId > ?``, ``tunes`` a view of Track, counted as no read of Track);
and no engine names a view read through another view (``forbidden_tables: [tunes]``, read
as ``tunes2``: DuckDB's binder and PostgreSQL's plan name Track only). The thirty-sixth
re-probe's H1, H2 and H5. The catalog is read once a datasource, as a gold is (trusted).
"""

from __future__ import annotations

import contextlib
import re
import weakref
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["with_views"]

#: Each dialect's catalog of views (and DuckDB's macros, whose definition is a query or an
#: expression: ``CREATE MACRO n_v() AS (SELECT count(*) FROM v_t)`` read a forbidden view
#: with 0, the thirty-seventh re-probe's H2): (schema, name, definition) rows.
_CATALOGS: dict[str, str] = {
    "duckdb": "SELECT schema_name, view_name, sql FROM duckdb_views() WHERE NOT internal "
              "UNION ALL SELECT schema_name, function_name, 'SELECT ' || macro_definition "
              "FROM duckdb_functions() WHERE function_type IN ('macro', 'table_macro') AND "
              "NOT internal AND macro_definition IS NOT NULL",
    "sqlite": "SELECT 'main', name, sql FROM sqlite_master WHERE type = 'view'",
    "postgres": "SELECT schemaname, viewname, definition FROM pg_views WHERE schemaname NOT IN "
                "('pg_catalog', 'information_schema') UNION ALL SELECT schemaname, "
                "matviewname, definition FROM pg_matviews",
}
#: Blanks before a call's parenthesis (``n_v ()``).
_NO_BLANKS = re.compile(r"\s+\(")
#: The most views a catalog is read for (past them, the rest are not expanded).
MAX_VIEWS = 10_000

_read: weakref.WeakKeyDictionary[Any, Mapping[str, frozenset[str]]] = weakref.WeakKeyDictionary()


def with_views(source: Any, names: Iterable[str], sql: str = "") -> set[str]:
    """``names`` (a query's account of what it read, lower-cased) with, for each view among
    them and each macro ``sql`` calls, the relations its definition reads, views and macros
    under them included (each by its name and its schema-qualified name)."""
    out = set(names)
    views = _views(source)
    if not views:
        return out
    out |= _called(views, sql)
    todo = [n for n in out if n in views]
    while todo:
        for name in views[todo.pop()]:
            if name not in out:
                out.add(name)
                if name in views:
                    todo.append(name)
    return out


def _views(source: Any) -> Mapping[str, frozenset[str]]:
    """The datasource's views (each by its name and ``schema.name``, lower-cased) and the
    relations each definition names (:func:`~.textjudge.tables_of`); empty for a dialect
    without a catalog here. A catalog that cannot be read now is read again next time (not
    kept as empty: a transient timeout lost every later expansion)."""
    from ..errors import QueryEvalError

    try:
        return _read[source]
    except (KeyError, TypeError):
        pass
    try:
        views = _catalog(source)
    except QueryEvalError:
        return {}
    with contextlib.suppress(TypeError):  # not weakly referable: read again next time
        _read[source] = views
    return views


def _catalog(source: Any) -> Mapping[str, frozenset[str]]:
    from .textjudge import tables_of

    dialect = getattr(source, "dialect", None)
    query = _CATALOGS.get(dialect or "")
    if query is None:
        return {}
    rows = source.execute(query, trusted=True, max_rows=MAX_VIEWS).rows
    reads: dict[str, frozenset[str]] = {}
    texts: dict[str, str] = {}  # each relation's definitions, for the macros they call
    for schema, name, definition in rows:
        if not isinstance(name, str) or not isinstance(definition, str):
            continue
        read = frozenset(tables_of(definition, dialect))
        for key in (name.lower(), f"{str(schema).lower()}.{name.lower()}"):
            reads[key] = reads.get(key, frozenset()) | read
            texts[key] = texts.get(key, "") + "\n" + definition
    return {key: read | _called(reads, texts[key]) for key, read in reads.items()}


def _called(views: Mapping[str, frozenset[str]], sql: str) -> set[str]:
    """The relations of ``views`` that ``sql`` calls as a function (a macro: ``n_v()``,
    ``FROM tmv()``), by a word match (cautious: a name in a string counts too)."""
    if not sql or "(" not in sql:
        return set()
    calls = _NO_BLANKS.sub("(", sql.lower())
    return {name for name in views if "." not in name and name + "(" in calls}
