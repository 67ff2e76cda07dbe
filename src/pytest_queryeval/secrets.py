"""Keep secrets (expanded ``${VAR}`` values, URL passwords) out of every report."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

MASK = "***"
_URL_PASSWORD = re.compile(r"(?P<scheme>[a-zA-Z][\w+.-]*://)(?P<user>[^:/@\s]*):(?P<pw>[^@/\s]+)@")


def mask_url(text: str) -> str:
    """``scheme://user:secret@host`` -> ``scheme://user:***@host``."""
    return _URL_PASSWORD.sub(lambda m: f"{m['scheme']}{m['user']}:{MASK}@", text)


def url_passwords(text: str) -> set[str]:
    return {m["pw"] for m in _URL_PASSWORD.finditer(text)}


class Scrubber:
    """Replaces every known secret in strings and nested JSON-like data."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self.secrets: set[str] = set()
        self._ordered: list[str] = []
        self.add(secrets)

    def add(self, secrets: Iterable[str]) -> None:
        # Very short values would mask innocent text ("1", "a"): keep them out of output
        # differently (they are masked as URL passwords), not by substring replacement.
        before = len(self.secrets)
        self.secrets.update(s for s in secrets if isinstance(s, str) and len(s) >= 3)
        if len(self.secrets) != before:
            # called once per case with the suite's (usually unchanged) secrets
            self._ordered = sorted(self.secrets, key=len, reverse=True)

    def text(self, value: str) -> str:
        if "://" in value:  # cheap pre-check: this runs on every string of every record
            value = mask_url(value)
        for secret in self._ordered:
            if secret in value:
                value = value.replace(secret, MASK)
        return value

    def data(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.data(k) if isinstance(k, str) else k: self.data(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.data(v) for v in value]
        return value
