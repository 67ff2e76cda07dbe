"""Hostile SQL, by category (:mod:`.corpus` says what each category expects).

One list for every SQL engine: a statement another engine does not know ends as that engine's
error, which every category accepts."""

from __future__ import annotations

from .corpus import DEEP

SQL: dict[str, list[str]] = {
    "writes": [
        "INSERT INTO Genre VALUES (999, 'x')",
        "UPDATE Genre SET Name = 'x'",
        "DELETE FROM Genre",
        "DROP TABLE Genre",
        "CREATE TABLE pwned (a int)",
        "SELECT 1; DELETE FROM Genre",
        "WITH d AS (DELETE FROM Genre RETURNING *) SELECT * FROM d",
        "/* a */ dRoP tAbLe Genre",
        "SELECT * FROM query('DEL' || 'ETE FROM Genre')",  # DuckDB: SQL as text (issue 58)
        # issue 58, the tenth re-probe: heads an agent's statement reader once passed as reads
        "BEGIN; DELETE FROM Genre; COMMIT;",
        "WITH RECURSIVE r AS (SELECT 1) DELETE FROM Genre",
        "WITH a AS MATERIALIZED (SELECT 1) DELETE FROM Genre",
        "EXPLAIN ANALYZE DELETE FROM Genre",
        "PREPARE p AS DELETE FROM Genre; EXECUTE p;",
        "SAVEPOINT a; DELETE FROM Genre;",
        "USE chinook; DELETE FROM Genre",
        # the eleventh: a head behind an empty part or a format character (SQLite and DuckDB
        # run the first two, DuckDB all four)
        "/**/;DELETE FROM Genre",
        "\ufeffDELETE FROM Genre",
        "\u200bDELETE FROM Genre",
        "\u2060DELETE FROM Genre",
    ],
    "config": [
        "PRAGMA cache_size = 7",
        "PRAGMA query_only = OFF",
        "SET threads = 7",
        "SET memory_limit = '100GB'",
        "SET enable_external_access = true",
        "SET work_mem = '1GB'",
        "SET search_path = pwned",
        "SELECT set_config('work_mem', '1GB', false)",
        "RESET ALL",
    ],
    "engine_writes": [
        "INSERT INTO Genre VALUES (999, 'x')",
        "UPDATE Genre SET Name = 'x'",
        "DELETE FROM Genre",
        "DROP TABLE Genre",
        "CREATE TABLE pwned (a int)",
    ],
    "files": [
        "SELECT * FROM read_csv('{file}')",
        "SELECT * FROM read_text('{file}')",
        "SELECT * FROM glob('{dir}/*')",
        # DuckDB: every function that opens a file is refused by the guard (issue 58, H7)
        "SELECT * FROM read_json_objects('{file}', format='newline_delimited')",
        "SELECT * FROM sniff_csv('{file}')",
        "SELECT * FROM '{file}'",
        "SELECT pg_read_file('{file}')",
        "SELECT lo_import('{file}')",
        "SELECT readfile('{file}')",
        "ATTACH '{file}' AS pwned",
        "COPY Genre TO '{out}'",
        "VACUUM INTO '{out}'",
        "SELECT load_extension('{file}')",
    ],
    "deep": [
        "SELECT " + "(" * DEEP + "1" + ")" * DEEP,
        "SELECT " + "1+" * DEEP + "1",
        "SELECT " + "(SELECT " * 2_000 + "1" + ")" * 2_000,
    ],
    "huge_range": [
        "SELECT count(*) FROM Genre a, Genre b, Genre c, Genre d, Genre e, Genre f, Genre g",
        "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT count(*) FROM r",
    ],
    "huge_value": [
        "SELECT length(zeroblob(2000000000))",
        "SELECT length(group_concat(hex(zeroblob(1000000)))) FROM Genre a, Genre b",
        "SELECT length(repeat('x', 2000000000))",
        "SELECT length(string_agg(repeat('x', 1000000), '')) FROM generate_series(1, 3000)",
    ],
    "crash": [],
}
