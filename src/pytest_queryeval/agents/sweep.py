"""The search of what an agent record holds outside the calls the readers understand, which
fails closed: whatever it finds, or wherever it stops, the case's counts are not established.

Why a module of its own, and why no silent bound: a record is the model's (or its harness's)
answer. The counts of an agent case are taken from the calls its ``trajectory`` or ``spans``
hold; a call held anywhere else (``actions: [{action, action_input}]``, ``sql_log: ["DELETE
..."]``, messages JSON-encoded twice, an Anthropic ``tool_use`` block, a Gemini
``functionCall`` part, a message 13 lists deep, the 1,001st key of a map) is a call no count
reads, and a count that reads none of it passes every gate with 0. So every key and every
item is searched, and the search has bounds (items, depth, characters) only as every reader
of untrusted input has: reaching one is a finding like the others, never the end of the
search with nothing found.

What is a finding (:func:`sweep`): an object shaped like a chat message or a tool call
(:func:`message_shaped`), a text naming a tool the plugin serves (``run_query``,
``mcp__db__run_query``, ``RUN_QUERY``), a text that reads as SQL (a statement keyword at its
head after blanks and comments, or a write or read keyword followed by ``FROM``, ``INTO``,
``TABLE``...), a JSON text holding any of these, or a bound reached.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .._util.boundedio import depth_exceeds
from . import lead as _lead
from .toolnames import PLUGIN_TOOLS, TOOL_ABSTAIN

#: Values (items, keys, texts) a record's search visits at most.
MAX_ITEMS = 200_000
#: Nesting of lists, objects and JSON texts searched.
MAX_DEPTH = 64
#: Characters of text searched in all (16 MiB).
MAX_TEXT = 16 * 1024 * 1024

#: Fields that make an object look like a chat message or a tool call, whatever framework
#: wrote it (the OpenAI chat and Responses APIs, LangChain's ``intermediate_steps``, an
#: Anthropic ``tool_use`` block, a tracer's events).
MESSAGE_FIELDS = frozenset({"role", "tool_calls", "function_call", "tool_call_id",
                            "function", "tool_input", "toolInput", "content", "functionCall",
                            "function_response", "functionResponse", "tool_use", "action",
                            "action_input"})
_ARGUMENT_FIELDS = frozenset({"arguments", "args", "input", "parameters", "params", "query",
                              "sql", "kwargs"})
_CALL_TYPES = re.compile(r"(?:function|tool)_?(?:call|use|result)", re.IGNORECASE)

#: A plugin tool named inside a text (``mcp__db__run_query``, ``tool.RUN_QUERY``);
#: ``abstain``, an English word, only as the whole text.
_TOOL_WORD = re.compile(
    r"(?<![A-Za-z0-9])(?:" + "|".join(t for t in PLUGIN_TOOLS if t != TOOL_ABSTAIN) +
    r")(?![A-Za-z0-9])", re.IGNORECASE)
#: What comes before a statement's head and is no statement (:mod:`.lead`).
_LEAD = _lead.LEAD
#: A table name, qualified or quoted as a dialect quotes it.
_NAME = r'(?:[A-Za-z_][\w$]*|"[^"\n]+"|`[^`\n]+`|\[[^\]\n]+\])'
_NAMES = rf"{_NAME}(?:\s*\.\s*{_NAME})*"
#: A statement's head after blanks and comments.
_SQL_HEAD = re.compile(
    _LEAD + r"(?:select|insert|update|delete|upsert|replace|create|drop|alter|truncate|"
    r"grant|revoke|attach|detach|vacuum|pragma|copy|explain|with|values|call|exec|execute|"
    r"unwind|install|load|set|prefix|construct|detach\s+delete)\b"
    # SQL's MERGE (T-SQL's without INTO); a graph's MATCH, MERGE and FOREACH are its clauses
    # with their pattern (:data:`.lead.GRAPH_CLAUSE`), searched anywhere: not ``merge (join)
    # the tables``, ``Match the names``
    r"|merge\s+(?:into\b|[\s\S]{0,2000}?\bwhen\s+(?:not\s+)?matched\b)"
    r"|remove\s+\w+\s*[.:]"
    # a read that names its table first (DuckDB's FROM-first, PostgreSQL's TABLE, DuckDB's
    # SUMMARIZE and PIVOT), anchored so that prose starting with the word is not one
    rf"|from\s+{_NAMES}\s*(?:;\s*$|$|(?:where|select|limit|order|group|join|using|qualify|"
    r"having|union)\b)"
    rf"|table\s+{_NAMES}\s*;?\s*$|summarize\s+(?:select\b|{_NAMES}\s*;?\s*$)"
    rf"|(?:un)?pivot\s+{_NAMES}\s+on\b", re.IGNORECASE)
#: A statement inside a text: a keyword followed, within :data:`_REACH` characters, by its
#: object (found in one pass over the text: a hostile text of 16 MiB costs one scan).
_SQL_WORDS = re.compile(
    r"\b(?:(?P<verb>select|insert|update|delete|replace|merge|create|drop|alter|truncate|copy|"
    r"attach|upsert)|(?P<object>from|into|table|set|view|index|database|schema|values))\b",
    re.IGNORECASE)
_REACH = 2000


def names_tool(text: str) -> bool:
    """Whether ``text`` names a tool the plugin serves."""
    return bool(_TOOL_WORD.search(text)) or text.strip().lower() == TOOL_ABSTAIN


def reads_as_sql(text: str) -> bool:
    """Whether ``text`` reads as a statement or holds one (what a harness may have run)."""
    if _SQL_HEAD.match(text) or _lead.graph_clause(text):
        return True
    from .language import parses_as_statement, unwrap

    if any(_SQL_HEAD.match(unwrap(part)) for part in text.split(";")[:64]) or \
            parses_as_statement(text):
        return True
    verb = None
    for word in _SQL_WORDS.finditer(text):
        if word.lastgroup == "verb":
            verb = word.start()
        elif verb is not None and word.start() - verb <= _REACH:
            return True
    return False


def message_shaped(value: Mapping[Any, Any]) -> bool:
    """Whether one object is shaped like a message or a tool call: a field of
    :data:`MESSAGE_FIELDS`, a ``name``/``tool``/``fn``/``toolName`` with arguments, or a
    ``type`` naming a call."""
    keys = {k for k in value if isinstance(k, str)}
    kind = value.get("type")
    return bool(keys & MESSAGE_FIELDS) or bool(
        {"name", "tool", "fn", "toolName", "tool_name", "function_name"} & keys
        and keys & _ARGUMENT_FIELDS) or (isinstance(kind, str) and bool(
            _CALL_TYPES.fullmatch(kind)))


@dataclass
class Found:
    """What a search found under one top-level place, first finding first."""

    #: The places (``'sql_log'[0]``) and what each holds, in the order found.
    findings: list[str] = field(default_factory=list)
    #: Whether an object shaped like a message or a tool call was among them (its calls can
    #: then be read leniently and counted, beside the error).
    messages: bool = False


@dataclass
class _Budget:
    items: int = MAX_ITEMS
    text: int = MAX_TEXT
    #: A bound reached (the search is over: everything past it is unsearched).
    spent: str | None = None


def sweep(value: object, where: str, budget: _Budget | None = None,
          *, texts: bool = True) -> Found:
    """Every finding under ``value`` (located from ``where``), searched to the end or to a
    bound, which is a finding too. ``texts``: whether a text at the top is read for SQL and
    tool names (an assistant's ``content`` is not: model text is not a call)."""
    budget = budget if budget is not None else _Budget()
    found = Found()
    stack: list[tuple[str, object, int, bool]] = [(where, value, 0, texts)]
    while stack and budget.spent is None:
        path, item, depth, read_text = stack.pop()
        budget.items -= 1
        if budget.items < 0 or depth > MAX_DEPTH:
            budget.spent = (f"{path}: not searched: past the {MAX_ITEMS:,} values or "
                            f"{MAX_DEPTH} levels a record's search reads")
            found.findings.append(budget.spent)
            break
        if isinstance(item, str):
            _text(found, budget, stack, path, item, depth, read_text)
        elif isinstance(item, Mapping):
            if message_shaped(item):
                found.messages = True
                found.findings.append(f"{path}: an object shaped like a message or a tool "
                                      f"call (keys {_keys(item)})")
            entries = list(item.items())[:max(budget.items, 0) + 1]  # one past: the bound
            for key, sub in reversed(entries):
                if isinstance(key, str) and (names_tool(key) or reads_as_sql(key)):
                    found.findings.append(f"{path}: the key {key[:60]!r} names a tool or "
                                          "reads as SQL")
                stack.append((f"{path}[{str(key)[:40]!r}]", sub, depth + 1, True))
        elif isinstance(item, list | tuple):
            stack.extend((f"{path}[{i}]", sub, depth + 1, True) for i, sub in
                         reversed(list(enumerate(item[:max(budget.items, 0) + 1]))))
    return found


def _text(found: Found, budget: _Budget, stack: list[tuple[str, object, int, bool]],
          path: str, text: str, depth: int, read_text: bool) -> None:
    """One text: its JSON (a text of a text too) searched, and itself read for a tool's name
    and SQL."""
    budget.text -= len(text)
    if budget.text < 0:
        budget.spent = (f"{path}: not searched: past the {MAX_TEXT:,} characters a "
                        "record's search reads")
        found.findings.append(budget.spent)
        return
    if text.lstrip()[:1] in ("{", "[", '"'):
        from .._util.boundedio import BoundedReadError, loads_json

        # not JSON (or too deep to decode): its text is read below all the same
        with contextlib.suppress(BoundedReadError):
            stack.append((f"{path}(JSON)", loads_json(text, MAX_DEPTH), depth + 1, True))
    if read_text and (names_tool(text) or reads_as_sql(text)):
        found.findings.append(f"{path}: the text {text[:80]!r} names a tool or reads as SQL")


def _keys(item: Mapping[Any, Any]) -> str:
    keys = [str(k)[:30] for k in list(item)[:6]]
    return ", ".join(keys) + (", ..." if len(item) > 6 else "")


#: Levels of a call's arguments given as an object that its readers read (a trajectory's
#: bound); the lenient reading keeps only the top texts of one nested deeper.
CALL_DEPTH = 32

#: The keys of a call in a trajectory (and of its function) its readers read; what else a
#: call holds is searched (:func:`leftovers`).
_CALL_READ = frozenset({"id", "type", "function"})
_FUNCTION_READ = frozenset({"name", "arguments"})


def leftovers(messages: object, readable: Any, depth: int = 0,
              budget: _Budget | None = None) -> list[str]:
    """What a trajectory's messages hold that its readers do not read, as findings: a
    ``content`` that is not text (an Anthropic ``tool_use`` block), a ``parts`` list (a
    Gemini ``functionCall``), a call no reader can read (``readable(call)`` is False), any
    other key of a message, a call or its function holding a finding. A message's text
    (``content``, ``reasoning_content``, ``refusal``: :data:`_PROSE`) is the model's prose and
    not searched; an empty value holds nothing.
    Messages in lists of their own are read as the lenient reading reads them."""
    budget = budget if budget is not None else _Budget()
    out: list[str] = []
    items = messages if isinstance(messages, list | tuple) else [messages]
    for i, msg in enumerate(items):
        where = f"trajectory[{i}]"
        if budget.spent is not None:
            break
        if isinstance(msg, list | tuple) and depth < MAX_DEPTH:
            out.extend(leftovers(msg, readable, depth + 1, budget))
        elif not isinstance(msg, Mapping):
            out.extend(sweep(msg, where, budget).findings)
        else:
            out.extend(_message_leftovers(msg, where, readable, budget))
    return out


def _message_leftovers(msg: Mapping[Any, Any], where: str, readable: Any,
                       budget: _Budget) -> list[str]:
    out: list[str] = []
    for key, value in msg.items():
        if _empty(value) or (isinstance(value, str) and (key in _PROSE or key in _READ_TEXT)):
            continue  # one of these that is not text is read by no reader: searched
        place = f"{where}.{str(key)[:40]}"
        if key == "tool_calls" and isinstance(value, list):
            # on any message, a user's or a tool's too, the lenient reader reads them as calls
            # (the twelfth re-probe's H13: they are counted and replayed)
            out.extend(_call_leftovers(value, place, readable, budget))
        elif key == "function_call" and readable({"function": value}):
            out.extend(_call_leftovers([{"function": value}], place, readable, budget))
        else:
            out.extend(sweep(value, place, budget).findings)
    return out


#: A message's fields its readers read as text (a role, the id of the call a tool message
#: answers, a name, what the tool ran): one that is not text (``executed_arguments: {"query":
#: "DELETE ..."}``, a ``role`` holding a call) no reader reads, and it is searched.
_READ_TEXT = frozenset({"role", "tool_call_id", "name", "executed_arguments"})

#: A message's text fields: the model's prose (its answer, its reasoning, a refusal), not
#: searched, as the model's text is never read as a call.
_PROSE = frozenset({"content", "reasoning_content", "reasoning", "refusal", "thinking"})


def _empty(value: object) -> bool:
    return value is None or (isinstance(value, str | list | tuple | dict) and not value)


def _call_leftovers(calls: list[Any], where: str, readable: Any,
                    budget: _Budget) -> list[str]:
    out: list[str] = []
    for j, call in enumerate(calls):
        place = f"{where}[{j}]"
        if not isinstance(call, Mapping) or not readable(call):
            out.extend(sweep(call, place, budget).findings
                       or [f"{place}: a tool call no reader reads"])
            continue
        for key, value in call.items():
            read = isinstance(value, Mapping) if key == "function" else \
                key in _CALL_READ and isinstance(value, str)  # an id or type not text: searched
            if not read and not _empty(value):
                out.extend(sweep(value, f"{place}.{str(key)[:40]}", budget).findings)
        function = call.get("function")
        arguments = function.get("arguments") if isinstance(function, Mapping) else None
        if isinstance(arguments, Mapping | list) and depth_exceeds(arguments, CALL_DEPTH):
            out.append(f"{place}.function.arguments: nested deeper than the {CALL_DEPTH} "
                       "levels a call's arguments are read to")
        for key, value in (function.items() if isinstance(function, Mapping) else ()):
            if key not in _FUNCTION_READ and not _empty(value):
                out.extend(sweep(value, f"{place}.function.{str(key)[:40]}", budget).findings)
    return out


def record_findings(record: Mapping[str, Any], skip: frozenset[str]
                    ) -> list[tuple[str, object, Found]]:
    """``(key, value, found)`` of each key of ``record`` outside ``skip`` whose search found
    something, every key searched with one budget (a bound reached is the last finding)."""
    budget = _Budget()
    out: list[tuple[str, object, Found]] = []
    for key, value in record.items():
        if key in skip:
            continue
        if key == "id" and isinstance(value, str):
            continue  # the case's id: it matches a case the suite names
        found = sweep(value, repr(str(key)[:60]), budget)
        if names_tool(str(key)) or reads_as_sql(str(key)):
            found.findings.insert(0, f"the key {str(key)[:60]!r} names a tool or reads as SQL")
        if found.findings:
            out.append((str(key), value, found))
        if budget.spent is not None:
            break
    return out
