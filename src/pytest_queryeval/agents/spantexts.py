"""The texts of span values and of calls that the span readers compare and search: a call's
arguments a count judges, and the strings of a value with the JSON inside them read.

Why a module of its own: both :mod:`.spans` (what a database span ran against the calls
counted) and its search for queries no reader reads take them, and :mod:`.spans` had grown
past the size the house keeps a module to.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping
from typing import Any

#: A tool message's field holding the arguments the tool ran, when they differ from the
#: call's (spans record both: the LLM span what was asked, the TOOL span what ran).
EXECUTED = "executed_arguments"
#: Levels of a span's values (and JSON in them) read for queries; past them, the counts are
#: not established.
TEXT_DEPTH = 32


def arguments(messages: list[Any]) -> list[str]:
    """The arguments of the calls ``messages`` hold that a count judges (a query tool's:
    ``run_query``, ``execute_sql``; another tool's arguments are not read as a query, so a
    text there is not counted), and what their tools ran."""
    from .statements import loose_queries, query_tool

    out: list[str] = []
    for message in messages:
        if not isinstance(message, Mapping):
            continue
        for call in message.get("tool_calls") or ():
            function = call.get("function") if isinstance(call, Mapping) else None
            if not (isinstance(function, Mapping) and isinstance(function.get("arguments"), str)
                    and isinstance(function.get("name"), str)):
                continue
            if query_tool(function["name"]):
                out.append(function["arguments"])
            else:  # what is judged of another tool's arguments (a statement-named one)
                out.extend(loose_queries(function["name"], function["arguments"]))
        if isinstance(message.get(EXECUTED), str):
            out.append(message[EXECUTED])
    return out


def strings(value: object, budget: list[int], depth: int = 0) -> list[str]:
    """The texts of ``value`` within ``budget``; a JSON text is its texts (a query inside
    the arguments' JSON is that query), one that cannot be read is itself."""
    budget[0] -= 1
    if budget[0] <= 0 or depth > TEXT_DEPTH:
        budget[0] = 0
        return []
    if isinstance(value, str):
        if value.lstrip()[:1] in ("{", "[", '"'):
            with contextlib.suppress(ValueError, RecursionError):
                return strings(json.loads(value), budget, depth + 1)
        return [value]
    if isinstance(value, Mapping):
        value = list(value.values())
    if isinstance(value, list | tuple):
        return [t for v in value for t in strings(v, budget, depth + 1)]
    return []
