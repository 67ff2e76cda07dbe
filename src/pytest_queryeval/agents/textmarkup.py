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
nineteenth re-probe's M2). Every reading here is one pass over the text's marks.
"""

from __future__ import annotations

import re
from bisect import bisect_left

#: Statements a word alone is (a maintenance statement), which a code span holding only it may
#: be (the eighteenth re-probe's N7).
ALONE = frozenset({"analyze", "analyse", "vacuum", "reindex", "checkpoint"})
#: A tag (an opening one with attributes, a closing one), or CDATA's marks, in lower case. A
#: name starts with a letter: ``1 <> 2`` and ``1<2`` are no tag, nor ``<https://x>``.
_TAG = re.compile(r"<(/?)([a-z][\w:.-]{0,63}+)(\s[^<>]{0,4096}+)?>|<!\[cdata\[|\]\]>")
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
    return "<" in plain and _TAG.search(plain) is not None


def lined(plain: str) -> str:
    """``plain`` with each tag a line's end (an inline element's a blank), CDATA's marks too:
    an element's content stands at a statement's place, as an extractor hands it over
    (``<answer>VACUUM</answer>``, ``<think>USE memory</think>``)."""
    return _TAG.sub(lambda m: " " if m.group(2) in _INLINE_NAMES else "\n", plain)


def element_spans(plain: str) -> list[tuple[int, int, bool]]:
    """The code of ``plain``'s code elements as ``(start, end, inline)``: each from its
    opening tag to the first closing tag of its name (none: the end; a void or self-closing
    one holds nothing), elements that meet or nest read once, each part between two tags a
    span of its own (``<sql>VACUUM<![CDATA[...]]></sql>``). ``inline``: an HTML inline code
    element (``<code>``), where a word alone is a statement only at a statement's place."""
    tags = list(_TAG.finditer(plain))
    closes: dict[str, list[int]] = {}
    for tag in tags:
        if tag.group(1):
            closes.setdefault(tag.group(2), []).append(tag.start())
    ranges: list[tuple[int, int, bool, int, int]] = []  # start, end, inline, open, close's end
    for tag in tags:
        name = tag.group(2)
        if name is None or tag.group(1) or not _CODE_NAME.search(name) or name in _VOID or (
                (tag.group(3) or "").rstrip().endswith("/")):
            continue
        ends = closes.get(name, [])
        at = bisect_left(ends, tag.end())
        end = ends[at] if at < len(ends) else len(plain)
        close = plain.find(">", end) + 1 if at < len(ends) else len(plain)
        inline = name in _INLINE_NAMES
        if ranges and tag.start() < ranges[-1][1]:  # inside the last: one reading
            last = ranges[-1]
            ranges[-1] = (last[0], max(last[1], end), last[2] and inline, last[3],
                          max(last[4], close))
        else:
            ranges.append((tag.end(), end, inline, tag.start(), close))
    cuts = [(t.start(), t.end()) for t in tags]
    spans: list[tuple[int, int, bool]] = []
    for start, end, inline, opened, closed in ranges:
        at = bisect_left(cuts, (start, start))
        pos = start
        while at < len(cuts) and cuts[at][0] < end:
            spans += _part(plain, pos, cuts[at][0], inline, opened, closed)
            pos, at = cuts[at][1], at + 1
        spans += _part(plain, pos, end, inline, opened, closed)
    return spans


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
    before its line's end, a sentence's end or a tag (``Done: `VACUUM`.``, ``- `VACUUM```)."""
    before = opened
    while before > 0 and plain[before - 1] in " \t*#+-":
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
    while after < len(plain) and plain[after] in " \t":
        after += 1
    return after == len(plain) or plain[after] in "\n.;!?<"
