"""What a PostgreSQL task's prediction may not do: act beyond its copy's database.

Why a parse and not the role alone: the role of a ``writable: sandbox`` datasource needs
``CREATEDB`` and owns the template it clones (PostgreSQL clones a non-template database only
for its owner), so that role can drop or alter the datasource's database, make databases the
sweep never sees, change its own settings and password (``ALTER ROLE CURRENT_USER SET
default_transaction_read_only = on`` breaks every later case), commit rows anywhere through
dblink and signal the other sessions of its role. None of that is a statement about the copy,
so it is refused before the copy is even made, by the statement tree PostgreSQL's own parser
(libpg_query, through pglast, as :mod:`..sources.pgguard` does for queries) builds:

* statement classes whose object is the server, not the database: databases, roles and their
  memberships, ``ALTER SYSTEM``, ``LOAD``, tablespaces, subscriptions, extensions, foreign
  servers, event triggers, ``CHECKPOINT``, ``PREPARE TRANSACTION``; ``COMMENT``, ``SECURITY
  LABEL``, ``GRANT``, ``RENAME`` and ``OWNER TO`` on a database, role, tablespace or parameter;
  ``SET ROLE`` / ``SET SESSION AUTHORIZATION`` (also in a function's ``SET`` clause); ``COPY``
  to or from a file or a program;
* functions that act outside the database (dblink's, signalling backends, server files, large
  object import/export, configuration reloads, replication slots, WAL control, shared
  statistics resets), named anywhere in the tree (a call, a trigger, an operator's or an
  aggregate's function, a rename), ``set_config`` of the role, and the functions that run SQL
  given as text;
* writes to the system catalogs (issue 50 item 3), by any spelling (``pg_proc``,
  ``pg_catalog.pg_proc``, ``"pg_catalog"."pg_proc"``, in a CTE, a rule, a function body):
  ``INSERT``/``UPDATE``/``DELETE``/``MERGE``/``TRUNCATE``/``COPY FROM``, ``ALTER``, ``GRANT``,
  triggers, rules, policies and indexes on a relation of ``pg_catalog``/``pg_toast`` (or an
  unqualified ``pg_*`` name, which resolves there), creating, altering, renaming or dropping
  objects there (``CREATE FUNCTION pg_catalog.f``, ``ALTER ... SET SCHEMA pg_catalog``), and a
  view over such a relation (a view of one table can be written through). A superuser with
  ``allow_privileged: true`` could otherwise rewrite a function's ``pg_proc`` row so that
  calling it runs ``pg_terminate_backend`` or ``pg_read_file`` without naming them, or clear
  another role's password in ``pg_authid``;
* the bodies of ``DO`` blocks and of functions and procedures created by the prediction:
  ``LANGUAGE sql`` bodies are parsed and held to the same rules, ``plpgsql`` bodies are parsed
  with PL/pgSQL's parser and every embedded statement and expression checked; a statement
  built at run time (``EXECUTE``) and any other language are refused, since no parse sees
  what they will run.

A text the parser rejects is passed on (the server's parser, the same grammar, rejects it
before anything runs). The refusal names what was refused; the case fails with it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from ..errors import QueryRefused
from ..sources.pgguard import SQL_TEXT_FUNCTIONS, SQL_TEXT_PREFIXES, _loads

#: Statement classes that act on the server (shared catalogs, files, other connections).
OUTSIDE_STATEMENTS = {
    "CreatedbStmt": "CREATE DATABASE", "DropdbStmt": "DROP DATABASE",
    "AlterDatabaseStmt": "ALTER DATABASE", "AlterDatabaseSetStmt": "ALTER DATABASE ... SET",
    "AlterDatabaseRefreshCollStmt": "ALTER DATABASE ... REFRESH COLLATION VERSION",
    "CreateRoleStmt": "CREATE ROLE", "AlterRoleStmt": "ALTER ROLE",
    "AlterRoleSetStmt": "ALTER ROLE ... SET", "DropRoleStmt": "DROP ROLE",
    "GrantRoleStmt": "GRANT/REVOKE of a role", "ReassignOwnedStmt": "REASSIGN OWNED",
    "DropOwnedStmt": "DROP OWNED", "AlterSystemStmt": "ALTER SYSTEM", "LoadStmt": "LOAD",
    "CheckPointStmt": "CHECKPOINT", "CreateTableSpaceStmt": "CREATE TABLESPACE",
    "DropTableSpaceStmt": "DROP TABLESPACE", "AlterTableSpaceOptionsStmt": "ALTER TABLESPACE",
    "CreateSubscriptionStmt": "CREATE SUBSCRIPTION",
    "AlterSubscriptionStmt": "ALTER SUBSCRIPTION", "DropSubscriptionStmt": "DROP SUBSCRIPTION",
    "CreateExtensionStmt": "CREATE EXTENSION", "AlterExtensionStmt": "ALTER EXTENSION",
    "AlterExtensionContentsStmt": "ALTER EXTENSION", "CreatePLangStmt": "CREATE LANGUAGE",
    "CreateFdwStmt": "CREATE FOREIGN DATA WRAPPER", "AlterFdwStmt": "ALTER FOREIGN DATA WRAPPER",
    "CreateForeignServerStmt": "CREATE SERVER", "AlterForeignServerStmt": "ALTER SERVER",
    "CreateUserMappingStmt": "CREATE USER MAPPING", "AlterUserMappingStmt": "ALTER USER MAPPING",
    "DropUserMappingStmt": "DROP USER MAPPING", "ImportForeignSchemaStmt": "IMPORT FOREIGN SCHEMA",
    "CreateEventTrigStmt": "CREATE EVENT TRIGGER", "AlterEventTrigStmt": "ALTER EVENT TRIGGER",
}
#: Objects that live in the cluster's shared catalogs, not in one database.
SHARED_OBJECTS = {"OBJECT_DATABASE": "DATABASE", "OBJECT_ROLE": "ROLE",
                  "OBJECT_TABLESPACE": "TABLESPACE", "OBJECT_SUBSCRIPTION": "SUBSCRIPTION",
                  "OBJECT_PARAMETER_ACL": "PARAMETER"}
#: Settings that change who the session is.
IDENTITY_SETTINGS = frozenset({"role", "session_authorization"})
#: Functions that act outside the copy's database, by the name the server resolves.
OUTSIDE_FUNCTIONS = frozenset({
    "pg_terminate_backend", "pg_cancel_backend", "pg_reload_conf", "pg_rotate_logfile",
    "pg_log_backend_memory_contexts", "pg_read_file", "pg_read_binary_file", "pg_stat_file",
    "pg_logdir_ls", "lo_import", "lo_export", "pg_create_restore_point", "pg_switch_wal",
    "pg_backup_start", "pg_backup_stop", "pg_start_backup", "pg_stop_backup", "pg_promote",
    "pg_wal_replay_pause", "pg_wal_replay_resume", "pg_create_physical_replication_slot",
    "pg_create_logical_replication_slot", "pg_drop_replication_slot",
    "pg_copy_physical_replication_slot", "pg_copy_logical_replication_slot",
    "pg_replication_slot_advance", "pg_import_system_collations",
})
#: Prefixes of such families (dblink's connections; directory listings; adminpack's file
#: writes; logical decoding and replication origins; shared statistics resets).
OUTSIDE_PREFIXES = (*SQL_TEXT_PREFIXES, "pg_ls_", "pg_file_", "pg_logical_",
                    "pg_replication_origin", "pg_stat_reset")
#: The schemas of the system catalogs: no statement of a task writes there.
SYSTEM_SCHEMAS = frozenset({"pg_catalog", "pg_toast"})
#: Statements that write what these fields name (a relation, a name list, an object), and
#: how a refusal calls them.
WRITE_TARGETS: dict[str, tuple[str, tuple[str, ...]]] = {
    "InsertStmt": ("INSERT", ("relation",)), "UpdateStmt": ("UPDATE", ("relation",)),
    "DeleteStmt": ("DELETE", ("relation",)), "MergeStmt": ("MERGE", ("relation",)),
    "TruncateStmt": ("TRUNCATE", ("relations",)),
    "AlterTableStmt": ("ALTER TABLE", ("relation",)),
    "CreateTrigStmt": ("CREATE TRIGGER", ("relation",)),
    "RuleStmt": ("CREATE RULE", ("relation",)), "IndexStmt": ("CREATE INDEX", ("relation",)),
    "CreatePolicyStmt": ("CREATE POLICY", ("table",)),
    "AlterPolicyStmt": ("ALTER POLICY", ("table",)),
    "CreateStmt": ("CREATE TABLE", ("relation",)), "ViewStmt": ("CREATE VIEW", ("view",)),
    "CreateTableAsStmt": ("CREATE TABLE AS", ("into",)),
    "CreateSeqStmt": ("CREATE SEQUENCE", ("sequence",)),
    "AlterSeqStmt": ("ALTER SEQUENCE", ("sequence",)),
    "RenameStmt": ("ALTER ... RENAME", ("relation", "object")),
    "AlterObjectSchemaStmt": ("ALTER ... SET SCHEMA", ("relation", "object")),
    "AlterOwnerStmt": ("ALTER ... OWNER TO", ("relation", "object")),
    "GrantStmt": ("GRANT/REVOKE", ("objects",)), "DropStmt": ("DROP", ("objects",)),
    "ClusterStmt": ("CLUSTER", ("relation",)),
    "CreateFunctionStmt": ("CREATE FUNCTION", ("funcname",)),
    "AlterFunctionStmt": ("ALTER FUNCTION", ("func",)),
    "DefineStmt": ("CREATE AGGREGATE/OPERATOR/TYPE", ("defnames",)),
    "CompositeTypeStmt": ("CREATE TYPE", ("typevar",)),
    "CreateEnumStmt": ("CREATE TYPE", ("typeName",)),
    "AlterEnumStmt": ("ALTER TYPE", ("typeName",)),
    "CreateDomainStmt": ("CREATE DOMAIN", ("domainname",)),
    "AlterDomainStmt": ("ALTER DOMAIN", ("typeName",)), "CommentStmt": ("COMMENT", ("object",)),
    "RefreshMatViewStmt": ("REFRESH MATERIALIZED VIEW", ("relation",)),
    "CopyStmt": ("COPY ... FROM", ("relation",)),  # COPY FROM only: a COPY TO reads
}
#: Languages whose bodies are checked; a function in any other is refused.
CHECKED_LANGUAGES = ("sql", "plpgsql")
#: PL/pgSQL statements that run a statement built at run time.
_DYNAMIC = {"PLpgSQL_stmt_dynexecute": "EXECUTE", "PLpgSQL_stmt_dynfors": "FOR ... EXECUTE"}
#: Nested bodies (a DO block creating a function with a DO inside ...) checked this deep.
_MAX_DEPTH = 8
_ASSIGN = re.compile(r"^[^:=]*?(:=|=)", re.S)


def check_task_statements(statements: Sequence[str]) -> None:
    """Raise :class:`QueryRefused` naming the first thing in ``statements`` (a task's
    prediction) that reaches beyond its copy's database; without pglast every prediction is
    refused (never run unchecked)."""
    for sql in statements:
        _check_text(sql, 0)


def _check_text(sql: str, depth: int) -> None:
    if depth > _MAX_DEPTH:
        raise QueryRefused("function bodies nest deeper than the guard follows")
    tree = _parse(sql)
    if tree is None:
        return
    data = sql.encode("utf-8")
    for item in tree.get("stmts") or []:
        stmt = item.get("stmt") or {}
        start = int(item.get("stmt_location", 0))
        length = item.get("stmt_len")
        text = data[start:start + int(length) if length else len(data)].decode("utf-8", "replace")
        _check_tree(stmt, text, depth)


def _parse(sql: str) -> dict[str, Any] | None:
    from ..sources import pgguard

    return pgguard._parse(sql)


def _check_tree(stmt: dict[str, Any], text: str, depth: int) -> None:
    """Refuse what ``stmt`` (whose source text is ``text``) does outside the database."""
    for key, node, in_funcname in _walk(stmt):
        what = _outside(key, node)
        if what:
            raise QueryRefused(f"{what} acts outside the task's copy of the database")
        catalog = _catalog_write(key, node)
        if catalog:
            raise QueryRefused(f"{catalog} writes the system catalogs, which no task may do "
                               "(not even with allow_privileged: true: a superuser's write "
                               "there changes what the server runs or who may log in)")
        if key == "String":
            name = str(node.get("sval", ""))
            if name == "set_config" and in_funcname:
                continue
            if name in SQL_TEXT_FUNCTIONS:
                raise QueryRefused(f"function {name}() runs SQL given as text, which no guard "
                                   "sees")
            if name in OUTSIDE_FUNCTIONS or name == "set_config" \
                    or name.startswith(OUTSIDE_PREFIXES):
                raise QueryRefused(f"function {name}() acts outside the task's copy of the "
                                   "database")
        elif key == "FuncCall" and _name(node) == "set_config":
            args = node.get("args") or []
            first = args[0].get("A_Const", {}).get("sval", {}).get("sval") \
                if args and isinstance(args[0], dict) else None
            if not isinstance(first, str) or first.strip().lower() in IDENTITY_SETTINGS:
                raise QueryRefused("set_config() of the session's role (or of a setting "
                                   "named at run time) acts outside the task's copy")
        elif key in ("CreateFunctionStmt", "DoStmt"):
            _check_body(key, node, text, depth)


def _outside(key: str, node: dict[str, Any]) -> str:
    """The statement or clause ``key``/``node`` names when it acts on the server, else ''."""
    if key in OUTSIDE_STATEMENTS:
        return OUTSIDE_STATEMENTS[key]
    if key == "VariableSetStmt" and str(node.get("name", "")).lower() in IDENTITY_SETTINGS:
        return "SET ROLE / SET SESSION AUTHORIZATION" if node.get("kind") != "VAR_RESET" \
            else "RESET ROLE / RESET SESSION AUTHORIZATION"
    if key == "CopyStmt" and (node.get("is_program") or node.get("filename")):
        return f"COPY {'FROM' if node.get('is_from') else 'TO'} " + (
            "PROGRAM" if node.get("is_program") else "a server file")
    if key == "TransactionStmt" and str(node.get("kind", "")) in (
            "TRANS_STMT_PREPARE", "TRANS_STMT_COMMIT_PREPARED", "TRANS_STMT_ROLLBACK_PREPARED"):
        return "a prepared (two-phase) transaction"
    field = {"CommentStmt": "objtype", "SecLabelStmt": "objtype", "GrantStmt": "objtype",
             "RenameStmt": "renameType", "AlterOwnerStmt": "objectType"}.get(key)
    shared = SHARED_OBJECTS.get(str(node.get(field, ""))) if field else None
    if shared:
        return {"CommentStmt": f"COMMENT ON {shared}", "SecLabelStmt": f"SECURITY LABEL ON {shared}",
                "GrantStmt": f"GRANT/REVOKE ON {shared}", "RenameStmt": f"ALTER {shared} ... RENAME",
                "AlterOwnerStmt": f"ALTER {shared} ... OWNER TO"}[key]
    return ""


def _catalog_write(key: str, node: dict[str, Any]) -> str:
    """What statement ``key``/``node`` writes in the system catalogs (``UPDATE of
    pg_catalog.pg_proc``), else ''."""
    if key not in WRITE_TARGETS or (key == "CopyStmt" and not node.get("is_from")):
        return ""
    verb, fields = WRITE_TARGETS[key]
    if key == "AlterObjectSchemaStmt" and node.get("newschema") in SYSTEM_SCHEMAS:
        return f"{verb} {node['newschema']}"
    if key == "ViewStmt":  # a view of one catalog table can be written through
        for inner, found, _ in _walk(node.get("query")):
            name = _system_name(found) if inner == "RangeVar" else None
            if name:
                return f"CREATE VIEW over {name}"
    for field in fields:
        name = _system_name(node.get(field))
        if name:
            return f"{verb} of {name}"
    return ""


def _system_name(value: object) -> str | None:
    """The system catalog object ``value`` (a relation, a name list, an object with
    arguments, a list of them, as pglast's JSON has them) names, else None. A relation named
    ``pg_*`` without a schema resolves to ``pg_catalog`` first, so it counts as one."""
    todo: list[object] = [value]
    while todo:
        item = todo.pop()
        if isinstance(item, list):
            parts = [p["String"].get("sval") for p in item
                     if isinstance(p, dict) and isinstance(p.get("String"), dict)]
            if parts and len(parts) == len(item):
                if len(parts) > 1 and parts[0] in SYSTEM_SCHEMAS:
                    return ".".join(map(str, parts))
                continue
            todo.extend(item)
        elif isinstance(item, dict):
            if isinstance(item.get("relname"), str):
                schema, rel = item.get("schemaname"), item["relname"]
                if schema in SYSTEM_SCHEMAS or (not schema and rel.startswith("pg_")):
                    return f"{schema or 'pg_catalog'}.{rel}"
                continue
            for inner in ("RangeVar", "ObjectWithArgs", "List", "rel", "objname", "items",
                          "TypeName", "names"):
                if inner in item:
                    todo.append(item[inner])
    return None


def _check_body(key: str, node: dict[str, Any], text: str, depth: int) -> None:
    """A ``DO`` block's or a created function's body, held to the same rules."""
    options = {str(o["DefElem"].get("defname")): o["DefElem"].get("arg")
               for o in (node.get("args") or node.get("options") or [])
               if isinstance(o, dict) and "DefElem" in o}
    language = options.get("language")
    lang = str(language.get("String", {}).get("sval", "")).lower() \
        if isinstance(language, dict) else ("plpgsql" if key == "DoStmt" else "sql")
    body = options.get("as")
    if key == "CreateFunctionStmt" and body is None:
        return  # BEGIN ATOMIC: the body is part of the tree, already walked
    if lang not in CHECKED_LANGUAGES:
        raise QueryRefused(f"a {'DO block' if key == 'DoStmt' else 'function'} in LANGUAGE "
                           f"{lang} is not checked (only sql and plpgsql bodies are)")
    if lang == "sql":
        items = body.get("List", {}).get("items", []) if isinstance(body, dict) else []
        for part in items:
            _check_text(str(part.get("String", {}).get("sval", "")), depth + 1)
        return
    _check_plpgsql(text, depth)


def _check_plpgsql(text: str, depth: int) -> None:
    from pglast import parser

    try:
        tree = _loads(parser.parse_plpgsql_json(text))
    except Exception as exc:
        raise QueryRefused(f"the PL/pgSQL body cannot be checked: "
                           f"{' '.join(str(exc).split())[:200]}") from None
    for key, node, _ in _walk(tree):
        if key in _DYNAMIC or (key in ("PLpgSQL_stmt_open", "PLpgSQL_stmt_return_query")
                               and node.get("dynquery")):
            raise QueryRefused(f"PL/pgSQL {_DYNAMIC.get(key, 'EXECUTE')} runs a statement "
                               "built at run time, which no guard sees")
        if key == "PLpgSQL_expr":
            query, mode = str(node.get("query", "")), int(node.get("parseMode", 0))
            if mode >= 3:  # an assignment: "target := expression"
                match = _ASSIGN.match(query)
                query = query[match.end():] if match else query
            _check_text(query if mode == 0 else f"SELECT {query}", depth + 1)


def _name(node: dict[str, Any]) -> str:
    parts = [str(p.get("String", {}).get("sval", "")) for p in node.get("funcname", [])
             if isinstance(p, dict)]
    return parts[-1] if parts else ""


def _walk(tree: object) -> list[tuple[str, dict[str, Any], bool]]:
    """Every ``(node type, fields, inside a FuncCall's name)`` of the tree, without
    recursion (a deep expression is deeper than Python's recursion limit)."""
    out: list[tuple[str, dict[str, Any], bool]] = []
    todo: list[tuple[str, Any, bool]] = [("", tree, False)]
    while todo:
        key, item, in_name = todo.pop()
        if isinstance(item, dict):
            if key[:1].isupper():
                out.append((key, item, in_name))
            todo.extend(reversed([(k, v, in_name or (key == "FuncCall" and k == "funcname"))
                                  for k, v in item.items() if isinstance(v, dict | list)]))
        elif isinstance(item, list):
            todo.extend(reversed([("", v, in_name) for v in item if isinstance(v, dict | list)]))
    return out


def runs_outside_transactions(statements: Sequence[str]) -> bool:
    """Whether ``statements`` hold an in-database statement PostgreSQL runs only outside a
    transaction block (``VACUUM``, ``CREATE``/``DROP``/``REINDEX ... CONCURRENTLY``): only
    such a prediction is run again statement by statement after its transaction failed with
    "cannot run inside a transaction block" (:func:`.pgcopies.run_confined`); anything else
    that needs it (``CREATE DATABASE``, ``ALTER SYSTEM``) stays refused by the server."""
    for sql in statements:
        try:
            tree = _parse(sql)
        except QueryRefused:
            return False
        for key, node, _ in _walk(tree or {}):
            if key == "VacuumStmt" or (key in ("IndexStmt", "DropStmt") and node.get("concurrent")) \
                    or (key == "DefElem" and node.get("defname") == "concurrently"):
                return True
    return False
