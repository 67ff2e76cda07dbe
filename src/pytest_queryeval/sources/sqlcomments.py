r"""An SQL text without its comments, as the engines end them: the one reading of comments
the lexical checks of a text share (the text-call floor, what a text calls, a
Unicode-escaped name, a quoted table name).

Why one module: each check had its own regular expression (``--[^\n]*``, ``/\*.*?\*/``),
and each missed what the floor's scan already read: PostgreSQL and DuckDB end a line comment
at a carriage return too and nest block comments, so ``n_v--x<CR>()`` and ``n_v/* /* */ x
*/()`` call the macro ``n_v`` that the catalog's check did not see called (the forty-first
re-probe's O8 to O12); and a comment mark inside a string literal or a quoted name is the
quote's. Which marks quote differs by engine (a ``[`` is SQLite's quoted name and
PostgreSQL's subscript, a backslash escapes a quote in MySQL's ``'...'`` and PostgreSQL's
``E'...'`` only), so the quotes are read in each engine family's way (:data:`QUOTINGS`), and
a caller that must not read less than the engine runs takes every reading
(:func:`readings`).
"""

from __future__ import annotations

import re

__all__ = ["QUOTINGS", "STRING_READINGS", "dequoted", "readings", "uncommented"]

#: The comment marks, and each family's quote openers: ``'...'`` and ``"..."`` everywhere;
#: PostgreSQL's and DuckDB's ``E'...'`` (backslash escapes) and ``$tag$...$tag$`` dollar
#: quotes; SQLite's ``[...]``; SQLite's and MySQL's `` `...` `` (a ``$a$--$a$`` or
#: ``E'\'--'`` string and an alias ``[--]`` or `` `--` `` made every reading drop the rest of
#: the line: the forty-second re-probe's Q3 to Q5, Q8, Q10). ``True`` is every form at once.
_COMMENTS = r"/\*|--"
_E_STRING = r"(?<![\w$])e'"
_DOLLAR = r"(?<!\w)\$(?:[^\W\d]\w*)?\$"
#: A name with a ``$`` in it (``a$b$``), one word to PostgreSQL: no dollar quote opens in it.
_DOLLAR_WORD = r"(?<![\w$])[^\W\d]\w*\$[\w$]*"
_OPENERS: dict[str | bool, str] = {
    "postgres": rf"""{_E_STRING}|'|"|{_DOLLAR_WORD}|{_DOLLAR}""",
    "sqlite": r"""'|"|\[|`""",
    "mysql": r"""'|"|`""",
    True: rf"""{_E_STRING}|'|"|{_DOLLAR_WORD}|{_DOLLAR}|\[|`""",
}
#: The families whose quotes :func:`readings` reads in turn.
QUOTINGS: tuple[str, ...] = ("postgres", "sqlite", "mysql")
#: Each ``strings`` of :func:`uncommented` a reading that must not read less than the engine
#: runs takes: each family's quotes, and all at once.
STRING_READINGS: tuple[str | bool, ...] = (*QUOTINGS, True)
_MARKS: dict[str | bool, re.Pattern[str]] = {
    False: re.compile(_COMMENTS),
    **{key: re.compile(f"{_COMMENTS}|{openers}", re.IGNORECASE)
       for key, openers in _OPENERS.items()},
}
#: A quote's body and its close (an unclosed one runs to the end): a backslash escapes the
#: next character in PostgreSQL's ``E'...'`` and in MySQL's ``'...'`` and ``"..."``.
_ESCAPED_BODY = {q: re.compile(rf"(?:[^{q}\\]++|\\.?|{q}{q})*+(?:{q}|\Z)", re.DOTALL)
                 for q in "'\""}
_CLOSES = {"[": "]"}
_BLOCK = re.compile(r"/\*|\*/")
_LINE_END = re.compile(r"[\n\r]")


def _quote_end(low: str, token: str, at: int, strings: str | bool) -> int:
    """Where the quote ``token`` opens at ``at`` ends: past its close, or the text's end. A
    doubled ``''`` (``""``, ````` `` `````) is two quotes that meet, read as such."""
    start = at + len(token)
    if token[0] in "eE" or (strings == "mysql" and token in "'\""):
        escaped = _ESCAPED_BODY[token[-1]].match(low, start)
        return escaped.end() if escaped is not None else len(low)
    close = low.find(_CLOSES.get(token, token), start)
    return len(low) if close < 0 else close + len(_CLOSES.get(token, token))


def _comment_end(low: str, token: str, at: int, nested: bool) -> int:
    """Where the comment ``token`` opens at ``at`` ends: a line comment at its line's end (the
    line end kept), a block comment past the ``*/`` that closes it (its first, or, ``nested``,
    the one matching it); an unclosed one at the text's end."""
    if token == "--":
        end = _LINE_END.search(low, at)
        return end.start() if end else len(low)
    depth = 0
    for mark in _BLOCK.finditer(low, at):
        if mark.group() == "/*":
            depth = depth + 1 if nested or not depth else depth
        else:
            depth -= 1
            if not depth:
                return mark.end()
    return len(low)


def uncommented(low: str, nested: bool, strings: str | bool = False) -> str:
    """``low`` with each comment a blank, by one linear scan of its marks, of any length
    (a bounded pattern left a longer one in place: the fifteenth re-probe's H2): ``--`` to
    the line's end, ``/* */`` to its first ``*/`` (SQLite, MySQL) or, ``nested``, to the
    ``*/`` that closes it (DuckDB and PostgreSQL nest them: H9); an unclosed one runs to the
    end. ``strings``: a comment mark inside a quote is the quote's, not a comment (``SELECT
    '--'; DELETE/**/FROM Genre``: the sixteenth re-probe's H1), the quotes of one family of
    :data:`QUOTINGS`, or of all at once (``True``); an unclosed quote runs to the end."""
    out: list[str] = []
    kept, at, marks = 0, 0, _MARKS[strings]
    while (mark := marks.search(low, at)) is not None:
        token, at = mark.group(), mark.start()
        if token in ("--", "/*"):
            out += [low[kept:at], " "]
            at = kept = _comment_end(low, token, at, nested)
        elif "$" in token and token[0] != "$":
            at = mark.end()  # a name
        else:
            at = _quote_end(low, token, at, strings)
    out.append(low[kept:])
    return "".join(out)


def readings(sql: str) -> list[str]:
    """``sql`` as written, and with each comment a blank in each way an engine may read it
    (nested or not; a comment mark in a quote the quote's, in each family's quotes of
    :data:`QUOTINGS` and all at once, or not), each once. The text as written is one of
    them: a string the scan did not know (a ``$a$...$a$`` dollar quote, ``E'\\''``) holding
    ``--`` made every other reading drop the rest of its line, a macro call after it
    included (the forty-second re-probe's Q3 to Q5); each family's quotes are read since a
    check that needs the comments gone (``IN/**/v_emp``, ``U&"v!0032" --x<CR>UESCAPE '!'``)
    read nothing past such a quote (Q8, Q10)."""
    if "--" not in sql and "/*" not in sql:
        return [sql]
    return list(dict.fromkeys([sql, *(uncommented(sql, nested, strings)
                                      for strings in (*STRING_READINGS, False)
                                      for nested in (True, False))]))


_QUOTED_NAME = re.compile(r'"((?:[^"]|"")*)"|`((?:[^`]|``)*)`|\[([^\]]*)\]')


def dequoted(sql: str) -> str:
    """``sql`` with each quoted name written as the engine reads it, its quotes dropped and a
    doubled quote in it one (``"a""b"`` is ``a"b``, ``[v s]`` is ``v s``): a name holding a
    quote was searched for in spellings that kept every quote or dropped them all, and a
    macro ``"a""b"()`` was never seen called (the forty-first re-probe's O14)."""
    if not any(q in sql for q in '"`['):
        return sql
    return _QUOTED_NAME.sub(lambda m: (m.group(1) or "").replace('""', '"')
                            if m.group(1) is not None else (m.group(2) or "").replace("``", "`")
                            if m.group(2) is not None else m.group(3) or "", sql)
