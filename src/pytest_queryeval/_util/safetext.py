"""Text from suites and predictions made safe for a terminal, XML and environment variables.

Why: a prediction's terminal escape codes reached the console (``\\x1b[2J`` clears it, others
retitle the window or fake output), and a case id with a lone surrogate (``"x\\ud800"``,
valid in YAML, not encodable as UTF-8) crashed pytest when it put the node id in an
environment variable, failing the next file's case with a wrong error.
"""

from __future__ import annotations

import re

#: C0 controls but newline and tab, DEL and C1 controls, lone surrogates, and the Unicode
#: bidirectional overrides (text that displays in another order than it reads).
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff\u202a-\u202e\u2066-\u2069]")


def _escape(m: re.Match[str]) -> str:
    return m.group().encode("unicode_escape").decode("ascii")


def printable(text: str) -> str:
    """``text`` with every unsafe character written as its Python escape (``\\x1b``,
    ``\\ud800``); newlines and tabs kept."""
    return _UNSAFE.sub(_escape, text) if _UNSAFE.search(text) else text


def is_safe(text: str) -> bool:
    """No unsafe character, newline or tab (what an identifier may hold)."""
    return not _UNSAFE.search(text) and "\n" not in text and "\t" not in text


_SURROGATE = re.compile("[\ud800-\udfff]")


def no_surrogates(text: str) -> str:
    """Lone surrogates (not encodable as UTF-8: every report writer would fail on them)
    written as their escapes; everything else unchanged."""
    return _SURROGATE.sub(_escape, text) if _SURROGATE.search(text) else text
