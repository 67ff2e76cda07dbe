"""Read-only guard for SPARQL: classify a request before any engine or endpoint sees it.

A small tokenizer (not a regex over the raw text) skips comments, IRIs and string literals, so
``INSERT`` hidden after ``PREFIX``/``BASE`` lines or comments is found, while the same word
inside a string, an IRI, a comment, a variable (``?insert``) or a prefixed name (``ex:drop``)
is not mistaken for an update. Only SELECT and ASK are scored; CONSTRUCT and DESCRIBE are
refused with their own reason because they return graphs, not tables.
"""

from __future__ import annotations

import functools
import itertools
import re
from dataclasses import dataclass

from ..errors import QueryRefused, QuerySyntaxError

#: Keywords that only exist in SPARQL 1.1 Update (a query can never contain them bare).
UPDATE_KEYWORDS = frozenset(
    {"INSERT", "DELETE", "LOAD", "CLEAR", "DROP", "CREATE", "ADD", "MOVE", "COPY", "WITH"}
)
QUERY_FORMS = frozenset({"SELECT", "ASK", "CONSTRUCT", "DESCRIBE"})
SCORED_FORMS = frozenset({"SELECT", "ASK"})

# Order matters: long strings before short ones, IRIs before the "<" operator.
_TOKEN_PATTERN = (
    r"""
    (?P<ws>\s+)
  | (?P<comment>\#[^\n\r]*)
  | (?P<string>'''(?:[^'\\]|\\.|'(?!''))*'''|\"\"\"(?:[^"\\]|\\.|"(?!""))*\"\"\"
              |'(?:[^'\\\n\r]|\\.)*'|"(?:[^"\\\n\r]|\\.)*")
  | (?P<iri><[^<>"{}|^`\\\x00-\x20]*>)
  | (?P<lang>@[A-Za-z]+(?:-[A-Za-z0-9]+)*)
  | (?P<var>[?$][A-Za-z0-9_\u00B7-\uFFFF]+)
  | (?P<word>[A-Za-z_\u00C0-\uFFFF][A-Za-z0-9_\-.\u00B7-\uFFFF]*(?::[^\s{}()\[\];,<>"'/*+?|^!=&]*)?
            |:[^\s{}()\[\];,<>"'/*+?|^!=&]*)
  | (?P<other>.)
    """
)


@functools.cache
def _token_re() -> re.Pattern[str]:
    """Compiled on first use (the Unicode classes make it the costliest part of the import)."""
    return re.compile(_TOKEN_PATTERN, re.VERBOSE | re.DOTALL)


@dataclass(frozen=True, slots=True)
class Classified:
    """What the guard learned about one request."""

    form: str  # SELECT | ASK | CONSTRUCT | DESCRIBE | UPDATE | UNKNOWN
    #: ORDER BY on the outermost query (a sub-select's ORDER BY orders nothing outside it).
    has_order_by: bool = False
    has_service: bool = False
    #: ``SELECT *``: engines order such columns differently (rdflib: set order).
    select_star: bool = False


_CODEPOINT = re.compile(r"\\u([0-9A-Fa-f]{4})|\\U([0-9A-Fa-f]{8})")


def unescape(query: str) -> str:
    """Apply SPARQL codepoint escapes (``\\u0049NSERT`` is ``INSERT``): SPARQL 1.1 §19.2
    processes them before parsing, anywhere in the query string."""
    def repl(m: re.Match[str]) -> str:
        code = int(m.group(1) or m.group(2), 16)
        return chr(code) if code <= 0x10FFFF else m.group()
    return _CODEPOINT.sub(repl, query)


def keywords(query: str) -> list[str]:
    """Bare words of ``query`` upper-cased (prefixed names keep their colon, so never match)."""
    out: list[str] = []
    for m in _token_re().finditer(unescape(query)):
        if m.lastgroup == "word":
            out.append(m.group().upper())
        elif m.lastgroup == "other" and m.group() in "{}();.,*":
            out.append(m.group())
    return out


def used_prefixes(query: str) -> list[str]:
    """Prefix labels of the prefixed names ``query`` uses (``brick`` for ``brick:VAV``), in
    order of first use; names inside strings, IRIs and comments do not count."""
    out: list[str] = []
    for m in _token_re().finditer(query):
        text = m.group()
        if m.lastgroup == "word" and ":" in text and not text.startswith("_:"):
            label = text.split(":", 1)[0]
            if label not in out:
                out.append(label)
    return out


def declared_prefixes(query: str) -> set[str]:
    """Prefix labels declared by ``PREFIX`` lines of ``query``."""
    toks = [m for m in _token_re().finditer(query) if m.lastgroup not in ("ws", "comment")]
    return {b.group()[:-1] for a, b in itertools.pairwise(toks)
            if a.lastgroup == "word" and a.group().upper() == "PREFIX" and b.group().endswith(":")}


def classify(query: str) -> Classified:
    """Classify ``query`` by its first keyword after the prologue (BASE / PREFIX)."""
    toks = keywords(query)
    form = "UNKNOWN"
    i = 0
    while i < len(toks):
        tok = toks[i]
        if tok in ("PREFIX", "BASE"):
            # PREFIX pname: <iri>  -- the pname is a word token, the IRI was skipped.
            i += 2 if tok == "PREFIX" else 1
            continue
        if tok in QUERY_FORMS:
            form = tok
        elif tok in UPDATE_KEYWORDS:
            form = "UPDATE"
        break
    if any(t in UPDATE_KEYWORDS for t in toks):
        form = "UPDATE"  # e.g. "SELECT ... ; INSERT DATA {...}": any update word refuses
    depth = 0
    has_order = False
    for a, b in itertools.pairwise(toks):
        depth += 1 if a == "{" else -1 if a == "}" else 0
        has_order = has_order or (depth == 0 and a == "ORDER" and b == "BY")
    star = False
    if form == "SELECT":
        rest = [t for t in toks[i + 1:i + 3] if t not in ("DISTINCT", "REDUCED")]
        star = bool(rest) and rest[0] == "*"
    return Classified(form, has_order, "SERVICE" in toks, star)


def check_query(query: str, *, allow_service: bool = True) -> Classified:
    """Refuse anything that is not a scorable read query; return its classification.

    Raises :class:`QueryRefused` for SPARQL Update (any of INSERT, DELETE, LOAD, CLEAR, DROP,
    CREATE, ADD, MOVE, COPY, WITH), for CONSTRUCT/DESCRIBE, for an unrecognised request, and
    for SERVICE when ``allow_service`` is false (a local graph must not reach the network).
    """
    if not isinstance(query, str) or not query.strip():
        raise QueryRefused("empty query")
    c = classify(query)
    if c.form == "UPDATE":
        found = sorted({t for t in keywords(query) if t in UPDATE_KEYWORDS})
        raise QueryRefused(f"SPARQL Update is not allowed (read-only source): {', '.join(found)}")
    if c.form in ("CONSTRUCT", "DESCRIBE"):
        raise QueryRefused(f"{c.form} returns a graph, not a result table; only SELECT and ASK "
                           "are scored")
    if c.form not in SCORED_FORMS:
        raise QuerySyntaxError(_unknown_form(query))
    if c.has_service and not allow_service:
        raise QueryRefused("SERVICE (federated query) is not allowed against a local graph")
    return c


def _unknown_form(query: str) -> str:
    """Where a request that is no query form goes wrong: its first token after the prologue."""
    text = unescape(query)
    toks = [m for m in _token_re().finditer(text) if m.lastgroup not in ("ws", "comment")]
    i = 0
    while i < len(toks) and toks[i].lastgroup == "word" and toks[i].group().upper() in (
            "PREFIX", "BASE"):
        i += 3 if toks[i].group().upper() == "PREFIX" else 2  # PREFIX pname: <iri> / BASE <iri>
    if i >= len(toks):
        return "syntax error at the end: expected SELECT or ASK after the prologue"
    start = toks[i].start()
    line = text.count("\n", 0, start) + 1
    column = start - text.rfind("\n", 0, start)
    found = toks[i].group()
    found = found if len(found) <= 40 else found[:37] + "..."
    return (f"syntax error at line {line}, column {column}: expected SELECT or ASK after the "
            f"prologue, found {found!r}")
