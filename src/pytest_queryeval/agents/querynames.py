"""Which tool names run a query (``sql_db_query``, ``execute_sql``, ``RunQuery``,
``postgres``), for a call a harness records and for one written in the model's text.

Why a module of its own: the rule that makes a foreign query tool's call leave the run counts
unknown (:mod:`.unrun`) must read the same names in the model's text (:mod:`.textcalls`):
``sql_db_query("SELECT * FROM Track")`` written there, which a harness parses and runs, passed
``rows_read: {max: 10}`` with 1, because the text rule knew only the plugin's own tool names
(issue 58, the fourteenth re-probe's F4). The text rule sits below the trajectory reader that
:mod:`.unrun` imports, so the name rule sits below both.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator

from .codetools import RUN_WORDS, code_tool, name_words
from .statements import query_tool
from .toolnames import named_tool

#: Words of a database's name: a tool named by them alone, or with a verb of running
#: (``postgres``, ``duckdb``, ``run_db``, ``database``), is a query tool even when its name
#: holds no ``query`` or ``sql``; ``mcp__db__list_tables`` and ``get_db_schema`` are not. A
#: SPARQL server's name (``fuseki``) is not among them: its argument is read by the
#: datasource's own SPARQL guard (:mod:`.sparqlargs`), and prose there stays prose.
DB_WORDS = frozenset({
    "db", "database", "databases", "postgres", "postgresql", "pg", "sqlite", "duckdb", "mysql",
    "mariadb", "mssql", "sqlserver", "oracle", "bigquery", "snowflake", "redshift",
    "clickhouse", "neo4j", "memgraph", "falkordb"})
#: Words of a namespace that say nothing of what a tool does (``mcp__postgres``,
#: ``functions.database``).
NEUTRAL = frozenset({"mcp", "tool", "tools", "function", "functions", "server"})


@functools.lru_cache(maxsize=4096)
def query_named(name: str) -> bool:
    """Whether ``name`` is a tool that runs a query: a query tool of the statement rules
    (:func:`~.statements.query_tool`: ``execute_sql``, ``sql_db_query``, ``RunQuery``,
    ``sparql_query``; not ``to_json``), or one named by a database's words alone (:data:`DB_WORDS`). A tool
    that runs code is not (its own rule, :mod:`.codetools`), nor a tool the plugin serves in
    another spelling (``mcp__db__get_schema``) other than ``run_query``."""
    if code_tool(name) is not None:
        return False
    # a kind's name makes a query tool of the statement rules; ``json`` is a format's too
    # (``to_json``, ``validate_json``), which names no query
    if query_tool(re.sub("json", "", name, flags=re.IGNORECASE)):
        return True
    if named_tool(name) is not None:
        return False
    words = [w for w in name_words(name) if w not in NEUTRAL]
    return bool(words) and all(w in DB_WORDS or w in RUN_WORDS for w in words) and \
        any(w in DB_WORDS for w in words)


#: A name in the model's text (lower case) that may be a tool's: letters, digits, ``_`` and
#: ``-``, found around a word a query tool's name holds (:func:`_stems`), no such character
#: (nor another letter) before or after it.
_NAME = re.compile(r"[a-z_][a-z0-9_]{0,127}(?:-[a-z0-9_]{1,64}){0,8}")
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_-")
_TAIL = re.compile(r"[a-z0-9_-]{0,1024}")
#: Strict call syntax, for a name that is one plain word (``query``, ``sql``, ``database``,
#: ``postgres``: words prose uses, ``the query (see below)``): called with a quoted text or a
#: keyword argument (``query("SELECT ...")``, ``sql(query='...')``), also by a method of
#: running (LangChain's ``db.run("...")``, ``tool.invoke(...)``: the fifteenth re-probe's H6).
_STRICT = re.compile(r"(?:\.[ \t]{0,8}(?:a?invoke|a?run|run_no_throw|a?call)[ \t]{0,8})?"
                     r"\([ \t]{0,8}(?:[\"'`]|[a-z_]\w{0,64}[ \t]{0,8}=(?!=))")
#: A quoted name in a JSON (or Python) object's or list's place (``{"tool": "sql_db_query"``):
#: the place and the opening quote before it.
_QUOTED_BEFORE = re.compile(r"[\[{,:][ \t\r\n]{0,64}([\"'])$")
#: Distinct names read with :func:`query_named`, and mentions of a query tool of more than one
#: word looked at in their syntax, in one text at most; past them the text is taken as
#: holding a call (no honest answer names thousands of query tools).
MAX_NAMES = 1000


@functools.lru_cache(maxsize=8)
def _stems(kinds: tuple[str, ...]) -> re.Pattern[str]:
    """A word a query tool's name holds, searched first (prose holds few): the statement
    rules' words, a kind's name, a database's words."""
    words = ["query", "sql", "sparql", "gql", "exec", "statement", *kinds, *DB_WORDS]
    return re.compile("|".join(re.escape(w) for w in sorted(set(words), key=len, reverse=True)))


def _names(low: str) -> Iterator[tuple[int, int]]:
    """The spans of the names in ``low`` that hold a word of :func:`_stems`, each once."""
    from ..kindregistry import known_kinds

    done = 0
    for hit in _stems(tuple(known_kinds())).finditer(low):
        if hit.start() < done:
            continue  # inside a name read already
        start = hit.start()
        while start > max(0, hit.start() - 256) and low[start - 1] in _NAME_CHARS:
            start -= 1
        tail = _TAIL.match(low, hit.start())
        end = tail.end() if tail is not None else hit.end()
        done = end
        if (start and (low[start - 1] in _NAME_CHARS or low[start - 1].isalnum()
                       or low[start - 1] == "$")) or \
                (end < len(low) and (low[end] in _NAME_CHARS or low[end].isalnum()
                                     or low[end] == "$")):
            continue  # longer than a name, or part of a word of another script
        if _NAME.fullmatch(low, start, end):
            yield start, end


def written_query_call(text: str, low: str, syntax: Callable[[int, int], bool]
                       ) -> tuple[int, str] | None:
    """Where the model's ``text`` (``low``: in lower case, each character in its place) calls
    a query tool the plugin does not serve, and why, or None: a name :func:`query_named`
    accepts in call syntax. A name of more than one word (``sql_db_query``, ``execute_sql``,
    ``RunQuery``, ``mcp__db__query``) in the call syntax of a plugin tool's name
    (``syntax(start, end)``: the text rule's own, called, namespaced, a tag, a labelled line's
    value) or quoted in a JSON object's place (``{"tool": "sql_db_query", ...}``); a name of
    one plain word only called with a quoted text or a keyword argument (:data:`_STRICT`)."""
    kinds: dict[str, int] = {}  # a name: 0 no query tool, 1 of one plain word, 2 of more
    mentions = 0
    for start, end in _names(low):
        name = text[start:end]
        kind = kinds.get(name)
        if kind is None:
            if len(kinds) >= MAX_NAMES:
                return start, (f"names more than {MAX_NAMES:,} query-like words, which are "
                               "not all read")
            # the plugin's own tool (``RUN_QUERY``) is the text rule's own
            kind = kinds[name] = 0 if named_tool(name) is not None or not query_named(name) \
                else 1 if len(name_words(name)) == 1 else 2
        if kind and _STRICT.match(low, end):
            return start, _called(name)
        if kind < 2:
            continue
        mentions += 1
        if mentions > MAX_NAMES:
            return start, (f"names query tools more than {MAX_NAMES:,} times, which are not "
                           "all read")
        quote = _QUOTED_BEFORE.search(low, max(0, start - 80), start)
        if syntax(start, end) or (quote is not None and low.startswith(quote.group(1), end)):
            return start, _called(name)
    return None


def _called(name: str) -> str:
    return f"calls the tool {name[:80]!r}, a query tool the plugin does not serve"


#: A key that names the tool of a call written as an object (LangChain's ``tool`` and
#: ``action``, ``tool_name``, OpenAI's ``function``, ``recipient_name``, ``fn``) with a
#: text as its value, not a final answer's (``{"action": "Final Answer", ...}``); and a call's
#: ``name`` key, a call's only when the object has a key of its arguments too.
_TOOL_KEY = re.compile(
    r"[\"'](?:tool|tool_?name|toolname|function|function_?name|fn|action|recipient_?name|"
    r"(?P<name>name))[\"'][ \t\r\n]{0,64}:[ \t\r\n]{0,64}(?:\{|[\"'](?!final[ _]?answer[\"'])"
    r"[^\"'\n]{1,256}[\"'])")
_ARGUMENTS_KEY = re.compile(
    r"[\"'](?:arguments|args|input|tool_input|action_input|parameters|params|kwargs)[\"']"
    r"[ \t\r\n]{0,64}:")


def call_shaped(low: str) -> bool:
    """Whether the model's text (in lower case) holds an object shaped like a call, which
    names its tool (``{"tool": "sql_db_query", "tool_input": ...}``, ``{"name": ...,
    "arguments": ...}``, ``{"function": {...}}``): a statement the case counts already, quoted
    in it, is another run of it, not the answer's record (``{"sql": ..., "answer": 25}``).
    The exception for a record let ``{"tool": "sql_db_query", "tool_input": <the counted
    query>}`` run it five times uncounted (issue 58, the fourteenth re-probe's F5)."""
    named = False
    for match in _TOOL_KEY.finditer(low):
        if match.group("name") is None:
            return True
        named = True
    return named and _ARGUMENTS_KEY.search(low) is not None
