"""Tool calls a trajectory records that no reader reads: a tool message answering a call the
trajectory does not hold, and a call written in the model's text.

Why: a harness that parses the call from the model's text (a server without a tool parser:
Hermes/Qwen ``<tool_call>{...}</tool_call>``, Llama's ``<|python_tag|>{...}`` and bare JSON,
gpt-oss harmony, Gemma's ``tool_code``, ReAct's ``Action: run_query`` / ``Action Input:
{...}``) runs it and records the result as a tool message, or as a user message that says
nothing, but the assistant message holds no ``tool_calls``: the salvage read no call, so a
``DELETE FROM Genre`` the tool ran passed ``write_attempts: {max: 0}`` with 0 (issue 58, the
twelfth re-probe's H10, the thirteenth's H6). A tool message says a tool ran; when its call
cannot be found, what ran is unknown and the counts are not established.

The model's text is searched by a rule, not a list of formats (a list leaves out the next
one): :func:`text_call` finds a call between the tags harnesses parse, a plugin tool's name
or another query tool's in call syntax, a quoted text in a JSON object's place naming a
tool or holding a statement, and, as the floor whatever the format, a write statement or a
read of a forbidden table anywhere. The rest of the text is the model's prose: a tool named
in a sentence, a read of an allowed table quoted in prose or a ``sql`` fence
(``docs/agent-metrics.md`` gives the rule). The search is linear in the text, its costly
readers counted, a bound reached a call found.

Why one module of this size: the rules share their patterns (the tags, the call syntax, the
bounds of one text's search) and are tried in one order on one text; the readers that stand
on their own are apart (:mod:`.querynames`, :mod:`.textcode`, :mod:`.textreaders`,
:mod:`.owncalls`).
"""

from __future__ import annotations

import contextlib
import functools
import json
import re
from collections.abc import Collection, Iterable, Mapping
from typing import Any

from .language import HEADS
from .owncalls import own_calls, without_own
from .runcopies import LOGGED, RunCopies
from .statements import all_texts
from .textcode import as_code, built_call
from .textfloor import INVISIBLE, floor_finding
from .textfloor import words as _words
from .toolnames import PLUGIN_TOOLS, TOOL_ABSTAIN, named_tool

#: The roles of a message answering a call (OpenAI's ``tool`` and legacy ``function``,
#: Llama's ``ipython``).
_RESULT_ROLES = frozenset({"tool", "function", "ipython"})
#: The roles (any case) of a message that is not the model's: a user's, a system's, a tool's
#: result. Every other role is the model's, in whatever spelling a framework gives it
#: (Gemini's ``model``, LangChain's ``ai`` or ``AIMessage``, an empty role, ``assistant``
#: with a trailing blank): an allow-list of the model's spellings left their text unsearched
#: (issue 58, the twenty-fifth re-probe's F6).
NOT_MODEL_ROLES = frozenset({"system", "user", "human", "tool", "function", "ipython", "developer",
                             "systemmessage", "humanmessage", "toolmessage", "functionmessage"})
#: Where a call written in the model's text starts, by the tags chat templates and their
#: parsers use (each branch starts with its first character, so that the search skips to
#: them); :func:`_closing` gives the tag that ends each (none: the call runs to the end of the
#: text). Searched in the text's lower case.
_OPEN = re.compile(
    r"<(?:tool_calls?|function_calls?|functioncall|tool_use|start_function_call|tool)>|"
    r"<function=[^>\n]{0,256}>|<\|python_tag\|>|\[tool_calls\]|"
    r"<\|tool_calls?(?:_section)?_begin\|>|<\|tool_call\|>|<\uff5ctool\u2581calls?\u2581begin\uff5c>"
    # gpt-oss harmony: a message to a recipient (``<|channel|>commentary to=functions.x``)
    r"|<\|(?:channel|start)\|>[^<\n]{0,256}?\bto="
    r"|<\|action_start\|>|<invoke\b[^>\n]{0,256}>"
    r"|```[ \t]{0,16}(?:tool_code|tool_calls?|function_calls?|tool_use)\b"
    r"|functools\[|\u2718function\u2718|\u273ffunction\u273f"
    # ReAct (``Action: run_query`` then ``Action Input: {...}``, in bold too), which its harness
    # parses: at the head of its line (:func:`_line_head`)
    r"|action(?<![\w]action)[ \t]{0,16}(?:[*_]{0,3}[ \t]{0,16}:|:[*_]{0,3})"
    # LangChain's SQLDatabaseChain (``SQLQuery: SELECT ...`` then ``SQLResult:``), which runs it
    r"|sqlquery(?<![\w]sqlquery)[ \t]{0,16}:"
    # a code agent's code block (smolagents' ``Code:`` then a ``py`` fence), which it runs
    r"|```[ \t]{0,16}py(?:thon)?[ \t]{0,16}\n(?=[^`]{0,65536}```[ \t]{0,16}<end_code>)")
#: The tags that end a call, by how it starts.
_CLOSE = (("<function=", "</function>"), ("<|python_tag|>", "<|eom_id|>"),
          ("action", "observation:"), ("sqlquery", "sqlresult:"), ("<|channel|>", "<|call|>"),
          ("<|start|>", "<|call|>"),
          ("<|action_start|>", "<|action_end|>"), ("<invoke", "</invoke>"), ("```", "```"))
_TAG = re.compile(r"<([a-z_]+)>")


def _closing(opened: str) -> str | None:
    """The tag that ends a call that starts with ``opened`` (a match of :data:`_OPEN`)."""
    tag = _TAG.fullmatch(opened)
    if tag is not None:
        return f"</{tag.group(1)}>"
    return next((close for start, close in _CLOSE if opened.startswith(start)), None)


#: What may come before a ReAct ``Action:`` on its line (a quote's ``>``, a list's ``-``,
#: markdown's ``#`` and ``**``).
_REACT_LEAD = re.compile(r"[ \t>#*_-]{0,16}")


def _messages(data: object, depth: int = 0) -> list[tuple[int, Mapping[str, Any]]]:
    """The message objects of a trajectory (those in nested lists too, at the outer index)."""
    if isinstance(data, str):
        from .._util.boundedio import BoundedReadError, loads_json

        try:
            data = loads_json(data, 64)
        except BoundedReadError:
            return []
    out: list[tuple[int, Mapping[str, Any]]] = []
    for i, item in enumerate(data if isinstance(data, list | tuple) else ()):
        if isinstance(item, Mapping):
            out.append((i, item))
        elif isinstance(item, list | tuple) and depth < 32:
            out.extend((i, m) for _, m in _messages(item, depth + 1))
    return out


def orphan_result(data: object) -> str | None:
    """The first message of ``data`` (a trajectory's messages) answering a call the trajectory
    does not hold, located, or None: a ``tool``, ``function`` or ``ipython`` message whose
    ``tool_call_id`` no call has, when every call is answered by another already (one with a
    repeated or a lost id answers a call left unanswered, as the lenient reading pairs
    them)."""
    from collections import Counter

    made: Counter[object] = Counter()
    results: list[tuple[int, object, object]] = []
    for i, msg in _messages(data):
        calls = msg.get("tool_calls")
        for call in calls if isinstance(calls, list) else ():
            if isinstance(call, Mapping):
                made[call.get("id") if isinstance(call.get("id"), str) else None] += 1
        if isinstance(msg.get("function_call"), Mapping):
            made[None] += 1
        role = msg.get("role")
        if (role.lower() if isinstance(role, str) else role) in _RESULT_ROLES:
            results.append((i, role, msg.get("tool_call_id")))
    unmatched = []
    for i, role, ident in results:
        if isinstance(ident, str) and made[ident] > 0:
            made[ident] -= 1
        else:
            unmatched.append((i, role, ident))
    left = sum(made.values())  # calls no result answered by id: the rest pair with them
    if len(unmatched) <= left:
        return None
    i, role, ident = unmatched[left]
    named = f" {ident[:80]!r}" if isinstance(ident, str) else ""
    return (f"trajectory[{i}] (role {str(role)[:40]!r}) answers the call{named}, which no call "
            "of the trajectory makes: what its tool ran is unknown")


def encoded_call(data: object, *, forbidden: Iterable[str] = (),
                 known: Collection[str] = (), logs: bool = True,
                 copies: RunCopies | None = None) -> str | None:
    """The first assistant message of ``data`` (a trajectory's messages) whose text holds a
    call (:func:`text_call`; ``forbidden``: the case's forbidden tables; ``known``: the
    statements counted already), or more run-shaped copies of a call (an executor's log, a
    chain's record) than the whole trajectory records (``logs``: counted here, in ``copies``,
    one tally of the whole trajectory, :class:`~.runcopies.RunCopies`; a span's text is
    counted by its reader, which gives its tally), located, or None."""
    messages = _messages(data)
    tally = copies if copies is not None else RunCopies.of_messages(m for _, m in messages)
    for i, msg in messages:
        role = msg.get("role")
        if not isinstance(role, str) or role.lower() in NOT_MODEL_ROLES:
            continue
        own = own_calls(msg)
        for where, text in _model_texts(msg):
            why = tally.scan(text) if logs else None
            why = why or text_call(without_own(text, own) if own else text, forbidden, known,
                                   tally)
            if why is not None:
                return f"trajectory[{i}].{where}: {why}"
    return None


#: The keys of a model's message that hold its text besides ``content``: the reasoning a
#: server parses out of it (vLLM's and DeepSeek's ``reasoning_content``, ``reasoning``,
#: ``thinking``) and a refusal. A harness with a reasoning parser that leaves a call in the
#: reasoning, or one that parses the whole output, runs what is there (the seventeenth
#: re-probe's H1: a ``<tool_call>`` of ``DELETE FROM Genre`` in ``reasoning_content`` passed).
_MODEL_TEXT_KEYS = ("content", "reasoning_content", "reasoning", "thinking", "refusal")
#: Keys of a content part that name it, not text.
_PART_KEYS = frozenset({"type", "id", "index"})


def _model_texts(msg: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Every text of a model's message: its ``content`` (the text, or each text a part holds:
    ``text``, Anthropic's ``thinking``, a ``refusal``...) and its reasoning and refusal
    fields, each with where it is."""
    out: list[tuple[str, str]] = []
    for key in _MODEL_TEXT_KEYS:
        value = msg.get(key)
        if isinstance(value, str):
            out.append((key, value))
        elif isinstance(value, list):
            out.extend((f"{key}[{j}].{name}", text) for j, part in enumerate(value)
                       if isinstance(part, Mapping) for name, text in part.items()
                       if isinstance(text, str) and name not in _PART_KEYS)
    return out


def logged_calls(text: str) -> int:
    """How many calls ``text`` logs as an executor does (:data:`~.runcopies.LOGGED`)."""
    return sum(1 for _ in LOGGED.finditer(text))


def text_call(text: str, forbidden: Iterable[str] = (), known: Collection[str] = (),
              copies: RunCopies | None = None) -> str | None:
    """Why the model's ``text`` holds a tool call a harness may have parsed and run, or None.

    In the order tried: (1) a call between the tags a harness parses (:data:`_OPEN`) that
    names a tool the plugin serves or holds a statement; (2) a plugin tool's name in call
    syntax (:func:`_called`: ``run_query(``, ``functions.run_query``, ``name="run_query"``,
    ``<run_query>``, ``>run_query<``, a line ``<label>: run_query``), or a query tool's the
    plugin does not serve (``sql_db_query("...")``: :mod:`.querynames`); (3) a quoted text in a
    JSON (or Python) object's or list's place (after ``{``, ``[``, ``,`` or ``:``) that is a
    plugin tool's name or holds a statement; (4) a query tool called in code with a statement
    built by code or none (:func:`~.textcode.built_call`); (5) the floor, wherever it is,
    also as code gives a tool its strings (:func:`~.textcode.as_code`): a write statement
    (:data:`_WRITE`) or a read of a ``forbidden`` table (:func:`_forbidden_read`). The rest is
    prose: ``I counted the genres with run_query`` and a read of an allowed table quoted in
    prose or a ``sql`` fence pass. Linear in the text: every pattern is bounded, each tagged
    call is read once, and the texts handed to the statement readers are counted
    (:data:`MAX_READ`; past them the text is taken as holding a call, as a bound reached is
    in :mod:`.sweep`). ``known``: the statements counted already (the calls' queries, the
    final query), blanks collapsed: rule 3 passes a quoted one, which is the answer's record of
    a query the agent ran or gives (``{"sql": "SELECT ...", "answer": 25}``), not a call,
    unless the text is shaped like a call (``{"tool": ..., "tool_input": ...}``). ``copies``:
    the whole trajectory's tally of run-shaped copies (a chain's ``SQLQuery:`` of a recorded
    call's statement is its record, the tally counting them); without it, the text is read
    alone, each of ``known`` recorded once."""
    low = _lower(text)
    tables = tuple(t for t in forbidden if isinstance(t, str) and t)
    if copies is None:
        copies = RunCopies.of_known(known)
        if (why := copies.scan(text, logs=False)) is not None:
            return f"a tool call written in the model's text: {why}"
    return (_tagged(text, low, copies) or _called(text, low) or _json_place(text, low, known)
            or _built(text, low) or _foreign(text, low, tables) or _floor(text, low, tables))


def _lower(text: str) -> str:
    """``text`` in lower case, each character in its place (the few whose lower case is longer,
    ``\u0130``, kept as they are)."""
    low = text.lower()
    if len(low) == len(text):
        return low
    return "".join(c if len(c.lower()) != 1 else c.lower() for c in text)


def _at(start: int, text: str, what: str) -> str:
    return (f"a tool call written in the model's text at character {start} "
            f"({text[start:start + 40]!r}) {what}")


#: Texts (tagged calls, quoted texts, mentions of a plugin tool) one text's search reads at
#: most with the statement readers, which cost more than a pattern: past them the text is
#: taken as holding a call (no honest answer holds thousands).
MAX_READ = 1000
#: Words that make a tagged call or a quoted text worth reading: a plugin tool's name, a
#: statement's first word, a backslash (an escape may spell either).
_WORTH_WORDS = _words([*PLUGIN_TOOLS, *HEADS, "prefix", "construct", "foreach"])
_WORTH = re.compile(_WORTH_WORDS + r"|\\")


def _tagged(text: str, low: str, copies: RunCopies) -> str | None:
    """Rule 1: a tagged call that names a tool the plugin serves or holds a statement, or
    code that runs what it computes (:data:`_DYNAMIC`) where the harness runs code (each read
    once: the search goes on after its closing tag). A chain's ``SQLQuery:`` of a counted
    statement is its record when a call of it is recorded (``copies``, which counts them)."""
    from .sweep import names_tool, reads_as_sql

    pos, read, opened = 0, 0, 0
    while (match := _OPEN.search(low, pos)) is not None:
        pos, opened = match.end(), opened + 1
        if opened > 10 * MAX_READ:
            return _at(match.start(), text, f"is one of more than {10 * MAX_READ:,} tags of "
                       "calls, which are not all read")
        if match.group().startswith("action") and not _line_head(low, match.start()):
            continue
        close = _closing(match.group())
        end = low.find(close, match.end()) if close else -1
        stop = end if end >= 0 else len(text)
        pos = max(stop, pos)
        if match.group().startswith(_RUNS_CODE) and _DYNAMIC.search(low, match.end(), stop):
            return _at(match.start(), text, "runs code that computes what it calls")
        if not _WORTH.search(low, match.start(), stop):
            continue
        if match.group().startswith("sqlquery") and copies.recorded(
                " ".join(text[match.end():stop].split())):
            continue
        read += 1
        if read > MAX_READ:
            return _at(match.start(), text, f"is one of more than {MAX_READ:,} tagged calls, "
                       "which are not all read")
        inner = text[match.end():stop]
        for found in [match.group() + inner, *all_texts(inner.strip(), 0)]:
            if names_tool(found) or reads_as_sql(found):
                return _at(match.start(), text, "names a tool or holds a statement: "
                           f"{' '.join(found.split())[:80]!r}")
    return None


#: The tags whose text a harness runs as code (Gemma's ``tool_code``, Llama's code
#: interpreter after ``<|python_tag|>``, a code agent's ``py`` block), and what in code runs
#: what it computes (an import, ``getattr``, ``exec``...), which no search can judge (issue
#: 58, the fifteenth re-probe's H8: ``DELETE FROM Genre`` built from hex and called by
#: ``getattr``).
_RUNS_CODE = ("```", "<|python_tag|>")
_DYNAMIC = re.compile(r"(?<![\w.])(?:import|getattr|setattr|exec|eval|compile|__import__|"
                      r"subprocess|globals|locals)(?![\w])|\bos\s*\.\s*(?:system|popen)")


def _line_head(low: str, start: int) -> bool:
    """Whether only blanks and markdown come before ``start`` on its line."""
    line = low.rfind("\n", max(0, start - 17), start) + 1
    if line == 0 and start > 16:
        return False
    return _REACT_LEAD.fullmatch(low, line, start) is not None


#: A plugin tool's name (``abstain``, an English word, only where call syntax is plain).
_TOOL = re.compile(_words(PLUGIN_TOOLS) + r"(?![a-z0-9])")
#: Call syntax after a tool's name: called (``run_query(``, Gemma's ``tool_code``), or a
#: tag's text (``<name>run_query</name>``).
_CALL_AFTER = re.compile(
    r"\s{0,64}\(|[\"'`]\(|[ \t]{0,64}</|"
    r"\.[ \t]{0,8}(?:a?invoke|a?run|run_no_throw|a?call|batch)[ \t]{0,8}\(|"
    r"[ \t]{0,16}\r?\n[ \t]{0,16}(?:\{|```[ \t]{0,8}(?:python|py|json)?[ \t]{0,8}\r?\n)")
#: Call syntax after a query tool the plugin does not serve, beside :data:`_CALL_AFTER`: its
#: arguments' object after a colon or an arrow (``sql_db_query: {...}``, ``sql_db_query ->
#: {...}``), which for the plugin's own tool may be the answer's record of its counted call.
_FOREIGN_AFTER = re.compile(r"[`\"']?[ \t]{0,16}(?::|->|=>)[ \t]{0,16}\{")
#: An AgentExecutor's log of a call (``Invoking: `sql_db_query` with``).
_FOREIGN_BEFORE = re.compile(r"invoking:[ \t]{0,8}`?$")
#: Call syntax before a tool's name: a namespace (``functions.run_query``, ``tools/``,
#: ``a::``), an ``=`` (``to=run_query``, ``name="run_query"``), a tag (``<run_query>``).
_CALL_BEFORE = re.compile(r"(?:[./]|::|=[ \t]{0,8}[\"'`]?[ \t]{0,8}|</?|>>>[ \t]{0,8})$")
#: A labelled line whose whole value is the tool (``Action: run_query``, ``**Action:**
#: run_query``, ``\u273fFUNCTION\u273f: run_query``, ``function: mcp__db__run_query``): the
#: label (to 80 characters, no colon in it) and what comes between the colon and the name;
#: then what may end the line after it.
_LABEL = re.compile(r"\n[^\n:]{0,80}:[ \t*_`\"']{0,16}[\w.-]{0,80}$")
_LINE_END = re.compile(r"[ \t*_`\"'.\r]{0,16}(?:\n|$)")


def _called(text: str, low: str) -> str | None:
    """Rule 2: a plugin tool's name in call syntax (each mention looked at in a window of
    200 characters around it), or a query tool's the plugin does not serve
    (:func:`~.querynames.written_query_call`)."""
    for n, match in enumerate(_TOOL.finditer(low)):
        start, end = match.span()
        if n >= MAX_READ:
            return _at(start, text, f"names the plugin's tools more than {MAX_READ:,} times, "
                       "which are not all read")
        if _call_syntax(low, start, end, label=match.group() != TOOL_ABSTAIN):
            return _at(start, text, f"calls the tool {match.group()!r} the plugin serves")
    # a query tool the plugin does not serve, so called (14th re-probe's F4)
    from .querynames import written_query_call

    found = written_query_call(text, low, lambda start, end: _call_syntax(
        low, start, end, foreign=True))
    return None if found is None else _at(found[0], text, found[1])


def _call_syntax(low: str, start: int, end: int, label: bool = True,
                 foreign: bool = False) -> bool:
    """Whether the name at ``start:end`` of ``low`` is in call syntax (``label``: also as the
    whole value of a labelled line; ``foreign``: a tool the plugin does not serve, also before
    its arguments' object or in an executor's log, :data:`_FOREIGN_AFTER`)."""
    before = low[max(0, start - 200):start]
    line = "\n" + before if start <= 200 else before  # where the text starts, a line does
    return bool(_CALL_AFTER.match(low, end) or _CALL_BEFORE.search(before) or (
        label and _LABEL.search(line) and _LINE_END.match(low, end)) or (
        foreign and (_FOREIGN_AFTER.match(low, end) or _FOREIGN_BEFORE.search(before))))


#: A quoted text in a JSON (or Python) object's or list's place (after ``{``, ``[``, ``,`` or
#: ``:``), found in one pass and read (:func:`_json_place`) when :data:`_WORTH` finds a word
#: in it.
_QUOTED = re.compile(
    r"[\[{,:][ \t\r\n]{0,64}(?:\"(?P<json>(?:[^\"\\\n]|\\.){0,65536}?(?:" + _WORTH_WORDS +
    r"|\\.)(?:[^\"\\\n]|\\.){0,65536})\"|'(?P<py>[^'\n]{0,65536}?(?:" + _WORTH.pattern +
    r")[^'\n]{0,65536})')")


def _json_place(text: str, low: str, known: Collection[str] = ()) -> str | None:
    """Rule 3: a quoted text in a JSON object's or list's place that is a plugin tool's name
    or holds a statement (a statement's text at its head, or one inside it a parser reads);
    a statement the case counts is its record, unless the text is shaped like a call
    (:func:`~.querynames.call_shaped`)."""
    from .querynames import call_shaped
    from .statements import embedded_statement, statement_text

    shaped = functools.lru_cache(maxsize=1)(call_shaped)  # read once, when a quote is known

    for read, match in enumerate(_QUOTED.finditer(low), 1):
        group = "json" if match.group("json") is not None else "py"
        if read > MAX_READ:
            return _at(match.start(), text, f"holds more than {MAX_READ:,} quoted texts that "
                       "may be statements, which are not all read")
        value = text[slice(*match.span(group))]
        if group == "json":
            with contextlib.suppress(ValueError):  # not JSON's escapes: read as written
                value = json.loads(f'"{value}"')
        name = named_tool(value)
        if name is not None and name != TOOL_ABSTAIN:
            return _at(match.start(), text, f"names the tool {name!r}")
        if " ".join(value.split()) in known and not shaped(low):
            continue  # a statement counted already: its record, not another call
        if statement_text(value.strip()) or embedded_statement(value) is not None:
            return _at(match.start(), text, "holds a statement in a quoted text: "
                       f"{' '.join(value.split())[:80]!r}")
    return None


def _foreign(text: str, low: str, forbidden: Iterable[str]) -> str | None:
    """A call of a data reader, a code tool or a database's tool the plugin does not serve
    (:func:`~.textreaders.foreign_text_call`)."""
    from .textreaders import foreign_text_call

    found = foreign_text_call(text, low, tuple(t for t in forbidden if isinstance(t, str)))
    return None if found is None else _at(found[0], text, found[1])


def _built(text: str, low: str) -> str | None:
    """A query tool's call in code whose statement is built by code or none
    (:func:`~.textcode.built_call`)."""
    found = built_call(text, low, MAX_READ)
    return None if found is None else _at(found[0], text, found[1])


def _floor(text: str, low: str, forbidden: tuple[str, ...]) -> str | None:
    """Rule 5, the floor (:func:`~.textfloor.floor_finding`): the text as written and as code
    gives it to a tool (:func:`~.textcode.as_code`), its format characters read as nothing
    (a soft hyphen in ``DELETE``) and, where it holds one, as a blank too: DuckDB reads
    U+200B, U+2060 and U+FEFF as a blank (``FROM``, U+200B, ``Track``: the nineteenth
    re-probe's H1)."""
    code = as_code(text)
    coded = _lower(code)
    found = floor_finding(INVISIBLE.sub("", low), INVISIBLE.sub("", coded), forbidden,
                          (INVISIBLE.sub("", text), INVISIBLE.sub("", code)))
    if found is None and (INVISIBLE.search(low) or INVISIBLE.search(coded)):
        found = floor_finding(INVISIBLE.sub(" ", low), INVISIBLE.sub(" ", coded), forbidden,
                              (INVISIBLE.sub(" ", text), INVISIBLE.sub(" ", code)))
    return None if found is None else _at(*found)


def counted_texts(predicted: object, steps: Iterable[Any]) -> frozenset[str]:
    """The statements a case counts (its calls' argument texts and its final query), blanks
    collapsed: the model's text quoting one records it (``{"sql": ..., "answer": 25}``)."""
    texts = [predicted, *(v for s in steps if isinstance(getattr(s, "arguments", None), dict)
                          for v in s.arguments.values())]
    return frozenset(" ".join(t.split()) for t in texts if isinstance(t, str))


def unread_call(data: object, *, forbidden: Iterable[str] = (),
                known: Collection[str] = ()) -> str | None:
    """Why ``data`` (a trajectory's messages) records a call no reader reads, or None
    (``forbidden``: the case's forbidden tables, read by :func:`text_call`'s floor;
    ``known``: the statements counted already)."""
    return orphan_result(data) or encoded_call(data, forbidden=forbidden, known=known)
