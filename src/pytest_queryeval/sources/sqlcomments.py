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
#: Each is a first character and what must follow it (a pattern that starts with one set of
#: characters is searched for that set first: a branch per form, each with its look-behind
#: at its head, took half a second over 1 MB of words, this a hundredth).
_FORMS = {
    "comments": ("/-", r"(?<=/)\*|(?<=-)-"),
    "strings": ("'\"", r"""(?<=['"])"""),
    "escaped": ("eE", r"(?<=[eE])(?<![\w$][eE])'"),  # E'...', not the end of a name's
    # a ``$`` in a name (``a$b$``: one word, the tail kept whole so no dollar quote opens in
    # it), or a dollar quote's ``$tag$`` (a tag starts with no digit: ``$1`` is a parameter)
    "dollars": ("$", r"(?<=\w\$)(?P<tail>[\w$]*)|(?<=\$)(?<!\w\$)(?:[^\W\d]\w*)?\$"),
    "names": ("[`", r"(?<=[\[`])"),
}
_FAMILIES: dict[str | bool, tuple[str, ...]] = {
    False: ("comments",),
    "postgres": ("comments", "strings", "escaped", "dollars"),
    "sqlite": ("comments", "strings", "names"),
    "mysql": ("comments", "strings", "names"),  # its \ escapes: :func:`_quote_end`
    True: ("comments", "strings", "escaped", "dollars", "names"),
}
#: The families whose quotes :func:`readings` reads in turn.
QUOTINGS: tuple[str, ...] = ("postgres", "sqlite", "mysql")
#: Each ``strings`` of :func:`uncommented` a reading that must not read less than the engine
#: runs takes: each family's quotes, and all at once.
STRING_READINGS: tuple[str | bool, ...] = (*QUOTINGS, True)
_MARKS: dict[str | bool, re.Pattern[str]] = {
    key: re.compile("[" + re.escape("".join(_FORMS[f][0] for f in forms)) + "](?:"
                    + "|".join(_FORMS[f][1] for f in forms) + ")")
    for key, forms in _FAMILIES.items()}
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


def _comment_end(low: str, at: int, nested: bool) -> int:
    """Where the block comment that opens at ``at`` ends: past the ``*/`` that closes it (its
    first, or, ``nested``, the one matching it), or at the text's end when none does."""
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
    kept, at, search, line_end = 0, 0, _MARKS[strings].search, _LINE_END.search
    while (mark := search(low, at)) is not None:
        token, at = mark.group(), mark.start()
        if token == "--":  # the commonest mark, read here (no call: 50,000 a text)
            out += [low[kept:at], " "]
            end = line_end(low, at)
            at = kept = end.start() if end is not None else len(low)
        elif token == "/*":
            out += [low[kept:at], " "]
            at = kept = _comment_end(low, at, nested)
        elif mark.lastgroup == "tail":
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
    read nothing past such a quote (Q8, Q10). And the text with only the comment marks made
    blanks, every word kept: a scan that misreads one quote (an ``×$z$`` the engine takes for
    a name, a ``--`` SQLite ends at ``\n`` alone) cut every other reading, while the marks
    inside a name (``n_v/**/()``, ``IN/**/v_emp``) hid it from the text as written (the
    forty-third re-probe's T1 to T5); no quote can hide a word from this one."""
    if "--" not in sql and "/*" not in sql:
        return [sql]
    nesteds = (True, False) if "/*" in sql else (True,)  # the same with no block comment
    return list(dict.fromkeys([sql, *(uncommented(sql, nested, strings)
                                      for strings in _distinct_quotings(sql)
                                      for nested in nesteds),
                               _COMMENT_MARKS.sub(" ", sql)]))


#: A comment's marks alone (their text stays: :func:`readings`' last reading).
_COMMENT_MARKS = re.compile(r"/\*|\*/|--")


#: What a text must hold for a form of :data:`_FORMS` to open a quote in it.
_PRESENT = {"strings": ("'", '"'), "escaped": ("e'", "E'"), "dollars": ("$",),
            "names": ("[", "`")}


def _distinct_quotings(sql: str) -> list[str | bool]:
    """The ``strings`` of :data:`STRING_READINGS` and ``False`` that read ``sql`` apart,
    one of each: a family whose quotes the text does not hold reads it as one that knows
    fewer (MySQL's as SQLite's with no backslash in the text, any family as none with no
    quote at all), so its scan is not made again (ten scans of a 700 kB text took 1.8 s)."""
    present = {form for form, marks in _PRESENT.items() if any(m in sql for m in marks)}
    seen: dict[tuple[frozenset[str], bool], str | bool] = {}
    for strings in (False, *STRING_READINGS):
        forms = frozenset(_FAMILIES[strings]) & (present | {"comments"})
        escapes = strings == "mysql" and "\\" in sql and "strings" in forms
        seen.setdefault((forms, escapes), strings)
    return list(seen.values())

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
