r"""An SQL text without its comments, as the engines end them: the one reading of comments
the lexical checks of a text share (the text-call floor, what a text calls, a
Unicode-escaped name, a quoted table name).

Why one module: each check had its own regular expression (``--[^\n]*``, ``/\*.*?\*/``),
and each missed what the floor's scan already read: PostgreSQL and DuckDB end a line comment
at a carriage return too and nest block comments, so ``n_v--x<CR>()`` and ``n_v/* /* */ x
*/()`` call the macro ``n_v`` that the catalog's check did not see called (the forty-first
re-probe's O8 to O12); and a comment mark inside a string literal is the string's. A caller
that must not read less than the engine runs takes every reading (:func:`readings`).
"""

from __future__ import annotations

import re

__all__ = ["dequoted", "readings", "uncommented"]

_COMMENT_MARK = re.compile(r"/\*|\*/|--|[\n\r]")
_STRING_OR_COMMENT_MARK = re.compile(r"/\*|\*/|--|[\n\r'\"]|\$\$")


def uncommented(low: str, nested: bool, strings: bool = False) -> str:
    """``low`` with each comment a blank, by one linear scan of its marks, of any length
    (a bounded pattern left a longer one in place: the fifteenth re-probe's H2): ``--`` to
    the line's end, ``/* */`` to its first ``*/`` (SQLite, MySQL) or, ``nested``, to the
    ``*/`` that closes it (DuckDB and PostgreSQL nest them: H9); an unclosed one runs to the
    end. ``strings``: a comment mark inside a string literal (``'...'``, its ``''`` two
    literals that meet; ``"..."``; ``$$...$$``; an unclosed one runs to the end) is the
    string's, not a comment (``SELECT '--'; DELETE/**/FROM Genre``: the sixteenth re-probe's
    H1). The floor reads all four, and the text as written."""
    out: list[str] = []
    kept, depth, line, quote = 0, 0, False, ""
    for mark in (_STRING_OR_COMMENT_MARK if strings else _COMMENT_MARK).finditer(low):
        token, at = mark.group(), mark.start()
        if quote:
            if token == quote:
                quote = ""
        elif line:
            if token in "\n\r":
                line, kept = False, at
        elif depth:
            if token == "/*" and nested:
                depth += 1
            elif token == "*/":
                depth -= 1
                if not depth:
                    kept = mark.end()
        elif token in ("'", '"', "$$"):
            quote = token
        elif token == "/*" or token == "--":
            out.append(low[kept:at])
            out.append(" ")
            depth, line = (1, False) if token == "/*" else (0, True)
    if not depth and not line:
        out.append(low[kept:])
    return "".join(out)


def readings(sql: str) -> list[str]:
    """``sql`` as written, and with each comment a blank in each way an engine may read it
    (nested or not; a comment mark in a string literal the string's, or not), each once. The
    text as written is one of them: a string this scan does not know (a ``$a$...$a$`` dollar
    quote, a backslash-escaped quote in ``E'\\''``) holding ``--`` made every other reading
    drop the rest of its line, a macro call after it included (the forty-second re-probe's
    Q3 to Q5)."""
    if "--" not in sql and "/*" not in sql:
        return [sql]
    return list(dict.fromkeys([sql, *(uncommented(sql, nested, strings)
                                      for strings in (True, False) for nested in (True, False))]))


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
