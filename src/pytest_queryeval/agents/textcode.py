"""The model's text read as code: what a harness that evaluates it (Gemma's ``tool_code``,
a pythonic call) gives a tool.

Why apart from the text-call rule (:mod:`.textcalls`), which uses it: code spells a statement
in ways a search of the text as written does not read (issue 58, the fourteenth re-probe's
F3). Its literals are readable: escapes (``"DELETE\\tFROM\\tGenre"``, ``\\u0020``) and
literals that meet (``"DEL" "ETE FROM Genre"``, ``+``) are decoded and joined
(:func:`as_code`), and the floor reads the result. What code computes (``.format``, an
f-string, a name) is not: a query tool's call whose arguments are not plain literals is a
call whose statement cannot be judged (:func:`built_call`). Each reading is linear in the
text.
"""

from __future__ import annotations

import functools
import re

#: A string's escape (Python's and JSON's: ``\\t``, ``\\u0020``, ``\\x44``, ``\\104``,
#: ``\\N{...}``), and where two string literals meet to make one (``"DEL" "ETE"``, ``"DEL" +
#: "ETE"``: what the harness running a Gemma ``tool_code`` or a pythonic call evaluates).
_ESCAPE = re.compile(r"\\(?:u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|x[0-9a-fA-F]{2}|[0-7]{1,3}|"
                     r"N\{[^{}\n]{1,80}\}|.)", re.DOTALL)
_ESCAPED = {"t": "\t", "n": "\n", "r": "\r", "f": "\f", "v": "\v", "b": "\b", "a": "\a"}
_JOINED = re.compile(r"[\"']\s{0,64}(?:\+\s{0,64})?[rRbBuU]{0,2}[\"']")


def as_code(text: str) -> str:
    """``text`` as code gives a tool its strings: escapes decoded, HTML's character
    references and URL escapes too (``&#32;``, ``%20``), and string literals that meet
    joined (issue 58, the fourteenth re-probe's F3: ``sql_db_query("DELETE\\tFROM\\tGenre")``
    and ``"DEL" "ETE FROM Genre"`` in a ``tool_code`` fence passed ``write_attempts`` with
    0). Read wherever it is, as the floor is: a text that is no code only gains readings
    (each is searched)."""
    import html
    from urllib.parse import unquote

    if "\\" in text:
        text = _ESCAPE.sub(_unescape, text)
    if "&" in text:
        text = html.unescape(text)
    if "%" in text:
        text = unquote(text)
    return _JOINED.sub("", text)


def _unescape(match: re.Match[str]) -> str:
    import unicodedata

    code = match.group()[1:]
    if code[0] in "uUx" and len(code) > 1:
        return chr(min(int(code[1:], 16), 0x10FFFF))
    if code[0] in "01234567":
        return chr(int(code, 8))
    if code[0] == "N" and len(code) > 1:
        try:
            return unicodedata.lookup(code[2:-1])
        except KeyError:
            return code
    return _ESCAPED.get(code, code)


def built_call(text: str, low: str, limit: int) -> tuple[int, str] | None:
    """A query tool called in code (``execute_sql(...)``, Gemma's ``tool_code``) whose
    arguments are not plain literals: a statement built by code (``"DELETE FROM
    {}".format("Genre")``, an f-string, a name, none at all) is not one the search can judge,
    so what the call ran is unknown, as a query tool's call with no statement to judge is
    (:func:`~.unrun.unrun_query`; issue 58, the fourteenth re-probe's F3). Literals
    (escapes, ``"DEL" "ETE ..."``, ``+``) are judged by the floor (:func:`as_code`). Only a
    name that is no plain word (``sql_db_query``, ``db.execute``, ``runQuery``), or one given
    a string or a keyword (``query(f"...")``, an MCP server's ``query`` tool; not ``the
    query(s)``), is a call, and only with its ``(`` right after it. ``low``: ``text``
    in lower case, each character in its place; ``limit``: the calls read at most (past it,
    the first is taken as one). Where the call is and why, or None."""
    from .statements import query_tool

    for n, match in enumerate(_query_word().finditer(low)):
        if n >= limit:
            return match.start(), f"calls query tools more than {limit:,} times, which are " \
                "not all read"
        start = match.start()
        while start > 0 and start > match.start() - 128 and low[start - 1] in _NAME_CHARS:
            start -= 1
        name = text[start:match.end() - 1]
        if not query_tool(name) or not (_CODE_NAME.search(name) or _GIVEN.match(
                low, match.end())):
            continue
        args = _PLAIN_ARGS.match(low, match.end() - 1)
        if args is None or not any(q in args.group() for q in "\"'"):
            return start, (f"calls the query tool {name[:80]!r} with a statement built by "
                           "code or none, which the search cannot judge")
    return None


#: The characters of a tool's name in code, and what makes a name no plain word (a
#: separator, a digit, a capital past its first letter).
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_.:/-")
_CODE_NAME = re.compile(r"[_.:/\-0-9]|.[A-Z]")
#: A call's first argument that is a string (any prefix, ``f`` too) or a keyword.
_GIVEN = re.compile(r"\s*(?:[rbuf]{0,2}[\"']|\w+\s*=(?!=))")
#: A string literal in code (``r``, ``b`` and ``u`` prefixes; not ``f``), in lower case.
_LITERAL = r"""[rbu]{0,2}+(?:"(?:[^"\\\n]|\\.){0,65536}+"|'(?:[^'\\\n]|\\.){0,65536}+')"""
#: A call's arguments that are plain literals (strings joined or not, numbers, keywords; not
#: a subscript, ``"ERNEG MORF ETELED"[::-1]``, nor a dict: what code computes is not read):
#: each token read once.
_PLAIN_ARGS = re.compile(
    rf"\((?:\s++|{_LITERAL}|[+,]|\w++\s*+=(?!=)|-?\d[\d.]*+|"
    r"(?:true|false|none|null)(?!\w))*+\)")


@functools.lru_cache(maxsize=8)
def _query_word_for(kinds: tuple[str, ...]) -> re.Pattern[str]:
    words = "|".join(re.escape(w) for w in ("query", "sql", "sparql", "gql", "exec",
                                            "statement", *kinds))
    return re.compile(rf"(?:{words})[\w.:/-]{{0,128}}\(")


def _query_word() -> re.Pattern[str]:
    """Where a query tool's name is called: a word of a query tool's name (those of
    :func:`~.statements.query_tool`, each registered kind's), the rest of the name, ``(``."""
    from ..kindregistry import known_kinds

    return _query_word_for(tuple(sorted(k.lower() for k in known_kinds())))
