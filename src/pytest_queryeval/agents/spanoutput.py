"""The calls a span records in its output and in its model's text, which no reader of spans
reads as calls: searched, so that a call or a statement found there that no counted call
holds leaves the counts not established (issue 58, the thirteenth re-probe's H3, H4 and M1).

Why: an instrumentor writes a span's output beside its attributes (the OpenAI instrumentor
puts the whole chat completion, ``tool_calls`` included, in an LLM span's ``output.value``; an
AGENT or a LangGraph CHAIN span's output is its message list), and a harness that parses the
call from the model's text records it in ``llm.output_messages.N.message.content``. The span
reader (:mod:`.spans`) reads neither, so a ``DELETE FROM Genre`` there passed
``write_attempts: {max: 0}`` with 0. What is searched, as the sweep searches what a record
holds outside the calls read (:mod:`.sweep`):

* the text of an LLM's messages (its output, and its history's turns but the user's, the
  system's and a tool's, whatever the model's role is spelled): the model's prose, searched
  for a call written in it by the rule of a trajectory's assistant text
  (:func:`~.textcalls.encoded_call`);
* ``output.*`` of a span that is no tool's call (a tool's output is its result, not searched,
  as a trajectory's tool message is not), nor documents retrieved, embedded, reranked or a
  prompt rendered: an object shaped like a call (``function: {name, arguments}``, ``{name,
  args}``, ``{action, action_input}``) that is not a counted call, by its name and its
  arguments' JSON; a text that reads as SQL and is no counted call's nor the final query;
  a call written in a text. A message's text (``content``) is prose: only a call written in
  it is a finding, and only in a message that is not the user's, the system's or a tool's.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Mapping
from functools import lru_cache
from typing import Any

from .llmcalls import canonical
from .runcopies import RunCopies, line_commented, line_ended, lined, tokens_kept
from .statementends import FENCE_READ, ends_outside, reads_on
from .textcalls import NOT_MODEL_ROLES

#: Keys of an LLM's message text: its output's (and its history's: a trace that kept the last
#: LLM span alone), as ``content`` or as ``contents.N.message_content.text``.
_MODEL_TEXT = re.compile(r"llm\.(output|input)_messages\.(\d+)\.message\."
                         r"(?:content|reasoning_content|reasoning|thinking|refusal|"
                         r"contents\.\d+\.message_content\.\w+)")
#: Span kinds whose output is no call's record: documents, vectors, a rendered prompt, a
#: judgement (a retriever's few-shot ``SELECT`` examples are its documents).
_NOT_CALLS = frozenset({"RETRIEVER", "EMBEDDING", "RERANKER", "PROMPT", "EVALUATOR",
                        "GUARDRAIL"})
#: A message's text fields (its prose: a call written in it is searched, not a statement).
_PROSE = frozenset({"content", "text", "reasoning_content", "reasoning", "refusal", "thinking"})
_NAMES = ("name", "tool", "toolName", "tool_name", "function_name")
_ARGS = ("arguments", "args", "input", "parameters", "params", "kwargs", "action_input",
         "tool_input")
#: Levels of a span's output (and JSON in it) searched; past them, a finding.
_DEPTH = 32
#: Counted statements taken out of an output's text at most (the longest first).
_QUOTED = 256
#: What may follow a counted statement that stands whole in a text (:func:`_whole`): the
#: text's end or ``;`` (blanks before them), or, on the next line, such an end, a fence, a
#: number or a label of a chain's or an agent's record (``SQLResult:``). A quote after it
#: ends it only where it closes the quote that opens right before it (:func:`_whole`): SQLite
#: and DuckDB read ``"g"`` after a table as its alias, so ``K`` then ``"g", Employee`` on the
#: next line is a join to ``Employee``, and DuckDB reads ``e: Track`` as a table's prefix
#: alias (issue 58, the twenty-second re-probe's H1 and F1). The blanks after the statement
#: are matched once (:data:`_RUN`, possessive), and what follows them is matched at one
#: place: a run of 20,000 vertical tabs took 28 s to backtrack through (the twenty-third
#: re-probe's H2). A number is ASCII digits before no name's character: the engines read
#: ``\u0661`` or a fullwidth ``1`` (any non-ASCII character) as a name, an alias then a join
#: to ``, Employee``; and they read a fence as a backtick-quoted name a later backtick closes
#: (``K`` then a fence then ``\`, Employee``: the twenty-fourth re-probe's H1, H2 and F1), so
#: a fence ends a statement only where what the engines then read as one statement reads no
#: other table (:func:`~.statementends.reads_more`). Only the blanks of both engines are
#: blanks after it: SQLite reads U+2028, U+00A0 or ``\x1c`` as a name's, so ``K`` then
#: ``\u20281, Employee`` on the next line is an alias and a join, and such a blank anywhere
#: but at the text's end leaves the statement in (the twenty-fifth re-probe's H1).
_RUN = re.compile(r"[ \t\n\r\f\v]*+")
#: Counted statements before a fence one text's search reads the engines' statement at, at
#: most (each parses up to :data:`~.statementends.FENCE_READ` characters): past them, a
#: statement before a fence is left in the text, in time linear in its length.
_FENCES = 32
#: Blanks to the text's end.
_TAIL = re.compile(r"\s*+\Z")
_NEXT = re.compile(r"\Z|;|```|~~~|[0-9]++(?![^\x00-\x7f]|[\w$])|(?i:(?:Final )?(?:SQLResult|Answer|"
                   r"Result|Rows|Observation|Output|Thought|Question|Action)):")
#: What opens or closes a Markdown fence (backticks or tildes): the engines read ``` ``` ```
#: as a quoted name and DuckDB ``~~~`` as an operator, so after a statement each ends it only
#: where the engines' own parsers say so (:func:`~.statementends.reads_more`). An honest
#: ``~~~sql`` fence errored as an unknown statement (the twenty-seventh re-probe's M1).
_FENCE_MARKS = ("```", "~~~")
#: A quote or backtick that closes one opened right before the statement.
_CLOSING = re.compile(r"['\"`]")
#: Token types a statement that a number or a label may follow ends in, in both engines'
#: tokenizers: a name, a number, a closed string, a constant, a closing bracket or an
#: order's direction (``... IS NULL`` then ``SQLResult: 8`` is an honest chain's record).
_LAST = frozenset({"VAR", "NUMBER", "STRING", "IDENTIFIER", "R_PAREN", "R_BRACKET", "ASC",
                   "DESC", "NULL", "TRUE", "FALSE", "CURRENT_DATE", "CURRENT_TIME",
                   "CURRENT_TIMESTAMP"})
#: Names the tokenizers read as plain names that an engine reads as a word asking for more
#: (``... JOIN`` then ``e: Track`` is a join in DuckDB; ``TABLESAMPLE`` then ``100, Track``).
_MORE = frozenset((
    "select", "distinct", "all", "from", "join", "where", "on", "and", "or", "not", "by", "as",
    "using", "having", "with", "union", "except", "intersect", "in", "is", "like", "between",
    "case", "when", "then", "else", "set", "into", "values", "table", "limit", "offset",
    "natural", "cross", "lateral", "positional", "asof", "semi", "anti", "glob", "regexp",
    "match", "similar", "escape", "collate", "tablesample", "sample", "using_sample", "nulls",
    "over", "filter", "window", "qualify", "pivot", "unpivot", "order", "group", "isnull",
    "notnull", "returning", "to", "at", "time", "zone",
))
#: Each blank character.
_BLANK = re.compile(r"\s")


def output_finding(attrs: Mapping[str, Any], kind: str, result: bool,
                   calls: Iterable[tuple[str, str]], known: set[str], budget: list[int],
                   forbidden: Collection[str] = (), copies: RunCopies | None = None
                   ) -> str | None:
    """The first call or statement a span's model text or output (``attrs``: its flattened
    attributes) records that no counted call holds, located, or None. ``result``: the span is
    a tool's call (its output is the tool's result); ``calls``: ``(name, arguments)`` of the
    counted calls; ``known``: the texts they hold (:func:`~.runcopies.lined`), the final query's too;
    ``budget``: the values left to read (spent: the caller reports the search cut);
    ``forbidden``: the case's forbidden tables, read by the floor of a call in the text;
    ``copies``: the whole trace's tally of run-shaped copies of its calls (an executor's log,
    a chain's record: :class:`~.runcopies.RunCopies`), this span's added (without it, this
    span's calls alone)."""
    counted = list(calls)
    pairs = {(name, canonical(arguments)) for name, arguments in counted}
    copies = copies if copies is not None else RunCopies(counted)
    copies.scope()
    search = _Search(pairs, known, budget, forbidden, copies)
    for key, value in attrs.items():
        text = str(key)
        copies.attribute()
        found = _MODEL_TEXT.fullmatch(text)
        if found and isinstance(value, str) and (found.group(1) == "output" or str(attrs.get(
                f"llm.input_messages.{found.group(2)}.message.role", "")).lower()
                not in NOT_MODEL_ROLES):  # any role but the user's, ...: the model's (25a F6)
            # a counted call its text quotes is no other call, as in ``output.value`` (an
            # executor's log in the message: the eighteenth re-probe's M3)
            why = copies.scan(value, history=found.group(1) == "input") or _written_call(
                search.without_known_lines(value) if known else value, forbidden, copies)
        elif text.startswith("output.") and text != "output.mime_type" and not result \
                and kind not in _NOT_CALLS:
            prose = kind == "LLM" and isinstance(value, str) and \
                value.lstrip()[:1] not in ("{", "[")  # the model's text, not a JSON message
            why = search.value(value, prose=prose, model=True, depth=0)
        else:
            continue
        if why is not None:
            return f"{text[:60]}: {why}"
    return None


def _written_call(text: str, forbidden: Collection[str], copies: RunCopies) -> str | None:
    """A call written in the model's ``text``, as a trajectory's assistant text is searched
    (:func:`~.textcalls.encoded_call`, whose tags are the one list of them; its run-shaped
    copies counted by the caller in ``copies``)."""
    from .textcalls import encoded_call

    why = encoded_call([{"role": "assistant", "content": text}], forbidden=forbidden,
                       logs=False, copies=copies)
    if why is None:
        return None
    return why.partition("content: ")[2] or why


class _Search:
    """One span output's search: what it holds that is not a counted call's."""

    def __init__(self, pairs: set[tuple[str, str]], known: set[str], budget: list[int],
                 forbidden: Collection[str], copies: RunCopies) -> None:
        self.pairs, self.known, self.budget, self.forbidden = pairs, known, budget, forbidden
        self.copies = copies  # the trace's run-shaped copies: more than its calls, more runs
        self.statements: list[str] | None = None  # the known texts that read as SQL

    def value(self, value: object, *, prose: bool, model: bool, depth: int) -> str | None:
        """The first finding in ``value``: ``prose`` (a message's text: only a call written
        in it, and only when ``model``, the model's message)."""
        self.budget[0] -= 1
        if self.budget[0] <= 0 or depth > _DEPTH:
            self.budget[0] = 0
            return f"more than the {_DEPTH} levels searched" if depth > _DEPTH else None
        if isinstance(value, str):
            return self._text(value, prose=prose, model=model, depth=depth)
        if isinstance(value, Mapping):
            return self._mapping(value, prose=prose, model=model, depth=depth)
        if isinstance(value, list | tuple):
            return _first(lambda v: self.value(v, prose=prose, model=model, depth=depth + 1),
                          value)
        return None

    def _text(self, text: str, *, prose: bool, model: bool, depth: int) -> str | None:
        from .sweep import reads_as_sql

        if not prose and text.lstrip()[:1] in ("{", "["):
            from .._util.boundedio import BoundedReadError, loads_json

            try:
                return self.value(loads_json(text, _DEPTH * 2), prose=False, model=model,
                                  depth=depth + 1)
            except BoundedReadError:
                pass  # not JSON: read as text
        plain = lined(text)
        if model:  # a call it quotes that was counted is no other call (an executor's log)
            why = self.copies.scan(text) or _written_call(
                self.without_known_lines(text) if self.known else text, self.forbidden,
                self.copies)
            if why is not None:
                return why
        if not prose and plain not in self.known and reads_as_sql(text) and \
                reads_as_sql(self.without_known_lines(text)):
            return f"the statement {plain[:80]!r}"
        return None

    def _statements(self) -> list[str]:
        """The counted texts that read as SQL, the longest first (made once)."""
        from .sweep import reads_as_sql

        if self.statements is None:
            self.statements = sorted((k for k in self.known if len(k) >= 8 and reads_as_sql(k)),
                                     key=len, reverse=True)[:_QUOTED]
        return self.statements

    def without_known_lines(self, text: str) -> str:
        """``text`` with the counted statements it quotes taken out where each stands whole
        (:func:`_whole`; an AgentExecutor's log ``Invoking: `run_query` with `{'query':
        'SELECT ...'}``` quotes the call it made), blanks in them read as one, its lines kept:
        what is left reads as SQL only when it holds another statement, and a ``--`` comment
        ends at its line, so a statement on the next line is still read (a text searched as
        one line hid ``-- remove the genres`` then ``DELETE FROM Genre`` in a ``sql`` fence:
        issue 58, the fourteenth re-probe's F1). ``lined`` keeps the line ends and the tokens
        the engines read (:func:`~.runcopies.tokens_kept`); ``plain`` is the same text with
        every blank a space,
        so that a statement is found in it at the place it has in ``lined``. A statement where
        a line comment may stand is found in ``lined`` only, with its own line ends: a copy of
        a counted graph read with the break moved after ``//x`` is a write, which read with its
        breaks as blanks was taken out (the twentieth re-probe's F5)."""
        lined = tokens_kept(text)
        plain = _BLANK.sub(" ", lined)
        fences = [_FENCES]
        for statement in self._statements():
            hay = lined if line_commented(statement) else plain
            kept, cut, pos, at = [], [], 0, hay.find(statement)
            while at >= 0:
                end = at + len(statement)
                if _whole(lined, at, end, fences):
                    kept += [lined[pos:at], "\n" if line_ended(lined[at:end]) else " "]
                    cut += [plain[pos:at], " "]
                    pos = end
                at = hay.find(statement, max(pos, at + 1))
            if kept:
                lined, plain = "".join(kept) + lined[pos:], "".join(cut) + plain[pos:]
        return lined

    def _mapping(self, value: Mapping[Any, Any], *, prose: bool, model: bool,
                 depth: int) -> str | None:
        call = _call_of(value)
        if call is not None and (call[0], canonical(call[1])) not in self.pairs and not (
                isinstance(call[1], str) and lined(call[1]) in self.known
                and any(name == call[0] for name, _ in self.pairs)):
            # (a counted tool given its one argument as a text: LangChain's ``tool_input``)
            return f"a call of {call[0][:40]!r} ({canonical(call[1])[:80]})"
        role = value.get("role", value.get("type"))
        mine = model and not (isinstance(role, str) and role.lower() in NOT_MODEL_ROLES)
        return _first(lambda kv: self.value(
            kv[1], prose=prose or kv[0] in _PROSE, model=mine, depth=depth + 1),
            value.items())


def _whole(text: str, at: int, end: int, fences: list[int] | None = None) -> bool:
    """Whether the statement at ``text[at:end]`` stands whole: no word's tail before it, and
    after it what ends a statement (:data:`_ENDS`). Taken out where it is only the head of a
    longer one, ``SELECT count(*) FROM Genre`` left ``, Employee`` of ``SELECT count(*) FROM
    Genre, Employee``, which reads as no statement, and the read of a forbidden table the
    engine ran passed (issue 58, the twenty-first re-probe's H3 and F2); a quote after it ends
    it only where the same quote stands right before it, and a number or a label on the next
    line only after a statement that ends there (:func:`complete`; ``K,`` then ``e: Track`` is
    DuckDB's join: the twenty-second re-probe's H1; ``K *`` then ``1, Employee`` a join too:
    the twenty-third's H1). The blanks after it are matched once: two ``\\s*`` around a line
    end backtracked through a long run of vertical tabs in quadratic time (the twenty-third's
    H2). Anywhere but at the text's end, the statement and the blanks after it end outside
    every literal and comment in both engines' own readers (:func:`~.statementends.ends_outside`):
    ``K --x`` then a vertical tab and ``;`` (SQLite ends ``--`` only at ``\\n``), or ``K``
    ending in an open ``'`` then ``;`` and ``') t, Employee``, is read by the engines as one
    statement joining ``Employee`` (the twenty-fifth re-probe's H2 and H3). ``fences``: the
    reads at a fence left to the text (:data:`_FENCES`)."""
    before = text[at - 1:at]
    if before.isalnum() or before == "_":
        return False
    if _CLOSING.match(text, end):  # ``'K'``, ``{"query": "K"}``: not ``K"g", Employee``
        return text[end] == before and ends_outside(text[at:end])
    blanks = _RUN.match(text, end)
    rest = blanks.end() if blanks is not None else end
    if _BLANK.match(text, rest):  # a blank to Python only: SQLite reads U+2028 as a name's
        return _TAIL.match(text, rest) is not None
    if rest == len(text):
        return True
    if text[rest] == ";":  # (the blanks before it are ASCII: both engines' blanks)
        return ends_outside(text[at:rest])
    after = _NEXT.match(text, rest) if line_ended(text[end:rest]) else None
    if after is None or not ends_outside(text[at:rest]):
        return False
    if after.group() in _FENCE_MARKS:  # a quoted name or an operator: what they read with it
        if fences is not None:
            fences[0] -= 1
            if fences[0] < 0:  # past the reads a text is given: left in (fail closed)
                return False
        return not reads_on(text[at : at + FENCE_READ + 1], text[at:end], rest - at)
    return complete(text[at:end])


@lru_cache(maxsize=1024)
def complete(statement: str) -> bool:
    """Whether ``statement`` is one the engines end where a number or a label follows it on
    the next line: it parses alone (sqlglot, SQLite's or DuckDB's grammar) and its last token,
    in both engines' tokenizers, is a name that asks for nothing more, a number, a closed
    string or a closing bracket. A statement that ends in ``*``, in a quote that opens a
    string, or in ``GLOB`` or ``TABLESAMPLE`` goes on into the next line, whose ``1,
    Employee`` then joins the forbidden table the engine reads (issue 58, the twenty-third
    re-probe's H1 and F1): failing closed, such a statement is not taken out there."""
    import sqlglot
    from sqlglot.dialects.dialect import Dialect

    parsed = False
    for dialect in ("sqlite", "duckdb"):
        try:
            tokens = list(Dialect.get_or_raise(dialect).tokenize(statement))
        except Exception:
            return False
        if not tokens or tokens[-1].token_type.name not in _LAST or (
                tokens[-1].token_type.name == "VAR" and tokens[-1].text.lower() in _MORE):
            return False
        try:
            parsed = parsed or len(sqlglot.parse(statement, read=dialect)) == 1
        except Exception:
            continue  # the other dialect may parse it
    return parsed


def _call_of(value: Mapping[Any, Any]) -> tuple[str, object] | None:
    """``(name, arguments)`` of an object shaped like a call (OpenAI's ``function``, a
    LangChain ``{name, args}``, an Anthropic ``{name, input}``, ``{action, action_input}``),
    else None."""
    function = value.get("function")
    if isinstance(function, Mapping) and isinstance(function.get("name"), str):
        return function["name"], function.get("arguments", "{}")
    name = next((value[k] for k in (*_NAMES, "action") if isinstance(value.get(k), str)), None)
    args = next((k for k in _ARGS if k in value), None)
    if name is None or args is None:
        return None
    return name, value[args]


def _first(find: Callable[[Any], str | None], items: Iterable[Any]) -> str | None:
    return next((why for why in map(find, items) if why is not None), None)
