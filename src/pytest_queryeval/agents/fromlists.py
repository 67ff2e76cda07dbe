"""Where a text reads a forbidden table by its name: every item of every ``FROM`` list, read
by a walk of its tokens, and whether a statement reads it (the floor's reads,
:mod:`.textfloor`).

Why a walk and not patterns: bounded patterns read a list up to their bounds and then read
nothing, so a read past them passed the count gates (the sixteenth re-probe's N4: a ``JOIN
... ON`` condition holding a ``(``, a ``,`` in a string or 128 characters, then ``,
Employee e``; a ``;`` or three backquotes in a string between ``SELECT`` and ``FROM``; a
select list of 2,000 characters holding a blank line; 65 items, which DuckDB runs). The walk
reads string literals (``'...'`` and its ``''``, ``"..."``, ``` `...` ```, ``[...]``,
``$$...$$``) as single tokens and a condition over balanced parentheses, so no length, count
or character ends an item's reading. Linear in the text: each walk stops at the next
``FROM``/``JOIN`` it reads (which goes on from there with its depth), each parenthesis group
is scanned once (the scan of one from a position is always the same), and every bound fails
closed: past it, the read is found.
"""

from __future__ import annotations

import functools
import re
from bisect import bisect_left
from collections.abc import Iterable

from .statementends import FENCE_READ, reads_on


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


#: Forbidden tables' names read as items one text's search decides at most: past them the
#: first is taken as read (as :data:`~.textcalls.MAX_READ`).
_MAX_NAMES = 1000

#: The words after which a statement names the tables it reads; DuckDB's ``SHOW`` only where
#: it opens a subquery (``FROM (SHOW Track)`` reads Track's schema: the thirty-second
#: re-probe's F1), as prose says "show" alone.
_HEAD = re.compile(words(["from", "join", "table", "describe", "desc", "summarize", "pivot",
                          "unpivot"]) + r"(?![\w$])|\(\s*+show(?![\w$])")
#: The heads that end a walk that reads them (the clause goes on in their own walk).
_HANDOFF = frozenset({"from", "join"})
#: A token: a string literal or quoted name (unclosed: to the end; DuckDB's and PostgreSQL's
#: ``E'...'`` with its backslash escapes), a word, three backquotes (a fence: a statement's
#: end), or one other character.
_TOKEN = re.compile(
    r"[ \t\r\n\f\v]*(?:(e'(?:[^'\\]|\\[\s\S]|'')*'?|'[^']*(?:''[^']*)*'?|\"[^\"]*\"?|"
    r"`(?!``)[^`]*`?|\[[^\]]*\]?|"
    r"\$\$(?:[^$]|\$(?!\$))*(?:\$\$)?)|([\w$]+)|(```)|(\S))")
_QUOTED, _WORD, _FENCE, _OTHER = 1, 2, 3, 4
#: What makes a ``(`` where an item is expected a subquery's (skipped: its own ``FROM`` is read
#: by its own walk), not a parenthesized item or join.
_SUBQUERY = frozenset({"select", "with", "values", "from", "table", "pivot", "unpivot",
                       "summarize", "describe", "show"})
#: Words between a list's items that do not end it: a join's kind, an index's clause.
_BETWEEN = frozenset({"inner", "left", "right", "full", "outer", "cross", "natural",
                      "positional", "asof", "anti", "semi", "lateral", "as", "indexed", "by",
                      "not", "only"})
#: Words that start a join's condition (read to the next ``,``, join or clause at its depth).
_CONDITION = frozenset({"on", "using", "tablesample"})
#: Words that end a condition, and a list: the statement's next clause.
_CLAUSE = frozenset({"where", "group", "order", "limit", "having", "union", "except",
                     "intersect", "window", "qualify", "offset", "fetch", "select", "returning",
                     "into", "values", "set", "for"})
#: What makes a condition SQL's: a comparison, a test, a literal, a connective (a condition
#: of one word is too: ``ON Milliseconds, Employee``).
_COMPARES = frozenset({"=", "<", ">", "!", "is", "like", "glob", "between", "in", "regexp",
                       "match", "true", "false", "null", "similar", "ilike", "and", "or",
                       "not", "case", "when", "collate", "exists", "cast",
                       # operators and postfix tests no sentence has between ``ON`` and its
                       # comma (``ON Milliseconds NOTNULL, Employee``, ``ON k::BOOLEAN``, ``ON
                       # +x``: the eighteenth re-probe's N5)
                       "+", "-", "*", "/", "%", "~", "|", "&", "^", ":", "notnull", "isnull",
                       "escape", "any", "all", "some", "distinct",
                       # DuckDB's prefix absolute value (``ON @k, Track``: the nineteenth's H5)
                       "@"})
_EXPECT, _AFTER, _ALIASED, _COND = 0, 1, 2, 3


class _Spent(Exception):
    """The walks' budget of tokens is spent: the text is taken as read (fail closed)."""


class _Walks:
    """The walks of one text (lower case) from each head, and what they share: the scans of
    parenthesis groups, the depth each handed-off head starts at, the budget."""

    def __init__(self, low: str, names: frozenset[str]) -> None:
        self.low, self.names = low, names
        self.left = 4 * len(low) + 10_000
        self.closes: dict[int, int] = {}
        self.depths: dict[int, int] = {}
        self.found: list[tuple[int, int]] = []

    def token(self, at: int) -> tuple[int, int, int, str] | None:
        self.left -= 1
        if self.left < 0:
            raise _Spent
        match = _TOKEN.match(self.low, at)
        if match is None:
            return None
        kind = match.lastindex or _OTHER
        return kind, match.start(kind), match.end(), match.group(kind)

    def skip(self, at: int) -> int:
        """Where the group whose ``(`` is at ``at`` ends (after its ``)``), or -1: it runs to
        a statement's end or the text's. Every group inside it is recorded too."""
        if at in self.closes:
            return self.closes[at]
        stack, pos = [at], at + 1
        while stack:
            tok = self.token(pos)
            if tok is None or tok[0] == _FENCE or tok[3] == ";":
                self.closes.update(dict.fromkeys(stack, -1))
                return -1
            _, start, pos, text = tok
            if text == "(":
                known = self.closes.get(start)
                if known is None:
                    stack.append(start)
                elif known < 0:
                    self.closes.update(dict.fromkeys(stack, -1))
                    return -1
                else:
                    pos = known
            elif text == ")":
                self.closes[stack.pop()] = pos
        return self.closes[at]

    def name(self, kind: int, start: int, end: int, text: str) -> None:
        if kind == _QUOTED:
            closer = {"'": "'", '"': '"', "`": "`", "[": "]", "$": "$"}[text[0]]
            text = text[1:-1] if len(text) > 1 and text.endswith(closer) else text[1:]
        if text in self.names:
            self.found.append((start, end))

    def walk(self, at: int, depth: int) -> None:
        """Read the list after the head ending at ``at``: each item's name (qualified,
        quoted, in parentheses), its alias, a join's condition, to where the list ends."""
        mode, sql, one = _EXPECT, False, 0
        while (tok := self.token(at)) is not None:
            kind, start, end, text = tok
            if kind == _FENCE or text == ";":
                return
            if kind == _WORD and text in _HANDOFF:
                self.depths[start] = max(self.depths.get(start, 0), depth)
                return
            if text == "(":
                if mode == _EXPECT and not self.subquery(end):
                    depth, at = depth + 1, end
                    continue
                at, sql = self.skip(start), True
                if at < 0:
                    return
                mode = _AFTER if mode == _EXPECT else mode
                continue
            if text == ")":
                depth, at, mode = depth - 1, end, _AFTER
                if depth < 0:
                    return
                continue
            if mode == _COND:
                if (text == "," and not sql and one != 1) or (kind == _WORD and text in _CLAUSE):
                    return
                sql, one = sql or self.compares(tok), one + 1 if kind == _WORD else 2
                mode = _EXPECT if text == "," else _COND
            else:
                mode, sql, one = self.step(mode, tok), False, 0
                if mode < 0:
                    return
            at = end

    def compares(self, tok: tuple[int, int, int, str]) -> bool:
        """Whether a condition's token is SQL's, not prose's (``based on Genre, ...``): a
        comparison, a literal, a qualified name's ``.``."""
        kind, start, end, text = tok
        if kind == _QUOTED or text in _COMPARES or text[0].isdigit():
            return True
        low = self.low
        return text == "." and start > 0 and end < len(low) and \
            (low[start - 1].isalnum() or low[start - 1] in "_\"`]") and \
            (low[end].isalnum() or low[end] in "_\"`[")

    def step(self, mode: int, tok: tuple[int, int, int, str]) -> int:
        """The walk's mode after ``tok`` (not a parenthesis, not in a condition), or -1: the
        list ends. After an item's name, one alias (and an index's name after ``BY``)."""
        kind, start, end, text = tok
        if mode == _EXPECT:
            if kind == _WORD and text in ("only", "lateral"):
                return _EXPECT
            if kind in (_WORD, _QUOTED):
                self.name(kind, start, end, text)
                return _AFTER
            return -1
        if text in (",", "."):
            return _EXPECT
        if kind == _WORD and text in _CONDITION:
            return _COND
        if kind == _WORD and text == "by":
            return _AFTER
        if kind == _WORD and text in _BETWEEN:
            return mode
        if mode == _AFTER and kind in (_WORD, _QUOTED) and text not in _CLAUSE:
            return _ALIASED  # an alias, an index's name
        return -1

    def subquery(self, at: int) -> bool:
        tok = self.token(at)
        return tok is not None and tok[0] == _WORD and tok[3] in _SUBQUERY


def _items(low: str, names: frozenset[str]) -> list[tuple[int, int]] | None:
    """Where ``low`` names one of ``names`` as an item of a list a head reads, as ``(start,
    end)``, ascending; None when the walks' budget is spent (taken as read)."""
    walks = _Walks(low, names)
    try:
        for head in _HEAD.finditer(low):
            walks.walk(head.end(), walks.depths.pop(head.start(), 0))
    except _Spent:
        return None
    return sorted(walks.found)


#: What follows a table a statement reads, in the statement (``FROM Employee;``, ``FROM
#: Employee WHERE``, ``FROM Employee e JOIN``; an alias at a line's end, a ``;`` or ``)``
#: between: ``FROM Employee e`` then a fence; an alias, ``;`` and the next statement), and
#: not in prose (``from employee records.``, ``from employee records; nothing ...``).
_ALIAS = (r"(?:as\s+)?(?:\w+|\"[^\"\n]{1,64}\"|`[^`\n]{1,64}`|\[[^\]\n]{1,64}\]|"
          r"'[^'\n]{1,64}')")
#: An item of a list after its first: a name, qualified or quoted, and its alias.
_ITEM = rf"[\w\"`\[][\w.\"`\[\]]{{0,128}}+(?:\s+{_ALIAS})?"
#: A subquery's item (``LATERAL`` too), and an item of a list after its first, a subquery's
#: or a table's.
_SUBQUERY_ITEM = r"(?:lateral\s*)?\(\s*(?:select|with|values|from)\b"
_LIST_ITEM = rf"(?:{_SUBQUERY_ITEM}|{_ITEM})"
#: The first words of the statement after a list's ``;``.
_NEXT_STATEMENT = r"(?:select|with|values|from|pragma|insert|update|delete)\b"
_STATEMENT_GOES_ON = re.compile(
    rf"\s*(?:$|[;),]|(?:{_ALIAS}\s+)?(?:where|select|limit|order|group|join|inner|left|right|"
    r"full|cross|natural|using|on|union|except|intersect|having|qualify|window|offset|fetch|"
    rf"indexed|not\s+indexed)\b|{_ALIAS}[ \t]*[;)]?[ \t]*(?:$|```)|"
    rf"{_ALIAS}[ \t]*;\s*{_NEXT_STATEMENT}|"
    # an alias, then more items of the list (a subquery's too) that go on as a statement does
    # (``FROM Employee e, Genre g`` at a statement's end: the eighteenth re-probe's N6; then a
    # third item, a join of any kind, ``OFFSET``, ``UNION``: the nineteenth's H5; ``LATERAL``,
    # ``WINDOW``, DuckDB's joins and samples, ``FETCH``, ``;`` and a statement: the twentieth's F2)
    rf"{_ALIAS}\s*,\s*(?:{_SUBQUERY_ITEM}|"
    rf"{_ITEM}(?:\s*,\s*{_LIST_ITEM}){{0,64}}+[ \t]*"
    r"(?:[;)][ \t]*)?(?:$|```|(?:where|limit|order|group|join|cross|natural|inner|left|right|"
    r"full|offset|union|intersect|except|qualify|having|tablesample)\b|window\s+\w+\s+as\b|"
    r"(?:semi|anti|asof|positional)\s+(?:left\s+)?join\b|using\s+sample\b|"
    r"fetch\s+(?:first|next)\b)|"
    rf"{_ITEM}(?:\s*,\s*{_LIST_ITEM}){{0,64}}+\s*;\s*{_NEXT_STATEMENT}))",
    re.MULTILINE)
_SELECT = re.compile(words(["select"]) + r"\b")
#: What reaches an ``IN`` table: a ``SELECT``, or ``VALUES`` and its ``(`` (SQLite runs
#: ``VALUES((1, ..., 15) IN Employee)``, which no ``SELECT`` reaches: the twenty-seventh
#: re-probe's F2). Each is six letters, as :func:`_reaches` reads from past them.
_IN_HEAD = re.compile(words(["select"]) + r"\b|" + words(["values"]) + r"\s*+\(")
#: What a scan from a ``SELECT`` looks for: a statement's end (``;``, a fence), a paragraph's
#: end (a blank line), a string literal's or quoted name's start (read to its end).
_REACH_MARK = re.compile(r"```|\$\$|['\"`\[;]|\n[ \t\r]*\n")
_CLOSERS = {"'": "'", '"': '"', "`": "`", "[": "]", "$$": "$$"}
#: Fences one text's reaches ask the engines' reading at, at most (each parses up to
#: :data:`~.statementends.FENCE_READ` characters).
_FENCES = 32
_E_STRING_END = re.compile(r"(?:[^'\\]|\\.)*'", re.DOTALL)


def _reaches(low: str, selects: list[int], passed: list[int] | None = None
             ) -> list[tuple[int, int]]:
    """For each ``SELECT`` (at ``selects``, ascending), where the first statement's end and
    the first paragraph's end after it outside string literals are (the text's length: none).
    A scan that reaches the next ``SELECT`` outside a string goes on as that one's; past a
    budget of characters, every ``SELECT`` reads to the end (fail closed). A fence ends a
    statement only where the engines end it there (:func:`_fence_ends`); ``passed``: where
    the fences a statement goes on past are, added to."""
    size, left, fences = len(low), 4 * len(low) + 100_000, [_FENCES]
    out = [(size, size)] * len(selects)
    for i in range(len(selects) - 1, -1, -1):
        pos, end, para, after, through = selects[i] + 6, size, size, i + 1, False
        while left > 0:
            while after < len(selects) and selects[after] < pos:
                after += 1
            bound = selects[after] if after < len(selects) else size
            mark = _REACH_MARK.search(low, pos, bound)
            at = mark.start() if mark else bound
            if at == bound < size:
                end, para = out[after][0], min(para, out[after][1])
                break
            left -= at - pos + 1
            if mark is None:
                break
            token = mark.group()
            if token == "```" and not through and not _fence_ends(low, selects[i], at, fences):
                through, pos = True, mark.end()  # the engines read on: so does the reach
                if passed is not None:
                    passed.append(at)
                continue
            if token == ";" or (token == "```" and not through):
                end = at
                break
            if token.startswith("\n"):
                para, pos = min(para, at), mark.end()
                continue
            close = _close(low, mark.start(), token)
            left -= (size if close < 0 else close) - mark.end()
            if close < 0:
                break
            pos = close
        if left <= 0:
            return [(size, size)] * len(selects)
        out[i] = (end, para)
    return out


def _fence_ends(low: str, start: int, at: int, fences: list[int]) -> bool:
    """Whether the fence at ``at`` ends the statement that starts at ``start``: where each
    engine's own parser rejects what it then reads as one statement, or reads the fence as an
    alias, whole or to one of the next line ends (:func:`~.statementends.reads_on`, the span
    search's rule). ``K``, a fence, then `` `, Employee e`` or `` ` WHERE (1, ..., 15) NOT IN
    Employee`` is a join or an ``IN`` read of the forbidden table to both engines, which the
    floor took for prose after a fenced statement (the twenty-seventh re-probe's F3 and F4).
    ``fences``: the reads left to the text (:data:`_FENCES`); past them a fence ends nothing
    (fail closed)."""
    fences[0] -= 1
    if fences[0] < 0:
        return False
    return not reads_on(low[start : start + FENCE_READ + 1], low[start:at].rstrip(), at - start)


def _close(low: str, at: int, quote: str) -> int:
    """Where the string literal or quoted name opened at ``at`` by ``quote`` ends (after its
    closer), or -1: unclosed. ``E'...'`` (no letter or digit before the ``E``) reads its
    backslash escapes (``E'\\';'`` is one string)."""
    if quote == "'" and at and low[at - 1] == "e" and (at < 2 or not low[at - 2].isalnum()):
        end = _E_STRING_END.match(low, at + 1)
        return end.end() if end is not None else -1
    close = low.find(_CLOSERS[quote], at + len(quote))
    return close + len(_CLOSERS[quote]) if close >= 0 else -1


def forbidden_read(low: str, forbidden: tuple[str, ...]) -> int | None:
    """Where ``low`` (a text in lower case) reads one of the ``forbidden`` tables (any case,
    qualified, quoted), or None: as a graph pattern's label (``(e:Employee)``), as a pragma's
    argument (``PRAGMA table_info(Employee)``, ``pragma_index_list('Employee')``), or as an item
    of a list after ``FROM``/``JOIN``/``TABLE``/``DESCRIBE``... when a ``SELECT`` comes before
    it (:func:`_selected`) or the statement goes on after it (past :data:`_MAX_NAMES` such
    items, or past the walks' budget, the first is taken as one)."""
    if not forbidden:
        return None
    names = frozenset(t.lower() for t in forbidden)
    if not any(name in low for name in names):
        return None
    found = [m.start() for m in (_label_pattern(forbidden).search(low),
                                 _pragma_pattern(forbidden).search(low)) if m is not None]
    selects: list[int] | None = None
    reach: list[tuple[int, int]] = []
    ins = [m.start() for m in _in_pattern(forbidden).finditer(low)]
    if ins:  # SQLite's ``x IN Employee``: a read of the table, in a ``SELECT``'s reach
        heads = [m.start() for m in _IN_HEAD.finditer(low)]
        found += [at for at in ins if _selected(at, heads, _reaches(low, heads))][:1]
    first = min(found) if found else None
    passed: list[int] = []
    if "```" in low:  # the fences a statement goes on past, read as the engines read them
        selects = [m.start() for m in _SELECT.finditer(low)]
        reach = _reaches(low, selects, passed)
    items = _items(_read_on(low, passed), names)
    if items is None:
        return 0
    for n, (start, end) in enumerate(items):
        if first is not None and start >= first:
            break
        if selects is None:
            selects = [m.start() for m in _SELECT.finditer(low)]
            reach = _reaches(low, selects)
        if n >= _MAX_NAMES or _selected(start, selects, reach) or \
                _STATEMENT_GOES_ON.match(low, end):
            return start
    return first


def _read_on(low: str, fences: list[int]) -> str:
    """``low`` with each fence at ``fences`` read as the engines read it there: its first
    backtick opens a quoted name (its next two, doubled, are one backtick in it) that the next
    backtick closes. The walks read a fence as a statement's end, so ``K``, a fence, then
    `` `, Employee e`` and ``WHERE 1`` (a join, to the engines) read no ``Employee``."""
    if not fences:
        return low
    out, pos = [], 0
    for at in sorted(fences):
        out += [low[pos:at], "  `"]
        pos = at + 3
    return "".join(out) + low[pos:]


def _selected(at: int, selects: list[int], reach: list[tuple[int, int]]) -> bool:
    """Whether a ``SELECT`` (at ``selects``, ascending) reads the name at ``at``: the last one
    before it, no statement's end outside string literals between, and within 2,000
    characters or no paragraph's end outside string literals between (``reach``:
    :func:`_reaches`)."""
    before = bisect_left(selects, at)
    if not before:
        return False
    select = selects[before - 1]
    end, paragraph = reach[before - 1]
    return at <= end and (at - select <= 2000 or at <= paragraph)


@functools.lru_cache(maxsize=64)
def _label_pattern(forbidden: tuple[str, ...]) -> re.Pattern[str]:
    """A forbidden table named as a graph pattern's label, starting so that the search skips
    to where it may be."""
    names = "|".join(re.escape(t.lower()) for t in sorted(set(forbidden), key=len,
                                                          reverse=True))
    return re.compile(rf"[(\[]\s*\w*\s*:\s*[\"`\[']?(?:{names})[\"`\]']?(?![\w$])")


@functools.lru_cache(maxsize=64)
def _in_pattern(forbidden: tuple[str, ...]) -> re.Pattern[str]:
    """A forbidden table on the right of ``IN``, not a call's name: SQLite reads ``x IN
    Employee`` as ``x IN (SELECT * FROM Employee)`` (a row value of the table's width
    matches), a read no ``FROM`` list shows (the twenty-sixth re-probe's F1). Its name may be
    single-quoted too, as SQLite's grammar takes a string for a name there (``x IN
    'Employee'``, ``main.'Employee'``: the twenty-seventh re-probe's F1)."""
    names = "|".join(re.escape(t.lower()) for t in sorted(set(forbidden), key=len,
                                                          reverse=True))
    part = r"(?:[\w$]++|\"[^\"\n]{0,256}+\"|'[^'\n]{0,256}+'|`[^`\n]{0,256}+`|\[[^\]\n]{0,256}+\])"
    return re.compile(rf"(?<![\w$])in(?:\s++|(?=[\"'`\[]))(?:{part}\s*+\.\s*+)?"
                      rf"[\"'`\[]?(?:{names})[\"'`\]]?(?![\w$])(?!\s*+[(.])")


@functools.lru_cache(maxsize=64)
def _pragma_pattern(forbidden: tuple[str, ...]) -> re.Pattern[str]:
    """A forbidden table given to a pragma in its call form or to its table-valued function
    (SQLite's ``PRAGMA main.table_info(Employee)``, ``pragma_table_info('Employee')``,
    DuckDB's ``PRAGMA storage_info('Employee')``): a read of its schema, which the write half
    no longer takes as a setter's (the eighteenth re-probe's M2); DuckDB's table readers
    (``duckdb_table_sample('Employee')``, ``histogram_values(Employee, ...)``) and a database
    file's table by name (``read_duckdb(..., table_name='Employee')``) too (the
    thirty-seventh re-probe's floor)."""
    names = "|".join(re.escape(t.lower()) for t in sorted(set(forbidden), key=len,
                                                          reverse=True))
    return re.compile(r"(?:pragma(?<![\w]pragma)(?:_[\w$]++|\s*+[^\s(;]{1,80}+)"
                      r"|(?<![\w$])(?:duckdb_table_sample|histogram_values|histogram))"
                      r"[\"`]?\s*\(\s*(?:[\w$\"`\[\]']{1,80}+\s*\.\s*)?"
                      rf"[\"`\[']?(?:{names})[\"`\]']?\s*[),]"
                      r"|(?<![\w$])read_duckdb[\"`]?\s*\([^()]{0,400}?(?<![\w$])table_name"
                      rf"\s*:?=\s*[\"'](?:{names})[\"']")
