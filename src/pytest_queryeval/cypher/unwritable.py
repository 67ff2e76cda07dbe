"""What a FalkorDB server must not be sent beyond :func:`.guard.check_server`: a value its
Bolt listener cannot write, or writes wrong.

Why a module of its own: a date, a duration or a local time in a reply trips an assertion in
the listener's result formatter and the server dies (4.16.3), and a point is written with one
byte too many (4.16: every later value of its row is read one place late), facts of one
server, not of Cypher; the tokenizer it reads with is :mod:`.guard`'s. With the suite scored
on the plugin's copy (:mod:`.rehearsal`) it holds for the gold and for ``rehearse: false``.
"""

from __future__ import annotations

from ..errors import QueryRefused
from .bounds import outside_each
from .guard import _CLOSE, _NOT_OPERANDS, _OPEN, Token, _code, _dotted, tokens, where

#: Functions whose value FalkorDB's Bolt listener cannot write: a date, a duration, a local
#: time or date-time in a reply trips an assertion in its result formatter and the server
#: dies (4.16.3; the seventh re-probe: ``RETURN date('2020-01-01')``, every later case
#: unavailable). ``datetime()`` and ``toString(date(...))`` are written.
FALKORDB_UNWRITABLE = frozenset({"date", "duration", "localtime", "localdatetime", "time"})
#: Functions whose value FalkorDB's Bolt listener writes wrong: a point is written with an
#: extra null after it (4.16), so the driver reads every later value of its row, list or map
#: one place late (the twentieth re-probe's P1: a wrong prediction passed, an honest one
#: failed). Only the call itself: ``point.distance`` is another function.
FALKORDB_MISWRITTEN = frozenset({"point"})
#: Clause words that start what a value feeds: after ``WHERE`` it is only compared.
_FEEDS = frozenset({"WHERE", "RETURN", "WITH", "UNWIND", "ORDER", "YIELD", "|"})


def check_falkordb(query: str) -> None:
    """What a FalkorDB server (:mod:`.bolt` detects one) must not be sent beyond
    :func:`check_server`: a call of :data:`FALKORDB_UNWRITABLE` (or a function of their
    namespaces, ``date.truncate``) or ``point()`` whose value may reach the reply: one not
    compared (in a ``WHERE``, or an operand of a comparison), not an argument of
    :data:`_SCALAR_OF` and not followed by a property. Errs high: ``WITH date(...) AS d ...
    WHERE x > d`` is refused too."""
    code = _code(tokens(query))
    shape: _Shape | None = None
    for i, tok in enumerate(code):
        word = tok.text.lower() if tok.kind == "word" else ""
        if word in _PERCENTILES and i + 1 < len(code) and code[i + 1].text == "(" \
                and not (i and code[i - 1].text == "."):
            _check_percentile(code, i)
        if word in _AGGREGATES and i + 1 < len(code) and code[i + 1].text == "(" \
                and not (i and code[i - 1].text == "."):
            shape = shape or _Shape(code)
            _check_aggregate_place(shape, i)
        miswritten = word in FALKORDB_MISWRITTEN and i + 1 < len(code) and code[i + 1].text == "("
        if not (miswritten or word in FALKORDB_UNWRITABLE) \
                or (i and code[i - 1].text == ".") or not _called(code, i):
            continue
        shape = shape or _Shape(code)
        if _scalar_argument(shape, i) or _compared(shape, i) or _operand(shape, i) \
                or _accessed(shape, i):
            continue
        if miswritten:
            raise QueryRefused(f"{tok.text}() at {where(tok)}: a FalkorDB server's Bolt "
                               "listener writes a point wrong (every later value of its row "
                               "is read one place late); return its fields (p.latitude, "
                               "p.longitude)")
        name = _dotted(code, i) or tok.text
        raise QueryRefused(f"{name}() at {where(tok)}: a FalkorDB server stops on a "
                           f"{tok.text.lower()} value in its reply (its Bolt listener cannot "
                           "write one); return toString(...) of it")


#: FalkorDB's percentile aggregates, which kill the server on a percentile that is not a
#: number from 0 to 1 of their own reading: ``percentileCont(x, 0.0/0.0)`` (NaN) and
#: ``percentileDisc(1, 1e18)`` ended it by SIGSEGV (4.16.3; the thirty-ninth re-probe's H3), as
#: does any percentile of ``DISTINCT`` values (the fortieth's N1).
_PERCENTILES = frozenset({"percentilecont", "percentiledisc"})


def _check_percentile(code: list[Token], i: int) -> None:
    """Refuse a percentile aggregate's call unless its percentile (the second argument) is
    one number literal from 0 to 1: no expression, name or parameter is known before the
    server reads it."""
    if i + 2 < len(code) and code[i + 2].text.upper() == "DISTINCT":
        # percentileDisc(DISTINCT n.released, 0.5) ended it too (the fortieth re-probe's N1)
        raise QueryRefused(f"{code[i].text}(DISTINCT ...) at {where(code[i])}: a FalkorDB "
                           "server stops on a percentile of distinct values; collect the "
                           "distinct values first (WITH DISTINCT ...)")
    depth = 0
    args: list[list[Token]] = []
    current: list[Token] = []
    for tok in code[i + 2:]:
        if tok.kind == "punct" and tok.text in _OPEN:
            depth += 1
        elif tok.kind == "punct" and tok.text in _CLOSE:
            if depth == 0:
                break
            depth -= 1
        elif depth == 0 and tok.text == ",":
            args.append(current)
            current = []
            continue
        current.append(tok)
    args.append(current)
    percentile = args[1] if len(args) == 2 else []
    try:
        value = float(percentile[0].text) if len(percentile) == 1 \
            and percentile[0].kind == "number" else None
    except ValueError:
        value = None
    if value is None or not 0.0 <= value <= 1.0:
        raise QueryRefused(f"{code[i].text}() at {where(code[i])}: a FalkorDB server stops on "
                           "a percentile it reads as no number from 0 to 1 (NaN ended it); "
                           "write the percentile as one number literal from 0 to 1, such as "
                           "0.5")


#: Aggregates, which FalkorDB evaluates only where a projection groups rows.
_AGGREGATES = frozenset({"collect", "count", "sum", "avg", "min", "max", "stdev", "stdevp",
                         "percentilecont", "percentiledisc"})
#: What iterates a list with a body: a comprehension's ``|`` follows its list, a ``reduce()``'s
#: too; the quantifiers' ``WHERE``.
_ITERATORS = frozenset({"reduce", "any", "all", "none", "single"})


def _check_aggregate_place(shape: _Shape, i: int) -> None:
    """Refuse an aggregate (at ``code[i]``) where Cypher takes none and FalkorDB does not
    expect one: an ``UNWIND``'s list (``UNWIND count(*) AS y``) and the body of a list
    comprehension or a ``reduce()`` (``RETURN [x IN [1] | count(*)]``): each ended the server
    by SIGSEGV (4.16.3; the forty-first re-probe's P5, P6), and no valid query has one there
    (Neo4j refuses both). An aggregate over the list itself (``[x IN collect(n) | x.name]``)
    is before the bar, and stays."""
    code = shape.code
    k = shape.opening[i]
    while k is not None:
        opener = code[k]
        iterates = opener.text == "[" or (opener.text == "(" and k and code[k - 1].kind == "word"
                                          and code[k - 1].text.lower() in _ITERATORS)
        if iterates and shape.body.get(k, len(code)) < i:
            raise QueryRefused(f"{code[i].text}() at {where(code[i])}: an aggregate inside a "
                               "list's iteration (a comprehension's or reduce()'s body) is no "
                               "valid Cypher, and a FalkorDB server stops on one; aggregate "
                               "in a WITH first")
        k = shape.opening[k]
    clause = shape.clause[i]
    if clause is not None and code[clause].text.upper() == "UNWIND":
        raise QueryRefused(f"{code[i].text}() at {where(code[i])}: an aggregate in an UNWIND's "
                           "list is no valid Cypher, and a FalkorDB server stops on one; "
                           "aggregate in a WITH first")


class _Shape:
    """The brackets of a query's tokens, read once: each token's innermost open bracket, each
    open bracket's closer, and each token's nearest clause word outside the brackets around it
    (:func:`_compared`). Each call was read by scans of the whole query, so 7,220 calls of
    ``date()`` in one 64 KiB prediction took 44 s of the pytest process (the thirty-sixth
    re-probe's M1); one pass each now."""

    def __init__(self, code: list[Token]) -> None:
        self.code = code
        self.opening: list[int | None] = []
        self.closing: dict[int, int] = {}
        #: where each bracket's iterated body starts: its first ``|`` or ``WHERE`` of its own
        #: level (:func:`_check_aggregate_place`; a scan back from each aggregate to its
        #: bracket was quadratic in a text of many)
        self.body: dict[int, int] = {}
        # the nearest word of _FEEDS outside the brackets around each token
        self.clause = outside_each(code, lambda k: _feeds(code, k) is not None)
        stack: list[int] = []
        for k, tok in enumerate(code):
            self.opening.append(stack[-1] if stack else None)
            if stack and (tok.text == "|" or (tok.kind == "word" and tok.text.upper() == "WHERE")):
                self.body.setdefault(stack[-1], k)
            if tok.kind == "punct" and tok.text in _OPEN:
                stack.append(k)
            elif tok.kind == "punct" and tok.text in _CLOSE and stack:
                self.closing[stack.pop()] = k


#: Functions whose value is a plain scalar whatever temporal or point argument they are
#: given: FalkorDB 4.16 over Bolt answers ``toString()`` of a date, a duration, a local time,
#: a local date-time, their sums and a point with a string, ``distance()`` of two points with
#: a float, and an error (not a stop) for any other argument (the twenty-first re-probe's M2,
#: tests/cypher/test_cypher_twentyfirst.py). ``point.distance()`` is unknown to 4.16.
_SCALAR_OF = frozenset({"tostring", "distance"})
#: Comparison operators (one token each character): their value is a boolean or null.
_COMPARING = frozenset({"<", ">", "="})


def _scalar_argument(shape: _Shape, i: int) -> bool:
    """Whether the call at ``code[i]`` is inside the parentheses of a :data:`_SCALAR_OF`
    function and no other bracket (``toString(date(a) + duration(b))``; not
    ``toString([date()])``, a list, nor ``toString(head(...))``)."""
    code, k = shape.code, shape.opening[i]
    return k is not None and code[k].text == "(" and k >= 1 \
        and code[k - 1].kind == "word" and code[k - 1].text.lower() in _SCALAR_OF \
        and not (k >= 2 and code[k - 2].text == ".")


def _operand(shape: _Shape, i: int) -> bool:
    """Whether the call at ``code[i]`` is an operand of a comparison: followed by ``=``,
    ``<``, ``>``, ``IN`` or ``IS``, or preceded by ``<`` or ``>`` (``<=``, ``<>``...), or by
    ``=`` after a value (``)``, ``]``, a literal, ``n.x``), not after a bare name, where ``=``
    may assign (``reduce(a = date(), ...)``, ``CYPHER d=...``)."""
    code, end = shape.code, _end(shape, i)
    after = code[end + 1] if end is not None and end + 1 < len(code) else None
    if after is not None and (after.text in _COMPARING
                              or (after.kind == "word" and after.text.upper() in ("IN", "IS"))):
        return True
    before = code[i - 1] if i else None
    if before is None or before.kind != "punct" or before.text not in _COMPARING:
        return False
    if before.text != "=":
        return True
    value = code[i - 2] if i >= 2 else None
    return value is not None and (value.text in ("<", ">", ")", "]")
                                  or value.kind in ("number", "string")
                                  or (value.kind == "word" and i >= 3 and code[i - 3].text == "."))


def _end(shape: _Shape, i: int) -> int | None:
    """The index of the ``)`` that closes the call at ``shape.code[i]`` (None when
    unclosed)."""
    code, j = shape.code, i
    while j < len(code) and code[j].text != "(":
        j += 1
    return shape.closing.get(j)


def _called(code: list[Token], i: int) -> bool:
    """Whether the word at ``code[i]`` is called, as itself or as a namespace
    (``date(...)``, ``date.truncate(...)``)."""
    j = i + 1
    while j + 1 < len(code) and code[j].text == "." and code[j + 1].kind == "word":
        j += 2
    return j < len(code) and code[j].text == "("


def _accessed(shape: _Shape, i: int) -> bool:
    """Whether the call at ``code[i]`` is followed by a property access (``date().year``):
    a number reaches the reply, not the value."""
    code, end = shape.code, _end(shape, i)
    return end is not None and end + 1 < len(code) and code[end + 1].text == "."


def _name(code: list[Token], k: int) -> bool:
    """Whether the word at ``code[k]`` is certainly a name, whatever it spells: a property
    (``n.order``), a label (``n:Union``), a map key (``{where: ...}``)."""
    before = code[k - 1].text if k else ""
    after = code[k + 1].text if k + 1 < len(code) else ""
    return before in (".", ":") or (before in ("{", ",") and after == ":")


#: Words after which no operand has ended: a word spelled like one of them right before
#: ``WHERE`` or ``STARTS`` may be the keyword or a variable (``t CONTAINS where``).
_KEYWORDS = _NOT_OPERANDS | frozenset({"CONTAINS", "STARTS", "ENDS", "IS", "ASC", "DESC",
                                     "ASCENDING", "DESCENDING"})


def _value_ends(code: list[Token], j: int) -> bool:
    """Whether ``code[j]`` certainly ends an operand: a literal, a parameter, a quoted name, a
    closing bracket, a property, or a word spelled like no keyword."""
    tok = code[j]
    if tok.kind in ("string", "number", "param", "quoted"):
        return True
    if tok.kind != "word":
        return tok.text in (")", "]", "}")
    return (j > 0 and code[j - 1].text == ".") or tok.text.upper() not in _KEYWORDS


def _operator_with(code: list[Token], k: int) -> bool:
    """Whether the ``WITH`` at ``code[k]`` is the one of ``STARTS WITH`` / ``ENDS WITH`` (the
    twenty-second re-probe's M1): its ``STARTS`` follows an operand, so it is no variable
    (``... OR starts WITH date() AS d`` is a ``WITH`` clause)."""
    return k >= 2 and code[k - 1].kind == "word" \
        and code[k - 1].text.upper() in ("STARTS", "ENDS") \
        and not _name(code, k - 1) and _value_ends(code, k - 2)


def _where_clause(code: list[Token], k: int) -> bool:
    """Whether the ``WHERE`` at ``code[k]`` is certainly the clause: after a pattern's ``)``,
    a projected variable (a word spelled like no keyword, not a property), a number or a
    parameter (``LIMIT 3 WHERE``), and followed by no name's punctuation. A variable named
    ``where`` (``t CONTAINS where``: the twenty-second re-probe's form 2) is not."""
    if k == 0 or (k + 1 < len(code) and code[k + 1].text in _AFTER_NAME):
        return False
    before = code[k - 1]
    if before.kind in ("number", "param", "quoted") or before.text == ")":
        return True
    return before.kind == "word" and before.text.upper() not in _KEYWORDS \
        and not (k >= 2 and code[k - 2].text in (".", ":"))


#: What follows a word that is a name (a map key, a property, a variable), never a clause.
_AFTER_NAME = frozenset({":", ".", "=", ",", ")", "]", "}"})


def _feeds(code: list[Token], k: int) -> str | None:
    """What the token at ``code[k]`` says of a value after it: "compared" (a ``WHERE`` that is
    certainly the clause), "stop" (a word of :data:`_FEEDS` that may be a clause), None (no
    such word, or certainly a name, or the ``WITH`` of ``STARTS WITH``). Errs towards "stop":
    the twenty-second re-probe's H1 hid a ``RETURN`` behind ``n.order`` and a date was sent."""
    tok = code[k]
    if tok.kind != "word":
        return "stop" if tok.text == "|" else None
    word = tok.text.upper()
    if word not in _FEEDS or _name(code, k) or (word == "WITH" and _operator_with(code, k)):
        return None
    return "compared" if word == "WHERE" and _where_clause(code, k) else "stop"


def _compared(shape: _Shape, i: int) -> bool:
    """Whether the value at ``code[i]`` is in a ``WHERE``: the nearest word of :data:`_FEEDS`
    before it, outside the brackets around it, is certainly that clause. A subquery's value
    reaches what is outside it only through a word of :data:`_FEEDS` in it (``CALL { RETURN
    date() }`` after a ``WHERE``: its ``RETURN`` is nearer); one whose call only matches
    (``CALL { MATCH (m {d: date()}) RETURN m }``) is compared."""
    k = shape.clause[i]
    return k is not None and _feeds(shape.code, k) == "compared"
