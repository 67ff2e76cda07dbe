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


#: Secrets a recorded trace may hold in free text, by what they are (``queryeval mine`` masks
#: them before a case file is written; the reports' scrubber masks configured values instead).
_TOKEN_FORMS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("api key", re.compile(r"\bsk-(?:ant-|proj-)?[A-Za-z0-9_-]{16,}")),
    ("bearer token", re.compile(r"(?i)(?P<head>\bbearer\s+)(?P<v>[A-Za-z0-9._~+/-]{16,}=*)")),
    ("AWS access key", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    ("GitHub token", re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,}\b")),
    ("Slack token", re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}")),
    ("JSON web token", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")),
    ("credential", re.compile(r"(?i)(?P<head>[\"']?\b(?:api[_-]?key|secret|token|password|passwd|"
                              r"pwd)[\"']?\s*[=:]\s*[\"']?)(?P<v>[^\s\"',;}]{6,})")),
)


def _masked(match: re.Match[str]) -> str:
    """A match masked whole, or only its ``v`` group (the value after a ``key=``)."""
    if "v" in match.re.groupindex:
        return match["head"] + MASK
    return MASK


def mask_tokens(text: str, literals: Iterable[str] = ()) -> tuple[str, list[str]]:
    """``text`` with every secret of :data:`_TOKEN_FORMS`, every URL password and every
    ``literals`` value masked, and what was masked (by form, never the secret)."""
    found: list[str] = []
    for value in literals:
        if value and value in text:
            text = text.replace(value, MASK)
            found.append("listed secret")
    masked = mask_url(text)
    if masked != text:
        found.append("URL password")
        text = masked
    for name, pattern in _TOKEN_FORMS:
        text, n = pattern.subn(_masked, text)
        found.extend([name] * n)
    return text, found
