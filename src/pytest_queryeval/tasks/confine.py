"""What a task's statements may not do on a SQLite copy: reach a file.

A SQLite copy is an in-memory database, but a statement run on it can still name files:
``ATTACH 'file:<the datasource>?mode=rw'`` writes the original (and ``PRAGMA o.journal_mode =
WAL`` switches it to WAL), ``ATTACH '<new path>'`` and ``VACUUM INTO '<path>'`` create files
anywhere the worker may write, ``load_extension()`` runs native code, and some pragmas set
process-wide file behaviour (``temp_store_directory``). :func:`confine` makes the engine
refuse all of them for every statement of the task (setup, gold, prediction, checks,
cleanup): SQLite's authorizer denies attaching and detaching (``VACUUM`` is authorized as an
attach of its target, so it is refused with them), every pragma outside
:data:`ALLOWED_PRAGMAS` and the functions of the read path's guard; and
``SQLITE_LIMIT_ATTACHED`` 0 makes any attach fail even past the authorizer. What was refused
is kept on the connection, so the case's reason names it (:func:`refusal`).

DuckDB copies need none of this: they are opened with ``enable_external_access = false``,
which refuses every file outside the copy (``ATTACH``, ``COPY ... TO``, ``EXPORT DATABASE``,
``INSTALL``/``LOAD``, file readers) and cannot be turned back on while the database is open.
"""

from __future__ import annotations

import re
import sqlite3

from ..sources.sqlite import _DENIED_FUNCTIONS

#: Pragmas a task may run: reading or setting the copy's own behaviour and introspection, none
#: naming a file, changing the journal or acting beyond the connection (``temp_store*``,
#: ``journal_mode``, ``mmap_size``, ``wal_*``, ``writable_schema``, ``*_heap_limit``... are
#: refused). Table-valued forms (``pragma_table_info('T')``) are authorized as pragmas too.
ALLOWED_PRAGMAS = frozenset({
    "analysis_limit", "application_id", "automatic_index", "cache_size", "case_sensitive_like",
    "collation_list", "compile_options", "data_version", "database_list", "defer_foreign_keys",
    "encoding", "foreign_key_check", "foreign_key_list", "foreign_keys", "freelist_count",
    "function_list", "ignore_check_constraints", "index_info", "index_list", "index_xinfo",
    "integrity_check", "legacy_alter_table", "module_list", "optimize", "page_count",
    "page_size", "pragma_list", "quick_check", "recursive_triggers",
    "reverse_unordered_selects", "table_info", "table_list", "table_xinfo", "user_version"})

_FILES = "it would reach files outside the copy"
#: A statement that starts (after comments) with VACUUM: its refused attach is named VACUUM.
_VACUUM = re.compile(r"(?:\s|--[^\n]*(?:\n|$)|/\*.*?\*/)*VACUUM\b", re.IGNORECASE | re.DOTALL)


class TaskConnection(sqlite3.Connection):
    """A copy's connection; ``refused`` holds what the authorizer last denied, ``started``
    the statement last begun (set by :func:`confine`)."""

    refused: list[str]
    started: list[str]


def confine(conn: TaskConnection) -> None:
    """Refuse, on ``conn``, what would reach past the copy (see the module doc)."""
    refused: list[str] = []
    started: list[str] = [""]
    conn.refused, conn.started = refused, started

    def trace(sql: str) -> None:
        started[0] = sql

    def authorize(action: int, arg1: str | None, arg2: str | None, db: str | None,
                  trigger: str | None) -> int:
        why = ""
        if action in (sqlite3.SQLITE_ATTACH, sqlite3.SQLITE_DETACH):
            verb = "VACUUM" if _VACUUM.match(started[0]) else \
                "ATTACH" if action == sqlite3.SQLITE_ATTACH else "DETACH"
            why = f"{verb} is not allowed in a task ({_FILES})"
        elif action == sqlite3.SQLITE_PRAGMA and (arg1 or "").lower() not in ALLOWED_PRAGMAS:
            why = (f"PRAGMA {(arg1 or '').lower()} is not allowed in a task (only pragmas that "
                   f"neither name a file nor act beyond the copy are)")
        elif action == sqlite3.SQLITE_FUNCTION and (arg2 or "").lower() in _DENIED_FUNCTIONS:
            why = f"{(arg2 or '').lower()} is not allowed in a task ({_FILES})"
        if not why:
            return sqlite3.SQLITE_OK
        refused[:] = [why]
        return sqlite3.SQLITE_DENY

    conn.set_trace_callback(trace)
    conn.set_authorizer(authorize)
    conn.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)


def refusal(conn: object, exc: BaseException) -> str:
    """``"refused: <why>"`` when ``exc`` is the authorizer's denial on ``conn``, else ''."""
    refused, started = getattr(conn, "refused", None), getattr(conn, "started", None)
    if not refused or not isinstance(exc, sqlite3.DatabaseError) or "authoriz" not in str(exc):
        return ""
    why = refused.pop()
    if started:
        started[0] = ""
    return f"refused: {why}"
