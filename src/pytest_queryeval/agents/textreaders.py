"""Calls written in the model's text of tools that read rows or run code without a statement
the text rule can judge, and of query tools whose names the query-name rule does not read.

Why a module of its own: the rules on a recorded call of a tool the plugin does not serve (a
data reader, :mod:`.datareaders`; a code tool, :mod:`.codetools`) had no counterpart for the
same call written in the text, so ``<tool_call>{"name": "read_table", "arguments": {"table":
"Employee"}}``, ``[list_employees()]``, an ``execute_python`` call and
``ask_database(query="SELECT * FROM Track")`` passed the count gates (issue 58, the fifteenth
re-probe's H5 and H8). Each ``(`` and each quoted name key is looked at once, in a bounded
window: linear in the text.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Collection

from .codetools import code_tool, name_words
from .language import HEADS
from .querynames import DB_WORDS
from .readernames import reads_by_name
from .toolnames import named_tool

#: A quoted name in a call's object (``"name": "read_table"``, ``"tool": "python"``).
_JSON_NAME = re.compile(r"[\"'](?:name|tool|tool_?name|function|recipient_?name)[\"']"
                        r"[ \t\r\n]{0,64}:[ \t\r\n]{0,64}[\"']([^\"'\n]{1,128})[\"']")
#: A name called (``read_table(``, ``"python"(``), searched from its first letter (none of a
#: name's characters, nor a method's ``.``, before it: ``pd.read_csv(`` is code, not a tool):
#: each word is tried once.
_CALLED = re.compile(r"(?<![a-z0-9_.$])([a-z_][a-z0-9_]{0,127})[\"'`]?\(")
#: A call given a quoted text or a keyword (not ``the tools(s)``).
_GIVEN = re.compile(r"[ \t]{0,8}(?:[rbuf]{0,2}[\"']|[a-z_]\w{0,64}[ \t]{0,8}=(?!=))")
#: A statement's first word, quoted (the arguments of ``ask_database("DELETE FROM ...")``).
_HEAD = re.compile(r"[\"'`][ \t\r\n(]{0,16}(?:" + "|".join(sorted(HEADS)) + r")(?![\w$])")
#: Names looked at in one text at most; past them, a call found.
MAX_NAMES = 1000
_WINDOW = 512
#: Words of a query tool's name beside :data:`~.querynames.DB_WORDS`.
_QUERY_WORDS = frozenset({"sql", "query", "queries", "sqlite"})


def foreign_text_call(text: str, low: str, forbidden: Collection[str]) -> tuple[int, str] | None:
    """Where the model's ``text`` (``low``: lower case, in place) calls a tool the plugin does
    not serve that reads rows, runs code or runs a statement, and why, or None: a name in a
    call's object (``{"name": "read_table", ...}``) or in call syntax (``read_table(...)``;
    a code tool's or a database-named tool's given a quoted text or a keyword), judged by the
    rules of a recorded call. ``forbidden``: the case's forbidden tables, read as tables."""
    tables = frozenset(t.lower() for t in forbidden if isinstance(t, str) and t)
    seen: set[str] = set()
    for n, match in enumerate(_JSON_NAME.finditer(low)):
        if n >= 10 * MAX_NAMES:
            return match.start(), (f"names tools in more than {10 * MAX_NAMES:,} objects, "
                                   "which are not all read")
        name = text[slice(*match.span(1))]
        why = _judge(name, tables, given=True, statement=_statement_near(low, match.end()))
        if why is not None:
            return match.start(), why
        if _forbidden_near(low, match.end(), tables):
            return match.start(), f"calls the tool {name[:80]!r} on a forbidden table"
        seen.add(name)
        if len(seen) > MAX_NAMES:
            return match.start(), f"names more than {MAX_NAMES:,} tools, which are not all read"
    for called in _CALLED.finditer(low):
        start, name = called.start(), text[slice(*called.span(1))]
        if name in seen:
            continue
        seen.add(name)
        if len(seen) > MAX_NAMES:
            return start, f"names more than {MAX_NAMES:,} tools, which are not all read"
        why = _judge(name, tables, given=_GIVEN.match(low, called.end()) is not None,
                     statement=_statement_near(low, called.end()))
        if why is not None:
            return start, why
    return None


def _statement_near(low: str, at: int) -> bool:
    return _HEAD.search(low, at, at + _WINDOW) is not None


def _forbidden_near(low: str, at: int, tables: frozenset[str]) -> bool:
    window = low[at:at + _WINDOW]
    return any(f'"{t}"' in window or f"'{t}'" in window for t in tables)


@functools.lru_cache(maxsize=4096)
def _judge_cached(name: str, tables: frozenset[str], given: bool, statement: bool) -> str | None:
    if named_tool(name) is not None:
        return None  # the plugin's own tool: the text rule's own
    code = code_tool(name)
    if code is not None and given:
        return f"calls the tool {name[:80]!r}, which runs code ({code!r})"
    if reads_by_name(name, tables):
        return f"calls the tool {name[:80]!r}, which reads data by its name"
    words = set(name_words(name))
    if given and statement and words & (DB_WORDS | _QUERY_WORDS):
        return f"calls the tool {name[:80]!r}, a database's tool, with a statement"
    return None


def _judge(name: str, tables: frozenset[str], *, given: bool, statement: bool) -> str | None:
    """Why a call of ``name`` written in the text is a call whose reading is not counted."""
    return _judge_cached(name, tables, given, statement)
