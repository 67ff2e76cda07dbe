"""Where SQLite and DuckDB end a counted statement that a text quotes, asked of the engines'
own readers: SQLite's ``sqlite3_complete`` (:func:`sqlite3.complete_statement`) and DuckDB's
tokenizer and parser (``duckdb.tokenize``, ``duckdb.extract_statements``), not of a pattern.

Why: the span-output search takes a counted statement ``K`` out of a text where it stands
whole (:func:`~.spanoutput._whole`), and each re-probe found a text the engine reads past
where a pattern said ``K`` ended: ``K --x`` then a vertical tab and ``;`` (SQLite ends ``--``
only at ``\\n``), ``K`` ending in an open ``'`` or ``$a$`` then ``;`` and ``') t, Employee``
(the engine reads ``;`` as the literal's), ``K`` then a fence and a backtick that closes the
name the fence opens, then ``, Employee`` (issue 58, the twenty-fourth re-probe's H2 and the
twenty-fifth's H2 and H3). So ``K`` ends at a ``;``, a fence, a number or a label only where
both engines' readers end it outside every literal and comment (:func:`ends_outside`), and at
a fence only where what the engines then read as one statement reads no table ``K`` does not
and writes nothing (:func:`reads_more`): failing closed, else the statement is not taken out
and the text is read with it. Without DuckDB installed, no datasource is DuckDB, so only
SQLite's reading is asked.
"""

from __future__ import annotations

import sqlite3
from functools import lru_cache
from typing import Any

#: Characters from a counted statement a fence's reading looks at, at most (past them, the
#: statement is not taken out there): the reading parses them, once per place.
FENCE_READ = 4096
#: ``;`` tried as the first statement's end at most (each asks SQLite over the text up to it):
#: past them, the statement is not taken out there, in time linear in the text.
_SEMICOLONS = 64
#: A token after the text, which the engine's tokenizer finds where it starts only when the
#: text ends outside every literal and comment.
_PROBE = " 7;"


@lru_cache(maxsize=1024)
def ends_outside(text: str) -> bool:
    """Whether ``text`` ends outside every string, quoted name, bracket, dollar quote and
    comment in SQLite's reading and in DuckDB's (so that what follows it is read as what it
    is): SQLite's ``sqlite3_complete`` finds a ``;`` put after it, and DuckDB's tokenizer a
    token put after it."""
    if not sqlite3.complete_statement(text + ";"):
        return False
    duckdb = _duckdb()
    if duckdb is None:
        return True
    try:
        at = len((text + " ").encode())
        return any(pos == at for pos, _ in duckdb.tokenize(text + _PROBE))
    except Exception:  # unreadable to DuckDB: fail closed
        return False


@lru_cache(maxsize=1024)
def reads_more(text: str, statement: str) -> bool:
    """Whether the engines read ``text`` (``statement``, a fence after it, and what follows)
    to their first statement's end as a statement that reads a table ``statement`` does not
    read, or that is no read, in SQLite's reading (sqlglot's SQLite grammar, which quotes
    names in backticks as SQLite does) or DuckDB's (its parser); a text whose first statement
    ends past :data:`FENCE_READ`, or where the two engines end it at different places, is taken
    as reading more (fail closed). ``K`` then a fence, ``25`` and a fence is ``K`` with an
    alias (the same tables: an honest record); ``K`` then a fence and `` `, Employee`` a join."""
    first = _first_statement(text)
    return first is None or _sqlite_more(first, statement) or _duckdb_more(first, statement)


def _first_statement(text: str) -> str | None:
    """``text`` to the first ``;`` that ends a statement in SQLite's reading (DuckDB's
    tokenizer ending it there too), or all of it; None past :data:`FENCE_READ` or
    :data:`_SEMICOLONS`."""
    at = text.find(";", 0, FENCE_READ)
    for _ in range(_SEMICOLONS):
        if at < 0:
            return text if len(text) <= FENCE_READ else None
        head = text[: at + 1]
        if sqlite3.complete_statement(head):
            return head if ends_outside(text[:at]) else None
        at = text.find(";", at + 1, FENCE_READ)
    return None


def _sqlite_more(text: str, statement: str) -> bool:
    import sqlglot
    from sqlglot import exp

    def tables(sql: str) -> set[str] | None:
        try:
            parsed = [tree for tree in sqlglot.parse(sql, read="sqlite") if tree is not None]
        except Exception:  # SQLite does not run it either
            return None
        if len(parsed) != 1 or not isinstance(parsed[0], exp.Query):
            return {"\x00 no read"}
        return {table.name.lower() for table in parsed[0].find_all(exp.Table)}

    read = tables(text)
    return read is not None and bool(read - (tables(statement) or set()))


def _duckdb_more(text: str, statement: str) -> bool:
    duckdb = _duckdb()
    if duckdb is None:
        return False

    def tables(sql: str) -> set[str] | None:
        try:
            parsed = duckdb.extract_statements(sql)
        except Exception:  # DuckDB does not run it either
            return None
        if len(parsed) != 1 or parsed[0].type != duckdb.StatementType.SELECT:
            return {"\x00 no read"}
        try:
            return {name.lower() for name in duckdb.get_table_names(parsed[0].query)}
        except Exception:  # parsed, its tables unread: fail closed
            return {"\x00 unread"}

    read = tables(text)
    return read is not None and bool(read - (tables(statement) or set()))


def _duckdb() -> Any:
    try:
        import duckdb
    except ImportError:
        return None
    return duckdb
