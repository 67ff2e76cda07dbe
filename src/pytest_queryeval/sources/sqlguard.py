"""Refuse any predicted SQL statement that is not a single read-only query.

This is the first of two layers: the statement is parsed (sqlglot) and refused *before* it
reaches the data source; the connection itself is read-only as well (SQLite ``mode=ro``,
PostgreSQL read-only transactions that are always rolled back). The parse-based layer gives a
clear "refused: ..." reason (or "cannot parse: syntax error at ..." for a text that does not
start like any SQL statement: prose, a misspelled keyword) and also stops what a read-only
connection would let through
(``pg_terminate_backend``, ``SELECT ... INTO``, data-modifying CTEs on engines without
read-only transactions). A PostgreSQL statement is then parsed again by PostgreSQL's own
parser (:mod:`.pgguard`), which reads escapes such as ``U&"\0064blink_exec"`` as the server
does.
"""

from __future__ import annotations

import re
from typing import Any

from ..errors import (
    FormRefused,
    QueryRefused,
    QuerySyntaxError,
    ReadRefused,
    TableComputed,
    TableComputedRead,
)
from .sqlfunctions import (
    FORBIDDEN_FUNCTIONS,
    READER_AGGREGATES,
    SQL_TEXT_FUNCTIONS,
    TABLE_READERS,
    format_character,
    plain_name,
    reads_a_file,
)
from .sqltokens import (
    PATH_TABLES,
    check_called,
    check_path_view,
    check_setting,
    check_statement_start,
    check_table_name,
    check_tokens,
    sql_tokens,
    stronger,
)

__all__ = ["FORBIDDEN_FUNCTIONS", "check_read_only", "function_name", "query_led", "reads_a_file",
           "sql_tokens", "sqlglot_dialect"]

#: sqlglot dialect names for SQLAlchemy backend names that differ (the rest are passed as-is
#: when sqlglot knows them).
_DIALECTS = {
    "postgresql": "postgres",
    "mssql": "tsql",
    "mariadb": "mysql",
    "sqlite": "sqlite",
    "databricks": "databricks",
}

#: Statement node types (sqlglot class names) that never belong in a read-only query, anywhere
#: in the tree (``WITH d AS (DELETE ... RETURNING *) SELECT ...`` hides a DELETE in a CTE).
_FORBIDDEN_NODES = (
    "Insert", "Update", "Delete", "Merge", "Create", "Drop", "Alter", "AlterColumn",
    "TruncateTable", "Command", "Pragma", "Attach", "Detach", "Copy", "Set", "Transaction",
    "Commit", "Rollback", "Grant", "Revoke", "Analyze", "LoadData", "Use", "Cache", "Uncache",
    "Refresh", "Into", "Lock", "Kill", "Comment", "Describe", "Summarize",
)


#: A text that starts like a query: comments, blanks and parentheses, then SELECT, WITH or
#: VALUES as a whole word (anything else, an invisible character included, does not).
_QUERY_LED = re.compile(r"(?:[ \t\r\n]+|--[^\n]*(?:\n|$)|/\*.*?\*/|\()*(?:SELECT|WITH|VALUES)\b",
                        re.IGNORECASE | re.DOTALL | re.ASCII)


def query_led(sql: str) -> bool:
    """Whether ``sql`` starts like a query: a source whose engine refuses every other action
    by itself executes such a text before, or without, the guard's parse."""
    return isinstance(sql, str) and _QUERY_LED.match(sql) is not None


def sqlglot_dialect(backend: str | None) -> str | None:
    """The sqlglot dialect for a source's backend name (None: sqlglot's generic SQL)."""
    if not backend:
        return None
    name = _DIALECTS.get(backend, backend)
    try:
        from sqlglot.dialects.dialect import Dialect

        Dialect.get_or_raise(name)
    except Exception:
        return None
    return name


#: Statements up to this many characters are parsed in the pytest process (milliseconds);
#: longer ones in a sandbox worker (:mod:`pytest_queryeval._isolation.sandbox`) killed after
#: :data:`GUARD_TIMEOUT` seconds: sqlglot's parse is superlinear on some shapes (a 200 KB
#: ``SELECT 1+1+...`` took 8 s, 1 MB 36 s) and runs in one call that no timer can stop.
GUARD_INLINE_CHARS = 4096
#: Hard wall-clock deadline of the guard's parse of one long statement (seconds).
GUARD_TIMEOUT = 10.0
#: Address space the guard's worker may use beyond its start-up size.
GUARD_MAX_MEMORY = 512 * 1024 * 1024
#: Long statements the worker passed recently: the kind and then the source check the same
#: text, and a second parse would cost the same again.
_PASSED: dict[tuple[str | None, str], tuple[str, ...]] = {}
_PASSED_SIZE = 8


#: Dialects whose comments are only comments (MySQL runs a ``/*! ... */`` one): there, a
#: comment after the last semicolon (sqlglot's ``Semicolon``) is no second statement, and an
#: honest ``SELECT * FROM Genre; -- ok`` was refused as two (the thirty-seventh re-probe's L1).
_PLAIN_COMMENTS = frozenset({"duckdb", "sqlite", "postgres"})


def check_read_only(sql: str, dialect: str | None = None) -> tuple[str, ...]:
    """Raise :class:`QueryRefused` unless ``sql`` is exactly one read-only query; return the
    functions it calls as PostgreSQL resolves their names (``postgres`` only, else ``()``),
    for the source to ask the server which are volatile.

    A statement sqlglot cannot parse is checked on its tokens instead: it may still be a
    query in the engine's own dialect, and then the engine reports its own syntax error.
    A statement longer than :data:`GUARD_INLINE_CHARS` is checked in a worker process under
    a hard deadline (:data:`GUARD_TIMEOUT`); past it, it is refused unexecuted.
    """
    if not isinstance(sql, str):  # a YAML value of another type: the parse names it
        return _check_read_only(sql, dialect)  # type: ignore[unreachable]
    key = (dialect, sql)
    if len(sql) <= GUARD_INLINE_CHARS:
        _verdict(key)
        return _check_engine_grammar(sql, dialect)
    if key in _PASSED:
        return _PASSED[key]
    from .._isolation.sandbox import SandboxCrashed, SandboxMemoryError, SandboxTimeout, shared_sandbox

    box = shared_sandbox("sqlguard", max_memory=GUARD_MAX_MEMORY, preload=(__name__, "sqlglot"))
    try:
        called = box.call(_check_read_only, sql, dialect, timeout=GUARD_TIMEOUT,
                          max_reply=1 << 20)
    except SandboxTimeout:
        raise QueryRefused(f"the guard could not parse this {len(sql):,}-character statement "
                           f"within {GUARD_TIMEOUT:g} s; an unchecked statement is never "
                           "executed") from None
    except (SandboxMemoryError, SandboxCrashed):
        raise QueryRefused(f"the guard's parse of this {len(sql):,}-character statement went "
                           f"over its memory ceiling ({GUARD_MAX_MEMORY:,} bytes); an "
                           "unchecked statement is never executed") from None
    _PASSED[key] = called
    while len(_PASSED) > _PASSED_SIZE:
        del _PASSED[next(iter(_PASSED))]
    return called


#: sqlglot's verdicts on short statements by (dialect, text): the kind checks a prediction
#: and the source checks it again before executing it, and a suite repeats texts (the same
#: gold in several cases, the same wrong prediction): each distinct text is parsed once per
#: process. A refusal is kept as its exception's class and message and raised afresh. Only
#: the parse's verdict is kept: PostgreSQL's own parse (:mod:`.pgguard`, C-fast) depends on
#: what is installed and runs each time.
_VERDICTS: dict[tuple[str | None, str], tuple[type[Exception], str] | None] = {}
#: Entries kept (each text at most GUARD_INLINE_CHARS characters: at most ~32 MB in all).
_VERDICTS_SIZE = 4096


def _verdict(key: tuple[str | None, str]) -> None:
    """:func:`_check_sqlglot` of a short statement, once per distinct (dialect, text)."""
    if key in _VERDICTS:
        hit = _VERDICTS[key]
    else:
        hit = None
        try:
            _check_sqlglot(key[1], key[0])
        except (QueryRefused, QuerySyntaxError) as e:
            hit = (type(e), str(e))
        if len(_VERDICTS) >= _VERDICTS_SIZE:
            del _VERDICTS[next(iter(_VERDICTS))]
        _VERDICTS[key] = hit
    if hit is not None:
        raise hit[0](hit[1])


def _check_read_only(sql: str, dialect: str | None) -> tuple[str, ...]:
    """:func:`check_read_only`'s parse and checks (in the pytest process or the worker); a
    PostgreSQL statement is then parsed again as the server reads it (:mod:`.pgguard`)."""
    _check_sqlglot(sql, dialect)
    return _check_engine_grammar(sql, dialect)


def _check_engine_grammar(sql: str, dialect: str | None) -> tuple[str, ...]:
    """PostgreSQL only: the statement parsed as the server reads it; ``()`` elsewhere."""
    if dialect != "postgres":
        return ()
    from .pgguard import check_postgres

    return check_postgres(sql, FORBIDDEN_FUNCTIONS)


def _check_sqlglot(sql: str, dialect: str | None) -> None:
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import ParseError, TokenError

    if not isinstance(sql, str):
        raise QueryRefused(f"expected an SQL string, got {type(sql).__name__}")
    if not sql.strip().strip(";").strip():
        raise QueryRefused("empty statement")
    try:
        parsed = sqlglot.parse(sql, read=dialect)
    except (ParseError, TokenError, ValueError, RecursionError):
        check_tokens(sql, dialect)
        return
    statements = [s for s in parsed if s is not None and not (
        isinstance(s, exp.Semicolon) and dialect in _PLAIN_COMMENTS)]
    if not statements:
        raise QueryRefused("no statement (only comments)")
    if len(statements) > 1:
        _check_statements(statements, sql, dialect)  # what one holds is refused for itself
        raise FormRefused(
            f"{len(statements)} statements ({', '.join(_label(s) for s in statements)}); "
            "only one query is executed"
        )
    tree = statements[0]
    if isinstance(tree, _read_trees()):
        _check_query(tree, dialect)  # a SUMMARIZE's own refusal comes after what it holds
        return
    check_statement_start(sql, dialect)
    _check_inside(tree, sql, dialect)
    raise FormRefused(f"{_label(tree)} is not a read-only query")


def _read_trees() -> tuple[type, ...]:
    """The trees :func:`_check_query` reads: a query, ``VALUES``, and DuckDB's ``SUMMARIZE``,
    which runs the query it summarizes (and is then refused as a read no count can see)."""
    from sqlglot import exp

    summarize = getattr(exp, "Summarize", None)
    return (exp.Query, exp.Values, *((summarize,) if summarize is not None else ()))


def _check_statements(statements: list[Any], sql: str, dialect: str | None) -> None:
    """What each statement of a text of several holds is refused for itself (a write or a
    file's read first, a read no count can see after): DuckDB runs ``SELECT 1; SUMMARIZE
    SELECT * FROM read_text('/etc/hostname')`` as two, the second reading the file (issue 58,
    the twenty-eighth re-probe's H3)."""
    read: ReadRefused | None = None
    for statement in statements:
        try:
            if isinstance(statement, _read_trees()):
                _check_query(statement, dialect)
            else:
                _check_inside(statement, sql, dialect)
        except ReadRefused as e:
            read = stronger(read, e)
    if read is not None:
        raise read


def _check_inside(statement: Any, sql: str, dialect: str | None) -> None:
    """Refuse what a statement that is no query holds (it is refused for its form next): its
    functions, and in a statement sqlglot keeps as text (``EXPLAIN ANALYZE ...``, which DuckDB
    runs), every name called in its tokens, read as the token check reads them. ``EXPLAIN
    ANALYZE SELECT * FROM query('... Tr' || 'ack')`` was a refused read counted as none while
    DuckDB ran the inner query (the twenty-eighth re-probe's H3)."""
    from sqlglot import exp

    if isinstance(statement, exp.Command):
        _check_command(statement, dialect)
        return
    read: ReadRefused | None = None
    for node in statement.walk():
        if isinstance(node, exp.Func):
            read = stronger(read, _check_function(node, dialect))
    if read is not None:
        raise read


#: What may come between ``EXPLAIN`` and the statement it explains (and, with ``ANALYZE``,
#: runs).
_EXPLAIN_OPTIONS = re.compile(r"\s*(?:(?:ANALYZE|ANALYSE|VERBOSE)\b\s*|\([^()]*\)\s*)*",
                              re.IGNORECASE)


def _check_command(command: Any, dialect: str | None) -> None:
    """Refuse what a statement sqlglot keeps as text holds (``EXPLAIN ANALYZE ...``, which
    DuckDB runs): the text after its first word, its options aside, parsed and checked as a
    statement once (no deeper: an ``EXPLAIN EXPLAIN ...`` is read as text), or, unparsed,
    every name called in its tokens."""
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import ParseError, TokenError

    rest = command.expression
    text = str(rest.this) if isinstance(rest, exp.Literal) else ""
    inner = text[_EXPLAIN_OPTIONS.match(text).end():]  # type: ignore[union-attr]
    if not inner.strip():
        return
    try:
        statements = [s for s in sqlglot.parse(inner, read=dialect) if s is not None]
    except (ParseError, TokenError, ValueError, RecursionError):
        statements = []
    if not statements or any(isinstance(s, exp.Command) for s in statements):
        try:
            tokens = sql_tokens(inner, dialect)
        except QuerySyntaxError:
            return  # no engine runs what no tokenizer reads
        check_called(tokens, dialect)
        return
    _check_statements(statements, inner, dialect)



def _check_query(tree: Any, dialect: str | None) -> None:
    """Refuse what one query holds: a write inside it, a function with effects, one that runs
    SQL given as text or reads a file, a table function reading a table by name, a name with
    a format character. A read it refuses (a ``SUMMARIZE``, a table function) is raised after
    the whole tree is read: ``SUMMARIZE SELECT * FROM read_text(...)`` was refused as a read,
    counted as none, before its file reader was seen (the twenty-eighth re-probe's H3)."""
    from sqlglot import exp

    summarize = getattr(exp, "Summarize", None)
    forbidden = tuple(t for t in (getattr(exp, n, None) for n in _FORBIDDEN_NODES) if t)
    read: ReadRefused | None = None
    for node in tree.walk():
        if summarize is not None and isinstance(node, summarize):
            read = stronger(read, ReadRefused(
                "SUMMARIZE reads a table past the account of the tables read, which no count "
                "can see" if node is tree else f"{_label(node)} inside a query"))
        elif isinstance(node, exp.Describe) and node is not tree:
            read = stronger(read, _describe_inside(node))
        elif isinstance(node, forbidden):
            raise QueryRefused(f"{_label(node)} inside a query")
        elif isinstance(node, exp.Func):
            read = stronger(read, _check_function(node, dialect))
        elif isinstance(node, exp.Table):
            check_path_view(plain_name(node.name), dialect)
            if dialect in PATH_TABLES:
                check_table_name([p.name for p in node.parts
                                   if isinstance(p, exp.Identifier)])
        elif isinstance(node, exp.Identifier) and not node.quoted \
                and format_character(node.name):
            raise QueryRefused(f"the name {node.name!r} holds an invisible format character, "
                               "which an engine reads as a blank or as part of the name: not "
                               "the name the guard reads")
    if read is not None:
        raise read


def _describe_inside(node: Any) -> ReadRefused | None:
    """A ``DESCRIBE`` inside a query: of one table by its name (DuckDB's ``SELECT column_name
    FROM (DESCRIBE Genre)``) a read of that table's schema, run and counted as the table's
    read, as ``FROM (SHOW Genre)`` is; it was refused as a statement inside a query and
    counted a write attempt of an honest agent (the thirty-third re-probe's M2). Of anything
    else (a query, a function) a read not run: what it holds is still checked."""
    from sqlglot import exp

    target = node.this
    if isinstance(target, exp.Table) and isinstance(target.this, exp.Identifier) \
            and not node.args.get("style") and not node.args.get("kind"):
        return None
    return ReadRefused("DESCRIBE of anything but a table by its name inside a query: a read "
                       "not run")


def _check_function(node: Any, dialect: str | None) -> ReadRefused | None:
    """Refuse one call (raised), or return the read refusal it gets (raised by the caller
    once the rest is read). Its name is read as DuckDB reads it (:func:`function_name`); a
    name holding a format character that no list names is refused all the same (fail
    closed: ``checkpoint\u200b()`` ran a checkpoint, the twenty-eighth re-probe's H2)."""
    raw = _raw_name(node)
    fname = plain_name(raw)
    if fname in FORBIDDEN_FUNCTIONS:
        raise QueryRefused(f"function {fname}() has side effects")
    if fname in SQL_TEXT_FUNCTIONS.get(dialect or "", frozenset()):
        refused = TableComputed if _computed_argument(node) else QueryRefused
        raise refused(f"function {fname}() runs SQL or reads a table named at run time, which "
                      "no guard or count can see")
    if reads_a_file(fname, dialect):
        raise QueryRefused(f"function {fname}() reads a file or URL (the database's own too, "
                           "which no count of the tables read can see)")
    check_path_view(fname, dialect)
    check_setting(fname, _literal_argument(node), dialect)
    if fname in TABLE_READERS.get(dialect or "", frozenset()) and not _an_aggregate(node, fname):
        read = TableComputedRead if _computed_argument(node) else ReadRefused
        return read(f"table function {fname}() reads the table named by its argument, which "
                    "no count of the tables read can see")
    if format_character(raw):
        raise QueryRefused(f"function {fname}() is called by a name holding an invisible "
                           "format character, which an engine reads as a blank: not the name "
                           "the guard reads")
    return None


def _literal_argument(node: Any) -> str | None:
    """The text of a call's only argument when it is a plain string literal, else None."""
    from sqlglot import exp

    args = [a for a in (node.args.get("this"), *(node.args.get("expressions") or []))
            if isinstance(a, exp.Expression)]
    if len(args) == 1 and isinstance(args[0], exp.Literal) and args[0].is_string:
        return str(args[0].this)
    return None


#: The clauses of a query whose calls are expressions (a column's aggregate), not tables.
_EXPRESSION_CLAUSES = frozenset({"expressions", "where", "having", "qualify", "order", "group"})


def _an_aggregate(node: Any, fname: str) -> bool:
    """Whether a table reader's call is its name's aggregate (``histogram(Name)`` in a select
    list, which reads what the query names): only a name that has one, and only where the
    nearest query holds the call in an expression clause. Anywhere else it is the table
    function, whatever wraps it: refused only under ``exp.Table``, ``FROM LATERAL
    pragma_storage_info('Track')`` and ``JOIN LATERAL histogram_values(Track, Name)`` (under
    ``exp.Lateral``) ran and read the table (the twenty-ninth re-probe's H2)."""
    from sqlglot import exp

    if fname not in READER_AGGREGATES:
        return False
    child, parent = node, node.parent
    while parent is not None and not isinstance(parent, exp.Query):
        child, parent = parent, parent.parent
    return parent is not None and child.arg_key in _EXPRESSION_CLAUSES


def _computed_argument(node: Any) -> bool:
    """Whether a call's first argument, the table (or SQL text) it reads, is computed at run
    time (``'Tr' || 'ack'``, ``chr(84) || 'rack'``): neither a string literal nor a bare name,
    so no text spells the table (:class:`~..errors.TableComputed`)."""
    from sqlglot import exp

    args = list(node.expressions) if isinstance(node, exp.Anonymous) else \
        [a for a in (node.this,) if isinstance(a, exp.Expression)]
    if not args:
        return False
    first = args[0]
    return not ((isinstance(first, exp.Literal) and first.is_string)
                or isinstance(first, exp.Column | exp.Identifier))


def _raw_name(node: Any) -> str:
    """A call's name as sqlglot keeps it (an unknown function's own spelling, a known one's
    SQL name)."""
    from sqlglot import exp

    return str(node.name if isinstance(node, exp.Anonymous) else node.sql_name())


def function_name(node: Any) -> str:
    """A function call's name as the guard reads it (an unknown function's own spelling, a
    known one's SQL name), as DuckDB reads it (:func:`~.sqlfunctions.plain_name`: format
    characters left out), lower-cased: the one reading of it the agents' judge shares."""
    return plain_name(_raw_name(node))


def _label(node: object) -> str:
    """A short statement label for messages: ``DELETE``, ``DROP``, ``VACUUM``, ``SELECT INTO``."""
    from sqlglot import exp

    if isinstance(node, exp.Command):
        return str(node.this).upper()
    if isinstance(node, exp.Into):
        return "SELECT INTO"
    if isinstance(node, exp.Lock):
        return "FOR UPDATE/SHARE lock"
    if isinstance(node, exp.Alias | exp.Condition) and not isinstance(node, exp.Query):
        # A statement sqlglot does not know read as an expression: ``LISTEN ch`` as the
        # column LISTEN aliased ch, ``CHECKPOINT`` as a column. Its first word names it.
        words = node.sql().split()
        return words[0].strip('"`[]').upper() if words else type(node).__name__.upper()
    names = {"TruncateTable": "TRUNCATE", "Transaction": "BEGIN", "LoadData": "LOAD DATA",
             "AlterColumn": "ALTER"}
    name = type(node).__name__
    if name in ("Select", "Union", "Intersect", "Except", "Values"):
        return name.upper()
    return names.get(name, name.upper())


def computes_a_table(sql: str, dialect: str | None) -> bool:
    """Whether ``sql`` calls a function that reads a table (or runs SQL) named at run time
    (``query_table('Tr' || 'ack')``): for a refused write, counted as a refused read of the
    same call is, as every forbidden table (the thirtieth re-probe's L5). A text sqlglot
    cannot parse is taken to when it names such a function at all (fail closed)."""
    import sqlglot
    from sqlglot import exp

    names = SQL_TEXT_FUNCTIONS.get(dialect or "", frozenset()) | \
        TABLE_READERS.get(dialect or "", frozenset())
    low = sql.lower()
    if not any(name in low for name in names):
        return False
    try:
        trees = [t for t in sqlglot.parse(sql, read=dialect) if t is not None]
    except Exception:
        return True
    return any(function_name(node) in names and _computed_argument(node)
               for tree in trees for node in tree.find_all(exp.Func))
