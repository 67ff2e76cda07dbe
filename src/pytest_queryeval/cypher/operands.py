"""Which values a Cypher expression copies whole: a slice (``l[1..]``) and a list concatenation
(``l + []``) make a new list of every element of the list they apply to, and FalkorDB (4.16)
evaluates an expression to its end without checking its timeout. :mod:`.bounds` weighed such a
copy only when it was applied to a name bound to a list, so the same copy applied to the list
a ``collect()``, a ``range()`` or a comprehension makes in place cost nothing: sixty ``[1..]``
after ``[x IN range(1, 1000000) | {a: x, b: x}]`` held a 3 s server 20 s, six after a
``collect()`` of 4,000,000 maps 27 s, and the honest cases after them failed with gold timeouts
(the forty-third re-probe's S1, S3). :func:`copies` says, for each token, how many copies apply
to a value made there, whatever makes the list.

Why apart from :mod:`.bounds`: this is the grammar's postfix and additive levels, where each
operand starts and ends, which the bounds weigh but do not otherwise read; bounds calls it and
multiplies each list's walks by what it finds. It imports nothing of bounds', which imports it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol


class Token(Protocol):
    """A token of :func:`.guard.tokens` (the modules that weigh a query do not import the
    guard, which calls them)."""

    @property
    def text(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def line(self) -> int: ...
    @property
    def column(self) -> int: ...


_OPEN, _CLOSE = "([{", ")]}"
#: Words after which a bracket opens a value, not a slice or an index of one (``IN [1, 2]``,
#: ``RETURN [x IN l | x]``): every word of the language that is not a value itself.
_NOT_VALUES = frozenset({
    "MATCH", "OPTIONAL", "WHERE", "WITH", "RETURN", "UNWIND", "ORDER", "BY", "SKIP", "LIMIT",
    "CALL", "YIELD", "UNION", "ALL", "LOAD", "FOREACH", "AS", "DISTINCT", "AND", "OR", "XOR",
    "NOT", "IN", "IS", "STARTS", "ENDS", "CONTAINS", "CASE", "WHEN", "THEN", "ELSE", "ASC",
    "DESC", "ASCENDING", "DESCENDING", "CREATE", "MERGE", "SET", "DELETE", "REMOVE", "DETACH",
    "ON", "EXISTS"})
#: Words that are one value (a literal), never a list.
_LITERALS = frozenset({"NULL", "TRUE", "FALSE"})


def _pairs(code: Sequence[Token]) -> tuple[dict[int, int], set[int]]:
    """Each closing bracket's opening one, by index (an unmatched one has none); and the
    brackets with a ``|`` of their own level (a comprehension's)."""
    out: dict[int, int] = {}
    bars: set[int] = set()
    opened: list[int] = []
    for k, tok in enumerate(code):
        if tok.kind != "punct":
            continue
        if tok.text in _OPEN:
            opened.append(k)
        elif tok.text in _CLOSE and opened:
            out[k] = opened.pop()
        elif tok.text == "|" and opened:
            bars.add(opened[-1])
    return out, bars


#: Words before a ``{`` that opens a subquery, not a map.
_SUBQUERIES = frozenset({"CALL", "EXISTS", "COUNT", "COLLECT"})


def _literal(code: Sequence[Token], opened: int, bars: set[int]) -> bool:
    """Whether the bracket at ``code[opened]`` is a list or map literal, whose values are
    copied into it (``[l][0]`` copied a held list: the forty-first re-probe's P2): no
    comprehension (``[x IN ...``, a ``|`` of its level), no subquery (``CALL {``)."""
    if opened in bars:
        return False
    if code[opened].text == "[":
        return not (opened + 2 < len(code) and code[opened + 1].kind in ("word", "quoted")
                    and code[opened + 2].text.upper() == "IN")
    return code[opened].text == "{" and not (
        opened and code[opened - 1].kind == "word"
        and code[opened - 1].text.upper() in _SUBQUERIES)


def _ranged(code: Sequence[Token], opened: int, closed: int) -> bool:
    """Whether the bracket ``code[opened:closed + 1]`` after a value is a slice: a ``..`` of
    its own level (else an index, one element)."""
    depth = 0
    for k in range(opened + 1, closed):
        tok = code[k]
        if tok.kind == "punct" and tok.text in _OPEN:
            depth += 1
        elif tok.kind == "punct" and tok.text in _CLOSE:
            depth -= 1
        elif depth == 0 and tok.text == "." and code[k + 1].text == ".":
            return True
    return False


class _Operands:
    """One reading of the operands of a query, left to right: where the value that ends at
    each token starts, and whether it is one element (a number, a string, a property, an
    element of a list of scalars) rather than a list."""

    def __init__(self, code: Sequence[Token], list_call: Callable[[int], bool],
                 deep: frozenset[int]) -> None:
        self.code, self.list_call, self.deep = code, list_call, deep
        self.start: dict[int, int] = {}
        self.element: set[int] = set()
        self.reach: dict[int, int] = {}  # an operand's start -> its last token yet

    def end(self, k: int, start: int, element: bool) -> None:
        self.start[k] = start
        self.reach[start] = k
        if element:
            self.element.add(k)

    def closed(self, k: int, opened: int) -> int | None:
        """Read the bracket closed at ``code[k]``; the slice's base's end when it is one."""
        code, before = self.code, opened - 1
        if code[k].text == "]" and before in self.start:  # l[0], l[1..]: after a value
            sliced = _ranged(code, opened, k)
            self.end(k, self.start[before], before in self.element if sliced else (
                self.start[before] == before and before not in self.deep))
            return before if sliced else None
        if code[k].text == ")" and before >= 0 and code[before].kind in ("word", "quoted") \
                and code[before].text.upper() not in _NOT_VALUES:
            name = before  # a call: its dotted name starts the value
            while name >= 2 and code[name - 1].text == "." \
                    and code[name - 2].kind in ("word", "quoted"):
                name -= 2
            self.end(k, name, not self.list_call(before))
        elif code[k].text == "}":  # a map, or a map projection n{.a}: no list
            self.end(k, self.start.get(before, opened), True)
        else:  # a list, a comprehension, a parenthesised expression
            self.end(k, opened, False)
        return None


def copies(code: Sequence[Token], list_call: Callable[[int], bool],
           deep: frozenset[int] = frozenset(),
           copy_call: Callable[[int], bool] = lambda k: False) -> tuple[list[int], int]:
    """For each token of ``code`` (a query's tokens without comments), how many copies of the
    value made there the slices, list concatenations, literals and calls around it make: a
    list or map literal copies each of its values (``[collect(x)][0]``, ``{a: l}``), a call
    for which ``copy_call`` holds (at its name) its arguments (``coalesce(collect(x))``: six
    held a 3 s server 8.5 s, twice what the collect()s alone took), each slice copies
    the value it is applied to (``x[1..][1..]`` copies ``x`` twice), and ``a + b + c``, read
    ``(a + b) + c``, copies ``a`` and ``b`` twice and ``c`` once. An index (``l[0]``), a
    property or a call of no list (``list_call`` is false at the call's name) is one element,
    whose copy copies no list, unless the index is of a name in ``deep`` (a use of a name
    whose list holds lists: ``WITH [range(1, 1000000)] AS l RETURN l[0][1..]``) or of
    anything but a name (errs high). And the operands all the query's chains of ``+`` copy
    in all, whatever they hold: a chain of ``m`` operands copies about ``m² / 2`` (5,000
    one-map lists added in a row held a 3 s server 6.5 s)."""
    reading = _Operands(code, list_call, deep)
    pairs, bars = _pairs(code)
    spans: list[tuple[int, int, int]] = []
    cases: list[int] = []
    chains: dict[int, tuple[int, int, int]] = {}  # a binary +: the + before it, its left
    for k, tok in enumerate(code):
        word = tok.text.upper() if tok.kind == "word" else ""
        if k in pairs:
            indexed = tok.text == "]" and pairs[k] - 1 in reading.start  # l[0], l[1..]
            base = reading.closed(k, pairs[k])
            if base is not None and base not in reading.element:
                spans.append((reading.start[base], base, 1))
            elif not indexed and k - 1 > pairs[k] and (
                    _literal(code, pairs[k], bars) or (
                        tok.text == ")" and reading.start[k] != pairs[k]
                        and copy_call(pairs[k] - 1))):
                spans.append((pairs[k] + 1, k - 1, 1))
        elif word == "CASE":
            cases.append(k)
        elif word == "END" and cases:
            reading.end(k, cases.pop(), False)
        elif tok.kind in ("number", "string", "param") or word in _LITERALS:
            reading.end(k, k, True)
        elif tok.kind in ("word", "quoted") and word not in _NOT_VALUES \
                and not (k + 1 < len(code) and code[k + 1].text == "("):
            prop = k >= 2 and code[k - 1].text == "." and (k - 2) in reading.start
            reading.end(k, reading.start[k - 2] if prop else k, False)
        elif tok.kind == "punct" and tok.text == "+" and (k - 1) in reading.start:
            start = reading.start[k - 1]
            chains[k] = (start - 1 if start - 1 in chains else -1,
                         *((start, k - 1) if k - 1 not in reading.element else (-1, -1)))
    spans.extend(_concatenated(reading, chains))
    counts = [0] * (len(code) + 1)
    for start, end, times in spans:
        counts[start] += times
        counts[end + 1] -= times
    out: list[int] = []
    total = 0
    for k in range(len(code)):
        total += counts[k]
        out.append(total)
    return out, sum(m * (m + 1) // 2 for m in _chain_lengths(chains))


def _chain_lengths(chains: dict[int, tuple[int, int, int]]) -> list[int]:
    """The operands of each chain of ``+`` (one more than its ``+``)."""
    lengths: list[int] = []
    for plus in set(chains) - {before for before, _, _ in chains.values()}:
        m, at = 1, plus
        while at >= 0:
            m, at = m + 1, chains[at][0]
        lengths.append(m)
    return lengths


def _concatenated(reading: _Operands, chains: dict[int, tuple[int, int, int]]
                  ) -> list[tuple[int, int, int]]:
    """The copies each chain of ``+`` makes of its operands (:func:`copies`; an operand
    ``(-1, -1)`` is one element); a chain is read back from its last ``+``, whose right
    operand is the longest value starting after it."""
    out: list[tuple[int, int, int]] = []
    for plus in set(chains) - {before for before, _, _ in chains.values()}:
        after = reading.reach.get(plus + 1)
        operands = [(plus + 1, after) if after is not None and after not in reading.element
                    else (-1, -1)]
        at = plus
        while at >= 0:
            at, start, end = chains[at]
            operands.append((start, end))
        operands.reverse()
        m = len(operands)
        for p, (start, end) in enumerate(operands, 1):
            if start >= 0:
                out.append((start, end, m - 1 if p == 1 else m - p + 1))
    return out
