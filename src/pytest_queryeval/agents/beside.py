"""The calls that spans given beside a trajectory add to it.

Why a module of its own: a call is the same call in both records only when it ran the same,
and what ran is compared as its arguments' JSON, not as text; the rule is the twelfth
re-probe's H11 (issue 58), kept apart from the case's counting (:mod:`.case`).
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Sequence

from .trajectory import Step, call_key

#: A run of blanks.
_BLANKS = re.compile(r"\s+")


def merged(steps: Sequence[Step], found: Sequence[Step],
           dialect: str | None = None) -> tuple[Step, ...]:
    """``steps`` with the calls of ``found`` they do not hold: the same call (by name and
    arguments asked, or by its call id: :func:`_same_id`) is counted once only when it ran
    the same; one that records it ran something else (a TOOL span's ``input.value`` that was
    a ``DELETE``) gives the trajectory's call what ran, or, when that call records a
    different run of its own, is counted beside it (issue 58, the twelfth re-probe's H11)."""
    from dataclasses import replace

    held: dict[str, deque[int]] = {}  # a queue per call: 80,000 calls took 10 s as a scan
    ids: dict[str, int | None] = {}  # a call id the trajectory holds once: its call
    for n, step in enumerate(steps):
        held.setdefault(call_key(step), deque()).append(n)
        ids[step.call_id] = None if step.call_id in ids else n
    out, extra, taken = list(steps), [], set[int]()
    for step in found:
        at = _free(held.get(call_key(step)), taken)
        if at is None:
            at = _same_id(step, steps, ids.get(step.call_id), taken, dialect)
        if at is None:
            extra.append(step)
            continue
        taken.add(at)
        mine = out[at]
        if step.executed is None or ran(step.executed) == ran(
                mine.executed if mine.executed is not None else mine.arguments_text):
            continue
        if mine.executed is None:
            out[at] = replace(mine, executed=step.executed)
        else:
            extra.append(step)
    return tuple(out + extra)


def _free(slots: deque[int] | None, taken: set[int]) -> int | None:
    """The first call of ``slots`` no call of the spans was matched to yet."""
    while slots:
        at = slots.popleft()
        if at not in taken:
            return at
    return None


def _same_id(step: Step, steps: Sequence[Step], at: int | None, taken: set[int],
             dialect: str | None) -> int | None:
    """The trajectory's call the spans' ``step`` records under the same call id, when the two
    run the same though their arguments are spelled differently: an instrumentation that
    records ``{"query": q, "limit": null}`` or the query re-spaced beside the harness's own
    ``{"query": q}`` recorded one call, which counted twice failed an honest case's
    ``tool_calls`` (issue 58, the nineteenth re-probe's M1). The trajectory's record is the one
    kept (both run the same, so the replay of either counts alike). Under the same id, a call
    whose arguments run anything else (another statement, table or value) is not merged: it
    is counted beside the trajectory's, so a merge never lowers a count."""
    if not step.call_id or at is None or at in taken or steps[at].name != step.name:
        return None
    return at if same_arguments(steps[at], step, dialect) else None


def same_arguments(one: Step, other: Step, dialect: str | None) -> bool:
    """Whether two calls' arguments run the same: every key equal, a key one leaves out null
    in the other (a default filled in), and a text differing only in blanks between the
    tokens of the datasource's SQL dialect (a blank inside a quoted text, a name or a comment
    is a difference; a text not tokenized, or of a source with no SQL dialect, is compared as
    it is)."""
    if one.arguments is None or other.arguments is None:
        return False
    for key in one.arguments.keys() | other.arguments.keys():
        mine, theirs = one.arguments.get(key), other.arguments.get(key)
        if mine != theirs and not (isinstance(mine, str) and isinstance(theirs, str)
                                   and _same_text(mine, theirs, dialect)):
            return False
    return True


def _same_text(one: str, other: str, dialect: str | None) -> bool:
    """Two texts that differ only in blanks between tokens (comments kept in the tokens), read
    by tokens only in a SQL dialect the tokenizer knows. A source with none (a graph's,
    SPARQL's) is read by other rules: a graph language's ``//`` comment ends at its line, which SQL's
    tokenizer reads as two ``/``, so a trajectory's read ``//x DETACH DELETE p`` merged the
    spans' write ``//x`` then ``DETACH DELETE p`` on the next line under one id, and the write
    the embedded graph engine ran was not counted (issue 58, the twentieth re-probe's H1). There
    two texts are the same when equal, or when their quoted parts are equal and the rest is
    equal read as :func:`_spaced` reads it."""
    if dialect is None:
        return one == other or _spaced(one.strip()) == _spaced(other.strip()) is not None
    if "".join(one.split()) != "".join(other.split()):
        return False
    from ..errors import QueryEvalError
    from ..sources.sqlguard import sql_tokens

    try:
        mine, theirs = sql_tokens(one, dialect), sql_tokens(other, dialect)
    except QueryEvalError:
        return False
    return [(t.token_type, t.text, t.comments) for t in mine] == \
        [(t.token_type, t.text, t.comments) for t in theirs]


#: A quoted text or name (its escapes in it), or a comment (``//`` to the line's end, ``/*
#: */``), whose blanks are its own: read left to right, as the engine reads them, so that an
#: apostrophe in ``// Tom's count`` opens no quote.
_QUOTED = re.compile(r"""('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|`(?:[^`]|``)*`|//[^\n]*|"""
                     r"""/\*.*?\*/)""", re.DOTALL)


def _spaced(text: str) -> tuple[str, ...] | None:
    """``text`` as a graph's (or another source's with no SQL dialect) is compared: its quoted
    parts and comments as written (a line comment's trailing blanks aside), and each run of
    blanks between them one space, or, where a line comment may stand, its line ends as
    written (:func:`~.runcopies.breaks_kept`); None when a quote is left open (it is not
    known where the text's own blanks end). A quote once refused any
    re-spacing, and an instrumentation that re-spaced ``MATCH (p {name: 'Tom Hanks'})
    RETURN p`` recorded one call twice: an honest case failed ``tool_calls`` (issue 58, the
    twenty-first re-probe's M1), and so did one whose comment held an apostrophe (``//
    Tom's count``: the twenty-second re-probe's M1)."""
    from .runcopies import breaks_kept, line_commented

    parts = _QUOTED.split(text)
    if any(q in part for part in parts[::2] for q in "'\"`"):
        return None
    commented = line_commented(text)
    return tuple((part.rstrip(" \t\r") if part.startswith("//") else part) if n % 2
                 else breaks_kept(part) if commented else _BLANKS.sub(" ", part)
                 for n, part in enumerate(parts))


def ran(text: str) -> str:
    """A call's arguments text as compared for what ran: its JSON with its keys sorted, else
    its words."""
    import json

    from .._util.boundedio import BoundedReadError, loads_json

    try:
        return json.dumps(loads_json(text, 64), sort_keys=True, ensure_ascii=False)
    except (BoundedReadError, TypeError, ValueError):
        return " ".join(text.split())
