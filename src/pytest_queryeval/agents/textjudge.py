"""What a statement's text says it does: whether it writes, and which tables it names.

Why apart from the ledger: the ledger counts what the database did; these are the judges it
asks of a text before (or instead of) running it: an unrun call of a replay, a query on a
datasource that cannot account for itself, the final query. They read text only (sqlglot's
parse, and the head keyword of what sqlglot reads as a bare command), so the text rules of
:mod:`.textcalls` and the tests use them without a ledger.
"""

from __future__ import annotations

import functools
import re

from .language import head_word, pragma_sets, state_function
from .lead import FORMAT_CHARS

#: Heads that change data, schema or session, when sqlglot reads a bare command (H8: FORCE).
_WRITE_HEAD = re.compile(
    r"\s*(?:insert|update|delete|merge|upsert|replace|create|drop|alter|truncate|grant|revoke|attach|"
    r"detach|vacuum|copy|call|exec|execute|rename|comment|set|reindex|analyze|lock|load|install|import|"
    r"export|begin|commit|rollback|savepoint|release|checkpoint|force|uninstall|prepare|deallocate|use|"
    r"reset|abort|discard|listen|notify|refresh|start|end|do|cluster|optimize|flush|kill|shutdown|"
    r"declare|close|move|security|unlisten|handler|purge)\b", re.IGNORECASE)


#: How a query starts, and the words of a write inside it (:func:`may_write`).
_READ_HEAD = re.compile(r"\s*(?:select|with)\b", re.IGNORECASE)
_WRITE_WORD = re.compile(r"\b(?:insert|update|delete|merge|upsert|replace|create|drop|alter|"
                         r"truncate|into)\b", re.IGNORECASE)


#: The words of a write in a graph query language (clauses that change the graph, or reach
#: outside it) and in SPARQL Update: what an unrun query of a datasource that is not SQL is
#: judged by.
ANY_WRITE_WORD = re.compile(r"\b(?:create|merge|set|delete|remove|drop|alter|detach|insert|"
                             r"load|clear|copy|move|add|export|import|install|attach)\b",
                             re.IGNORECASE)


def may_write(sql: str) -> bool:
    """False only for a text :func:`is_write` would never call a write: one statement that
    starts with ``SELECT`` or ``WITH`` and holds no word of a write and no name of a function
    that writes (a replay's unrun queries are judged
    by the thousand; the parse is asked only of the others)."""
    return ";" in sql or _READ_HEAD.match(sql) is None or _WRITE_WORD.search(sql) is not None \
        or _state_names().search(sql) is not None


@functools.lru_cache(maxsize=1)
def _state_names() -> re.Pattern[str]:
    """The names of the functions :func:`~.language.state_function` calls writes, as words
    (quoted, or a comment before the ``(``, they are still calls: the parse decides)."""
    from ..sources.sqlguard import FORBIDDEN_FUNCTIONS

    names = sorted(FORBIDDEN_FUNCTIONS, key=len, reverse=True)
    return re.compile(r"\b(?:" + "|".join(map(re.escape, names)) + r")\b", re.IGNORECASE)


def is_write(sql: str, dialect: str | None = None) -> bool:
    """Whether any statement of ``sql`` would change data or schema: sqlglot's parse (a
    data-modifying CTE and ``SELECT ... INTO`` included; ``PRAGMA`` only with an assignment;
    ``EXPLAIN`` judged by the statement it explains, which ``EXPLAIN ANALYZE`` runs), and the
    head keyword of what sqlglot cannot parse."""
    import sqlglot
    from sqlglot import exp

    try:
        trees = sqlglot.parse(sql, read=dialect)
    except Exception:  # sqlglot raises several error types; the keyword check decides
        return any(_head_writes(part, dialect) for part in sql.split(";") if part.strip())
    writes = (exp.Insert, exp.Update, exp.Delete, exp.Merge, exp.Create, exp.Drop, exp.Alter,
              exp.TruncateTable)
    for tree in trees:
        if tree is None or isinstance(tree, exp.Semicolon):  # a comment after the last ``;``
            continue
        if isinstance(tree, exp.Command | exp.Pragma):
            # sqlglot renders PRAGMA f(x) as f = x: the text written is judged instead
            text = sql if len(trees) == 1 else tree.sql(dialect=dialect)
            if _head_writes(text, dialect):
                return True
            continue
        if not isinstance(tree, exp.Select | exp.SetOperation | exp.Subquery | exp.Values
                          | exp.Describe | exp.Show | exp.Summarize):
            return True
        if any(True for _ in tree.find_all(*writes)):
            return True
        if any(state_function(f) for f in tree.find_all(exp.Func)):
            return True
        if any(node.args.get("into") is not None for node in tree.find_all(exp.Select)):
            return True
    return False


_EXPLAIN = re.compile(r"\s*explain\b(?:\s+query\s+plan\b)?", re.IGNORECASE)


def _head_writes(text: str, dialect: str | None) -> bool:
    """The keyword test of one statement sqlglot read as a bare command (or could not read)."""
    explained = _EXPLAIN.match(text)
    if explained:
        rest = re.sub(r"^\s*(?:analyze|verbose|\([^)]*\))\s*", "", text[explained.end():],
                      flags=re.IGNORECASE)
        return bool(rest.strip()) and is_write(rest, dialect)
    if head_word(text) == "pragma":  # after comments too: ``/**/PRAGMA user_version(7)``
        return "=" in text or pragma_sets(text)
    return _WRITE_HEAD.match(text) is not None


#: A format character (:data:`.lead.FORMAT_CHARS`).
_INVISIBLE = re.compile(f"[{FORMAT_CHARS}]")


def tables_of(sql: str, dialect: str | None = None, engine_read: bool = False) -> set[str]:
    """The tables ``sql`` names, lower-cased: the text's account, for a datasource that cannot
    say what it read. A name is left out as a CTE's only where it can be nothing else:
    unqualified, outside the body of the CTE of that name (``WITH Employee AS (SELECT *
    FROM main.Employee) ...`` reads the table Employee twice over) and inside the query the
    CTE belongs to (:func:`~.language.tree_tables`). A word match on the text
    when sqlglot cannot parse it, so a forbidden table is never missed for a parse error.
    A format character is read as nothing and as the blank DuckDB reads U+200B, U+2060 and
    U+FEFF as (the nineteenth re-probe's H1: sqlglot took ``FROM``, U+200B, ``Track`` for a
    name other than ``Track``). ``engine_read``: the engine gave its own account as well (the
    text's is its backup): then an unparsed text's words leave out an alias, the word right
    after ``AS`` (:func:`_unaliased_words`), as an honest ``SELECT count(*) AS track FROM Genre
    WHERE Name <> x'AB'`` counted the table Track (the thirty-first re-probe's M1)."""
    if _INVISIBLE.search(sql):
        out = (_tables_of(_INVISIBLE.sub("", sql), dialect, engine_read)
               | _tables_of(_INVISIBLE.sub(" ", sql), dialect, engine_read))
    else:
        out = _tables_of(sql, dialect, engine_read)
    called = as_table_function(sql)
    if called is not None:
        out |= _tables_of(called, dialect, engine_read)
    if dialect == "sqlite" and re.search(r"(?i)(?<![\w$])in(?![\w$])", sql):
        out |= _in_tables(sql)  # SQLite's ``x IN Employee`` reads it
    if "&" in sql:
        for decoded in unicode_readings(sql):
            if decoded != sql:
                out |= tables_of(decoded, dialect, engine_read)
    if statistics_call(sql):
        from .language import EVERY_TABLE

        out.add(EVERY_TABLE)
    return out


#: SQLite's ``expr IN table`` (a table or view as the list: ``'Adams' IN v_emp``), read in a
#: text the engine cannot compile (a function of the agent's harness) as the engine would: a
#: name after ``IN`` with no parenthesis (the fortieth re-probe's N6), in any of SQLite's
#: quotes (``IN [v_emp]``, ``IN 'v_emp'``), schema-qualified (``IN "main"."v_emp"``), and
#: read on the text with its comments blanks (``IN/**/v_emp``: the forty-first's O1).
_IN_NAME = r"""(?:"((?:[^"]|"")+)"|`((?:[^`]|``)+)`|\[([^\]]+)\]|'((?:[^']|'')+)'|([A-Za-z_][\w$]*+))"""
_IN_TABLE = re.compile(rf"""(?<![\w$])in\s*{_IN_NAME}(?:\s*\.\s*{_IN_NAME})?(?!\s*\()""",
                       re.IGNORECASE)


def _in_tables(sql: str) -> set[str]:
    """The names SQLite's ``x IN <table>`` reads in ``sql`` (:data:`_IN_TABLE`): the table's,
    and the schema's too (cautious)."""
    from ..sources.sqlcomments import readings

    out: set[str] = set()
    for text in readings(sql):
        for m in _IN_TABLE.finditer(text):
            out |= {g.replace('""', '"').replace("''", "'").lower() for g in m.groups() if g}
    return out


#: PostgreSQL's Unicode-escaped name or string (``U&"v\0032"``, ``U&'Employe\0065'``), with
#: its ``UESCAPE`` character when it names one (read on a text whose comments are blanks).
_UNICODE_QUOTED = re.compile(
    r"""u&(["'])((?:(?!\1).|\1\1)*)\1(?:\s*uescape\s*'([^'])')?""", re.IGNORECASE | re.DOTALL)
#: The same where it stands in code, each other quote of PostgreSQL read whole and left as it
#: is (``'...'``, ``E'...'`` with backslash escapes, ``"..."``, ``$tag$...$tag$``, a name
#: holding a ``$``): a ``u&'`` inside a string opened a quote that ran to the next string and
#: hid the name after it (``SELECT 'u&' AS s, * FROM U&"v!0032" UESCAPE '!' WHERE ...``).
_UNICODE_IN_CODE = re.compile(  # each branch after its first character: searched for at once
    r"""[uUeE'"$](?:(?<=[uU])(?<![\w$][uU])&(["'])((?:(?!\1).|\1\1)*)\1"""
    r"""(?:\s*(?i:uescape)\s*'([^'])')?"""
    r"""|(?<=[eE])(?<![\w$][eE])'(?:[^'\\]|\\.|'')*'?|(?<=')[^']*'?|(?<=")[^"]*"?"""
    r"""|(?<=\w\$)[\w$]*|(?<=\$)(?<!\w\$)((?:[^\W\d]\w*)?)\$.*?(?:\$\4\$|\Z))""", re.DOTALL)


def unicode_escaped(sql: str) -> str:
    """``sql`` with each of PostgreSQL's Unicode-escaped names and strings written out
    (``U&"v\0032"`` as ``"v2"``): the name the server reads, which a parser here took as
    ``v\0032`` (a view read so counted nothing: the thirty-ninth re-probe's H3). Its comments
    are blanks, as the server reads them, its quotes PostgreSQL's (a comment before
    ``UESCAPE`` ended by a carriage return: the forty-first re-probe's O10; after a
    ``$a$--$a$`` string: the forty-second's Q10); decoded where each stands in code, and
    wherever its quote is found (a name in a string a function runs), one line each:
    :func:`unicode_readings` gives every reading."""
    from ..sources.sqlcomments import uncommented

    if "--" in sql or "/*" in sql:
        sql = uncommented(sql, True, "postgres")
    return "\n".join(dict.fromkeys((_UNICODE_IN_CODE.sub(_decoded_in_code, sql),
                                    _UNICODE_QUOTED.sub(_decoded, sql))))


def unicode_readings(sql: str) -> list[str]:
    """``sql`` with its Unicode-escaped names written out in each reading of its comments
    (:func:`~..sources.sqlcomments.readings`), each decoded where it stands in code and
    wherever its quote is found, or ``sql`` alone when it has none."""
    from ..sources.sqlcomments import readings

    if "&" not in sql:
        return [sql]
    return list(dict.fromkeys(decoded for text in readings(sql) for decoded in (
        _UNICODE_IN_CODE.sub(_decoded_in_code, text), _UNICODE_QUOTED.sub(_decoded, text))))


def _decoded_in_code(match: re.Match[str]) -> str:
    """A Unicode-escaped quote decoded (:func:`_decoded`); any other quote as it is."""
    return match.group(0) if match.group(1) is None else _decoded(match)


def _decoded(match: re.Match[str]) -> str:
    quote, body, escape = match.group(1), match.group(2), match.group(3) or "\\"
    esc = re.escape(escape)
    pattern = esc + r"(?:\+([0-9a-fA-F]{6})|([0-9a-fA-F]{4})|(" + esc + "))"

    def char(m: re.Match[str]) -> str:
        if m.group(3):
            return escape
        try:
            return chr(int(m.group(1) or m.group(2), 16))
        except (ValueError, OverflowError):
            return m.group(0)

    return quote + re.sub(pattern, char, body) + quote


#: A ``PRAGMA`` or ``CALL`` statement of one function: its keyword, its name (a schema before
#: it left out), its arguments.
_STATEMENT_CALL = re.compile(
    r'(pragma|call)\s+(?:[\w"`]+\s*\.\s*)?([\w"`]+)\s*(?:\((.*)\))?\s*;?\s*$',
    re.IGNORECASE | re.DOTALL)
#: One bare or quoted name (a ``PRAGMA``'s argument: ``index_info(IFK_EmployeeReportsTo)``).
_ONE_NAME = re.compile(r'\s*(?:(\w+)|"((?:[^"]|"")*)"|`([^`]*)`)\s*$')


def as_table_function(sql: str) -> str | None:
    """A ``PRAGMA`` or ``CALL`` statement of one function as the query of its table function
    (``PRAGMA index_info(IFK_EmployeeReportsTo)`` as ``SELECT * FROM
    pragma_index_info('IFK_EmployeeReportsTo')``, ``CALL pragma_table_info('Track')`` as
    ``SELECT * FROM pragma_table_info('Track')``), a bare name argument as its text, or None:
    the statement reads what the function reads, and was counted as no read where the
    function is counted (the thirty-seventh re-probe's M4, M5, M7)."""
    from ..sources.sqlite import explained

    match = _STATEMENT_CALL.match(explained(sql)[len("EXPLAIN "):])
    if match is None:
        return None
    keyword, name, args = match.group(1).lower(), match.group(2).strip('"`'), match.group(3)
    if keyword == "pragma" and not name.lower().startswith("pragma_"):
        name = "pragma_" + name
    args = args or ""
    one = _ONE_NAME.match(args)
    if one is not None and args.strip():
        text = next(g for g in one.groups() if g is not None).replace('""', '"')
        args = "'" + text.replace("'", "''") + "'"
    return f"SELECT * FROM {name}({args})"


#: PostgreSQL's functions that give a statistic or the size of the table named by their
#: argument (a ``regclass``, an oid, or a column of the catalogs: ``pg_stat_get_live_tuples(
#: 'employee'::regclass)`` gave employee's 8 rows, ``pg_stat_get_live_tuples(t.typrelid) FROM
#: pg_type t WHERE typname = 'employee'`` too, counted as no read: the thirty-sixth re-probe's
#: H4): no text names the table, so each counts as a read of every table, as the statistics
#: catalogs do.
#: Named anywhere, not only before a parenthesis: a comment may stand between the name and
#: its call (``pg_stat_get_live_tuples/**/(...)``, and the U&-escaped name: the thirty-ninth
#: re-probe's H6), and no honest query names them.
_STATISTICS_CALL = re.compile(
    r"(?<![\w$])(?:pg_stat_get_\w+|pg_(?:total_)?relation_size|pg_table_size"
    r"|pg_indexes_size|pg_relation_filenode|pg_relation_filepath|pg_sequence_last_value"
    # a sequence's value is its table's row count (DuckDB reads the persisted counter on a
    # fresh connection: ``currval('sec_seq')`` gave Secret's 5, the thirty-ninth's H7)
    r"|currval|lastval)"
    r"(?![\w$])", re.IGNORECASE)


def statistics_call(sql: str) -> bool:
    """Whether ``sql`` calls a function that gives a table's statistics (row count, size,
    a sequence's value): a read of every table, as no text names the one it reads."""
    texts = (sql, *unicode_readings(sql)) if "&" in sql else (sql,)
    return any(_STATISTICS_CALL.search(_INVISIBLE.sub("", text)) for text in texts)


def _tables_of(sql: str, dialect: str | None, engine_read: bool) -> set[str]:
    """:func:`tables_of` of a text without format characters."""
    import sqlglot
    from sqlglot import exp

    from .language import tree_tables, unwrap

    try:
        trees = [t for t in sqlglot.parse(sql, read=dialect) if t is not None]
    except Exception:
        words = _unaliased_words(sql, dialect) if engine_read else None
        return _unparsed_reads(words if words is not None else _words(sql))
    out: set[str] = set()
    for tree in trees:
        if isinstance(tree, exp.Command) and str(tree.this).lower() in ("explain", "profile"):
            inner = unwrap(sql if len(trees) == 1 else tree.sql(dialect=dialect))
            out |= tables_of(inner, dialect, engine_read) if inner.strip() else set()
            continue
        out |= tree_tables(tree)
    return out


def _unparsed_reads(words: set[str]) -> set[str]:
    """The words of a text no tree reads, with :data:`~.language.EVERY_TABLE` when one names a
    schema reader (:data:`~..sources.sqlfunctions.SCHEMA_READERS`): without a tree no one can
    tell its argument a literal, so it is taken for a name computed at run time (fail
    closed, as the guard's token reading takes every call)."""
    from ..sources.sqlfunctions import INDEX_READERS, SCHEMA_READERS
    from .language import EVERY_TABLE

    return words | {EVERY_TABLE} if words & (SCHEMA_READERS | INDEX_READERS) else words


def _words(text: str) -> set[str]:
    """Every word of ``text``, lower-cased: the tables of a text no parser reads."""
    return {w.lower() for w in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text)}


def _unaliased_words(sql: str, dialect: str | None) -> set[str] | None:
    """Every word of ``sql`` but a name given right after ``AS`` (an alias, a type: never a
    table read), by the engine's own lexer for DuckDB (its tokens are what DuckDB runs, so a
    comment or a string cannot pass for the ``AS``) and sqlglot's for the others, whose
    engine's account is whole (SQLite's authorizer watches the run). Strings and comments
    keep their words (``query('SELECT * FROM Track')`` reads Track), a quoted name its whole
    spelling too. None: no lexer read it."""
    tokens: list[tuple[bool, str, bool]] = []  # (an AS, the token's text, a quoted name)
    try:
        if dialect == "duckdb":
            import duckdb

            found = duckdb.tokenize(sql)
            raw = sql.encode()  # its offsets count UTF-8 bytes (the 32nd re-probe's H3, M1)
            at = [int(o) for o, _ in found] + [len(raw)]
            for (_, kind), a, b in zip(found, at, at[1:], strict=False):
                text = raw[a:b].decode(errors="replace").strip()
                quoted = len(text) > 1 and text[0] == text[-1] == '"'
                tokens.append((str(kind).endswith("keyword") and text.lower() == "as",
                               text[1:-1].replace('""', '"') if quoted else text, quoted))
        else:
            from sqlglot.dialects import Dialect

            tokens = [(t.token_type.name == "ALIAS", t.text, t.token_type.name == "IDENTIFIER")
                      for t in Dialect.get_or_raise(dialect).tokenize(sql)]
    except Exception:
        return None
    out: set[str] = set()
    for i, (is_as, text, quoted) in enumerate(tokens):
        if i and tokens[i - 1][0] and not is_as:
            continue
        out |= _words(text) | ({text.lower()} if quoted else set())
    return out
