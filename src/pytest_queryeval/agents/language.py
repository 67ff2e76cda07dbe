"""What an agent's statement text is, read by the parsers of the datasource's language: whether
a text is a statement at all (not prose), and whether a statement the scorer does not run
itself is a read, and of which tables.

Why parsers and an allow-list, not the first word: a text judged on its words passed
``BEGIN; DELETE FROM Genre; COMMIT;``, ``WITH RECURSIVE r AS (SELECT 1) DELETE ...``,
``EXPLAIN ANALYZE DELETE FROM Genre`` (DuckDB and PostgreSQL run it), ``EXPORT DATABASE``
and ``PROFILE MATCH (n) DETACH DELETE n`` as no write, because each head or shape was missing
from a list of writes (issue 58, the tenth re-probe). Here a text is a read only when a parser
proves every statement of it a read (sqlglot in the datasource's dialect, DuckDB's and
PostgreSQL's own parsers where sqlglot gives up; for a graph, the graph guard's tokenizer
through the source's :meth:`not_a_read`); anything else is a write attempt, and a text no
parser reads is not established (:class:`Verdict` ``unknown``), never a read.
"""

from __future__ import annotations

import functools
import re
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from .lead import FORMAT_CHARS
from .lead import LEAD as _LEAD

#: A format character anywhere (:data:`.lead.FORMAT_CHARS`).
_FORMAT = re.compile(f"[{FORMAT_CHARS}]")
#: The first word of a text, after blanks, format characters and comments.
_HEAD = re.compile(_LEAD + r"([A-Za-z_]+)\b")
#: The words a statement of SQL (SQLite, DuckDB, PostgreSQL) or a graph language starts with: only a
#: text starting so is handed to a parser (prose is not, and a parser is not free).
HEADS = frozenset({
    "select", "with", "values", "table", "from", "explain", "pragma", "show", "describe", "desc",
    "summarize", "pivot", "unpivot", "checkpoint", "force", "insert", "update", "delete", "merge",
    "upsert", "replace", "create", "drop", "alter", "truncate", "grant", "revoke", "attach",
    "detach", "vacuum", "copy", "call", "exec", "execute", "rename", "comment", "set", "reset",
    "reindex", "analyze", "analyse", "lock", "load", "install", "uninstall", "import", "export",
    "begin", "start", "commit", "end", "rollback", "abort", "savepoint", "release", "prepare",
    "deallocate", "use", "listen", "notify", "unlisten", "discard", "cluster", "refresh",
    "security", "reassign", "do", "match", "optional", "unwind", "return", "remove", "foreach",
    "profile"})
#: Characters of a text a parser is given; a longer text starting like a statement is taken
#: as one (fail closed) rather than parsed in the run's process.
MAX_PARSED = 64 * 1024
#: ``EXPLAIN`` and its options (``ANALYZE``, ``VERBOSE``, ``QUERY PLAN``, ``(ANALYZE, ...)``),
#: or ``PROFILE``: what runs is the statement after them.
EXPLAINED = re.compile(_LEAD + r"(?:explain|profile)\b(?:\s+(?:analy[sz]e|verbose|query\s+plan)"
                       r"\b|\s*\([^)]*\))*\s*", re.IGNORECASE)
#: Pragmas that only read the schema or the engine's state (SQLite's and DuckDB's); any other
#: pragma (an assignment, ``optimize``, ``wal_checkpoint``, ``import_database``) is no read.
READ_PRAGMAS = frozenset({
    "table_info", "table_xinfo", "index_list", "index_info", "index_xinfo", "foreign_key_list",
    "database_list", "table_list", "collation_list", "function_list", "pragma_list", "module_list",
    "compile_options", "user_version", "schema_version", "application_id", "page_count",
    "page_size", "freelist_count", "encoding", "data_version", "integrity_check", "quick_check",
    "show_tables", "show_tables_expanded", "database_size", "storage_info", "version", "platform",
    "show", "functions"})

#: Pragmas of :data:`READ_PRAGMAS` that set their value when given one in the call form too
#: (SQLite runs ``PRAGMA user_version(7)`` as ``= 7``: the eighteenth re-probe's N1).
_SETTABLE_PRAGMAS = frozenset({"user_version", "schema_version", "application_id", "page_size",
                               "encoding"})
#: What may follow a read pragma's name: the end, its statement's end, or its argument.
_READ_PRAGMA_ENDS = frozenset({"", ";", "("})


def pragma_sets(text: str) -> bool:
    """Whether a pragma statement is no read: an assignment (``= v``), one not of
    :data:`READ_PRAGMAS`, a settable one given a value (``user_version(7)``), or one not read
    as ``PRAGMA [schema.]name`` at all.

    Why tokens, not a pattern over the text: SQLite takes a comment anywhere a blank may
    stand and a quoted name as the name (it runs and persists ``PRAGMA user_version/**/(7)``,
    ``PRAGMA user_version -- c`` + newline + ``(8)``, ``PRAGMA "user_version"(7)``,
    ``PRAGMA [user_version](7)``, ``PRAGMA 'user_version'(7)``), and a pattern that reads
    only blanks before the ``(`` called each a read (issue 58, the nineteenth re-probe's
    H2). The guard's tokenizer (:func:`~..sources.sqlguard.sql_tokens`, SQLite's quotes, comments
    dropped) reads the name and what follows it; a text it cannot read is no read."""
    from ..errors import QueryEvalError
    from ..sources.sqlguard import sql_tokens

    try:
        words = [t.text for t in sql_tokens(_FORMAT.sub("", text), "sqlite")]
    except QueryEvalError:  # a syntax error: not proven a read
        return True
    while words and words[0] == ";":
        words.pop(0)
    if len(words) > 3 and words[2] == ".":
        del words[1:3]  # the schema: ``main.user_version``
    if len(words) < 2 or words[0].lower() != "pragma":
        return True
    name, after = words[1].lower(), (words[2] if len(words) > 2 else "")
    if name not in READ_PRAGMAS or after not in _READ_PRAGMA_ENDS:
        return True
    return after == "(" and name in _SETTABLE_PRAGMAS


_local = threading.local()


def head_word(text: str) -> str | None:
    """The first word of ``text`` after blanks and comments, lower-cased, or None."""
    match = _HEAD.match(text)
    return match.group(1).lower() if match else None


def parsed_types(text: str) -> list[str] | None:
    """The statement types a real SQL parser reads ``text`` as (DuckDB's, then PostgreSQL's:
    ``TRANSACTION``, ``DELETE``, ``SELECT``, ``ExplainStmt``...), or None when neither reads it
    (prose: ``show me the tables``, ``describe the data``) or neither is installed."""
    duckdb = _duckdb()
    if duckdb is not None:
        try:
            return [s.type.name for s in duckdb.extract_statements(text)] or None
        except Exception:  # DuckDB raises a parser error of its own per failure
            pass
    from ..sources.pgguard import statement_types

    return statement_types(text)


def _duckdb() -> Any:
    """A connection of this thread to an empty in-memory DuckDB (its parser, never a query),
    or None without DuckDB."""
    conn = getattr(_local, "duckdb", None)
    if conn is None:
        try:
            import duckdb
        except ImportError:
            return None
        conn = _local.duckdb = duckdb.connect(":memory:")
    return conn


def parses_as_statement(text: str) -> bool:
    """Whether ``text`` starts with a statement's word and a real parser reads it as one or
    more statements: ``EXPORT DATABASE 'x'``, ``CHECKPOINT``, ``SHOW TABLES``, ``USE films``,
    ``SAVEPOINT a; DELETE ...``; not ``show me the tables``. A text too long to parse here
    that starts like a statement is taken as one."""
    if head_word(text) not in HEADS:
        return False
    return len(text) > MAX_PARSED or _parsed(text)


@functools.lru_cache(maxsize=4096)
def _parsed(text: str) -> bool:
    """:func:`parsed_types` found statements (a record repeating one text parses it once)."""
    return parsed_types(text) is not None


@dataclass
class Verdict:
    """What a statement text does: ``read`` (of ``tables``), ``write`` (anything that is not
    proven a read) or ``unknown`` (no parser reads it), with why."""

    kind: str
    tables: set[str] = field(default_factory=set)
    why: str = ""


def unwrap(text: str) -> str:
    """``text`` without its ``EXPLAIN [ANALYZE ...]`` or ``PROFILE`` heads: the statement that
    runs (``EXPLAIN ANALYZE`` runs it; ``EXPLAIN`` of it is judged as it, the cautious side)."""
    for _ in range(8):
        match = EXPLAINED.match(text)
        if match is None or match.end() == 0:
            break
        text = text[match.end():]
    return text


def sql_verdict(text: str, dialect: str | None) -> Verdict:
    """Whether every statement of ``text`` is a read, by sqlglot in ``dialect``: a query
    (``SELECT``, a set operation, ``VALUES``, DuckDB's ``FROM``-first, ``TABLE``, ``PIVOT``,
    ``SUMMARIZE``), ``DESCRIBE``/``SHOW`` of a table or a query, a schema pragma, ``EXPLAIN``
    of one of these; holding no data-modifying part (a CTE's, ``SELECT ... INTO``). Every
    other statement is a write (transaction control, ``SET``, ``USE``, ``PREPARE``,
    ``EXECUTE``, ``EXPORT``, ``CHECKPOINT``, ``ATTACH``, a bare expression sqlglot reads for
    ``SAVEPOINT a``). What sqlglot cannot parse is read by DuckDB's or PostgreSQL's parser
    (:func:`_unparsed`)."""
    if not _FORMAT.search(text):
        return _verdict_of(text, dialect)
    # invisible (``\u00adDROP TABLE t`` is judged as DROP), and a blank to DuckDB (U+200B,
    # U+2060, U+FEFF: ``FROM\u200bTrack``, the nineteenth re-probe's H1): both readings
    verdicts = [_verdict_of(_FORMAT.sub(gap, text), dialect) for gap in ("", " ")]
    for verdict in verdicts:
        if verdict.kind != "read":
            return verdict
    return Verdict("read", verdicts[0].tables | verdicts[1].tables)


def _verdict_of(text: str, dialect: str | None) -> Verdict:
    """:func:`sql_verdict` of a text without format characters."""
    import sqlglot
    from sqlglot import exp

    try:
        trees = [t for t in sqlglot.parse(text, read=dialect) if t is not None]
    except Exception:  # sqlglot raises several error types: the engines' parsers decide
        return _unparsed(text)
    trees = [t for t in trees if not isinstance(t, exp.Semicolon)]  # a comment after ``;``
    tables: set[str] = set()
    for tree in trees:
        verdict = _tree_verdict(tree, text if len(trees) == 1 else tree.sql(dialect=dialect),
                                dialect, exp)
        if verdict.kind != "read":
            return verdict
        tables |= verdict.tables
    return Verdict("read", tables)


_READ_TREES = ("Select", "SetOperation", "Subquery", "Values", "Describe", "Show",
               "Summarize", "Pivot")
_WRITE_NODES = ("Insert", "Update", "Delete", "Merge", "Create", "Drop", "Alter",
                "TruncateTable", "Command", "Pragma", "Transaction", "Commit", "Rollback",
                "Set", "Use")


def _tree_verdict(tree: Any, text: str, dialect: str | None, exp: Any) -> Verdict:
    """One statement sqlglot parsed (``text``: its own text, for a bare command)."""
    if isinstance(tree, exp.Command):
        head = str(tree.this).lower()
        if head in ("explain", "profile"):
            inner = unwrap(text)
            return sql_verdict(inner, dialect) if inner.strip() else Verdict("read")
        if head in ("show", "describe", "desc", "summarize"):
            return Verdict("read", {w.lower() for w in re.findall(r"[A-Za-z_]\w*", text)[1:]})
        return Verdict("write", why=f"{head.upper()} is not a read")
    if isinstance(tree, exp.Pragma):
        if pragma_sets(text):
            return Verdict("write", why="a pragma that is not a read of the schema")
        return Verdict("read", {w.lower() for w in re.findall(r"[A-Za-z_]\w*", text)[2:]})
    if isinstance(tree, exp.Alias | exp.Condition | exp.Identifier | exp.Tuple):
        # a bare expression: sqlglot read no statement there (``SAVEPOINT a`` as an alias,
        # ``CHECKPOINT`` as a column, DuckDB's ``SUMMARIZE t`` in another dialect)
        verdict = _unparsed(text)
        return verdict if verdict.kind != "unknown" else \
            Verdict("write", why=f"not a read ({text.strip()[:60]})")
    if not isinstance(tree, tuple(getattr(exp, n) for n in _READ_TREES)):
        what = type(tree).__name__.upper() if len(text) > 200 or ";" in text else text.strip()
        return Verdict("write", why=f"not a read ({what[:60]})")
    read: Any = tree  # a query's tree (the check above narrows it to nothing mypy knows)
    inside = next(iter(read.find_all(*(getattr(exp, n) for n in _WRITE_NODES))), None)
    if inside is not None:
        return Verdict("write", why=f"it holds {type(inside).__name__.upper()}")
    if any(node.args.get("into") is not None for node in read.find_all(exp.Select)):
        return Verdict("write", why="SELECT ... INTO creates a table")
    called = next((f for f in read.find_all(exp.Func) if state_function(f)), None)
    if called is not None:
        from ..sources.sqlguard import function_name

        return Verdict("write", why=f"it calls {function_name(called)}(), whose effect outlives "
                                    "the query")
    return Verdict("read", tree_tables(read))


def state_function(node: object) -> bool:
    """A call of a function whose effect outlives the query (a checkpoint of the database
    file, a backend terminated, a sequence advanced, a file written or read: the seventeenth
    re-probe's H5, ``SELECT * FROM checkpoint()``): a write, as the datasource's guard
    refuses it (:data:`~..sources.sqlguard.FORBIDDEN_FUNCTIONS`)."""
    from sqlglot import exp

    from ..sources.sqlguard import FORBIDDEN_FUNCTIONS, function_name

    return isinstance(node, exp.Func) and function_name(node) in FORBIDDEN_FUNCTIONS


#: DuckDB's and PostgreSQL's statement types that only read (DuckDB reads ``DESCRIBE``,
#: ``SHOW``, ``SUMMARIZE``, ``PIVOT`` and ``FROM``-first as ``SELECT``).
_READ_TYPES = frozenset({"SELECT", "SelectStmt", "VariableShowStmt"})


#: Heads of statements that may be reads: a text starting so that no parser reads is not
#: established; one starting with any other head of :data:`HEADS` is a write.
_READ_HEADS = frozenset({"select", "with", "values", "table", "from", "explain", "show",
                         "describe", "desc", "summarize", "pivot", "unpivot", "match",
                         "optional", "unwind", "return", "profile", "pragma"})


def _unparsed(text: str) -> Verdict:
    """A text sqlglot cannot parse, judged by the engines' own parsers: reads only (their
    tables: every word of the text, the cautious side), an ``EXPLAIN`` judged by what it
    explains, anything else a write; read by neither, not established."""
    types = parsed_types(text) if len(text) <= MAX_PARSED else None
    if types is None:
        heads = {head_word(unwrap(part)) for part in text.split(";")[:64]}
        written = sorted(h for h in heads if h in HEADS and h not in _READ_HEADS)
        if written:  # DELETE FROM t WHERE (: a write no engine parses is still one asked
            return Verdict("write", why=f"{written[0].upper()} is not a read")
        return Verdict("unknown", why="no parser of the datasource's language reads it")
    for kind in types:
        if kind in ("EXPLAIN", "ExplainStmt"):
            inner = unwrap(text)
            if inner == text or ";" in text:
                return Verdict("write", why="an EXPLAIN no parser reads the statement of")
            return sql_verdict(inner, None)
        if kind not in _READ_TYPES:
            return Verdict("write", why=f"{kind} is not a read")
    if re.search(r"\binto\b", text, re.IGNORECASE):  # PostgreSQL's SELECT ... INTO creates
        return Verdict("write", why="SELECT ... INTO creates a table")
    return Verdict("read", {w.lower() for w in re.findall(r"[A-Za-z_]\w*", text)})


def tree_tables(tree: Any) -> set[str]:
    """The tables one parsed statement names, lower-cased, a CTE's name left out only where
    a ``WITH`` enclosing it in scope defines it (:func:`_cte_reference`): a CTE defined in
    another scope shadows nothing (``SELECT * FROM Track WHERE EXISTS (WITH Track AS (SELECT
    1) SELECT 1)`` reads the table Track, and was counted as no read: the thirty-first
    re-probe's H1-H4)."""
    from sqlglot import exp

    out: set[str] = set()
    for table in tree.find_all(exp.Table):
        name = table.name.lower()
        if isinstance(table.this, exp.Func):
            out |= function_tables(table.this)
        elif name and not _cte_reference(table):
            out.add(name)
            qualified = [p.lower() for p in (table.catalog, table.db) if p]
            for k in range(len(qualified)):  # ``"sales".orders``: sales.orders too (36a H3)
                out.add(".".join([*qualified[k:], name]))
            if name in _every_table_names():  # pragma_table_info WHERE arg = ..., a catalog
                out.add(EVERY_TABLE)
        if name in _SCHEMA_HEADS and table.alias:  # DuckDB's FROM (SHOW Track)
            out.add(table.alias.lower())
    return out


#: A table account's read of every table (a catalog of every table's statistics, a schema
#: reader of a name computed at run time): no table's name; every forbidden table's count.
EVERY_TABLE = "*"


def every_table(names: Iterable[str]) -> bool:
    """Whether a table account (the engine's, the text's) reads every table: it holds
    :data:`EVERY_TABLE` or a catalog of :data:`~..sources.sqlfunctions.STATISTICS_CATALOGS`
    (an engine names the catalog it read: SQLite's authorizer says ``sqlite_stat1``)."""
    from ..sources.sqlfunctions import STATISTICS_CATALOGS

    return any(n == EVERY_TABLE or n.rsplit(".", 1)[-1] in STATISTICS_CATALOGS for n in names)


@functools.lru_cache(maxsize=1)
def _every_table_names() -> frozenset[str]:
    """Relations whose plain name (no call) reads every table: the statistics catalogs, and
    the schema readers read without their argument (SQLite's ``FROM pragma_table_info WHERE
    arg = 'Employee'``, the argument a hidden column)."""
    from ..sources.sqlfunctions import INDEX_READERS, SCHEMA_READERS, STATISTICS_CATALOGS

    return STATISTICS_CATALOGS | SCHEMA_READERS | INDEX_READERS


def function_tables(call: Any) -> set[str]:
    """The tables a table function in ``FROM`` reads by name: a schema reader's string
    literal (``pragma_show('Track')``: ``track``, and ``main.track``'s last name), or
    :data:`EVERY_TABLE` for a statistics catalog, an index's reader, a schema reader given
    no literal (``pragma_table_info(m.name)``) or none at all (``pragma_quick_check()``
    checks every table). Any other function reads no table by name here (the guard refuses
    the table readers and file readers)."""
    from sqlglot import exp

    from ..sources.sqlfunctions import INDEX_READERS, SCHEMA_READERS, STATISTICS_CATALOGS
    from ..sources.sqlfunctions import TABLE_READERS as READERS
    from ..sources.sqlguard import function_name

    fname = function_name(call)
    if fname in STATISTICS_CATALOGS or fname in INDEX_READERS or fname in _PARENT_READERS:
        return {EVERY_TABLE}
    if fname not in SCHEMA_READERS and not any(fname in r for r in READERS.values()):
        return set()  # (a table reader, ``duckdb_table_sample('Track')``, is counted as one)
    args = list(call.expressions) if isinstance(call, exp.Anonymous) else \
        [a for a in (call.this,) if isinstance(a, exp.Expression)]
    first = args[0] if args else None
    if isinstance(first, exp.Column) and not first.table:  # histogram_values(Genre, Name)
        return {first.name.lower()}
    if not (isinstance(first, exp.Literal) and first.is_string and str(first.this).strip()):
        return {EVERY_TABLE}
    spelled = str(first.this).lower()
    parts = [p.strip('"`[] ') for p in spelled.split(".")]
    # each dotted tail without its quotes: ``'"sales"."orders"'`` reads sales.orders, which
    # the quoted spelling matched to no forbidden name (the thirty-sixth re-probe's H3)
    return {spelled, *(".".join(parts[k:]) for k in range(len(parts)))}


#: Schema readers that read the tables their argument's foreign keys reference, beside it
#: (``pragma_foreign_key_check('Customer')`` checks every SupportRepId against Employee: a
#: value derived from Employee, counted as a read of Customer only, the thirty-seventh
#: re-probe's H3): a read of every table.
_PARENT_READERS = frozenset({"pragma_foreign_key_check"})


#: What sqlglot reads as a table with an alias in ``FROM (SHOW Track)``: DuckDB runs
#: ``DESCRIBE Track`` there, a read of the table its "alias" names, as a top-level ``SHOW
#: Track`` is counted (the thirty-second re-probe's H2; a table so named is counted too).
_SCHEMA_HEADS = frozenset({"show", "describe", "desc", "summarize"})


#: The statements whose target (``INSERT INTO t``) is a table whatever a ``WITH`` names.
_TARGETED = ("Insert", "Update", "Delete", "Merge")


def _cte_reference(table: Any) -> bool:
    """Whether ``table`` is a CTE for every engine: unqualified, no statement's target, and
    named by a CTE of a ``WITH`` whose query encloses it. Walking out from the table, the
    first ``WITH`` that names it decides: the table in the query's body, or in a later CTE's
    body, is that CTE; in its own body (not ``RECURSIVE``) the name reaches the scope outside.
    Where engines differ it is a table (fail closed): an earlier CTE naming a later one is
    that later CTE to SQLite and the table to DuckDB, and a ``RECURSIVE`` CTE's own name in
    its body is the CTE (counted, as before). Names compare as PostgreSQL folds them
    (``"Track"`` is not ``track`` there; the other engines' overcount is the cautious side)."""
    from sqlglot import exp

    if table.args.get("db") or table.args.get("catalog") or \
            not isinstance(table.this, exp.Identifier):
        return False
    target = table.parent if isinstance(table.parent, exp.Schema) else table
    if type(target.parent).__name__ in _TARGETED and target.arg_key == "this":
        return False
    name = _folded(table.this)
    child, node = table, table.parent
    while node is not None:
        if isinstance(node, exp.With):
            ctes = list(node.expressions)
            at = next((i for i, c in enumerate(ctes) if c is child), None)
            names = [_cte_name(c) for c in ctes]
            if at is None or name in names[at + 1:] or \
                    (name == names[at] and node.args.get("recursive")):
                return False
            if name in names[:at]:
                return True
        else:
            own = next((w for w in node.args.values() if isinstance(w, exp.With)), None)
            if own is not None and own is not child and name in map(_cte_name, own.expressions):
                return True
        child, node = node, node.parent
    return False


def _cte_name(cte: Any) -> str | None:
    """A CTE's name as :func:`_folded` reads it (None: no plain name)."""
    from sqlglot import exp

    alias = cte.args.get("alias")
    ident = getattr(alias, "this", None)
    if not isinstance(ident, exp.Identifier) or not str(ident.this).isascii():
        return None  # fail closed: a name with a letter engines may fold apart shadows nothing
    return _folded(ident)


#: ASCII's capitals to lower case, the only letters SQLite, DuckDB and PostgreSQL fold.
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def _folded(ident: Any) -> str:
    """A name as PostgreSQL reads it: a quoted one as spelled, any other with its ASCII
    letters lower-cased. Python's ``lower()`` folds more (the KELVIN SIGN to ``k``), so
    ``WITH TRAC\u212a AS (...)`` passed for a CTE named track and hid the table Track
    that both engines read (the thirty-second re-probe's H1)."""
    name = str(ident.this)
    return name if ident.args.get("quoted") else name.translate(_ASCII_LOWER)


#: A word (a function's name, however quoted or followed: ``"read_csv"/**/(``), and a table
#: read by a quoted name (DuckDB reads ``FROM '/etc/passwd'`` as the file): what may open a
#: file, which the datasource's guard then judges.
_WORD = re.compile(r"[A-Za-z_][\w$]*")
_QUOTED_TABLE = re.compile(r"\b(?:from|join)\s*['\"]", re.IGNORECASE)


def file_access(sql: str, dialect: str | None) -> str | None:
    """Why the datasource's guard refuses ``sql`` as the access to a file it is (DuckDB's
    ``SELECT * FROM read_csv('/etc/passwd')``, a table named like a file), or None: a
    statement judged on its text that the parsers read as a read counts as the write attempt
    a replay of it counts, the source's refusal of a file read (issue 58, the twelfth
    re-probe's M7). Only a text that calls a function of the dialect that opens a file, or
    reads a quoted name, is given to the guard (a replay's unrun queries are judged by the
    thousand), comments read as the engine ends them (41a M2); a dialect with no such
    function (SQLite: ``read_csv`` is no function there) reads no file."""
    from ..errors import QueryRefused, QuerySyntaxError, ReadRefused
    from ..sources.sqlcomments import readings
    from ..sources.sqlguard import check_read_only, reads_a_file

    if not (any(_QUOTED_TABLE.search(text) for text in readings(sql)) or
            any(reads_a_file(w, dialect) for w in set(_WORD.findall(sql)))):
        return None
    try:
        check_read_only(sql, dialect)
    except (QuerySyntaxError, ReadRefused):
        return None  # no statement, or a read the guard refuses only as uncountable
    except QueryRefused as exc:
        return f"refused by the datasource ({exc.reason()})"
    return None
