"""The PostgreSQL layer of the read-only guard: the statement as the server will read it.

sqlglot does not read PostgreSQL's escapes the way the server does (``U&"\\0064blink_exec"``
is ``dblink_exec`` to the server and an unknown name to a text match), so a predicted
PostgreSQL statement is parsed again with PostgreSQL's own parser (libpg_query, through the
``pglast`` package of the ``sqlalchemy`` extra). On that tree, :func:`check_postgres` refuses

* anything but exactly one ``SELECT``/``VALUES``/``TABLE`` statement, data-modifying
  statements anywhere in it (a CTE's ``DELETE``), ``SELECT ... INTO`` and row locks;
* functions that run SQL given as text (``query_to_xml`` and its family, ``ts_stat``,
  ``ts_rewrite``, ``crosstab``, ``connectby``, every ``dblink*``): their inner statement is
  never seen by any guard, and dblink's runs on a second connection outside the read-only
  transaction; and those that read tables named by a value (``table_to_xml``,
  ``schema_to_xml``, ``database_to_xml`` and their ``xmlschema`` forms), which no plan shows;
* the guard's side-effecting functions (``sqlguard``) by their real name.

A text PostgreSQL's parser rejects is passed on: the server's parser, the same grammar,
rejects it too before anything runs, and its syntax error is the case's reason.

It returns the names of every called function: the SQLAlchemy source then asks the server
which of them are volatile (``pg_proc.provolatile``) and refuses those outside
:data:`VOLATILE_ALLOWED` (:func:`volatile_refusal`), since a volatile function is what can
change state a rolled-back read-only transaction does not undo (advisory locks, signals,
replication slots, statistics resets, large objects). A view of the database whose rule calls
such a function is refused the same way when a query names it (:func:`.pgroutes.volatile_views`).

Without pglast a PostgreSQL prediction is refused (never executed unchecked), with a reason
naming the extra to install.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from ..errors import QueryRefused, QuerySyntaxError, TableComputed

#: Functions that execute a statement given to them as text (or build one from their
#: arguments): the text is never parsed by a guard. Matched on the name the server resolves.
SQL_TEXT_FUNCTIONS = frozenset({
    "query_to_xml", "query_to_xmlschema", "query_to_xml_and_xmlschema", "cursor_to_xml",
    "cursor_to_xmlschema", "ts_stat", "ts_rewrite", "crosstab", "crosstab2", "crosstab3",
    "crosstab4", "connectby", "xpath_table",
})
#: Functions that read every row of the tables they are given by name (a text or regclass
#: value): the plan shows a function scan, not the tables, so no count of an agent's reads
#: sees them (``table_to_xml('employee', ...)`` returned every employee, counted as none).
TABLE_BY_NAME_FUNCTIONS = frozenset({
    "table_to_xml", "table_to_xmlschema", "table_to_xml_and_xmlschema", "schema_to_xml",
    "schema_to_xmlschema", "schema_to_xml_and_xmlschema", "database_to_xml",
    "database_to_xmlschema", "database_to_xml_and_xmlschema",
})
#: The planner's statistics: the most common values and histogram bounds of every analysed
#: column the role may read (``pg_stats WHERE tablename = 'employee'`` listed the employees'
#: names), read through a view whose plan names no such table.
STATISTICS_VIEWS = frozenset({"pg_stats", "pg_stats_ext", "pg_stats_ext_exprs", "pg_statistic",
                              "pg_statistic_ext", "pg_statistic_ext_data"})
#: Prefixes of extension function families that open other connections or run SQL text.
SQL_TEXT_PREFIXES = ("dblink",)

#: Volatile functions of ``pg_catalog`` a predicted query may call: they read a clock, a
#: random source or a size, or wait (bounded by the statement timeout); none leaves state.
VOLATILE_ALLOWED = frozenset({
    "random", "random_normal", "gen_random_uuid", "clock_timestamp", "timeofday",
    "pg_sleep", "pg_sleep_for", "pg_sleep_until", "pg_relation_size", "pg_table_size",
    "pg_total_relation_size", "pg_indexes_size", "pg_database_size",
})

#: What runs when routine ``p`` (in language ``l``) is called: its body and the ``DEFAULT``
#: of its parameters, and a PL/pgSQL routine's definition, which its parser needs.
ROUTINE_TEXTS = """pg_catalog.concat_ws(' ', CASE WHEN p.prosqlbody IS NULL THEN p.prosrc
                                 ELSE pg_catalog.pg_get_functiondef(p.oid) END,
                            pg_catalog.pg_get_expr(p.proargdefaults, 0)),
       CASE WHEN l.lanname OPERATOR(pg_catalog.=) 'plpgsql'
            THEN pg_catalog.pg_get_functiondef(p.oid) END"""
#: The rows of :data:`ROUTINES_SQL` (and :data:`.pgbodies.CATCHING_SQL`): routine ``p`` in
#: namespace ``n`` and language ``l``.
OWN_ROUTINES = """
FROM pg_catalog.pg_proc p
JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) p.pronamespace
JOIN pg_catalog.pg_language l ON l.oid OPERATOR(pg_catalog.=) p.prolang
WHERE p.prokind OPERATOR(pg_catalog.<>) 'a'
  AND (n.nspname::pg_catalog.text OPERATOR(pg_catalog.<>) ALL
         (ARRAY['pg_catalog', 'information_schema']::pg_catalog.text[])
       OR p.oid OPERATOR(pg_catalog.>=) 16384::pg_catalog.oid)
"""
#: The database's own routines (outside the system schemas, or made there after ``initdb``):
#: name, volatility, language and :data:`ROUTINE_TEXTS`. Every catalog name and operator
#: qualified: a database may put ``public`` first on its ``search_path``.
ROUTINES_SQL = f"""
SELECT p.proname::pg_catalog.text, p.provolatile::pg_catalog.text, l.lanname::pg_catalog.text,
       {ROUTINE_TEXTS}{OWN_ROUTINES}"""
#: The builtins that are volatile, by name and by their C symbol (what a ``LANGUAGE internal``
#: routine's body names): what a routine of the database may not call unseen.
VOLATILE_BUILTINS_SQL = """
SELECT DISTINCT pg_catalog.unnest(ARRAY[p.proname::pg_catalog.text, p.prosrc])
FROM pg_catalog.pg_proc p
WHERE p.provolatile OPERATOR(pg_catalog.=) 'v'
  AND p.pronamespace OPERATOR(pg_catalog.=) 11::pg_catalog.oid
  AND p.oid OPERATOR(pg_catalog.<) 16384::pg_catalog.oid
"""
#: The foreign tables whose wrapper is not postgres_fdw (``file_fdw`` reads a file of the
#: server's host: 41a O7), each as ``(name, '')``, and each view's or materialized view's
#: relations, as ``(view, relation)``: what reads such a table through a view.
FILE_TABLES_SQL = """
SELECT c.relname::pg_catalog.text, ''::pg_catalog.text FROM pg_catalog.pg_foreign_table ft
JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) ft.ftrelid
JOIN pg_catalog.pg_foreign_server s ON s.oid OPERATOR(pg_catalog.=) ft.ftserver
JOIN pg_catalog.pg_foreign_data_wrapper w ON w.oid OPERATOR(pg_catalog.=) s.srvfdw
WHERE w.fdwname::pg_catalog.text OPERATOR(pg_catalog.<>) 'postgres_fdw'
UNION ALL
SELECT DISTINCT v.relname::pg_catalog.text, ref.relname::pg_catalog.text
FROM pg_catalog.pg_depend d
JOIN pg_catalog.pg_rewrite r ON r.oid OPERATOR(pg_catalog.=) d.objid
JOIN pg_catalog.pg_class v ON v.oid OPERATOR(pg_catalog.=) r.ev_class
JOIN pg_catalog.pg_class ref ON ref.oid OPERATOR(pg_catalog.=) d.refobjid
WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_rewrite'::pg_catalog.regclass
  AND v.oid OPERATOR(pg_catalog.<>) ref.oid
"""

def file_relations(rows: Iterable[tuple[str, str]]) -> frozenset[str]:
    """The foreign tables of :data:`FILE_TABLES_SQL`'s rows, and the views over them (through
    other views too), lower-cased: relations whose rows are a file of the server's host."""
    rows = [(str(a).lower(), str(b).lower()) for a, b in rows]
    found = {a for a, b in rows if not b}
    while more := {a for a, b in rows if b in found and a not in found}:
        found |= more
    return frozenset(found)


#: Node types that change data or take row locks, anywhere in the tree.
_WRITE_NODES = {"InsertStmt": "INSERT", "UpdateStmt": "UPDATE", "DeleteStmt": "DELETE",
                "MergeStmt": "MERGE"}
_QUERY_STATEMENTS = ("SelectStmt",)
_MISSING = ("refused: PostgreSQL predictions are checked with PostgreSQL's own parser, which "
            "needs pglast: pip install 'pytest-queryeval[sqlalchemy]'; an unchecked statement "
            "is never executed")

#: JSON tokens of libpg_query's output: strings, structure, and bare literals.
_JSON_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[{}\[\]:,]|[^{}\[\]:,\s"]+')


def check_postgres(sql: str, forbidden: frozenset[str] = frozenset()) -> tuple[str, ...]:
    """Raise :class:`QueryRefused` unless ``sql`` is one read-only PostgreSQL query that
    calls no SQL-running function nor one of ``forbidden`` (the guard's side-effecting
    functions); else the called functions, each as ``name`` or ``schema.name`` as the server
    resolves the spelling (escapes decoded)."""
    tree = _parse(sql)
    if tree is None:
        return ()
    stmts = tree.get("stmts") or []
    if not stmts:
        raise QueryRefused("no statement (only comments)")
    if len(stmts) > 1:
        raise QueryRefused(f"{len(stmts)} statements; only one query is executed")
    stmt = stmts[0].get("stmt") or {}
    kind = next(iter(stmt), "")
    if kind not in _QUERY_STATEMENTS:
        raise QueryRefused(f"{_label(kind)} is not a read-only query")
    called: list[str] = []
    for key, node in _nodes(stmt):
        if key in _WRITE_NODES:
            raise QueryRefused(f"{_WRITE_NODES[key]} inside a query")
        if key == "RangeVar" and str(node.get("relname", "")).lower() in STATISTICS_VIEWS:
            raise QueryRefused(f"{node.get('relname')} shows the values of other tables' "
                               "columns (their most common values and histograms), which no "
                               "count of the tables read can see")
        if key == "SelectStmt":
            if node.get("intoClause"):
                raise QueryRefused("SELECT INTO inside a query")
            if node.get("lockingClause"):
                raise QueryRefused("FOR UPDATE/SHARE lock inside a query")
        elif key == "FuncCall":
            parts = [str(p.get("String", {}).get("sval", "")) for p in node.get("funcname", [])
                     if isinstance(p, dict)]
            name = parts[-1] if parts else ""
            # a read of tables no count can name: every forbidden table, as DuckDB's
            # query_table() counts (``table_to_xml('employee', ...)`` counted none: 39a M5)
            if name in SQL_TEXT_FUNCTIONS or name.startswith(SQL_TEXT_PREFIXES):
                raise TableComputed(f"function {name}() executes SQL given as text (or on "
                                    "another connection), which no guard can check")
            if name in TABLE_BY_NAME_FUNCTIONS:
                raise TableComputed(f"function {name}() reads tables named by a value, which "
                                    "no plan shows")
            if name in forbidden:
                raise QueryRefused(f"function {name}() has side effects")
            qualified = ".".join(parts[-2:])
            if qualified and qualified not in called:
                called.append(qualified)
    return tuple(called)


def volatile_refusal(called: Iterable[str], volatile: Iterable[tuple[str, str]]) -> str | None:
    """The refusal for a query calling ``called`` (:func:`check_postgres`) when the server
    says ``volatile`` (``(schema, name)`` of every volatile overload of those names) are
    volatile, or None. An unqualified name is refused when any schema's overload is volatile
    and not an allowed ``pg_catalog`` one: the guard does not resolve overloads."""
    bad = {(s, n) for s, n in volatile if not (s == "pg_catalog" and n in VOLATILE_ALLOWED)}
    for fn in called:
        schema, _, name = fn.rpartition(".")
        if any(n == name and (not schema or s == schema) for s, n in bad):
            return (f"function {name}() is volatile (pg_proc.provolatile = 'v'): it may "
                    "change state that outlives the rolled-back read-only transaction "
                    "(only a few harmless volatile functions, such as random(), are allowed)")
    return None


def _parse(sql: str) -> dict[str, Any] | None:
    """The statement tree, or None for a syntax error."""
    try:
        from pglast import parser
    except ImportError:
        raise QueryRefused(_MISSING.removeprefix("refused: ")) from None
    if "\x00" in sql:  # the C parser would stop there, and see only what comes before
        raise QueryRefused("the statement holds a NUL character, which PostgreSQL never "
                           "receives in a query")
    try:
        text = parser.parse_sql_json(sql)
    except parser.ParseError as e:
        if "stack depth" in str(e):
            raise QueryRefused("the statement nests deeper than PostgreSQL's parser allows; "
                               "it is never executed") from None
        # The server's parser (the same grammar) rejects it as well, before anything runs,
        # and reports its own syntax error: the text is passed on, as the sqlglot layer does.
        return None
    except Exception as e:  # an invalid encoding, a NUL byte
        raise QuerySyntaxError(f"PostgreSQL's parser cannot read the statement: {e}") from None
    tree = _loads(text)
    if not isinstance(tree, dict):
        raise QueryRefused("PostgreSQL's parser returned no statement tree")
    return tree


def _json_tree(sql: str) -> Any:
    """``sql``'s statement tree from the parser's JSON (:func:`_loads`, no recursion), or None
    when it cannot be read (no pglast, a syntax error, the parser's stack depth, an invalid
    encoding): what :func:`tree_names` and :func:`statement_types` read, where :func:`_parse`
    refuses instead."""
    try:
        from pglast import parser

        return _loads(parser.parse_sql_json(sql))
    except Exception:
        return None


def tree_names(sql: str) -> set[str]:
    """Every name and string of ``sql`` as PostgreSQL's parser reads them, lower-cased
    (``U&"kp\\0061r"`` is ``kpar``, ``"k par"`` one name, an operator its symbol), or an
    empty set when it cannot: what a query reaches beside its words (the forty-seventh
    re-probe's R2). Read without recursion (:func:`_json_tree`)."""
    names: set[str] = set()
    stack: list[Any] = [_json_tree(sql)]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            names.update(node[k].lower() for k in ("sval", "relname")
                         if isinstance(node.get(k), str))
            stack.extend(v for v in node.values() if isinstance(v, dict | list))
        elif isinstance(node, list):
            stack.extend(node)
    return names


def statement_types(sql: str) -> list[str] | None:
    """The types of ``sql``'s statements as PostgreSQL's parser reads them (``SelectStmt``,
    ``DeleteStmt``...), or None when it cannot (a syntax error, no pglast). From the parser's
    JSON, read without recursion (:func:`_loads`): ``pglast.parse_sql`` builds Python objects
    as deep as the tree, and a 64 KB ``SELECT 1+1+...+1 !! 1`` crashed the pytest process
    (the forty-seventh re-probe's Q8)."""
    tree = _json_tree(sql)
    stmts = tree.get("stmts") if isinstance(tree, dict) else None
    if not isinstance(stmts, list):
        return None
    return [next(iter(s["stmt"]), "") for s in stmts
            if isinstance(s, dict) and isinstance(s.get("stmt"), dict)] or None


def _loads(text: str) -> Any:
    """``json.loads`` without recursion: the tree of ``SELECT 1+1+...`` is as deep as the sum
    is long, deeper than Python's recursion limit long before the parser's own."""
    stack: list[Any] = []
    key_stack: list[str | None] = []
    root: object = None
    key: str | None = None
    expect_key = False
    for m in _JSON_TOKEN.finditer(text):
        tok = m[0]
        if tok in ("{", "["):
            stack.append({} if tok == "{" else [])
            key_stack.append(key)
            key, expect_key = None, tok == "{"
            continue
        if tok == ",":
            expect_key = isinstance(stack[-1], dict)
            continue
        if tok == ":":
            continue
        if tok in ("}", "]"):
            value = stack.pop()
            key = key_stack.pop()
        elif expect_key:
            key, expect_key = json.loads(tok), False
            continue
        else:
            value = json.loads(tok)
        if not stack:
            root = value
        elif isinstance(stack[-1], dict):
            stack[-1][key] = value
        else:
            stack[-1].append(value)
    return root


def _nodes(tree: object) -> Iterable[tuple[str, dict[str, Any]]]:
    """Every ``(node type, fields)`` of the tree, outer before inner and in the order of the
    text (the first refusal is the one a reader sees first), without recursion."""
    todo: list[tuple[str, object]] = [("", tree)]
    while todo:
        key, item = todo.pop()
        if isinstance(item, dict):
            if key[:1].isupper():
                yield key, item
            todo.extend(reversed([(k, v) for k, v in item.items()
                                  if isinstance(v, dict | list)]))
        elif isinstance(item, list):
            todo.extend(reversed([("", v) for v in item if isinstance(v, dict | list)]))


def _label(kind: str) -> str:
    """``DeleteStmt`` -> ``DELETE``, ``ExplainStmt`` -> ``EXPLAIN``."""
    word = kind.removesuffix("Stmt")
    return _WRITE_NODES.get(kind) or re.sub(r"(?<=[a-z])(?=[A-Z])", " ", word).upper() \
        or "an empty statement"
