"""A message's own calls, and its text with the raw copies of them taken out.

Why: a server that returns both keeps the raw ``<tool_call>{...}</tool_call>`` text in a
message's content beside the ``tool_calls`` it parsed from it (LM Studio, some
OpenAI-compatible servers), and the text-call rule (:mod:`.textcalls`) read that copy as
another call, so an honest trajectory's counts were not established (issue 58, the fifteenth
re-probe's M2). A copy is taken out only when its name and arguments are those of one of the
message's own calls, each once: a second copy, or another call, is still read.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any


def own_calls(msg: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``(name, arguments)`` of the calls a message records in its ``tool_calls``."""
    from .llmcalls import canonical

    out = []
    calls = msg.get("tool_calls")
    for call in calls if isinstance(calls, list) else ():
        function = call.get("function") if isinstance(call, Mapping) else None
        if isinstance(function, Mapping) and isinstance(function.get("name"), str):
            out.append((function["name"], canonical(function.get("arguments", "{}"))))
    return out


#: The text of a tagged call at most compared with the message's own calls.
_OWN_MAX = 65536


def without_own(text: str, own: list[tuple[str, str]]) -> str:
    """``text`` without the tagged calls (``<tool_call>{...}</tool_call>``) that are, by name
    and arguments, calls the message records in its own ``tool_calls``, each once: a server
    that returns both keeps the raw text beside the parsed call (LM Studio; issue 58, the
    fifteenth re-probe's M2), which is that call, not another."""
    from .llmcalls import canonical

    left = list(own)
    kept, pos = [], 0
    while (start := text.find("<tool_call>", pos)) >= 0:
        end = text.find("</tool_call>", start, start + _OWN_MAX)
        if end < 0:
            break
        inner = text[start + len("<tool_call>"):end]
        try:
            data = json.loads(inner)
        except ValueError:
            data = None
        pair = (data.get("name"), canonical(data.get("arguments", {}))) \
            if isinstance(data, dict) else None
        if pair in left:
            left.remove(pair)
            kept.append(text[pos:start])
        else:
            kept.append(text[pos:end + len("</tool_call>")])
        pos = end + len("</tool_call>")
    return "".join(kept) + text[pos:]
