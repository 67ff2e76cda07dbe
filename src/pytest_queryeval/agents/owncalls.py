"""A message's own calls, and its text with the raw copies of them taken out.

Why: a server that returns both keeps the raw ``<tool_call>{...}</tool_call>`` text in a
message's content beside the ``tool_calls`` it parsed from it (LM Studio, some
OpenAI-compatible servers), and the text-call rule (:mod:`.textcalls`) read that copy as
another call, so an honest trajectory's counts were not established (issue 58, the fifteenth
re-probe's M2). A copy is taken out only when its name and arguments are those of one of the
message's own calls, each once: a second copy, or another call, is still read. A copy is
only a call's own when it holds nothing else (the sixteenth re-probe's H5): a duplicate key at
any level (``json.loads`` keeps the last, so ``{"arguments": {<DELETE>}, "arguments": {<own>}}``
read as the own call), or a key a call does not have (``"then": "DELETE ..."``), makes it
another text, which is read. The same rule reads Mistral's ``[TOOL_CALLS][{...}]``, Llama
3.x's bare ``{"name": ..., "parameters": {...}}`` and the tag in capitals (the sixteenth
re-probe's M1, L2: an honest message keeping them beside its parsed call errored).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

#: The keys a tagged call's object may hold to be a copy of a recorded call (Llama 3.x names
#: the arguments ``parameters``; one of the two, not both).
_CALL_KEYS = frozenset({"name", "arguments", "parameters", "id", "type"})


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object's keys, refused when one is repeated: which one a reader keeps is its own."""
    out = dict(pairs)
    if len(out) != len(pairs):
        raise ValueError("a repeated key")
    return out


def _arguments(arguments: object) -> str | None:
    """Arguments as one text (:func:`.llmcalls.canonical`), or None when a JSON text of them
    repeats a key at any level (what it asks is not one thing)."""
    from .llmcalls import canonical

    if isinstance(arguments, str):
        try:
            json.loads(arguments, object_pairs_hook=_unique)
        except RecursionError:
            return None
        except ValueError:
            try:  # not JSON at all is compared as text; JSON with a repeated key is refused
                json.loads(arguments)
            except (ValueError, RecursionError):
                return canonical(arguments)
            return None
    return canonical(arguments)


def own_calls(msg: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``(name, arguments)`` of the calls a message records in its ``tool_calls``."""
    out = []
    calls = msg.get("tool_calls")
    for call in calls if isinstance(calls, list) else ():
        function = call.get("function") if isinstance(call, Mapping) else None
        if isinstance(function, Mapping) and isinstance(function.get("name"), str):
            arguments = _arguments(function.get("arguments", "{}"))
            if arguments is not None:
                out.append((function["name"], arguments))
    return out


def _tagged(inner: str) -> tuple[str, str] | None:
    """The ``(name, arguments)`` of a tag's text when it is a call's object and nothing else:
    no repeated key at any level, no key a call does not have."""
    try:
        data = json.loads(inner, object_pairs_hook=_unique)
    except (ValueError, RecursionError):
        return None
    return _call(data)


def _call(data: object) -> tuple[str, str] | None:
    """The ``(name, arguments)`` of a call's object that holds nothing else."""
    if not isinstance(data, dict) or not set(data) <= _CALL_KEYS or \
            not isinstance(data.get("name"), str) or {"arguments", "parameters"} <= set(data):
        return None
    arguments = _arguments(data.get("arguments", data.get("parameters", {})))
    return None if arguments is None else (data["name"], arguments)


#: The text of a tagged call at most compared with the message's own calls.
_OWN_MAX = 65536


def without_own(text: str, own: list[tuple[str, str]]) -> str:
    """``text`` without the raw copies of the calls the message records in its own
    ``tool_calls`` (by name and arguments, each once): a server that returns both keeps the
    raw text beside the parsed call (LM Studio; issue 58, the fifteenth re-probe's M2), which
    is that call, not another. The copies: a tagged call (``<tool_call>{...}</tool_call>``, in
    any case), Mistral's ``[TOOL_CALLS][{...}, ...]`` (every call of its list the message's
    own) and Llama 3.x's bare ``{"name": ..., "parameters": {...}}`` as the whole text (the
    sixteenth re-probe's M1, L2); each copy only a call's object holding nothing else."""
    left = list(own)
    text = _without_bare(text, left)
    text = _without_mistral(text, left)
    low = text.lower() if len(text.lower()) == len(text) else text
    kept, pos = [], 0
    while (start := low.find("<tool_call>", pos)) >= 0:
        end = low.find("</tool_call>", start, start + _OWN_MAX)
        if end < 0:
            break
        pair = _tagged(text[start + len("<tool_call>"):end])
        if pair is not None and pair in left:
            left.remove(pair)
            kept.append(text[pos:start])
        else:
            kept.append(text[pos:end + len("</tool_call>")])
        pos = end + len("</tool_call>")
    return "".join(kept) + text[pos:]


def _without_bare(text: str, left: list[tuple[str, str]]) -> str:
    """``text`` empty when the whole of it is one of the ``left`` calls' objects (Llama's
    bare JSON), the call taken from ``left``; else ``text``."""
    if len(text) > _OWN_MAX or text.lstrip()[:1] != "{":
        return text
    pair = _tagged(text.strip())
    if pair is None or pair not in left:
        return text
    left.remove(pair)
    return ""


#: Mistral's mark before its list of calls.
_MISTRAL = "[tool_calls]"


def _without_mistral(text: str, left: list[tuple[str, str]]) -> str:
    """``text`` without Mistral's ``[TOOL_CALLS][...]`` when every call of its list is one of
    the ``left`` calls (each taken from ``left``); else ``text``. Only the first such mark is
    read: a second is read as another call."""
    start = text[:_OWN_MAX].lower().find(_MISTRAL)
    if start < 0:
        return text
    at = start + len(_MISTRAL)
    at += len(text[at:at + 64]) - len(text[at:at + 64].lstrip())
    try:
        data, end = json.JSONDecoder(object_pairs_hook=_unique).raw_decode(
            text[:at + _OWN_MAX], at)
    except (ValueError, RecursionError):
        return text
    pairs = [_call(item) for item in data] if isinstance(data, list) and data else [None]
    rest = list(left)
    for pair in pairs:
        if pair is None or pair not in rest:
            return text
        rest.remove(pair)
    left[:] = rest
    return text[:start] + text[end:]
