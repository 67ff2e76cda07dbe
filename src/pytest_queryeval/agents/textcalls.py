"""Tool calls a trajectory records that no reader reads: a tool message answering a call the
trajectory does not hold, and a call written in the model's text.

Why: a harness that parses the call from the model's text (a server without a tool parser:
Hermes/Qwen ``<tool_call>{...}</tool_call>``, Llama's ``<|python_tag|>{...}``, ReAct's
``Action: run_query`` / ``Action Input: {...}``) runs it and
records the result as a tool message, but the assistant message holds no ``tool_calls``: the
salvage read no call, so a ``DELETE FROM Genre`` the tool ran passed ``write_attempts: {max:
0}`` with 0 (issue 58, the twelfth re-probe's H10). A tool message says a tool ran; when its
call cannot be found, what ran is unknown and the counts are not established. A call written
in the model's text between the tags such harnesses parse is searched as what no reader reads
is (:mod:`.sweep`): one naming a tool the plugin serves or holding a statement fails closed;
the rest of the model's text is its prose, not searched.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .statements import all_texts

#: The roles of a message answering a call (OpenAI's ``tool`` and legacy ``function``,
#: Llama's ``ipython``).
_RESULT_ROLES = frozenset({"tool", "function", "ipython"})
#: Where a call written in the model's text starts, and the tag that ends it (else the end of
#: the text): the tags chat templates and their parsers use.
_OPEN = re.compile(
    r"<(?P<tag>tool_calls?|function_calls?|functioncall|tool_use|start_function_call)>|"
    r"<function=[^>\n]{0,256}>|<\|python_tag\|>|\[TOOL_CALLS\]|<\|tool_calls?(?:_section)?_begin\|>"
    r"|<\|tool_call\|>|<\uff5ctool\u2581calls?\u2581begin\uff5c>"
    # ReAct (``Action: run_query`` then ``Action Input: {...}``), which its harness parses
    r"|(?m:^[ \t]*Action[ \t]*:)", re.IGNORECASE)
_CLOSE = {"<function=": "</function>", "<|python_tag|>": "<|eom_id|>", "Action": "Observation:"}


def _messages(data: object, depth: int = 0) -> list[tuple[int, Mapping[str, Any]]]:
    """The message objects of a trajectory (those in nested lists too, at the outer index)."""
    if isinstance(data, str):
        from .._util.boundedio import BoundedReadError, loads_json

        try:
            data = loads_json(data, 64)
        except BoundedReadError:
            return []
    out: list[tuple[int, Mapping[str, Any]]] = []
    for i, item in enumerate(data if isinstance(data, list | tuple) else ()):
        if isinstance(item, Mapping):
            out.append((i, item))
        elif isinstance(item, list | tuple) and depth < 32:
            out.extend((i, m) for _, m in _messages(item, depth + 1))
    return out


def orphan_result(data: object) -> str | None:
    """The first message of ``data`` (a trajectory's messages) answering a call the trajectory
    does not hold, located, or None: a ``tool``, ``function`` or ``ipython`` message whose
    ``tool_call_id`` no call has, when every call is answered by another already (one with a
    repeated or a lost id answers a call left unanswered, as the lenient reading pairs
    them)."""
    from collections import Counter

    made: Counter[object] = Counter()
    results: list[tuple[int, object, object]] = []
    for i, msg in _messages(data):
        calls = msg.get("tool_calls")
        for call in calls if isinstance(calls, list) else ():
            if isinstance(call, Mapping):
                made[call.get("id") if isinstance(call.get("id"), str) else None] += 1
        if isinstance(msg.get("function_call"), Mapping):
            made[None] += 1
        role = msg.get("role")
        if (role.lower() if isinstance(role, str) else role) in _RESULT_ROLES:
            results.append((i, role, msg.get("tool_call_id")))
    unmatched = []
    for i, role, ident in results:
        if isinstance(ident, str) and made[ident] > 0:
            made[ident] -= 1
        else:
            unmatched.append((i, role, ident))
    left = sum(made.values())  # calls no result answered by id: the rest pair with them
    if len(unmatched) <= left:
        return None
    i, role, ident = unmatched[left]
    named = f" {ident[:80]!r}" if isinstance(ident, str) else ""
    return (f"trajectory[{i}] (role {str(role)[:40]!r}) answers the call{named}, which no call "
            "of the trajectory makes: what its tool ran is unknown")


def encoded_call(data: object) -> str | None:
    """The first call written in an assistant message's text (between the tags a harness
    parses: :data:`_OPEN`) that names a tool the plugin serves or holds a statement, located,
    or None."""
    from .sweep import names_tool, reads_as_sql

    for i, msg in _messages(data):
        content = msg.get("content")
        if msg.get("role") != "assistant" or not isinstance(content, str):
            continue
        for match in _OPEN.finditer(content):
            tag = match.group("tag")
            close = f"</{tag}>" if tag else next(
                (v for k, v in _CLOSE.items() if match.group().strip().startswith(k)), None)
            end = content.find(close, match.end()) if close else -1
            inner = content[match.end():end if end >= 0 else len(content)]
            for text in [match.group() + inner, *all_texts(inner.strip(), 0)]:
                if names_tool(text) or reads_as_sql(text):
                    return (f"trajectory[{i}].content: a tool call written in the model's text "
                            f"at character {match.start()} ({match.group()[:40]!r}) names a "
                            f"tool or holds a statement: {' '.join(text.split())[:80]!r}")
    return None


def unread_call(data: object) -> str | None:
    """Why ``data`` (a trajectory's messages) records a call no reader reads, or None."""
    return orphan_result(data) or encoded_call(data)
