"""A trajectory read from OpenInference spans (OpenTelemetry traces of an agent), for agents
that are traced rather than asked: the envelope's ``spans`` instead of its ``trajectory``.

Why: an agent instrumented with OpenInference (Arize Phoenix, LangChain, LlamaIndex, the
OpenAI SDK instrumentors) already records every tool call it made; asking its owner to
rebuild the OpenAI message list by hand would lose the calls the rebuild forgets.

Read, per the OpenInference semantic conventions (spec/tool_calling and
spec/semantic_conventions of Arize-ai/openinference):

* ``LLM`` spans: ``llm.output_messages.<i>.message.tool_calls.<j>.tool_call.{id,
  function.name, function.arguments}``, ``...message.function_call_{name,arguments_json}``
  and ``llm.function_call`` become an assistant message's tool calls (:mod:`.llmcalls`);
* ``TOOL`` spans (the kind in any case: ``tool``): ``tool.name`` (or
  ``tool_call.function.name``, ``gen_ai.tool.name``), the arguments
  (``tool_call.function.arguments``, ``gen_ai.tool.call.arguments``, ``input.value``, then
  ``tool.parameters``, often the tool's schema), ``output.value`` (the result) and, when
  set, ``tool_call.id`` (or ``gen_ai.tool.call.id``): the result answers that call, else
  the earliest unanswered call of that name; a TOOL span no LLM span asked for becomes a
  call of its own. Its arguments are what ran: where they differ from those the
  LLM span asked, the tool message carries them (:data:`EXECUTED`) and the counts replay
  what ran. A span naming a tool (any of the names above) or whose
  ``gen_ai.operation.name`` is ``execute_tool`` is a TOOL span whatever its kind, and so is a
  span with no kind whose own ``name`` is a tool the plugin serves (``run_query``); nested
  attributes (``{"llm": {"output_messages": [...]}}``) are read as their dotted keys.

Spans may come as OTLP JSON (``{"resourceSpans": [{"scopeSpans": [{"spans": [...]}]}]}``,
attributes as ``[{"key", "value": {"stringValue": ...}}]``) or as a list of span objects
with ``attributes`` as a flat mapping (a Phoenix export); they are taken in the order of
their start time. Bounded like a trajectory: past :data:`MAX_SPANS` spans they are refused.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Collection, Mapping
from typing import Any

from .dbspans import db_messages, db_text, described
from .llmcalls import flat_attributes as _flat
from .llmcalls import llm_calls, unread_call_keys
from .runcopies import RunCopies, lined
from .spantexts import EXECUTED, TEXT_DEPTH
from .spantexts import arguments as _arguments
from .spantexts import strings as _strings
from .toolnames import named_tool

#: Spans read at most (each becomes at most a message or two; a trajectory holds 2,000).
MAX_SPANS = 2000


class TrajectoryError(ValueError):
    """Spans that are not read (the trajectory module reports it as its own refusal)."""


def spans_to_messages(data: object) -> list[dict[str, Any]]:
    """The OpenAI-shaped messages of the tool calls the spans record."""
    spans = _spans(data)
    if len(spans) > MAX_SPANS:
        raise TrajectoryError(f"spans: {len(spans):,} spans, over the {MAX_SPANS:,} read")
    spans.sort(key=lambda s: _start(s))
    messages: list[dict[str, Any]] = []
    pending: list[tuple[str, str, str]] = []  # (call id, name, arguments) not yet answered
    named: list[tuple[int, Mapping[str, Any], dict[str, Any]]] = []
    database: list[tuple[int, Mapping[str, Any], dict[str, Any]]] = []
    for n, span in enumerate(spans):
        attrs = _flat(_attributes(span, n))
        kind = _kind(attrs)
        if kind == "LLM":
            message = llm_calls(attrs, n)[0]
            if message is not None:
                messages.append(message)
                pending.extend((c["id"], c["function"]["name"], c["function"]["arguments"])
                               for c in message["tool_calls"])
        if kind == "TOOL" or _first(attrs, _TOOL_NAME) is not None \
                or str(attrs.get("gen_ai.operation.name", "")).lower() == "execute_tool":
            messages.extend(_tool_messages(span, attrs, n, pending))
        elif named_tool(span.get("name")) is not None:
            named.append((n, span, attrs))
        elif db_text(attrs, kind) is not None:
            database.append((n, span, attrs))
    used: set[object] = set()
    for n, span, attrs in named:
        if not _wraps(span, attrs, messages, used):
            tool = str(named_tool(span.get("name")))
            messages.extend(_tool_messages(span, attrs, n, pending, tool))
    if database:  # what a driver's span says ran, unless a counted call ran it (:mod:`.dbspans`)
        ran = Counter(" ".join(t.split()) for t in _strings(_arguments(messages), [_SPAN_TEXTS]))
        messages.extend(db_messages(database, ran))
    return messages


def _kind(attrs: Mapping[str, Any]) -> str:
    """The span's OpenInference kind, upper case (``?`` for one that is not a text)."""
    kind = attrs.get("openinference.span.kind")
    if kind is None:
        return ""
    return kind.strip().upper() if isinstance(kind, str) else "?"


def _wraps(span: Mapping[str, Any], attrs: Mapping[str, Any],
           messages: list[dict[str, Any]], used: set[object]) -> bool:
    """Whether a span that is not a TOOL span, named after a plugin tool (a CHAIN wrapping
    the TOOL span, as a tracer names a span after the function it wraps), records a call the
    TOOL spans record already with the same arguments: then it is that call, not read twice.
    Any other such span, whatever its kind (CHAIN, RETRIEVER, LLM, none, ``["TOOL"]``), is
    the named tool's call. Each call is wrapped once (``used``: the calls taken)."""
    tool = named_tool(span.get("name"))
    ran = _first(attrs, _TOOL_ARGUMENTS)
    ran = ran if ran is None or isinstance(ran, str) else json.dumps(ran)
    for n, message in enumerate(messages):
        executed = message.get(EXECUTED)
        if n not in used and ran is not None and isinstance(executed, str) \
                and _same_arguments(ran, executed):
            used.add(n)
            return True
        for j, call in enumerate(message.get("tool_calls") or ()):
            function = call["function"]
            if (n, j) not in used and named_tool(function["name"]) == tool and (
                    ran is None or _same_arguments(ran, function["arguments"])):
                used.add((n, j))
                return True
    return False


#: Where a TOOL span names the tool it ran, its call's id and its arguments, first found
#: first: OpenInference's ``tool.*`` and ``tool_call.*`` attributes (a span of the tool call
#: itself: ``tool_call.function.name``), then OpenTelemetry's GenAI conventions
#: (``gen_ai.tool.*``). The call's input (``input.value``...) is its arguments before
#: ``tool.parameters``, which OpenInference defines as the tool's parameters: an
#: instrumentor writes the tool's JSON schema there (the twelfth re-probe's H2); the keys not
#: taken are searched (:func:`unread_queries`).
_TOOL_NAME = ("tool.name", "tool_call.function.name", "gen_ai.tool.name")
_TOOL_CALL_ID = ("tool_call.id", "gen_ai.tool.call.id")
_TOOL_ARGUMENTS = ("tool_call.function.arguments", "gen_ai.tool.call.arguments", "input.value",
                   "tool.parameters")


def _first(attrs: Mapping[str, Any], keys: tuple[str, ...]) -> Any:
    """The value of the first of ``keys`` ``attrs`` sets (not None, not empty text); of
    :data:`_TOOL_ARGUMENTS`, the key :func:`arguments_key` takes."""
    if keys is _TOOL_ARGUMENTS:
        key = arguments_key(attrs)
        return None if key is None else attrs[key]
    return next((attrs[k] for k in keys if attrs.get(k) not in (None, "")), None)


def arguments_key(attrs: Mapping[str, Any]) -> str | None:
    """The key of :data:`_TOOL_ARGUMENTS` taken as a TOOL span's arguments: the first that
    holds more than an empty object (``"{}"`` beside the real input is no input), else the
    first set at all."""
    given = [k for k in _TOOL_ARGUMENTS if attrs.get(k) not in (None, "")]
    return next((k for k in given if attrs[k] not in ({}, "{}")), given[0] if given else None)


def _tool_messages(span: Mapping[str, Any], attrs: Mapping[str, Any], n: int,
                   pending: list[tuple[str, str, str]], tool: str | None = None
                   ) -> list[dict[str, Any]]:
    """A TOOL span (or any span naming its ``tool.name``) as the tool message answering the
    call it ran, and the call itself when no LLM span asked for it. The arguments it records
    are what ran: where they differ from what the LLM span asked, the tool message carries
    them (:data:`EXECUTED`) and what ran is counted."""
    name = tool or str(_first(attrs, _TOOL_NAME) or span.get("name") or "")
    call_id = _first(attrs, _TOOL_CALL_ID)
    match = next((p for p in pending if p[0] == call_id), None) if call_id else \
        next((p for p in pending if p[1] == name), None)
    ran = _first(attrs, _TOOL_ARGUMENTS)
    if ran is not None and not isinstance(ran, str):
        ran = json.dumps(ran)
    out: list[dict[str, Any]] = []
    if match is None:
        call_id = str(call_id or span.get("spanId") or span.get("span_id") or f"span{n}")
        out.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": call_id, "type": "function",
             "function": {"name": name, "arguments": "{}" if ran is None else ran}}]})
    else:
        pending.remove(match)
        call_id = match[0]
    output = attrs.get("output.value", "")
    message = {"role": "tool", "tool_call_id": str(call_id),
               "content": output if isinstance(output, str) else json.dumps(output)}
    if match is not None and ran and not _same_arguments(ran, match[2]):
        message[EXECUTED] = ran
    out.append(message)
    return out


def _same_arguments(ran: str, asked: str) -> bool:
    """Whether a TOOL span's arguments are those the LLM span asked (as JSON, however
    spaced; a bare text is the same when it is the asked call's only text)."""
    try:
        parsed: object = json.loads(ran)
    except ValueError:
        parsed = ran
    try:
        wanted: object = json.loads(asked)
    except ValueError:
        wanted = asked
    if parsed == wanted:
        return True
    return isinstance(parsed, str) and isinstance(wanted, Mapping) and \
        list(wanted.values()) == [parsed]


#: Levels of an OTLP value read (as attributes are flattened: :mod:`.llmcalls`).
_FLAT_DEPTH = 12


def _spans(data: object) -> list[Mapping[str, Any]]:
    if isinstance(data, Mapping) and "resourceSpans" in data:
        out: list[Mapping[str, Any]] = []
        for resource in _list(data["resourceSpans"], "resourceSpans"):
            for name in _SCOPES:  # OTLP's name before 1.0 too: an exporter still writes it
                for scope in _list(_get(resource, name), name):
                    out.extend(_list(_get(scope, "spans"), "spans"))
                    if len(out) > MAX_SPANS:
                        return out
        return [s for s in out if isinstance(s, Mapping)]
    if isinstance(data, list):
        return [s for s in data if isinstance(s, Mapping)]
    raise TrajectoryError("spans: must be OTLP JSON (resourceSpans) or a list of spans")


#: Where OTLP JSON keeps a resource's spans: ``scopeSpans``, and
#: ``instrumentationLibrarySpans``, its name before OTLP 1.0.
_SCOPES = ("scopeSpans", "instrumentationLibrarySpans")


def _get(node: object, key: str) -> object:
    return node.get(key, []) if isinstance(node, Mapping) else []


def _list(value: object, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise TrajectoryError(f"spans: {where} must be a list")
    return value


def _start(span: Mapping[str, Any]) -> int:
    for key in ("startTimeUnixNano", "start_time_unix_nano", "start_time"):
        value = span.get(key)
        if isinstance(value, int):
            return value
        if isinstance(value, str) and value.isdigit():
            return int(value)
    return 0


def _attributes(span: Mapping[str, Any], n: int) -> dict[str, Any]:
    raw = span.get("attributes", {})
    if isinstance(raw, Mapping):
        return dict(raw)
    if not isinstance(raw, list):
        raise TrajectoryError(f"spans[{n}].attributes: must be a mapping or an OTLP list")
    out: dict[str, Any] = {}
    for i, item in enumerate(raw):
        if isinstance(item, Mapping) and isinstance(item.get("key"), str):
            out[item["key"]] = _otlp_value(item.get("value"))
        else:  # no reader reads it: kept, so that the search of the span reads it
            out[f"attributes[{i}]"] = item
    return out


def _otlp_value(value: object, depth: int = 0) -> object:
    """An OTLP ``AnyValue`` as the value it holds: a text, a number, a list
    (``arrayValue``), a mapping (``kvlistValue``), the text of ``bytesValue`` (base64, read
    as UTF-8 where it is); any other object as given, so that its search reads it."""
    if not isinstance(value, Mapping) or depth > _FLAT_DEPTH or len(value) != 1:
        return value  # no value, or two (a text and a list): searched as given
    for key in ("stringValue", "intValue", "doubleValue", "boolValue"):
        if key in value:
            return value[key]
    array, kvlist = value.get("arrayValue"), value.get("kvlistValue")
    if isinstance(array, Mapping) and isinstance(array.get("values"), list):
        return [_otlp_value(v, depth + 1) for v in array["values"]]
    if isinstance(kvlist, Mapping) and isinstance(kvlist.get("values"), list):
        return {str(kv.get("key")): _otlp_value(kv.get("value"), depth + 1)
                for kv in kvlist["values"] if isinstance(kv, Mapping)}
    if isinstance(value.get("bytesValue"), str):
        import base64
        import binascii

        try:
            return base64.b64decode(value["bytesValue"], validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            return value["bytesValue"]
    return value or None


#: Attributes of a span that are not what it was asked to run: its output and an LLM's
#: messages (searched for the calls they record: :mod:`.spanoutput`), an LLM's prompt and
#: tool calls (read as the LLM span's calls), documents retrieved, embeddings.
_NOT_INPUT = ("output.", "llm.", "retrieval.", "embedding.", "reranker.", "openinference.")
#: Texts of the spans' attributes read for queries at most, in all (JSON in JSON included);
#: past it, the counts are not established.
_SPAN_TEXTS = 200_000


def unread_queries(data: object, counted: list[Any], final: object = None,
                   forbidden: Collection[str] = ()) -> list[str]:
    """The queries spans carry that no counted call holds, as findings (``spans[3]
    ('execute_sql', kind CHAIN): input.value holds 'DELETE FROM Genre' ...``): the texts that
    read as SQL in a span's attributes (``input.value``, ``db.statement``, a tool's
    arguments; not its output, documents retrieved, nor an LLM span's prompt and messages,
    whose tool calls are read as calls), its events and its other keys (not its ``name``,
    read by the tool-name rule), none of which equals or is inside an argument of a call of
    ``counted`` (the messages whose calls are counted). Such a span ran a query no count
    reads (a span named ``execute_sql``, a CHAIN's ``db.statement``), so the counts are not
    established: never a pass with 0. A span's output and its model's text are searched for
    the calls they record (:func:`~.spanoutput.output_finding`; ``final``, the record's final
    query, is counted: an AGENT span's output that is it holds no other query;
    ``forbidden``: the case's tables its floor reads, :func:`forbidden_in_texts`)."""
    from .spanoutput import output_finding

    known = {lined(t) for t in _strings(_arguments(counted), [_SPAN_TEXTS])}
    pairs = _calls(counted)
    answered = known | {lined(t) for t in _finals(final)}
    out: list[str] = []
    budget = [_SPAN_TEXTS]
    copies = RunCopies.of_messages(counted)  # one tally of the trace's run-shaped copies
    for where, value in _not_spans(data):
        found = _unread([(where, value)], known, budget)
        if found is not None:
            out.append(f"{where}: {found}, which no counted call holds")
    spans = _spans(data)[:MAX_SPANS]
    spans.sort(key=lambda s: _start(s))
    for n, span in enumerate(spans):
        attrs = _attributes(span, n)
        kind = _kind(_flat(attrs))
        flat = _flat(attrs)
        skip = _NOT_INPUT + (("input.",) if kind == "LLM" else ()) + _other_tools(
            span, attrs, kind) + (described(flat) if db_text(flat, kind) is not None else ())
        called = kind == "TOOL" or _first(flat, _TOOL_NAME) is not None
        calls, code = unread_call_keys(flat, kind, pairs, None if called else span.get("name"))
        fields = [*((k, v) for k, v in attrs.items() if not str(k).startswith(skip)),
                  *((k, flat[k]) for k in calls),
                  *((k, v) for k, v in span.items() if k not in ("attributes", "name")),
                  *_history_calls(attrs)]
        result = kind != "LLM" and (called or named_tool(span.get("name")) is not None or str(
            flat.get("gen_ai.operation.name", "")).lower() == "execute_tool")  # a tool's result
        found = code or _unread(fields, known, budget) or output_finding(
            flat, kind, result, pairs, answered, budget, forbidden, copies)
        if found is not None:
            out.append(f"spans[{n}] ({str(span.get('name'))[:40]!r}, kind {kind or 'none'}): "
                       f"{found}, which no counted call holds")
        if budget[0] <= 0:
            out.append(f"spans[{n}]: not searched past {_SPAN_TEXTS:,} texts or "
                       f"{TEXT_DEPTH} levels")
            break
    return out


def forbidden_in_texts(traced: object, given: object, final: object,
                       forbidden: Collection[str]) -> str | None:
    """The first read of a ``forbidden`` table written in the spans' model texts and outputs
    (as :func:`unread_queries` searches them, the floor reading the case's tables), located,
    or None. Apart because the spans are read with the record, before its case is known:
    a ``SELECT FirstName FROM Employee`` in an LLM span's output passed ``forbidden_tables``
    with 0 (issue 58, the fourteenth re-probe's F1). ``given``: the trajectory's messages
    beside the spans (their calls counted too)."""
    if not forbidden or traced is None:
        return None
    try:
        counted: list[Any] = spans_to_messages(traced)
    except TrajectoryError:
        return None  # refused: its calls are counted or unestablished where it is read
    missed = unread_queries(traced, counted + (list(given) if isinstance(given, list | tuple)
                                               else []), final, forbidden)
    return missed[0] if missed else None


def _finals(final: object) -> list[str]:
    """The final query's texts: as given and without its fence."""
    from ..kinds._fences import strip_fence

    return [final, strip_fence(final)[0]] if isinstance(final, str) else []


_IN_CALL = re.compile(
    r"(llm\.input_messages\.\d+\.message\.tool_calls\.\d+\.tool_call\.function\.)arguments")


def _history_calls(attrs: dict[str, Any]) -> list[tuple[str, Any]]:
    """The arguments of the query tools' calls a span's prompt holds (an LLM span's, or one of
    another kind or none that carries it: the history of the conversation it was asked): each
    is a call an earlier step made and, where no counted call holds its query, one no count
    read (a trace that kept the last LLM span alone)."""
    from .statements import query_tool

    flat = _flat(attrs)
    out = []
    for key, value in flat.items():
        found = _IN_CALL.fullmatch(str(key))
        name = flat.get(found.group(1) + "name") if found else None
        if found and isinstance(name, str) and query_tool(name):
            out.append((key, value))
    return out


def _other_tools(span: Mapping[str, Any], attrs: dict[str, Any], kind: str) -> tuple[str, ...]:
    """The attribute holding a tool span's arguments when its tool runs no query (a
    ``lookup``'s, a web search's): that call's arguments, not read as a query (as a
    trajectory's call of the same tool is not), and no known text for the other spans
    either (:func:`_arguments`). Only the key taken as the arguments (:func:`arguments_key`):
    the others (``gen_ai.tool.call.arguments`` beside ``tool_call.function.arguments:
    "{}"``) are searched as any other key is (the twelfth re-probe's H2)."""
    from .statements import query_tool

    flat = _flat(attrs)
    name = _first(flat, _TOOL_NAME)
    if name is None and (kind == "TOOL" or named_tool(span.get("name")) is not None):
        name = span.get("name")
    taken = arguments_key(attrs)
    if not isinstance(name, str) or query_tool(name) or taken is None:
        return ()
    return (taken,)


def _not_spans(data: object) -> list[tuple[str, object]]:
    """What the spans' data holds beside the spans read (:func:`_spans`): an item of a list
    of spans that is no span object (a list, a JSON text), the keys of OTLP's resource and
    scope entries other than their spans (their ``attributes``), and of the top object."""
    if isinstance(data, list):
        return [(f"spans[{i}]", s) for i, s in enumerate(data) if not isinstance(s, Mapping)]
    if not isinstance(data, Mapping):
        return []
    out: list[tuple[str, object]] = [(f"spans.{k}", v) for k, v in data.items()
                                     if k != "resourceSpans"]
    resources = data.get("resourceSpans")
    for i, resource in enumerate(resources if isinstance(resources, list) else ()):
        if not isinstance(resource, Mapping):
            out.append((f"resourceSpans[{i}]", resource))
            continue
        out += [(f"resourceSpans[{i}].{k}", v) for k, v in resource.items() if k not in _SCOPES]
        for name in _SCOPES:
            scopes = resource.get(name)
            for j, scope in enumerate(scopes if isinstance(scopes, list) else ()):
                items = scope.items() if isinstance(scope, Mapping) else [("", scope)]
                out += [(f"resourceSpans[{i}].{name}[{j}].{k}", v) for k, v in items
                        if k != "spans"]
                spans = scope.get("spans") if isinstance(scope, Mapping) else None
                out += [(f"resourceSpans[{i}].{name}[{j}].spans[{n}]", s)
                        for n, s in enumerate(spans if isinstance(spans, list) else ())
                        if not isinstance(s, Mapping)]
    return out


def _unread(fields: list[tuple[Any, Any]], known: set[str], budget: list[int]) -> str | None:
    """The first field holding a text that reads as SQL and is none of the ``known`` texts
    (blanks aside, line breaks kept: :func:`~.runcopies.lined`)."""
    from .sweep import reads_as_sql

    for key, value in fields:
        for text in _strings(value, budget):
            plain = lined(text)
            if plain not in known and reads_as_sql(text):
                return f"{str(key)[:40]} holds {plain[:80]!r}"
    return None


def _calls(messages: list[Any]) -> list[tuple[str, str]]:
    """``(name, arguments)`` of each call ``messages`` hold (a call of the prompt's history
    that is one of them is that call: :func:`~.llmcalls.unread_call_keys`)."""
    return [(c["function"]["name"], c["function"]["arguments"]) for m in messages
            if isinstance(m, Mapping) for c in m.get("tool_calls") or ()
            if isinstance(c, Mapping) and isinstance(c.get("function"), Mapping)
            and isinstance(c["function"].get("name"), str)
            and isinstance(c["function"].get("arguments"), str)]


#: The span readers above, for the other readers of span files (``queryeval mine``): one
#: reading of OTLP and Phoenix exports, whoever reads them.
span_list = _spans
span_attributes = _attributes
span_start = _start
