"""OpenTelemetry's database client spans in an agent's trace: the query a span says ran on the
database, read as a call of the query tool.

Why: an agent traced by its database driver's instrumentation records each query as a span of
its own (OpenTelemetry's database semantic conventions: ``db.system.name`` or ``db.system``,
the text in ``db.query.text`` or ``db.statement``, the operation in ``db.operation.name`` or
``db.operation``), the child of the TOOL span that ran it, or of no tool at all. Searched as
any attribute, an honest read made a case gated on a count an error: its operation name
``SELECT`` reads as SQL and no call held it (issue 58, the twelfth re-probe's M5). The span's
text is what ran: the call of a TOOL span that holds the same text is the same run, read once;
any other is a ``run_query`` call of its own, replayed as every call is (a read counted in
``queries_executed`` and ``rows_read``, a write refused and counted). The operation (and the
query's summary) is the name of what ran, not a statement: not searched when it is a name;
where it names a write that the text does
not start with (``DELETE`` beside ``SELECT 1``), it is judged beside the text, so a write the
span names is never read as none. A database span with no text says a query ran without
saying which: it is searched as before, and its operation name leaves the counts unestablished.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from .language import HEADS, head_word
from .toolnames import TOOL_QUERY

#: Where a database span names its database system, its text and its operation (the current
#: semantic conventions first, then those before 1.26).
DB_SYSTEM = ("db.system.name", "db.system")
DB_TEXT = ("db.query.text", "db.statement")
DB_OPERATION = ("db.operation.name", "db.operation")
#: The attributes of a database span read as a call that name what ran without being it (its
#: operation, its summary ``SELECT Genre``): not searched when they are names
#: (:func:`described`).
DESCRIBED = (*DB_OPERATION, "db.query.summary")
#: A name: a word, then at most seven names of what it ran on (``SELECT chinook.Genre``).
_NAMES = re.compile(r"\s*[A-Za-z_][\w.$]*(?:\s+[\w.$\"`\[\]-]+){0,7}\s*")
#: Words that make a statement of a name's rest (``SELECT; DELETE``, ``DELETE FROM Genre``).
_CLAUSE_WORDS = re.compile(r"\b(?:from|into|set|where|values|join|table|using|select|delete|"
                           r"insert|update|drop|create|alter|truncate|merge)\b", re.IGNORECASE)
#: The argument of the call that carries a write the operation names and the text does not.
OPERATION_ARGUMENT = "db.operation.name"
#: Operations that read, or name no statement (``EXECUTE``, ``CALL``: a procedure's run, the
#: text says what).
_NOT_WRITES = frozenset({"select", "with", "values", "table", "from", "show", "describe",
                         "desc", "explain", "summarize", "pivot", "unpivot", "execute", "exec",
                         "call"})


def _text(attrs: Mapping[str, Any], keys: tuple[str, ...]) -> str | None:
    return next((attrs[k] for k in keys if isinstance(attrs.get(k), str) and attrs[k].strip()),
                None)


def db_text(attrs: Mapping[str, Any], kind: str) -> str | None:
    """The query a database span ran (its flat ``attrs``, its OpenInference ``kind``), or None
    when it is no such span: no OpenInference kind (an instrumented driver writes none), a
    database system named, and a text."""
    if kind or _text(attrs, DB_SYSTEM) is None:
        return None
    return _text(attrs, DB_TEXT)


def described(attrs: Mapping[str, Any]) -> tuple[str, ...]:
    """The keys of :data:`DESCRIBED` a database span's ``attrs`` hold a name under (one word
    and the names of what it ran on): not searched as statements. Any other value
    (``SELECT; DELETE FROM Genre``) is searched as every attribute is."""
    out = []
    for key in DESCRIBED:
        value = attrs.get(key)
        if isinstance(value, str) and _NAMES.fullmatch(value) and \
                not _CLAUSE_WORDS.search(value.split(maxsplit=1)[1] if len(value.split()) > 1
                                         else ""):
            out.append(key)
    return tuple(out)


def _written(attrs: Mapping[str, Any], text: str) -> str | None:
    """The operation the span names (or its summary's) when it is a write its text does not
    start with."""
    for value in (_text(attrs, DB_OPERATION), _text(attrs, ("db.query.summary",))):
        word = value.split()[0].lower() if value and value.split() else ""
        if word in HEADS and word not in _NOT_WRITES and head_word(text) != word:
            return value
    return None


def db_messages(spans: Sequence[tuple[int, Mapping[str, Any], Mapping[str, Any]]],
                known: Counter[str]) -> list[dict[str, Any]]:
    """The messages of the database spans ``(n, span, flat attributes)`` no counted call ran:
    each a ``run_query`` call of the span's text and the tool message answering it. A span
    whose text is one of ``known`` (the counted calls' texts, blanks aside, each taken once)
    is that call's run."""
    out: list[dict[str, Any]] = []
    for n, span, attrs in spans:
        text = db_text(attrs, "")
        if text is None:
            continue
        plain = " ".join(text.split())
        operation = _written(attrs, text)
        if operation is None and known[plain] > 0:
            known[plain] -= 1
            continue
        arguments: dict[str, str] = {"query": text}
        if operation is not None:
            arguments[OPERATION_ARGUMENT] = operation
        call_id = str(span.get("spanId") or span.get("span_id") or f"db{n}")[:256]
        out.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": call_id, "type": "function", "function": {
                "name": TOOL_QUERY, "arguments": json.dumps(arguments, ensure_ascii=False)}}]})
        out.append({"role": "tool", "tool_call_id": call_id, "content": ""})
    return out
