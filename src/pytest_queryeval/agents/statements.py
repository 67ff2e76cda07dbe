"""What an agent's tool call holds that may be a query: the tools that run one and the texts
of their arguments that start like a statement.

Why a module of its own: the replay (:mod:`.replay`) judges these texts, and the spans'
search (:mod:`.spans`) must know which of a call's arguments are judged so that a text there
is not taken as counted when it is not; both read them here, with no cycle between them.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping

from .language import HEADS, head_word, parses_as_statement
from .lead import FORMAT_CHARS, GRAPH_CLAUSE, graph_clause
from .lead import LEAD as _LEAD
from .toolnames import TOOL_QUERY, plugin_tool


@functools.lru_cache(maxsize=8)
def _names(kinds: tuple[str, ...]) -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    """The patterns of a tool name that runs a query (its last part, ``-`` read as ``_``, any
    case), of an argument name that holds one (of a query tool, and of any other tool, where a
    ``query`` is as often a web search's words as a statement): the words of SQL and of each
    registered kind's language (a ``run_<kind>`` tool, a ``<kind>`` argument)."""
    languages = "".join(f"|{re.escape(k)}" for k in kinds)
    return (re.compile(rf"query|sql|sparql|gql|execute|exec\b|statement{languages}", re.I),
            re.compile(rf"query|sql|sparql|statement|command{languages}", re.I),
            re.compile(rf"sql|sparql|statement{languages}", re.I))


def _patterns() -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    from ..kindregistry import known_kinds

    return _names(tuple(known_kinds()))


#: The head of a statement (SQL, a graph language, SPARQL), after blanks and comments (``/* x
#: */ DELETE ...``, ``-- x`` then a line): only a text starting so is judged, so an argument of
#: prose is never read as a write.
STATEMENT = re.compile(
    _LEAD + r"(?:select|with|values|table|from|explain|pragma|show|describe|summarize|pivot|"
    r"unpivot|checkpoint|force|insert|update|"
    r"delete|merge|upsert|replace|create|drop|alter|truncate|grant|revoke|attach|detach|"
    r"vacuum|copy|call|exec|execute|rename|comment|set|reindex|analyze|lock|load|install|"
    r"import|export|begin|commit|rollback|match|optional|unwind|return|remove|foreach|"
    r"prefix|base|ask|construct|clear|add|move|use)\b", re.IGNORECASE)
#: Levels of JSON in JSON and of nested arguments read for a query; past them, what the
#: arguments hold is not read, and a count that depends on it is not established
#: (:func:`unjudged`), never a silent stop.
_LOOSE_DEPTH = 64


def query_tool(name: str) -> bool:
    """Whether ``name`` is a tool that runs a query (``run_query`` in any spelling,
    ``execute_sql``, ``mcp__db__run_sql``): its last part, ``-`` read as ``_``. A tool that
    runs code (:func:`.codetools.code_tool`: ``execute_python``, ``jupyter.execute``) is not
    one: its argument is code, not a query (an ``import`` is no ``IMPORT DATABASE``)."""
    from .codetools import code_tool

    if plugin_tool(name) == TOOL_QUERY:
        return True
    if code_tool(name) is not None:
        return False
    return _patterns()[0].search(re.split(r"\.|/|:|__", name.strip().replace("-", "_"))[-1]) \
        is not None


def loose_queries(name: str, arguments: str, cut: list[str] | None = None) -> list[str]:
    """The statements a call's ``arguments`` text holds: its query-named arguments' texts
    (any nesting, lists, JSON in JSON), and when ``name`` is a query tool, every text of it
    (the bare text itself when it is not JSON); only texts that start like a statement. Of
    another tool, also every text that starts with a statement and its object
    (:data:`STATEMENT_WITH_OBJECT`: ``postgres {"input": "DELETE FROM Genre"}``), which a
    harness serving a tool of that name runs; prose stays prose. ``cut`` collects where the
    reading stopped at its depth."""
    _, query_key, statement_key = _patterns()
    tool = query_tool(name)
    keys = query_key if tool else statement_key
    cut = cut if cut is not None else []
    found = [t for t in _texts(arguments, tool, keys, 0, cut, tool)
             if STATEMENT.match(t) or parses_as_statement(t)]
    if not tool:
        found += [t for t in _texts(arguments, True, keys, 0, cut, True)
                  if t not in found and statement_text(t)]
    return found


def statement_text(text: str) -> bool:
    """Whether another tool's argument ``text`` is a statement a harness serving that tool
    runs, not prose: a statement with its object at its head, or at the head of any of its
    ``;``-separated parts after an ``EXPLAIN``/``PROFILE`` head when the first starts with a
    statement's word (``SAVEPOINT a; DELETE FROM Genre``; not a quoted name's ``x"; DROP
    TABLE t``, which the tool quotes as a name); a text a real SQL parser reads as
    statements (:func:`.language.parses_as_statement`: ``EXPORT DATABASE 'x'``, ``WITH
    RECURSIVE r AS (...) DELETE ...``, ``CHECKPOINT;``; one word only with its ``;``); a
    graph pattern clause or write anywhere in it (``WITH 1 AS x MATCH (n) ...``, ``CALL {
    MATCH (n) ... }``). ``set up sqlite, then delete from the cache`` and ``SELECT syntax``
    (read, and harmless, by DuckDB) stay what they are."""
    from .language import unwrap

    if STATEMENT_WITH_OBJECT.match(text) or graph_clause(text):
        return True
    # empty and comment-only parts (``/**/;``) are no statement: the first is the first word's
    parts = [part for part in text.split(";")[:64] if head_word(part) is not None]
    if parts and head_word(unwrap(parts[0])) in HEADS and any(  # statements from the first on
            STATEMENT_WITH_OBJECT.match(unwrap(part)) for part in parts):
        return True
    # one word is a statement only when a ``;`` ends it or it is written in capitals
    # (``CHECKPOINT``; ``vacuum``, ``Begin``: English too)
    return (len(text.split()) > 1 or text.rstrip().endswith(";") or
            _CAPITALS.fullmatch(text) is not None) and parses_as_statement(text)


#: One word in capitals after blanks, format characters and comments (``CHECKPOINT``).
_CAPITALS = re.compile(_LEAD + r"[A-Z_]{2,}\s*")



def _texts(value: object, wanted: bool, keys: re.Pattern[str], depth: int, cut: list[str],
           every: bool) -> list[str]:
    """The texts of ``value`` that may be a query: under a query-named key, or any (``every``:
    a query tool's arguments, each of which a harness may have run)."""
    if depth > _LOOSE_DEPTH:
        cut.append(f"its arguments nest deeper than the {_LOOSE_DEPTH} levels read")
        return []
    if isinstance(value, str):
        decoded = _decoded(value)
        if decoded is None:
            return [value.strip()] if wanted else []
        return _texts(decoded, wanted, keys, depth + 1, cut, every)
    if isinstance(value, Mapping):
        named = [k for k in value if keys.search(str(k))]
        return [t for k, v in value.items()
                for t in _texts(v, k in named or (wanted and (every or not named)), keys,
                                depth + 1, cut, every)]
    if isinstance(value, list | tuple):
        return [t for v in value for t in _texts(v, wanted, keys, depth + 1, cut, every)]
    return []


def all_texts(value: object, depth: int) -> list[str]:
    """Every text of ``value`` (JSON in text read as its texts, the text itself beside them),
    to :data:`_LOOSE_DEPTH` levels (past them :func:`unjudged` stops first)."""
    if depth > _LOOSE_DEPTH:
        return []
    if isinstance(value, str):
        decoded = _decoded(value)
        return [value] if decoded is None else all_texts(decoded, depth + 1)
    if isinstance(value, Mapping):
        value = list(value.values())
    if isinstance(value, list | tuple):
        return [t for v in value for t in all_texts(v, depth + 1)]
    return []


def _decoded(text: str) -> object:
    """``text`` read as JSON when it is JSON (an object, a list or a quoted text), else None."""
    if text.lstrip()[:1] not in ("{", "[", '"'):
        return None
    from .._util.boundedio import BoundedReadError, loads_json

    try:
        return loads_json(text, _LOOSE_DEPTH * 2)
    except BoundedReadError:
        return None


#: A statement with its object at the head of a text (after blanks and comments): what another
#: tool's argument must start with to be read as a statement, not prose (``DELETE FROM Genre``,
#: ``SELECT x FROM Employee``, ``MATCH (n) ...``; not ``SELECT syntax``, nor ``set up sqlite,
#: then delete from the cache``); a one-word statement that is also an English verb
#: (``TRUNCATE x``, ``REINDEX``, ``VACUUM``, ``SUMMARIZE x``) only when a ``;`` ends it.
STATEMENT_WITH_OBJECT = re.compile(
    r"(?:\s|;)*" + _LEAD + r"(?:delete\s+(?:from\s|\S+\s+where\b)|"
    r"insert\s+(?:or\s+\w+\s+)?into|update\s+\S+(?:\s+(?:as\s+)?\w+)?\s+set|"
    r"(?:replace|merge|upsert)\s+into|(?:create|drop|alter|truncate)\s+(?:or\s+replace\s+)?"
    r"(?:temp\w*\s+|unique\s+|materialized\s+|node\s+|rel\s+)?(?:table|view|index|database|"
    r"schema|trigger|function|procedure|sequence|role|user|macro|secret|graph)\b|"
    # a setting of the connection (an embedded graph engine's ``CALL threads=1``, ``CALL `timeout` = 1``)
    r"call\s+(?:\w+|`[^`\n]+`)\s*=|"
    r"select\b[\s\S]{0,2000}?\bfrom\b|with\s+\S+\s+as\s*\(|attach\b|detach\s+database|"
    r"copy\s+\S+\s+(?:from|to)\b|grant\s[\s\S]{0,200}?\bon\b|revoke\s[\s\S]{0,200}?\bon\b|"
    r"comment\s+on\s|pragma\s+[\w.]+\s*(?:=|\()|vacuum\s+into\b|"
    r"values\s*\(|(?:from|table)\s+[\w.\"`\[\]]+\s*;?\s*$|"
    # a graph clause with its pattern (not ``merge (join) the tables``: :data:`.lead.GRAPH_CLAUSE`)
    rf"(?:optional\s+)?(?:{GRAPH_CLAUSE})|"
    r"unwind\b|load\s+(?:csv|from|extension)\b|"
    r"(?:truncate|reindex|vacuum|install|summarize|delete)(?:\s+(?:table\s+)?[\w.\"`\[\]]+)?\s*;|"
    # DuckDB's, which no parser here reads, as the whole text (the nineteenth re-probe's H6)
    r"update\s+extensions(?:\s*\([^()\n]{0,1024}\))?\s*;?\s*$)",
    re.IGNORECASE)



#: Where a statement embedded in another tool's argument may start: a statement's head word
#: (:data:`.language.HEADS`) after a quote, a blank or ``(`` (``c.execute('DELETE ...')``,
#: ``sqlite3 db "DELETE ..."``).
_EMBEDDED_HEAD = re.compile(
    rf"(?:(?<=['\"`\s(;{FORMAT_CHARS}])|^)(?=(?:" + "|".join(sorted(HEADS)) + r")\b)",
    re.IGNORECASE)
#: A format character, or a blank that is not a space (``DELETE\u00a0FROM``): what the engines
#: skip or read as a space, and their parsers here do not.
_INVISIBLE = re.compile(f"[{FORMAT_CHARS}]")
#: Characters of one argument searched for an embedded statement; a longer argument holding a
#: head word past them is taken as holding one (fail closed).
_EMBEDDED_CHARS = 256 * 1024
#: A graph statement's shape, which no SQL parser reads (an embedded graph engine's): a pattern clause,
#: a write, a setting of the connection, its DDL, a file read or written.
_GRAPH_SHAPE = re.compile(
    _LEAD + rf"(?:(?:optional\s+)?(?:{GRAPH_CLAUSE})|"
    r"call\s+(?:\w+|`[^`\n]+`)\s*=|create\s+(?:node|rel)\s+table\b|"
    # a file read or written (the embedded graph engine's ``LOAD FROM 'f'``, ``EXPORT DATABASE 'd'``)
    r"load\s+(?:with\s+headers\s+)?(?:csv\s+)?from\s+['\"$]|(?:export|import)\s+database\s+['\"])",
    re.IGNORECASE)


#: An article or determiner where a statement names its table (``delete from the cache``,
#: ``select the rows from a list``): English, which DuckDB's parser reads as a table ``the``
#: with an alias; prose when it follows words on its line (:func:`_mid_line`), not a
#: statement (``WITH a AS (...) DELETE ... FROM a`` quoted or heading a line is still one).
_ARTICLE = re.compile(r"\b(?:from|into|table|update|join)\s+(?:the|a|an|this|that|these|"
                      r"those|my|your|our|their|its|his|her|some|all|any|each|every)\b",
                      re.IGNORECASE)
#: A statement of one object and English word (``TRUNCATE Genre``, ``FROM Employee SELECT
#: FirstName``, ``SUMMARIZE Employee``): one only quoted or heading its line, and not with an
#: article or a pronoun for its object (``'from the top'``, ``'Summarize it'``).
_ONE_OBJECT = re.compile(r"(?:truncate|summarize|from|table)\s+[\w.\"`\[\]]", re.IGNORECASE)
_ONE_ARTICLE = re.compile(r"\w+\s+(?:table\s+)?(?:the|a|an|it|this|that|these|those|my|your|"
                          r"our|their|its|some|all|any|each|every)\b", re.IGNORECASE)
#: ``COPY (SELECT ...) TO 'file'``: a copy of a query, whose object is the query.
_COPY_QUERY = re.compile(_LEAD + r"copy\s*\(", re.IGNORECASE)


def embedded_statement(text: str) -> tuple[int, str] | None:
    """The first statement ``text`` (another tool's argument: a python tool's code, a shell
    command) holds inside it, as its start and its text, or None. A candidate starts at a head
    word after a quote, a blank or ``(`` and runs to the quote that closes it, else to the end
    of its line; it is a statement when it has its object at its head
    (:data:`STATEMENT_WITH_OBJECT`) and a parser reads it (DuckDB's, PostgreSQL's, SQLite's
    own; a graph statement's shape), so prose (``print('select the best plot')``, ``delete
    the temp file``) stays prose."""
    for match in _EMBEDDED_HEAD.finditer(text[:_EMBEDDED_CHARS]):
        start = match.start()
        head = _WORD.match(text, start)
        if head is None or head.group().lower() not in _SHAPED_HEADS:
            continue  # no shape starts so (``show``, ``use``): nothing to read
        english = _mid_line(text, start)
        line_end = text.find("\n", start, start + _CANDIDATE_CHARS)
        cut = line_end < 0 and len(text) > start + _CANDIDATE_CHARS
        for candidate in _extents(text, start, line_end):
            if _statement(candidate, english, cut and len(candidate) >= _CANDIDATE_CHARS):
                return start, candidate
    return None


#: Characters of one candidate read (the search is linear: the twelfth re-probe's H5 took 88 s
#: for one 259 KB line, each of its candidates copied to the end of the line); a candidate cut
#: there that has a statement's shape is taken as one (it cannot be parsed: fail closed).
_CANDIDATE_CHARS = 2048


def _statement(candidate: str, english: bool, cut: bool = False) -> bool:
    """Whether one candidate is a statement (:func:`embedded_statement`); ``english``: it
    follows words on its line, where an article at its table is prose; ``cut``: it was cut
    at :data:`_CANDIDATE_CHARS`."""
    if _GRAPH_SHAPE.match(candidate):
        return True
    if candidate[:6].lower() == "select" and "from" not in candidate.lower():
        return False  # its shape needs a FROM (a cheap test before the rewrite)
    plain = " ".join((candidate if candidate.isascii() else
                      candidate.translate(_format_table())).split())
    shaped = STATEMENT_WITH_OBJECT.match(plain) or _COPY_QUERY.match(plain) or (
        not english and _ONE_OBJECT.match(plain) and not _ONE_ARTICLE.match(plain))
    return bool(shaped and not (english and _ARTICLE.search(plain))
                and (cut or parses_as_statement(plain) or _sqlite_parses(plain)))


#: The first words of the shapes :func:`_statement` reads (:data:`_GRAPH_SHAPE`,
#: :data:`STATEMENT_WITH_OBJECT`, ``COPY (``, one object): a candidate starts at its head word,
#: and one starting with another (``show``, ``use``) is no statement of these shapes.
_SHAPED_HEADS = frozenset({
    "delete", "insert", "update", "replace", "merge", "upsert", "create", "drop", "alter",
    "truncate", "call", "select", "with", "attach", "detach", "copy", "grant", "revoke",
    "comment", "pragma", "vacuum", "values", "from", "table", "optional", "match", "unwind",
    "load", "reindex", "install", "summarize", "export", "import"})
_WORD = re.compile(r"[A-Za-z]+")


@functools.cache
def _format_table() -> dict[int, None]:
    """The format characters (:data:`_INVISIBLE`) as a table that leaves them out: a
    translation, not a regular expression, per candidate (ten times faster)."""
    import sys

    return {c: None for c in range(sys.maxunicode + 1) if _INVISIBLE.match(chr(c))}


def _mid_line(text: str, start: int) -> bool:
    """Whether the candidate at ``start`` follows words on its line, unquoted: where prose is
    (``set up sqlite, then delete from the cache``) and where no shell or code runs a
    statement; one quoted or heading its line (a heredoc's) is read however English it is.
    Read over the 256 characters before it at most (a line of blanks longer than that is
    taken as heading its line: the cautious side)."""
    if start > 0 and text[start - 1] in "'\"`":
        return False
    window = text[max(0, start - 256):start]
    return bool(window[window.rfind("\n") + 1:].strip())


def _extents(text: str, start: int, line_end: int) -> list[str]:
    """The candidate statements at ``start`` (its line ending at ``line_end``, -1: past
    :data:`_CANDIDATE_CHARS`): to the unescaped quote that closes the one before it; else to
    each kind of quote first met on its line (a quote opened before a comment or a format
    character: ``'/* x */ DELETE FROM Genre'``), and to the end of the line."""
    line = text[start:start + _CANDIDATE_CHARS] if line_end < 0 else text[start:line_end]
    opened = text[start - 1] if start > 0 and text[start - 1] in "'\"`" else None
    out = []
    for quote in (opened,) if opened else ("'", '"', "`"):
        end = next((m.start() for m in re.finditer(re.escape(quote), line)
                    if m.start() == 0 or line[m.start() - 1] != "\\"), -1)
        if end >= 0:
            out.append(line[:end].replace(f"\\{quote}", quote))
    return out if opened and out else [*out, line]


@functools.lru_cache(maxsize=1024)
def _sqlite_parses(text: str) -> bool:
    """Whether SQLite's own parser reads ``text`` (``VACUUM INTO 'x'``, which DuckDB's and
    PostgreSQL's do not): compiled under ``EXPLAIN`` on an empty in-memory database with every
    action denied, so nothing runs; a syntax error is prose."""
    import sqlite3

    from ..sources.sqlite import explained

    conn = sqlite3.connect(":memory:")
    try:
        conn.set_authorizer(lambda *_: sqlite3.SQLITE_DENY)
        conn.execute(explained(text))
    except sqlite3.ProgrammingError:
        return True  # more than one statement: the first was read
    except sqlite3.Error as exc:
        message = str(exc).lower()
        return not any(w in message for w in ("syntax error", "incomplete input",
                                              "unrecognized token"))
    finally:
        conn.close()
    return True


def embedded_argument(value: object, key: str = "", depth: int = 0
                      ) -> tuple[str, int, str] | None:
    """The first argument of ``value`` (a call's arguments: an object, a list, JSON in text,
    to :data:`_LOOSE_DEPTH` levels) that is not itself a statement but holds one
    (:func:`embedded_statement`), as its key (``code``, ``args.steps[1]``), the statement's
    start in it and its text; None when none does. An argument that is a statement is judged
    as today (:func:`loose_queries`)."""
    if depth > _LOOSE_DEPTH:
        return None
    if isinstance(value, str):
        decoded = _decoded(value)
        if decoded is not None:
            return embedded_argument(decoded, key, depth + 1)
        if statement_text(value) or (STATEMENT.match(value) and parses_as_statement(value)):
            return None
        found = embedded_statement(value)
        return None if found is None else (key or "(arguments)", *found)
    items: list[tuple[str, object]] = []
    if isinstance(value, Mapping):
        items = [(f"{key}.{k}" if key else str(k), v) for k, v in value.items()]
    elif isinstance(value, list | tuple):
        items = [(f"{key}[{i}]", v) for i, v in enumerate(value)]
    for where, sub in items:
        found_in = embedded_argument(sub, where, depth + 1)
        if found_in is not None:
            return found_in
    return None
