"""The run-shaped copies of recorded calls a whole trajectory's texts hold, against the calls
it records: an executor's log (AgentExecutor's ``Invoking: run_query with {...}``) and a
chain's record (SQLDatabaseChain's ``SQLQuery: ...`` to its ``SQLResult:``) are each one run.

Why: such a copy is the record of a call only as many times as the call was recorded; each
further copy is a run no reader counted. Counted per text (a message, a content part, a span's
output), three messages with one ``SQLQuery: <counted>`` each, or three AGENT spans with one
log each, passed ``queries_executed: {max: 1}`` (issue 58, the sixteenth re-probe's N6, N7).
So one tally is kept for every text of a trajectory (its messages and its spans' texts
together), per statement for a chain's record and per tool for an executor's log, against
the calls recorded anywhere in it (a log in an earlier message than its call is that call's:
the sixteenth re-probe's L1). Only a recorded call is a record: the case's final query is
not (a chain's ``SQLQuery: <predicted>`` with no recorded call ran and was not counted, N6);
an answer that states the query in prose or a fence is not run-shaped and is read as before.
Every count fails closed: a copy past the calls recorded, or a tally past its bound, is a
finding (the counts not established), never a pass.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

#: An executor's log of a call, with or without backticks (``Invoking: `run_query` with
#: `{...}``` and ``Invoking: run_query with {...}``): the tool's name is the group.
LOGGED = re.compile(r"invoking:[ \t]{0,8}(?:`([^`\n]{1,128})`|([^\s`{(]{1,128}))"
                    r"[ \t]{0,8}(?:with\b|[`{(])", re.IGNORECASE)
#: A chain's record of a query it ran (``SQLQuery:`` at a word's start), to its ``SQLResult:``.
_CHAIN = re.compile(r"sqlquery(?<![\w]sqlquery)[ \t]{0,16}:")
_CHAIN_END = "sqlresult:"
#: Copies one trajectory's tally counts at most; past it, a finding.
MAX_COPIES = 10_000
#: A run of blanks, and what in it ends a line (every line break ``str.splitlines`` reads).
_BLANKS = re.compile(r"\s+")
_LINE_END = re.compile(r"[\n\r\v\f\x1c-\x1e\x85\u2028\u2029]")
#: What of a run of blanks is kept where a line comment may stand: all but spaces and tabs.
_SPACES = re.compile(r"[ \t]+")
_NEW_LINES = re.compile(r"(?:\r?\n)+")
#: What opens a comment to its line's end: SQL's ``--``, MySQL's and SPARQL's ``#``, a graph
#: language's ``//``.
_LINE_COMMENTS = ("--", "#", "//")


def line_commented(text: str) -> bool:
    """Whether ``text``, its blanks aside, holds what may open a comment to a line's end (so
    that two texts whose blanks differ are read alike: ``- -`` is ``--`` once spaced)."""
    bare = "".join(text.split())
    return any(mark in bare for mark in _LINE_COMMENTS)


def lined(text: str) -> str:
    """``text`` as it is compared with a known (counted or predicted) text: each run of blanks
    one space, or, where a line comment may stand (:func:`line_commented`), its line ends kept
    as written (:func:`breaks_kept`). There a line break is no mere blank: ``//x DETACH DELETE p`` is a
    comment and ``//x`` then ``DETACH DELETE p`` on the next line a write, so a copy of a
    counted read with its line break moved was taken for that read (issue 58, the twentieth
    re-probe's H2 and F5). A text with no such mark is read alike however it is wrapped."""
    if not line_commented(text):
        return " ".join(text.split())
    return breaks_kept(text).strip()


def breaks_kept(text: str) -> str:
    """``text`` with each run of spaces and tabs one space, and each run of blanks holding
    anything else (a line break, a vertical tab, a separator) as it is written, its spaces and
    tabs out (and ``\\r\\n`` or a run of ``\\n`` one ``\\n``). The engines differ on what ends a
    line comment (the embedded graph engine's ``//`` and SQLite's ``--`` end at ``\\n`` only,
    DuckDB's ``--`` at ``\\r`` too), so ``//x`` then U+2028 then ``DETACH DELETE p`` is a comment to
    one engine and a write to another: read as a line break, it was taken for the write with
    ``\\n`` (issue 58, the twenty-first re-probe's H1, H2 and F1). Kept as written, two texts
    compare alike only when their line ends are the same characters, for every engine."""
    return _BLANKS.sub(_blank, text)


def tokens_kept(text: str) -> str:
    """:func:`breaks_kept`, but a run of blanks that holds a space or a tab beside a blank of
    Python's that is not both engines' (SQLite reads U+2028, U+0085 or U+00A0 as a name's
    character, and refuses ``\\v``) is kept as written. The span search judges where a
    counted statement ends on this text with the engines' own readers
    (:func:`~.statementends.reads_more`), so the text must split into the tokens the engines
    split the span's own text into: with its spaces dropped, ``e``, U+2028, a space and
    ``WHERE 1`` (an alias, then ``WHERE``) read as one name and ``1``, a syntax error to both
    engines, and the join to the forbidden table after a fence was taken for no statement
    (issue 58, the twenty-seventh re-probe's H1)."""
    return _BLANKS.sub(_blank_or_run, text)


#: A blank that is not a blank to both engines (SQLite's are these five).
_ODD_BLANK = re.compile(r"[^ \t\n\r\f]")


def _blank_or_run(run: re.Match[str]) -> str:
    blank = run.group()
    return blank if _ODD_BLANK.search(blank) and _SPACES.search(blank) else _blank(run)


def _blank(run: re.Match[str]) -> str:
    kept = _SPACES.sub("", run.group())
    return _NEW_LINES.sub("\n", kept) if kept else " "


def line_ended(text: str) -> bool:
    """Whether ``text`` holds a character some engine may read as a line's end."""
    return _LINE_END.search(text) is not None


class RunCopies:
    """One trajectory's tally: the calls it records (per tool, per statement) and the
    run-shaped copies of them its texts hold."""

    def __init__(self, calls: Iterable[tuple[str, object]], *, every: bool = False) -> None:
        from .statements import query_tool

        self.tools: Counter[str] = Counter()
        self.statements: Counter[str] = Counter()  # a query tool's (``every``: any call's)
        for name, arguments in calls:
            self.tools[name.strip()] += 1
            if not (every or query_tool(name)):
                continue  # a statement given to another tool is not what a chain ran
            for text in set(_strings(arguments)):
                self.statements[lined(text)] += 1
        self.copies: Counter[tuple[str, str]] = Counter()  # ("log", tool), ("chain", text)
        self.within: Counter[tuple[str, str]] | None = None  # the current span's
        self.current: Counter[tuple[str, str]] = Counter()  # its current attribute's
        self.history_span: Counter[tuple[str, str]] = Counter()  # its prompt history's
        self.history_max: Counter[tuple[str, str]] = Counter()  # the most one history holds

    @classmethod
    def of_messages(cls, messages: Iterable[object]) -> RunCopies:
        """The tally of the calls ``messages`` record in ``tool_calls``."""
        return cls(_recorded(m for m in messages if isinstance(m, Mapping)))

    @classmethod
    def of_known(cls, known: Iterable[str]) -> RunCopies:
        """A tally that takes each of ``known`` as recorded once (a text read alone)."""
        return cls((("", k) for k in known), every=True)

    def recorded(self, plain: str) -> bool:
        """Whether ``plain`` (:func:`lined`) is the statement of a recorded call."""
        return self.statements[plain] > 0

    def scope(self) -> None:
        """Start the copies of one span: its attributes often hold one text twice (an LLM
        span's ``output.value`` and its output message's ``content``), so a span's copies are
        the most any one of its attributes holds (:meth:`attribute`), not their sum; the texts
        of one attribute (the messages of an AGENT span's output), spans and messages add up."""
        self.within, self.current, self.history_span = Counter(), Counter(), Counter()

    def attribute(self) -> None:
        """Start the copies of one attribute of the span (:meth:`scope`)."""
        self.current = Counter()

    def scan(self, text: str, *, logs: bool = True, history: bool = False) -> str | None:
        """Count the copies in ``text`` (``logs``: an executor's logs too); the first that is
        past the calls recorded (or past :data:`MAX_COPIES`), said, or None. Linear: each copy
        is read once."""
        here: Counter[tuple[str, str]] = Counter()
        for n, match in enumerate(LOGGED.finditer(text) if logs else (), 1):
            here["log", (match.group(1) or match.group(2) or "").strip()] += 1
            if n > MAX_COPIES:
                return f"logs more than {MAX_COPIES:,} calls, which are not all counted"
        low, pos = _lower(text), 0
        while (chain := _CHAIN.search(low, pos)) is not None:
            end = low.find(_CHAIN_END, chain.end())
            stop = end if end >= 0 else len(text)
            plain = lined(text[chain.end():stop])
            pos = stop
            if not plain:
                continue
            if not self.recorded(plain):
                return (f"holds a chain's record (`SQLQuery: ...`) of {plain[:80]!r}, which no "
                        "recorded call holds: the chain ran it and no count read it")
            here["chain", plain] += 1
            if len(here) > MAX_COPIES or here["chain", plain] > MAX_COPIES:
                return f"holds more than {MAX_COPIES:,} chain records, which are not all counted"
        return self._add(here, history)

    def _add(self, here: Counter[tuple[str, str]], history: bool) -> str | None:
        """Add one text's copies (to its span's, :meth:`scope`); the first past its calls.
        ``history``: the text is of an LLM span's prompt history, which repeats the turns of
        the spans before it: the runs are at least the most one span's history holds, and
        at least the copies of the outputs, not their sum."""
        for key, count in here.items():
            if history:
                self.history_span[key] += count
                self.history_max[key] = max(self.history_max[key], self.history_span[key])
            elif self.within is not None:
                self.current[key] += count
                more = max(0, self.current[key] - self.within[key])
                self.within[key] += more
                self.copies[key] += more
            else:
                self.copies[key] += count
            runs = max(self.copies[key], self.history_max[key])
            kind, what = key
            if kind == "log" and runs > self.tools[what]:
                return (f"logs {runs} calls of {what[:60]!r} (an executor's `Invoking: ...`), "
                        f"more than the {self.tools[what]} the trajectory records")
            if kind == "chain" and runs > self.statements[what]:
                return (f"holds {runs} chain records (`SQLQuery: ...`) of {what[:80]!r}, more "
                        f"than the {self.statements[what]} calls of it the trajectory records")
        return None


def _lower(text: str) -> str:
    """``text`` in lower case, each character in its place (one whose lower case is longer
    kept as it is), so that a place found in it is the place in ``text``."""
    low = text.lower()
    if len(low) == len(text):
        return low
    return "".join(c if len(c.lower()) != 1 else c.lower() for c in text)


def _recorded(messages: Iterable[Mapping[str, Any]]) -> list[tuple[str, object]]:
    """``(name, arguments)`` of the calls the messages record (OpenAI's ``tool_calls``, the
    legacy ``function_call``)."""
    out: list[tuple[str, object]] = []
    for msg in messages:
        calls = msg.get("tool_calls")
        legacy = msg.get("function_call")
        for call in [*(calls if isinstance(calls, list) else ()), {"function": legacy}]:
            function = call.get("function") if isinstance(call, Mapping) else None
            if isinstance(function, Mapping) and isinstance(function.get("name"), str):
                out.append((function["name"], function.get("arguments")))
    return out


def _strings(arguments: object, depth: int = 0) -> list[str]:
    """The texts an arguments' value holds (a JSON text of them read)."""
    if isinstance(arguments, str):
        if depth == 0 and arguments.lstrip()[:1] == "{":
            try:
                return _strings(json.loads(arguments), depth + 1)
            except (ValueError, RecursionError):
                pass
        return [arguments]
    if isinstance(arguments, Mapping) and depth < 8:
        return [t for v in arguments.values() for t in _strings(v, depth + 1)]
    if isinstance(arguments, list | tuple) and depth < 8:
        return [t for v in arguments for t in _strings(v, depth + 1)]
    return []
