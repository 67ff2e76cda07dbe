"""OpenAI chat messages whose ``content`` is an array of content parts (``[{"type": "text",
"text": "..."}]``), read as the text they hold.

Why: the chat API takes a message's content as a text or as such an array, and a harness
that records what it sent keeps the array. A trajectory reading content as text only refused
the honest message (``content: must be text or null``), and its parts were then searched as
what no reader reads, which made a case gated on a count an error (issue 58, the twelfth
re-probe's M4). Read as their text joined, the parts are the message's text in every reader:
its prose, a call written in it (``<tool_call>`` in a part is searched as in a text), the
canaries traced through it. A part of another type (an image, a ``tool_use`` block) or with
keys beside its text is read by no reader: the array is left as given, refused and searched.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: The parts that hold text, and the key their text is under (the assistant's refusal too).
TEXT_PARTS = {"text": "text", "refusal": "refusal"}


def parts_text(content: object) -> str | None:
    """The text of ``content`` when it is a non-empty array of text parts only (their texts
    joined, as the model's text runs on from one part to the next), else None."""
    if not isinstance(content, list) or not content:
        return None
    texts = []
    for part in content:
        kind = part.get("type") if isinstance(part, Mapping) else None
        key = TEXT_PARTS.get(kind) if isinstance(kind, str) else None
        if key is None or set(part) != {"type", key} or not isinstance(part[key], str):
            return None
        texts.append(part[key])
    return "".join(texts)


def read_parts(messages: object) -> object:
    """``messages`` (a trajectory as given) with each message's content parts read as their
    text (:func:`parts_text`); anything else as given."""
    if not isinstance(messages, list | tuple):
        return messages
    out: list[Any] = []
    for message in messages:
        text = parts_text(message.get("content")) if isinstance(message, Mapping) else None
        out.append(message if text is None else {**message, "content": text})
    return out
