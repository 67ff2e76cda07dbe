"""What a Cypher text may do before it reaches the engine or a server, and where its writes are.

The ``ladybug`` engine refuses writes itself: its database is opened read-only
(:mod:`.source`). Why a guard at all, then: a read-only database still lets a statement reach
outside the graph (``EXPORT DATABASE`` writes files, ``LOAD FROM`` reads any file the process
can, ``INSTALL`` downloads an extension, ``ATTACH`` opens another database), and the engine's
refusal names no place. :func:`check` refuses those, and more than one statement;
:func:`first_write` finds the write the engine refused, so the reason says which clause at
which line and column.

A server (:mod:`.bolt`) may have no such engine: FalkorDB's Bolt listener runs every query
with its read-write command, whatever the session's access mode. :func:`check_server` is the
wall that holds there: every write, file, transaction and administration clause, every
procedure and namespaced function off an allow-list, a nesting deeper than the server's
parser can take in bounded time, and an expression the server would evaluate past its timeout
(ranges too large or walked inside one another, an accumulator doubled: :mod:`.bounds`),
refused before anything is sent; :func:`check_unbound` refuses, there too, what would bind a
value the bounds never see (a ``$`` parameter, a ``CYPHER`` prefix).

The scan is a tokenizer, not a parser: string literals (``'...'``, ``"..."``, backslash
escapes), backquoted names and comments (``//`` to the end of the line, ``/* ... */``) are
skipped; every other word is a clause keyword unless its place says it is a name: right after
a ``.`` (a property: ``p.set``) or a ``:`` (a label: ``(:Create)``), after ``AS`` (an alias),
right before a ``.`` (``create.name``), before ``:`` just after ``(``, ``{`` or ``,`` (a
variable with a label, a map key), or before what no clause keyword is ever followed by (the
end, ``,``, a closing bracket, ``=``, ``<``, ``>``: ``RETURN load``, ``(export)``). Nothing
else excuses a word: not an operator before it (``WITH * CREATE``), not a bracket after it
(``CREATE(``), not a brace (``CALL { ... }``). A name spelt like a write keyword in another
place (``WITH p AS set MATCH (set)-->(m)``) is refused with the writes: rename it.

Why one module of this size: every check reads the same tokens (:data:`_TOKEN`), and each
re-probe that found the guard reading a text otherwise than a server does (a comment's end, a
NUL) was mended where that reading is; split, each part would import the tokenizer's privates.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from ..errors import QueryFailed, QueryRefused, QuerySyntaxError
from .bounds import check_evaluation
from .regexes import check_regexes

#: Clauses that reach outside the graph: refused before execution, read-only database or not.
OUTSIDE = frozenset({"EXPORT", "IMPORT", "COPY", "LOAD", "INSTALL", "UNINSTALL", "ATTACH",
                     "USE", "BEGIN", "COMMIT", "ROLLBACK", "CHECKPOINT"})
#: ladybug's table functions over the host's files and disks, which ``LOAD FROM`` binds to
#: and ``CALL`` reaches unnamed by it (``CALL read_csv_serial('/etc/passwd') RETURN *``
#: reached the reader and crashed the worker: the forty-seventh re-probe's F2); any
#: ``read_`` or ``copy_`` function, an extension's too.
FILE_FUNCTIONS = frozenset({"file_info", "disk_info", "disk_size_info"})
FILE_FUNCTION_PREFIXES = ("read_", "copy_")
#: ladybug's procedures that run a Cypher text given as a string (``project_graph_cypher('G',
#: 'MATCH ... LOAD FROM ...')``: the guard never read it, the forty-seventh re-probe's F7) or
#: keep a projected graph in the connection for the next case.
TEXT_FUNCTIONS = frozenset({"project_graph_cypher", "project_graph", "drop_projected_graph",
                            "_cache_array_column_locally"})
#: Clauses that write to the graph or its schema: the read-only engine refuses them.
WRITES = frozenset({"CREATE", "MERGE", "SET", "DELETE", "REMOVE", "DROP", "ALTER", "DETACH"})
#: The words a Cypher query starts with (what a model's answer is recognised by).
QUERY_KEYWORDS: tuple[str, ...] = ("MATCH", "OPTIONAL", "WITH", "UNWIND", "RETURN", "CALL",
                                   "CREATE", "MERGE", "UNION")

_LINE_END = "\n\r\u0085\u2028\u2029\x0b\x0c"
_TOKEN = re.compile(rf"""
    (?P<comment>//[^{_LINE_END}]*|/\*.*?(?:\*/|\Z))
  | (?P<string>'(?:[^'\\]|\\.)*(?:'|\Z)|"(?:[^"\\]|\\.)*(?:"|\Z))
  | (?P<quoted>`(?:[^`]|``)*(?:`|\Z))
  | (?P<param>\$(?:\w+|`[^`]*`?)?)
  | (?P<number>0[xX][0-9a-fA-F]+|\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)
  | (?P<word>[^\W\d]\w*)
  | (?P<punct>[;.:(){{}}\[\]=,|*+\-/%^<>])
  | (?P<other>\S)
""", re.VERBOSE | re.DOTALL)


@dataclass(frozen=True)
class Token:
    text: str
    #: 1-based line (counted at ``\\n``) and column of its first character.
    line: int
    column: int
    #: comment, string, quoted, param, number, word, punct or other.
    kind: str

    def touches(self, other: Token) -> bool:
        """Whether ``other`` starts right where this token ends (no space, no comment)."""
        return other.line == self.line and other.column == self.column + len(self.text)


def tokens(query: str) -> list[Token]:
    """The tokens of ``query``: comments, literals and quoted names each one token of its own
    kind (an unterminated one runs to the end of the text: :func:`check_server` refuses
    it)."""
    out: list[Token] = []
    line_starts = [0] + [m.end() for m in re.finditer("\n", query)]
    line = 0
    for match in _TOKEN.finditer(query):
        start = match.start()
        while line + 1 < len(line_starts) and line_starts[line + 1] <= start:
            line += 1
        kind = match.lastgroup or "other"
        out.append(Token(match.group(), line + 1, start - line_starts[line] + 1, kind))
    return out


def _unterminated(tok: Token) -> bool:
    text = tok.text
    if tok.kind == "comment":
        return text.startswith("/*") and (len(text) < 4 or not text.endswith("*/"))
    if tok.kind in ("string", "quoted"):
        if len(text) < 2 or text[-1] != text[0]:
            return True
        body = text[1:-1]
        if tok.kind == "string":  # the closing quote itself escaped: 'a\'
            return (len(body) - len(body.rstrip("\\"))) % 2 == 1
        return False
    return False


def _code(toks: list[Token]) -> list[Token]:
    return [t for t in toks if t.kind != "comment"]


#: What may follow a name but never a clause keyword (every clause has a body).
_ENDS_A_NAME = frozenset({",", ")", "]", "}", ";", "=", "<", ">"})


#: Words after which an expression cannot have ended (so a following ``AS`` is no alias's).
_NOT_OPERANDS = frozenset({"WITH", "RETURN", "DISTINCT", "YIELD", "UNWIND", "AS", "WHERE",
                           "AND", "OR", "XOR", "NOT", "IN", "CALL", "MATCH", "OPTIONAL", "BY",
                           "CASE", "WHEN", "THEN", "ELSE", "ORDER", "SKIP", "LIMIT", "UNION"})


def _ends_operand(tok: Token) -> bool:
    if tok.kind == "word":
        return tok.text.upper() not in _NOT_OPERANDS
    return tok.kind in ("quoted", "param", "number", "string") or tok.text in (")", "]", "}")


def _is_name(code: list[Token], i: int) -> bool:
    """Whether the word ``code[i]`` stands where only a name can (see the module docstring)."""
    tok = code[i]
    before = code[i - 1] if i else None
    after = code[i + 1] if i + 1 < len(code) else None
    if before is not None and before.kind == "punct":
        if before.text == "." and before.touches(tok) and i >= 2 \
                and code[i - 2].kind in ("word", "quoted", "param", "punct") \
                and code[i - 2].text not in "(,;{[=<>+-*/%^|:":
            return True
        if before.text == ":":
            return True
    if before is not None and before.kind == "word" and before.text.upper() == "AS" \
            and i >= 2 and _ends_operand(code[i - 2]):
        return True  # an alias: AS after an expression (not WITH as SET ...: as a name)
    if after is None or (after.kind == "punct" and after.text in _ENDS_A_NAME):
        return True  # no clause ends there: RETURN load, (export), [r], {a: copy}
    if after.text == "." and tok.touches(after):
        return True
    return after.text == ":" and before is not None and before.text in ("(", "{", ",")


def clause_words(query: str | list[Token]) -> list[Token]:
    """The words of ``query`` that stand where a clause keyword can."""
    code = _code(tokens(query) if isinstance(query, str) else query)
    return [t for i, t in enumerate(code) if t.kind == "word" and not _is_name(code, i)]


def check_text(query: str) -> None:
    """A query holding a lone surrogate (a predictions file's ``"\\ud800"``) is no text an
    engine can be sent: its error, never the engine binding's ``TypeError`` (an internal error
    of the kind: the twelfth re-probe's M1)."""
    try:
        query.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise QueryFailed(f"the query is not valid text: {exc.reason} at character "
                          f"{exc.start + 1}") from None


def _positions(code: list[Token]) -> dict[int, int]:
    """Each token's index in ``code``, by identity (``list.index`` per clause word compares
    tokens from the start: quadratic in a text of 13,000 ``CALL``)."""
    return {id(t): i for i, t in enumerate(code)}


def where(tok: Token) -> str:
    return f"line {tok.line}, column {tok.column}"


def check(query: str) -> None:
    """Refuse what must never run (QueryRefused, its reason naming the clause and where it
    is); an empty text is refused as no query (QuerySyntaxError)."""
    toks = tokens(query)
    code = _code(toks)
    if not code:
        raise QuerySyntaxError("an empty statement: no Cypher query to execute")
    # the last token that is no ';' (one pass: a search after each ';' was quadratic, 50 s
    # of pytest's CPU for a text of 65,000 of them, the twelfth re-probe's H2)
    last = max((i for i, t in enumerate(code) if t.text != ";"), default=-1)
    for i, tok in enumerate(code):
        if tok.text == ";" and i < last:
            raise QueryRefused(f"more than one statement (';' at {where(tok)}): one read-only "
                               "query is executed")
    at = _positions(code)
    for tok in clause_words(code):
        word = tok.text.upper()
        if word in OUTSIDE:
            raise QueryRefused(f"{word} at {where(tok)} reaches outside the graph (files, "
                               "extensions, other databases, transactions): only read-only "
                               "queries are executed")
        if word == "CALL":  # CALL threads=2: a setting of the connection, not a query
            j = at[id(tok)]
            nxt = code[j + 1:j + 3]
            if len(nxt) == 2 and nxt[0].kind == "word" and nxt[1].text == "=":
                raise QueryRefused(f"CALL {nxt[0].text}= at {where(tok)} changes a setting "
                                   "of the connection: only read-only queries are executed")
    for i, tok in enumerate(code):  # the seventh re-probe: the host's temporary path
        if tok.kind not in ("word", "quoted") or i + 1 >= len(code) or code[i + 1].text != "(":
            continue
        name = tok.text.strip("`").lower()
        if name == "current_setting":
            raise QueryRefused(f"current_setting() at {where(tok)} reads the connection's "
                               "settings (the host's file paths): only the graph is read")
        if name in TEXT_FUNCTIONS:
            raise QueryRefused(f"{tok.text.strip('`')}() at {where(tok)} runs a query given as "
                               "text, which no guard reads, or keeps a graph in the connection: "
                               "only the query as written is executed")
        if name in FILE_FUNCTIONS or name.startswith(FILE_FUNCTION_PREFIXES):
            raise QueryRefused(f"{tok.text.strip('`')}() at {where(tok)} reads the host's files "
                               "(the table function LOAD FROM binds to): only the graph is read")


#: Clauses a server runs that no read needs: privileges, server and database administration,
#: ``FOREACH`` (its body can only write), GQL's ``INSERT`` and ``NODETACH``, ``SHOW`` (users,
#: privileges, settings), ``TRANSACTIONS`` (``CALL { ... } IN TRANSACTIONS`` commits batches;
#: ``TERMINATE TRANSACTIONS``).
SERVER_ADMIN = frozenset({"GRANT", "DENY", "REVOKE", "TERMINATE", "RENAME", "START", "STOP",
                          "ENABLE", "DEALLOCATE", "REALLOCATE", "FOREACH", "INSERT",
                          "NODETACH", "SHOW", "TRANSACTIONS", "IMPERSONATE", "EXECUTE"})
#: Every word that refuses a query sent to a server.
SERVER_REFUSED = WRITES | OUTSIDE | SERVER_ADMIN
#: The procedures a query sent to a server may ``CALL``: they read the schema or an index and
#: nothing else. Any other is refused before it is sent (``apoc.load.*`` reads files and URLs,
#: ``dbms.*`` administers the server, ``db.idx.fulltext.createNodeIndex`` builds an index, a
#: plugin's procedure may write).
READ_PROCEDURES = frozenset({
    "db.labels", "db.relationshiptypes", "db.propertykeys", "db.schema.visualization",
    "db.schema.nodetypeproperties", "db.schema.reltypeproperties", "db.indexes",
    "db.constraints", "db.info", "db.ping", "dbms.components",
    "db.index.fulltext.querynodes", "db.index.fulltext.queryrelationships",
    "db.index.vector.querynodes", "db.index.vector.queryrelationships",
    "db.idx.fulltext.querynodes", "db.idx.fulltext.queryrelationships",
    "db.idx.vector.querynodes", "db.idx.vector.queryrelationships",
    "apoc.meta.schema", "apoc.meta.data", "apoc.meta.stats"})
#: The namespaces a function called in a query sent to a server may have: values, dates,
#: text, collections. Another (``apoc.cypher.runFirstColumn`` runs a query given as a string,
#: which the guard cannot read; ``apoc.load``, ``apoc.util.sleep``...) is refused.
READ_FUNCTION_NAMESPACES = frozenset({
    "date", "datetime", "localdatetime", "localtime", "time", "duration", "point", "vector",
    "vector.similarity", "db", "string", "list", "apoc.coll", "apoc.text", "apoc.map",
    "apoc.math", "apoc.number", "apoc.convert", "apoc.date", "apoc.temporal", "apoc.agg",
    "apoc.label", "apoc.meta", "apoc.meta.cypher", "apoc.node", "apoc.rel", "apoc.any",
    "apoc.hashing", "apoc.bitwise", "apoc.scoring", "apoc.data"})

#: How deep a query sent to a server may nest (brackets, ``CASE``, ``NOT``, a unary sign):
#: FalkorDB 4.16's parser takes time exponential in it, before the query's timeout starts
#: (measured: 20 ms at 12 levels, 0.36 s at 16, 3.9 s at 20; a 40-level list of 88 bytes
#: had not finished after 3 minutes), so a deeper query is refused before it is sent.
MAX_DEPTH = 12
#: The parse work a query sent to a server may cost, ``2 ** depth`` summed over its tokens:
#: many siblings just under :data:`MAX_DEPTH` cost as much as one deeper (about 0.2 s here).
MAX_NESTING_WORK = 2 ** 16


def check_server(query: str, *, costs: bool = True, linear: bool = False) -> None:
    """:func:`check`, then everything else that must never be sent to a server
    (:mod:`.bolt`): an unterminated string, name or comment (QuerySyntaxError), a word of
    :data:`SERVER_REFUSED` where a clause can stand, a procedure
    off :data:`READ_PROCEDURES`, a namespaced function off :data:`READ_FUNCTION_NAMESPACES`,
    a nesting beyond :data:`MAX_DEPTH` or :data:`MAX_NESTING_WORK`, ranges beyond
    :data:`.bounds.MAX_RANGE` (each, or walked inside one another) or
    :data:`.bounds.MAX_RANGE_WORK` (all), growing calls past :data:`.bounds.MAX_GROWTH`
    together, a ``reduce()`` whose accumulator doubles or grows, and a ``WITH`` step that
    doubles a value. Without ``costs``, the ranges and the growth (:func:`check_costs`) are
    left to a rehearsal that measures them (:mod:`.rehearsal`); the nesting is still refused
    here, at once, rather than after a timeout on the rehearsal's parser. With ``linear``
    (an untrusted query no rehearsal measures) a regular expression must be of the linear
    class (:func:`.regexes.linear`), not merely weighed."""
    check(query)
    toks = tokens(query)
    for tok in toks:  # where the server's reading of the text could differ from ours
        if _unterminated(tok):
            what = {"comment": "comment", "string": "string", "quoted": "quoted name"}[tok.kind]
            raise QuerySyntaxError(f"an unterminated {what} at {where(tok)}")
    _check_dotted_comments(toks)
    code = _code(toks)
    words = clause_words(code)
    write = next((t for t in words if t.text.upper() in WRITES), None)
    if write is not None:  # the write first, as the reason a reader looks for
        raise QueryRefused(f"{write.text.upper()} at {where(write)} writes: only read-only "
                           "queries are sent to the server")
    _check_read_alike(query)
    at = _positions(code)
    for tok in words:
        word = tok.text.upper()
        if word in SERVER_REFUSED:
            i = at[id(tok)]
            if word == "TRANSACTIONS" and i and code[i - 1].text.upper() in ("IN", "CONCURRENT"):
                word = "IN TRANSACTIONS"
            raise QueryRefused(f"{word} at {where(tok)} is not a read: only read-only queries "
                               "are sent to the server")
    for tok, name in _procedure_calls(code, words, at):
        if name.lower() not in READ_PROCEDURES:
            raise QueryRefused(f"CALL {name} at {where(tok)}: only the read-only "
                               "procedures (schema, indexes) are called")
    _check_functions(code)
    _check_nesting(code)
    if costs:
        check_evaluation(code)
        check_regexes(code, linear_only=linear)
        _check_size(code)


def check_unbound(query: str) -> None:
    """Refuse a ``CYPHER`` prefix and a ``$`` parameter in a query sent to a server: no suite
    query is ever sent parameters, so a ``$name`` is unbound (a server error) or bound by a
    ``CYPHER name=<value>`` prefix in the text itself, a value FalkorDB takes but the cost
    bounds (:mod:`.bounds`) never follow: ``CYPHER a=[0, ..., 799] RETURN any(x IN $a WHERE
    any(y IN $a WHERE any(z IN $a WHERE ...)))`` kept a server busy two minutes past its
    timeout, and later golds timed out (the twenty-fifth re-probe's H1; issue 58). Apart from
    :func:`check_server`, which also judges an agent's text (:mod:`.reads`), where a parameter
    is an honest read's."""
    code = _code(tokens(query))
    for tok in clause_words(code):
        if tok.text.upper() == "CYPHER":
            raise QueryRefused(f"CYPHER at {where(tok)}: a query prefix (parameters, options) "
                               "is not sent; no suite query is sent parameters, so write "
                               "the query without it")
    param = next((t for t in code if t.kind == "param"), None)
    if param is not None:
        raise QueryRefused(f"the parameter {param.text[:40]} at {where(param)}: no suite "
                           "query is sent parameters, so write its value into the query")


#: Control characters no honest query holds (all of C0 but tab and the line ends).
_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1f\x7f]")


def _check_read_alike(query: str) -> None:
    """Refuse what FalkorDB reads otherwise than the tokenizer: a control character (it reads a
    query only up to a NUL: the twenty-fourth re-probe's H1-H3, a crash and wrong predictions
    passing), and a ``//`` comment not ended by ``\\n``, ``\\r\\n`` or the end (it reads one on
    to ``\\n``, the tokenizer stops at U+2028 too, so a ``WHERE`` or a quote after one was code
    to the guard only: the twenty-third's H1-H3, a crash and a hidden ``CREATE``; issue 58)."""
    control = _CONTROL.search(query)
    if control is not None:
        raise QueryRefused(f"control character U+{ord(control.group()):04X} at character "
                           f"{control.start() + 1}: FalkorDB reads a query only up to a NUL, "
                           "so no query holding a control character is sent")
    for match in _TOKEN.finditer(query):
        end = match.end()
        if match.group().startswith("//") and match.lastgroup == "comment" \
                and query[end:end + 1] not in ("", "\n") and query[end:end + 2] != "\r\n":
            start = match.start()
            raise QueryRefused(
                f"the // comment at line {query.count(chr(10), 0, start) + 1}, column "
                f"{start - query.rfind(chr(10), 0, start)} ends at U+{ord(query[end]):04X}, not "
                "at a line feed: servers differ on where it ends (end it with a line feed)")


def _check_dotted_comments(toks: list[Token]) -> None:
    """Refuse a comment that touches a dot (``db./**/labels()``, ``string//c`` then
    ``.join(...)``): FalkorDB's parser aborts the whole server on it (the seventeenth
    re-probe's K1: one prediction ended every later case), and no honest query puts one
    there."""
    for k, tok in enumerate(toks):
        if tok.kind == "comment" and any(
                0 <= j < len(toks) and toks[j].kind == "punct" and toks[j].text == "."
                for j in (k - 1, k + 1)):
            raise QueryRefused(f"a comment at {where(tok)} touches a dot: a name or property "
                               "with a comment inside it is not sent (a server's parser "
                               "aborts on it)")


def check_costs(query: str, *, linear: bool = False) -> None:
    """What :func:`check_server` without ``costs`` left out: what a server would build or
    walk in one expression past its timeout and memory cap (:mod:`.bounds`); ``linear`` as
    there."""
    code = _code(tokens(query))
    check_evaluation(code)
    check_regexes(code, linear_only=linear)
    _check_size(code)


def _dotted(code: list[Token], start: int) -> str | None:
    """The dotted name that starts at ``code[start]`` (None: no name there, as after ``CALL``
    of a subquery, ``CALL {`` or ``CALL (x) {``)."""
    parts: list[str] = []
    i = start
    while i < len(code) and code[i].kind in ("word", "quoted"):
        parts.append(code[i].text.strip("`"))
        if i + 1 < len(code) and code[i + 1].text == ".":
            i += 2
            continue
        break
    return ".".join(parts) if parts else None


def _check_functions(code: list[Token]) -> None:
    """Refuse a call of a namespaced function off :data:`READ_FUNCTION_NAMESPACES`: a dotted
    name followed by ``(`` that no ``CALL`` introduces (those are procedures, checked
    before)."""
    i = 0
    while i < len(code):
        tok = code[i]
        if tok.kind == "quoted" and i + 1 < len(code) and code[i + 1].text == "(" \
                and not (i and code[i - 1].text == "."):
            # `range`(1, 400000000): the bounds read functions by their plain names
            raise QueryRefused(f"{tok.text}() at {where(tok)}: a function named in backquotes "
                               "is not sent (the guard bounds functions by their plain names)")
        starts = tok.kind in ("word", "quoted") and i + 1 < len(code) and code[i + 1].text == "."
        if starts and not (i and code[i - 1].text == "."):
            parts, j = [tok.text.strip("`")], i + 1
            while j + 1 < len(code) and code[j].text == "." \
                    and code[j + 1].kind in ("word", "quoted"):
                parts.append(code[j + 1].text.strip("`"))
                j += 2
            called = j < len(code) and code[j].text == "("
            after_call = i and code[i - 1].kind == "word" and code[i - 1].text.upper() == "CALL"
            quoted = next((code[k] for k in range(i, j, 2) if code[k].kind == "quoted"), None)
            if called and not after_call and quoted is not None:
                # `string`.`matchRegEx`(...): the guard's checks and bounds key on plain
                # names, and FalkorDB takes either spelling (the 27th re-probe's H1, H2)
                raise QueryRefused(f"{'.'.join(parts)}() at {where(quoted)}: a function named "
                                   "with a backquoted part is not sent (the guard bounds "
                                   "functions by their plain names)")
            namespace = ".".join(parts[:-1]).lower()
            if called and not after_call and namespace not in READ_FUNCTION_NAMESPACES:
                raise QueryRefused(f"{'.'.join(parts)}() at {where(tok)}: only functions of "
                                   "values, dates, text and collections are called")
            i = j
            continue
        i += 1


_OPEN, _CLOSE = "([{", ")]}"
#: Tokens after which ``+`` or ``-`` is a binary operator (an operand ends there).
_OPERAND_END = frozenset({"word", "quoted", "param", "number", "string"})
#: Words after which a sign is unary, although they are words.
_EXPRESSION_WORDS = frozenset({"RETURN", "WITH", "WHERE", "AND", "OR", "XOR", "NOT", "IN",
                               "CASE", "WHEN", "THEN", "ELSE", "UNWIND", "BY", "SKIP",
                               "LIMIT", "IS", "CONTAINS", "STARTS", "ENDS", "YIELD"})


def _prefix(code: list[Token], i: int) -> bool:
    """Whether ``code[i]`` is a prefix operator (``NOT`` but in ``IS NOT``; a unary sign)."""
    tok, before = code[i], code[i - 1] if i else None
    if tok.kind == "word" and tok.text.upper() == "NOT":
        return before is None or before.text.upper() != "IS"
    if tok.text not in "+-" or tok.kind != "punct":
        return False
    if before is None:
        return True
    if before.kind == "word":
        return before.text.upper() in _EXPRESSION_WORDS
    return before.kind not in _OPERAND_END and before.text not in _CLOSE


#: Words that end the operand of a prefix operator: the boolean operators (``NOT`` binds
#: tighter than ``AND``) and the words that end an expression. Not ``IN``, a comparison or an
#: arithmetic operator: ``NOT a = (NOT a = (...))`` nests the parser two levels a bracket.
_PREFIX_ENDS = frozenset({"AND", "OR", "XOR", "WHERE", "RETURN", "WITH", "WHEN", "THEN",
                          "ELSE", "AS", "ORDER", "BY", "SKIP", "LIMIT", "UNWIND", "MATCH",
                          "YIELD", "UNION", "OPTIONAL", "CALL"})


def _ends_prefix(code: list[Token], i: int) -> bool:
    """Whether ``code[i]`` ends the operand of a prefix operator at its own depth (a
    separator or a keyword of :data:`_PREFIX_ENDS`; conservatively nothing else)."""
    tok = code[i]
    if tok.kind == "punct":
        return tok.text in ",;|"
    return tok.kind == "word" and tok.text.upper() in _PREFIX_ENDS and not _is_name(code, i)


def _check_nesting(code: list[Token]) -> None:
    """Refuse a query nested beyond :data:`MAX_DEPTH` (brackets, ``CASE ... END``, prefix
    operators) or whose summed ``2 ** depth`` passes :data:`MAX_NESTING_WORK`. The count
    errs high: a closing bracket closes no ``CASE``, an ``END`` closes only a ``CASE``."""
    opened: list[str] = []  # the brackets and CASEs not closed yet
    prefixes: list[int] = []  # the depth each pending prefix operator was met at
    work = 0
    for i, tok in enumerate(code):
        keyword = tok.kind == "word" and not _is_name(code, i)
        word = tok.text.upper() if keyword else ""
        closes = (tok.kind == "punct" and tok.text in _CLOSE and opened and opened[-1] != "CASE") \
            or (word == "END" and opened and opened[-1] == "CASE")
        if closes:
            opened.pop()
            prefixes = [d for d in prefixes if d <= len(opened)]
        if _ends_prefix(code, i):
            prefixes = [d for d in prefixes if d != len(opened)]
        if _prefix(code, i) and (tok.kind == "punct" or keyword):
            prefixes.append(len(opened))
        opens = (tok.kind == "punct" and tok.text in _OPEN) or word == "CASE"
        level = len(opened) + len(prefixes) + (1 if opens else 0)
        work += 2 ** min(level, 40)
        if level > MAX_DEPTH or work > MAX_NESTING_WORK:
            why = (f"nests {level} levels deep" if level > MAX_DEPTH
                   else "nests too many deep expressions")
            raise QueryRefused(f"the query {why} at {where(tok)} (brackets, CASE, NOT, signs; "
                               f"at most {MAX_DEPTH}): the server's parser takes time "
                               "exponential in the nesting, beyond any timeout")
        if opens:
            opened.append("CASE" if word == "CASE" else tok.text)


#: The most clauses (:data:`_SIZED_CLAUSES`) a query sent to a server may have, the most node
#: patterns its ``MATCH`` clauses may hold, and the most operators (``AND``, ``OR``,
#: ``XOR``, ``NOT``, comparison and arithmetic signs, a pattern's arrows) it may use:
#: FalkorDB plans them all before its first row, without checking its timeout, even when no
#: row follows. Measured on a 3 s server (the forty-sixth re-probe's C6, C7):
#: ``MATCH (n0:Nope), ..., (n2999:Nope)`` held it some 14 s (4,000 patterns 39 s; 500 took
#: 0.24 s), 3,000 ``MATCH`` clauses 11.8 s, 2,000 ``CALL { WITH m RETURN ... }`` past the
#: timeout, and a ``WHERE`` of 6,000 comparisons joined by ``AND`` ran 5.2 s (3,000: 1.3 s).
#: An honest query has a few dozen of each.
MAX_CLAUSES = 200
MAX_NODE_PATTERNS = 200
MAX_OPERATORS = 2_000
#: The clause words :data:`MAX_CLAUSES` counts (``OPTIONAL MATCH`` is one, its ``MATCH``).
_SIZED_CLAUSES = frozenset({"MATCH", "WITH", "UNWIND", "RETURN", "CALL", "WHERE", "ORDER",
                            "SKIP", "LIMIT", "UNION", "YIELD"})
_OPERATOR_WORDS = frozenset({"AND", "OR", "XOR", "NOT"})
_OPERATOR_SIGNS = frozenset("+-*/%^=<>")


def _check_size(code: list[Token]) -> None:
    """Refuse a query past :data:`MAX_CLAUSES`, :data:`MAX_NODE_PATTERNS` or
    :data:`MAX_OPERATORS`: the cost bounds weigh the rows and values a query makes, but
    FalkorDB's work on a long text comes before any row (its timeout unchecked), so thousands
    of patterns over an empty label were sent as cheap."""
    words = [t for t in clause_words(code) if t.text.upper() in _SIZED_CLAUSES
             or t.text.upper() in _OPERATOR_WORDS]
    clauses = [t for t in words if t.text.upper() in _SIZED_CLAUSES]
    operators = len(words) - len(clauses) + sum(
        1 for t in code if t.kind == "punct" and t.text in _OPERATOR_SIGNS)
    patterns = _node_patterns(code, {id(t) for t in clauses})
    why = "FalkorDB plans them all before its first row, without checking its timeout"
    if len(clauses) > MAX_CLAUSES:
        raise QueryRefused(f"the query has {len(clauses):,} clauses (MATCH, WITH, WHERE, "
                           f"CALL...), more than {MAX_CLAUSES}: {why}")
    if patterns > MAX_NODE_PATTERNS:
        raise QueryRefused(f"the query's MATCH clauses hold {patterns:,} node patterns, more "
                           f"than {MAX_NODE_PATTERNS}: {why}")
    if operators > MAX_OPERATORS:
        raise QueryRefused(f"the query has {operators:,} operators (AND, OR, NOT, comparisons, "
                           f"arithmetic, arrows), more than {MAX_OPERATORS:,}: {why}")
    _check_paths(code, any(t.text.upper() == "UNWIND" for t in clauses))


#: The most relationships the query's path patterns may chain in all (anywhere: a ``MATCH``,
#: a pattern comprehension, a ``WHERE``; a ``UNION``'s branches apart, each its own plan), a
#: variable-length one weighing :data:`VARIABLE_LENGTH_WEIGHT` and each relationship type past
#: a relationship's first one more, and the most variable-length relationships a query may
#: hold (one fewer when it also unwinds a list). FalkorDB's work grows with each hop's fan-out
#: before its timeout is checked: ``MATCH (a)-[]-(x0)-...-[]-(x11)`` (12 untyped hops) held a
#: 3 s server past 40 s (10 hops 2.1 s, 8 hops 0.12 s), 999 hops in a pattern comprehension
#: 10 s; four ``MATCH`` clauses of one variable-length relationship each, sorted, 13 s, and
#: a chain of two sorted after ``UNWIND range(1,300)`` 6.5 s (the forty-sixth re-probe's
#: second round, E1 to E6). The same hops split into patterns that share a node are the same
#: traversal: two chains of 6 joined by a comma or a second ``MATCH`` held it past 43 s, 600
#: one-hop pattern comprehensions as columns 32 s, and four fixed hops after two
#: variable-length ones, sorted, 6.6 s (the forty-seventh re-probe's F1, F5, F4). A hop with
#: alternative types is traversed type by type: six ``-[:ACTED_IN|DIRECTED]-`` hops held it
#: past 23 s (five 1.5 s, four 0.25 s), one hop of 10,840 types 3 s (its second round's G1).
#: An honest query chains a few hops and one or two such ranges.
MAX_HOPS = 8
VARIABLE_LENGTH_WEIGHT = 3
MAX_VARIABLE_LENGTH = 2


def _check_paths(code: list[Token], unwinds: bool) -> None:
    """Refuse a query a branch of whose path patterns weighs past :data:`MAX_HOPS` (each
    relationship 1, a variable-length one :data:`VARIABLE_LENGTH_WEIGHT`, each type past its
    first 1 more), or holds past :data:`MAX_VARIABLE_LENGTH` variable-length relationships
    (past one less when it has an ``UNWIND``, which multiplies the rows they make)."""
    hops, variable, weight = max(_paths(branch) for branch in _branches(code))
    why = "FalkorDB expands them before it checks its timeout"
    if weight > MAX_HOPS:
        raise QueryRefused(
            f"the query's path patterns chain {hops:,} relationships in all, weighing "
            f"{weight:,} (a variable-length one {VARIABLE_LENGTH_WEIGHT}, each alternative "
            f"type 1 more), more than {MAX_HOPS}: {why}")
    most = MAX_VARIABLE_LENGTH - (1 if unwinds else 0)
    if variable > most:
        raise QueryRefused(f"the query has {variable} variable-length relationships"
                           f"{' and an UNWIND' if unwinds else ''}, more than {most}: {why}")


def _branches(code: list[Token]) -> list[list[Token]]:
    """The query's ``UNION`` branches at its own level (each one plan, its hops apart; a
    union inside a subquery is one branch with the rest)."""
    out: list[list[Token]] = [[]]
    depth = 0
    for tok in code:
        if tok.kind == "punct" and tok.text in _OPEN:
            depth += 1
        elif tok.kind == "punct" and tok.text in _CLOSE:
            depth -= 1
        elif tok.kind == "word" and depth == 0 and tok.text.upper() == "UNION":
            out.append([])
            continue
        out[-1].append(tok)
    return out


def _paths(code: list[Token]) -> tuple[int, int, int]:
    """How many relationships the path patterns of ``code`` chain (``-``, ``-[...]-``
    between two node patterns, anywhere), how many of them are of variable length (``*`` in
    the brackets), and what they weigh (:func:`_check_paths`)."""
    hops = variable = weight = i = 0
    while i < len(code):
        tok = code[i]
        hop = _hop(code, i + 1) if tok.kind == "punct" and tok.text == ")" else None
        if hop is not None:
            end, starred, types = hop
            hops, variable = hops + 1, variable + starred
            weight += (VARIABLE_LENGTH_WEIGHT if starred else 1) + max(types - 1, 0)
            i = end  # the next node's parenthesis
            continue
        i += 1
    return hops, variable, weight


def _hop(code: list[Token], j: int) -> tuple[int, bool, int] | None:
    """After a node pattern's ``)`` at ``j``: a relationship (``-``, ``<-``, ``-[...]-``,
    ``->``) to the next node pattern, as (the index of its ``(``, whether it has a ``*``, how
    many types it names: 1 and each ``|`` in its brackets)."""
    def at(k: int, text: str) -> bool:
        return k < len(code) and code[k].kind == "punct" and code[k].text == text

    j += at(j, "<")
    if not at(j, "-"):
        return None
    j, starred, types = j + 1, False, 1
    if at(j, "["):
        level = 0
        for k in range(j, len(code)):
            level += at(k, "[") - at(k, "]")
            starred = starred or at(k, "*")
            types += level == 1 and at(k, "|")
            if level == 0:
                break
        else:
            return None
        j = k + 1
    if not at(j, "-"):
        return None
    j += 1 + at(j + 1, ">")
    return (j, starred, types) if at(j, "(") else None


def _node_patterns(code: list[Token], clauses: set[int]) -> int:
    """How many node patterns (``(`` at a ``MATCH`` clause's own level) the ``MATCH``
    clauses hold; ``clauses``: the ids of the clause words, each of which ends a ``MATCH``
    at its level or above."""
    count, depth = 0, 0
    level: int | None = None  # the depth of the MATCH clause being read
    for tok in code:
        if id(tok) in clauses:
            if tok.text.upper() == "MATCH":
                level = depth
            elif level is not None and depth <= level:
                level = None
        elif tok.kind == "punct" and tok.text in _OPEN:
            count += depth == level and tok.text == "("
            depth += 1
        elif tok.kind == "punct" and tok.text in _CLOSE:
            depth -= 1
            if level is not None and depth < level:
                level = None
    return count


def first_write(query: str) -> Token | None:
    """The first clause keyword that writes (:data:`WRITES`), for the engine's refusal."""
    return next((t for t in clause_words(query) if t.text.upper() in WRITES), None)


#: A procedure named as building or removing something (``create_fts_index``,
#: ``drop_vector_index``, ``db.idx.fulltext.createNodeIndex``): its last name part starts
#: with one of these words, followed by ``_``, a capital or nothing.
_BUILDING = re.compile(r"(?i:create|drop|alter|delete|remove|set|load|install|uninstall|"
                       r"import|attach|detach|clear|rebuild|build)(?:_|[A-Z]|$)")


def first_building_call(query: str) -> tuple[Token, str] | None:
    """The first ``CALL`` of a procedure named as building or removing something, with the
    name: an agent's attempt at an index the engine failed before it could refuse it (an
    extension not loaded) is still a write attempt, as its refusal would have been."""
    code = _code(tokens(query))
    return next(((tok, name) for tok, name in _procedure_calls(code, clause_words(code),
                                                             _positions(code))
                 if _BUILDING.match(name.rsplit(".", 1)[-1])), None)


def _procedure_calls(code: list[Token], words: list[Token], at: dict[int, int]
                     ) -> Iterator[tuple[Token, str]]:
    """Each ``CALL`` of a named procedure among the clause ``words``, with its dotted name
    (``CALL {`` of a subquery names none): the one walk the server check and the write
    count read."""
    for tok in words:
        if tok.text.upper() == "CALL":
            name = _dotted(code, at[id(tok)] + 1)
            if name is not None:
                yield tok, name


def final_order_by(query: str) -> bool:
    """Whether the query's result is ordered: an ``ORDER BY`` after its last ``RETURN`` at
    the top level (one inside ``WITH`` or a subquery orders an intermediate result only)."""
    depth, last_return, ordered = 0, False, False
    code = _code(tokens(query))
    for i, tok in enumerate(code):
        if tok.text in "({[" and tok.kind == "punct":
            depth += 1
        elif tok.text in ")}]" and tok.kind == "punct":
            depth = max(0, depth - 1)
        elif depth == 0 and tok.kind == "word":
            word = tok.text.upper()
            if word in ("RETURN", "UNION"):
                last_return, ordered = word == "RETURN", False
            elif word == "WITH":
                last_return, ordered = False, False
            elif word == "ORDER" and last_return and i + 1 < len(code) \
                    and code[i + 1].text.upper() == "BY":
                ordered = True
    return ordered
