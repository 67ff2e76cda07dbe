"""What a query sent to a server may make the server evaluate in one expression: FalkorDB
(4.16) checks neither its query timeout nor its memory cap inside an expression, only between
rows, so an expression that builds or walks too many values runs to its end, minutes past the
timeout, and the cases after it fail with gold timeouts (issue 58). :func:`check_evaluation`
refuses, before anything is sent, what can be bounded by reading the text: a ``range()``
whose bounds are not literals or span too many values, ranges and lists (named with ``AS``,
``x IN`` or as a ``reduce()`` accumulator) walked inside one another past
:data:`MAX_RANGE`, calls that grow a value (``replace()`` with a longer replacement,
``apoc.text.repeat``) past :data:`MAX_GROWTH` together, a ``reduce()`` whose
accumulator doubles, grows or is copied at too many steps, and a ``WITH`` step that doubles
a value an earlier one bound.

Why one module of this size: these are one reading of one query, each bound feeding the
next (the iterations the range bound finds repeat what the copy and growth bounds count, and
the growing calls weigh the accumulator a ``reduce()`` copies); apart, each would tokenize
and walk the scopes again and pass the others' tables through its signature.

Why apart from :mod:`.guard`: the guard says which words may be sent; this module counts what
the words would cost. It reads the guard's tokens (:func:`.guard.tokens`) and is called by the
guard, so it imports nothing of the guard's.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Generic, TypeVar

from ..errors import QueryRefused
from . import operands
from .operands import Token as Token

_V = TypeVar("_V")
_S = TypeVar("_S")


def where(tok: Token) -> str:
    """As :func:`.guard.where` names a place."""
    return f"line {tok.line}, column {tok.column}"


def _keyword(code: Sequence[Token], i: int) -> str:
    """``code[i]`` upper-cased if it is a word that may be a keyword: not a property's name
    (``n.limit``), which FalkorDB reads as a name whatever it spells."""
    tok = code[i]
    return tok.text.upper() if tok.kind == "word" and not (i and code[i - 1].text == ".") \
        else ""


def _count(n: int) -> str:
    """``n`` written out, or past 10^30 its power of ten: a product of thousands of
    iterations has more digits than Python writes (4,300), and writing it raised ValueError
    instead of the refusal (``WITH <10,000 items> AS a RETURN [x IN a, x IN a, ...]``)."""
    return f"{n:,}" if n < 10**30 else f"about 10^{math.log10(n):.0f}"


_OPEN, _CLOSE = "([{", ")]}"


def check_evaluation(code: Sequence[Token]) -> None:
    """Refuse what the server would evaluate unbounded (the module docstring): ``code`` is a
    query's tokens without its comments."""
    _check_names(code)
    scopes = _scopes(code)
    ranges = _check_ranges(code)
    rows, counted, _ = _counted_rows(code, ranges)
    walked, evaluations, sources = _check_work(code, ranges, scopes, rows)
    growth = _check_growth(code, scopes)
    _check_bytes(code, scopes, growth, (walked, evaluations), min(max(rows), REPLY_ROWS))
    weigh = _Weights(code, scopes, walked, growth)
    _check_reduce(code, scopes, walked, weigh, sources)
    _check_steps(code, scopes, weigh)
    _check_bodies(code, scopes, walked)
    factors: dict[int, int] = {}
    degree = _products(code, scopes, ranges, factors)
    _check_sorts(code, (scopes, sources), ranges, degree, *_counted_rows(
        code, ranges, _unwound_names(code, scopes, sources, counted), factors,
        _stated_sizes(code, scopes, ranges)))


#: Words the bounds read as clauses that lower or end what they count (a ``LIMIT``'s rows, an
#: aggregating ``WITH``'s one row, a ``UNION``'s new product, a projection's end), which
#: FalkorDB also takes for names. Those that only add rows (``MATCH``, ``UNWIND``...) or need
#: a second word (``ORDER BY``) err high as names: ``(order:Order)`` is sent.
_CLAUSE_NAMES = frozenset({"WHERE", "WITH", "RETURN", "SKIP", "LIMIT", "UNION", "DISTINCT"})


#: The most characters a name may have (a variable, a map's key, a label): a key of 10,000
#: letters in ``toJSON({K: x})`` over 1,000,000 values held a 3 s server 66 s, and
#: ``split(toJSON({K: 1}), '')`` of a 60,000-letter key was counted as 1,000 values (36 s:
#: the forty-fifth re-probe's F3, F3b).
MAX_NAME_CHARS = 100


def _check_names(code: Sequence[Token]) -> None:
    """Refuse a clause word bound as a name, unquoted (``0 AS limit``, ``(order)``, ``[with
    IN l | ...]``, ``reduce(skip = 0, ...)``): FalkorDB takes it for a name where the bounds
    read the clause, so ``WHERE y > limit + 0`` was read as ``LIMIT 0``, every row-based
    bound saw no row, and a collect of 4,000,000 maps copied six times held a 3 s server
    15 s (the forty-fifth re-probe's T7). Backquoted too: its uses need no backquotes. And
    a name longer than :data:`MAX_NAME_CHARS`."""
    for i, tok in enumerate(code):
        if tok.kind in ("word", "quoted") and len(tok.text) > MAX_NAME_CHARS:
            raise QueryRefused(f"the name at {where(tok)} has {len(tok.text):,} characters, "
                               f"more than {MAX_NAME_CHARS}: any name can key a map (a "
                               "variable does in a projection, n {x}), and a map's key is "
                               "copied into every value and text it makes, which no bound "
                               "of the guard's weighs")
        if tok.kind not in ("word", "quoted") or not i \
                or tok.text.strip("`").upper() not in _CLAUSE_NAMES:
            continue
        before = code[i - 1].text
        after = code[i + 1].text if i + 1 < len(code) else ""
        if _aggregated_distinct(code, i):
            continue
        if before.upper() == "AS" or (before in ("(", "[") and after in (":", ")", "{")) \
                or (before == "[" and after.upper() == "IN") \
                or (before == "(" and after == "=" and i >= 2
                    and code[i - 2].text.lower() == "reduce"):
            raise QueryRefused(f"{tok.text} at {where(tok)} is a clause word bound as a name: "
                               "the guard reads its uses as the clause (FalkorDB as the "
                               "name, backquoted or not), so it is not sent: name it "
                               "otherwise")


def _aggregated_distinct(code: Sequence[Token], i: int) -> bool:
    """Whether ``code[i]`` is the ``DISTINCT`` of an aggregate's argument (``collect(DISTINCT
    {name: p.name})``): before a map it looked like a node named ``distinct`` with
    properties, and an honest grouping by distinct maps was refused (the forty-sixth
    re-probe's C4)."""
    return i >= 2 and code[i].kind == "word" and code[i].text.upper() == "DISTINCT" \
        and code[i - 1].text == "(" and code[i - 2].kind == "word" \
        and code[i - 2].text.lower() in _AGGREGATES


#: The most values a ``range()`` may build in a query sent to a server: FalkorDB builds the
#: whole list before its timeout or memory cap is checked (``range(1, 1000000000)`` grew the
#: server past 8 GB), so its bounds must be literals the guard can read: a computed bound
#: (``WITH 1000000000 AS n RETURN range(1, n)``) is refused, as the guard cannot bound it.
MAX_RANGE = 1_000_000


def _literal(code: Sequence[Token], i: int) -> tuple[int, int] | None:
    """The integer literal at ``code[i]``, signed or not, and the index after it."""
    sign = 1
    if i < len(code) and code[i].text in "+-" and code[i].kind == "punct":
        sign, i = (-1 if code[i].text == "-" else 1), i + 1
    if i < len(code) and code[i].kind == "number" and re.fullmatch(r"0[xX][0-9a-fA-F]+|\d+",
                                                                   code[i].text):
        return sign * int(code[i].text, 0 if code[i].text[:2].lower() == "0x" else 10), i + 1
    return None


def _check_ranges(code: Sequence[Token]) -> dict[int, tuple[int, int]]:
    """Refuse ``range(a, b[, step])`` with literal bounds over :data:`MAX_RANGE` values; the
    others by the index of their ``range`` word: their size and the index of their ``)``."""
    sizes: dict[int, tuple[int, int]] = {}
    for i, tok in enumerate(code):
        if tok.kind != "word" or tok.text.lower() != "range" or i + 1 >= len(code) \
                or code[i + 1].text != "(" or (i and code[i - 1].text == "."):
            continue
        bounds: list[int] = []
        j = i + 2
        while (lit := _literal(code, j)) is not None:
            bounds.append(lit[0])
            j = lit[1]
            if j >= len(code) or code[j].text != ",":
                break
            j += 1
        if len(bounds) < 2 or j >= len(code) or code[j].text not in (")", ","):
            raise QueryRefused(f"range() at {where(tok)} has a bound that is not an integer "
                               "literal: the server builds the whole list before any timeout "
                               "or memory cap, so only literal bounds are sent")
        step = abs(bounds[2]) if len(bounds) > 2 and bounds[2] else 1
        size = abs(bounds[1] - bounds[0]) // step + 1
        if size - 1 > MAX_RANGE:
            raise QueryRefused(f"range() at {where(tok)} builds more than {MAX_RANGE:,} "
                               "values, which the server builds before any timeout")
        sizes[i] = (size, j)
    return sizes


#: The most values the ``range()`` calls of a query may build and walk in all: an iteration
#: over a range (``[x IN range(...) | ...]``, ``reduce``, ``any``...) repeats what is inside it
#: once a value, and FalkorDB evaluates an expression to its end without checking its timeout
#: or memory cap (``[i IN range(1, 1000000) | reduce(s = 0, j IN range(1, 1000) | s + j)]``
#: kept both worker threads busy for over a minute; 1,000,000 values take about 0.1 s here).
#: What one range builds times the ranges iterated around it may not pass :data:`MAX_RANGE`.
MAX_RANGE_WORK = 10 * MAX_RANGE
def _check_per_row(code: Sequence[Token], i: int, what: str, work: int, on: int,
                   literal: bool, clauses: list[str], scopes: list[tuple[int, ...]]) -> None:
    """Refuse a ``range()``, list literal or list held by a name (``literal``) at ``code[i]``
    whose ``work`` values, built again on each row it is evaluated in (at most
    :data:`REPLY_ROWS` kept in the reply), pass :data:`MAX_RANGE_WORK`: the eighth
    re-probe's ``MATCH (a),(b),(c),(d),(e) RETURN range(1, 1000000)``, 16 MB a row, aborted
    a 4 GB server, and ``WITH range(1, 1000000) AS r MATCH ... RETURN [x IN r | x]`` grew
    one to 3 GB (the thirty-ninth re-probe's H2). Only a projection's (``WITH``,
    ``RETURN``) lists are kept with the rows; an ``UNWIND``'s or a ``WHERE``'s pass, and the
    server checks its timeout between rows. What follows a comprehension's ``|`` is its
    projection, in the clause around the comprehension (``[x IN [1] WHERE true |
    range(...)]`` was taken for a ``WHERE``'s). ``on``: the rows it is kept on (one for a
    group's list: :func:`_grouped_uses`)."""
    clause, k = clauses[i], i
    while clause == "|" and scopes[k]:
        k = scopes[k][-1]
        clause = clauses[k]
    if not literal or clause not in ("WITH", "RETURN", "ORDER"):
        return  # a list a row is unwound into, or matched against, is not kept (a sort's
        # key is: ``ORDER BY [0, ..., -y]`` of 1,001 values over 100,000 rows held a 3 s
        # server 10 s, the forty-fifth re-probe's T4)
    if work * min(on, REPLY_ROWS) > MAX_RANGE_WORK:
        raise QueryRefused(f"{what} at {where(code[i])} is built on each row: {_count(work)} values "
                           f"on each of up to {min(on, REPLY_ROWS):,} rows, more than "
                           f"{MAX_RANGE_WORK:,} in all, which the server keeps in its reply")


_CLAUSES = frozenset({"MATCH", "WHERE", "WITH", "RETURN", "UNWIND", "ORDER", "SKIP", "LIMIT",
                      "CALL", "YIELD", "UNION", "OPTIONAL", "LOAD", "FOREACH"})


def outside_each(code: Sequence[Token], found: Callable[[int], bool]) -> list[int | None]:
    """For each token, the index of the nearest token before it, outside the brackets around
    it, for which ``found`` holds (None when none): where the clause an expression is in
    starts. One pass for the whole query: a walk back from each expression cost the square of
    the query's length, 20 s of the pytest process for 5,908 ``range(1,2)`` in one 64 KiB
    ``RETURN`` (the thirty-sixth re-probe's M1; :func:`.unwritable.check_falkordb` asks it
    too). A bracket group closed before a token is passed over whole (the walk back let the
    words of an earlier group of the outer level stand for its clause: ``RETURN [x IN r WHERE
    x > 0] AS a, (range(1, 1000000)) AS b`` took the range for a ``WHERE``'s); a closer no
    bracket opened hides everything before it."""
    out: list[int | None] = []
    around: list[int | None] = []  # what was seen before each bracket open around
    seen: int | None = None
    for k, tok in enumerate(code):
        out.append(seen)
        if tok.kind == "punct" and tok.text in _OPEN:
            around.append(seen)
        elif tok.kind == "punct" and tok.text in _CLOSE:
            seen = around.pop() if around else None
        elif found(k):
            seen = k
    return out


def _clauses(code: Sequence[Token]) -> list[str]:
    """The clause each token is in: the nearest clause word before it, outside the brackets
    around it ("" when none), or ``|`` past a comprehension's bar (:func:`_check_per_row`
    reads the clause around the comprehension then)."""
    return ["" if k is None else code[k].text.upper()
            for k in outside_each(code, lambda k: (code[k].kind == "word"
                                  and code[k].text.upper() in _CLAUSES
                                  and not (k and code[k - 1].text in (".", ":")))
                                  or (code[k].kind == "punct" and code[k].text == "|"))]


#: Words that start the expression an ``AS`` names.
_EXPRESSION_STARTS = frozenset({"WITH", "RETURN", "UNWIND", "YIELD", "DISTINCT"})


def _scopes(code: Sequence[Token]) -> list[tuple[int, ...]]:
    """For each token, the indices of the brackets open around it."""
    out: list[tuple[int, ...]] = []
    opened: list[int] = []
    for i, tok in enumerate(code):
        if tok.kind == "punct" and tok.text in _CLOSE and opened:
            opened.pop()
        out.append(tuple(opened))
        if tok.kind == "punct" and tok.text in _OPEN:
            opened.append(i)
    return out


def _named(code: Sequence[Token], scopes: list[tuple[int, ...]], at: int) -> tuple[int, str]:
    """Where the expression that ``AS`` at ``code[at]`` names starts, and the word that
    starts it (``UNWIND``, ``WITH``..., or ``""`` after a comma or a bracket). An earlier
    ``AS`` of the same level ends the walk too, after its name: ``WITH a AS b AS c ...``, a
    thousand times over, walked back over every earlier name (quadratic: the thirteenth
    re-probe's F4)."""
    k = at - 1
    while k >= 0 and len(scopes[k]) >= len(scopes[at]):
        tok = code[k]
        if scopes[k] == scopes[at] and tok.kind == "word" and tok.text.upper() == "AS":
            return min(k + 2, at), ""
        if scopes[k] == scopes[at] and (tok.text == "," or (
                tok.kind == "word" and tok.text.upper() in _EXPRESSION_STARTS)):
            return k + 1, tok.text.upper() if tok.kind == "word" else ""
        k -= 1
    return k + 1, ""


def _iterated_end(code: Sequence[Token], scopes: list[tuple[int, ...]], at: int) -> int:
    """Where the list the ``IN`` at ``code[at]`` iterates or tests ends: a ``CASE ... END``
    is read whole (the eighth re-probe: ``x IN CASE WHEN true THEN l END`` was cut at its
    ``WHEN``, the list walked counted as none)."""
    end, depth, cases = at + 1, len(scopes[at]), 0
    while end < len(code) and len(scopes[end]) >= depth:
        word = code[end].text.upper() if code[end].kind == "word" else ""
        if len(scopes[end]) == depth:
            if word == "CASE":
                cases += 1
            elif word == "END" and cases:
                cases -= 1
            elif not cases and (code[end].text in ("|", ",") or word in _ITERATED_ENDS):
                break
        end += 1
    return end


def _element(code: Sequence[Token], sources: dict[int, int], elements: dict[str, int],
             start: int, end: int) -> int:
    """What an element of the list ``code[start:end]`` may hold: nothing that counts when the
    list is one range or a literal of nothing that counts (its elements are scalars), an
    element of a named list, else, conservatively, what the whole list holds (``[x IN
    [range(1, 10)] | ...]``)."""
    if end - start >= 4 and code[start].kind == "word" and code[start + 1].text == "(" \
            and code[end - 1].text == ")":
        if _function(code, start) in _REORDERING:  # an element of the argument's (60c L1)
            return _element(code, sources, elements, start + 2, end - 1)
        if _function(code, start) in _TEXT_PARTS:  # a text (61c L3)
            return 0
    inside = [k for k in range(start, end) if k in sources]
    if inside == [start] and code[start].text.lower() in ("[", "range", *_SCALAR_LISTS):
        return 0
    bar = _projection_bar(code, start, end)
    if bar is not None and not any(k > bar for k in inside):
        return 0  # [w IN <list> | w]: each element one value of the lists iterated
    if inside == [start] and code[start].text.strip("`") in elements:
        return elements[code[start].text.strip("`")]
    if inside[:1] == [start] and end - start >= 3 and _function(code, start) == "collect" \
            and code[end - 1].text == ")" and code[start + 1].text == "(" \
            and all(k > start + 1 and k < end - 1 for k in inside[1:]):
        # collect([p.name, p.born]): an element holds what one collected value holds, not
        # the rows too (the forty-third re-probe's M3)
        return sum(sources[k] for k in inside[1:])
    return sum(sources[k] for k in inside)


def _projection_bar(code: Sequence[Token], start: int, end: int) -> int | None:
    """The ``|`` of the comprehension ``[x IN ... | ...]`` that is the whole of
    ``code[start:end]``, if it is one."""
    if code[start].text != "[" or code[end - 1].text != "]":
        return None
    depth = 0
    for k in range(start, end):
        text = code[k].text if code[k].kind == "punct" else ""
        depth += text in _OPEN
        depth -= text in _CLOSE
        if depth == 0 and k < end - 1:
            return None  # the bracket closes before the end: not one comprehension
        if depth == 1 and text == "|":
            return k
    return None


def _list_sources(code: Sequence[Token], ranges: dict[int, tuple[int, int]],
                  scopes: list[tuple[int, ...]], rows: list[int]
                  ) -> tuple[dict[int, int], dict[int, int], frozenset[int], frozenset[int]]:
    """Every ``range()``, list literal and use of a name bound to a list they made (``WITH
    range(1, 10) AS xs``, ``collect`` of the rows ranges were unwound into, ``x`` in ``[x IN
    [range(1, 10)] | ...]``, a ``reduce()``'s accumulator: :func:`_accumulated`), by index:
    the values each may hold (conservatively: what the named expression's sources hold). And
    the accumulator's uses its ``reduce()``'s steps do not repeat as walks, by index: its
    bracket (:func:`_steady`). And the uses of names whose list holds lists (an element of it
    is no scalar: :func:`.operands.copies`)."""
    sources = _made_sources(code, ranges, scopes, rows)
    names: dict[str, int] = {}
    ranged: set[str] = set()  # names bound to a list a range built (:func:`_held`)
    ranged_uses: set[int] = set()
    deep: set[int] = set()
    elements: dict[str, int] = {}  # what an element of a named list may hold
    pending: dict[int, list[tuple[str, int]]] = {}  # a list's end -> the names it binds
    reduces = _accumulators(code, scopes)
    steady = _Steady(code, scopes)
    for i, tok in enumerate(code):
        for target, start in pending.pop(i, []):  # never lowered (below)
            names[target] = max(names.get(target, 0), _element(code, sources, elements, start, i))
        steady.leave(i, names, elements)
        if i in reduces:  # a reduce()'s |: its accumulator is bound in its body
            steady.enter(reduces[i], names, elements)
            names[reduces[i].name], elements[reduces[i].name] = _accumulated(
                code, scopes, sources, names, elements, reduces[i])
        name = tok.text.strip("`")
        if tok.kind in ("word", "quoted") and not (i and code[i - 1].text == ".") \
                and names.get(name) and not (i and code[i - 1].text.upper() == "AS"):
            sources[i] = names[name]
            steady.use(i, name)
            if elements.get(name):
                deep.add(i)
            if name in ranged:
                ranged_uses.add(i)
        if _star(code, i) and (held_ranged := [names[n] for n in ranged if names.get(n)]):
            sources[i] = max(held_ranged)  # RETURN *: every name, a ranged one's list too
            ranged_uses.add(i)
        word = tok.text.upper() if tok.kind == "word" else ""
        if word == "IN" and scopes[i] and i >= 2 and code[i - 1].kind in ("word", "quoted") \
                and code[i - 2].text in ("[", "(", ","):
            end = _iterated_end(code, scopes, i)
            pending.setdefault(end, []).append((code[i - 1].text.strip("`"), i + 1))
        if word != "AS" or i + 1 >= len(code) or code[i + 1].kind not in ("word", "quoted"):
            continue
        start, keyword = _named(code, scopes, i)
        held = sum(sources.get(k, 0) for k in range(start, i)
                   if not _in_scalar_call(code, scopes, k, start))
        if keyword == "UNWIND":  # one element a row: a collected list's are scalars
            held = _element(code, sources, elements, start, i)
        # never lowered: a comprehension's variable, a ``CALL { }`` rebinding or a ``WITH``
        # swap is the outer list again after it (63c P1 to P3: :func:`_stated_sizes`)
        name = code[i + 1].text.strip("`")
        if held and _ranged(code, ranges, ranged_uses, start, i, sources):
            ranged.add(name)
        names[name] = max(names.get(name, 0), held)
        elements[name] = max(elements.get(name, 0),
                             _element(code, sources, elements, start, i))
    return sources, steady.uses, frozenset(ranged_uses), frozenset(deep)


def _in_scalar_call(code: Sequence[Token], scopes: list[tuple[int, ...]], k: int,
                    start: int) -> bool:
    """Whether ``code[k]`` is inside a call of :data:`_NOT_LISTS_OR_TEXT` that starts at or after
    ``code[start]``: what the name the expression is bound to holds is a number there, not
    the list it measured (``WITH ms, size(ms) AS n`` bound ``n`` to the list: the
    forty-third re-probe's M2)."""
    return any(b > start and code[b].text == "(" and code[b - 1].kind == "word"
               and _function(code, b - 1) in _NOT_LISTS_OR_TEXT for b in scopes[k])


def _made_sources(code: Sequence[Token], ranges: dict[int, tuple[int, int]],
                  scopes: list[tuple[int, ...]], rows: list[int]) -> dict[int, int]:
    """The lists the text makes in place, by index: ranges, list literals (``[1, 2, 3]``
    holds 3), calls of :data:`_MADE_LISTS`, pattern comprehensions."""
    sources = {i: size for i, (size, _) in ranges.items()}
    for i, tok in enumerate(code):
        if tok.text == "," and scopes[i] and code[scopes[i][-1]].text == "[":
            sources[scopes[i][-1]] = sources.get(scopes[i][-1], 1) + 1
        elif tok.kind == "word" and i + 1 < len(code) and code[i + 1].text == "(" \
                and (size := _made_list(code, scopes, i, rows[i])):
            sources[i] = size
        elif tok.text == "[" and _pattern_comprehension(code, i):
            sources[i] = UNSIZED_LIST if _one_pattern(code, i + 1) else UNBOUNDED_ROWS
    return sources


@dataclass(frozen=True)
class _Reduce:
    """``reduce(name = <initial>, x IN <list> | <body>)``: where each part is in the code."""

    name: str
    at: int  # the word reduce
    comma: int  # after the initial value
    bar: int
    close: int


def _accumulators(code: Sequence[Token], scopes: list[tuple[int, ...]]) -> dict[int, _Reduce]:
    """Every ``reduce()`` whose parts the text shows, by the index of its ``|``."""
    out: dict[int, _Reduce] = {}
    for i, tok in enumerate(code):
        if tok.kind != "word" or tok.text.lower() != "reduce" or i + 3 >= len(code) \
                or code[i + 1].text != "(" or code[i + 2].kind not in ("word", "quoted") \
                or code[i + 3].text != "=" or (i and code[i - 1].text == "."):
            continue
        comma = bar = None
        k = i + 4
        while k < len(code) and i + 1 in scopes[k]:
            if scopes[k][-1] == i + 1 and code[k].kind == "punct":
                if code[k].text == "," and comma is None:
                    comma = k
                elif code[k].text == "|" and bar is None:
                    bar = k
            k += 1
        if comma is not None and bar is not None and comma < bar:
            out[bar] = _Reduce(code[i + 2].text.strip("`"), i, comma, bar, k)
    return out


def _accumulated(code: Sequence[Token], scopes: list[tuple[int, ...]], sources: dict[int, int],
                 names: dict[str, int], elements: dict[str, int],
                 acc: _Reduce) -> tuple[int, int]:
    """What a ``reduce()``'s accumulator may hold, and an element of it: its initial value's
    sources (``reduce(a = [0, ..., 799], ...)`` is ``[0, ..., 799] AS a``), and at each step
    what its body's other values hold (its body holds it at most once: :func:`_check_reduce`);
    nothing when it sums numbers. Unbound, ``reduce(a = [0, ..., 799], q IN [1] | any(x IN a
    WHERE any(y IN a WHERE any(z IN a ...))))`` was no list walked three deep, and kept a
    FalkorDB server busy two minutes past its timeout (the twenty-fifth re-probe's H2)."""
    if _numeric(code, acc.at + 4) and _arithmetic(code, acc.bar + 1, acc.close,
                                                  _numbers(code, scopes, acc.at + 1, acc.bar)):
        return 0, 0
    initial = sum(sources.get(k, 0) for k in range(acc.at + 4, acc.comma))
    steps = sum(sources.get(k, 0) for k in range(acc.comma + 1, acc.bar))
    body = 0
    for k in range(acc.bar + 1, acc.close):
        tok = code[k]
        if any(b > acc.bar and code[b - 1].text.lower() in _SCALAR_CALLS for b in scopes[k]):
            continue  # size([...]), any(x IN ...): a number or a truth, not its list
        if k in sources:
            body += sources[k]
        elif tok.kind in ("word", "quoted") and code[k - 1].text != "." \
                and tok.text.strip("`") != acc.name:
            body += names.get(tok.text.strip("`"), 0)
    first = _element(code, sources, elements, acc.at + 4, acc.comma)
    return initial + steps * max(1, body), first + body


class _Steady:
    """The uses of an accumulator in its ``reduce()``'s body that are no walk of it (``s +
    [x]``: no ``IN`` of the body iterates or tests them): the reduce's steps copy the
    accumulator, which :func:`_check_reduce` bounds, so they do not multiply such a use as
    they multiply a walk (``reduce(s = [], i IN range(1, 10000) | s + [i])`` is 10,000 values,
    not 10,000 walks of them)."""

    def __init__(self, code: Sequence[Token], scopes: list[tuple[int, ...]]) -> None:
        self.latest = [-1] * len(code)  # the start of the last IN whose list holds each token
        open_ins: list[tuple[int, int]] = []
        for k, tok in enumerate(code):
            while open_ins and open_ins[-1][1] <= k:
                open_ins.pop()
            self.latest[k] = open_ins[-1][0] if open_ins else -1
            if tok.kind == "word" and tok.text.upper() == "IN" and scopes[k]:
                open_ins.append((k, _iterated_end(code, scopes, k)))
        self.live: dict[str, _Reduce] = {}
        self.ends: dict[int, list[tuple[str, _Reduce | None, int | None, int | None]]] = {}
        self.uses: dict[int, int] = {}

    def enter(self, acc: _Reduce, names: dict[str, int], elements: dict[str, int]) -> None:
        """At ``acc``'s ``|``: its name is the accumulator's until its ``)``."""
        self.ends.setdefault(acc.close, []).append(
            (acc.name, self.live.get(acc.name), names.get(acc.name), elements.get(acc.name)))
        self.live[acc.name] = acc

    def leave(self, i: int, names: dict[str, int], elements: dict[str, int]) -> None:
        """At a ``reduce()``'s ``)``: its name is what it was before."""
        for name, live, held, element in reversed(self.ends.pop(i, [])):
            _rebind(self.live, name, live)
            _rebind(names, name, held)
            _rebind(elements, name, element)

    def use(self, i: int, name: str) -> None:
        acc = self.live.get(name)
        if acc is not None and self.latest[i] <= acc.bar:
            self.uses[i] = acc.at + 1


def _rebind(table: dict[str, _V], name: str, value: _V | None) -> None:
    if value is None:
        table.pop(name, None)
    else:
        table[name] = value


#: The values a list made by a function of :data:`_MADE_LISTS` counts as holding when its
#: text does not say: ``collect()`` of a graph's rows, ``split()`` of a property, ``keys()``
#: of a map, ``nodes()`` of a path. Walked three deep, such lists passed every bound and
#: aborted a 4 GB FalkorDB (the fifth re-probe: ``split()`` of a 1,000-character literal, and
#: ``collect(n)`` of a 13-node graph walked nine deep); two deep (a self-join of a collected
#: list) stays within :data:`MAX_RANGE`.
UNSIZED_LIST = 1_000
#: Functions that return a list, by lower-cased dotted name. Not ``properties()``: a node's map
#: holds what the node does, which counts as the node itself does, and a map the query made
#: counts by its name's use inside the call (``WITH collect(properties(m)) AS ms RETURN [x IN
#: ms | x.title]`` was refused as 2,000,000 values: the forty-third re-probe's M3).
_MADE_LISTS = frozenset({"collect", "split", "keys", "labels", "nodes", "relationships",
                         "string.matchregex", "list.sort", "reverse", "tail"})
#: Those of :data:`_MADE_LISTS` whose elements count as scalars when nothing in their
#: argument is a list counted here (iterating one walks nothing more).
_SCALAR_LISTS = ("split", "keys", "labels", "collect", "nodes", "relationships")
#: Those of :data:`_MADE_LISTS` that keep their argument's elements: ``UNWIND reverse([3, 1,
#: 2]) AS x ... ORDER BY x`` took each ``x`` for a list (the sixtieth re-probe's L1).
_REORDERING = frozenset({"reverse", "tail"})


def _made_list(code: Sequence[Token], scopes: list[tuple[int, ...]], i: int,
               rows: int) -> int:
    """The values the list made by the function called at ``code[i]`` may hold: a
    ``collect()`` the ``rows`` it is called over (:func:`_rows`), a ``split()`` of a literal
    its characters and one, another of :data:`_MADE_LISTS` :data:`UNSIZED_LIST`; 0 for
    another function."""
    name = _function(code, i)
    if name not in _MADE_LISTS or (i + 2 < len(code) and code[i + 2].text == "."):
        return 0
    if name == "collect":
        return rows
    if name == "split":
        args = _arguments(code, scopes, i + 1)
        length = _string_length(code, args[0]) if args else None
        if length is not None:
            return length + 1
    return UNSIZED_LIST


#: The rows a clause counts as running over when the text does not bound them: those of a
#: ``MATCH``, a ``CALL``, an ``UNWIND`` of a list the text does not size. The server checks
#: its timeout and memory cap between rows, so the rows themselves are bounded there; but a
#: ``collect()`` of them is one value, and walking it inside a walk of itself is one
#: expression of rows² values (the sixth re-probe: ``MATCH (a),(b),(c),(d) WITH collect(1)
#: AS l RETURN size([x IN l | [y IN l | 0]])``, 28,561² values on a 13-node graph, aborted a
#: 4 GB server). So a collected list may be walked once, not inside another walk of such a
#: list: a join belongs in the ``MATCH``, where the server checks between rows.
#: One ``MATCH`` of one fixed-length pattern, the first row source, counts as
#: :data:`UNSIZED_LIST` rows, what a graph's other made lists count as, so a collected list of
#: its matches is walked two deep (a self-join); a product of row sources (patterns beside
#: one another, a second ``MATCH``, a variable-length relationship) is unbounded.
UNBOUNDED_ROWS = MAX_RANGE
#: Clauses after which the rows are :data:`UNBOUNDED_ROWS`.
_ROW_SOURCES = frozenset({"CALL", "LOAD"})
#: Words that end a ``MATCH`` clause's patterns.
_PATTERN_ENDS = frozenset({"WHERE", "WITH", "RETURN", "MATCH", "OPTIONAL", "UNWIND", "CALL",
                           "ORDER", "SKIP", "LIMIT", "UNION", "LOAD", "FOREACH", "YIELD"})


class _Subqueries(Generic[_S]):
    """The ``CALL { ... }`` subqueries open at a token, each with the state (of a count) its
    outer rows had at its opening and the states its ``UNION`` branches ended with. A
    ``UNION`` or an aggregating ``WITH`` inside one starts again from its outer rows, not from
    one row, and past it the rows are its branches' (``merge``: their sum, or the largest's):
    ``CALL { UNWIND range(1,100000) AS k RETURN k UNION ALL RETURN 0 AS k }
    UNWIND range(1,30) ...`` sorted 3,000,030 rows taken for 30 and held a 3 s server 8 s,
    and ``MATCH (a), (b), (c), (d) CALL { MATCH (x) WITH count(x) AS c RETURN c } MATCH (e),
    (f) ...`` six patterns taken for two (the fifty-seventh re-probe's R1, R2)."""

    def __init__(self, code: Sequence[Token], scopes: list[tuple[int, ...]],
                 merge: Callable[[list[_S], _S], _S], enter: Callable[[_S], _S]) -> None:
        self._code, self._scopes, self._merge, self._enter = code, scopes, merge, enter
        self._open: list[tuple[int, _S, list[_S]]] = []  # brace, outer state, branches ended

    def step(self, i: int, state: _S) -> _S:
        """The state at ``code[i]``: a subquery opened there, or closed (its branches')."""
        tok = self._code[i]
        if tok.kind == "punct" and tok.text == "{" and i and self._code[i - 1].kind == "word" \
                and self._code[i - 1].text.upper() == "CALL":
            self._open.append((i, state, []))
            return self._enter(state)
        elif tok.kind == "punct" and tok.text == "}" and self._open \
                and _opening(self._scopes, i) == self._open[-1][0]:
            _, outer, ended = self._open.pop()
            return self._merge([*ended, state], outer)
        return state

    def outer(self, i: int) -> _S | None:
        """The outer rows' state of the subquery ``code[i]`` is a clause of (None at the
        query's own level)."""
        if self._open and self._scopes[i] and self._scopes[i][-1] == self._open[-1][0]:
            return self._open[-1][1]
        return None

    def restart(self, i: int, state: _S, fresh: _S) -> _S:
        """At the ``UNION`` ``code[i]``: ``state`` ends a branch; the next starts from the
        subquery's outer rows, or ``fresh`` at the query's own level."""
        if (outer := self.outer(i)) is None:
            return fresh
        brace, _, ended = self._open[-1]
        self._open[-1] = (brace, outer, [*ended, state])
        return self._enter(outer)


def _counted_rows(code: Sequence[Token], ranges: dict[int, tuple[int, int]],
                  unwound: dict[int, tuple[int, bool]] | None = None,
                  factors: dict[int, int] | None = None, stated: dict[int, int] | None = None
                  ) -> tuple[list[int], list[bool], list[int]]:
    """The rows the clause at each token runs over, as far as the text bounds them: one,
    times each ``UNWIND`` of a literal ``range()`` or of a list literal of literals, capped
    by a literal ``LIMIT``; :data:`UNBOUNDED_ROWS` from a clause of :data:`_ROW_SOURCES` or
    an ``UNWIND`` of anything else on (errs high: a ``WITH`` that aggregates does not
    lower it). And whether the text counts them (ranges, list literals, a ``LIMIT``), or
    they are a guess of a graph's matches. And the rows the text's counted factors make at
    least, whatever the guesses beside them (``MATCH (a) UNWIND range(1,1000000) ...`` sorted
    13,000,000 rows, taken for 1,000,000 guessed: the forty-fifth re-probe's T3), times what
    the ``MATCH`` clauses (``factors``: :func:`_products`) and the lists the text does not
    count make at least when it counts more than one (the forty-eighth re-probe's H3).
    ``unwound``: :func:`_unwound_names`; ``stated``: :func:`_stated_sizes`."""
    out, counted, least = [], [], []
    rows, matched, depth, aggregated, exact, floor = 1, False, 0, False, True, 1
    matches = 1  # what the MATCH clauses make at least (:func:`_matched_at_least`)
    collected: dict[str, int] = {}  # a name a collect() bound: the rows it gathered at least
    subs = _Subqueries(code, scopes := _scopes(code), _branches, lambda state: state)
    ends = (-1, (1, 1))  # an aggregating subquery RETURN's end, and the outer rows from there
    for i, tok in enumerate(code):  # there, a subquery's one row of each outer one (59c L1)
        floor, matches = ends[1] if i == ends[0] else (floor, matches)
        floor, matches = subs.step(i, (floor, matches))
        depth += (tok.kind == "punct") * ((tok.text in _OPEN) - (tok.text in _CLOSE))
        word = _keyword(code, i)
        if aggregated and depth == 0 and word in _PROJECTION_ENDS:
            # past ``WITH collect(x) AS r``: one row, a MATCH of one pattern a first one's
            rows, aggregated, matched, exact, floor, matches = 1, False, False, True, 1, 1
        if word == "MATCH":
            one = not matched and _one_pattern(code, i + 1)
            rows, matched = _times(rows, UNSIZED_LIST, False) if one \
                else max(rows, UNBOUNDED_ROWS), True
            exact = False
            # an OPTIONAL one too (J1, J2); a pattern apart: :data:`CROSS_MATCHED_AT_LEAST`
            matches *= (factors or {}).get(i) or _matched_at_least(code, i + 1)
        elif word in _ROW_SOURCES:
            rows, exact = max(rows, UNBOUNDED_ROWS), False
        elif word == "UNWIND":
            rows, exact, more, apart = _unwinding(code, ranges, i, (rows, exact),
                                                  unwound or {}, stated or {}, collected)
            floor, matches = floor * more, matches * apart
        elif word == "LIMIT" and depth == 0 and _limits(code, i):
            rows, exact = _limited(code, i, rows, exact)
            floor, matches = (min(floor * matches, rows), 1) if floor > 1 \
                else (floor, min(matches, rows))  # as many as it lets through (M3)
        if word == "WITH" and depth == 0:
            aggregated = _aggregates_only(code, i + 1)  # its own items see the rows before
        if word in ("WITH", "RETURN"):  # a subquery's RETURN too
            collected.update(_collects(code, i + 1, floor * matches, collected))
        if word == "RETURN" and (outer := subs.outer(i)) and _aggregates_only(code, i + 1):
            # past its items, which take the subquery's rows (a percentile there: 70c H1)
            ends = (_clause_end(code, scopes, i + 1), outer)
        if word == "UNION":  # a new product (54c O1), or a subquery's branch (R1)
            floor, matches = subs.restart(i, (floor, matches), (1, 1))
        out.append(rows)
        counted.append(exact)
        # beside rows the text counts (H3); alone, a guess no sort here is refused for
        least.append(floor * matches if floor > 1 else floor)
    return out, counted, least


def _branches(states: list[tuple[int, int]], _outer: tuple[int, int]) -> tuple[int, int]:
    """Past a subquery, its ``UNION`` branches' (floor, matches) states summed: the rows each
    counts at least (its floor times its matches, where it counts rows), and the least of
    the matches of those that count none (ten branches of 99,999 values are 999,990 rows,
    thirty 2,999,970 were sorted, and three subqueries of ten constant branches each make a
    thousand rows of each outer one, a ``UNION`` too where the values differ: the
    fifty-eighth re-probe's U1, U2; a one-row branch beside ``MATCH (a), (b)`` kept the
    matches of neither: 59c V1)."""
    if len(states) == 1:
        return states[0]
    guesses = [matches for floor, matches in states if floor <= 1]
    return (sum(floor * matches if floor > 1 else floor for floor, matches in states),
            min(guesses, default=1))


def _no_names(state: tuple[int, frozenset[str]]) -> tuple[int, frozenset[str]]:
    """Inside a subquery, and in each of its ``UNION`` branches: the outer degree, no name
    bound (the server passes a subquery no outer name but by its leading ``WITH``: ``MATCH
    (a), (b) CALL { MATCH (a), (b) ... }`` was four nodes matched apart, taken for two:
    the fifty-ninth re-probe's V2)."""
    return state[0], frozenset()


def _with_outer_names(states: list[tuple[int, frozenset[str]]],
                      outer: tuple[int, frozenset[str]]) -> tuple[int, frozenset[str]]:
    """Past a subquery, its largest branch's degree (:func:`_products`), with the names
    bound before it."""
    degree, names = max(states, key=lambda state: state[0])
    return degree, names | outer[1]


def _unwinding(code: Sequence[Token], ranges: dict[int, tuple[int, int]], i: int,
               before: tuple[int, bool], unwound: dict[int, tuple[int, bool]],
               stated: dict[int, int], collected: dict[str, int]) -> tuple[int, bool, int, int]:
    """Past the ``UNWIND`` at ``code[i]`` (``before``: the rows and whether the text counts
    them): the rows, whether the text counts them, and what the floor and the guess of the
    graph's matches are multiplied by (:func:`_unwound_least`; a name a ``collect()`` bound,
    the rows it gathered: :func:`_collects`)."""
    rows, exact = before
    size, sized = _unwound(code, ranges, i + 1), True
    if size is not None and i + 1 in stated and i + 1 not in ranges and code[i + 1].text != "[":
        size = None  # a made list of lists the query made: no guess but theirs (60c W1, W2)
    if size is None and i + 1 in unwound:
        size, sized = unwound[i + 1]
    rows = max(rows, UNBOUNDED_ROWS) if size is None else _times(rows, size, exact and sized)
    exact = exact and size is not None and sized
    more, apart = _unwound_least(size if sized else None, stated.get(i + 1))
    end = i + 1  # the list an UNWIND unwinds ends at its AS (one of a collected name: N1-N3)
    while end < len(code) and _keyword(code, end) not in ("AS", *_CLAUSES):
        end += 1
    held = _held_collected(code, (i + 1, end), 1, collected)
    return (rows, exact, held, 1) if held > more else (rows, exact, more, apart)


def _collects(code: Sequence[Token], at: int, before: int,
              collected: dict[str, int]) -> dict[str, int]:
    """The names the projection (or a subquery's ``RETURN``) from ``code[at]`` binds to a list
    made from a ``collect()`` (``collect(a)``, ``collect(a)[0..]``, ``tail(collect(a))``) or
    from a name already bound so (``WITH xs AS ys``), each with what it holds at least: the
    rows ``before`` the projection, or the other name's. Taken for 50, a list of 13,000 nodes
    (``UNWIND range(1,1000) AS j MATCH (a) WITH collect(a) AS xs UNWIND xs AS x UNWIND
    range(1,250) AS k ... ORDER BY x, k``, 3,250,000 rows) was 12,500 rows, and two unwinds of
    it, or one beside a pattern, one row: the next cases' golds timed out (the fifty-fourth
    re-probe's N1 to N3)."""
    out: dict[str, int] = {}
    depth, k, item = 0, at, at
    while k < len(code):
        tok = code[k]
        if tok.kind == "punct" and tok.text in _OPEN:
            depth += 1
        elif tok.kind == "punct" and tok.text in _CLOSE:
            depth -= 1
        elif depth <= 0 and (_keyword(code, k) in _PROJECTION_ENDS or depth < 0):
            break
        elif depth == 0 and tok.text == ",":
            item = k + 1
        elif depth == 0 and _keyword(code, k) == "AS" and k + 1 < len(code):
            held = _held_collected(code, (item, k), before, collected)
            if held:
                out[code[k + 1].text.strip("`")] = held
        k += 1
    return out


def _held_collected(code: Sequence[Token], span: tuple[int, int], before: int,
                    collected: dict[str, int]) -> int:
    """What the expression ``code[span[0]:span[1]]`` holds at least of collected values:
    ``before`` if it calls ``collect()``, a collected name's values if it names one, or 0."""
    held = 0
    for k in range(*span):
        if code[k].kind in ("word", "quoted"):
            held = max(held, collected.get(code[k].text.strip("`"), 0))
            if k + 1 < span[1] and code[k + 1].text == "(" and _function(code, k) == "collect":
                held = max(held, before)
    return held


def _unwound_least(counted: int | None, stated: int | None) -> tuple[int, int]:
    """What an ``UNWIND`` multiplies the rows the text counts by, and the guess of the
    graph's matches beside them: the values it ``counted``, or those the text ``stated``
    (:func:`_stated_sizes`), or else a list the text does not count, which multiplies the
    rows as a pattern apart does (``MATCH (a) WITH collect(a) AS xs UNWIND range(1,18000)
    AS k UNWIND xs AS a UNWIND xs AS b ... ORDER BY b, a`` was taken for 18,000 rows, 3,042,000
    on the 13-node graph: the fifty-third re-probe's M2). A ``LIMIT`` after them keeps the
    rows it lets through (``MATCH (a) WITH a LIMIT 13 UNWIND range(...)`` was taken for one
    row: M3)."""
    if counted is not None:
        return counted, 1
    return (stated, 1) if stated else (1, CROSS_MATCHED_AT_LEAST)


def _limited(code: Sequence[Token], i: int, rows: int, exact: bool) -> tuple[int, bool]:
    """The rows past the ``LIMIT`` at ``code[i]``, and whether the text counts them:
    unbounded rows are as many as a LIMIT lets through (``WITH y LIMIT 4000000`` after a
    product of ranges: the forty-second re-probe's Q1, Q2)."""
    limit = _limit(code, i + 1)
    if limit is None and rows >= UNBOUNDED_ROWS:
        raise QueryRefused(f"LIMIT at {where(code[i])} is not a number the guard can read "
                           "after rows it cannot bound: only a number or arithmetic "
                           "of numbers is sent there")
    if limit is not None and (rows >= UNBOUNDED_ROWS or limit <= rows):
        return limit, True
    return rows, exact


def _stated_sizes(code: Sequence[Token], scopes: list[tuple[int, ...]],
                  ranges: dict[int, tuple[int, int]]) -> dict[int, int]:
    """The values each list an ``UNWIND`` unwinds holds, by the index of its start, where the
    text states it but :func:`_unwound` does not count it (:func:`_stated`: ``[x IN
    range(1,100000) | x]``), or names bound to one in it (``WITH range(1,100000) AS r ...
    UNWIND r AS k``; :func:`_named_sizes`). Taken for none, 100,000 values unwound beside a
    pattern and sorted by its nodes were one row each (1,300,000 on the 13-node graph)."""
    named: dict[str, int | None] = {}
    built: set[str] = set()  # names bound to a value the query builds (:func:`_built_text`)
    out: dict[int, int] = {}
    for i, tok in enumerate(code):
        if tok.kind != "word" or _keyword(code, i) != "AS" or i + 1 >= len(code):
            continue
        start, keyword = _named(code, scopes, i)
        size = _stated(code, ranges, start, i)
        if size is None:
            size = _named_sizes(code, scopes, named, (start, i)) or None
        if _splits_built(code, scopes, (start, i), built):
            size = UNBOUNDED_ROWS
        if keyword == "UNWIND" and size is not None:
            out[start] = size
        # never lowered nor forgotten: a name rebound inside ``CALL { }`` is the outer one again
        # past it, and ``WITH 'a' AS t, t AS u`` gives ``u`` the old ``t`` (the sixty-second
        # re-probe's K1 to K5: a stated range or a built text shadowed so, then sorted)
        name = code[i + 1].text.strip("`")
        bound = None if keyword == "UNWIND" and size != UNBOUNDED_ROWS else size
        named[name] = max(named.get(name) or 0, bound or 0) or None
        if _built_text(code, (start, i), built):
            built.add(name)
    return out


#: Functions that make a list of a text's parts, as many as its characters at most.
_TEXT_PARTS = frozenset({"split", "string.matchregex"})
#: Calls whose text is no longer than their argument's (a property's text kept so).
_TEXT_KEEPING = frozenset({"coalesce", "tolower", "toupper", "lower", "upper", "trim", "ltrim",
                           "rtrim", "substring", "left", "right", "tostring"})


def _splits_built(code: Sequence[Token], scopes: list[tuple[int, ...]], span: tuple[int, int],
                  built: set[str]) -> bool:
    """Whether ``code[span]`` splits a text the query builds (:func:`_built_text`): its parts
    are its characters at most, which no count of the values it was built from bounds
    (``split(toJSON([x IN range(1,2000) | [x, x, ...]]), '')`` is 112,930 values, taken for
    2,000: beside ``UNWIND range(1,50)``, 5,600,000 rows sorted held a 3 s server 30 s, the
    sixty-first re-probe's J1 to J7)."""
    for k in range(*span):
        if code[k].kind == "word" and k + 1 < span[1] and code[k + 1].text == "(" \
                and _function(code, k) in _TEXT_PARTS:
            args = _arguments(code, scopes, k + 1)
            if args and _built_text(code, args[0], built):
                return True
    return False


def _built_text(code: Sequence[Token], span: tuple[int, int], built: set[str]) -> bool:
    """Whether ``code[span]`` is a value the query builds: a list or a map, a call but of
    :data:`_TEXT_KEEPING`, a name bound to such a value; not a literal, a property or a
    parameter."""
    for k in range(*span):
        tok = code[k]
        if tok.kind == "punct" and tok.text in ("[", "{") and not (
                k and (code[k - 1].kind in ("word", "quoted") or code[k - 1].text in ")]")):
            return True  # a list or a map, not a subscript
        if tok.kind in ("word", "quoted") and not (k and code[k - 1].text == "."):
            if k + 1 < len(code) and code[k + 1].text == "(":
                if _function(code, k) not in _TEXT_KEEPING:
                    return True
            elif tok.text.strip("`") in built:
                return True
    return False


def _named_sizes(code: Sequence[Token], scopes: list[tuple[int, ...]],
                 named: dict[str, int | None], span: tuple[int, int]) -> int:
    """What the names bound to a stated list hold in ``code[span]`` (but as a scalar call's
    argument: ``size(r)``), as what a list made of them holds, erring high for a slice:
    ``tail(r)``, ``r[1..]``, ``(r)``, ``r + []``, ``coalesce(r, [])``, a ``split()`` of a text
    joined from ``r``'s values, were taken for 1,000 values counted or for none, and
    5,000,000 rows sorted held a 3 s server 14 to 33 s (the sixtieth re-probe's W1 to W3b)."""
    start, end = span
    return sum(named.get(code[k].text.strip("`")) or 0 for k in range(start, end)
               if code[k].kind in ("word", "quoted") and not (k and code[k - 1].text == ".")
               and not (k + 1 < end and code[k + 1].text == "(")
               and not _in_scalar_call(code, scopes, k, start))


def _stated(code: Sequence[Token], ranges: dict[int, tuple[int, int]], start: int,
            end: int) -> int | None:
    """What a list ``code[start:end]`` holds if a literal ``range()`` makes it, in brackets
    or a comprehension (a ``WHERE`` too: ``WHERE true`` keeps every value), as many as its
    ranges hold (a slice of one errs high)."""
    held = [ranges[k][0] for k in range(start, end) if k in ranges and ranges[k][1] < end]
    return sum(held) if held else None


#: The rows a ``MATCH`` is taken to make at least, where the text counts none, for a sort
#: over its product with rows the text counts: a match of fixed hops, and one with a
#: variable-length relationship. ``MATCH p=(a)-[*]-(b) CALL { UNWIND range(1,100000) AS k
#: RETURN k } WITH p, k ORDER BY p`` was taken for 100,000 rows (314 paths there: 31,400,000)
#: and held a 3 s server 11.4 s, and the next case's gold timed out (the forty-eighth
#: re-probe's H3).
MATCHED_AT_LEAST = 2
#: (a sort by nodes of ``UNWIND range(1,10000)`` beside a ``[*]`` pattern, taken for 10 rows
#: each, held the server 9 s: the fifty-first re-probe's K1)
VARIABLE_MATCHED_AT_LEAST = 100


def _matched_at_least(code: Sequence[Token], start: int) -> int:
    """What a ``MATCH`` whose patterns start at ``code[start]`` multiplies the counted rows
    by at least: each of its patterns (a product of those a comma joins)
    :data:`MATCHED_AT_LEAST`, or :data:`VARIABLE_MATCHED_AT_LEAST` with a variable-length
    relationship (two of those, each with a fixed hop, sorted by their paths, held the
    server 9.6 s: the forty-eighth re-probe's H1)."""
    depth, product, variable = 0, 1, False
    for tok in code[start:]:
        if tok.kind == "punct" and tok.text in _OPEN:
            depth += 1
        elif tok.kind == "punct" and tok.text in _CLOSE:
            depth -= 1
            if depth < 0:
                break
        elif depth == 0 and (tok.text == "," or (
                tok.kind == "word" and tok.text.upper() in _PATTERN_ENDS)):
            product *= VARIABLE_MATCHED_AT_LEAST if variable else MATCHED_AT_LEAST
            variable = False
            if tok.text != ",":
                return product
        elif depth > 0 and tok.text == "*":
            variable = True
    return product * (VARIABLE_MATCHED_AT_LEAST if variable else MATCHED_AT_LEAST)


def _whole_collect(code: Sequence[Token], scopes: list[tuple[int, ...]], start: int,
                   end: int) -> bool:
    """Whether ``code[start:end]`` is one ``collect(...)`` call, whole."""
    return start + 3 <= end and code[start].kind == "word" \
        and _function(code, start) == "collect" and code[start + 1].text == "(" \
        and code[end - 1].text == ")" and scopes[end - 2][len(scopes[start]):][:1] == (start + 1,)


def _unwound_names(code: Sequence[Token], scopes: list[tuple[int, ...]],
                   sources: dict[int, int], counted: list[bool]) -> dict[int, tuple[int, bool]]:
    """For each ``UNWIND`` of a name bound to a list (``UNWIND r AS a``), by the name's index:
    the values the list holds (:func:`_list_sources`) and whether the text counts them (a
    ``collect()`` bound outside brackets, over rows the text counts). An ``UNWIND`` of a name
    made the rows unbounded and uncounted, so a sort over two of them, by a one-value key,
    was never refused: ``UNWIND range(1,3000) AS y WITH collect(y) AS r UNWIND r AS a UNWIND
    r AS b RETURN a ORDER BY b`` sorted 9,000,000 rows, 11.7 s on a 3 s server (the
    forty-fifth re-probe's T2)."""
    bound: dict[str, bool] = {}  # a name a top-level collect() bound: its rows counted?
    out: dict[int, tuple[int, bool]] = {}
    for i, tok in enumerate(code):
        if scopes[i] or tok.kind != "word" or i + 2 >= len(code):
            continue
        word = tok.text.upper()
        name = code[i + 1].text.strip("`")
        if word == "AS" and code[i + 1].kind in ("word", "quoted"):
            start, _ = _named(code, scopes, i)
            bound[name] = counted[start] and _whole_collect(code, scopes, start, i)
        elif word == "UNWIND" and code[i + 2].text.upper() == "AS" \
                and code[i + 1].kind in ("word", "quoted") and i + 1 in sources:
            out[i + 1] = (sources[i + 1], bound.get(name, False))
    return out


def _times(rows: int, each: int, exact: bool) -> int:
    """``rows`` times ``each``; when ``rows`` are a guess (a graph's matches, counted as
    :data:`UNSIZED_LIST` or :data:`UNBOUNDED_ROWS`), capped at :data:`UNBOUNDED_ROWS` unless
    they already passed it. Rows the text counts (ranges and list literals unwound, a
    ``LIMIT``) are multiplied whole: ``UNWIND range(1, 1000) ... UNWIND range(1, 1000) ...
    UNWIND range(1, 8)`` is 8,000,000 rows, which a ``collect()`` holds as one list (the
    forty-third re-probe's S2 counted 1,000,000)."""
    return rows * each if exact else min(rows * each, max(rows, UNBOUNDED_ROWS))


def _limits(code: Sequence[Token], i: int) -> bool:
    """Whether the word ``LIMIT`` at ``code[i]`` is the clause: FalkorDB takes ``limit`` for a
    name too (``MATCH limit = (a), (b) ... RETURN limit``)."""
    after = code[i + 1] if i + 1 < len(code) else None
    return after is not None and after.text not in ("=", ",", ".", ")", "]", "}", "[") \
        and not (after.kind == "word" and after.text.upper() in _CLAUSES | {"AS"})


#: Calls a ``LIMIT``'s arithmetic may use (:func:`_limit`).
_LIMIT_CALLS: dict[str, Callable[[float], float]] = {
    "tointeger": math.floor, "tofloat": float, "round": round, "floor": math.floor,
    "ceil": math.ceil, "abs": abs}
#: The most rows a ``LIMIT`` counts as (past it, the value is no count the server keeps).
_LIMIT_CAP = 10**15


def _limit(code: Sequence[Token], at: int) -> int | None:
    """The rows the ``LIMIT`` whose expression starts at ``code[at]`` lets through, when the
    expression is numbers and arithmetic (``(8000000)``, ``toInteger(4000000)``,
    ``4000000.0``, ``4e6``, ``2000000 * 2``); None for anything else (a parameter, a name).
    Only a number right after ``LIMIT`` was read, so ``LIMIT 2000000*2`` counted 2,000,000
    rows and ``LIMIT (8000000)`` none (the forty-third re-probe's S2)."""
    end = at
    while end < len(code) and not (code[end].kind == "word" and code[end].text.upper()
                                   in _CLAUSES | {"UNION"}) and code[end].text != ";":
        end += 1
    parser = _Arithmetic(code[at:end])
    value = parser.sum()
    if value is None or parser.at != end - at or value != value:  # NaN
        return None
    return int(min(max(math.ceil(value), 0), _LIMIT_CAP))


class _Arithmetic:
    """Reads numbers and arithmetic (``+ - * / % ^``, brackets, :data:`_LIMIT_CALLS`) by
    precedence; None when anything else is in it."""

    def __init__(self, code: Sequence[Token]) -> None:
        self.code, self.at = code, 0

    def _next(self) -> str:
        return self.code[self.at].text if self.at < len(self.code) else ""

    def sum(self) -> float | None:
        value = self.product()
        while value is not None and self._next() in ("+", "-"):
            sign = self._next()
            self.at += 1
            right = self.product()
            value = None if right is None else value + right if sign == "+" else value - right
        return value

    def product(self) -> float | None:
        value = self.power()
        while value is not None and self._next() in ("*", "/", "%"):
            op = self._next()
            self.at += 1
            right = self.power()
            if right is None or (op != "*" and right == 0):
                return None
            value = value * right if op == "*" else value / right if op == "/" \
                else math.fmod(value, right)
            value = max(min(value, _LIMIT_CAP), -_LIMIT_CAP)
        return value

    def power(self) -> float | None:
        value = self.atom()
        if value is not None and self._next() == "^":
            self.at += 1
            right = self.atom()
            if right is None:
                return None
            try:
                value = min(abs(value) ** min(right, 64), _LIMIT_CAP)
            except (OverflowError, ZeroDivisionError):
                return None
        return value

    def atom(self) -> float | None:
        text = self._next()
        self.at += 1
        if text in ("+", "-"):
            value = self.atom()
            return None if value is None else -value if text == "-" else value
        if self.at - 1 < len(self.code) and self.code[self.at - 1].kind == "number":
            return float(int(text, 16)) if text[:2].lower() == "0x" else float(text)
        call = _LIMIT_CALLS.get(text.lower())
        if call is not None and self._next() == "(":
            self.at += 1
        elif text != "(":
            return None
        value = self.sum()
        if value is None or self._next() != ")":
            return None
        self.at += 1
        return float(call(value)) if call is not None else value


#: Clause words that end a ``WITH``'s projection.
_PROJECTION_ENDS = frozenset({"MATCH", "OPTIONAL", "WHERE", "RETURN", "WITH", "UNWIND", "ORDER",
                              "SKIP", "LIMIT", "CALL", "UNION"})


def _aggregates_only(code: Sequence[Token], at: int) -> bool:
    """Whether the projection from ``code[at]`` is aggregates alone (each item calls one): one
    row, no grouping key. A list such an item makes is then one list, not one a row (the
    fortieth re-probe's N4 multiplied it by the rows of a ``MATCH`` after it)."""
    items, aggregate, depth = 0, False, 0
    for k in range(at, len(code)):
        tok = code[k]
        if tok.kind == "punct" and tok.text in _OPEN:
            depth += 1
        elif tok.kind == "punct" and tok.text in _CLOSE:
            depth -= 1
        elif depth == 0 and tok.text == ",":
            if not aggregate:
                return False
            items, aggregate = items + 1, False
        elif depth == 0 and tok.kind == "word" and tok.text.upper() in _PROJECTION_ENDS:
            break
        if tok.kind == "word" and tok.text.lower() in _AGGREGATES and k + 1 < len(code) \
                and code[k + 1].text == "(":
            aggregate = True
        if tok.text == "*" and depth == 0:
            return False
    return aggregate


def _one_pattern(code: Sequence[Token], at: int) -> bool:
    """Whether the ``MATCH`` clause (or the pattern comprehension) starting at ``code[at]`` is
    one pattern of fixed length: no comma outside brackets, no ``*`` in a relationship. A
    word before ``=`` names the path (FalkorDB takes ``order`` or ``limit`` as a path
    variable), it does not end the clause."""
    depth = 0
    for k in range(at, len(code)):
        tok = code[k]
        if depth == 0 and tok.kind == "word" and tok.text.upper() in _PATTERN_ENDS \
                and not (k + 1 < len(code) and code[k + 1].text == "="):
            return True
        if (depth == 0 and tok.text == "|") or depth < 0:
            return True
        if tok.kind == "punct" and tok.text in _OPEN:
            depth += 1
        elif tok.kind == "punct" and tok.text in _CLOSE:
            depth -= 1
        elif (tok.text == "," and depth == 0) or tok.text == "*":
            return False
    return True


def _pattern_comprehension(code: Sequence[Token], at: int) -> bool:
    """Whether the ``[`` at ``code[at]`` opens a pattern comprehension (``[(a)--(b) | b]``,
    ``[p = (a)--() | p]``): a list of the graph's matches, as many as a ``MATCH`` of that
    pattern has rows (the seventh re-probe: ``[(a)-[*]-(b) | 1]`` walked around a range of a
    million aborted the server, the list counted as none)."""
    k = at + 1
    if k + 1 < len(code) and code[k].kind in ("word", "quoted") and code[k + 1].text == "=":
        k += 2
    if k >= len(code) or code[k].text != "(":
        return False
    depth = 0
    for tok in code[at + 1:]:
        if tok.kind == "punct" and tok.text in _OPEN:
            depth += 1
        elif tok.kind == "punct" and tok.text in _CLOSE:
            if depth == 0:
                return False
            depth -= 1
        elif depth == 0 and (tok.text == "|" or tok.text.upper() == "WHERE"):
            return True
        elif depth == 0 and tok.text.upper() == "IN":
            return False
    return False


def _unwound(code: Sequence[Token], ranges: dict[int, tuple[int, int]], at: int) -> int | None:
    """The values the list an ``UNWIND`` unwinds at ``code[at]`` holds, if the text says: a
    literal ``range()``, a list literal of literals (``['a', 'b']``), or
    :data:`UNSIZED_LIST` for a list a function of :data:`_MADE_LISTS` makes but ``collect()``
    (whose rows :func:`_rows` counts)."""
    if at in ranges:
        end = ranges[at][1] + 1
        return ranges[at][0] if end < len(code) and code[end].text.upper() == "AS" else None
    if at + 1 < len(code) and code[at + 1].text == "(" and _function(code, at) in _MADE_LISTS \
            and _function(code, at) != "collect":
        return UNSIZED_LIST  # split(s, ';'), keys(n), nodes(p): a graph's or a value's parts
    if at >= len(code) or code[at].text != "[":
        return None
    count, k = 1, at + 1
    while k < len(code) and code[k].text != "]":
        if code[k].text == ",":
            count += 1
        elif code[k].kind not in ("number", "string") and code[k].text not in ("+", "-"):
            return None
        k += 1
    return count if k + 1 < len(code) and code[k + 1].text.upper() == "AS" else None


#: What ends the list an ``IN`` iterates (at the ``IN``'s own depth).
_ITERATED_ENDS = frozenset({"AND", "OR", "XOR", "WHERE", "RETURN", "WITH", "WHEN", "THEN",
                            "ELSE", "END", "AS", "ORDER", "BY", "SKIP", "LIMIT", "UNWIND",
                            "MATCH", "YIELD", "UNION", "OPTIONAL", "CALL", "IN", "IS",
                            "CONTAINS"})


def _iterations(code: Sequence[Token], scopes: list[tuple[int, ...]], sources: dict[int, int],
                ) -> tuple[dict[int, int], dict[tuple[int, int], int]]:
    """The values of the lists iterated in each bracket (``[x IN <list> | ...]``, ``reduce``,
    ``any``..., and ``a IN <list>`` too: a test of every value), multiplied by bracket, a list
    holding what the sources in it hold; and, for a source in one of those lists, by source and
    bracket, that list's values (a list is not repeated by its own iteration)."""
    walked: dict[int, int] = {}
    own: dict[tuple[int, int], int] = {}
    for i, tok in enumerate(code):
        if tok.text == "[" and i in sources and _pattern_comprehension(code, i):
            walked[i] = walked.get(i, 1) * sources[i]  # its body once a match
            own[(i, i)] = sources[i]
        if tok.kind != "word" or tok.text.upper() != "IN" or not scopes[i]:
            continue
        inside = [k for k in range(i + 1, _iterated_end(code, scopes, i)) if k in sources]
        held = sum(sources[k] for k in inside)
        if held:
            bracket = scopes[i][-1]
            walked[bracket] = walked.get(bracket, 1) * held
            own.update({(k, bracket): held for k in inside})
    return walked, own


def _check_work(code: Sequence[Token], ranges: dict[int, tuple[int, int]],
                scopes: list[tuple[int, ...]], rows: list[int]
                ) -> tuple[dict[int, int], int, dict[int, int]]:
    """Refuse a list a range made that is built or walked inside iterations over others
    whose sizes multiply past :data:`MAX_RANGE`, or all of them past :data:`MAX_RANGE_WORK`.
    An iteration (``x IN <list>``) repeats its bracket's content: a list at every depth of
    that bracket counts as repeated, even beside the iteration (errs high). What the lists
    iterated in each bracket hold, multiplied, by bracket; and the most values one list
    builds or walks (how many times an expression may be evaluated); and every list's
    values, by index (:func:`_list_sources`)."""
    sources, steady, ranged, deep = _list_sources(code, ranges, scopes, rows)
    walked, own = _iterations(code, scopes, sources)
    own.update({(k, bracket): walked.get(bracket, 1) for k, bracket in steady.items()})
    total = peak = 0
    clauses = _clauses(code) if sources else []
    copied = _copied(code, scopes, walked, ranged) if sources else frozenset()
    grouped = _grouped_uses(code, scopes) if sources else {}
    copies, concatenated = operands.copies(
        code, lambda k: _function(code, k) not in _NOT_LISTS, deep,
        lambda k: _function(code, k) not in _NOT_COPIED)
    if concatenated * HEAVY_WALK > MAX_RANGE_WORK:
        raise QueryRefused(f"the query's list concatenations (+) copy their operands "
                           f"{_count(concatenated)} times in all, more than "
                           f"{MAX_RANGE_WORK // HEAVY_WALK:,}: each + copies the whole list "
                           "before it, in an expression the server evaluates without "
                           "checking its timeout")
    for i in sorted(sources):
        work = 1 if _measured(code, i) else sources[i]
        for bracket in scopes[i]:  # not repeated by the iteration over the list it is in
            work = work * walked.get(bracket, 1) // own.get((i, bracket), 1)
        total += work
        peak = max(peak, work)
        what = "range()" if i in ranges else "a list" if code[i].text == "[" \
            else f"{code[i].text} (a list the query made)"
        if work > MAX_RANGE and not (clauses[i] == "WITH" and _by_rows(code, scopes, i)):
            raise QueryRefused(f"{what} at {where(code[i])} is built or walked inside the "
                               f"iterations around it: {_count(work)} values in all, more than "
                               f"{MAX_RANGE:,}, which the server evaluates in one expression "
                               "without checking its timeout")
        if total > MAX_RANGE_WORK:
            raise QueryRefused(f"{what} at {where(code[i])} brings the values the query's "
                               f"ranges build and walk past {MAX_RANGE_WORK:,}: the server "
                               "evaluates an expression without checking its timeout")
        times = 0 if i in steady else max(copies[i], int(  # (a reduce()'s accumulator's
            i in copied or _heavy_walk(code, i, scopes, ranges)))  # by :func:`_check_reduce`)
        if times:
            extra = work * (HEAVY_WALK * times * _projected_width(code, scopes, i) - 1)
            work, total = work + extra, total + extra
            if total > MAX_RANGE_WORK:
                raise QueryRefused(f"{what} at {where(code[i])} is copied or walked by a "
                                   "call, a slice, a concatenation, a comprehension or a "
                                   f"projection ({times:,} times), at "
                                   f"about {HEAVY_WALK} times a value's walk: "
                                   f"{_count(total)} value walks in all, more than "
                                   f"{MAX_RANGE_WORK:,}, in expressions the server evaluates "
                                   "without checking its timeout")
        _check_per_row(code, i, what, work, min(grouped.get(i, rows[i]), rows[i]), i in ranges or (
            code[i].text == "[" and not _pattern_comprehension(code, i))
            or (i in ranged and _held(code, i, ranges)), clauses, scopes)
    return walked, peak, sources


def _projected_width(code: Sequence[Token], scopes: list[tuple[int, ...]], i: int) -> int:
    """The values each element holds of the list a comprehension makes over ``code[i]``
    (``[x IN range(...) | {a: x, b: x}]``: its projection's values, each map or list one
    more), else one: a call that walks or copies the list (``list.dedup``, a slice) hashes
    or copies every value of every element, and ``list.dedup([x IN range(1,1000000) |
    {a:x,b:x,c:x,d:x}])``, weighed as 1,000,000 values, held a 3 s server 9.6 s (the
    forty-fifth re-probe's F2)."""
    if not scopes[i] or code[scopes[i][-1]].text != "[" or code[i - 1].text.upper() != "IN":
        return 1
    start = scopes[i][-1]
    end = _bracket_end(code, scopes, start)
    bar = _projection_bar(code, start, end + 1)
    if bar is None or code[bar + 1].text not in ("{", "["):
        return 1  # ``| x * 2``: one value an element
    return 1 + sum(1 for k in range(bar + 1, end) if code[k].kind == "punct"
                   and code[k].text in ("{", "[", ","))  # each container, each item


#: Clauses after which a group's list is kept on the rows they make, not once a group.
_MULTIPLIERS = frozenset({"MATCH", "OPTIONAL", "UNWIND", "CALL", "LOAD", "FOREACH", "UNION"})


def _grouped_uses(code: Sequence[Token], scopes: list[tuple[int, ...]]) -> dict[int, int]:
    """The uses of a name a ``WITH`` bound to the ``collect()`` of its group (``WITH p,
    collect(m.title) AS ms``), in the projections after it and before any clause that makes
    rows again (:data:`_MULTIPLIERS`), by index: the rows each is kept on. The groups' lists
    hold the rows collected once in all, not once a row each (the forty-third re-probe's M1
    refused ``MATCH (p:Person) OPTIONAL MATCH (p)-[:ACTED_IN]->(m:Movie) WITH p,
    collect(m.title) AS ms RETURN p.name, ms`` as 1,000,000 values on each of 100,001 rows).
    A ``MATCH`` whose every pattern shares a variable bound before it (:func:`_products`'
    degree stays) expands each group by its own matches, counted as :data:`UNSIZED_LIST`
    rows a group, as one pattern is: ``WITH p, collect(m.title) AS directed MATCH
    (p)-[:ACTED_IN]->(m2) RETURN p.name, directed, collect(m2.title)`` was refused as 1,000
    values on each of 100,001 rows."""
    degree = _products(code, scopes)
    grouped: dict[str, int] = {}
    uses: dict[int, int] = {}
    clause = ""
    for i, tok in enumerate(code):
        word = _keyword(code, i)
        if not scopes[i] and word in _MULTIPLIERS and not (
                word == "MATCH" and i and _keyword(code, i - 1) == "OPTIONAL"):
            if word in ("MATCH", "OPTIONAL") and degree[_pattern_end(code, scopes, i)] \
                    == degree[i]:
                grouped = {name: on * UNSIZED_LIST for name, on in grouped.items()}
            else:
                grouped.clear()
        clause = word if not scopes[i] and word in _CLAUSES else clause
        if tok.kind in ("word", "quoted") and tok.text.strip("`") in grouped \
                and not (i and code[i - 1].text.upper() in (".", "AS")):
            uses[i] = grouped[tok.text.strip("`")]
        if word == "AS" and i + 1 < len(code) and code[i + 1].kind in ("word", "quoted"):
            start, _ = _named(code, scopes, i)
            name = code[i + 1].text.strip("`")
            if clause in ("WITH", "RETURN") and not scopes[i] \
                    and _whole_collect(code, scopes, start, i):  # RETURN's too (66c L1)
                grouped[name] = 1
            else:
                grouped.pop(name, None)
    return uses


def _pattern_end(code: Sequence[Token], scopes: list[tuple[int, ...]], at: int) -> int:
    """The index of the first clause word after the ``MATCH`` (or ``OPTIONAL``) at
    ``code[at]``, outside brackets (its ``WHERE`` too), where :func:`_products` has read its
    patterns; the last token when none follows."""
    for k in range(at + 1, len(code)):
        if not scopes[k] and _keyword(code, k) in _CLAUSES - {"MATCH"}:
            return k
    return len(code) - 1


#: What a walk of a list by :data:`_HEAVY` costs, in walks of a value: FalkorDB's
#: ``toJSON`` of a path takes about 2 us, ``list.sort`` sorts, ``tail`` and ``list.insert``
#: copy every element (a map's keys too), where a range's value is about
#: 0.1 us; a collected list walked 8 times so (5 ``toJSON``, 3 ``list.sort``) passed the
#: 10,000,000 values in all and held the server 57 s (the thirty-ninth re-probe's H1).
HEAVY_WALK = 10
_HEAVY = frozenset({"tojson", "sort", "sortnodes", "sortmaps", "sortmulti", "reverse",
                    # each clones the whole list (the fortieth re-probe's N3: six tail(l)
                    # of a collected list held the server 20 s past its 3 s timeout)
                    "tail", "insert", "remove", "dedup", "insertlistelements"})


def _heavy_walk(code: Sequence[Token], i: int, scopes: list[tuple[int, ...]],
                ranges: dict[int, tuple[int, int]]) -> bool:
    """Whether the list at ``code[i]`` (a name's or a list's) is walked by a call of
    :data:`_HEAVY` (``toJSON(l)``, ``list.sort(l)``, ``apoc.convert.toJson(l)``), at any
    depth of its argument (``toJSON([l])``), or, a name's list, copied or walked anyhow:
    every use of a named list but one measured (``size(l)``), indexed (``l[0]``), iterated
    or tested (``x IN l``: its body is weighed), unwound row by row or projected as it is.
    Calls were read by name alone, and a collected list of 4,000,000 maps copied six times
    by ``l[1..]``, ``l + []`` or ``[l][0]`` held the server 15 to 34 s past a 3 s timeout
    (the forty-first re-probe's P1, P2)."""
    if any(b >= 1 and code[b].text == "(" and code[b - 1].kind == "word"
           and code[b - 1].text.lower() in _HEAVY for b in scopes[i]):
        return True
    tok = code[i]
    if i in ranges or tok.kind not in ("word", "quoted") \
            or (i + 1 < len(code) and code[i + 1].text == "("):
        return False  # a range, a literal or a made list: its own cost is counted
    before = code[i - 1].text.upper() if i else ""
    after = code[i + 1].text if i + 1 < len(code) else ""
    if _measured(code, i):
        return False
    if before == "UNWIND":
        return False  # row by row: the server checks its timeout between rows
    if before in ("RETURN", "WITH", "DISTINCT", ",") and after.upper() in ("AS", ",", ""):
        return False  # projected as it is: kept with each row (:func:`_check_per_row`)
    if before == "IN":  # iterated (a comprehension's, a reduce()'s: its body is weighed,
        return False  # :func:`_check_bodies`) or tested (x IN l, any(x IN l ...))
    if after == "[":  # an element (l[0]) is read in place; a slice (l[1..]) copies
        return _slice(code, i + 1)
    return True


def _measured(code: Sequence[Token], i: int) -> bool:
    """Whether the name at ``code[i]`` is the whole argument of a call of :data:`_MEASURED`
    (``size(l)``): the server reads its length or one element, one value whatever the list
    holds (a collected list of 4,000,000 values measured is no walk of them)."""
    return 2 <= i < len(code) - 1 and code[i].kind in ("word", "quoted") \
        and code[i - 1].text == "(" and code[i + 1].text == ")" \
        and code[i - 2].text.lower() in _MEASURED and not (i >= 3 and code[i - 3].text == ".")


def _by_rows(code: Sequence[Token], scopes: list[tuple[int, ...]], i: int) -> bool:
    """Whether ``code[i]`` is a ``collect(`` outside any bracket (the caller asks it of a
    ``WITH``'s): the server builds it one row at a time and checks its timeout between rows,
    so its size (a literal ``LIMIT``'s, past :data:`MAX_RANGE`) is no expression's; what is
    done with the list it makes is, and so is a ``RETURN``'s, copied into the reply."""
    return not scopes[i] and code[i].text.lower() == "collect" \
        and i + 1 < len(code) and code[i + 1].text == "("


def _copied(code: Sequence[Token], scopes: list[tuple[int, ...]], walked: dict[int, int],
            ranged: frozenset[int]) -> frozenset[int]:
    """The uses of a held list (:func:`_ranged`) that copy the whole of it, each element
    once, as the slices :func:`_heavy_walk` counts do: one iterated by a comprehension
    (``[x IN l | x]``, ``[x IN l WHERE true]``) where the list's elements are wide
    (:func:`_wide_uses`) and no iteration is around the comprehension (inside one, the
    walks around it already multiply it); and every one projected as it is (``RETURN l AS
    a``, ``WITH l, 1 AS k``, ``WITH *``) when the query so projects held lists twice or more,
    or once under ``DISTINCT``: each projection copies the list. A collected list of
    1,000,000 six-key maps iterated so six times held a 3 s server 17 s; projected six times
    in one ``RETURN`` 15 s, through six ``WITH`` steps 12 s (the forty-second re-probe's Q1,
    Q2). One projection of it is the reply's or the next step's (:func:`_check_per_row`)."""
    wide = _wide_uses(code, scopes)
    out: set[int] = set()
    clause: dict[tuple[int, ...], int] = {}  # the projection open at each depth
    projected: list[int] = []
    distinct = False
    for i, tok in enumerate(code):
        word = tok.text.upper() if tok.kind == "word" else ""
        if word in _CLAUSES or word == "DISTINCT":
            clause[scopes[i]] = i
        if i not in ranged or not (tok.kind in ("word", "quoted") or _star(code, i)):
            continue
        before = code[i - 1].text.upper() if i else ""
        after = code[i + 1].text.upper() if i + 1 < len(code) else ""
        if before in ("RETURN", "WITH", "DISTINCT", ",") and after in ("AS", ",", "") \
                and scopes[i] in clause:
            projected.append(i)
            distinct = distinct or code[clause[scopes[i]]].text.upper() == "DISTINCT"
        elif i in wide and before == "IN" and i >= 3 and code[i - 3].text == "[" \
                and after in ("|", "WHERE", "]") and scopes[i] \
                and all(walked.get(b, 1) <= 1 for b in scopes[i][:-1]):
            out.add(i)
    if len(projected) > 1 or distinct:
        out.update(projected)
    return frozenset(out)


#: Calls whose list holds strings: an element unwound from one is one value, whatever the
#: call's argument (``UNWIND labels(n) AS l RETURN l, count(*)`` was refused as a grouping
#: by a wide key: the forty-fifth re-probe's O1).
_STRING_LISTS = frozenset({"labels", "keys", "split"})


def _wide_uses(code: Sequence[Token], scopes: list[tuple[int, ...]],
               keys: bool = False) -> frozenset[int]:
    """The uses of names bound to a value that may hold several values (:func:`_wide`: a
    map, a list, most calls' values), to a ``collect()`` of such values, or to such a name
    again (``WITH l AS m``, ``UNWIND l AS m``): copying one of its elements copies several
    values (``WITH {a: 1, ...} AS m ... WITH collect(m) AS l`` as ``collect({a: 1, ...})``).
    A call of :data:`_NOT_LISTS` gives one value (``type(r) AS rt ... ORDER BY rt`` was
    refused as sorted by a wide key: the fifty-seventh re-probe's L1, and the fifty-sixth's
    L3). With ``keys``, for a sort's keys, a name bound to a ``range()`` too: a list of
    numbers, each element unwound from it one value (67c N1)."""
    wide: set[str] = set()
    numbers: set[str] = set()  # names only ever bound to a range(): their elements numbers
    uses: set[int] = set()
    for i, tok in enumerate(code):
        if tok.kind in ("word", "quoted") and tok.text.strip("`") in wide \
                and not (i and code[i - 1].text.upper() in (".", "AS")):
            uses.add(i)
        if tok.kind == "word" and tok.text.upper() == "AS" and i + 1 < len(code) \
                and code[i + 1].kind in ("word", "quoted"):
            start, keyword = _named(code, scopes, i)
            if keyword == "UNWIND" and code[start].text == "[":
                start += 1  # UNWIND [1, 2] AS k: an element, not the list
            elif keyword == "UNWIND" and code[start].kind == "word" and start + 1 < i \
                    and code[start + 1].text == "(" and _function(code, start) in _REORDERING:
                start += 2  # UNWIND tail(r) AS k: an element of r
            strings = keyword == "UNWIND" and start + 1 < i and code[start + 1].text == "(" \
                and _function(code, start) in _STRING_LISTS and code[i - 1].text == ")" \
                and scopes[i - 2][len(scopes[start]):][:1] == (start + 1,)
            # never forgotten: a name rebound inside ``CALL { }``, or in the ``WITH`` that
            # reads it (``WITH 1 AS key, key AS kk``), is the outer one again past it (the
            # sixty-fourth re-probe's W1, W2: a map list's key sorted 314,000 rows)
            name = code[i + 1].text.strip("`")
            found = [k for k in range(start, i) if k in uses or (
                _wide(code, k) and _function(code, k) not in _NOT_LISTS)]
            ranged = [k for k in range(start, i) if k + 1 < i and code[k + 1].text == "("
                      and _function(code, k) == "range"]
            if keyword == "UNWIND":  # an element of a range (of a name bound to one): a number
                found = [k for k in found if code[k].text.strip("`") not in numbers]
            elif keys and ranged and all(code[k].text.strip("`") in numbers for k in found) \
                    and (name in numbers or name not in wide):
                numbers.add(name)  # a list of numbers: several values as a key (67c N1)
                found = ranged
            else:
                numbers.discard(name)
            if not strings and found:
                wide.add(name)
    return frozenset(uses)


def _wide(code: Sequence[Token], k: int) -> bool:
    """Whether ``code[k]`` starts a value that may hold several: a map or a list (``{``,
    ``[``), a call but of :data:`_NARROW_CALLS` (``collect(n.name)`` holds names, each one
    value; ``collect(properties(n))`` maps)."""
    tok = code[k]
    if tok.kind == "punct":  # not a subscript: ``r[0..10]`` (61c L2)
        return tok.text == "{" or (tok.text == "[" and not (k and (
            code[k - 1].text in (")", "]") or code[k - 1].kind == "quoted" or (
                code[k - 1].kind == "word"
                and code[k - 1].text.upper() not in _CLAUSES | _NOT_CALLS | {"UNION", "ALL"}))))
    return tok.kind in ("word", "quoted") and k + 1 < len(code) and code[k + 1].text == "(" \
        and _function(code, k) not in _NARROW_CALLS



def _slice(code: Sequence[Token], at: int) -> bool:
    """Whether the bracket at ``code[at]`` (after a list) holds a ``..`` of its own level."""
    depth = 0
    for k in range(at, len(code)):
        tok = code[k]
        if tok.kind == "punct" and tok.text in _OPEN:
            depth += 1
        elif tok.kind == "punct" and tok.text in _CLOSE:
            depth -= 1
            if depth == 0:
                return False
        elif depth == 1 and tok.text == "." and k + 1 < len(code) and code[k + 1].text == ".":
            return True
    return True


#: Aggregates: a list one of them makes is one a row (a group), not one a row it was built in.
_AGGREGATES = frozenset({"collect", "count", "sum", "avg", "min", "max", "stdev", "stdevp",
                         "percentilecont", "percentiledisc"})


def _star(code: Sequence[Token], i: int) -> bool:
    """Whether ``code[i]`` is the ``*`` of ``RETURN *`` or ``WITH *``."""
    return code[i].text == "*" and i > 0 and code[i - 1].text.upper() in (
        "RETURN", "WITH", "DISTINCT")


def _ranged(code: Sequence[Token], ranges: dict[int, tuple[int, int]], uses: set[int],
            start: int, end: int, sources: dict[int, int]) -> bool:
    """Whether ``code[start:end]`` (what an ``AS`` names) holds a list a range built, a name
    bound to one (``WITH r AS s``, ``m.x``, ``UNWIND l AS r``: the fortieth re-probe's N2),
    or an aggregate's (``collect(x)``, ``max(range(...))``: N4), or a list literal (``WITH
    [1, 1, ...] AS l``, 5,000 values kept on each of a product's rows: the forty-first
    re-probe's P3), kept with each row of what comes after it (:func:`_rows` counts an
    aggregating ``WITH`` as one row)."""
    return any(k in ranges or k in uses or (
        code[k].text == "[" and k in sources and not _pattern_comprehension(code, k)) or (
        code[k].kind == "word" and code[k].text.lower() in _AGGREGATES)
        for k in range(start, end))


def _held(code: Sequence[Token], i: int, ranges: dict[int, tuple[int, int]]) -> bool:
    """Whether ``code[i]`` is a name bound to a list a range built (``WITH range(1, 1000000)
    AS r``), used for that list and kept in the value around it: not measured (``size(r)``,
    ``head``, ``last``, ``isEmpty``) and not only tested (``x IN r``, ``any(x IN r ...)``)."""
    tok = code[i]
    if tok.text == "*":  # RETURN *
        return True
    if tok.kind not in ("word", "quoted") or i in ranges \
            or (i + 1 < len(code) and code[i + 1].text == "("):
        return False
    before = code[i - 1].text.upper() if i else ""
    if before == "(" and i >= 2 and code[i - 2].text.lower() in _MEASURED:
        return False
    if before == "IN":
        opener = code[i - 3].text if i >= 3 and code[i - 2].kind in ("word", "quoted") else ""
        if opener == "[":
            return True  # [x IN r | ...]: a comprehension keeps what it makes
        if opener == "(" and i >= 4:  # reduce() may keep it; any() and the others test it
            return code[i - 4].text.lower() not in _TESTS
        return False  # x IN r: a membership test
    return True


#: Calls that measure a list (a number, or one element), and that test one (a boolean).
_MEASURED = frozenset({"size", "head", "last", "isempty", "length"})
_TESTS = frozenset({"any", "all", "none", "single"})


#: The most evaluations of a token the iterated expressions of a query may come to
#: (:func:`_check_bodies`): about 2 s of a FalkorDB server's CPU at the 100 ns measured. Twice
#: :data:`MAX_RANGE_WORK`, so that an honest pairing of a graph's collected nodes (``[a IN ps
#: | [b IN ps WHERE b.born = a.born | b.name]]``, an unsized list counted as
#: :data:`UNSIZED_LIST` values) runs.
MAX_BODY_WORK = 2 * MAX_RANGE_WORK


def _check_bodies(code: Sequence[Token], scopes: list[tuple[int, ...]],
                  walked: dict[int, int]) -> None:
    """Refuse a query whose iterated expressions, each token weighed once an evaluation,
    pass :data:`MAX_BODY_WORK` together. :func:`_check_work` counts the values a list holds,
    not what is done with each: ``[x IN range(1, 1000000) | {a: x, b: x, ...}]`` (24 keys)
    and ``[x IN range(1, 1000000) | toString(x) + toString(x) + ...]`` (ten calls) built one
    value an iteration, within :data:`MAX_RANGE`, and kept a FalkorDB server busy about 8 s
    and 5 s a call past the client's timeout, so that later golds timed out (the
    thirty-third re-probe's H1 and H2, issue 58). Every token of a bracket's body (its
    ``WHERE`` and what follows ``|``, a quantifier's predicate) is evaluated once a value of
    the lists iterated around it, so the tokens times those iterations bound the work
    (:data:`MAX_BODY_WORK`) whatever the body calls; the list an
    ``IN`` iterates, and the name before it, are evaluated once a bracket."""
    once: set[tuple[int, int]] = set()  # (bracket, token): a span at most 12 brackets deep
    for i, tok in enumerate(code):
        if tok.kind == "word" and tok.text.upper() == "IN" and scopes[i] \
                and walked.get(scopes[i][-1], 1) > 1:
            once.update((scopes[i][-1], k) for k in range(i - 1, _iterated_end(code, scopes, i)))
    total = 0
    for k in range(len(code)):
        times = 1
        for bracket in scopes[k]:
            if walked.get(bracket, 1) > 1 and (bracket, k) not in once:
                times *= walked[bracket]
        if times == 1:
            continue
        total += times * _weight(code, k)
        if total > MAX_BODY_WORK:
            raise QueryRefused(f"the expression at {where(code[k])} is evaluated "
                               f"{_count(times)} times by the iterations around it, and the "
                               f"query's iterated expressions come to more than "
                               f"{MAX_BODY_WORK:,} evaluations of a token: the server "
                               "evaluates an expression without checking its timeout")


#: What a call that builds a value (a string, a map, a list: not a number's or a truth's,
#: :data:`_NARROW_CALLS`) costs in a body, in evaluations of a token: each builds its value
#: anew, character by character (``[x IN range(1,1000000) | toLower(toUpper(...('<99
#: characters>')))]``, six calls, held a 3 s server 33 s; ``toUpper('<90 characters>')``
#: 5 s; ``randomUUID() + randomUUID()`` 5 s: the forty-fifth re-probe's F1).
BUILDING_CALL = 10
#: The characters of a string literal that cost one evaluation of a token in a body.
CHARACTERS_A_TOKEN = 10


def _weight(code: Sequence[Token], k: int) -> int:
    """What evaluating ``code[k]`` once costs, in evaluations of a token: a call that builds
    a value :data:`BUILDING_CALL`, any other token one per :data:`CHARACTERS_A_TOKEN` of its
    characters (a string literal, a name, a map's key) and one."""
    tok = code[k]
    if tok.kind in ("word", "quoted") and k + 1 < len(code) and code[k + 1].text == "(" \
            and _function(code, k) not in _NARROW_CALLS:
        return BUILDING_CALL
    return 1 + len(tok.text) // CHARACTERS_A_TOKEN  # a map's key too (``toJSON({<10,000
    # letters>: x})`` over 1,000,000 values held a 3 s server 66 s: the forty-fifth F3)


#: How many times the calls that grow a string or list (``replace()`` with a longer
#: replacement, ``apoc.text.repeat``...) may multiply a value in one query, all of them
#: multiplied together: nested, one after another in ``WITH`` steps, or beside one another
#: (errs high). Ten nested ``replace()`` calls that each made a string ten times longer
#: aborted a FalkorDB limited to 4 GB (the third re-probe); a string of a kilobyte grown
#: 10,000-fold is 10 MB.
MAX_GROWTH = 10_000
#: Functions that replace what matches their second argument with their third: the
#: replacement may be placed once a character when what is matched may be empty (a regular
#: expression, or a search string the guard cannot read).
_REPLACING = {"replace": False, "string.replaceregex": True, "apoc.text.replace": True,
              "apoc.text.regreplace": True}
#: Functions whose second argument is a count: the value made repeated (``repeat``, ``fill``)
#: or padded to that length (``lpad``, ``rpad``), which must be an integer literal.
_COUNTED = {"apoc.text.repeat": True, "apoc.coll.fill": True, "apoc.text.lpad": False,
            "apoc.text.rpad": False}
#: Functions that join a list's elements with a delimiter (the index of the delimiter
#: argument): the delimiter is added once an element, so a list of single characters grows
#: by the delimiter's length and one (``string.join(split(s, ''), 'xx')`` triples ``s``).
_JOINING = {"string.join": 1, "apoc.text.join": 1}
#: Functions that encode a value as text, by how much they may grow it: ``toJSON`` of a
#: list of single characters writes ``"a",`` for each (quotes, a comma, a space; an escaped
#: character six): ten ``WITH toJSON(split(s, '')) AS s`` steps aborted a 4 GB server.
_ENCODING = {"tojson": 6}
#: Functions whose result is exponential in their argument's size, never sent.
_EXPONENTIAL = frozenset({"apoc.coll.combinations", "apoc.coll.powerset"})


def _function(code: Sequence[Token], i: int) -> str:
    """The dotted, lower-cased name of the function called at ``code[i]``, backquoted parts
    read as the names they stand for, as the server reads them (the guard refuses them before
    any bound is counted; this reading keeps the bounds right without that refusal)."""
    name, k = code[i].text.strip("`").lower(), i
    while k >= 2 and code[k - 1].text == "." and code[k - 2].kind in ("word", "quoted"):
        name, k = f"{code[k - 2].text.strip('`').lower()}.{name}", k - 2
    return name


def _arguments(code: Sequence[Token], scopes: list[tuple[int, ...]],
               opened: int) -> list[tuple[int, int]]:
    """Where each argument of the call whose ``(`` is ``code[opened]`` starts and ends."""
    inside = (*scopes[opened], opened)
    out, start = [], opened + 1
    k = start
    while k < len(code) and scopes[k][: len(inside)] == inside:
        if code[k].text == "," and scopes[k] == inside:
            out.append((start, k))
            start = k + 1
        k += 1
    if k > start:
        out.append((start, k))
    return out


def _string_length(code: Sequence[Token], span: tuple[int, int], *,
                   least: bool = False) -> int | None:
    """The length of the string literal that is the whole of ``code[span]``: the most
    characters a server may keep of it (:func:`_kept_length`), or with ``least`` the fewest
    (:func:`_decoded_length`, for what a replacement divides by); None if that is not one
    string literal."""
    start, end = span
    if end - start != 1 or code[start].kind != "string":
        return None
    return _decoded_length(code[start]) if least else _kept_length(code[start])


def _kept_length(tok: Token) -> int:
    """The most characters a server may keep of a string literal, which every bound weighs:
    FalkorDB (4.16) decodes only the escapes of :data:`_ONE_CHARACTER` and keeps any other
    backslash with what follows it, so ``'\\U00000000'`` is ten characters there and one to
    Neo4j (the twenty-eighth re-probe's H1: 300 of them were a 300-character regular
    expression subject to the guard and 3,000 to the server, 5.5 s on a 3 s server). No
    server keeps more than that: Neo4j decodes these and ``\\u``/``\\U`` too."""
    return len(_ONE_CHARACTER.sub("x", tok.text[1:-1]))


def _decoded_length(tok: Token) -> int:
    """The fewest characters a string literal may stand for: every escape one (Neo4j decodes
    ``\\u0041`` to one); only a divisor may be read so, where fewer errs high."""
    return len(_ESCAPE.sub("x", tok.text[1:-1]))


_ESCAPE = re.compile(r"\\(?:u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|.)", re.DOTALL)
#: The string escapes FalkorDB 4.16 decodes to one character (the twenty-eighth re-probe's
#: esctable: every other backslash it keeps, with the character after it).
_ONE_CHARACTER = re.compile(r"\\[abfnrtv\"'\\?]")
#: The longest string literal a query sent to a server may hold: a literal is copied once a
#: row or an iteration, and FalkorDB checks no cap inside an expression or an aggregation
#: (``collect()`` of a 10 KB literal over five matched nodes' product aborted a 4 GB
#: server, the fourth re-probe).
MAX_LITERAL_CHARS = 1_000
#: The most characters the string literals of a query, grown by its growing calls, may
#: come to when an expression is evaluated as many times as its largest list allows.
MAX_BYTES = 100_000_000


#: The most rows a reply holds: the ``RESULTSET_SIZE`` docs/cypher.md requires of a FalkorDB
#: server (one past the default ``max_rows``). The server builds the whole reply before it
#: sends a byte, so what a row holds counts once a row (the seventh re-probe: a row of 10 MB,
#: a literal grown 10,000-fold, over a product of three node sets aborted a 4 GB server).
REPLY_ROWS = 100_001


def _check_bytes(code: Sequence[Token], scopes: list[tuple[int, ...]], growth: dict[int, int],
                 repeats: tuple[dict[int, int], int], rows: int) -> None:
    """Refuse a string literal past :data:`MAX_LITERAL_CHARS`, and literals that, grown by
    every growing call of the query and evaluated as many times as its largest list has
    values (``repeats``: the lists walked by bracket, and that largest list), once a row of
    the ``rows`` (:func:`_rows`, at most :data:`REPLY_ROWS`), pass :data:`MAX_BYTES` (errs
    high: the longest literal, every growth, the largest list, the most rows). A literal that
    is only compared (:func:`_compared`) is built once an evaluation of its comparison, as
    often as the iterations around it repeat it: the largest list elsewhere does not copy it
    (the twenty-eighth re-probe's M1: ``MATCH (m) OPTIONAL MATCH (m)<--(p) WHERE m.title
    STARTS WITH 'The' RETURN collect(p.name)`` was refused, ``'The'`` counted as built once
    a collected name a row, 100,001,000,000 times)."""
    walked, evaluations = repeats
    compared = _compared(code, scopes) | _pattern_filters(code, scopes)
    longest, at, at_times, chars, weight = 1, None, 1, 0, 0
    for k, tok in enumerate(code):
        if tok.kind == "string":
            length = _kept_length(tok)
            times = math.prod(walked.get(b, 1) for b in scopes[k]) \
                if k in compared else max(1, evaluations)
            chars, weight = chars + length, weight + length * times
            if length > longest:  # a query of 1-character literals only is not checked
                longest, at, at_times = length, tok, times
    if at is None:
        return
    if longest > MAX_LITERAL_CHARS:
        raise QueryRefused(f"the string at {where(at)} has {longest:,} characters, more than "
                           f"{MAX_LITERAL_CHARS:,}: a literal is copied once a row or an "
                           "iteration, which the server does not bound inside an expression")
    grown = math.prod(growth.values())
    if weight * grown * max(1, rows) > MAX_BYTES:  # all the literals: 60 of 999 added in a row
        others = f", {chars:,} with the query's others" if chars > longest else ""
        raise QueryRefused(f"the string at {where(at)} ({longest:,} characters{others}, "
                           f"grown up to {grown:,}-fold) may be built "
                           f"{_count(at_times * max(1, rows))} times ({rows:,} rows): more "
                           f"than {MAX_BYTES:,} characters, which the server builds before any "
                           "timeout or memory cap")


def _pattern_filters(code: Sequence[Token], scopes: list[tuple[int, ...]]) -> frozenset[int]:
    """The string literals that are a value of a ``MATCH`` pattern's property map (``(a:Person
    {name: 'Keanu Reeves'})``): a filter the server compares each candidate with, as a
    ``WHERE``'s literal, not a value it builds once a row; counted as built once a row of a
    variable-length match, it refused ``MATCH p=(a:Person {name: 'Keanu Reeves'})-[*1..2]-(b)
    RETURN nodes(p)`` (the forty-sixth re-probe's C2)."""
    out: set[int] = set()
    for k, tok in enumerate(code):
        if tok.kind != "string" or len(scopes[k]) < 2 or code[k - 1].text != ":":
            continue
        brace, element = scopes[k][-1], scopes[k][-2]
        if code[brace].text == "{" and code[element].text in ("(", "[") \
                and _query_level(code, scopes, element):
            out.add(k)
    if not out:  # the clauses read only then: one pass of the query less for most texts
        return frozenset()
    clauses = _clauses(code)
    return frozenset(k for k in out if clauses[k] == "MATCH")


def _compared(code: Sequence[Token], scopes: list[tuple[int, ...]]) -> frozenset[int]:
    """The string literals (by index) only compared, each value read and dropped, never
    kept in what the query builds: the whole right operand of a comparison (``STARTS WITH``,
    ``ENDS WITH``, ``CONTAINS``, ``<>``, ``<``, ``>``, ``<=``, ``>=``, ``=~``, or ``=`` after a
    property: after a bare name ``=`` may bind, ``reduce(s = 'x', ...)``), the whole second
    argument of a call of :data:`_READ_SECOND` (a pattern, a delimiter split at), and the
    elements of a list of literals a property is tested to be ``IN``. Fails closed: anything
    after it but the end of the operand (``n.a = 'x' + s``) makes it a literal like any
    other. One pass (a walk from each literal over its call or list would be quadratic in a
    list of many literals)."""
    out: set[int] = set()
    commas: Counter[int] = Counter()  # by bracket, the commas read at its own level so far
    lists: dict[int, list[int]] = {}  # a [ after `x.p IN`: its literals while it holds no other
    for k, tok in enumerate(code):
        opened = scopes[k][-1] if scopes[k] else -1
        if tok.text == "," and opened >= 0:
            commas[opened] += 1
        if opened in lists and tok.kind != "string" and tok.text != ",":
            del lists[opened]
        if tok.text == "[" and k >= 3 and code[k - 3].text == "." \
                and code[k - 1].kind == "word" and code[k - 1].text.upper() == "IN":
            lists[k] = []
        if tok.kind != "string":
            if tok.text == "]" and k and (held := lists.pop(_opening(scopes, k), None)) \
                    and _ends_operand(code, k):
                out.update(held)
            continue
        if opened in lists:
            lists[opened].append(k)
        if not _ends_operand(code, k):
            continue
        before = [""] * max(0, 3 - k) + [t.text.upper() for t in code[max(0, k - 3):k]]
        if before[2] in ("<", ">", "CONTAINS") \
                or before[1:] in (["<", "="], [">", "="], ["=", "~"]) \
                or (before[1] in ("STARTS", "ENDS") and before[2] == "WITH") \
                or (before[0] == "." and before[2] == "=") \
                or (before[2] == "," and opened > 0 and code[opened].text == "("
                    and commas[opened] == 1 and _function(code, opened - 1) in _READ_SECOND):
            out.add(k)
    return frozenset(out)


def _opening(scopes: list[tuple[int, ...]], close: int) -> int:
    """The bracket the closing bracket ``code[close]`` closes (the last open before it)."""
    return scopes[close - 1][-1] if scopes[close - 1] else -1


def _ends_operand(code: Sequence[Token], k: int) -> bool:
    """Whether what follows ``code[k]`` ends the operand it stands in."""
    after = code[k + 1].text.upper() if k + 1 < len(code) else ")"
    return after in (")", "]", "}", ",") or after in _OPERAND_ENDS


#: Functions that take a regular expression as their second argument and match it against
#: their first (FalkorDB's, and APOC's for Neo4j, whose Java engine backtracks too): the
#: pattern is compiled and matched, not copied into the value made (:mod:`.regexes` checks
#: what matching it costs).
REGEX_CALLS = frozenset({"string.matchregex", "string.replaceregex", "apoc.text.regexgroups",
                         "apoc.text.regreplace", "apoc.text.replace", "apoc.text.split"})
#: Functions whose second argument is read, not kept in what they make: the pattern of a
#: regular expression (:data:`REGEX_CALLS`), what ``split()`` splits at.
_READ_SECOND = REGEX_CALLS | {"split"}
#: Words that end an operand: a literal followed by one is the whole operand before it.
_OPERAND_ENDS = frozenset({"AND", "OR", "XOR", "RETURN", "WITH", "WHERE", "ORDER", "SKIP",
                           "LIMIT", "UNION", "MATCH", "OPTIONAL", "UNWIND", "CALL", "THEN",
                           "ELSE", "END", "AS"})


def _check_growth(code: Sequence[Token], scopes: list[tuple[int, ...]]) -> dict[int, int]:
    """Refuse a growing call whose growth the guard cannot read (a replacement or count that
    is not a literal), a count past :data:`MAX_RANGE`, a function of :data:`_EXPONENTIAL`,
    and growing calls that multiply past :data:`MAX_GROWTH` in all. Each growing call's
    factor by the index of its ``(``."""
    factors: dict[int, int] = {}
    total = 1
    for i, tok in enumerate(code):
        if tok.kind not in ("word", "quoted") or i + 1 >= len(code) or code[i + 1].text != "(" \
                or (i + 2 < len(code) and code[i + 2].kind == "word"
                    and code[i + 2].text == "."):
            continue
        name = _function(code, i)
        if name in _EXPONENTIAL:
            raise QueryRefused(f"{name}() at {where(tok)} makes a list exponential in its "
                               "argument's size, which the server builds before any timeout")
        args = _arguments(code, scopes, i + 1)
        factor = 1
        if name in _REPLACING and len(args) >= 3:
            replacement = _string_length(code, args[2])
            if replacement is None:
                raise QueryRefused(f"{name}() at {where(tok)} has a replacement that is not a "
                                   "string literal: the guard cannot bound how much it grows "
                                   "the string, which the server builds before any timeout")
            matched = None if _REPLACING[name] else _string_length(code, args[1], least=True)
            factor = replacement + 1 if not matched else max(1, -(-replacement // matched))
        elif name in _JOINING and len(args) > _JOINING[name]:
            delimiter = _string_length(code, args[_JOINING[name]])
            if delimiter is None:
                raise QueryRefused(f"{name}() at {where(tok)} has a delimiter that is not a "
                                   "string literal: the guard cannot bound how much it grows "
                                   "the string, which the server builds before any timeout")
            factor = delimiter + 1
        elif name in _ENCODING:
            factor = _ENCODING[name]
        elif name in _COUNTED and len(args) >= 2:
            count = _literal(code, args[1][0])
            if count is None or count[1] != args[1][1] or count[0] > MAX_RANGE:
                raise QueryRefused(f"{name}() at {where(tok)} has a count that is not an "
                                   f"integer literal of at most {MAX_RANGE:,}: the server "
                                   "builds the whole value before any timeout")
            factor = max(1, count[0]) if _COUNTED[name] else 1
        if factor > 1:
            factors[i + 1] = factor
            total *= factor
            if total > MAX_GROWTH:
                raise QueryRefused(f"{name}() at {where(tok)} grows a value up to "
                                   f"{factor:,}-fold: with the query's other growing calls, "
                                   f"{_count(total)}-fold, more than {MAX_GROWTH:,}, which the "
                                   "server builds before any timeout or memory cap")
    return factors


def _arg_of_size(code: Sequence[Token], i: int) -> bool:
    """Whether ``code[i]`` is the whole argument of ``size()`` or ``length()``."""
    return 2 <= i < len(code) - 1 and code[i - 1].text == "(" and code[i + 1].text == ")" \
        and code[i - 2].text.lower() in ("size", "length")


_CASE_PARTS = frozenset({"END", "WHEN", "THEN", "ELSE"})


def _case_word(code: Sequence[Token], i: int) -> str:
    tok = code[i]
    keyword = tok.kind == "word" and not (i and code[i - 1].text in (".", ":"))
    return tok.text.upper() if keyword else ""


class _Weights:
    """How many copies of a value a use of it at ``code[i]`` makes, counted from the start
    ``lo`` of the expression it is part of: a growing call around it (:func:`_check_growth`)
    multiplies it, and so does the body of an iteration around it (``[i IN range(1, 3) |
    s]`` holds ``s`` three times; an iteration over a list of unknown size, at least twice).
    Brackets opened before ``lo`` do not count: what repeats the whole expression is judged
    where that repetition is (a ``reduce()``'s own steps, say)."""

    def __init__(self, code: Sequence[Token], scopes: list[tuple[int, ...]],
                 walked: dict[int, int], growth: dict[int, int]) -> None:
        self.scopes, self.walked, self.growth = scopes, walked, growth
        self.bars: dict[int, int] = {}  # a bracket -> its iteration's |, when it has one
        #: the brackets of ``collect(``: a value collected is copied once a row, and the rows
        #: an UNWIND, a MATCH or a CALL made are at least two (``UNWIND [1, 2] AS k WITH
        #: string.join(collect(s), '') AS s``, 30 times over, aborted a 4 GB server)
        self.aggregates = {k + 1 for k in range(len(code) - 1)
                           if code[k].text.lower() == "collect" and code[k + 1].text == "("}
        for k, tok in enumerate(code):
            if tok.text == "|" and scopes[k] and scopes[k][-1] not in self.bars:
                self.bars[scopes[k][-1]] = k

    def __call__(self, i: int, lo: int) -> int:
        weight = 1
        for bracket in self.scopes[i]:
            if bracket < lo:
                continue
            weight *= self.growth.get(bracket, 1) * (2 if bracket in self.aggregates else 1)
            bar = self.bars.get(bracket)
            if bar is not None and i > bar:
                weight *= max(self.walked.get(bracket, 2), 1)
        return weight

    def close(self, code: Sequence[Token], bracket: int) -> int:
        """The index of the token that closes ``bracket``."""
        k = bracket + 1
        while k < len(code) and bracket in self.scopes[k]:
            k += 1
        return k


#: Operators and words whose operands are numbers or booleans: a value beside one is
#: compared or computed with, not copied into the result (``c * c``, ``x > m``).
_NUMERIC_OPERATORS = frozenset({"*", "/", "%", "^", "-", "=", "<>", "<", ">", "<=", ">=",
                                "=~"})
_BOOLEAN_WORDS = frozenset({"IS", "STARTS", "ENDS", "CONTAINS", "AND", "OR", "XOR", "NOT",
                            "IN"})


def _numeric_side(tok: Token | None, after: bool) -> bool:
    """Whether ``tok``, beside a value (``after`` it or before it), computes or compares with
    it (``IN`` only after it: ``s IN l`` tests ``s``; ``x IN s`` iterates ``s``)."""
    return tok is not None and (
        (tok.kind == "punct" and tok.text in _NUMERIC_OPERATORS)
        or (tok.kind == "word" and tok.text.upper() in _BOOLEAN_WORDS
            and (after or tok.text.upper() != "IN")))


def _is_use(code: Sequence[Token], i: int, name: str) -> bool:
    """Whether ``code[i]`` is ``name`` used as a value that may be copied into the result:
    not a property or function of that name, not the name being bound (``AS name``, ``[name
    IN``, ``reduce(name =``), not measured (``size(name)``), not compared or computed with
    (``name.price * 2``, ``name > 0``)."""
    tok = code[i]
    if tok.kind not in ("word", "quoted") or tok.text.strip("`") != name:
        return False
    before = code[i - 1] if i else None
    end = i + 1  # past name.key.key
    while end + 1 < len(code) and code[end].text == "." and code[end + 1].kind in (
            "word", "quoted"):
        end += 2
    after = code[end] if end < len(code) else None
    if (before is not None and before.text in (".", "AS")) \
            or (after is not None and after.text == "(") or _arg_of_size(code, i):
        return False
    if after is not None and after.text.upper() == "IN" and before is not None \
            and before.text in ("[", "(", ","):
        return False  # [name IN ...: a variable bound
    if after is not None and after.text == "=" and i >= 2 and before is not None \
            and before.text == "(" and code[i - 2].text.lower() == "reduce":
        return False  # reduce(name = ...: the accumulator bound
    initial = before is not None and before.text == "=" and i >= 4 \
        and code[i - 3].text == "(" and code[i - 4].text.lower() == "reduce"
    return initial or not (_numeric_side(before, False) or _numeric_side(after, True))


def _uses(code: Sequence[Token], i: int, end: int, name: str, weigh: _Weights,
          lo: int | None = None) -> tuple[int, int]:
    """How many copies of ``name`` the value of ``code[i:end]`` holds (:func:`_uses_of`),
    and where the expression ends."""
    counts, i = _uses_of(code, i, end, frozenset((name,)), weigh, lo)
    return counts[name], i


def _uses_of(code: Sequence[Token], i: int, end: int, names: frozenset[str],
             weigh: _Weights, lo: int | None = None) -> tuple[Counter[str], int]:
    """How many copies of each of ``names`` the value of ``code[i:end]`` holds, as ``weigh``
    counts a use (:func:`_is_use`) from ``lo`` (default ``i``): a list iterated by a
    comprehension or a ``reduce()`` counts as its body copies each element (``[y IN [s] | y +
    y]`` holds ``s`` twice), a list only tested (``x IN s``, ``any(x IN s ...)``) not at all; a
    ``CASE`` counts as its branch that holds most. Up to ``end`` or a ``CASE`` part this
    expression is in; and where that is. Every name in one walk: a walk per name made a step
    that uses thousands of names quadratic (the thirteenth re-probe's F4)."""
    lo = i if lo is None else lo
    counts: Counter[str] = Counter()
    while i < end:
        word = _case_word(code, i)
        if word in _CASE_PARTS:
            return counts, i
        if word == "CASE":
            best: Counter[str] = Counter()
            value, i = False, i + 1  # the part before the first WHEN is compared
            while i < end:
                used, i = _uses_of(code, i, end, names, weigh, lo)
                if value:
                    best |= used
                word = _case_word(code, i) if i < end else "END"
                value, i = word in ("THEN", "ELSE"), i + 1
                if word == "END":
                    break
            counts.update(best)
            continue
        if word == "IN":
            src_end = min(_iterated_end(code, weigh.scopes, i), end)
            per_element = _element_uses(code, i, weigh)
            if per_element:
                inner = _uses_of(code, i + 1, src_end, names, weigh, lo)[0]
                counts.update({k: v * per_element for k, v in inner.items()})
            i = max(src_end, i + 1)
            continue
        tok = code[i]
        if tok.kind in ("word", "quoted") and (name := tok.text.strip("`")) in names \
                and _is_use(code, i, name):
            counts[name] += weigh(i, lo)
        i += 1
    return counts, i


def _element_uses(code: Sequence[Token], i: int, weigh: _Weights) -> int:
    """How many copies of each element of the list the ``IN`` at ``code[i]`` iterates end in
    the value around it: its body's uses of the variable (at least one for a comprehension,
    ``[x IN s WHERE ...]`` copies what it keeps); none for a test (``x IN s``, ``any()``) or
    a ``reduce()`` that only adds numbers."""
    scopes = weigh.scopes
    if i < 2 or not scopes[i] or code[i - 1].kind not in ("word", "quoted"):
        return 0
    bracket = scopes[i][-1]
    opener = code[bracket].text
    is_reduce = opener == "(" and bracket >= 1 and code[bracket - 1].text.lower() == "reduce"
    if not (opener == "[" and code[i - 2].text == "[") and not is_reduce:
        return 0
    bar = weigh.bars.get(bracket)
    if bar is None or bar < i:
        return 1
    close = weigh.close(code, bracket)
    if is_reduce and _numeric(code, bracket + 3) and _arithmetic(
            code, bar + 1, close, _numbers(code, scopes, bracket, bar)):
        return 0
    used = _uses(code, bar + 1, close, code[i - 1].text.strip("`"), weigh)[0]
    return used if is_reduce else max(1, used)


#: The work a ``reduce()`` that is not a sum of numbers may take: the square of its steps
#: (times the iterations around it, and the length of the longest string it adds, in units
#: of 16 characters), as the server copies the accumulator at each step (``reduce(s = [], i
#: IN range(1, 100000) | s + [i])`` took FalkorDB 48 s; 10,000 steps 0.55 s).
MAX_REDUCE_WORK = 10 * MAX_RANGE_WORK
#: How many copies of one value a ``reduce()``'s steps or a query's ``WITH`` steps may make
#: of it (``s + s`` over 6 steps is 64 copies; 30 steps aborted a 4 GB server).
MAX_COPIES = 64
#: Functions of numbers that return a number (a ``reduce()`` body made of them, numbers,
#: names and arithmetic is a sum, not a copy).
_NUMERIC_FUNCTIONS = frozenset({
    "abs", "ceil", "floor", "round", "sign", "sqrt", "exp", "log", "log10", "e", "pi",
    "tointeger", "tofloat", "size", "length", "sin", "cos", "tan", "asin", "acos", "atan",
    "atan2", "degrees", "radians", "rand", "timestamp", "id"})
_ARITHMETIC = frozenset({"+", "-", "*", "/", "%", "^", "(", ")", ".", ",", "=", "<>", "<",
                         ">", "<=", ">="})
_ARITHMETIC_WORDS = frozenset({"CASE", "WHEN", "THEN", "ELSE", "END", "AND", "OR", "XOR",
                               "NOT", "IS", "NULL", "TRUE", "FALSE"})
#: Calls whose value is a number or a truth, whatever lists their arguments hold: what is in
#: them is no part of an accumulator (:func:`_accumulated`).
_SCALAR_CALLS = _NUMERIC_FUNCTIONS | {"any", "all", "none", "single", "exists", "isempty"}
#: Calls whose value is one value, or a list of numbers (``range()``: a name it binds, or
#: unwinds, holds numbers).
_NARROW_CALLS = _NUMERIC_FUNCTIONS | _AGGREGATES | _SCALAR_CALLS | {"range"}
#: Calls that read their arguments in place, or iterate them: any other call of a list the
#: query made copies it, as any use of a named list but these does (:func:`_heavy_walk`).
_NOT_COPIED = _MEASURED | _AGGREGATES | _TESTS | {
    "range", "reduce", "exists", "shortestpath", "allshortestpaths"}
#: Calls whose value is a number or a truth, whatever their arguments hold.
_NOT_LISTS_OR_TEXT = (_SCALAR_CALLS | _AGGREGATES) - {"collect", "min", "max"}
#: Calls whose value is never a list (a number, a truth, a string): a slice or a ``+`` of it
#: copies no list (:func:`.operands.copies`).
_NOT_LISTS = _NOT_LISTS_OR_TEXT | {
    "tostring", "tolower", "toupper", "trim", "ltrim", "rtrim", "substring", "left", "right",
    "type", "startnode", "endnode", "tointegerornull", "tofloatornull", "tostringornull",
    "toboolean"}


def _numeric(code: Sequence[Token], i: int) -> bool:
    """Whether a number literal alone starts at ``code[i]`` (an accumulator's start)."""
    if i < len(code) and code[i].text in "+-" and code[i].kind == "punct":
        i += 1
    return i + 1 < len(code) and code[i].kind == "number" and code[i + 1].text == ","


def _arithmetic(code: Sequence[Token], lo: int, hi: int, numbers: frozenset[str]) -> bool:
    """Whether ``code[lo:hi]`` holds only numbers, the names of ``numbers`` (:func:`_numbers`),
    arithmetic, comparisons and functions of :data:`_NUMERIC_FUNCTIONS`: no string, list or
    map (``CASE WHEN x = 1 THEN [x] ELSE s + [x] END`` turns a numeric start into a list), no
    other name: FalkorDB adds a string or a list to a number (``0 + 'ab'`` is ``'0ab'``), so
    ``reduce(s = 0, i IN range(1, 10000) | s + t)``, ``t`` a 990-character string bound
    before, copied a growing string at each step, quadratic, in one expression (the
    twenty-sixth re-probe's H2), and a property (``x.price``) may be a map's string."""
    for k in range(lo, hi):
        tok = code[k]
        if tok.kind == "number" or (tok.kind == "punct" and tok.text in _ARITHMETIC
                                    and tok.text != "."):
            continue
        if tok.kind in ("word", "quoted"):
            called = k + 1 < hi and code[k + 1].text == "("
            if tok.text.upper() in _ARITHMETIC_WORDS and not called:
                continue
            if called and tok.text.lower() in _NUMERIC_FUNCTIONS \
                    and not (k and code[k - 1].text == "."):
                continue
            if not called and tok.text.strip("`") in numbers \
                    and not (k + 1 < hi and code[k + 1].text == "."):
                continue
        return False
    return True


def _numbers(code: Sequence[Token], scopes: list[tuple[int, ...]], opened: int,
             bar: int) -> frozenset[str]:
    """The names that hold a number in the body of the ``reduce(`` whose ``(`` is
    ``code[opened]`` and whose ``|`` is ``code[bar]``: its accumulator (its body is checked
    to be a sum), and its variable when the list it walks is a ``range()`` or a list of
    number literals."""
    names = {code[opened + 1].text.strip("`")}
    for k in range(opened + 2, bar):
        if code[k].kind == "word" and code[k].text.upper() == "IN" \
                and scopes[k] and scopes[k][-1] == opened:
            if all(t.kind == "number" or (t.kind == "punct" and t.text in "()[],+-")
                   or (j == k + 1 and t.text.lower() == "range")
                   for j, t in enumerate(code[k + 1:bar], k + 1)):
                names.add(code[k - 1].text.strip("`"))
            break
    return frozenset(names)


def _check_reduce(code: Sequence[Token], scopes: list[tuple[int, ...]],
                  walked: dict[int, int], weigh: _Weights, sources: dict[int, int]) -> None:
    """Refuse ``reduce(acc = ..., x IN ... | ...)`` whose accumulator is part of its next
    value twice (``s + s``, ``[y IN [s] | y + y]``, ``s`` in an iteration's body) or grown
    by a call (``replace(s, 'a', 'aa')``) over steps that make more than :data:`MAX_COPIES`
    of it (any number of steps over a list of unknown size); or, unless it sums numbers,
    copied at each of more steps than :data:`MAX_REDUCE_WORK` bounds. FalkorDB checks
    neither against its timeout or memory cap inside one expression."""
    for i, tok in enumerate(code):
        if tok.kind != "word" or tok.text.lower() != "reduce" or i + 3 >= len(code) \
                or code[i + 1].text != "(" or code[i + 3].text != "=" \
                or (i and code[i - 1].text == "."):
            continue
        close = weigh.close(code, i + 1)
        bar = weigh.bars.get(i + 1)
        name = code[i + 2].text.strip("`")
        copies = _uses(code, bar + 1, close, name, weigh)[0] if bar is not None else 0
        steps = walked.get(i + 1)
        if copies > 1 and (steps is None or copies ** min(steps, 64) > MAX_COPIES):
            raise QueryRefused(f"reduce() at {where(tok)} adds its accumulator {name} to "
                               f"itself or grows it, {copies:,}-fold at each step: its value "
                               "multiplies at each step, which the server checks against "
                               "neither its timeout nor its memory cap")
        if bar is None:
            continue
        numbers = _numbers(code, scopes, i + 1, bar)
        if _numeric(code, i + 4) and _arithmetic(code, bar + 1, close, numbers):
            continue
        power = 1 if _selects(code, scopes, i, bar, close) else 2
        work = (steps or 1) ** power * _added(code, scopes, sources, (i, bar, close), numbers) \
            * _wrapped(code, scopes, bar, close, name)
        for bracket in scopes[i]:
            work *= walked.get(bracket, 1)
        if work > MAX_REDUCE_WORK:
            raise QueryRefused(f"reduce() at {where(tok)} copies its accumulator {name} at "
                               f"each of {steps or 1:,} steps ({_count(work)} in all with the "
                               "iterations around it and the strings it adds, more than "
                               f"{MAX_REDUCE_WORK:,}): the server evaluates one expression "
                               "without checking its timeout")


def _wrapped(code: Sequence[Token], scopes: list[tuple[int, ...]], bar: int, close: int,
             name: str) -> int:
    """What one copy of a ``reduce()``'s accumulator costs when its step wraps it in list or
    map literals (``[a]``, ``[[a]]``, ``{k: a}``): its value is nested one level deeper at
    each step and copied whole, so :data:`HEAVY_WALK` a wrapping bracket; one when no step
    wraps it. ``reduce(a = [], x IN range(1,10000) | [[a]])`` held a 3 s server 35 s (the
    forty-fifth re-probe's T6)."""
    deepest = 0
    for k in range(bar + 1, close):
        if code[k].kind in ("word", "quoted") and code[k].text.strip("`") == name \
                and code[k - 1].text != "." and code[k - 1].text.upper() != "IN":
            deepest = max(deepest, sum(1 for b in scopes[k] if b > bar
                                       and code[b].text in ("[", "{")
                                       and not _projection_bar(code, b, _bracket_end(
                                           code, scopes, b) + 1)))
    return HEAVY_WALK * deepest if deepest else 1


def _bracket_end(code: Sequence[Token], scopes: list[tuple[int, ...]], at: int) -> int:
    """The index of the bracket that closes the one opened at ``code[at]``."""
    k = at + 1
    while k < len(code) and at in scopes[k]:
        k += 1
    return k


def _selects(code: Sequence[Token], scopes: list[tuple[int, ...]], at: int, bar: int,
             close: int) -> bool:
    """Whether the ``reduce(`` at ``code[at]`` (its ``|`` and ``)`` after) starts from a
    number or ``null`` and at each step only chooses between its accumulator and the element
    (``reduce(mx = 0, y IN ys | CASE WHEN y > mx THEN y ELSE mx END)``, the maximum's
    idiom): its value is never more than one element, so a step copies one element, not a
    value grown by every step before (the forty-second re-probe's L2 refused the idiom as a
    copy of a growing accumulator)."""
    if not (_numeric(code, at + 4) or (at + 5 < len(code) and code[at + 4].text.upper()
                                       == "NULL" and code[at + 5].text == ",")):
        return False
    ins = [k for k in range(at + 4, bar) if code[k].kind == "word"
           and code[k].text.upper() == "IN" and scopes[k][-1:] == (at + 1,)]
    if not ins or code[bar + 1].text.upper() != "CASE" or code[close - 1].text.upper() != "END":
        return False
    chosen = {code[at + 2].text.strip("`"), code[ins[0] - 1].text.strip("`")}
    level, depth = scopes[bar + 1], 0
    for k in range(bar + 1, close):
        word = _case_word(code, k) if scopes[k] == level else ""
        depth += (word == "CASE") - (word == "END")
        if depth == 1 and word in ("THEN", "ELSE"):
            result = code[k + 1]
            if not (result.kind == "number" or result.text.upper() == "NULL"
                    or (result.kind in ("word", "quoted") and result.text.strip("`") in chosen)) \
                    or _case_word(code, k + 2) not in ("WHEN", "ELSE", "END"):
                return False
        if depth == 0 and k < close - 1:
            return False  # the CASE ends before the body does (CASE ... END + s)
    return True


def _added(code: Sequence[Token], scopes: list[tuple[int, ...]], sources: dict[int, int],
           at: tuple[int, int, int], numbers: frozenset[str]) -> int:
    """What a step of the ``reduce()`` at ``code[at[0]]`` (its ``|`` and ``)`` after) may add
    to its accumulator, in units of 16 characters or one value: its longest string literal,
    or the lists and names its body holds, each name that is no number (:func:`_numbers`)
    at least :data:`MAX_LITERAL_CHARS` characters, as the text does not say what it holds
    (``WITH '<990 x>' AS t ... s + t``, ``WITH [0, ..., 99] AS l ... s + l``: the
    twenty-sixth re-probe's H2, copied at each step). Errs high."""
    start, bar, close = at
    longest = max((_kept_length(code[k]) for k in range(start, close)
                   if code[k].kind == "string"), default=0)
    held = 0
    for k in range(bar + 1, close):
        tok = code[k]
        if any(b > bar and code[b - 1].text.lower() in _SCALAR_CALLS for b in scopes[k]):
            continue  # size(l), any(x IN l ...): a number or a truth
        if tok.kind in ("word", "quoted") and (tok.text.strip("`") in numbers
                                               or tok.text.upper() in _ARITHMETIC_WORDS
                                               or tok.text.upper() in _BOOLEAN_WORDS):
            continue
        if tok.kind in ("word", "quoted") and not _called(code, k):
            held += max(sources.get(k, 0), -(-MAX_LITERAL_CHARS // 16))
        elif k in sources:
            held += sources[k]
    return max(1, -(-longest // 16), held)


def _called(code: Sequence[Token], k: int) -> bool:
    """Whether the word ``code[k]`` is a function's name or part of it (``string`` and
    ``join`` in ``string.join(``), or a property's key (``price`` in ``x.price``)."""
    if k and code[k - 1].text == ".":
        return True
    while k + 2 < len(code) and code[k + 1].text == "." and code[k + 2].kind == "word":
        k += 2
    return k + 1 < len(code) and code[k + 1].text == "("


#: How many values a name's copies are followed for, one by one; past it, only the most copies
#: of any one (:class:`_Copies`).
_ORIGINS = 64


class _Copies:
    """How many copies of each earlier value a bound name holds: exactly, for up to
    :data:`_ORIGINS` of them, and past that as a bound on every one (``floor``). Why: the
    exact counts of every origin, added at each step, made ``WITH 1 AS a0, ..., 1 AS a999``
    cubic (42 s for 11 KB, hours near the size cap: the thirteenth re-probe's F4)."""

    def __init__(self, exact: dict[str, int], floor: int = 0) -> None:
        self.exact, self.floor = exact, floor
        self.top = max(exact.values(), default=0)

    def add(self, other: _Copies, copies: int) -> int:
        """Add ``copies`` times what ``other`` holds; the most copies of one value now."""
        self.floor += copies * other.floor
        for origin, n in other.exact.items():
            self.exact[origin] = got = self.exact.get(origin, 0) + copies * n
            self.top = max(self.top, got)
        return self.top + self.floor

    def bounded(self) -> _Copies:
        """Itself, or past :data:`_ORIGINS` values followed, the bound on every one."""
        if len(self.exact) <= _ORIGINS:
            return self
        return _Copies({}, self.floor + self.top)


def _check_steps(code: Sequence[Token], scopes: list[tuple[int, ...]],
                 weigh: _Weights) -> None:
    """Refuse ``WITH``/``UNWIND`` steps (and a ``CALL`` subquery's ``RETURN``) whose values,
    followed through every name they bind, hold more than :data:`MAX_COPIES` copies of one
    value: ``WITH l + l AS l`` 31 times over, ``WITH l, l AS b WITH l + b AS l``, ``UNWIND
    [l] AS y WITH y + y AS l``, ``WITH {a: l} AS p WITH p.a + p.a AS l`` (each aborted a 4 GB
    server). Growing calls are not counted here: their product bounds them
    (:func:`_check_growth`)."""
    weigh = _Weights(code, scopes, weigh.walked, {})
    calls = {k for k in range(1, len(code))
             if code[k].text == "{" and code[k - 1].text.upper() == "CALL"}
    ends = {weigh.close(code, k) for k in calls}
    held: dict[str, _Copies] = {}
    start, clause = 0, ""
    for i, tok in enumerate(code):
        if any(b not in calls for b in scopes[i]):
            continue
        word = tok.text.upper() if tok.kind == "word" else ""
        if i in calls or i in ends:
            start, clause = i + 1, ""
        elif word in ("WITH", "UNWIND") or (word == "RETURN" and scopes[i]):
            start, clause = i + 1, word
        elif word == "RETURN":  # the query's own RETURN binds nothing a step reads
            start, clause = i + 1, ""
        elif tok.text == ",":
            start = i + 1
        elif word == "AS" and i + 1 < len(code) and clause:
            name = code[i + 1].text.strip("`")
            named = frozenset(t.text.strip("`") for t in code[start:i]
                              if t.kind in ("word", "quoted")) & held.keys()
            value = _Copies({f"{name}@{i}": 1})
            for used, copies in _uses_of(code, start, i, named, weigh)[0].items():
                if copies and (top := value.add(held[used], copies)) > MAX_COPIES:
                    raise QueryRefused(
                        f"{used} at {where(code[start])} is part of the value projected "
                        f"as {name} {copies} times: over the query's steps, "
                        f"{_count(top)} copies of one value, more than {MAX_COPIES}, "
                        "a value that multiplies at each step, which the server "
                        "evaluates without checking its memory cap")
            # never lowered, as :func:`_wide_uses`' names (64c N1: ``WITH 1 AS l3, {a: l3,
            # b: l3} AS l4`` doubled the old ``l3`` at each step, taken for two copies)
            if name not in held or value.top + value.floor >= held[name].top + held[name].floor:
                held[name] = value.bounded()
            start = i + 2  # what follows the name is no part of the next value


#: The most rows the text counts (:func:`_counted_rows`) a sort, a ``DISTINCT`` or a grouping
#: may take: FalkorDB sorts (``ORDER BY`` without a ``LIMIT`` of at most as many), removes
#: duplicates and groups all its rows in one step, without checking its timeout:
#: ``UNWIND range(1, 1000000) AS y WITH {a: y, ..., f: y} AS m ORDER BY m`` held a 3 s
#: server 26 s, ``WITH y ORDER BY {a: y, b: y, c: y}`` 8 s, a grouping by such a map 6 s.
MAX_SORTED = 100_000


#: The most keys an ``ORDER BY`` may have: with all of them equal, each comparison walks them
#: all, and 2,000 keys (``ORDER BY s, s, ..., k``) over 100,000 rows held a 3 s server 27 s
#: (the sixty-seventh re-probe's K1); each key counts one value at least towards
#: :data:`MAX_SORTED_VALUES` too.
MAX_SORT_KEYS = 50
#: The largest top (``ORDER BY ... LIMIT n``) a sort keeps without the checks of a sort: a top
#: of 100,000 costs about what the whole sort does (``ORDER BY range(1,99), range(1,99), k
#: LIMIT 100000`` held a 3 s server 27 s: the sixty-sixth re-probe's T1); one of 10 rows
#: finished in 1.3 s.
MAX_TOP = 1_000
#: The most values a sort's keys hold over all its rows (the rows the text counts times the
#: values of the lists in its keys): the server compares whole lists, and ``UNWIND
#: range(1,100000) AS k WITH k ORDER BY range(1,80), ... (six), k``, 48,000,000 values under
#: every other bound, held a 3 s server 7 s (the sixty-fifth re-probe's R2, R3); one key of
#: 99 values over 100,000 rows sorted in about 3 s.
MAX_SORTED_VALUES = 5_000_000


def _check_sorts(code: Sequence[Token], read: tuple[list[tuple[int, ...]], dict[int, int]],
                 ranges: dict[int, tuple[int, int]], degree: list[int], rows: list[int],
                 counted: list[bool], least: list[int]) -> None:
    """Refuse a sort, a ``DISTINCT`` or a grouping (:data:`MAX_SORTED`) over more rows than
    the text counts, or over rows it cannot bound (a product of patterns, counted as
    :data:`UNBOUNDED_ROWS`) by a key that may hold several values (a map, a list, a name
    bound to one: :func:`_wide_uses`), or of :data:`MAX_PRODUCT` patterns or more, by any
    key: the graph's own properties are what an honest query sorts a product of two by.
    ``degree``: :func:`_products`, read once with the floor's factors; ``read``: the scopes,
    and the values each list holds (:func:`_list_sources`)."""
    scopes, sources = read
    maps = _map_sizes(code, scopes, sources)
    wide = _wide_uses(code, scopes, keys=True)
    paths = _path_keys(code, scopes)
    built = _built_unwinds(code, scopes, ranges)
    for at, end, what in _sorted_clauses(code, scopes):
        # a grouping or a percentile takes all its rows whatever LIMIT follows (the forty-
        # fifth T5, 10.7 s); a sort keeps a top, a DISTINCT streams
        if end - at == 0:
            continue
        keys = _keys(code, scopes, at, end, what)
        if what.lower() == "collect()":
            _check_collected(code, (at, end, what), (wide, (scopes, sources, maps)),
                             degree[at], (rows[at] if not counted[at] else -rows[at], least[at]))
            continue
        weighed = max(rows[at] if counted[at] else 0, least[at])
        if what in ("ORDER BY", "DISTINCT") and (top := _top(code, end)) <= MAX_TOP:
            # a top's rows are what it keeps, but their keys are not bounded by it (3,000
            # keys of a range(1,90) name over 300 rows, LIMIT 1000, held a 3 s server 13 s:
            # the sixty-eighth re-probe's TK)
            _check_sort_values(code, (at, what), keys, (scopes, sources, maps), min(top, weighed))
            continue
        _check_path_sort(code, at, what, [k for k in keys if k in paths], least[at], built)
        if not counted[at] and rows[at] >= UNBOUNDED_ROWS and any(u < at for u in built) \
                and _variable_patterns(code[:at]):
            # a list the query built, unwound beside variable-length matches, sorted by
            # nodes (``WITH range(1,100000) AS r MATCH (a)-[*]-(b) UNWIND r AS k ... ORDER BY
            # b, a`` held a 3 s server 12 s: the fiftieth re-probe's J3)
            raise QueryRefused(
                f"{what} at {where(code[at - 1])} takes rows a list the query builds "
                "multiplied, beside variable-length relationships, which no count bounds: "
                "the server sorts, removes duplicates and groups them in one step, without "
                "checking its timeout (add a LIMIT after an ORDER BY, or bound the rows)")
        keyed = _keyed(code, keys, wide, end)
        if (counted[at] and rows[at] > MAX_SORTED) or least[at] > MAX_SORTED or (
                not counted[at] and rows[at] >= UNBOUNDED_ROWS
                and (keyed or degree[at] >= MAX_PRODUCT)):
            whose = "the text counts (each pattern a MATCH matches taken for 2 at least, " \
                "50 apart from the rows before it, 100 with a variable-length relationship; " \
                "a list the text does not count, unwound, for 50)" \
                if counted[at] or least[at] > MAX_SORTED else \
                f"of a product of {degree[at]} patterns" + (
                    ", by a key that may hold several values" if keyed else "")
            raise QueryRefused(
                f"{what} at {where(code[at - 1])} takes up to "
                f"{_count(max(rows[at], least[at]))} rows "
                f"{whose}, more than {MAX_SORTED:,}: the server sorts, removes duplicates and groups "
                "them in one step, without checking its timeout (add a LIMIT after an "
                "ORDER BY, or bound the rows)")
        _check_sort_values(code, (at, what), keys, (scopes, sources, maps), weighed)


def _keyed(code: Sequence[Token], keys: list[int], wide: AbstractSet[int], end: int) -> bool:
    """Whether a sort's ``keys`` (ending at ``code[end]``) may hold several values: a name
    bound to a list or a map (:func:`_wide_uses`), a call that makes one, a ``range()``
    (65c R1); ``type(r)``, ``toString(x)`` are one."""
    return any(k in wide or (_wide(code, k) and _function(code, k) not in _FEW_VALUES
                             and not _projected_properties(code, k))
               or (k + 1 < end and code[k + 1].text == "(" and _function(code, k) == "range")
               for k in keys)


def _check_collected(code: Sequence[Token], call: tuple[int, int, str],
                     read: tuple[AbstractSet[int],
                                 tuple[list[tuple[int, ...]], dict[int, int], dict[str, int]]],
                     degree: int, rows: tuple[int, int]) -> None:
    """Refuse a ``collect()`` over rows the text cannot bound (``rows``: those it counts, 0
    where it cannot, and the least it takes) of more than :data:`MAX_RANGE` at least, of
    :data:`MAX_PRODUCT` patterns or more, or of a value that may hold several over more
    than :data:`MAX_SORTED` rows at least: the server holds every row's value past its cap
    on a query's memory (over seven node patterns, 2 GB against 256 MB: the sixty-ninth
    re-probe's M1; ``collect(rand())`` over two ``range(1,1000000)`` in a subquery, whose
    rows no count bounds, 1.2 GB: the seventieth's M1). One pattern's rows (``OPTIONAL
    MATCH (m)<-[r]-(p) ... collect({name: p.name, roles: r.roles})``) are an honest
    grouping's. Over rows the text counts (``rows``' first negative: minus their count), a
    collected list's values are weighed where it is built (:func:`_check_work`), and so are,
    here, the values of each row's lists and maps over them (:data:`MAX_COLLECTED_VALUES`:
    ``collect(range(1,99))`` over ``range(1,1000000)`` grew the server to 2 GB, the
    seventy-first re-probe's M1)."""
    at, end, what = call
    wide, values = read
    uncounted, least = rows
    if uncounted < 0:
        held = _held_values(code, list(range(at, end)), values, at)
        if held and (held + 1) * -uncounted > MAX_COLLECTED_VALUES:
            raise QueryRefused(
                f"{what} at {where(code[at - 2])} gathers lists or maps of {_count(held)} "
                f"values over {_count(-uncounted)} rows the text counts, more than "
                f"{MAX_COLLECTED_VALUES:,} values in all, held in the server's memory at once, "
                "past its cap on a query's memory (collect fewer or smaller values)")
        return
    if uncounted < UNBOUNDED_ROWS:
        return
    if least > MAX_RANGE or degree >= MAX_PRODUCT or (
            least > MAX_SORTED and _keyed(code, list(range(at, end)), wide, end)):
        raise QueryRefused(
            f"{what} at {where(code[at - 2])} gathers "
            + (f"{_count(least)} rows at least" if least > MAX_RANGE
               else f"the rows of a product of {degree} patterns")
            + ", which no count bounds" + (
                ", each a value that may hold several"
                if least <= MAX_RANGE and degree < MAX_PRODUCT else "")
            + ": the server holds them all in memory at once, past its cap on a query's "
            "memory (bound the rows, or collect from one pattern)")


def _check_sort_values(code: Sequence[Token], clause: tuple[int, str], keys: list[int],
                       read: tuple[list[tuple[int, ...]], dict[int, int], dict[str, int]],
                       rows: int) -> None:
    """Refuse a sort whose keys' lists (:data:`MAX_SORTED_VALUES`) hold too many values over
    the ``rows`` the text counts: each is below the bound of one list per row, their sum not.
    ``read``: the scopes, the values each list holds, and each name's maps (:func:`_map_sizes`,
    read once a query)."""
    at, what = clause
    scopes = read[0]
    if what != "ORDER BY" or not rows:
        return
    count = 1 + sum(1 for k in keys if code[k].text == "," and scopes[k] == scopes[at])
    if count > MAX_SORT_KEYS:
        raise QueryRefused(
            f"{what} at {where(code[at - 1])} has {count:,} keys, more than {MAX_SORT_KEYS}: "
            "the server compares every key of two equal rows, in one step without checking "
            "its timeout (2,000 equal keys over 100,000 rows held a 3 s server 27 s)")
    held = _held_values(code, keys, read, at) + count
    if held * rows > MAX_SORTED_VALUES:
        raise QueryRefused(
            f"{what} at {where(code[at - 1])} compares lists of {_count(held)} values in all "
            f"over {_count(rows)} rows the text counts: {_count(held * rows)} values, more "
            f"than {MAX_SORTED_VALUES:,}, which the server sorts in one step, without checking "
            "its timeout (sort by fewer or smaller lists, or add a LIMIT after the ORDER BY)")


def _held_values(code: Sequence[Token], keys: list[int],
                 read: tuple[list[tuple[int, ...]], dict[int, int], dict[str, int]],
                 at: int) -> int:
    """The values the lists and maps of ``keys`` (from ``code[at]``) hold in all, written
    there or bound to the names there (``read``: the scopes, the values each list holds,
    each name's maps)."""
    scopes, sources, maps = read
    return sum(sources.get(k, 0) + (_map_values(code, scopes, sources, k, at)
                                    if code[k].text == "{" else 0)
               + (maps.get(code[k].text.strip("`"), 0) if code[k].kind in ("word", "quoted")
                  and not (k and code[k - 1].text == ".") else 0)
               for k in keys if not _in_scalar_call(code, scopes, k, at))


#: The most values a ``collect()`` of lists or maps may gather over the rows the text counts:
#: ``collect(range(1,99))`` over ``range(1,1000000)`` (99,000,000) grew a FalkorDB server to
#: 2 GB, ``collect([a x 32])`` (32,000,000) to 671 MB, past its 256 MB cap on a query's memory
#: (the seventy-first re-probe's M1).
MAX_COLLECTED_VALUES = 5_000_000


#: The characters of a map's key that weigh one value: two maps are compared key by key, and
#: 48 keys of 99 characters sharing a 97-character prefix, weighed as 48 values, held a 3 s
#: server 4.9 to 6.5 s over 100,000 rows (the seventy-first re-probe's H1).
MAP_KEY_CHARS = 16


def _map_values(code: Sequence[Token], scopes: list[tuple[int, ...]], sources: dict[int, int],
                k: int, at: int) -> int:
    """The values the map literal at ``code[k]`` holds: its entries, times the values each
    comprehension around it from ``code[at]`` on iterates (``[x IN range(1,40) | {a0: x,
    ...}]``: forty maps). Maps held no values for the sorts' keys, and six of 80 entries over
    100,000 rows held a 3 s server 30 s (the sixty-sixth re-probe's M1)."""
    held = 1
    for j in range(k + 1, len(code)):
        if len(scopes[j]) <= len(scopes[k]):
            break  # its closing brace: a scan to the query's end made 3,000 maps take 7 s
        held += scopes[j][-1] == k and code[j].text == ","
        if scopes[j][-1] == k and code[j - 1].text in ("{", ",") and j + 1 < len(code) \
                and code[j + 1].text == ":":
            held += len(code[j].text) // MAP_KEY_CHARS  # a long key: compared character-wise
    for b in scopes[k]:
        if b >= at and code[b].text == "[" and b + 3 < len(code) \
                and code[b + 2].text.upper() == "IN":
            held *= max(1, sources.get(b + 3, 1))
    return held


def _map_sizes(code: Sequence[Token], scopes: list[tuple[int, ...]],
               sources: dict[int, int]) -> dict[str, int]:
    """The values each name bound to map literals holds (:func:`_map_values`), never lowered
    (a name rebound inside ``CALL { }`` is the outer one again past it)."""
    out: dict[str, int] = {}
    for i, tok in enumerate(code):
        if tok.kind == "word" and tok.text.upper() == "AS" and i + 1 < len(code):
            start, _ = _named(code, scopes, i)
            held = sum(_map_values(code, scopes, sources, k, start) for k in range(start, i)
                       if code[k].text == "{" and not _in_scalar_call(code, scopes, k, start))
            held += sum(out.get(code[k].text.strip("`"), 0) for k in range(start, i)
                        if code[k].kind in ("word", "quoted")
                        and not (k and code[k - 1].text == "."))
            name = code[i + 1].text.strip("`")
            if held > out.get(name, 0):
                out[name] = held
    return out


#: What multiplies a query's rows past the graph's matches: a sort keyed by a path over them
#: compares paths by the million (:func:`_check_path_sort`).
_PATH_MULTIPLIERS = frozenset({"UNWIND", "CALL", "LOAD", "FOREACH"})


def _path_keys(code: Sequence[Token], scopes: list[tuple[int, ...]]) -> frozenset[int]:
    """The uses of names a ``MATCH`` binds to a path (``p = (a)-[*]-(b)``) or to a
    variable-length relationship's list (``-[r*]-``), and of their aliases (``WITH p AS q``,
    ``WITH (p) AS q``), as a value: anywhere but as a function's argument (``length(p)`` is
    a number), brackets and ``CASE`` included (``ORDER BY (p)``, ``ORDER BY CASE WHEN k > 0
    THEN p END`` were sorted by paths: the fiftieth re-probe's J1, J2)."""
    bound: set[str] = set()
    lists: set[str] = set()  # names bound to a collect() of paths, unwound to paths again
    uses: set[int] = set()
    for i, tok in enumerate(code):
        if tok.kind == "word" and tok.text.upper() == "AS" and i + 1 < len(code):
            start, keyword = _named(code, scopes, i)
            item = {t.text.strip("`") for t in code[start:i]}
            alias = code[i + 1].text.strip("`")
            if keyword == "UNWIND" and item & lists:
                bound.add(alias)
            elif _function(code, start) == "collect" and item & bound:
                lists.add(alias)
            elif any(k in uses for k in range(start, i)):
                bound.add(alias)
            continue
        if tok.kind not in ("word", "quoted"):
            continue
        name = tok.text.strip("`")
        after = code[i + 1].text if i + 1 < len(code) else ""
        path = after == "=" and i + 2 < len(code) and code[i + 2].text == "(" and i > 0 \
            and code[i - 1].text.upper() in ("MATCH", ",")
        if path or (i and code[i - 1].text == "[" and any(
                t.text == "*" for t in code[i + 1:_bracket_end(code, scopes, i - 1)])):
            bound.add(name)
        elif name in bound and not (i and code[i - 1].text == ".") and after != "(" \
                and not _an_argument(code, scopes, i):
            uses.add(i)
    return frozenset(uses)


def _an_argument(code: Sequence[Token], scopes: list[tuple[int, ...]], i: int) -> bool:
    """Whether ``code[i]`` is inside a function call's brackets (``length(p)``)."""
    inner = scopes[i][-1] if scopes[i] else None
    return inner is not None and code[inner].text == "(" and inner > 0 \
        and code[inner - 1].kind in ("word", "quoted") \
        and code[inner - 1].text.upper() not in _CLAUSES | _NOT_CALLS


#: Words before a bracket that make it no call's (``WHEN (p)``, ``IN (x)``).
_NOT_CALLS = frozenset({"WHEN", "THEN", "ELSE", "AND", "OR", "XOR", "NOT", "IN", "BY", "AS",
                        "DISTINCT", "CASE", "IS", "STARTS", "ENDS", "CONTAINS"})


def _built_unwinds(code: Sequence[Token], scopes: list[tuple[int, ...]],
                   ranges: dict[int, tuple[int, int]]) -> list[int]:
    """Where each ``UNWIND`` of a list the query builds and the text does not size (``[x IN
    range(...) | x]``, a ``collect()``, a name bound to a ``range()``) is."""
    built: set[str] = set()
    out: list[int] = []
    for i, tok in enumerate(code):
        word = tok.text.upper() if tok.kind == "word" else ""
        if word == "AS" and i + 1 < len(code):
            start, _ = _named(code, scopes, i)
            if start < i and (_function(code, start) in ("range", "collect") or (
                    code[start].text == "[" and any(t.text == "|" for t in code[start:i]))
                    or any(t.kind in ("word", "quoted") and t.text.strip("`") in built
                           for t in code[start:i])):  # or renamed: WITH c0 AS c (64c N2)
                built.add(code[i + 1].text.strip("`"))  # a list literal is no built list
        elif word == "UNWIND" and i + 1 < len(code) and (
                code[i + 1].text == "[" or _function(code, i + 1) in ("range", "collect")
                or code[i + 1].text.strip("`") in built) and _unwound(code, ranges, i + 1) is None:
            out.append(i)
    return out


#: The most rows the text counts (times what each ``MATCH`` makes at least) a sort keyed by
#: a path may take: an ``UNWIND`` of a few names before a path's ``DISTINCT`` is honest.
MAX_PATHS_SORTED = 1_000


def _check_path_sort(code: Sequence[Token], at: int, what: str, keys: list[int],
                     least: int, built: list[int]) -> None:
    """Refuse a sort, ``DISTINCT`` or grouping keyed by a path alone (:func:`_path_keys`)
    over rows an ``UNWIND`` multiplied past :data:`MAX_PATHS_SORTED` (or by a list the text
    does not size) or a subquery multiplied before it, or over a product of two patterns with
    a variable-length relationship: ``UNWIND range(1,100000) AS k OPTIONAL
    MATCH p=(a)-[*]-(b) WITH p, k ORDER BY p`` held a 3 s server 17 s, the same over ``[x IN
    range(1,100000) | x]`` 11 s, an 8-hop path beside ``CALL { UNWIND range(1,10000) ...
    }`` 9.6 s, and the next cases' golds timed out (the forty-ninth re-probe's I1 to I3); two
    variable-length patterns sorted by their paths, 9.6 s (H1). What no count bounds is
    compared path by path, which the server does without checking its timeout."""
    if not keys:
        return
    before = code[:at]
    multiplied = least > MAX_PATHS_SORTED or any(u < at for u in built) or any(
        t.kind == "word" and t.text.upper() in _PATH_MULTIPLIERS - {"UNWIND"} for t in before)
    if not multiplied and _variable_patterns(before) < 2:
        return
    raise QueryRefused(
        f"{what} at {where(code[at - 1])} is keyed by the path {code[keys[0]].text}, over "
        + ("rows an UNWIND or a subquery multiplied" if multiplied else
           "a product of patterns with variable-length relationships")
        + ": the server compares paths node by node in one step, without checking its "
          "timeout (sort by a property, or add a LIMIT of at most 100,000 after the ORDER BY)")


def _variable_patterns(code: Sequence[Token]) -> int:
    """How many path patterns of ``code``'s ``MATCH`` clauses hold a variable-length
    relationship (patterns a comma or another ``MATCH`` separates)."""
    count, in_match, depth, starred = 0, False, 0, False
    for tok in code:
        word = tok.text.upper() if tok.kind == "word" else ""
        if tok.kind == "punct" and tok.text in _OPEN:
            depth += 1
        elif tok.kind == "punct" and tok.text in _CLOSE:
            depth -= 1
        elif depth == 0 and (tok.text == "," or word in _PATTERN_ENDS):
            count += starred and in_match
            starred = False
            in_match = word in ("MATCH",) or (tok.text == "," and in_match)
        elif depth > 0 and tok.text == "*":
            starred = True
    return count + (starred and in_match)


#: Calls whose value, as a sort's key, is one value or a few a node holds: ``type(r)``,
#: ``toString(x)``; ``labels(n)`` and ``keys(n)`` (``RETURN labels(n) AS l, count(r)`` after
#: an ``OPTIONAL MATCH`` was refused as grouped by a wide key: the forty-fifth re-probe's O2).
_FEW_VALUES = _NOT_LISTS | {"labels", "keys"}


def _projected_properties(code: Sequence[Token], k: int) -> bool:
    """Whether ``code[k]`` opens a map projection of a node's own properties (``p {.name,
    .born}``, ``n {.*}``): a few values a node holds, no key built from the data (O2)."""
    if code[k].text != "{" or k == 0 or code[k - 1].kind not in ("word", "quoted"):
        return False
    j = k + 1
    while j + 1 < len(code) and code[j].text == "." and (
            code[j + 1].kind in ("word", "quoted") or code[j + 1].text == "*"):
        j += 2
        if code[j].text != ",":
            break
        j += 1
    return j < len(code) and code[j].text == "}"


def _keys(code: Sequence[Token], scopes: list[tuple[int, ...]], at: int, end: int,
          what: str) -> list[int]:
    """The tokens of ``code[at:end]`` a sort, a ``DISTINCT`` or a grouping compares: a
    grouping's keys only, not what its aggregates take (``RETURN m.title AS t,
    collect({name: p.name}) AS cast`` was refused as grouped by a map: the forty-fifth
    re-probe's O2)."""
    if what != "the grouping":
        return list(range(at, end))
    out: list[int] = []
    inside = -1  # the end of the aggregate call being skipped
    for k in range(at, end):
        if k < inside:
            continue
        if code[k].kind == "word" and code[k].text.lower() in _AGGREGATES \
                and k + 1 < end and code[k + 1].text == "(":
            inside = k + 2
            while inside < end and k + 1 in scopes[inside]:
                inside += 1
            continue
        out.append(k)
    return out


def _top(code: Sequence[Token], end: int) -> int:
    """How many rows a ``LIMIT`` right after ``code[end]`` (after a ``SKIP`` too) keeps of a
    sort (a top of that many is kept, not a sort of all), or a number past any bound. The
    server keeps the skipped rows too: ``ORDER BY m SKIP 999990 LIMIT 10`` sorted 1,000,000
    six-key maps, 8 s on a 3 s server (the forty-fifth re-probe's T1), so a ``SKIP`` counts
    with the ``LIMIT``, and one the guard cannot read leaves no top."""
    k, skipped = end, 0
    if k < len(code) and code[k].kind == "word" and code[k].text.upper() == "SKIP":
        skip = _limit(code, k + 1)
        if skip is None:
            return MAX_SORTED + 1
        skipped, k = skip, k + 1
        while k < len(code) and not (code[k].kind == "word"
                                     and code[k].text.upper() in _CLAUSES):
            k += 1
    if k < len(code) and code[k].kind == "word" and code[k].text.upper() == "LIMIT" \
            and (limit := _limit(code, k + 1)) is not None:
        return skipped + limit
    return MAX_SORTED + 1


def _sorted_clauses(code: Sequence[Token], scopes: list[tuple[int, ...]]
                    ) -> list[tuple[int, int, str]]:
    """Each ``ORDER BY``'s keys, ``DISTINCT`` projection's items and grouping projection's
    items (one with an aggregate beside other items), outside brackets, and what each
    percentile and ``collect()`` of a projection gathers (:func:`_gathering_calls`: a
    percentile is checked as a sort of its rows, a ``collect()`` by
    :func:`_check_collected`): where they start and end, and which it is."""
    out: list[tuple[int, int, str]] = []
    for i in range(len(code)):
        word = _keyword(code, i)
        if not word or not _query_level(code, scopes, i):
            continue
        if word == "ORDER" and i + 1 < len(code) and code[i + 1].text.upper() == "BY":
            out.append((i + 2, _clause_end(code, scopes, i + 2), "ORDER BY"))
        elif word == "DISTINCT" and i and code[i - 1].text.upper() in ("WITH", "RETURN"):
            out.append((i + 1, _clause_end(code, scopes, i + 1), "DISTINCT"))
        elif word in ("WITH", "RETURN") and not (i + 1 < len(code)
                                                 and code[i + 1].text.upper() == "DISTINCT"):
            end = _clause_end(code, scopes, i + 1)
            if _aggregates_some(code, i + 1, end) and not _aggregates_only(code, i + 1):
                out.append((i + 1, end, "the grouping"))
        if word in ("WITH", "RETURN"):
            out.extend(_gathering_calls(code, scopes, i + 1, _clause_end(code, scopes, i + 1)))
    return out


#: Aggregates that gather all their rows' values before they answer: a percentile sorts
#: them, in one step without checking its timeout (``percentileDisc(rand(), 0.5)`` over a
#: product of two ``range(1,1000000)`` held a 3 s server 10 s, eight of them 15 s, and the
#: golds of the honest cases after it timed out: the sixty-ninth re-probe's H1 to H5), and
#: ``collect()`` holds them (over a product of seven node patterns the server grew to 2 GB
#: past its 256 MB cap on a query's memory: M1).
_GATHERING = frozenset({"percentilecont", "percentiledisc", "collect"})


def _gathering_calls(code: Sequence[Token], scopes: list[tuple[int, ...]], at: int,
                     end: int) -> list[tuple[int, int, str]]:
    """Each call of :data:`_GATHERING` in the projection ``code[at:end]``: where its first
    argument (what it gathers) starts and ends, and its name as called (``percentileDisc()``)."""
    out: list[tuple[int, int, str]] = []
    for k in range(at, end - 1):
        if code[k].kind == "word" and code[k].text.lower() in _GATHERING \
                and code[k + 1].text == "(" and not (k and code[k - 1].text == "."):
            arg = k + 2
            while arg < end and k + 1 in scopes[arg] and not (
                    code[arg].text == "," and scopes[arg][-1] == k + 1):
                arg += 1
            if arg > k + 2:
                out.append((k + 2, arg, f"{code[k].text}()"))
    return out


def _clause_end(code: Sequence[Token], scopes: list[tuple[int, ...]], at: int) -> int:
    """Where the projection (or the ``ORDER BY``'s keys) from ``code[at]`` ends: at the next
    clause word outside brackets (``ORDER``, ``SKIP``, ``LIMIT``, ``WHERE`` end a projection;
    ``SKIP`` and ``LIMIT`` end the keys)."""
    k = at
    if at >= len(code):
        return at
    while k < len(code) and (len(scopes[k]) > len(scopes[at]) or scopes[k] == scopes[at]) \
            and not (scopes[k] == scopes[at] and code[k].kind == "word"
                     and code[k - 1].text != "." and code[k].text.upper() in _CLAUSES):
        k += 1
    return k


def _query_level(code: Sequence[Token], scopes: list[tuple[int, ...]], i: int) -> bool:
    """Whether ``code[i]`` is a clause of the query or of a subquery (``CALL { ... }``,
    ``EXISTS { ... }``), not of an expression's brackets: a sort in a subquery is one step
    the server does not time too (9 s on a 3 s server)."""
    return all(code[b].text == "{" and b and code[b - 1].kind == "word"
               and code[b - 1].text.upper() in ("CALL", "EXISTS", "COUNT", "COLLECT")
               for b in scopes[i])


def _aggregates_some(code: Sequence[Token], at: int, end: int) -> bool:
    """Whether an aggregate is called in ``code[at:end]``."""
    return any(code[k].kind == "word" and code[k].text.lower() in _AGGREGATES
               and k + 1 < end and code[k + 1].text == "(" for k in range(at, end))


#: The independent patterns (:func:`_products`) whose product no sort, ``DISTINCT`` or
#: grouping may take whole, by whatever key: six nodes of the 13-node test graph matched
#: apart are 4,826,809 rows, sorted by a number held a 3 s server 10 s.
MAX_PRODUCT = 3


def _projected_names(code: Sequence[Token], scopes: list[tuple[int, ...]], at: int,
                     end: int) -> set[str]:
    """The names a projection ``code[at:end]`` binds: each item's ``AS`` name, or the item
    itself when it is one name. Every word of it was taken for a bound name, a property's
    key too, so a product of five patterns after ``WITH z, z.a AS q, z.b AS r, ...`` read
    as one pattern sharing them (the forty-fifth re-probe's L2)."""
    names: set[str] = set()
    if at < end and _keyword(code, at) == "DISTINCT":
        at += 1
    item = at
    for k in range(at, end + 1):
        if k < end and not (code[k].text == "," and scopes[k] == scopes[at]):
            continue
        if k - item == 1 and code[item].kind in ("word", "quoted"):
            names.add(code[item].text.strip("`"))
        elif k - item >= 3 and code[k - 2].text.upper() == "AS" \
                and code[k - 1].kind in ("word", "quoted"):
            names.add(code[k - 1].text.strip("`"))
        item = k + 1
    return names


def _variable_length(code: Sequence[Token], scopes: list[tuple[int, ...]], i: int) -> bool:
    """Whether ``code[i]`` is the ``*`` of a pattern's relationship (``-[*]-``,
    ``-[r:KNOWS*1..3]->``), not one of an expression inside it."""
    return code[i].text == "*" and bool(scopes[i]) and code[scopes[i][-1]].text == "[" \
        and _query_level(code, scopes, scopes[i][-1])


def _products(code: Sequence[Token], scopes: list[tuple[int, ...]],
              ranges: dict[int, tuple[int, int]] | None = None,
              factors: dict[int, int] | None = None) -> list[int]:
    """For each token, how many patterns matched so far share no variable with one bound
    before them (``MATCH (a), (b)`` two; ``MATCH (a) MATCH (a)-->(b)`` one): the rows are a
    product of that many of the graph's matches, and each variable-length segment of a
    pattern past its first multiplies them as one more. A ``WITH`` keeps the names it projects
    (all for ``WITH *``), one that aggregates alone starts again from one row, as does a
    ``UNION`` (:class:`_Subqueries`). ``factors`` gets each ``MATCH``'s rows at least."""
    out: list[int] = []
    bound: frozenset[str] = frozenset()
    names: set[str] | None = None  # the variables of the pattern being read
    degree, clause, segments = 0, "", 0  # segments: the pattern's variable-length ones
    match, start, unwinds, anchor = 0, 0, 0, ""  # the MATCH, its pattern, the UNWINDs so far
    subs = _Subqueries(code, scopes, _with_outer_names, _no_names)
    for i, tok in enumerate(code):
        word = _keyword(code, i)
        level = _query_level(code, scopes, i)
        degree, bound = subs.step(i, (degree, bound))
        if names is not None and level and (word in _CLAUSES or tok.text == ","):
            # each variable-length segment multiplies the rows as a pattern beside it does
            # (1 segment 314 rows of the 13-node graph, 2: 7,610, 3: 185,162): four sorted
            # by their path held a 3 s server 10 s (the forty-sixth re-probe's C1)
            degree += (0 if names & bound else 1) + max(segments - 1, 0)
            if factors is not None:
                factors[match] = factors.get(match, 1) * _pattern_factor(
                    names & bound or (anchor != ""
                                      and _equated(code, scopes, (start, i), names, anchor)),
                    segments, _hops(code, scopes, (start, i)))
            bound |= names
            names, segments = None, 0
        segments += names is not None and _variable_length(code, scopes, i)
        if level and word in _CLAUSES:
            clause = "MATCH" if word == "OPTIONAL" else word
        unwinds += word == "UNWIND"
        if level and word == "UNION":
            degree, bound = subs.restart(i, (degree, bound), (0, frozenset()))
        elif level and word == "UNWIND" and ranges is not None \
                and _unwound(code, ranges, i + 1) is None:
            degree += 1  # a list the text does not size: its values multiply the rows
            # as a pattern's matches do (``UNWIND r AS a UNWIND r AS b ... ORDER BY b``
            # over a collected list of 3,000 sorted 9,000,000 rows: the forty-fifth T2)
            anchor = ""
        elif level and word == "UNWIND":
            anchor = _alias(code, scopes, i) if unwinds == 1 else ""
        elif level and word == "WITH":
            anchor = ""
            if _aggregates_only(code, i + 1):  # one row (per outer row in a subquery: R2)
                degree = (subs.outer(i) or (0, frozenset()))[0]
            if not (i + 1 < len(code) and code[i + 1].text == "*"):
                bound = frozenset(_projected_names(code, scopes, i + 1, _clause_end(code, scopes, i + 1)))
        if level and clause == "MATCH" and (word == "MATCH" or tok.text == ","):
            names, start = set(), i + 1
            match = i if word == "MATCH" else match
        elif names is not None and tok.kind in ("word", "quoted") and scopes[i] \
                and scopes[i][-1] == i - 1 and code[i - 1].text in ("(", "[") \
                and _query_level(code, scopes, i - 1):
            names.add(tok.text.strip("`"))
        out.append(degree)
    return out


#: What a pattern of fixed length that shares no variable with the rows before it and is not
#: matched by equality to the values an ``UNWIND`` counts makes at least, beside rows the text
#: counts: a product with the graph's matches. Taken for :data:`MATCHED_AT_LEAST`, ``UNWIND
#: range(1,18000) AS k MATCH (a), (b) ... ORDER BY b, a`` was 72,000 rows, 3,042,000 on the
#: 13-node graph, and held a 3 s server 17 s; the next cases' golds timed out (the fifty-third
#: re-probe's M1).
CROSS_MATCHED_AT_LEAST = 50


def _pattern_factor(joined: object, variable: int, hops: int) -> int:
    """What a pattern multiplies the counted rows by at least: its first node
    :data:`MATCHED_AT_LEAST` where it is ``joined`` to the rows before it,
    :data:`CROSS_MATCHED_AT_LEAST` where not, or with a ``variable``-length hop
    :data:`VARIABLE_MATCHED_AT_LEAST` for each such hop (the first node with it); times
    :data:`MATCHED_AT_LEAST` for each fixed one of its ``hops``. A pattern was one factor whatever its length:
    ``MATCH (a)--(b)--(c)--(d)--(e)--(f)--(g) UNWIND range(1,1300) AS k ... ORDER BY k, z``,
    65,000 rows to the floor, sorted 4,230,200 and the next case's gold timed out (the
    fifty-sixth re-probe's Q2; Q1 with a ``[*]`` hop)."""
    first: int = MATCHED_AT_LEAST if joined else CROSS_MATCHED_AT_LEAST
    if variable:  # the first variable-length hop counts its first node with it
        first = VARIABLE_MATCHED_AT_LEAST ** variable
    return first << max(hops - variable, 0)  # MATCHED_AT_LEAST (2) a fixed hop


def _hops(code: Sequence[Token], scopes: list[tuple[int, ...]], span: tuple[int, int]) -> int:
    """How many relationships the pattern ``code[span[0]:span[1]]`` holds (its nodes but
    one)."""
    start, end = span
    nodes = sum(1 for k in range(start, end)
                if code[k].text == "(" and scopes[k] == scopes[start])
    return max(nodes - 1, 0)


def _alias(code: Sequence[Token], scopes: list[tuple[int, ...]], at: int) -> str:
    """The name the ``UNWIND`` at ``code[at]`` binds (``""`` if none is read)."""
    for k in range(at + 1, len(code) - 1):
        if scopes[k] == scopes[at] and _keyword(code, k) == "AS":
            return code[k + 1].text.strip("`") if code[k + 1].kind in ("word", "quoted") else ""
        if scopes[k] == scopes[at] and _keyword(code, k) in _CLAUSES:
            break
    return ""


def _equated(code: Sequence[Token], scopes: list[tuple[int, ...]], span: tuple[int, int],
             names: set[str], anchor: str) -> bool:
    """Whether the pattern ``code[span[0]:span[1]]`` is matched by equality to ``anchor``, the
    name the query's one ``UNWIND`` of a counted list binds: an entry of a property map
    (``(m:Movie {released: y})``) or a conjunct of the ``MATCH``'s ``WHERE`` (``WHERE
    m.released = y``, no ``OR`` beside it). A node holds one value of a property, so over the
    list's distinct values the pattern matches each node once: the count of the list is not
    multiplied by the graph's matches."""
    start, end = span
    for k in range(start + 3, end - 1):
        if code[k].text.strip("`") == anchor and code[k - 1].text == ":" \
                and code[k + 1].text in (",", "}") and code[k - 3].text in ("{", ",") \
                and scopes[k] and code[scopes[k][-1]].text == "{" \
                and len(scopes[k]) == len(scopes[start]) + 2:
            return True
    k = end
    while k < len(code) and not (scopes[k] == scopes[start] and _keyword(code, k) in _CLAUSES):
        k += 1
    if k >= len(code) or _keyword(code, k) != "WHERE":
        return False
    conjunct: list[str] = []
    for j in range(k + 1, len(code) + 1):
        word = _keyword(code, j) if j < len(code) else "END"
        if j < len(code) and scopes[j] != scopes[start]:
            conjunct.append("(")  # no bracketed conjunct is an equality read here
            continue
        if word in ("OR", "XOR"):
            return False
        if word in ("AND", "END") or word in _CLAUSES:
            if _equality(conjunct, names, anchor):
                return True
            if word != "AND":
                return False
            conjunct = []
        else:
            conjunct.append(code[j].text.strip("`"))
    return False


def _equality(conjunct: list[str], names: set[str], anchor: str) -> bool:
    """Whether ``conjunct`` is ``v.p = anchor`` or ``anchor = v.p``, ``v`` one of ``names``."""
    if len(conjunct) != 5:
        return False
    if conjunct[3] == "=":
        side, other = conjunct[:3], conjunct[4]
    elif conjunct[1] == "=":
        side, other = conjunct[2:], conjunct[0]
    else:
        return False
    return other == anchor and side[0] in names and side[1] == "."
