"""The text-call rule's floor (:mod:`.textcalls`, rule 5): a write statement, or a read of a
forbidden table, anywhere in the model's text, whatever its format.

Why apart from the rules that read call syntax: the floor reads the text as an engine does
(comments of any length removed by one linear scan, nested as DuckDB and PostgreSQL nest
them and not, as SQLite does; names in any quotes, SQLite's and DuckDB's single quotes too;
``FROM`` lists of any length), and grows with each dialect's forms; the call rules grow with
each harness's formats. Every pattern here is linear in the text (the fifteenth re-probe's
H1-H4, H9 and L2: the bounded comment pattern let a longer comment keep ``DELETE`` and
``FROM`` apart, and its retries took seconds on 1 MB).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable

from .lead import FORMAT_CHARS
from .textwrites import write_finding


def words(words: Iterable[str]) -> str:
    """``words`` as one alternation of their first letters, each checking that no letter or
    digit is before it (an ``_`` may be: ``mcp__db__run_query``), then the rest of the words:
    the regular expression engine skips to those first letters and rejects a position at once
    (a search of 1 MB of prose in milliseconds; a ``\\b`` before a group makes it try every
    word at every position). Searched in the text's lower case."""
    firsts: dict[str, list[str]] = {}
    for word in sorted(set(words), key=len, reverse=True):
        firsts.setdefault(word[0], []).append(re.escape(word[1:]))
    return "(?:" + "|".join(f"{re.escape(c)}(?<![^\\W_]{re.escape(c)})(?:{'|'.join(rest)})"
                            for c, rest in sorted(firsts.items())) + ")"


#: Forbidden tables' names one text's search reads at most: past them the first is taken as
#: read (as :data:`~.textcalls.MAX_READ`).
_MAX_NAMES = 1000


#: What an engine skips inside a statement: a format character (``DEL\u00adETE``), and a
#: comment (``DELETE/**/FROM``, ``DELETE -- x`` then a new line), read as a blank
#: (:func:`_uncommented`).
INVISIBLE = re.compile(f"[{FORMAT_CHARS}]")
_COMMENT_MARK = re.compile(r"/\*|\*/|--|[\n\r]")
_STRING_OR_COMMENT_MARK = re.compile(r"/\*|\*/|--|[\n\r'\"]|\$\$")


def _uncommented(low: str, nested: bool, strings: bool = False) -> str:
    """``low`` with each comment a blank, by one linear scan of its marks, of any length
    (a bounded pattern left a longer one in place: the fifteenth re-probe's H2): ``--`` to
    the line's end, ``/* */`` to its first ``*/`` (SQLite, MySQL) or, ``nested``, to the
    ``*/`` that closes it (DuckDB and PostgreSQL nest them: H9); an unclosed one runs to the
    end. ``strings``: a comment mark inside a string literal (``'...'``, its ``''`` two
    literals that meet; ``"..."``; ``$$...$$``; an unclosed one runs to the end) is the
    string's, not a comment (``SELECT '--'; DELETE/**/FROM Genre``: the sixteenth re-probe's
    H1). The floor reads all four, and the text as written."""
    out: list[str] = []
    kept, depth, line, quote = 0, 0, False, ""
    for mark in (_STRING_OR_COMMENT_MARK if strings else _COMMENT_MARK).finditer(low):
        token, at = mark.group(), mark.start()
        if quote:
            if token == quote:
                quote = ""
        elif line:
            if token in "\n\r":
                line, kept = False, at
        elif depth:
            if token == "/*" and nested:
                depth += 1
            elif token == "*/":
                depth -= 1
                if not depth:
                    kept = mark.end()
        elif token in ("'", '"', "$$"):
            quote = token
        elif token == "/*" or token == "--":
            out.append(low[kept:at])
            out.append(" ")
            depth, line = (1, False) if token == "/*" else (0, True)
    if not depth and not line:
        out.append(low[kept:])
    return "".join(out)


#: The words after which a statement names the table it reads (a quoted name or a ``(`` may
#: follow at once: ``FROM"Employee"``, ``FROM(Employee)``).
_READ_OBJECT = words(["from", "join", "table", "describe", "desc", "summarize", "pivot",
                       "unpivot"]) + r"(?![\w$])\s*(?:(?:only|lateral)\s+)?"
#: What follows a table a statement reads, in the statement (``FROM Employee;``, ``FROM
#: Employee WHERE``, ``FROM Employee e JOIN``), and not in prose (``from employee records;``).
_STATEMENT_GOES_ON = re.compile(
    r"\s*(?:$|[;),]|(?:(?:as\s+)?(?:\w+|\"[^\"\n]{1,64}\"|`[^`\n]{1,64}`|\[[^\]\n]{1,64}\]|"
    r"'[^'\n]{1,64}')\s+)?(?:where|select|limit|order|group|join|inner|left|right|full|cross|"
    r"natural|using|on|union|except|intersect|having|qualify|window|offset|fetch|indexed|"
    r"not\s+indexed)\b)", re.MULTILINE)
#: Where a statement ends in a text (``;``, a fence), and where a paragraph does (a blank
#: line, which a statement may hold): a ``SELECT`` before a table's name reads it when no end
#: is between, within 2,000 characters or in the same paragraph (a select list of any length:
#: the fifteenth re-probe's H4).
_SPAN_END = re.compile(r";|```")
_PARAGRAPH_END = re.compile(r"\n[ \t\r]*\n")
_SELECT = re.compile(words(["select"]) + r"\b")


def _forbidden_read(low: str, forbidden: tuple[str, ...]) -> int | None:
    """Where ``low`` (a text in lower case) reads one of the ``forbidden`` tables (any case,
    qualified, quoted), or None: as a graph pattern's label (``(e:Employee)``), or named after
    ``FROM``/``JOIN``/``TABLE``/``DESCRIBE``... when a ``SELECT`` comes before it (:func:`_selected`)
    or the statement goes on after it (past :data:`_MAX_NAMES` such names, the first is taken
    as one)."""
    if not forbidden:
        return None

    named, label = _forbidden_patterns(forbidden)
    first = label.search(low)
    selects: list[int] | None = None
    ends: list[int] = []
    paragraphs: list[int] = []
    for n, match in enumerate(named.finditer(low, 0, first.start() if first else len(low))):
        if selects is None:
            selects = [m.start() for m in _SELECT.finditer(low)]
            ends = [m.start() for m in _SPAN_END.finditer(low)]
            paragraphs = [m.start() for m in _PARAGRAPH_END.finditer(low)]
        if n >= _MAX_NAMES or _selected(match.start(), selects, ends, paragraphs) or \
                _STATEMENT_GOES_ON.match(low, match.end()):
            return match.start()
    return first.start() if first else None


def _selected(at: int, selects: list[int], ends: list[int], paragraphs: list[int]) -> bool:
    """Whether a ``SELECT`` (at ``selects``, ascending) reads the name at ``at``: the last one
    before it, no statement's end (``ends``) between, and within 2,000 characters or no
    paragraph's end (``paragraphs``) between."""
    from bisect import bisect_left

    before = bisect_left(selects, at)
    if not before:
        return False
    select = selects[before - 1]
    end, paragraph = bisect_left(ends, at), bisect_left(paragraphs, at)
    return (not end or ends[end - 1] < select) and (
        at - select <= 2000 or not paragraph or paragraphs[paragraph - 1] < select)


@functools.lru_cache(maxsize=64)
def _forbidden_patterns(forbidden: tuple[str, ...]) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """A forbidden table named where a statement reads it, and as a graph pattern's label: two
    patterns, each starting so that the search skips to where it may be."""
    names = "|".join(re.escape(t.lower()) for t in sorted(set(forbidden), key=len,
                                                          reverse=True))
    quoted = rf"[\"`\[']?(?:{names})[\"`\]']?(?![\w$])"
    table = rf"(?:\(\s*){{0,8}}(?:[\w\"`\[\]']+\s*\.\s*){{0,2}}{quoted}"
    heads = rf"(?:{_READ_OBJECT}|{_SUBQUERY_ITEM}|{_ON_ITEM})"
    return (re.compile(rf"{heads}(?:{_FROM_ITEM}){{0,64}}{table}"),
            re.compile(rf"[(\[]\s*\w*\s*:\s*{quoted}"))


#: An item of a ``FROM`` list before the one read (``FROM Genre g, Employee e``, ``FROM
#: (Genre) AS g, main.Employee``; 64 at most), each read once (atomic: no backtracking into
#: it) and none a statement's word (so that the lists of two ``FROM`` are not read twice);
#: and the end of a subquery's item (``FROM (SELECT ...) g, Employee``) or of a join's.
_FROM_ITEM = (r"(?>(?:\(\s*){0,8}(?!(?:from|join|table|select)(?![\w$]))"
              r"(?:[\w\"`\[\]]+\s*\.\s*){0,2}[\w\"`\[\]$]+(?:\s*\)){0,8}"
              r"(?:\s+(?:as\s+)?\w+(?:\s*\)){0,8})?\s*,\s*)")
_SUBQUERY_ITEM = r"\)(?:\s*\)){0,8}(?:\s+(?:as\s+)?\w+)?\s*,\s*"
#: The end of a joined item's condition (``JOIN Track t ON t.GenreId = g.GenreId,
#: Employee``): a comparison in it, so that prose (``based on Genre, ...``) is none.
_ON_ITEM = (r"on(?<![\w]on)\s(?=[^,;()]{0,128}?(?:[=<>]|(?<![\w])(?:is|like|glob|between|in|"
            r"regexp|match|\d+|true|false|null)(?![\w])))[^,;()]{0,128},\s*")


def floor_finding(seen: str, coded: str, forbidden: tuple[str, ...]
                  ) -> tuple[int, str, str] | None:
    """Rule 5: a write statement, or a read of a forbidden table, anywhere in the text
    (``seen``: in lower case, its format characters removed; ``coded``: the same of the text
    as code gives it to a tool), as ``(where, the reading, what)``, or None. Each text is
    read as an engine reads it (a comment a blank, nested or not: :func:`_uncommented`) and
    as written, and with only the comments outside string literals a blank (``strings``): a
    ``--`` in a string (``SELECT '--'; DELETE/**/FROM Genre``) is no comment."""
    readings = [reading for text in (seen, coded) for reading in (
        _uncommented(text, False), _uncommented(text, True), text,
        _uncommented(text, False, strings=True), _uncommented(text, True, strings=True))]
    for plain in dict.fromkeys(readings):
        match = write_finding(plain)
        if match is not None:
            return match.start(), plain, f"writes: {' '.join(match.group().split())[:80]!r}"
        start = _forbidden_read(plain, forbidden)
        if start is not None:
            return start, plain, "reads a forbidden table"
    return None
