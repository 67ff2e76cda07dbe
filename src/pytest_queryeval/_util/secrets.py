"""Keep secrets (expanded ``${VAR}`` values, URL passwords) out of every report."""

from __future__ import annotations

import logging
import re
import urllib.parse
from collections.abc import Iterable

from .boundedio import MAX_WALK_DEPTH, TOO_DEEP

MASK = "***"
#: ``scheme://user:password@`` in free text: the password may hold ``/`` (SQLAlchemy accepts
#: it), not blanks (the text goes on); a configured URL's password is also a literal secret.
_URL_PASSWORD = re.compile(r"(?P<scheme>[a-zA-Z][\w+.-]*://)(?P<user>[^:/@\s]*):(?P<pw>[^@\s]+)@")
#: ``?password=...`` in a URL's query string (some dialects take credentials there).
QUERY_PASSWORD = re.compile(r"(?P<head>[?&](?:password|pwd|passwd)=)(?P<pw>[^&\s]*)",
                            re.IGNORECASE)
#: A whole configured URL, read as SQLAlchemy reads it: the password runs to the first ``@``
#: (``/`` and blanks included).
_CONFIG_URL = re.compile(r"^\s*[a-zA-Z][\w+.-]*://[^:/@]*:(?P<pw>[^@]*)@")
#: Libraries whose log records quote statement text (sqlglot logs a statement it cannot parse
#: in full, with whatever secret a model echoed into it); pytest captures logs into the
#: terminal and junit reports, where the scrubber never sees them.
QUIET_LOGGERS = ("sqlglot",)


def mask_url(text: str) -> str:
    """``scheme://user:secret@host`` -> ``scheme://user:***@host`` and ``?password=secret``
    -> ``?password=***``, anywhere in ``text``."""
    text = _URL_PASSWORD.sub(lambda m: f"{m['scheme']}{m['user']}:{MASK}@", text)
    return QUERY_PASSWORD.sub(lambda m: f"{m['head']}{MASK}", text)


def url_passwords(text: str) -> set[str]:
    """The passwords of the URLs in ``text`` (a configured value), as written and decoded."""
    found = {m["pw"] for m in _URL_PASSWORD.finditer(text)}
    whole = _CONFIG_URL.match(text)
    if whole and whole["pw"]:
        found.add(whole["pw"])
    found |= {urllib.parse.unquote(pw) for pw in found}
    return found


def quiet_library_logs() -> None:
    """Keep the log records of :data:`QUIET_LOGGERS` below ERROR out of every output."""
    for name in QUIET_LOGGERS:
        logger = logging.getLogger(name)
        if logger.level < logging.ERROR:
            logger.setLevel(logging.ERROR)


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

    def data(self, value: object, depth: int = 0) -> object:
        """``value`` with every string scrubbed; a container nested deeper than
        ``MAX_WALK_DEPTH`` becomes the ``TOO_DEEP`` marker (no RecursionError)."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict | list | tuple) and depth >= MAX_WALK_DEPTH:
            return TOO_DEEP
        if isinstance(value, dict):
            return {self.data(k) if isinstance(k, str) else k: self.data(v, depth + 1)
                    for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.data(v, depth + 1) for v in value]
        return value
