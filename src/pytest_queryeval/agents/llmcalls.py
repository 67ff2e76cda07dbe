"""The tool calls an OpenInference LLM span records, in each form the conventions give them,
and the ``llm.*`` keys of a span that hold a call no reader reads.

Why a module of its own: the span reader (:mod:`.spans`) turns these calls into an assistant
message, and its search for queries no counted call holds must search every ``llm.*`` key
naming a call that is not read as one (the twelfth re-probe's H3: a call in
``message.function_call_name`` or ``llm.function_call`` was neither read nor searched, and a
``DELETE FROM Genre`` in it passed ``write_attempts: {max: 0}``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

#: ``llm.output_messages.<i>.message.tool_calls.<j>.tool_call.<field>``: the tool calls form.
OUT_CALL = re.compile(
    r"llm\.output_messages\.(\d+)\.message\.tool_calls\.(\d+)\.tool_call\.(.+)")
#: ``llm.output_messages.<i>.message.function_call_{name,arguments_json}``: the legacy
#: function-call form of one output message.
OUT_FUNCTION = re.compile(
    r"llm\.output_messages\.(\d+)\.message\.function_call_(name|arguments_json)")
#: ``llm.function_call``: JSON ``{"name": ..., "arguments": ...}`` of the span's call.
FUNCTION_CALL = "llm.function_call"
_OUT_CONTENT = re.compile(r"llm\.output_messages\.(\d+)\.message\.content")
#: An ``llm.*`` key naming a call (a tool call or a function call, asked or in the history).
_CALL_KEY = re.compile(r"function_call|tool_call", re.IGNORECASE)
#: The call a key of a message's call belongs to (its prefix) and the field it holds.
_CALL_FIELD = re.compile(
    r"(llm\.\w+\.\d+\.message\.(?:tool_calls\.\d+\.tool_call\.|function_call_))(.+)")
#: The fields of a ``tool_call`` :func:`llm_calls` reads; another (``tool_call.name``, an
#: exporter's own spelling) is not read as the call's and is searched (the thirteenth
#: re-probe's H5: its ``DELETE`` was dropped, the call read with no name and ``{}``).
_CALL_READ = frozenset({"id", "function.name", "function.arguments"})


#: Levels of nested attributes flattened into dotted keys (``{"llm": {"output_messages":
#: [...]}}`` is ``llm.output_messages.0...``, as some exporters nest them).
FLAT_DEPTH = 12


def flat_attributes(attrs: dict[str, Any]) -> dict[str, Any]:
    """``attrs`` with every nested mapping or list also under its dotted keys (the flat keys
    as given win), and an ``llm.*`` value written as JSON text of an object or a list (an
    exporter that serialises ``llm.output_messages`` or a ``tool_call`` to a string) read as
    that object: its calls are read, not skipped (the twelfth re-probe's H3)."""
    extra: dict[str, Any] = {}

    def walk(prefix: str, value: object, depth: int) -> None:
        if isinstance(value, str) and prefix.startswith("llm.") and \
                value.lstrip()[:1] in ("{", "["):
            from .._util.boundedio import BoundedReadError, loads_json

            try:
                value = loads_json(value, FLAT_DEPTH * 2)
            except BoundedReadError:
                return
        items = value.items() if isinstance(value, Mapping) else \
            enumerate(value) if isinstance(value, list) else None
        if items is None or depth > FLAT_DEPTH:
            return
        for key, item in items:
            dotted = f"{prefix}.{key}"
            extra.setdefault(dotted, item)
            walk(dotted, item, depth + 1)

    for key, value in attrs.items():
        walk(key, value, 0)
    return {**extra, **attrs} if extra else attrs


def llm_calls(attrs: Mapping[str, Any], n: int) -> tuple[dict[str, Any] | None, set[str]]:
    """The assistant message of an LLM span's calls (None: it records none), and the keys
    read as calls: its ``tool_calls`` (:data:`OUT_CALL`), its legacy function calls
    (:data:`OUT_FUNCTION`) and ``llm.function_call`` when it is ``{name, arguments}``."""
    slots: dict[tuple[int, int], dict[str, Any]] = {}
    content: str | None = None
    read: set[str] = set()
    for key, value in attrs.items():
        call, function = OUT_CALL.fullmatch(key), OUT_FUNCTION.fullmatch(key)
        if call:
            slots.setdefault((int(call.group(1)), int(call.group(2))), {})[call.group(3)] = value
            if call.group(3) not in _CALL_READ:
                continue  # ``tool_call.name``, ``tool_call.arguments``: searched, never skipped
        elif function:
            field = "function.name" if function.group(2) == "name" else "function.arguments"
            slots.setdefault((int(function.group(1)), -1), {})[field] = value
        elif _OUT_CONTENT.fullmatch(key) and isinstance(value, str):
            content = value
        else:
            continue
        read.add(key)
    given = _function_call(attrs.get(FUNCTION_CALL))
    calls = [_call(fields, n, i, j) for (i, j), fields in sorted(slots.items())]
    if given is not None:
        read.add(FUNCTION_CALL)
        same = any(c["function"]["name"] == given["name"] and
                   canonical(c["function"]["arguments"]) == canonical(given["arguments"])
                   for c in calls)  # the same call recorded in both forms is one call
        if not same:
            calls.append(_call({"function.name": given["name"],
                                "function.arguments": given["arguments"]}, n, -1, -1))
    if not calls:
        return None, read
    return {"role": "assistant", "content": content, "tool_calls": calls}, read


def _call(fields: Mapping[str, Any], n: int, i: int, j: int) -> dict[str, Any]:
    arguments = fields.get("function.arguments", "{}")
    return {"id": str(fields.get("id") or f"span{n}_call_{i}_{j}"), "type": "function",
            "function": {"name": str(fields.get("function.name", "")),
                         "arguments": arguments if isinstance(arguments, str)
                         else json.dumps(arguments)}}


def _function_call(value: object) -> dict[str, Any] | None:
    """``llm.function_call`` as ``{name, arguments}`` (JSON text or an object), or None when it
    is not one (then it is searched, never skipped)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return None
    if not isinstance(value, Mapping) or not isinstance(value.get("name"), str):
        return None
    arguments = value.get("arguments", "{}")
    return {"name": value["name"], "arguments": arguments if isinstance(arguments, str)
            else json.dumps(arguments)}


def canonical(arguments: object) -> str:
    """Arguments as one text however spaced (JSON read and written back)."""
    if isinstance(arguments, str):
        try:
            return json.dumps(json.loads(arguments), sort_keys=True, default=str)
        except ValueError:
            return " ".join(arguments.split())
    return json.dumps(arguments, sort_keys=True, default=str)


def unread_call_keys(attrs: Mapping[str, Any], kind: str, counted: Iterable[tuple[str, str]],
                     named: object = None) -> tuple[list[str], str | None]:
    """The ``llm.*`` keys of a span naming a call (``function_call``, ``tool_call``) that no
    reader reads as one, to search (fail closed, never skipped): on an LLM span all but those
    :func:`llm_calls` reads, on any other span all. Of a call in the prompt's history
    (``llm.input_messages...``), nothing when it is the same call, by name and arguments, as
    one of ``counted``; of another tool than a query tool, only arguments holding a
    statement (:func:`~.statements.loose_queries`: its prose is its call's, as a counted
    call's is). Beside them, a finding when one such call is of a tool that runs code
    (:func:`~.codetools.runs_code`), or when ``named`` (the name of a span of another kind
    than LLM that is read as no call: a CHAIN named ``python``) is such a tool's: what its
    code ran is not known; and when an LLM span's call has no name (the thirteenth re-probe's
    H5): which tool it ran is not known."""
    from .codetools import code_tool, runs_code
    from .statements import loose_queries, query_tool

    message, read = llm_calls(attrs, 0) if kind == "LLM" else (None, set())
    known = {(name, canonical(arguments)) for name, arguments in counted}
    out: list[str] = []
    word = code_tool(named) if isinstance(named, str) and kind != "LLM" else None
    code = None if word is None else \
        f"a span named after a tool that runs code (its name holds {word!r})"
    nameless = next((c["id"] for c in (message or {}).get("tool_calls", ())
                     if not c["function"]["name"].strip()), None)
    if code is None and nameless is not None:  # what it ran is unknown, never nothing
        code = f"a call with no name ({nameless[:60]!r}: no tool_call.function.name)"
    for key in attrs:
        text = str(key)
        if not text.startswith("llm.") or not _CALL_KEY.search(text) or text in read or \
                (isinstance(attrs[key], Mapping | list) and f"{text}.0" in attrs) or \
                (isinstance(attrs[key], Mapping) and any(f"{text}.{k}" in attrs
                                                         for k in attrs[key])):
            continue  # read, or a container whose items are judged each
        call = _CALL_FIELD.fullmatch(text)
        name, arguments = _call_of(attrs, call.group(1)) if call else (None, None)
        if isinstance(name, str) and (name, canonical(arguments)) in known:
            continue  # the same call as a counted one
        why = runs_code(name, arguments) if isinstance(name, str) else None
        if why is not None and code is None:
            code = (f"{call.group(1) if call else text} is a call of {str(name)[:40]!r}, a tool "
                    f"that runs code ({why})")
        if call is not None and text.startswith("llm.input_messages.") and \
                isinstance(name, str) and not query_tool(name) and (
                call.group(2) not in ("function.arguments", "arguments_json")
                or not loose_queries(name, arguments if isinstance(arguments, str)
                                     else json.dumps(arguments, default=str))):
            continue  # another tool's call in the history: its prose is its call's
        out.append(text)
    return out, code


def _call_of(attrs: Mapping[str, Any], prefix: str) -> tuple[object, object]:
    """The name and the arguments of the call whose keys start with ``prefix``."""
    name = attrs.get(prefix + "function.name", attrs.get(prefix + "name"))
    arguments = attrs.get(prefix + "function.arguments", attrs.get(prefix + "arguments_json"))
    return name, "{}" if arguments is None else arguments
