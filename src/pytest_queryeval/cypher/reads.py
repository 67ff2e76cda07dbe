"""Whether a Cypher text is one read: what an agent's Cypher text that the scorer does not run
itself is judged by (issue 58, the tenth re-probe).

Why the guard's scan, and an allow-list: the agent scorer once judged such a text on its words
and passed ``PROFILE MATCH (n) DETACH DELETE n``, ``BEGIN TRANSACTION; ...`` and ``WITH 1 AS
x MATCH (n) DETACH DELETE n`` as no write. The graph sources give :func:`not_a_read` to the
scorer (``not_a_read`` of :class:`.source.LadybugSource` and :class:`.bolt.BoltSource`), so
the agents' floor reads the language through the datasource, never by importing this package.
"""

from __future__ import annotations

import re

from ..errors import QueryEvalError
from .guard import check_server, tokens, where

#: An ``EXPLAIN`` or ``PROFILE`` head, after blanks and comments.
_EXPLAINED = re.compile(r"(?:\s|//[^\n]*|/\*.*?\*/)*(?:explain|profile)\b", re.I | re.S)


def not_a_read(query: str) -> str | None:
    """Why ``query`` is not one read-only query, or None: what an agent's Cypher text that the
    scorer does not run itself (another tool's argument, a call past the replay's budget) is
    judged by. A read is what :func:`check_server` lets through (``MATCH``, ``OPTIONAL
    MATCH``, ``WITH``, ``UNWIND``, ``RETURN``, ``WHERE``, ``ORDER BY``, ``SKIP``, ``LIMIT``,
    ``UNION``, a procedure of :data:`.guard.READ_PROCEDURES`), after an ``EXPLAIN`` or ``PROFILE``
    head (``PROFILE`` runs the query); anything else, a second statement or a text it cannot
    read to the end included, is not (the agent's write attempt)."""
    text = query
    for _ in range(8):
        head = _EXPLAINED.match(text)
        if head is None:
            break
        text = text[head.end():]
    try:
        check_server(text, costs=False)
    except QueryEvalError as exc:
        return exc.reason()
    first = next((t for t in tokens(text) if t.kind != "comment"), None)
    if first is None or first.text.upper() not in _READ_STARTS:
        return (f"{first.text[:40]!r} at {where(first)} starts no read clause"
                if first is not None else "no query after its head")
    return None


#: The clauses a read query starts with (``CHECKPOINT`` alone, which the scan takes for a
#: name, is no read).
_READ_STARTS = frozenset({"MATCH", "OPTIONAL", "WITH", "UNWIND", "RETURN", "CALL"})
