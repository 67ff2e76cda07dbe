"""Markdown code fences around a model's answer: one is stripped before parsing.

Chat models wrap their answer in a fence (```` ```sql ... ``` ````, ```` ```json ````) even
when asked not to. The JSON paper's own pipeline parsed such output (its published "valid JSON"
counts are the counts after stripping the fences), and a fenced SQL statement is the model's
query all the same, so every built-in kind strips one fence that encloses the whole answer and
records that it did (``details.fence_stripped``). Text around the fence, or several fenced
blocks, are left alone: the answer is then not a bare query and fails as such.
"""

from __future__ import annotations

import re

#: The opening fence (3+ backticks or tildes, then an optional info string such as ``sql``),
#: the body, and a closing fence of the same character at least as long, each on its own line.
_FENCED = re.compile(
    r"\A\s*(?P<fence>`{3,}|~{3,})(?P<info>[^\n]*)\n(?P<body>.*?)\n?[ \t]*(?P<close>(?P=fence)[`~]*)"
    r"[ \t]*\s*\Z",
    re.DOTALL,
)
_DETAIL = "fence_stripped"


def strip_fence(text: str) -> tuple[str, str | None]:
    """``(body, opening line)`` when ``text`` is one fenced block, else ``(text, None)``."""
    if "```" not in text and "~~~" not in text:  # the common case: no regex
        return text, None
    m = _FENCED.match(text)
    if m is None:
        return text, None
    fence, info, body = m["fence"], m["info"].strip(), m["body"]
    if fence[0] == "`" and "`" in info:
        return text, None  # CommonMark: a backtick fence's info string has no backtick
    if set(m["close"]) != {fence[0]}:
        return text, None
    inner = re.compile(rf"^[ \t]*{re.escape(fence[0])}{{{len(fence)},}}", re.MULTILINE)
    if inner.search(body):
        return text, None  # a second block: which one is the answer is not ours to guess
    return body, f"{fence}{info}"


def note(details: dict[str, object], opener: str | None) -> None:
    """Record a stripped fence in a case's details (shown by the reports)."""
    if opener is not None:
        details[_DETAIL] = opener
