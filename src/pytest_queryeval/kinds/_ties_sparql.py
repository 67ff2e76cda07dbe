"""The SPARQL gold rewritten to expose its sort keys, for tie-aware ``execution_accuracy``.

``SELECT ?s ?n WHERE {...} ORDER BY DESC(?n) LIMIT 3`` has several correct answers when the
third and fourth solutions share ``?n``: the engine picks one, a prediction may pick the
other. The SQL kind accepts such a prediction (:mod:`..metrics.ties`); without this rewrite SPARQL
failed it and only the gold audit mentioned the tie. The tie analysis itself
(:func:`..metrics.ties.analyse`, :func:`..metrics.ties.tie_match`) is the SQL kind's: it needs only the keyed
rows, so this module only writes the keyed query, as :func:`..metrics.ties.keyed_query` does with
sqlglot for SQL.

Why a text rewrite: rdflib's parser keeps no positions and its algebra does not serialise back
to the text that ran; the solution modifiers of a SELECT follow its outermost group's closing
brace and the projection precedes ``WHERE`` (or ``FROM``, or the group's opening brace), so
both are found on the text with strings, IRIs and comments masked. Each ORDER BY condition
that is not a projected variable is appended to the projection as
``(expr AS ?__queryeval_key_k)``; LIMIT and OFFSET are removed (the probe puts one back, one
row past the window).

Out of reach (the strict comparison stands, with the reason in ``details.ties.skipped``):
a query form other than SELECT, ``SELECT *`` with keys to add (it cannot take more columns),
DISTINCT or REDUCED ordered by expressions outside the projection, a VALUES clause after the
modifiers, and a LIMIT/OFFSET that is not a literal integer. Pure: no execution.
"""

from __future__ import annotations

import functools
import re

from ..metrics.ties import KEY_PREFIX, KeyedQuery

#: Strings, IRIs and comments: blanked (same length) before the text's structure is read.
_MASK = re.compile(r'"""(?:.|\n)*?"""|\'\'\'(?:.|\n)*?\'\'\'|"(?:[^"\\\n]|\\.)*"|'
                   r"'(?:[^'\\\n]|\\.)*'|<[^<>\"{}|^`\\\s]*>|#[^\n]*")
_SELECT = re.compile(r"\b(SELECT|ASK|CONSTRUCT|DESCRIBE)\b", re.IGNORECASE)
_MODIFIER = re.compile(r"\s*(DISTINCT|REDUCED)\b", re.IGNORECASE)
_PROJECTION_END = re.compile(r"\bWHERE\b|\bFROM\b|\{", re.IGNORECASE)
_ORDER = re.compile(r"\bORDER\s+BY\b", re.IGNORECASE)
_CUT = re.compile(r"\b(LIMIT|OFFSET)\s+(\S+)", re.IGNORECASE)
_VAR = re.compile(r"[?$]([A-Za-z0-9_\u00b7\u00c0-\uffff]+)")
_DIRECTION = re.compile(r"(ASC|DESC)\s*\(", re.IGNORECASE)
_CALL = re.compile(r"[A-Za-z_][\w\-.]*(?::[\w\-.]*)?\s*\(|:[\w\-.]*\s*\(")


def _blank(match: re.Match[str]) -> str:
    return " " * len(match.group(0))


def _close(masked: str, at: int) -> int:
    """One past the parenthesis that closes the one at ``at``; -1 when it is not closed."""
    depth = 0
    for i in range(at, len(masked)):
        if masked[i] == "(":
            depth += 1
        elif masked[i] == ")":
            depth -= 1
            if depth == 0:
                return i + 1
    return -1


def _conditions(masked: str, start: int, stop: int) -> list[tuple[int, int, int, int]] | str:
    """ORDER BY's conditions as (start, stop, expression start, expression stop) spans."""
    out: list[tuple[int, int, int, int]] = []
    i = start
    while True:
        while i < stop and masked[i].isspace():
            i += 1
        if i >= stop:
            return out
        rest = masked[i:stop]
        if (m := _DIRECTION.match(rest)) is not None:
            open_at = i + m.end() - 1
            end = _close(masked, open_at)
            if end < 0 or end > stop:
                return "an ORDER BY condition is not closed"
            out.append((i, end, open_at + 1, end - 1))
        elif (m := _VAR.match(rest)) is not None:
            out.append((i, i + m.end(), i, i + m.end()))
        elif rest.startswith("("):
            end = _close(masked, i)
            if end < 0 or end > stop:
                return "an ORDER BY condition is not closed"
            out.append((i, end, i, end))
        elif (m := _CALL.match(rest)) is not None:
            end = _close(masked, i + m.end() - 1)
            if end < 0 or end > stop:
                return "an ORDER BY condition is not closed"
            out.append((i, end, i, end))
        else:
            return "an ORDER BY condition is not read here"
        i = out[-1][1]


def _projection(masked: str, start: int, stop: int) -> list[str] | str:
    """The projected variables' names, in order; a reason for ``SELECT *``."""
    names: list[str] = []
    i = start
    while i < stop:
        c = masked[i]
        if c.isspace():
            i += 1
        elif c == "*":
            return "SELECT *"
        elif c == "(":
            end = _close(masked, i)
            if end < 0 or end > stop:
                return "a projection expression is not closed"
            inner = masked[i + 1:end - 1]
            bound = re.search(r"\bAS\s+[?$]([A-Za-z0-9_\u00b7\u00c0-\uffff]+)\s*$", inner,
                              re.IGNORECASE)
            if bound is None:
                return "a projection expression without AS"
            names.append(bound.group(1))
            i = end
        elif (m := _VAR.match(masked, i)) is not None:
            names.append(m.group(1))
            i = m.end()
        else:
            return "the projection is not read here"
    return names


@functools.lru_cache(maxsize=1024)
def keyed_sparql(text: str, columns: tuple[str, ...] = ()) -> KeyedQuery | str:
    """The rewrite, or the reason it is not possible (a string). ``columns``: the gold
    result's variables, which ``SELECT *`` projects. Cached: golds repeat."""
    masked = _MASK.sub(_blank, text)
    form = _SELECT.search(masked)
    if form is None or form.group(1).upper() != "SELECT":
        return "the gold is not a SELECT query"
    at = form.end()
    modifier = _MODIFIER.match(masked, at)
    distinct = modifier is not None
    if modifier is not None:
        at = modifier.end()
    end = _PROJECTION_END.search(masked, at)
    if end is None:
        return "the gold's projection has no end"
    tail = masked.rfind("}")
    if tail < end.start():
        return "the gold has no group pattern"
    order = _ORDER.search(masked, tail)
    if order is None:
        return "the gold has no top-level ORDER BY"
    if re.search(r"\bVALUES\b", masked[tail:], re.IGNORECASE):
        return "a VALUES clause follows the gold's solution modifiers"
    cuts = list(_CUT.finditer(masked, order.end()))
    stop = cuts[0].start() if cuts else len(masked)
    conditions = _conditions(masked, order.end(), stop)
    if isinstance(conditions, str):
        return conditions
    if not conditions:
        return "the gold has no top-level ORDER BY"
    window = _window(cuts)
    if isinstance(window, str):
        return window
    limit, offset = window
    projected = _projection(masked, at, end.start())
    star = projected == "SELECT *"
    if star and columns:
        projected = list(columns)
    keys, added = _sort_keys(text, masked, conditions, projected)
    if added and star:
        return "SELECT *: the sort keys cannot be added as columns"
    if added and isinstance(projected, str):
        return projected
    if added and distinct:
        return "SELECT DISTINCT ordered by expressions outside its projection"
    extra = "".join(f" ({expr} AS ?{KEY_PREFIX}{k})" for k, expr in enumerate(added))
    body = list(text)
    for cut in cuts:  # the keyed query is the whole ordered result
        body[cut.start():cut.end()] = " " * (cut.end() - cut.start())
    rest = "".join(body[end.start():]).rstrip()
    keyed = f"{text[:end.start()].rstrip()}{extra} {rest}"
    probe = f"{keyed} LIMIT {limit + offset + 1}" if limit is not None else None
    order_by = tuple(" ".join(text[s:e].split()) for s, e, _, _ in conditions)
    return KeyedQuery(keyed, tuple(keys), len(added), limit, offset, order_by, probe)


def _window(cuts: list[re.Match[str]]) -> tuple[int | None, int] | str:
    """The gold's LIMIT and OFFSET (literal integers only: the window is computed here), or
    why they cannot be read."""
    limit: int | None = None
    offset = 0
    for cut in cuts:
        if not cut.group(2).isdigit():
            return "LIMIT/OFFSET is not a literal integer"
        if cut.group(1).upper() == "LIMIT":
            limit = int(cut.group(2))
        else:
            offset = int(cut.group(2))
    if offset and limit is None:
        return "OFFSET without LIMIT"
    return limit, offset


def _sort_keys(text: str, masked: str, conditions: list[tuple[int, int, int, int]],
               projected: list[str] | str) -> tuple[list[tuple[str, int]], list[str]]:
    """Per ORDER BY condition, the projected column it sorts by or the expression to add as
    a column of its own (``("added", k)``); and those expressions."""
    keys: list[tuple[str, int]] = []
    added: list[str] = []
    for _, _, e_start, e_stop in conditions:
        expr = text[e_start:e_stop].strip()
        var = _VAR.fullmatch(masked[e_start:e_stop].strip())
        if var is not None and not isinstance(projected, str) and var.group(1) in projected:
            keys.append(("out", projected.index(var.group(1))))
        else:
            keys.append(("added", len(added)))
            added.append(expr)
    return keys, added
