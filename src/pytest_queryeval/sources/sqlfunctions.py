"""The names of SQL functions the statement guard refuses (:mod:`.sqlguard`): those with
effects outside the transaction, those that run SQL given as text, read a table named by their
argument or open a file.

Why a module of their own: the guard reads them twice, in sqlglot's tree and, for a text
sqlglot cannot parse, in its tokens; the token reading had none of the effects nor the table
readers, so DuckDB's ``SELECT x'AB', * FROM checkpoint()`` (a blob literal sqlglot's DuckDB
grammar refuses) or ``... FROM pragma_storage_info('Track') `p``` (a backtick name) passed the
guard and ran (issue 58, the twenty-seventh re-probe's H2 and H3). One list, read by both.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator, Sequence
from typing import Any

#: Functions with side effects outside the transaction (a read-only transaction does not stop
#: ``pg_terminate_backend``), or that read/write server files.
FORBIDDEN_FUNCTIONS = frozenset({
    "pg_terminate_backend", "pg_cancel_backend", "pg_reload_conf", "pg_rotate_logfile",
    "set_config", "pg_advisory_lock", "pg_advisory_xact_lock", "pg_advisory_lock_shared",
    "lo_import", "lo_export", "lo_unlink", "lo_create", "pg_read_file", "pg_read_binary_file",
    "pg_ls_dir", "pg_stat_file", "dblink", "dblink_exec", "pg_switch_wal",
    "pg_create_restore_point", "pg_promote", "pg_logical_emit_message", "nextval", "setval",
    "load_extension", "writefile", "readfile", "edit", "fts3_tokenizer",
    # effects that outlive the rolled-back read-only transaction: session advisory locks stay
    # held by the pooled connection, a replication slot retains WAL until the disk fills,
    # statistics resets and backup/replay controls are not transactional
    "pg_try_advisory_lock", "pg_try_advisory_lock_shared", "pg_advisory_unlock",
    "pg_advisory_unlock_shared", "pg_advisory_unlock_all", "pg_create_physical_replication_slot",
    "pg_create_logical_replication_slot", "pg_drop_replication_slot",
    "pg_copy_physical_replication_slot", "pg_copy_logical_replication_slot",
    "pg_replication_slot_advance", "pg_replication_origin_create", "pg_replication_origin_drop",
    "pg_replication_origin_advance", "pg_replication_origin_session_setup", "pg_stat_reset",
    "pg_stat_reset_shared", "pg_stat_reset_single_table_counters",
    "pg_stat_reset_single_function_counters", "pg_stat_reset_slru",
    "pg_stat_reset_replication_slot", "pg_stat_reset_subscription_stats",
    "pg_stat_statements_reset", "pg_log_backend_memory_contexts", "pg_backup_start",
    "pg_backup_stop", "pg_start_backup", "pg_stop_backup", "pg_wal_replay_pause",
    "pg_wal_replay_resume", "pg_file_write", "pg_file_rename", "pg_file_unlink", "pg_file_sync",
    # DuckDB's table functions that write the database file (``SELECT * FROM checkpoint()``,
    # the seventeenth re-probe's H5)
    "checkpoint", "force_checkpoint",
    # state of the connection or the database instance that outlives the query: the seed of
    # ``random()`` (DuckDB and PostgreSQL ``setseed``, which stayed on the worker's shared
    # connection and changed a later case's result: the thirty-third re-probe's H5), the
    # log, the profiler, the parser's grammar extensions and the external resources of
    # DuckDB 2 (most refused by ``lock_configuration`` as well, not all: ``write_log`` and
    # ``truncate_duckdb_logs`` ran)
    "setseed", "write_log", "truncate_duckdb_logs", "enable_logging", "disable_logging",
    "enable_profiling", "disable_profiling", "add_grammar_extension",
    "remove_grammar_extension", "create_external_resource", "register_external_resource",
    "register_external_resource_type", "deregister_external_resource",
    "destroy_external_resource",
})

#: Functions of one dialect that run SQL given to them as text, or read tables named by a
#: value computed at run time (DuckDB's ``query('SELECT * FROM Emp' || 'loyee')`` and
#: ``query_table(...)``): no guard reads the inner statement, and no count of the tables an
#: agent read (the binder's account) sees the table. PostgreSQL's are :mod:`.pgguard`'s.
SQL_TEXT_FUNCTIONS: dict[str, frozenset[str]] = {
    # json_serialize_plan binds and optimizes the text it is given: a count folded from the
    # table's statistics came back in the plan (``"value":3503``, the thirty-seventh
    # re-probe's H7)
    "duckdb": frozenset({"query", "query_table", "json_execute_serialized_sql",
                         "json_serialize_plan"}),
}
#: Table functions and table macros of one dialect that read a table named by their argument
#: (DuckDB's ``FROM histogram_values(Employee, FirstName)`` gave every first name, and
#: ``pragma_storage_info('Employee')`` each column's minimum and maximum): the binder's account
#: of the tables read does not show that table (``duckdb_table_sample('Employee')``, the rows
#: DuckDB keeps as the table's sample, neither). Refused wherever it is called, whatever wraps
#: it (``FROM LATERAL pragma_storage_info('Track')`` ran: the twenty-ninth re-probe's H2),
#: except a name of :data:`READER_AGGREGATES` in a query's expression clause; in a text
#: sqlglot cannot parse, wherever it is called (no tree tells where: fail closed).
TABLE_READERS: dict[str, frozenset[str]] = {
    "duckdb": frozenset({"duckdb_table_sample", "histogram", "histogram_values",
                         "pragma_storage_info"}),
}
#: Catalog relations (tables, views and table functions) that carry a row count or another
#: statistic of each table, or a sequence's value: DuckDB's ``duckdb_tables()`` (its
#: ``estimated_size``, also its view ``duckdb_tables``), ``pg_class`` (``reltuples``) and
#: ``duckdb_sequences()``; SQLite's ``sqlite_stat1`` to ``sqlite_stat4`` (after
#: ``ANALYZE``), ``sqlite_sequence`` (an ``AUTOINCREMENT`` table's last id) and ``dbstat``
#: (each table's cells); PostgreSQL's statistics views. No text names the table whose count
#: they give (``WHERE table_name = 'Track'``, or no filter at all), so a read of one counts
#: as a read of every forbidden table, and is refused under ``enforce`` when a table is
#: protected (the thirty-third re-probe's H2: Track's 3,503 rows and Employee's 8 were
#: served). The catalogs that list tables and columns without statistics stay honest reads:
#: ``information_schema``, ``duckdb_columns()``, ``sqlite_master``/``sqlite_schema``.
STATISTICS_CATALOGS = frozenset({
    "duckdb_tables", "duckdb_sequences", "pg_class",
    "sqlite_stat1", "sqlite_stat2", "sqlite_stat3", "sqlite_stat4", "sqlite_sequence", "dbstat",
    "pg_stat_all_tables", "pg_stat_user_tables", "pg_stat_sys_tables",
    "pg_stat_xact_all_tables", "pg_stat_xact_user_tables", "pg_stat_xact_sys_tables",
    "pg_statio_all_tables", "pg_statio_user_tables", "pg_statio_sys_tables", "pg_stats",
    "pg_stats_ext", "pg_stats_ext_exprs", "pg_statistic", "pg_statistic_ext_data",
    "pg_sequences", "pg_sequence",
})
#: Table functions that read the schema (or, for the checks, the rows) of the one table named
#: by their first argument: DuckDB's ``pragma_show('Track')`` and ``pragma_table_info``,
#: SQLite's table-valued pragmas. Counted as a read of that table, as ``FROM (SHOW Track)``
#: is; an argument that is no string literal (``pragma_table_info(m.name)``, SQLite's hidden
#: ``arg`` column in a ``WHERE``) names every table: counted as every forbidden table (the
#: thirty-third re-probe's M1: each counted none, and was served under ``enforce``).
SCHEMA_READERS = frozenset({
    "pragma_show", "pragma_table_info", "pragma_table_xinfo", "pragma_index_list",
    "pragma_foreign_key_list", "pragma_foreign_key_check", "pragma_integrity_check",
    "pragma_quick_check", "pragma_storage_info",
})
#: Schema readers whose argument names an index, not its table (SQLite's
#: ``pragma_index_info('IFK_EmployeeReportsTo')`` gives a column of Employee): no text names
#: the table, so every forbidden table counts.
INDEX_READERS = frozenset({"pragma_index_info", "pragma_index_xinfo"})
#: Table readers' names that are also an aggregate of a column (DuckDB's ``histogram(Name)``
#: in a select list reads only what the query names).
READER_AGGREGATES = frozenset({"histogram"})
#: Functions of one dialect that open a file or a URL. DuckDB with external access off still
#: lets a query open its own database file: ``read_duckdb('chinook.duckdb', table_name =
#: 'Employee')`` read every employee, ``read_blob`` gave the whole file, and ``read_csv`` of
#: it as UTF-16 text (``delim='|', quote='', encoding='utf-16'``) gave the employees' names;
#: ``read_json_objects``, ``sniff_csv`` and ``glob`` open it too. None of these is a table
#: the binder counts. The list is DuckDB 2.0.1's table functions whose first parameter is a
#: path (``SELECT function_name, parameters FROM duckdb_functions()``: ``path``, ``paths``,
#: ``file``, ``pattern``); :data:`FILE_READER_NAMES` adds every name an extension's
#: reader has or may have (``st_read``, ``iceberg_scan``, ``delta_scan``, ``read_xlsx``).
#: tests/agents/test_file_reads.py checks the list against the installed DuckDB.
FILE_READERS: dict[str, frozenset[str]] = {
    "duckdb": frozenset({
        "read_blob", "read_csv", "read_csv_auto", "read_duckdb", "read_json", "read_json_auto",
        "read_json_objects", "read_json_objects_auto", "read_ndjson", "read_ndjson_auto",
        "read_ndjson_objects", "read_parquet", "read_single_csv_file",
        "read_single_json_file", "read_single_parquet_file", "read_text", "parquet_scan",
        "parquet_bloom_probe", "parquet_file_metadata", "parquet_full_metadata",
        "parquet_kv_metadata", "parquet_metadata", "parquet_page_index", "parquet_schema",
        "sniff_csv", "glob", "which_secret",
    }),
}
#: Name rules of the same (a function of no DuckDB here may come with an extension): a
#: ``read_*`` or ``*_scan`` function, the Parquet, Iceberg, Delta, DuckLake, Lance, Vortex,
#: Avro, Excel and spatial readers, and the scanners of other databases' files.
FILE_READER_NAMES: dict[str, re.Pattern[str]] = {
    "duckdb": re.compile(
        r"(?:read_|parquet_|iceberg_|delta_|ducklake_|lance_|vortex_|avro_|excel_|st_read"
        r"|sqlite_|postgres_|mysql_|odbc_).*|.*_scan", re.ASCII),
}


def reads_a_file(name: str, dialect: str | None) -> bool:
    """Whether the function ``name`` of ``dialect`` opens a file or a URL (see
    :data:`FILE_READERS`)."""
    name = plain_name(name)
    rule = FILE_READER_NAMES.get(dialect or "")
    return name in FILE_READERS.get(dialect or "", frozenset()) or (
        rule is not None and rule.fullmatch(name) is not None)


#: Tokens that may stand between a function's name and its ``(``: the closing quote of a
#: name sqlglot's DuckDB grammar does not read as quoted (a backtick, a ``]``).
_CLOSERS = frozenset({"`", "]", '"'})
#: Characters around a name that are not its own: quotes and the invisible characters DuckDB
#: reads as a blank or nothing (``\ufeffcheckpoint``).
_AROUND = "`\"[] \t\r\n\ufeff\u200b\u200c\u200d\u2060\u00ad"


def plain_name(name: str) -> str:
    """A called name as DuckDB reads it: its quotes and blanks around it aside, every format
    character (Unicode category Cf) left out, lower-cased. DuckDB reads U+200B, U+2060 and
    U+FEFF as blanks, so ``checkpoint\u200b()`` and ``\u200bread_blob(...)`` call
    ``checkpoint`` and ``read_blob``, which the lists above name without them (issue 58, the
    twenty-eighth re-probe's H2: sqlglot's tree kept them in the name, and the guard let the
    calls run). One reading for the tree's names and the tokens' (:func:`called_calls`)."""
    if name.isascii():
        return name.strip(_AROUND).lower()
    return "".join(c for c in name if unicodedata.category(c) != "Cf").strip(_AROUND).lower()


def format_character(name: str) -> bool:
    """Whether ``name`` holds a format character (Unicode category Cf): no honest name does,
    and the engines read some as blanks and others as a name's own, so such a name is not
    the one the guard reads (the guard refuses it, fail closed)."""
    return not name.isascii() and any(unicodedata.category(c) == "Cf" for c in name)


def called_calls(tokens: Sequence[Any]) -> Iterator[tuple[str, int]]:
    """The calls in sqlglot's ``tokens`` of a text it could not parse, as each name (a word,
    quoted or not, read as :func:`plain_name` reads it) and the index of its ``(``: each name
    whose next token, past a closing quote, is ``(``. Read without a tree, a name is taken as
    called wherever a ``(`` follows it (fail closed)."""
    called: list[tuple[str, int]] = []
    after: int | None = None  # the token after each, past closing quotes: one pass back
    for i in range(len(tokens) - 1, -1, -1):
        tok = tokens[i]
        name = plain_name(str(tok.text))
        if name and after is not None and tokens[after].token_type.name == "L_PAREN":
            called.append((name, after))
        if tok.text not in _CLOSERS:
            after = i
    yield from reversed(called)
