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
a fence only where each engine's own parser rejects what it then reads as one statement, or
reads in it ``K`` and one quoted name (:func:`reads_more`): failing closed, else the statement
is not taken out and the text is read with it. Comparing the tables sqlglot and DuckDB's
``get_table_names`` read missed SQLite's ``IN Employee`` and DuckDB's ``nextval``,
``"checkpoint"()`` and ``read_text`` after a fence (the twenty-sixth re-probe's H1 to H3).
The spans are read before the case's datasource is known, so both engines are asked; without
DuckDB installed, no datasource is DuckDB, so only SQLite's reading is asked.
"""

from __future__ import annotations

import re
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
    token put after it. A text SQLite's reader is not given (a lone surrogate, a NUL:
    :func:`_complete`) does not (fail closed)."""
    if not _complete(text + ";"):
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
    """Whether the engines may read ``text`` (``statement``, a fence after it, and what
    follows) to their first statement's end as more than ``statement``: unless, for SQLite
    and for DuckDB (when installed) each, the engine's own parser rejects that statement as a
    syntax error (the engine could never have run it), or what follows ``statement`` in it is
    one backtick-quoted name the fence opens and blanks (an alias of a statement the engine
    parses alone). A text whose first statement ends past :data:`FENCE_READ`, or where the
    engines end it at different places, reads more (fail closed).

    Why the engines' parsers and not a comparison of the tables read: the twenty-sixth
    re-probe's ``K`` then a fence then `` ` WHERE (1, ..., 15) NOT IN Employee`` (SQLite reads
    ``IN Employee`` as a table, both readers a column), `` ` WHERE nextval('s') > 0`` and
    `` `, read_text('/etc/hostname')`` (a state function and a file's read in a ``SELECT``)
    read no other table to sqlglot nor to DuckDB's ``get_table_names``, and the engines ran
    them. ``K`` then a fence, ``25`` and a fence is ``K`` with an alias (an honest record);
    ``K`` then a fence and prose with inline code is no statement to either engine."""
    first = _first_statement(text)
    if first is None or not first.startswith(statement):
        return True
    rest = first[len(statement) :]
    return not (_sqlite_ends(first, statement, rest) and _duckdb_ends(first, statement, rest))


#: Line ends from a fence's own line on that :func:`reads_on` cuts the text at, at most (past
#: them, the statement is not taken out). Every line end counts, a literal's or a comment's
#: too: an honest record of 4,096 characters has about 130 lines of 30 characters, and 128
#: cuts of up to 4,096 characters are read by both parsers in about a tenth of a second.
FENCE_LINES = 128
#: What ends a line to some reader (every line break ``str.splitlines`` reads); ``\r\n`` is
#: one end.
_LINE_END = re.compile(r"\r\n|[\n\r\v\f\x1c-\x1e\x85\u2028\u2029]")


def reads_on(text: str, statement: str, fence: int) -> bool:
    """:func:`reads_more` of ``text``, and of ``text`` cut at each line end from the line of
    its fence (at ``fence``) on: a harness may run the model's text to any line's end, and
    the floor reads a statement to one. ``K``, a fence, `` ` WHERE (1, ..., 15) NOT IN
    Employee`` then ``25`` on the next line is no statement to either parser whole, and to
    the line's end an ``IN`` read of the table (the twenty-seventh re-probe's F3 and F4).
    The fence's own line is cut too: ``K``, then ```` ```x`, Employee e```` (a backtick, an
    escaped one, ``x`` and a closing one: a quoted name, then a join) and ``25`` on the next
    line ran, to that line's end, as a join (the twenty-eighth re-probe's H1).

    Every line end is a cut, one inside a literal or a comment too, and each is read (with a
    ``\n`` after it) by each engine's own parser: SQLite runs a block comment open at the
    end of its text (``/* a`` to the end is a comment) and DuckDB nests block comments
    (``/* /* */ ' */, Track t``: a comment then a join to DuckDB, a string to SQLite), so
    ``K``, a fence, a join, then ``/* a`` and ``*/ 25`` on the next line ran to the line end
    that both engines' tokenizers were taken to leave inside a literal, and the cut was
    skipped (the twenty-ninth re-probe's H1 and F1). Past the first statement's ``;`` a cut
    reads the same statement as the whole text, so none is needed there; past
    :data:`FENCE_LINES` cuts, the text reads more (fail closed)."""
    if reads_more(text, statement):
        return True
    first = _first_statement(text)
    last = len(first) if first is not None else len(text)
    for cuts, end in enumerate(_LINE_END.finditer(text, fence)):
        if end.start() >= last:
            break
        if cuts == FENCE_LINES:
            return True
        if reads_more(text[: end.start()] + "\n", statement):
            return True
    return False


def _first_statement(text: str) -> str | None:
    """``text`` to the first ``;`` that ends a statement in SQLite's reading (DuckDB's
    tokenizer ending it there too), or all of it; None past :data:`FENCE_READ` or
    :data:`_SEMICOLONS`, or where the text to a ``;`` is one SQLite's driver is not given
    (:func:`_unreadable`)."""
    at = text.find(";", 0, FENCE_READ)
    for _ in range(_SEMICOLONS):
        if at < 0:
            return text if len(text) <= FENCE_READ else None
        head = text[: at + 1]
        if _unreadable(head):
            return None
        if sqlite3.complete_statement(head):
            return head if ends_outside(text[:at]) else None
        at = text.find(";", at + 1, FENCE_READ)
    return None


def _complete(text: str) -> bool:
    """``sqlite3_complete`` of ``text``; False where Python's driver cannot give it the text
    (:func:`_unreadable`)."""
    return not _unreadable(text) and sqlite3.complete_statement(text)


def _unreadable(text: str) -> bool:
    """Whether Python's SQLite driver refuses ``text``: a lone surrogate (a UTF-16 record cut
    inside an emoji) or a NUL. Asked of such a text, ``sqlite3_complete`` raised out of the span
    reading, and the case failed with a traceback and no reason (issue 58, the twenty-seventh
    re-probe's H4): now a statement before it is not taken out there (fail closed), and the
    text is read with it."""
    return "\x00" in text or _SURROGATE.search(text) is not None


#: A lone surrogate (a Python text holds one where its JSON's ``\\ud800`` did).
_SURROGATE = re.compile("[\ud800-\udfff]")


#: What SQLite reads as one backtick-quoted name and blanks (SQLite's own blanks: not ``\v``),
#: then the statement's ``;`` or end: the fence of an honest record opens the name and the
#: closing fence ends it (``K`` then a fence, ``25``, a fence).
_ALIAS_ONLY = re.compile(r"[ \t\n\f\r]*+`(?:[^`\x00]++|``)*+`[ \t\n\f\r]*+(?:;[ \t\n\f\r]*+)?\Z")
#: SQLite's errors of its parser (its tokenizer's and grammar's), which it reports before it
#: resolves a name: ``no such table`` or ``not authorized`` is a statement that parsed.
_SQLITE_SYNTAX = re.compile(r'near "[^"]*": syntax error|unrecognized token: |incomplete input')
#: ``EXPLAIN`` before a statement that is itself an ``EXPLAIN``: a syntax error of the probe's
#: own making, not the statement's (fail closed).
_EXPLAIN_TWICE = re.compile(r'near "explain": syntax error', re.IGNORECASE)


def _sqlite_ends(first: str, statement: str, rest: str) -> bool:
    """Whether SQLite could not run ``first`` as more than ``statement``: its parser rejects
    ``first``, or ``rest`` is one quoted name after a ``statement`` it parses."""
    if _ALIAS_ONLY.match(rest) and not _sqlite_rejects(statement):
        return True
    return _sqlite_rejects(first)


def _sqlite_rejects(sql: str) -> bool:
    """Whether SQLite's parser rejects ``sql`` as a syntax error: prepared under ``EXPLAIN``
    (never run) on a fresh in-memory database that authorizes nothing, so any statement
    that parses ends in a name's or an authorization's error, which is no syntax error."""
    from ..sources.sqlite import explained

    con = sqlite3.connect(":memory:", isolation_level=None)
    try:
        con.set_authorizer(lambda *_: sqlite3.SQLITE_DENY)
        con.execute(explained(sql))
    except sqlite3.Error as error:
        message = str(error)
        return bool(_SQLITE_SYNTAX.search(message)) and not _EXPLAIN_TWICE.search(message)
    except Exception:  # (a NUL, a text Python's driver refuses): fail closed
        return False
    finally:
        con.close()
    return False


def _duckdb_ends(first: str, statement: str, rest: str) -> bool:
    """Whether DuckDB could not run ``first`` as more than ``statement``: its parser rejects
    ``first``, or its tokenizer reads ``rest`` as one quoted name (and the ``;``) after a
    ``statement`` it parses. Without DuckDB, no datasource is DuckDB."""
    duckdb = _duckdb()
    if duckdb is None:
        return True
    if _ALIAS_ONLY.match(rest) and not _duckdb_rejects(duckdb, statement):
        try:
            tokens = [kind for _, kind in duckdb.tokenize(rest)]
        except Exception:  # unread: fail closed
            tokens = []
        if tokens[:1] == [duckdb.token_type.identifier] and tokens[1:] in ([], [duckdb.token_type.operator]):
            return True
    return _duckdb_rejects(duckdb, first)


def _duckdb_rejects(duckdb: Any, sql: str) -> bool:
    """Whether DuckDB's parser rejects ``sql`` (a ``ParserException``: nothing of it runs)."""
    try:
        duckdb.extract_statements(sql)
    except duckdb.ParserException:
        return True
    except Exception:  # any other error: fail closed
        return False
    return False


def _duckdb() -> Any:
    try:
        import duckdb
    except ImportError:
        return None
    return duckdb
