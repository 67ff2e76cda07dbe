"""What a Cypher text may do before it reaches the engine, and where its writes are.

The engine refuses writes itself: a ``ladybug`` database is opened read-only
(:mod:`.source`), so ``CREATE``, ``MERGE``, ``SET``, ``DELETE``, ``DETACH DELETE``, ``DROP``,
``ALTER``, ``COPY ... FROM`` and ``CREATE MACRO`` fail with "Cannot execute write operations in
a read-only database". Why a guard at all, then: a read-only database still lets a statement
reach outside the graph (``EXPORT DATABASE`` writes files, ``LOAD FROM`` reads any file the
process can, ``INSTALL`` downloads an extension, ``ATTACH`` opens another database), and the
engine's refusal names no place. The guard refuses those before execution, refuses more than
one statement, and :func:`first_write` finds the write the engine refused, so the reason says
which clause at which line and column.

A server (:mod:`.bolt`) gets no such engine everywhere: :func:`check_server` refuses every
write before anything is sent, with the stricter reading that a clause may start after ``{``
and ``|`` (``CALL { CREATE ... }``, ``FOREACH``), and refuses procedures outside an allow-list.

The scan is lexical, not a parser: string literals, backquoted names and comments are skipped,
and a word is a clause keyword unless it follows a dot, a bracket, a comma, an operator or a
word that starts an expression (``AS``, ``RETURN``, ``WHERE``, ...), or comes before ``:`` or,
with no space, ``(`` (a property, an alias, a variable, a map key, a function).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import QueryRefused, QuerySyntaxError

#: Clauses that reach outside the graph: refused before execution, read-only database or not.
OUTSIDE = frozenset({"EXPORT", "IMPORT", "COPY", "LOAD", "INSTALL", "UNINSTALL", "ATTACH",
                     "USE", "BEGIN", "COMMIT", "ROLLBACK", "CHECKPOINT"})
#: Clauses that write to the graph or its schema: the read-only engine refuses them.
WRITES = frozenset({"CREATE", "MERGE", "SET", "DELETE", "REMOVE", "DROP", "ALTER", "DETACH"})
#: The words a Cypher query starts with (what a model's answer is recognised by).
QUERY_KEYWORDS: tuple[str, ...] = ("MATCH", "OPTIONAL", "WITH", "UNWIND", "RETURN", "CALL",
                                   "CREATE", "MERGE", "UNION")

_TOKEN = re.compile(r"""
    (?P<comment>//[^\n]*|/\*.*?(?:\*/|\Z))
  | (?P<string>'(?:[^'\\]|\\.)*(?:'|\Z)|"(?:[^"\\]|\\.)*(?:"|\Z))
  | (?P<quoted>`[^`]*(?:`|\Z))
  | (?P<word>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<punct>[;.:(){}\[\]=])
  | (?P<other>\S)
""", re.VERBOSE | re.DOTALL)


#: What a word after which is an expression (a variable, an alias), never a clause: a
#: property's dot, an opening bracket, a comma, an operator, an expression's keyword.
_EXPRESSION = frozenset({".", "(", "[", "{", ",", "=", "<", ">", "+", "-", "*", "/", "%", "^",
                         "|", "AS", "RETURN", "WITH", "WHERE", "AND", "OR", "XOR", "NOT", "IN",
                         "BY", "DISTINCT", "UNWIND", "CASE", "WHEN", "THEN", "ELSE", "IS",
                         "CONTAINS", "STARTS", "ENDS"})


@dataclass(frozen=True)
class Token:
    text: str
    #: 1-based line and column of its first character.
    line: int
    column: int
    kind: str


def tokens(query: str) -> list[Token]:
    """The words and punctuation of ``query``, comments, literals and quoted names kept as
    single tokens of their own kind."""
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


#: :data:`_EXPRESSION` for a query sent to a server: a clause may start after ``{`` (``CALL {
#: ... }``, ``EXISTS { ... }``) and after ``|`` (``FOREACH``), and no engine refuses a write
#: the guard missed there.
_SERVER_EXPRESSION = _EXPRESSION - {"{", "|"}


def _clause_words(toks: list[Token], expression: frozenset[str] = _EXPRESSION) -> list[Token]:
    """The words that stand where a clause keyword does (see the module docstring)."""
    code = [t for t in toks if t.kind != "comment"]
    out = []
    for i, tok in enumerate(code):
        if tok.kind != "word":
            continue
        before = code[i - 1].text.upper() if i else ""
        after = code[i + 1] if i + 1 < len(code) else None
        if before in expression or (after is not None and (after.text == ":" or (
                after.text == "(" and after.line == tok.line
                and after.column == tok.column + len(tok.text)))):
            continue
        out.append(tok)
    return out


def where(tok: Token) -> str:
    return f"line {tok.line}, column {tok.column}"


def check(query: str) -> None:
    """Refuse what must never run (QueryRefused, its reason naming the clause and where it
    is); an empty text is refused as no query (QuerySyntaxError)."""
    toks = tokens(query)
    code = [t for t in toks if t.kind != "comment"]
    if not code:
        raise QuerySyntaxError("an empty statement: no Cypher query to execute")
    for i, tok in enumerate(code):
        if tok.text == ";" and any(t.text != ";" for t in code[i + 1:]):
            raise QueryRefused(f"more than one statement (';' at {where(tok)}): one read-only "
                               "query is executed")
    words = _clause_words(toks)
    for tok in words:
        word = tok.text.upper()
        if word in OUTSIDE:
            raise QueryRefused(f"{word} at {where(tok)} reaches outside the graph (files, "
                               "extensions, other databases, transactions): only read-only "
                               "queries are executed")
        if word == "CALL":  # CALL threads=2: a setting of the connection, not a query
            nxt = code[code.index(tok) + 1:code.index(tok) + 3]
            if len(nxt) == 2 and nxt[0].kind == "word" and nxt[1].text == "=":
                raise QueryRefused(f"CALL {nxt[0].text}= at {where(tok)} changes a setting "
                                   "of the connection: only read-only queries are executed")


#: Clauses a server runs that no read needs: privileges, server and database administration,
#: ``FOREACH`` (its body can only write).
SERVER_ADMIN = frozenset({"GRANT", "DENY", "REVOKE", "TERMINATE", "RENAME", "START", "STOP",
                          "ENABLE", "DEALLOCATE", "REALLOCATE", "FOREACH"})
#: The procedures a query sent to a server may ``CALL``: they read the schema or an index and
#: nothing else. Any other is refused before it is sent (``apoc.load.*`` reads files and URLs,
#: ``dbms.*`` administers the server, a plugin's procedure may write).
READ_PROCEDURES = frozenset({
    "db.labels", "db.relationshiptypes", "db.propertykeys", "db.schema.visualization",
    "db.schema.nodetypeproperties", "db.schema.reltypeproperties", "db.indexes",
    "db.constraints", "db.info", "db.ping", "dbms.components",
    "db.index.fulltext.querynodes", "db.index.fulltext.queryrelationships",
    "db.index.vector.querynodes", "db.index.vector.queryrelationships",
    "apoc.meta.schema", "apoc.meta.data", "apoc.meta.stats"})


def check_server(query: str) -> None:
    """:func:`check`, then everything else that must never be sent to a server
    (:mod:`.bolt`): a write clause (:data:`WRITES`), :data:`SERVER_ADMIN`, ``... IN
    TRANSACTIONS`` (batches committed on their own) and a procedure not on
    :data:`READ_PROCEDURES`. Lexical, as :func:`check`: the server's read mode is a second
    layer, not one every Bolt server has."""
    check(query)
    toks = tokens(query)
    words = _clause_words(toks, _SERVER_EXPRESSION)
    write = next((t for t in words if t.text.upper() in WRITES), None)
    if write is not None:
        raise QueryRefused(f"{write.text.upper()} at {where(write)} writes: only read-only "
                           "queries are sent to the server")
    code = [t for t in toks if t.kind != "comment"]
    for i, tok in enumerate(code):
        if tok.kind == "word" and tok.text.upper() == "TRANSACTIONS" and i and \
                code[i - 1].text.upper() in ("IN", "CONCURRENT"):
            raise QueryRefused(f"IN TRANSACTIONS at {where(tok)} commits batches: only "
                               "read-only queries are sent to the server")
    for tok in words:
        word = tok.text.upper()
        if word in SERVER_ADMIN:
            raise QueryRefused(f"{word} at {where(tok)} is not a read: only read-only "
                               "queries are sent to the server")
        if word == "CALL":
            name = _procedure(code, code.index(tok) + 1)
            if name is not None and name.lower() not in READ_PROCEDURES:
                raise QueryRefused(f"CALL {name} at {where(tok)}: only the read-only "
                                   "procedures (schema, indexes) are called")


def _procedure(code: list[Token], start: int) -> str | None:
    """The dotted name after ``CALL`` (None: a subquery, ``CALL {`` or ``CALL (x) {``)."""
    parts: list[str] = []
    i = start
    while i < len(code) and code[i].kind in ("word", "quoted"):
        parts.append(code[i].text.strip("`"))
        if i + 1 < len(code) and code[i + 1].text == ".":
            i += 2
            continue
        break
    return ".".join(parts) if parts else None


def first_write(query: str) -> Token | None:
    """The first clause keyword that writes (:data:`WRITES`), for the engine's refusal."""
    return next((t for t in _clause_words(tokens(query)) if t.text.upper() in WRITES), None)


def final_order_by(query: str) -> bool:
    """Whether the query's result is ordered: an ``ORDER BY`` after its last ``RETURN`` at
    the top level (one inside ``WITH`` or a subquery orders an intermediate result only)."""
    depth, last_return, ordered = 0, False, False
    code = [t for t in tokens(query) if t.kind != "comment"]
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
