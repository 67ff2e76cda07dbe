"""Size caps on every report field that can hold user data, each cut saying what it cut.

Why: a 64 MB result (under ``max_bytes``) was copied whole into the diff, and from there into
every report: a 225 MB JSON report, 189 MB HTML, 186 MB junit and 184 MB of terminal output.
The record of a case (:mod:`.records`) is capped once, after secrets are scrubbed (a cut must
never leave the start of a secret behind), so all six reports read the same capped text. A cut
text ends with ``… [cut: 63.9 MB of 64.0 MB]`` (UTF-8 sizes, decimal units).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, cast

from .._util.boundedio import MAX_WALK_DEPTH, TOO_DEEP, shallow

#: Characters kept of ``predicted``, ``gold``, ``question``, ``error`` and ``reason``.
MAX_TEXT_CHARS = 10_000
#: Characters kept of one diff line, and diff lines kept per case.
MAX_DIFF_LINE_CHARS = 2_000
MAX_DIFF_LINES = 100
#: Characters kept of any text inside ``details``, and items kept of any list there.
MAX_DETAIL_CHARS = 2_000
MAX_DETAIL_ITEMS = 1_000


def size_text(n: int) -> str:
    """``812 bytes``, ``12.3 kB``, ``63.9 MB``, ``3.2 GB`` (decimal units)."""
    if n < 1000:
        return f"{n} bytes"
    for unit, scale in (("kB", 1e3), ("MB", 1e6), ("GB", 1e9)):
        if n < scale * 1000 or unit == "GB":
            return f"{n / scale:.1f} {unit}"
    raise AssertionError  # pragma: no cover


def _utf8(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def cut_text(text: str, limit: int) -> str:
    """``text`` if it has at most ``limit`` characters, else its start and what was cut."""
    if len(text) <= limit:
        return text
    kept = text[:limit]
    total = _utf8(text)
    return f"{kept}… [cut: {size_text(total - _utf8(kept))} of {size_text(total)}]"


def cap_value(value: object, limit: int = MAX_TEXT_CHARS) -> object:
    """A text cut to ``limit``; a structure whose JSON text is longer becomes that text, cut
    (its shape cannot be kept without guessing what matters)."""
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, str):
        return cut_text(value, limit)
    value = shallow(value)  # kept whole when short: it is written as JSON later
    text = json.dumps(value, ensure_ascii=False, default=str)
    return value if len(text) <= limit else cut_text(text, limit)


def _dumps(value: object) -> str:
    """``value``'s JSON text, its containers nested deeper than ``MAX_WALK_DEPTH`` as
    ``TOO_DEEP`` (the encoder recurses in C and raises RecursionError past the stack's
    limit)."""
    return json.dumps(shallow(value), ensure_ascii=False, default=str)


def cap_lines(lines: list[Any]) -> list[Any]:
    """Diff lines: each cut to MAX_DIFF_LINE_CHARS, at most MAX_DIFF_LINES of them."""
    out = [cut_text(x, MAX_DIFF_LINE_CHARS) if isinstance(x, str) else x
           for x in lines[:MAX_DIFF_LINES]]
    if len(lines) > MAX_DIFF_LINES:
        out.append(f"… [cut: {len(lines) - MAX_DIFF_LINES:,} of {len(lines):,} lines]")
    return out


#: Values cap_details returns as they are (exact types: a subclass takes the general path).
_UNCAPPED = frozenset({int, float, bool, type(None)})


def cap_details(value: object, depth: int = 0) -> object:
    """Every text in ``details`` cut to MAX_DETAIL_CHARS, every list to MAX_DETAIL_ITEMS, every
    container nested deeper than ``MAX_WALK_DEPTH`` replaced by ``TOO_DEEP`` (a 600-deep list
    from a source ended this walk in a RecursionError).

    Exact types first, numbers and short keys kept without a call: this walks the details of
    every case (a Spider case's hold about seventy values)."""
    t = type(value)  # the exact type, tested once (the casts say what ``t is`` proved)
    if depth >= MAX_WALK_DEPTH and isinstance(value, dict | list):
        return TOO_DEEP
    if t is dict:
        return {k if type(k) is str and len(k) <= MAX_DETAIL_CHARS
                else cut_text(str(k), MAX_DETAIL_CHARS):
                v if type(v) in _UNCAPPED else cap_details(v, depth + 1)
                for k, v in cast("dict[str, object]", value).items()}
    if t is list and len(items := cast("list[object]", value)) <= MAX_DETAIL_ITEMS:
        return [v if type(v) in _UNCAPPED else cap_details(v, depth + 1) for v in items]
    if t is str:
        text = cast(str, value)
        return text if len(text) <= MAX_DETAIL_CHARS else cut_text(text, MAX_DETAIL_CHARS)
    if t in _UNCAPPED:
        return value
    if isinstance(value, str):
        return cut_text(value, MAX_DETAIL_CHARS)
    if isinstance(value, dict):
        return {cut_text(str(k), MAX_DETAIL_CHARS): cap_details(v, depth + 1)
                for k, v in value.items()}
    if isinstance(value, list):
        out = [cap_details(v, depth + 1) for v in value[:MAX_DETAIL_ITEMS]]
        if len(value) > MAX_DETAIL_ITEMS:
            out.append(f"… [cut: {len(value) - MAX_DETAIL_ITEMS:,} of {len(value):,} items]")
        return out
    return value


def cap_record(rec: dict[str, Any]) -> dict[str, Any]:
    """The record with each user-data field capped (in place; returned for chaining)."""
    for key in ("predicted", "gold", "question", "error", "reason"):
        if rec.get(key) is not None:
            rec[key] = cap_value(rec[key])
    if rec.get("diff"):
        rec["diff"] = cap_lines(rec["diff"])
    if rec.get("details"):
        _cap_trajectories(rec["details"])
        rec["details"] = cap_details(rec["details"])
    return rec


def _cap_trajectories(details: dict[str, Any]) -> None:
    """The trajectories a record's details hold (:mod:`.trajectory` says where), bounded by
    :func:`cap_trajectory` before the generic caps walk them (copies: the outcome the details
    came from keeps its own)."""
    def capped(holder: object) -> object:
        if not isinstance(holder, dict) or not any(
                holder.get(k) is not None for k in ("trajectory", "gold_trajectory")):
            return holder
        return {k: cap_trajectory(v) if k in ("trajectory", "gold_trajectory") and v is not None
                else v for k, v in holder.items()}

    if "agent" in details:
        details["agent"] = capped(details["agent"])
    loop = details.get("prediction")
    if isinstance(loop, dict) and "agent" in loop:
        details["prediction"] = {**loop, "agent": capped(loop["agent"])}


# -- trajectories -------------------------------------------------------------------------------


#: Messages a record keeps of a trajectory: the first :data:`HEAD` and the last
#: :data:`TAIL`, with one message saying how many were cut between them.
HEAD = 100
TAIL = 20
#: Tool calls kept of one assistant message (a model can ask for 10,000 at once).
MAX_CALLS = 20
#: Characters kept of a message's content and of a call's arguments; of a name and an id.
MAX_CONTENT = 2000
MAX_NAME = 100


def cap_trajectory(value: object) -> object:
    """A trajectory as the record keeps it: at most ``HEAD + TAIL`` messages (a marker
    between), each reduced to the keys of the OpenAI tool-call shape with texts cut, at most
    :data:`MAX_CALLS` calls per message. Its depth is the shape's, whatever was sent: a
    value that is not a list becomes its JSON text, cut."""
    if not isinstance(value, list):
        return cut_text(value if isinstance(value, str) else _dumps(value), MAX_CONTENT)
    items = value
    if items and not any(isinstance(m, Mapping) and "role" in m for m in items):
        return _short_steps(items)  # a gold written as tool names or {name, arguments}
    if len(items) > HEAD + TAIL:
        marker: dict[str, Any] = {"role": "cut", "content":
                                  f"… [cut: {len(items) - HEAD - TAIL:,} of {len(items):,} "
                                  "messages]"}
        return [*map(_message, items[:HEAD]), marker, *map(_message, items[-TAIL:])]
    return [_message(m) for m in items]


def _short_steps(items: list[Any]) -> list[Any]:
    def one(item: object) -> object:
        if isinstance(item, Mapping):
            return {"name": _text(item.get("name"), MAX_NAME),
                    **({"arguments": _text(item["arguments"], MAX_CONTENT)}
                       if item.get("arguments") is not None else {})}
        return _text(item, MAX_NAME)

    kept = [one(i) for i in items[:HEAD + TAIL]]
    if len(items) > HEAD + TAIL:
        kept.append(f"… [cut: {len(items) - HEAD - TAIL:,} of {len(items):,} steps]")
    return kept


def _text(value: object, limit: int) -> str | None:
    if value is None:
        return None
    return cut_text(value if isinstance(value, str) else _dumps(value), limit)


def _message(value: object) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        return {"role": "invalid", "content": _text(value, MAX_CONTENT)}
    out: dict[str, Any] = {"role": _text(value.get("role"), MAX_NAME) or "invalid"}
    if "content" in value:
        out["content"] = _text(value.get("content"), MAX_CONTENT)
    if "tool_call_id" in value:
        out["tool_call_id"] = _text(value.get("tool_call_id"), MAX_NAME)
    calls = value.get("tool_calls")
    if isinstance(calls, list):
        kept = [_call(c) for c in calls[:MAX_CALLS]]
        if len(calls) > MAX_CALLS:
            kept.append({"id": None, "type": "cut", "function": {
                "name": f"… [cut: {len(calls) - MAX_CALLS:,} of {len(calls):,} calls]",
                "arguments": ""}})
        out["tool_calls"] = kept
    elif calls is not None:
        out["tool_calls"] = _text(calls, MAX_CONTENT)
    return out


def _call(value: object) -> dict[str, Any]:
    c = value if isinstance(value, Mapping) else {}
    fn: Mapping[str, Any] = f if isinstance(f := c.get("function"), Mapping) else {}
    return {"id": _text(c.get("id"), MAX_NAME), "type": "function",
            "function": {"name": _text(fn.get("name"), MAX_NAME),
                         "arguments": _text(fn.get("arguments"), MAX_CONTENT) or ""}}
