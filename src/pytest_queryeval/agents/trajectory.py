"""A prediction's trajectory: the agent's tool calls and their results, in the OpenAI chat
tool-call shape, carried beside the final query and an optional final answer.

Why one module of this size: every source (python, http, command, a predictions file, the openai source's
own tool loop, imported spans) hands the engine the same envelope, and the metrics, the
database-side counts and the reports read the same normalised steps. A trajectory comes from
the model under test, so it is bounded like every untrusted input: nesting depth, total size,
message count, tool-name length; past a bound it is refused with an error naming the
message and field, never cut silently.

The shape (the contract with the tool loop)::

    {"role": "assistant", "content": str | None,
     "tool_calls": [{"id": str, "type": "function",
                     "function": {"name": str, "arguments": "<JSON text>"}}]}
    {"role": "tool", "tool_call_id": str, "content": str}
    {"role": "user", "content": str}          # a reply the user gave (asked back)

The envelope a source returns for an agent case::

    {"predicted": <the final query>, "trajectory": [...], "answer": "...", "error": "...",
     "budget_exceeded": "tool_calls"}

(or ``"spans": ...`` instead of ``"trajectory"``: OpenInference spans, :mod:`.spans`).

``error`` is the agent run's own failure (EvalBench's ``generated_error``: its trajectory
scores 0); ``budget_exceeded`` is set by the plugin's tool loop when a budget stopped it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .spantexts import EXECUTED
from .toolnames import (
    PLUGIN_TOOLS,
    SERVER,
    TOOL_ASK,
    TOOL_QUERY,
    TOOL_SAMPLE,
    plugin_tool,
)

#: Messages a trajectory may hold: a 10,000-call loop is refused, not stored.
MAX_MESSAGES = 2000
#: Nesting of lists and objects in a trajectory (messages, tool calls and parsed arguments).
MAX_DEPTH = 32
#: Characters of the whole trajectory as JSON text.
MAX_CHARS = 4 * 1024 * 1024
#: Characters of one message's ``content`` or one call's ``arguments``.
MAX_FIELD_CHARS = 1024 * 1024
#: The OpenAI API's rule for a function name: no path characters, no spaces, 64 at most. It
#: binds the plugin's own tool loop only (``strict_names``): a trajectory read from a file, a
#: source or spans is read as EvalBench reads it, any text a name (``naïve_tool``, a CJK
#: name), so one native name does not refuse the rest.
TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
#: Characters of a tool name read from outside the loop (a bound on untrusted input).
MAX_NAME_CHARS = 256
#: The roles a trajectory message may have.
ROLES = ("assistant", "tool", "user")

#: The argument of :data:`TOOL_QUERY` (and of a replayed outside trajectory) holding the SQL.
QUERY_ARGUMENT = "query"


class TrajectoryError(ValueError):
    """A trajectory that is not read: the message names the message index and field."""


@dataclass(frozen=True)
class Step:
    """One tool call and what came back."""

    #: Position among the trajectory's tool calls (0-based).
    index: int
    #: The message the call was made in (0-based index into the trajectory).
    message: int
    call_id: str
    name: str
    #: The arguments parsed from their JSON text (None when they are not a JSON object).
    arguments: dict[str, Any] | None
    #: The arguments' text as the model wrote it.
    arguments_text: str
    #: The tool message answering the call (None: no answer came).
    result: str | None
    #: Why the call is malformed (arguments not a JSON object, no result), or None.
    error: str | None = None
    #: The arguments the tool recorded it ran, when they differ from those asked (a TOOL
    #: span's ``input.value``; a tool message's :data:`EXECUTED` field), or None: what ran
    #: is counted, whatever the model asked.
    executed: str | None = None


@dataclass(frozen=True)
class Trajectory:
    """A checked trajectory: its messages as given (bounded), and its steps."""

    messages: tuple[dict[str, Any], ...]
    steps: tuple[Step, ...]

    @property
    def tool_names(self) -> list[str]:
        return [s.name for s in self.steps]

    def canonical_names(self) -> list[str]:
        """The step names as EvalBench compares them: :func:`canonical_name` of each."""
        return [canonical_name(s.name) for s in self.steps]

    def user_turns(self) -> int:
        """Replies the user gave inside the trajectory: ``user`` messages and answered
        :data:`TOOL_ASK` calls."""
        users = sum(1 for m in self.messages if m.get("role") == "user")
        asks = sum(1 for s in self.steps if s.name == TOOL_ASK and s.result is not None)
        return users + asks

    def turn_tool_calls(self) -> list[int]:
        """Tool calls per user-agent round: a new round starts after each reply the user gave
        (what EvalBench's ``conversation_history`` entries hold, one per round)."""
        rounds = [0]
        answers = {s.call_id for s in self.steps if s.name == TOOL_ASK}
        for msg in self.messages:
            role = msg.get("role")
            if role == "assistant":
                rounds[-1] += len(msg.get("tool_calls") or ())
            elif role == "user" or (role == "tool" and msg.get("tool_call_id") in answers):
                rounds.append(0)
        return rounds

    def to_json(self) -> list[dict[str, Any]]:
        return [dict(m) for m in self.messages]


@dataclass
class Envelope:
    """What a source answered for an agent case."""

    predicted: object
    trajectory: Trajectory | None = None
    answer: str | None = None
    #: The agent's own run error (EvalBench's ``generated_error``).
    error: str | None = None
    #: The budget the plugin's tool loop ran out of (``tool_calls``, ``rows``, ...), or None.
    budget_exceeded: str | None = None
    #: Why the trajectory was refused (bounds, shape), or None.
    refused: str | None = None
    #: The messages of a refused trajectory as given (spans already turned into messages):
    #: its tool calls are still counted (:func:`salvage_steps`); None when there is nothing
    #: to read them from.
    raw: object = None
    #: The spans the trajectory was read from (None: it was given as messages): a trace
    #: that records a query or a call none of whose calls can be read leaves the counts
    #: unestablished.
    traced: object = None
    #: Spans given beside a trajectory: the trajectory is scored, and the calls the spans
    #: record that it does not hold are counted too (what ran, whichever record says it).
    beside: object = None
    #: What the record holds under its other keys that looks like messages or tool calls
    #: (:func:`stray_calls`): their calls are counted too, as far as they can be read.
    aside: object = None
    #: Why the record's counts cannot be established (no trajectory and no spans in it, or
    #: messages beside them under another key), or None: an agent case gated on a count is
    #: then an error, never a pass with 0 (:func:`~.case.agent_scores`).
    unestablished: str | None = None
    #: The record's other keys holding messages or tool calls (:func:`stray_calls`).
    stray: tuple[str, ...] = ()
    #: Whether the plugin's own tool loop wrote this trajectory (its counts, taken where the
    #: queries ran, came with it): a malformed call in it is one the loop refused, ran nothing.
    live: bool = False
    #: The database-side counts the plugin's own tool loop took while it ran (a floor: the
    #: engine's count of the same trajectory never goes below them).
    live_counts: dict[str, float] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)


#: The envelope's keys.
ENVELOPE_KEYS = frozenset({"predicted", "trajectory", "spans", "answer", "error",
                           "budget_exceeded"})


def carried(record: Mapping[str, Any], value: object, value_key: str = "predicted") -> object:
    """What a source's record (a predictions-file line, a command's JSON) gives an agent case:
    the envelope of its prediction ``value`` (under ``value_key``) with every other key of the
    record beside it, so that the engine sees what the record holds: a record with no
    trajectory or spans leaves an agent case's counts unestablished, and calls held under
    another key are never read as none (:func:`stray_calls`). A key that starts with ``__``
    (``__log: ["DELETE ..."]``) is the record's as any other: searched."""
    out: dict[str, Any] = {}
    for key, item in record.items():  # every key: the search of them is bounded, not cut
        if key == value_key:
            out["predicted"] = value
        elif key != "predicted":
            out[str(key)] = item
    out.setdefault("predicted", value)
    return out


#: The record's keys the search for stray calls does not read: the final query and the final
#: answer (the agent's answer, scored as such: never a call), and the trajectory and spans
#: (read by their own readers, what they do not read searched by :func:`~.sweep.leftovers`).
NOT_SEARCHED = frozenset({"predicted", "trajectory", "spans", "answer"})


def stray_calls(record: Mapping[str, Any]) -> list[tuple[str, object]]:
    """``(key, value)`` of each key of ``record`` beside the envelope's own whose value holds
    what looks like a chat message or a tool call, at any depth, in a list, an object or
    JSON text: ``choices``, ``messages``, ``intermediate_steps``, ``actions``... Why a
    structural test and not a list of names: a name list misses the next framework's key,
    and calls read as none would pass every count's gate with 0 (:mod:`.sweep`)."""
    from .sweep import record_findings

    return [(key, value) for key, value, found in record_findings(record, not_searched(record))
            if found.messages]


def not_searched(record: Mapping[str, Any]) -> frozenset[str]:
    """The keys of ``record`` its search leaves to their readers (:data:`NOT_SEARCHED`); an
    ``answer`` that is not text is read by no reader (it is refused as an answer), so it is
    searched: ``{"answer": {"tool_calls": [...]}}`` never hides a call."""
    return NOT_SEARCHED if isinstance(record.get("answer", ""), str) else \
        NOT_SEARCHED - {"answer"}


def canonical_name(name: str) -> str:
    """A plugin tool's bare name under :data:`SERVER` (``run_query`` →
    ``queryeval__run_query``); any other name as given, so an outside MCP tool
    (``cloud-sql__list_tables``) and a native one (``Read``) keep what EvalBench sees."""
    return f"{SERVER}__{name}" if name in PLUGIN_TOOLS else name


def is_envelope(value: object) -> bool:
    """A mapping holding ``predicted``, ``trajectory`` or ``spans`` (an agent case's answer
    is read so; other keys, such as a command's ``usage``, are kept aside)."""
    return isinstance(value, Mapping) and any(
        k in value for k in ("predicted", "trajectory", "spans"))


def read_envelope(value: object) -> Envelope:
    """The envelope of an agent case's prediction from any source.

    ``value`` may be the envelope object, its JSON text (what an http or command source
    answers), or a bare prediction (a query alone: no trajectory). A trajectory that breaks
    a bound or the shape is not raised: it is kept as ``refused`` so the case records why
    and its trajectory metrics score as the reference scores a trajectory that is not a list.
    """
    value = _parsed(value)
    if isinstance(value, Envelope):
        return value
    if not is_envelope(value):
        return Envelope(value, unestablished="the prediction is the final answer alone: no "
                                             "'trajectory' and no 'spans'")
    assert isinstance(value, Mapping)
    env = Envelope(value.get("predicted"),
                   extra={str(k): v for k, v in value.items() if k not in ENVELOPE_KEYS})
    answer = value.get("answer")
    if answer is not None:
        if not isinstance(answer, str):
            env.refused = f"answer: must be text, not {type(answer).__name__}"
        elif len(answer) > MAX_FIELD_CHARS:
            env.refused = f"answer: {len(answer):,} characters, over {MAX_FIELD_CHARS:,}"
        else:
            env.answer = answer
    error = value.get("error")
    if error:  # EvalBench's ``if generated_error``: 0, false, [] and {} are no error
        env.error = str(error)[:MAX_FIELD_CHARS]
    budget = value.get("budget_exceeded")
    if budget:
        env.budget_exceeded = str(budget)[:100]
    _read_calls(env, value)
    return env


def _read_calls(env: Envelope, value: Mapping[str, Any]) -> None:
    """The trajectory or spans of ``value`` read into ``env``. A record with neither, or with
    messages or tool calls under another key beside them, or anything else no reader reads
    that may be a call or a query (:mod:`.sweep`), has counts that cannot be established
    (:attr:`Envelope.unestablished`); what it holds elsewhere is still read for its calls
    (:attr:`Envelope.aside`), and a trajectory beside it is refused as ambiguous: which
    record says what ran is unknown."""
    from .parts import read_parts
    from .sweep import record_findings

    given, traced = read_parts(value.get("trajectory")), value.get("spans")
    found = record_findings(value, not_searched(value))
    stray = [(key, held) for key, held, f in found if f.messages]
    unread = [x for _, _, f in found for x in f.findings]
    keys = ", ".join(repr(str(k))[:60] for k in list(value)[:20]) + \
        (", ..." if len(value) > 20 else "")
    env.stray = tuple(k for k, _ in stray)
    if given is None and traced is None:
        env.unestablished = (f"the record holds no 'trajectory' and no 'spans' "
                             f"(its keys: {keys})" + _listed(unread))
        if stray:
            _refuse_misnamed(env, stray[0])
            env.aside = [_as_messages(v) for _, v in stray[1:]] or None
        return
    if given:
        _read_given(env, given)
        env.beside = traced
    elif traced is not None:  # OpenInference spans (:mod:`.spans`)
        _read_spans(env, traced)
    elif given is not None:  # false, 0, "", {}: EvalBench's ``or []``, the empty trajectory
        env.trajectory = Trajectory((), ())
    if stray:
        _ambiguous(env, stray, given is not None, keys, unread)
    elif unread:
        env.unestablished = ("the record holds what may be tool calls or queries outside "
                             "'trajectory' and 'spans', where no count reads them"
                             + _listed(unread))
    if env.unestablished is None and traced is not None:
        _unread_spans(env, given, traced)
    if env.unestablished is None and given:
        from .sweep import leftovers

        missed = leftovers(_decoded_messages(given),
                           lambda call: _lenient_call(call) is not None)
        if missed:
            env.unestablished = ("the trajectory holds what may be tool calls or queries "
                                 "that its readers do not read" + _listed(missed))


def _unread_spans(env: Envelope, given: object, traced: object) -> None:
    """Spans (alone or beside a trajectory) carrying a query no counted call holds
    (:func:`~.spans.unread_queries`): the counts are not established."""
    from . import spans

    try:
        counted: list[Any] = spans.spans_to_messages(traced)
    except spans.TrajectoryError:
        return  # refused: its calls are counted or unestablished where it is read
    if isinstance(given, list):
        counted += given  # (its arguments as given: a call it holds is counted)
    missed = spans.unread_queries(traced, counted, env.predicted)
    if missed:
        env.unestablished = ("the spans carry queries that no tool call counted holds"
                             + _listed(missed))


def _decoded_messages(given: object) -> object:
    """A trajectory given as JSON text read as its messages (as the lenient reading reads
    it; text it cannot read leaves the counts unestablished there), else as given."""
    if not isinstance(given, str):
        return given
    from .._util.boundedio import BoundedReadError, loads_json

    try:
        return loads_json(given, MAX_DEPTH * 2) if len(given) <= SALVAGE_CHARS else []
    except BoundedReadError:
        return []


def _listed(findings: Sequence[str]) -> str:
    """The first findings of a search, for an error."""
    if not findings:
        return ""
    more = f"; and {len(findings) - 5} more" if len(findings) > 5 else ""
    return ": " + "; ".join(findings[:5]) + more


def _ambiguous(env: Envelope, stray: Sequence[tuple[str, object]], trajectory: bool,
               keys: str, unread: Sequence[str]) -> None:
    """Messages under other keys beside a trajectory or spans: which says what ran is
    unknown; the trajectory is refused and every record's calls are counted."""
    names = ", ".join(f"'{k[:60]}'" for k, _ in stray[:10])
    held = "'trajectory'" if trajectory else "'spans'"
    env.unestablished = (f"the record holds messages or tool calls under {names} beside "
                         f"{held}: which of them says what ran is ambiguous (its keys: "
                         f"{keys})" + _listed(unread))
    if env.trajectory is not None:
        env.raw, env.trajectory = env.trajectory.to_json(), None
    if env.refused is None:
        env.refused = (f"{names}: not read: an agent case reads its tool calls from "
                       "'trajectory' (chat messages) or 'spans' (OpenInference spans) "
                       f"alone, and {names} beside {held} holds messages or tool calls: "
                       "move them into one of them or remove them")
    env.aside = [_as_messages(v) for _, v in stray]


def _as_messages(raw: object) -> object:
    """Messages under another key as the salvage reads them: a list of bare tool-call
    objects (``tool_calls: [{"function": {...}}]``) as the one message that makes them."""
    if isinstance(raw, list) and raw and all(
            isinstance(c, Mapping) and "function" in c and "role" not in c for c in raw):
        return [{"role": "assistant", "content": None, "tool_calls": raw}]
    return raw


def _read_spans(env: Envelope, traced: object) -> None:
    """OpenInference spans (:mod:`.spans`) read into ``env`` as its trajectory."""
    from . import spans

    env.traced = traced
    try:
        messages = spans.spans_to_messages(traced)
    except spans.TrajectoryError as exc:
        env.refused = str(exc)
        return
    try:
        env.trajectory = read_trajectory(messages)
    except TrajectoryError as exc:
        env.refused, env.raw = str(exc), messages


def _parsed(value: object) -> object:
    """The envelope a JSON text answer holds (an http or command source's), else ``value``;
    a text past the bound is an envelope refused already."""
    if isinstance(value, str) and value.lstrip()[:1] == "{":
        from .._util.boundedio import BoundedReadError, loads_json

        if len(value) > MAX_CHARS + MAX_FIELD_CHARS:
            return Envelope(value, refused=f"the answer has {len(value):,} characters, over "
                                           f"the {MAX_CHARS:,} a trajectory may hold")
        try:
            parsed = loads_json(value, MAX_DEPTH + 4)
        except BoundedReadError:
            parsed = None
        if is_envelope(parsed):
            return parsed
    return value


def _refuse_misnamed(env: Envelope, wrong: tuple[str, object]) -> None:
    """Refuse an envelope holding its messages under another key than ``trajectory`` or
    ``spans`` (:func:`stray_calls`), keeping them as the raw trajectory the calls are
    salvaged from."""
    where, raw = wrong
    last = where.rsplit(".", 1)[-1]
    to = "spans" if last.lower() == "spans" else "trajectory"
    env.refused = (f"{where}: not read: an agent case reads its tool calls from "
                   "'trajectory' (chat messages) or 'spans' (OpenInference spans); "
                   f"rename '{where}' to '{to}'")
    env.raw = _as_messages(raw)


def _read_given(env: Envelope, given: object) -> None:
    """An envelope's trajectory read into ``env``: a text is not parsed (EvalBench scores a
    text 0, ``"[]"`` too) but its calls are still counted from it (:func:`salvage_steps`)."""
    if isinstance(given, str):
        env.refused = ("trajectory: must be a list of messages, not text (EvalBench scores a "
                       "trajectory that is not a list 0)")
        env.raw = given
        return
    try:
        env.trajectory = read_trajectory(given)
    except TrajectoryError as exc:
        env.refused, env.raw = str(exc), given


#: Characters of a refused trajectory's JSON text still read for its tool calls (past the
#: bound of a trajectory, not past what a count may read: four times it).
SALVAGE_CHARS = 4 * MAX_CHARS


def salvage_steps(data: object) -> tuple[Step, ...] | None:
    """The tool calls of a trajectory :func:`read_trajectory` refused, read leniently: every
    call that names a tool and gives its arguments, whatever else is wrong with the messages
    (a repeated id, a 300-character tool name, a ``system`` message, a 300-character id,
    messages wrapped in a list of their own, the legacy ``function_call`` of a message).
    Why: a refused trajectory is still what the agent did; a ``DELETE`` in it must be
    counted, not dropped with the shape. None when no list of messages can be read at all
    (then the counts cannot be established)."""
    messages = lenient_messages(data)
    if messages is None:
        return None
    ran = {m.get("tool_call_id"): m[EXECUTED] for _, m in messages
           if isinstance(m.get(EXECUTED), str) and m.get(EXECUTED)}
    steps: list[Step] = []
    for i, msg in messages:
        calls = msg.get("tool_calls")
        legacy = msg.get("function_call")
        found = [c for c in calls if isinstance(c, Mapping)] if isinstance(calls, list) else []
        for call in found + ([{"function": legacy}] if isinstance(legacy, Mapping) else []):
            read = _lenient_call(call)
            if read is not None:
                name, text = read
                arguments, error = _parse_arguments(text)
                ident = call.get("id")
                ident = ident[:256] if isinstance(ident, str) else ""
                steps.append(Step(len(steps), i, ident, name, arguments, text, None, error,
                                  ran.get(ident) if ident else None))
    return tuple(steps)


def lenient_messages(data: object) -> list[tuple[int, Mapping[str, Any]]] | None:
    """The message objects of a refused trajectory (a list, or its JSON text up to
    :data:`SALVAGE_CHARS`), those in nested lists at their outer index; None when no list of
    messages can be read. What :func:`salvage_steps` and the lenient rounds
    (:mod:`.scoring`) read."""
    if isinstance(data, str):
        from .._util.boundedio import BoundedReadError, loads_json

        if len(data) > SALVAGE_CHARS:
            return None
        try:
            data = loads_json(data, MAX_DEPTH * 2)
        except BoundedReadError:
            return None
    if not isinstance(data, list | tuple):
        return None
    return _lenient_messages(data, 0)


def _lenient_messages(data: Sequence[Any], depth: int) -> list[tuple[int, Mapping[str, Any]]]:
    """The message objects of ``data`` with their index, those in nested lists too (each
    at the index of the outer item holding it)."""
    out: list[tuple[int, Mapping[str, Any]]] = []
    for i, item in enumerate(data):
        if isinstance(item, Mapping):
            out.append((i, item))
        elif isinstance(item, list | tuple) and depth < MAX_DEPTH:
            out.extend((i, m) for _, m in _lenient_messages(item, depth + 1))
    return out


def _lenient_call(call: object) -> tuple[str, str] | None:
    """A call's name and arguments text, when it has both (anything else about it aside)."""
    function = call.get("function") if isinstance(call, Mapping) else None
    if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
        return None
    arguments = function.get("arguments", "{}")
    if isinstance(arguments, Mapping):
        from .._util.boundedio import depth_exceeds

        if depth_exceeds(arguments, MAX_DEPTH):  # its texts kept: the query is one of them
            arguments = {str(k): v for k, v in arguments.items() if isinstance(v, str)}
        try:
            arguments = json.dumps(arguments, ensure_ascii=False, default=str)
        except (TypeError, ValueError):
            return None
    if not isinstance(arguments, str):
        return None
    return function["name"], arguments


def read_trajectory(data: object, *, strict_names: bool = False) -> Trajectory:
    """Check ``data`` against the bounds and the shape, then normalise it to steps.

    ``strict_names``: the OpenAI name rule (:data:`TOOL_NAME`) on every call, for the
    plugin's own tool loop; otherwise a name is any text of at most :data:`MAX_NAME_CHARS`.
    Raises :class:`TrajectoryError` naming ``trajectory[i].field`` for the first problem.
    """
    data = _bounded(data)
    messages, calls, results, executed = _read_messages(data, strict_names)
    return Trajectory(tuple(messages), _steps(calls, results, executed))


def _bounded(data: object) -> list[Any] | tuple[Any, ...]:
    """``data`` (or its JSON text read) as a list of messages within every bound, checked
    before its shape: a trajectory is an answer the plugin did not write."""
    if isinstance(data, str):
        from .._util.boundedio import BoundedReadError, loads_json

        if len(data) > MAX_CHARS:
            raise TrajectoryError(f"trajectory: {len(data):,} characters, over {MAX_CHARS:,}")
        try:
            data = loads_json(data, MAX_DEPTH)
        except BoundedReadError as exc:
            raise TrajectoryError(f"trajectory: {exc}") from None
    if not isinstance(data, list | tuple):
        raise TrajectoryError(f"trajectory: must be a list of messages, not "
                              f"{type(data).__name__}")
    if len(data) > MAX_MESSAGES:
        raise TrajectoryError(f"trajectory: {len(data):,} messages, over the {MAX_MESSAGES:,} "
                              "a trajectory may hold")
    from .._util.boundedio import depth_exceeds

    if depth_exceeds(list(data), MAX_DEPTH):
        raise TrajectoryError(f"trajectory: nested deeper than {MAX_DEPTH} levels")
    try:
        size = len(json.dumps(data, ensure_ascii=False, default=_refuse))
    except (TypeError, ValueError) as exc:
        raise TrajectoryError(f"trajectory: not JSON data: {exc}") from None
    if size > MAX_CHARS:
        raise TrajectoryError(f"trajectory: {size:,} characters as JSON, over {MAX_CHARS:,}")
    return data


def _read_messages(data: Sequence[Any], strict_names: bool) -> tuple[
        list[dict[str, Any]], list[tuple[int, str, str, str]], dict[str, str], dict[str, str]]:
    """The messages' shapes checked in order: the messages, the tool calls (message, id,
    name, arguments), each answered call's result and what its tool ran, by call id."""
    messages: list[dict[str, Any]] = []
    calls: list[tuple[int, str, str, str]] = []  # message, id, name, arguments
    results: dict[str, str] = {}
    executed: dict[str, str] = {}
    for i, msg in enumerate(data):
        where = f"trajectory[{i}]"
        if not isinstance(msg, Mapping):
            raise TrajectoryError(f"{where}: must be a message object, not {type(msg).__name__}")
        role = msg.get("role")
        if role not in ROLES:
            raise TrajectoryError(f"{where}.role: must be one of {', '.join(ROLES)}, "
                                  f"not {_short(role)}")
        content = msg.get("content")
        if content is not None and not isinstance(content, str):
            raise TrajectoryError(f"{where}.content: must be text or null, not "
                                  f"{type(content).__name__}")
        if content is not None and len(content) > MAX_FIELD_CHARS:
            raise TrajectoryError(f"{where}.content: {len(content):,} characters, over "
                                  f"{MAX_FIELD_CHARS:,}")
        if role == "assistant":
            for j, call in enumerate(msg.get("tool_calls") or ()):
                calls.append((i, *_read_call(call, f"{where}.tool_calls[{j}]", strict_names)))
            if msg.get("tool_calls") is not None and not isinstance(msg["tool_calls"], list):
                raise TrajectoryError(f"{where}.tool_calls: must be a list")
        elif role == "tool":
            call_id = msg.get("tool_call_id")
            if not isinstance(call_id, str) or not call_id:
                raise TrajectoryError(f"{where}.tool_call_id: must be the id of a call")
            if call_id in results:
                raise TrajectoryError(f"{where}.tool_call_id: {_short(call_id)} answered twice")
            if call_id not in {c[1] for c in calls}:
                raise TrajectoryError(f"{where}.tool_call_id: {_short(call_id)} answers no "
                                      "earlier call")
            results[call_id] = content or ""
            ran = msg.get(EXECUTED)
            if isinstance(ran, str) and ran:
                executed[call_id] = ran[:MAX_FIELD_CHARS]
        messages.append(dict(msg))
    return messages, calls, results, executed


def _steps(calls: list[tuple[int, str, str, str]], results: dict[str, str],
           executed: dict[str, str]) -> tuple[Step, ...]:
    """One step per tool call (ids unique), its arguments parsed and its result joined; a
    call no tool message answers is a step with that error."""
    ids = [c[1] for c in calls]
    if len(set(ids)) != len(ids):
        dup = next(x for x in ids if ids.count(x) > 1)
        raise TrajectoryError(f"trajectory: the call id {_short(dup)} is used twice")
    steps = []
    for n, (message, call_id, name, args_text) in enumerate(calls):
        arguments, error = _parse_arguments(args_text)
        result = results.get(call_id)
        if result is None and error is None:
            error = "no tool message answers this call"
        steps.append(Step(n, message, call_id, name, arguments, args_text, result, error,
                          executed.get(call_id)))
    return tuple(steps)


def _read_call(call: object, where: str, strict_names: bool) -> tuple[str, str, str]:
    if not isinstance(call, Mapping):
        raise TrajectoryError(f"{where}: must be a tool call object")
    call_id = call.get("id")
    if not isinstance(call_id, str) or not call_id or len(call_id) > 256:
        raise TrajectoryError(f"{where}.id: must be a non-empty text of at most 256 characters")
    kind = call.get("type", "function")
    if kind != "function":
        raise TrajectoryError(f"{where}.type: must be function, not {_short(kind)}")
    function = call.get("function")
    if not isinstance(function, Mapping):
        raise TrajectoryError(f"{where}.function: must be an object with name and arguments")
    name = function.get("name")
    if strict_names and not (isinstance(name, str) and TOOL_NAME.fullmatch(name)):
        raise TrajectoryError(f"{where}.function.name: {_short(name)} is not a tool name "
                              "(letters, digits, _ and -, at most 64)")
    if not isinstance(name, str) or len(name) > MAX_NAME_CHARS:
        raise TrajectoryError(f"{where}.function.name: {_short(name)} is not a tool name "
                              f"(a text of at most {MAX_NAME_CHARS} characters)")
    arguments = function.get("arguments", "{}")
    if isinstance(arguments, Mapping):  # some clients send the object itself
        arguments = json.dumps(arguments, ensure_ascii=False, sort_keys=False)
    if not isinstance(arguments, str):
        raise TrajectoryError(f"{where}.function.arguments: must be JSON text")
    if len(arguments) > MAX_FIELD_CHARS:
        raise TrajectoryError(f"{where}.function.arguments: {len(arguments):,} characters, "
                              f"over {MAX_FIELD_CHARS:,}")
    return call_id, name, arguments


def _parse_arguments(text: str) -> tuple[dict[str, Any] | None, str | None]:
    from .._util.boundedio import BoundedReadError, loads_json

    if not text.strip():
        return {}, None
    try:
        parsed = loads_json(text, MAX_DEPTH)
    except BoundedReadError as exc:
        return None, f"arguments: {exc}"
    if not isinstance(parsed, dict):
        return None, f"arguments: a JSON object is needed, not {type(parsed).__name__}"
    return parsed, None


def call_key(step: Step) -> str:
    """What makes two calls identical: the name and the arguments, keys sorted (a repeated
    call is the same name with the same arguments, however the model spaced them)."""
    args: object = step.arguments if step.arguments is not None else step.arguments_text
    return f"{step.name}\x00{json.dumps(args, sort_keys=True, ensure_ascii=False)}"


def step_query(step: Step) -> str | None:
    """The query a :data:`TOOL_QUERY` step ran (None for any other step or no query)."""
    if plugin_tool(step.name) != TOOL_QUERY or step.arguments is None:
        return None
    query = step.arguments.get(QUERY_ARGUMENT)
    return query if isinstance(query, str) else None


#: Rows :data:`TOOL_SAMPLE` returns when the call names no limit, and the most it returns
#: (the tool loop's rule, which a replay repeats).
SAMPLE_ROWS = 5
SAMPLE_ROWS_MAX = 50
#: A table name a replayed :data:`TOOL_SAMPLE` call may name: up to three parts (``Employee``,
#: ``main.Employee``, ``chinook.main.Employee``), each a plain name or one quoted as a
#: dialect quotes it (``"Employee"``, `` `Employee` ``, ``[Employee]``); anything else is not
#: run (the tool loop would have answered "no table named ..."). A harness serving the tool
#: may have read a qualified or quoted name: it is replayed as the same table, so that its
#: forbidden table is counted (the engine's account names it, else its last name does).
_PART = r'(?:[A-Za-z_][A-Za-z0-9_$]{0,127}|"(?:[^"\x00-\x1f]|""){1,128}"|`[^`\x00-\x1f]{1,128}`' \
        r'|\[[^\]\x00-\x1f]{1,128}\])'
_TABLE = re.compile(rf"\s*({_PART})(?:\s*\.\s*({_PART}))?(?:\s*\.\s*({_PART}))?\s*")


def sample_table(table: object) -> str | None:
    """The table a :data:`TOOL_SAMPLE` call names as the replay reads it, each part quoted
    (``main.Employee`` is ``"main"."Employee"``); None for a name :data:`_TABLE` refuses."""
    found = _TABLE.fullmatch(table) if isinstance(table, str) else None
    if found is None:
        return None
    parts = []
    for part in (p for p in found.groups() if p is not None):
        if part[0] == '"':
            part = part[1:-1].replace('""', '"')
        elif part[0] in "`[":
            part = part[1:-1]
        parts.append('"' + part.replace('"', '""') + '"')
    return ".".join(parts)


def sample_limit(value: object) -> int:
    """The rows a :data:`TOOL_SAMPLE` call's ``limit`` asks for, as the tool serves them."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        return SAMPLE_ROWS
    return min(value, SAMPLE_ROWS_MAX)


def step_sample_query(step: Step) -> str | None:
    """The query a :data:`TOOL_SAMPLE` step stands for, as the tool loop runs it (``SELECT *
    FROM "table" LIMIT n``), so that a replayed trajectory's database-side counts (queries
    executed, rows read, forbidden tables) hold its sample reads as the loop's do; None for
    any other step or a table argument that is not a plain name."""
    if plugin_tool(step.name) != TOOL_SAMPLE or step.arguments is None:
        return None
    table = sample_table(step.arguments.get("table"))
    if table is None:
        return None
    return f"SELECT * FROM {table} LIMIT {sample_limit(step.arguments.get('limit'))}"


def _refuse(value: object) -> object:
    raise TypeError(f"a {type(value).__name__} is not JSON data")


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
