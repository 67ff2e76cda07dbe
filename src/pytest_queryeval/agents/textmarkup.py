"""Where the model's text holds code by its markup: XML-like elements (``<sql>...</sql>``,
``<answer>``, ``<code>``, ``<query lang="x">``, any name, attributes allowed, CDATA unwrapped)
and inline code spans of any number of backticks; for the floor's write half
(:mod:`.textwrites`) and its readings (:mod:`.textfloor`).

Why a module of its own: harnesses extract a query from a tag by its name, whatever the name
and its attributes, up to the matching closing tag (a ``<`` inside, ``1 <> 2``, is the
query's), and from inline code closed by the same number of backticks (CommonMark). A pattern
of tag names and of a span's first ``<`` missed each form it did not name (issue 58, the
nineteenth re-probe's H3: ``<sql>SELECT 1 WHERE 1 <> 2; VACUUM</sql>``, ``<sql
dialect="x">``, ``<answer>``, ``<pre>``, CDATA, a double-backtick span). So (1) every tag is a
statement's place (:func:`lined`: a block's tag a line's end), which the prose rules read, and
(2) an element whose name says it holds code or a query is code (:func:`element_spans`), as a
fence is. A word alone in inline code (``Done: `VACUUM`.``) is a statement only where a
statement stands: alone on its line, or after a ``:`` or ``;``, with its sentence ending
after it (:func:`inline_spans`); ``Running `ANALYZE` afterwards may help.`` names it (the
nineteenth re-probe's M2). A tag is read as an extractor reads it, not by a pattern with
bounds: a pattern's bounds on a name and its attributes, and attributes that stop at any ``>``,
left ``<sql note="a>b">``, ``<_sql>``, a 70-character name and 4,100 characters of attributes
as text, while an extractor handed ``TRUNCATE Genre`` to the engine (the twentieth re-probe's
F1). Every reading here is one pass over the text's marks.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from functools import lru_cache
from typing import NamedTuple

#: Statements a word alone is (a maintenance statement), which a code span holding only it may
#: be (the eighteenth re-probe's N7).
ALONE = frozenset({"analyze", "analyse", "vacuum", "reindex", "checkpoint"})
#: Where a tag or CDATA's closing mark may start; a name's run. A name starts with a letter or
#: ``_`` (XML's names): ``1 <> 2`` and ``1<2`` are no tag, nor ``<https://x>``.
_MARK = re.compile(r"<|\]\]>")
_NAME = re.compile(r"[a-z_][\w:.-]*+")
#: What ends or quotes an opening tag's attributes.
_ATTR_MARK = re.compile(r"[<>\"']")
_BARE_MARK = re.compile(r"[<>]")
_CDATA = "<![cdata["


class Tag(NamedTuple):
    """A tag (``closing``: ``</x>``) or one of CDATA's marks (``name`` None) at
    ``plain[start:end]``; ``attrs`` the tag's text between its name and its ``>``."""

    start: int
    end: int
    closing: bool
    name: str | None
    attrs: str


#: An element whose name says it holds code or a query (``<sql>``, ``<sqlite>``, ``<query>``,
#: ``<statement>``, ``<code>``, ``<pre>``): read as code, as a fence is. Any other element
#: (``<answer>Set of 25 genres</answer>``, a reasoning tag) is prose at a statement's place.
_CODE_NAME = re.compile(r"sql|ql|query|statement|stmt|code|^(?:pre|tt|kbd|samp)$")
#: HTML's inline elements: their tags stand inside a sentence (a blank), not at its end.
_INLINE_NAMES = frozenset({
    "a", "abbr", "b", "bdi", "bdo", "cite", "code", "data", "dfn", "em", "i", "kbd", "mark",
    "q", "s", "samp", "small", "span", "strong", "sub", "sup", "time", "tt", "u", "var"})
#: HTML's void elements (``<br>``), which no closing tag ends.
_VOID = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta",
                   "param", "source", "track", "wbr"})
_TICKS = re.compile(r"`++")
_BLANK_LINE = re.compile(r"\n[ \t]*\n")


def has_markup(plain: str) -> bool:
    """Whether ``plain`` holds a tag or CDATA's mark."""
    return "<" in plain and bool(_tags(plain))


def lined(plain: str, quoted: bool = True) -> str:
    """``plain`` with each tag a line's end (an inline element's a blank), CDATA's marks too:
    an element's content stands at a statement's place, as an extractor hands it over
    (``<answer>VACUUM</answer>``, ``<think>USE memory</think>``). Not ``quoted``: each tag's
    attributes end at the first ``>``, as a regex extractor (``<sql[^>]*>(.*?)</sql>``) reads
    them, which hands over the ``VACUUM`` of ``<x a="<sql>VACUUM</sql>">`` (issue 58, the
    twenty-second re-probe's F2)."""
    parts: list[str] = []
    pos = 0
    for tag in _tags(plain, quoted):
        parts += [plain[pos:tag.start], " " if tag.name in _INLINE_NAMES else "\n"]
        pos = tag.end
    return "".join(parts) + plain[pos:]


def element_spans(plain: str) -> list[tuple[int, int, bool]]:
    """The code of ``plain``'s code elements as ``(start, end, inline)``: each from its
    opening tag to the first closing tag of its name (none: the end; a void or self-closing
    one holds nothing), elements that meet or nest read once, each part between two tags a
    span of its own (``<sql>VACUUM<![CDATA[...]]></sql>``). ``inline``: an HTML inline code
    element (``<code>``), where a word alone is a statement only at a statement's place."""
    tags = _tags(plain)
    closes: dict[str, list[int]] = {}
    for tag in tags:
        if tag.closing and tag.name is not None:
            closes.setdefault(tag.name, []).append(tag.start)
    ranges: list[tuple[int, int, bool, int, int]] = []  # start, end, inline, open, close's end
    for tag in tags:
        name = tag.name
        if name is None or tag.closing or not _CODE_NAME.search(name) or name in _VOID or (
                tag.attrs.rstrip().endswith("/")):
            continue
        ends = closes.get(name, [])
        at = bisect_left(ends, tag.end)
        end = ends[at] if at < len(ends) else len(plain)
        close = plain.find(">", end) + 1 if at < len(ends) else len(plain)
        inline = name in _INLINE_NAMES
        if ranges and tag.start < ranges[-1][1]:  # inside the last: one reading
            last = ranges[-1]
            ranges[-1] = (last[0], max(last[1], end), last[2] and inline, last[3],
                          max(last[4], close))
        else:
            ranges.append((tag.end, end, inline, tag.start, close))
    cuts = [(t.start, t.end) for t in tags]
    spans: list[tuple[int, int, bool]] = []
    for start, end, inline, opened, closed in ranges:
        at = bisect_left(cuts, (start, start))
        pos = start
        while at < len(cuts) and cuts[at][0] < end:
            spans += _part(plain, pos, cuts[at][0], inline, opened, closed)
            pos, at = cuts[at][1], at + 1
        spans += _part(plain, pos, end, inline, opened, closed)
    return spans


@lru_cache(maxsize=8)
def _tags(plain: str, quoted: bool = True) -> tuple[Tag, ...]:
    """``plain``'s tags and CDATA's marks, in order, as an XML or HTML extractor reads them: a
    name of any length, attributes to the first ``>`` outside quotes (``<sql note="a>b">``;
    an unclosed quote is a character). In a comment, CDATA or a processing instruction
    (:func:`_run_at`), a tag is read only where it ends before the run does: a quote there
    opens nothing past it, as html.parser reads it, while a regex extractor's ``<sql>...</sql>``
    in a comment is still read. One pass: each attribute run's reading is kept by where it
    starts (:func:`_attributes_end`), so a ``<`` inside another tag's quotes reuses it. Kept
    for the last texts: the floor asks for one text's tags three times. Not ``quoted``: a
    quote is a character (:func:`lined`)."""
    memo: dict[int, int] = {}
    closers: dict[str, int] = {}
    found: list[Tag] = []
    pos = 0
    run: Tag | None = None  # the closing mark of the run the marks stand in
    for mark in _MARK.finditer(plain):
        at = mark.start()
        if run is not None and at >= run.start:
            found.append(run)
            pos, run = max(pos, run.end), None
        if at < pos:
            continue
        opened = _run_at(plain, at, closers) if run is None else None
        if opened is not None:
            found.append(opened[0])
            pos, run = opened[0].end, opened[1]
            continue
        tag = _tag_at(plain, at, memo if quoted else None) if mark.group() == "<" else Tag(
            at, mark.end(), False, None, "")
        if tag is not None and (run is None or tag.end <= run.start):
            pos = tag.end
            found.append(tag)
    return tuple(found) + ((run,) if run is not None else ())


#: What opens a run whose marks hold no tag past its end, and what closes it (html.parser's
#: reading: a comment to ``-->``, CDATA to ``]]>``, a processing instruction to a ``>``).
_RUNS = (("<!--", "-->"), (_CDATA, "]]>"), ("<?", ">"))


def _run_at(plain: str, at: int, closers: dict[str, int]) -> tuple[Tag, Tag] | None:
    """The opening and closing marks of the comment, CDATA or processing instruction that
    opens at ``plain[at]``, or None (none opens there, or none is closed: then it is read as
    before). A quote in a comment was read as an attribute's to a quote past the comment's
    end: ``<!-- <x a=" --><sql>VACUUM</sql><!-- "> -->`` was one tag, which swallowed the
    code element (issue 58, the twenty-second re-probe's F2). Each closer's next place is
    kept in ``closers``, so the text past each place is searched once: linear."""
    for opener, closer in _RUNS:
        if plain.startswith(opener, at):
            start = at + len(opener)
            close = closers.get(opener, -2)
            if close != -1 and close < start:
                close = plain.find(closer, start)
                closers[opener] = close
            if close < 0:
                return None
            return (Tag(at, start, False, None, ""),
                    Tag(close, close + len(closer), False, None, ""))
    return None


def _tag_at(plain: str, at: int, memo: dict[int, int] | None) -> Tag | None:
    """The tag or CDATA's opening mark at ``plain[at]`` (a ``<``), or None; attributes read
    with their quotes (``memo``: :func:`_attributes_end`) or to the first ``<`` or ``>``."""
    if plain.startswith(_CDATA, at):
        return Tag(at, at + len(_CDATA), False, None, "")
    closing = plain.startswith("/", at + 1)
    name = _NAME.match(plain, at + 1 + closing)
    if name is None or name.end() == len(plain):
        return None
    after = plain[name.end()]
    if after == ">" or plain.startswith("/>", name.end()):  # ``<br/>``; not ``<https://x>``
        end = plain.index(">", name.end())
    elif after.isspace():
        end = _attributes_end(plain, name.end(), memo) if memo is not None else _bare_end(
            plain, name.end())
        if end < 0:
            return None
    else:
        return None
    return Tag(at, end + 1, closing, name.group(), plain[name.end():end])


def _bare_end(plain: str, start: int) -> int:
    """Where the attributes from ``start`` end read with no quotes: the first ``>``, or -1
    where a ``<`` or the text's end comes first."""
    mark = _BARE_MARK.search(plain, start)
    return mark.start() if mark is not None and mark.group() == ">" else -1


def _attributes_end(plain: str, start: int, memo: dict[int, int]) -> int:
    """Where the attributes from ``start`` end (their ``>``), -1 where a ``<`` outside quotes
    or the text's end comes first. Each mark's reading is kept in ``memo``: a run reached again
    from another tag is not read twice, and each quote is read to its closing one once."""
    path: list[int] = []
    at, found = start, -1
    while True:
        mark = _ATTR_MARK.search(plain, at)
        if mark is None:
            break
        at = mark.start()
        if at in memo:
            found = memo[at]
            break
        path.append(at)
        char = mark.group()
        if char in "<>":
            found = at if char == ">" else -1
            break
        close = plain.find(char, at + 1)
        at = close + 1 if close >= 0 else at + 1
    for mark_at in path:
        memo[mark_at] = found
    return found


def inline_spans(plain: str) -> list[tuple[int, int, bool]]:
    """``plain``'s inline code spans as ``(start, end, True)``: a run of one or two backticks
    opens one, the next run of as many closes it (CommonMark; three or more mark a fence),
    within a paragraph; an opener no run closes is a backtick. A span holding a maintenance
    word alone counts where a statement stands (:func:`_at_place`), and is left out
    elsewhere."""
    runs: dict[int, list[tuple[int, int]]] = {}
    marks = [(m.start(), m.end()) for m in _TICKS.finditer(plain) if m.end() - m.start() < 3]
    for start, end in marks:
        runs.setdefault(end - start, []).append((start, end))
    blank_lines = [m.start() for m in _BLANK_LINE.finditer(plain)]
    spans: list[tuple[int, int, bool]] = []
    cursor = 0
    for start, end in marks:
        if start < cursor:
            continue
        same = runs[end - start]
        at = bisect_left(same, (end, end))
        if at == len(same):
            continue
        closer = same[at]
        paragraph = bisect_left(blank_lines, end)
        if paragraph < len(blank_lines) and blank_lines[paragraph] < closer[0]:
            continue
        spans += _part(plain, end, closer[0], True, start, closer[1])
        cursor = closer[1]
    return spans


def _part(plain: str, start: int, end: int, inline: bool, opened: int, closed: int
          ) -> list[tuple[int, int, bool]]:
    """The span ``plain[start:end]`` of code opened at ``opened`` and closed at ``closed``,
    or none: in inline code, a maintenance word alone away from a statement's place names the
    statement (``Running `ANALYZE` afterwards may help.``)."""
    if inline and plain[start:end].strip() in ALONE and not _at_place(plain, opened, closed):
        return []
    return [(start, end, inline)]


def _at_place(plain: str, opened: int, closed: int) -> bool:
    """Whether the code from ``opened`` to ``closed`` stands where a statement stands: after a
    line's head (blanks, a list's or a quote's mark, ``1.``), a ``:``, a ``;`` or a tag, and
    before its line's end, a sentence's end or a tag (``Done: `VACUUM`.``, ``- `VACUUM```),
    emphasis marks around it read through (``Done: **`VACUUM`**.``: the twentieth re-probe's
    F3)."""
    before = opened
    while before > 0 and plain[before - 1] in " \t*_#+-":
        before -= 1
    if before > 1 and plain[before - 1] in ".)":
        digits = before - 1
        while digits > 0 and plain[digits - 1].isdigit():
            digits -= 1
        if 1 <= before - 1 - digits <= 3:
            before = digits
            while before > 0 and plain[before - 1] in " \t":
                before -= 1
    if before > 0 and plain[before - 1] not in "\n:;>":
        return False
    after = closed
    while after < len(plain) and plain[after] in " \t*_":  # emphasis around: ``**`VACUUM`**.``
        after += 1
    return after == len(plain) or plain[after] in "\n.;!?<"
