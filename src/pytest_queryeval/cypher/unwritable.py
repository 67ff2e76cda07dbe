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
from .bounds import _CLAUSES, nearest_outside
from .guard import _CLOSE, _OPEN, Token, _code, _dotted, _ends_operand, tokens, where

#: Functions whose value FalkorDB's Bolt listener cannot write: a date, a duration, a local
#: time or date-time in a reply trips an assertion in its result formatter and the server
#: dies (4.16.3; the seventh re-probe: ``RETURN date('2020-01-01')``, every later case
#: unavailable). ``datetime()`` and ``toString(date(...))`` are written.
FALKORDB_UNWRITABLE = frozenset({"date", "duration", "localtime", "localdatetime", "time"})
#: Functions whose value FalkorDB's Bolt listener writes wrong: a point is written with an
#: extra null after it (4.16), so the driver reads every later value of its row, list or map
#: one place late (the twentieth re-probe's P1: a wrong prediction passed, an honest one
#: failed). Only the call itself: ``point.distance()`` is a number.
FALKORDB_MISWRITTEN = frozenset({"point"})
#: Clause words that start what a value feeds: after ``WHERE`` it is only compared.
_FEEDS = frozenset({"WHERE", "RETURN", "WITH", "UNWIND", "ORDER", "YIELD", "|"})


def check_falkordb(query: str) -> None:
    """What a FalkorDB server (:mod:`.bolt` detects one) must not be sent beyond
    :func:`check_server`: a call of :data:`FALKORDB_UNWRITABLE` (or a function of their
    namespaces, ``date.truncate``) whose value may reach the reply: one not directly inside
    ``toString()`` nor in a ``WHERE``. Errs high: ``WITH date(...) AS d ... WHERE x > d``
    is refused too. A ``point()`` likewise, even inside ``toString()`` (errs high)."""
    code = _code(tokens(query))
    for i, tok in enumerate(code):
        word = tok.text.lower() if tok.kind == "word" else ""
        miswritten = word in FALKORDB_MISWRITTEN and i + 1 < len(code) and code[i + 1].text == "("
        if not (miswritten or word in FALKORDB_UNWRITABLE) \
                or (i and code[i - 1].text == ".") or not _called(code, i):
            continue
        if (not miswritten and i >= 2 and code[i - 1].text == "("
                and code[i - 2].text.lower() == "tostring") \
                or _compared(code, i) or _accessed(code, i):
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


def _called(code: list[Token], i: int) -> bool:
    """Whether the word at ``code[i]`` is called, as itself or as a namespace
    (``date(...)``, ``date.truncate(...)``)."""
    j = i + 1
    while j + 1 < len(code) and code[j].text == "." and code[j + 1].kind == "word":
        j += 2
    return j < len(code) and code[j].text == "("


def _accessed(code: list[Token], i: int) -> bool:
    """Whether the call at ``code[i]`` is followed by a property access (``date().year``):
    a number reaches the reply, not the value."""
    j = i
    while j < len(code) and code[j].text != "(":
        j += 1
    depth = 0
    for k in range(j, len(code)):
        if code[k].kind == "punct" and code[k].text in _OPEN:
            depth += 1
        elif code[k].kind == "punct" and code[k].text in _CLOSE:
            depth -= 1
            if depth == 0:
                return k + 1 < len(code) and code[k + 1].text == "."
    return False


def _clause(code: list[Token], k: int) -> bool:
    """Whether the word at ``code[k]`` is the clause it spells, not a name spelled like it: a
    map key (``{where: ...}``), a property or label (``n.where``, ``n:where``), a variable
    (``where.x``, ``where = ...``), a projection's name (``AS where``). The eighth re-probe's
    ``RETURN {where: date('2020-01-01')}`` passed as compared."""
    if code[k].kind != "word":
        return code[k].text == "|"
    before = code[k - 1] if k else None
    after = code[k + 1] if k + 1 < len(code) else None
    if before is None or not (_ends_operand(before) or before.text in ("*", "{")):
        return False  # RETURN where, n.where, n:where, AS where: names
    return not (after is not None and after.text in _AFTER_NAME)  # {where: ...}, {where}


#: What follows a word that is a name (a map key, a property, a variable), never a clause.
_AFTER_NAME = frozenset({":", ".", "=", ",", ")", "]", "}"})


def _subquery(code: list[Token], k: int) -> bool:
    """Whether the ``{`` at ``code[k]`` opens a subquery (``CALL {``, ``CALL (x) {``,
    ``EXISTS {``, ``COUNT {``, ``COLLECT {``), not a map: a clause word comes first in it,
    and not as a key (the twentieth re-probe's T1: ``WHERE ... CALL { RETURN date() }``
    passed as compared)."""
    after = code[k + 2] if k + 2 < len(code) else None
    return k + 1 < len(code) and code[k + 1].kind == "word" \
        and code[k + 1].text.upper() in _CLAUSES \
        and not (after is not None and after.text in _AFTER_NAME)


def _compared(code: list[Token], i: int) -> bool:
    """Whether the value at ``code[i]`` is in a ``WHERE``: the nearest word of :data:`_FEEDS`
    before it, outside the brackets around it and inside the subquery it is in, is
    ``WHERE`` (a ``WHERE`` before a subquery compares nothing of what it returns)."""
    k = nearest_outside(code, i, lambda k: code[k].text.upper() in _FEEDS and _clause(code, k),
                        stop=lambda k: code[k].text == "{" and _subquery(code, k))
    return k is not None and code[k].text.upper() == "WHERE"
