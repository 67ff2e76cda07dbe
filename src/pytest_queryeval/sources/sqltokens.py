"""The guard's reading of an SQL text on sqlglot's tokens (:mod:`.sqlguard`): a text
sqlglot cannot parse (DuckDB's ``x'AB'``, a backtick name) is checked here, and so is what a
statement sqlglot keeps as text holds (``EXPLAIN ANALYZE ...``); with the checks of table and
view names both readings share.

Why a module of its own: the tree's reading and the tokens' grew past one module's size, and
the tokens' one needs nothing of the tree's (the guard imports it, never the reverse).
"""

from __future__ import annotations

import itertools
import re
from typing import Any

from ..errors import QueryRefused, QuerySyntaxError, ReadRefused, TableComputed, TableComputedRead
from .sqlfunctions import (
    FORBIDDEN_FUNCTIONS,
    SQL_TEXT_FUNCTIONS,
    TABLE_READERS,
    called_calls,
    format_character,
    plain_name,
    reads_a_file,
)

#: Table functions and views of one dialect that give the database file's path on the host
#: (DuckDB's ``duckdb_databases()``, a view too, and ``pragma_database_list``; SQLite's
#: ``pragma_database_list``) or open a directory of the host (DuckDB's
#: ``duckdb_extensions()``, ``duckdb_extension_repositories()`` and ``duckdb_secrets()``,
#: which list the extension and secret directories; with external access off the engine
#: refuses them only when they run): to an agent's tool or a prediction that is the host's
#: file system, refused as file access as a file read is (its rows are also scrubbed of the
#: path where the engine can give it otherwise, ``duckdb.machine_paths``). Refused by the
#: guard, not left to the engine, so a call the replay does not run is judged as the replayed
#: one (``duckdb_secrets()`` counted a write attempt replayed and none unrun: the
#: thirty-fourth re-probe's M1).
_DIALECT_PATH_VIEWS: dict[str, frozenset[str]] = {
    # the settings and the files DuckDB keeps list host paths (the database's WAL files in
    # ``allowed_paths``, the spill directory), which no scrub of a result can follow once
    # transformed (``upper(...)``, ``replace(..., '/', '|')``: the thirty-ninth re-probe's H2)
    "duckdb": frozenset({"duckdb_databases", "pragma_database_list", "duckdb_extensions",
                         "duckdb_extension_repositories", "duckdb_secrets", "duckdb_settings",
                         "duckdb_temporary_files", "duckdb_external_file_cache",
                         "duckdb_logs", "duckdb_logs_parsed", "duckdb_log_contexts",
                         "duckdb_profiling_settings",
                         # DuckDB's own view over duckdb_settings(), in every database: no
                         # object of the database needed (the forty-second re-probe's Q17)
                         "pg_settings"}),
    "sqlite": frozenset({"pragma_database_list"}),
}


#: A DuckDB setting whose value may hold a host path (``allowed_paths``, ``temp_directory``,
#: ``secret_directory``, ``file_search_path``, ``log_query_path``, ``profiling_output``...),
#: by its name's words: ``current_setting`` of one is file access, as is one whose name is
#: not a plain literal (computed, escaped: no reader knows which setting it reads).
PATH_SETTING = re.compile(r"path|director|file|repositor|output|home|secret|temp|tmp|log",
                          re.IGNORECASE)
_PLAIN_SETTING = re.compile(r"[A-Za-z_]+")
#: Functions of one dialect that read a setting named by their argument.
SETTING_READERS: dict[str, frozenset[str]] = {"duckdb": frozenset({"current_setting"})}


def check_setting(fname: str, setting: str | None, dialect: str | None) -> None:
    """Refuse a read of a setting that may hold a host path (:data:`PATH_SETTING`), or of one
    named by anything but a plain string literal (``setting`` None)."""
    if fname not in SETTING_READERS.get(dialect or "", frozenset()):
        return
    if setting is None or not _PLAIN_SETTING.fullmatch(setting) or PATH_SETTING.search(setting):
        shown = "a computed name" if setting is None else repr(setting)
        raise QueryRefused(f"{fname}() of {shown} may read a host path (the database file's, "
                           "the spill or secret directory's): file access, refused")


def check_path_view(name: str, dialect: str | None) -> None:
    """Refuse a function or view of :data:`_DIALECT_PATH_VIEWS`."""
    if name.lower() in _DIALECT_PATH_VIEWS.get(dialect or "", frozenset()):
        raise QueryRefused(f"{name.lower()} reads the host's file system (the database "
                           "file's path, the extension or secret directories): file access, "
                           "refused")


#: Dialects whose engine reads a table named like a file as that file (DuckDB's replacement
#: scans: ``FROM 'chinook.duckdb'`` read the only table of a one-table database file,
#: ``FROM 'x.csv'`` reads a CSV file), uncounted as the functions above.
PATH_TABLES = frozenset({"duckdb"})
#: What makes a table's name a path: a dot, a slash or a backslash in one part.
_PATH_CHARS = re.compile(r"[./\\]")


def check_table_name(parts: list[str]) -> None:
    """Refuse a table named like a file (see :data:`PATH_TABLES`)."""
    for part in parts:
        if _PATH_CHARS.search(part):
            raise QueryRefused(f"table {part!r} is named like a file, which the engine reads "
                               "as a file (the database's own too, which no count of the "
                               "tables read can see)")


#: Words that make an *unparseable* statement suspicious (fallback check on tokens).
_WRITE_WORDS = frozenset({
    "INSERT", "UPDATE", "DELETE", "MERGE", "UPSERT", "DROP", "CREATE", "ALTER", "TRUNCATE",
    "ATTACH", "DETACH", "PRAGMA", "VACUUM", "REPLACE", "GRANT", "REVOKE", "COPY", "CALL",
    "EXEC", "EXECUTE", "LOCK", "REINDEX", "ANALYZE", "SET", "BEGIN", "COMMIT", "ROLLBACK",
    "INTO", "DO", "LOAD", "IMPORT", "EXPORT",
})
_QUERY_STARTS = frozenset({"SELECT", "WITH", "VALUES", "L_PAREN"})

#: First words of SQL statements in the dialects we know of. A text starting with anything
#: else (prose, ``SELEC``, ``FROM``, a stray backtick) is a syntax error, not a refusal.
_STATEMENT_WORDS = frozenset({
    "ABORT", "ALTER", "ANALYZE", "ANALYSE", "ATTACH", "BACKUP", "BEGIN", "BULK", "CACHE",
    "CALL", "CHECKPOINT", "CHECKSUM", "CLOSE", "CLUSTER", "COMMENT", "COMMIT", "COPY",
    "CREATE", "DBCC", "DEALLOCATE", "DECLARE", "DELETE", "DENY", "DESC", "DESCRIBE", "DETACH",
    "DISCARD", "DO", "DROP", "END", "EXEC", "EXECUTE", "EXPLAIN", "EXPORT", "FETCH", "FLUSH",
    "GET", "GO", "GRANT", "HANDLER", "IMPORT", "INSERT", "INSTALL", "KILL", "LIST", "LISTEN",
    "LOAD", "LOCK", "MERGE", "MOVE", "MSCK", "NOTIFY", "OPTIMIZE", "PRAGMA", "PREPARE", "PRINT",
    "PUT", "REASSIGN", "REFRESH", "REINDEX", "RELEASE", "REMOVE", "RENAME", "REPAIR",
    "REPLACE", "RESET", "RESTORE", "REVOKE", "ROLLBACK", "SAVEPOINT", "SECURITY", "SET",
    "SHOW", "SHUTDOWN", "START", "SUMMARIZE", "TABLE", "TRUNCATE", "UNCACHE", "UNINSTALL",
    "UNLISTEN", "UNLOAD", "UNLOCK", "UPDATE", "UPSERT", "USE", "VACUUM", "WAITFOR",
})


def stronger(read: ReadRefused | None, new: ReadRefused | None) -> ReadRefused | None:
    """Of two refused reads, the one to raise: the first, unless only the second reads a
    table no text names (:class:`~..errors.TableComputedRead`), which counts more."""
    if new is None or (read is not None and (isinstance(read, TableComputed)
                                             or not isinstance(new, TableComputed))):
        return read
    return new


#: Leading whitespace and comments, then the first word (or character) of a statement.
_FIRST_WORD = re.compile(r"(?:\s+|--[^\n]*|/\*.*?\*/)*(\w+|\S)", re.DOTALL)


def sql_tokens(sql: str, dialect: str | None) -> list[Any]:
    """sqlglot's tokens (comments dropped); a text it cannot tokenize is a syntax error."""
    from sqlglot.dialects.dialect import Dialect

    try:
        return list(Dialect.get_or_raise(dialect).tokenize(sql))
    except Exception as e:
        # Prose ("Sorry, I can't") fails on its apostrophe: name its first word instead.
        m = _FIRST_WORD.match(sql)
        words = {w.upper() for w in re.findall(r"\w+", sql)}
        if m is not None and not _starts_a_statement(m[1], "") and not words & _WRITE_WORDS:
            raise _syntax_error(sql, m.start(1), m[1]) from None
        # "Missing ' from 1:7" says more than "Error tokenizing"; sqlglot's compiled build
        # (sqlglotc) loses the explicit ``from e``, and keeps it only as the context.
        cause = e.__cause__ or e.__context__ or e
        raise QuerySyntaxError(f"syntax error: {cause}") from None


#: Invisible characters a hostile text may put before a keyword (``\ufeffDROP``).
_INVISIBLE = "\ufeff\u200b\u200c\u200d\u2060\u00ad"


def _starts_a_statement(text: str, token_type: str) -> bool:
    word = text.upper().strip(_INVISIBLE)
    return word in _STATEMENT_WORDS or word in _QUERY_STARTS or word == "(" \
        or token_type in _QUERY_STARTS or token_type == "COMMAND"


def _position(sql: str, offset: object) -> str:
    if not isinstance(offset, int) or not 0 <= offset <= len(sql):
        return ""
    line = sql.count("\n", 0, offset) + 1
    return f" at line {line}, column {offset - sql.rfind(chr(10), 0, offset)}"


def _syntax_error(sql: str, offset: int, text: str) -> QuerySyntaxError:
    return QuerySyntaxError(f"syntax error{_position(sql, offset)}: {text!r} does not start an "
                            "SQL statement")


def _first_is_a_statement(tokens: list[Any]) -> bool:
    """Also true when a write word occurs anywhere: such a text is refused as what it may
    be, never excused as a mere syntax error."""
    return _starts_a_statement(tokens[0].text, tokens[0].token_type.name) or any(
        t.text.upper().strip(_INVISIBLE) in _WRITE_WORDS for t in tokens)


def check_statement_start(sql: str, dialect: str | None) -> None:
    """Raise QuerySyntaxError when ``sql`` does not start like any SQL statement."""
    tokens = sql_tokens(sql, dialect)
    if tokens and not _first_is_a_statement(tokens):
        raise _syntax_error(sql, tokens[0].start, tokens[0].text)


def check_tokens(sql: str, dialect: str | None) -> None:
    """Refuse a text sqlglot could not parse unless its tokens read as one query that calls
    nothing the tree's check refuses: it may still be a query in the engine's own dialect,
    whose syntax error the engine then reports."""
    tokens = sql_tokens(sql, dialect)
    # Token types by name: their module moved between sqlglot versions.
    literal = {"STRING", "IDENTIFIER", "NATIONAL_STRING", "RAW_STRING", "HEREDOC_STRING"}
    words = [t for t in tokens if t.token_type.name not in literal]
    if not words:
        raise QueryRefused("no statement")
    first = words[0]
    # ``\ufeffSELECT``: DuckDB reads the BOM as a blank and runs the query (the twenty-eighth
    # re-probe's M1: it was refused as "not a query", a write attempt of an honest agent)
    if first.token_type.name not in _QUERY_STARTS \
            and plain_name(first.text).upper() not in _QUERY_STARTS:
        if not _first_is_a_statement(tokens):
            raise _syntax_error(sql, tokens[0].start, tokens[0].text)
        raise QueryRefused(f"statement starting with {first.text!r} is not a query")
    for i, tok in enumerate(words):
        if tok.token_type.name == "SEMICOLON":
            if any(t.token_type.name != "SEMICOLON" for t in words[i + 1:]):
                raise QueryRefused("multiple statements; only one query is executed")
        elif tok.text.upper() in _WRITE_WORDS:
            raise QueryRefused(f"unparseable statement containing {tok.text.upper()}")
        elif i and format_character(tok.text):  # ``FROM \u200b'x.csv'``: DuckDB reads the file
            raise QueryRefused(f"unparseable statement with the word {tok.text!r}, which holds "
                               "an invisible format character an engine reads as a blank")
        else:
            check_path_view(tok.text, dialect)
            check_setting(plain_name(tok.text), None, dialect)  # no tree: its argument unread
    check_called(tokens, dialect)
    if dialect in PATH_TABLES:
        for before, tok in itertools.pairwise(tokens):
            if before.token_type.name in ("FROM", "JOIN") \
                    and tok.token_type.name in ("STRING", "IDENTIFIER", "VAR"):
                check_table_name([tok.text])


def check_called(tokens: list[Any], dialect: str | None) -> None:
    """Refuse, in the tokens of a text sqlglot could not parse, a call of what the tree's
    check refuses (:func:`.sqlguard._check_query`): a function with effects, one that runs
    SQL given as text or opens a file, and a table function that reads a table by name
    (anywhere: with no tree, not only in ``FROM``; refused as a read after every other call
    is read, as the tree's check does). Without them, DuckDB's ``SELECT x'AB', * FROM checkpoint()``
    or ``... FROM checkpoint() AS `c``` (a blob literal or a backtick sqlglot's DuckDB grammar
    refuses) wrote the database file past the count of writes, and ``pragma_storage_info``
    gave a forbidden table's values (issue 58, the twenty-seventh re-probe's H2 and H3)."""
    sql_text = SQL_TEXT_FUNCTIONS.get(dialect or "", frozenset())
    readers = TABLE_READERS.get(dialect or "", frozenset())
    read: ReadRefused | None = None
    for name, paren in called_calls(tokens):
        if name in FORBIDDEN_FUNCTIONS:
            raise QueryRefused(f"unparseable statement calling {name}(), which has side effects")
        if name in sql_text:
            refused = TableComputed if _computed_tokens(tokens, paren) else QueryRefused
            raise refused(f"unparseable statement calling {name}()")
        if reads_a_file(name, dialect):
            raise QueryRefused(f"unparseable statement calling {name}()")
        if name in readers:
            computed = TableComputedRead if _computed_tokens(tokens, paren) else ReadRefused
            read = stronger(read, computed(
                f"unparseable statement calling {name}(), which reads the table named by its "
                "argument: no count of the tables read can see it"))
    if read is not None:
        raise read


def _computed_tokens(tokens: list[Any], paren: int) -> bool:
    """Whether the first argument after the ``(`` at ``paren`` is other than one string or
    one name (``'Tr' || 'ack'``): the tokens' reading of :func:`.sqlguard._computed_argument`."""
    arg = tokens[paren + 1: paren + 3]
    return not (len(arg) == 2 and arg[0].token_type.name in ("STRING", "VAR", "IDENTIFIER")
                and arg[1].token_type.name in ("COMMA", "R_PAREN"))
