"""What a routine of the database does when the server runs it, read with PostgreSQL's parsers.

Why a parse and not words: the server runs the database's own routines where no query names
them (an aggregate's state function, a type's default operator class comparison for an
``ORDER BY``, a range literal's bounds, an index expression the planner folds), and what
such a routine does past the read-only transaction was read off its body with regular
expressions. ``UPDATE ONLY t SET``, ``UPDATE t g SET``, ``DELETE/**/FROM`` and
``INSERT/**/INTO`` were no write to them, and ``PERFORM "h x"()`` called ``h`` and ``x``
(the forty-eighth re-probe's S3, S4). Here a ``LANGUAGE sql`` body is parsed with
PostgreSQL's SQL parser and a ``plpgsql`` one with PL/pgSQL's (libpg_query, through
``pglast``, as :mod:`..tasks.pgconfine` reads a confined task's functions), every SQL
statement and expression inside it again with the SQL parser: a write is a statement type,
a call a name as the server reads it, a handler of errors a block of the tree.

And why a judgement of the whole database (:func:`caught_writes`), not of each route: a write
a routine tries is refused by the read-only transaction, and counted, unless a handler
catches the refusal. A routine with such a handler that the server can run reaches every
object the server can run, through routes no list here follows (the forty-eighth re-probe's
S1: an aggregate's state function, an operator class's support function; the forty-ninth's
W1 to W4: a parameter's default, a view's ``FOR UPDATE``, a domain's ``CHECK``), so when a
database holds one, no count of write attempts on it can be established.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from .pgescape import CALLED_UNCHECKED, MAY_EXECUTE
from .pgguard import OWN_ROUTINES, ROUTINE_TEXTS, VOLATILE_ALLOWED, _loads, _nodes

__all__ = ["CATCHING_SQL", "DO_LANGUAGES_SQL", "Body", "caught_writes", "hidden_volatile", "read_body"]

#: SQL statement types a routine's body may run in a read-only transaction without changing
#: anything the rollback keeps: a query, and a setting (restored when the transaction ends).
_READS = ("SelectStmt", "VariableSetStmt", "VariableShowStmt")
#: PL/pgSQL statements that run a statement built at run time.
_DYNAMIC = {"PLpgSQL_stmt_dynexecute": "EXECUTE", "PLpgSQL_stmt_dynfors": "FOR ... EXECUTE"}
#: An assignment's target (``PLpgSQL_expr`` of parse mode 3 and over: ``n := expression``).
_ASSIGN = re.compile(r"^[^:=]*?(:=|=)", re.S)
#: The conditions whose handler outlives the timeout's cancel (``OTHERS`` does not catch it).
_CANCEL = frozenset({"query_canceled", "operator_intervention", "57014", "57000"})
#: The conditions whose handler catches the read-only transaction's refusal of a write
#: (``read_only_sql_transaction``, 25006, or its class) or PL/pgSQL's own in a non-volatile
#: routine (``feature_not_supported``, 0A000): a safe cast's ``WHEN invalid_text_representation``
#: catches neither.
_READ_ONLY_REFUSALS = frozenset({"others", "read_only_sql_transaction",
                                 "invalid_transaction_state", "feature_not_supported"})
#: Builtin functions that change what a read-only transaction keeps or is refused (a
#: sequence, a large object): a write, as a statement is.
_WRITING_CALLS = frozenset({"nextval", "setval", "lo_create", "lo_creat", "lo_unlink",
                            "lo_import", "lo_export", "lo_put", "lo_from_bytea", "lo_truncate"})
_BODY_WORD = re.compile(r"[A-Za-z_][\w$]*")
#: How deep ``DO`` blocks inside one another are read (past it: unread).
MAX_DO_DEPTH = 4
#: A reading and the ``DO`` blocks (language, code) it found, read next.
_Read = tuple["Body", list[tuple[str, str]]]


@dataclass(frozen=True)
class Body:
    """What running a routine does, as its parsed body says."""

    #: The first statement (or builtin) that changes data, labelled, or None.
    writes: str | None = None
    #: Why the body cannot be followed (a statement built at run time, another language, a
    #: body no parser here takes), or None.
    unread: str | None = None
    #: The body holds an exception handler of a refused write (:data:`_READ_ONLY_REFUSALS`):
    #: a write refused under it is no error of the query.
    catches: bool = False
    #: A handler of the cancel (the routine outlives the statement timeout's cancel).
    cancel: bool = False
    #: Every name the body calls or mentions, lower-cased (a quoted name whole).
    calls: frozenset[str] = frozenset()
    #: The body runs a statement built at run time (PL/pgSQL's ``EXECUTE``): a ``DO`` block,
    #: with a handler of its own, for all a reading knows.
    dynamic: bool = False


def read_body(lang: str, body: str, definition: str | None = None, depth: int = 0) -> Body:
    """What a routine in ``lang`` whose body is ``body`` (``prosrc``, with its parameters'
    defaults) does; ``definition``: its ``CREATE FUNCTION`` text (``pg_get_functiondef``),
    which PL/pgSQL's parser needs for its parameters' names. A ``DO`` block in it is read as
    a body too, :data:`MAX_DO_DEPTH` deep (its handler hid a refused ``DELETE``: the fiftieth
    re-probe's D1)."""
    words = frozenset(w.lower() for w in _BODY_WORD.findall(body))
    if lang in ("c", "internal"):  # a builtin's second name: its body is the C symbol
        return Body(calls=words)
    read, dos = _read_body(lang, body, definition, words)
    for do_lang, code in dos:
        inner = read_body(do_lang, code, None, depth + 1) if depth < MAX_DO_DEPTH else \
            Body(unread="DO blocks nested past the reading's depth")
        unread = do_lang not in ("sql", "plpgsql") or depth >= MAX_DO_DEPTH  # handling unread
        read = Body(writes=read.writes or inner.writes, unread=read.unread or inner.unread,
                    catches=read.catches or inner.catches or unread,
                    cancel=read.cancel or inner.cancel, calls=read.calls | inner.calls,
                    dynamic=read.dynamic or inner.dynamic)
    if read.writes is None and (named := sorted(words & _WRITING_CALLS)):
        # a parameter's DEFAULT, an assignment's target (``a[nextval('s')] := 1``): no
        # parse here reads them (the forty-ninth re-probe's W1, W2)
        return Body(writes=f"{named[0]}()", unread=read.unread, catches=read.catches,
                    cancel=read.cancel, calls=read.calls, dynamic=read.dynamic)
    return read


def _read_body(lang: str, body: str, definition: str | None, words: frozenset[str]) -> _Read:
    if lang not in ("sql", "plpgsql"):
        return Body(unread=f"LANGUAGE {lang}", calls=words), []
    read, dos = _parsed(lang, body, definition, words)
    if read.unread is None and "u&" in _COMMENT.sub(" ", body.lower()):
        # no word reading here (a routine's relations, :func:`.pgroutes.reading_routines`)
        # follows a Unicode-escaped name; the parse still reads the handlers (``-- u&`` in a
        # comment stopped the reading before it, and a handler went unseen: the
        # fifty-second re-probe's U1)
        read = replace(read, unread="a Unicode-escaped name")
    return read, dos


def _parsed(lang: str, body: str, definition: str | None, words: frozenset[str]) -> _Read:
    try:
        if lang == "sql":
            return _sql_body(body, words)
        if definition:
            return _plpgsql_body(definition, words)
        for returns in ("text", "void", "SETOF text"):  # what RETURN in the body takes
            try:
                return _plpgsql_body(_wrapped(body, returns), words)
            except Exception:
                if returns == "SETOF text":
                    raise
        raise AssertionError("unreachable")
    except Exception as exc:  # a parser failure: the words' reading, the cautious side
        why = f"a body PostgreSQL's parser here does not take ({' '.join(str(exc).split())[:120]})"
        return _lexical(body, words, why, lang), []


#: A comment (a nested block comment read as its outer one: the cautious side keeps more).
_COMMENT = re.compile(r"--[^\n]*|/\*.*?\*/", re.S)
#: Words of a statement that changes data, read where no parser takes the body.
_WRITE_WORDS = frozenset({"insert", "update", "delete", "merge", "truncate", "copy", "lock"})


def _lexical(body: str, words: frozenset[str], why: str, lang: str) -> Body:
    """A body no parser here takes, read on its words: PL/pgSQL's own parser refuses valid
    bodies pglast's does not take (a ``%ROWTYPE`` field's assignment, an array slice's), so
    such a body was unread, no catcher and a hidden routine, and an honest one was refused
    (the fiftieth re-probe's P1, O2). A handler, a write, a statement built at run time or a
    ``DO`` block, a handler of the cancel, named anywhere, is one here."""
    text = _COMMENT.sub(" ", body.lower())
    built = "execute" in words or "u&" in text or re.search(
        r"(?<![\w$])do\s+(?:e?'|\$|language)", text)
    # any EXCEPTION is a handler here (``EXCEPTION /* c */ WHEN OTHERS``: the fifty-second
    # re-probe's L1), the cautious side
    return Body(writes=next(iter(sorted(words & _WRITE_WORDS)), None),
                unread=why if built or lang != "plpgsql" else None,
                catches=lang == "plpgsql" and "exception" in words,
                cancel=bool(words & {"query_canceled", "operator_intervention"})
                or re.search(r"570(?:14|00)", text) is not None, calls=words,
                dynamic="execute" in words)


def _wrapped(body: str, returns: str) -> str:
    """A definition around a bare PL/pgSQL body (no parameter names: one that assigns to a
    parameter is unread, the cautious side)."""
    tag = "qe"
    while f"${tag}$" in body:
        tag += "x"
    return f"CREATE FUNCTION f() RETURNS {returns} LANGUAGE plpgsql AS ${tag}${body}${tag}$"


def _sql_body(body: str, words: frozenset[str]) -> _Read:
    from pglast import parser

    tree = _loads(parser.parse_sql_json(body))
    stmts = [s.get("stmt") or {} for s in (tree or {}).get("stmts") or []]
    writes, calls = _statements(stmts)
    return Body(writes=writes, calls=words | calls), _dos([tree])


def _dos(trees: list[Any]) -> list[tuple[str, str]]:
    """The ``DO`` blocks of ``trees``."""
    return [_do_block(node) for tree in trees for key, node in _nodes(tree) if key == "DoStmt"]


def _do_block(node: dict[str, Any]) -> tuple[str, str]:
    """A ``DoStmt``'s language (``plpgsql`` unless named) and code."""
    options = {str(o["DefElem"].get("defname")): o["DefElem"].get("arg")
               for o in node.get("args") or [] if isinstance(o, dict) and "DefElem" in o}
    def text(value: Any) -> str:
        return str(value.get("String", {}).get("sval", "")) if isinstance(value, dict) else ""
    return (text(options.get("language")).lower() or "plpgsql", text(options.get("as")))


def _statements(stmts: Iterable[dict[str, Any]]) -> tuple[str | None, frozenset[str]]:
    """The first write among SQL statement trees (a statement type, a data-changing node
    anywhere in one, a row lock, ``SELECT INTO``, a writing builtin), and every name called."""
    writes: str | None = None
    calls: set[str] = set()
    for stmt in stmts:
        kind = next(iter(stmt), "")
        if kind == "CreateFunctionStmt":  # BEGIN ATOMIC: its statements are the body
            inner = stmt[kind].get("sql_body") or []
            more = [s for part in inner for s in (part.get("List", {}).get("items", [])
                                                   if isinstance(part, dict) else [])]
            write, called = _statements(s for s in more if isinstance(s, dict))
            writes, calls = writes or write, calls | called
            continue
        if kind not in _READS and writes is None:
            writes = kind.removesuffix("Stmt").upper() or "a statement"
        for key, node in _nodes(stmt):
            if key in ("InsertStmt", "UpdateStmt", "DeleteStmt", "MergeStmt") and writes is None:
                writes = key.removesuffix("Stmt").upper()
            elif key == "SelectStmt" and (node.get("lockingClause") or node.get("intoClause")) \
                    and writes is None:
                writes = "a row lock" if node.get("lockingClause") else "SELECT INTO"
            elif key == "FuncCall":
                parts = [str(p.get("String", {}).get("sval", "")) for p in node.get("funcname", [])
                         if isinstance(p, dict)]
                if parts:
                    calls.add(parts[-1].lower())
                    if parts[-1].lower() in _WRITING_CALLS and writes is None:
                        writes = f"{parts[-1]}()"
            for field in ("sval", "relname"):
                if isinstance(node.get(field), str):
                    calls.add(node[field].lower())
    return writes, frozenset(calls)


def _plpgsql_body(definition: str, words: frozenset[str]) -> _Read:
    from pglast import parser

    tree = _loads(parser.parse_plpgsql_json(definition))
    writes: str | None = None
    unread: str | None = None
    catches = cancel = False
    calls: set[str] = set(words)
    trees: list[Any] = []
    for key, node in _nodes(tree):
        if key in _DYNAMIC or (key in ("PLpgSQL_stmt_open", "PLpgSQL_stmt_return_query")
                               and node.get("dynquery")):
            unread = unread or f"a statement built at run time ({_DYNAMIC.get(key, 'EXECUTE')})"
        elif key == "PLpgSQL_condition":
            condition = str(node.get("condname", "")).lower()
            cancel = cancel or condition in _CANCEL
            catches = catches or condition in _READ_ONLY_REFUSALS or condition[:2] in ("25", "0a")
        elif key == "PLpgSQL_expr":
            query, mode = str(node.get("query", "")), int(node.get("parseMode", 0))
            if mode >= 3 and (match := _ASSIGN.match(query)):
                query = query[match.end():]
            sql = query if mode == 0 else f"SELECT {query}"
            from pglast import parser as sql_parser

            inner = _loads(sql_parser.parse_sql_json(sql))
            trees.append(inner)
            write, called = _statements(s.get("stmt") or {} for s in (inner or {}).get("stmts") or [])
            writes, calls = writes or write, calls | called
    return Body(writes=writes, unread=unread, catches=catches, cancel=cancel,
                calls=frozenset(calls), dynamic=unread is not None), _dos(trees)


def hidden_volatile(routines: Iterable[tuple[Any, ...]], volatile: Iterable[str]) -> dict[str, str]:
    """The database's routines declared ``STABLE`` or ``IMMUTABLE`` (a volatile one is
    refused by its own declaration) that call a volatile builtin outside
    :data:`~.pgguard.VOLATILE_ALLOWED`, directly or through another such routine, by name, with
    the builtin: ``rf(text)``, a STABLE definer routine over ``pg_read_file``, gave the host's
    files, and ``lockit()`` took an advisory lock (the forty-first re-probe's O7, M3).
    ``routines``: :data:`~.pgguard.ROUTINES_SQL`'s rows (name, volatility, language, body and,
    for PL/pgSQL, its definition). A body that cannot be followed (:attr:`Body.unread`), that
    writes (a non-volatile routine's write is refused by PL/pgSQL itself, which the routine may
    catch: the forty-seventh re-probe's R1, the forty-eighth's S3) or that catches
    ``query_canceled`` (it outlives the timeout's cancel: the forty-seventh re-probe's Q7) is
    such a routine too (``?``). A ``LANGUAGE internal`` routine's body is the builtin's name."""
    rows = [(str(r[0]).lower(), str(r[1]), str(r[2]),
             read_body(str(r[2]), str(r[3] or ""), str(r[4]) if len(r) > 4 and r[4] else None))
            for r in routines]
    # and the database's own volatile routines (a STABLE routine over a VOLATILE definer one
    # over pg_read_file: the forty-second re-probe's Q6)
    bad = ({v.lower() for v in volatile} - VOLATILE_ALLOWED) | {n for n, v, _, _ in rows if v == "v"}
    found: dict[str, str] = {name: "?" for name, volatility, lang, body in rows
                             if volatility != "v" and lang != "c"
                             and (body.unread or body.writes or body.cancel)}
    while True:  # through the routines that call such a one
        more = {name: sorted(body.calls & (bad | set(found)))[0]
                for name, volatility, lang, body in rows
                if name not in found and volatility != "v" and lang != "c"
                and body.calls & (bad | set(found))}
        if not more:
            return found
        found.update(more)


#: Every routine of the database the server may run for the role (the ``EXECUTE`` privilege of
#: a role it is a member of, which ``SET LOCAL ROLE`` in a routine reaches without ``INHERIT``:
#: the fifty-fourth re-probe's N1; or a slot the server calls with no check of it:
#: :data:`~.pgescape.CALLED_UNCHECKED`), in a
#: language other than C: its signature, language, body and PL/pgSQL definition. A trigger's
#: routine is left out: it runs only for a write, which the read-only transaction refuses
#: before any trigger fires.
CATCHING_SQL = f"""
SELECT p.oid::pg_catalog.regprocedure::pg_catalog.text, l.lanname::pg_catalog.text,
       {ROUTINE_TEXTS}{OWN_ROUTINES}  AND l.lanname OPERATOR(pg_catalog.<>) 'c'
  AND p.prorettype OPERATOR(pg_catalog.<>) ALL
        (ARRAY['pg_catalog.trigger'::pg_catalog.regtype,
               'pg_catalog.event_trigger'::pg_catalog.regtype]::pg_catalog.oid[])
  AND ({MAY_EXECUTE}
       OR p.oid OPERATOR(pg_catalog.=) ANY (ARRAY{CALLED_UNCHECKED}))
ORDER BY 1
"""


#: The procedural languages the role may write a ``DO`` block in (``USAGE``, trusted).
DO_LANGUAGES_SQL = """
SELECT l.lanname::pg_catalog.text FROM pg_catalog.pg_language l
WHERE l.lanispl AND pg_catalog.has_language_privilege(l.oid, 'USAGE')
ORDER BY 1
"""


def caught_writes(rows: Iterable[tuple[Any, ...]], do_languages: Iterable[str] = ()) -> str:
    """Why no write attempt can be counted on the database of :data:`CATCHING_SQL`'s
    ``rows`` ("" when it can): one of its routines handles the refusal of a write (``WHEN
    OTHERS``, ``read_only_sql_transaction`` or its class, ``feature_not_supported``), or is
    in a language whose handling of errors no reading here follows. The server may run it
    for any query (an aggregate, a sort, a literal of a type), and under its handler any
    write the server refuses (a routine's, a parameter's default, a view's ``FOR UPDATE`` or
    ``nextval()``, a domain's ``CHECK``, a policy's) never reaches the query: a caught
    ``DELETE`` was 0 write attempts (the forty-eighth re-probe's S1, S3, S4; the
    forty-ninth's W1 to W4 found writes past every reading of the routines' bodies). Where the
    role may write ``DO`` blocks (``do_languages``: :data:`DO_LANGUAGES_SQL`'s), a routine
    that runs a statement built at run time is one too: ``EXECUTE 'DO $x$BEGIN DELETE ...;
    EXCEPTION WHEN OTHERS ...$x$'`` (the fifty-first re-probe's X1, X2)."""
    languages = sorted(str(x) for x in do_languages)
    for signature, lang, body, definition in rows:
        read = read_body(str(lang), str(body or ""), str(definition) if definition else None)
        if read.dynamic and languages:
            return (f"the database's routine {signature} runs statements built at run time, "
                    "which may be a DO block whose handler hides a refused write, and the "
                    f"role may write DO blocks (USAGE on LANGUAGE {', '.join(languages)}): "
                    "no count of write attempts on this datasource can be established "
                    f"(REVOKE USAGE ON LANGUAGE {languages[0]} FROM PUBLIC, or REVOKE "
                    "EXECUTE on the routine from the role)")
        if read.catches or (read.unread and lang not in ("sql", "plpgsql")):
            how = ("handles the refusal of a write (WHEN OTHERS, read_only_sql_transaction, "
                   "feature_not_supported)" if read.catches else
                   f"is in {read.unread}, whose handling of errors no reading here follows")
            return (f"the database's routine {signature} {how}: the server may run it for "
                    "any query (an aggregate, a sort, a literal of a type), and a write refused "
                    "under it is never seen, so no count of write attempts on this datasource "
                    "can be established (REVOKE EXECUTE on it from the role, move it out of "
                    "its database, or handle only the errors it expects)")
    return ""
