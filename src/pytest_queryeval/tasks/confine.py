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
is kept on the connection, so the case's reason names it (:func:`refusal`). No trace callback
names the statement: it would run once per row of a row trigger.

DuckDB copies need none of this: they are opened with ``enable_external_access = false``,
which refuses every file outside the copy (``ATTACH``, ``COPY ... TO``, ``EXPORT DATABASE``,
``INSTALL``/``LOAD``, file readers), and their configuration is locked after (``run._copy``).
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
#: What names the statement's verb: comments, string literals and quoted names blanked first.
_NOT_CODE = re.compile(r"--[^\n]*|/\*.*?(?:\*/|$)|'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|`[^`]*`"
                       r"|\[[^\]]*\]", re.DOTALL)
_VERB = re.compile(r"\b(ATTACH|DETACH|VACUUM)\b", re.IGNORECASE)
#: The authorizer's note for an attach or a detach: named from the statement's text.
_ATTACHING = "\0attach"


class TaskConnection(sqlite3.Connection):
    """A copy's connection; ``refused`` holds what the authorizer last denied (set by
    :func:`confine`)."""

    refused: list[str]


def confine(conn: TaskConnection) -> None:
    """Refuse, on ``conn``, what would reach past the copy (see the module doc)."""
    refused: list[str] = []
    conn.refused = refused

    def authorize(action: int, arg1: str | None, arg2: str | None, db: str | None,
                  trigger: str | None) -> int:
        why = ""
        if action in (sqlite3.SQLITE_ATTACH, sqlite3.SQLITE_DETACH):
            why = _ATTACHING
        elif action == sqlite3.SQLITE_PRAGMA and (arg1 or "").lower() not in ALLOWED_PRAGMAS:
            why = (f"PRAGMA {(arg1 or '').lower()} is not allowed in a task (only pragmas that "
                   f"neither name a file nor act beyond the copy are)")
        elif action == sqlite3.SQLITE_FUNCTION and (arg2 or "").lower() in _DENIED_FUNCTIONS:
            why = f"{(arg2 or '').lower()} is not allowed in a task ({_FILES})"
        if not why:
            return sqlite3.SQLITE_OK
        refused[:] = [why]
        return sqlite3.SQLITE_DENY

    if hasattr(conn, "enable_load_extension"):  # off by default; absent when not compiled in
        conn.enable_load_extension(False)
    conn.set_authorizer(authorize)
    conn.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)


def refusal(conn: object, exc: BaseException, sql: str) -> str:
    """``"refused: <why>"`` when ``exc``, raised by running ``sql`` on ``conn``, is the
    authorizer's denial, else ''. An attach is named by the verb ``sql`` uses (``VACUUM``
    attaches its target: the authorizer alone cannot tell them apart)."""
    refused = getattr(conn, "refused", None)
    if not refused or not isinstance(exc, sqlite3.DatabaseError) or "authoriz" not in str(exc):
        return ""
    why = refused.pop()
    if why == _ATTACHING:
        first = _VERB.search(_NOT_CODE.sub(" ", sql))  # the first refused stops the text
        why = f"{first[1].upper() if first else 'ATTACH'} is not allowed in a task ({_FILES})"
    return f"refused: {why}"
