"""Statements a predicted query must never get through (and some it must), per engine."""

from __future__ import annotations

#: Refused before reaching any engine (table names are lower case: SQLite ignores case).
COMMON = [
    "INSERT INTO genre VALUES (999, 'x')",
    "UPDATE genre SET name = 'x'",
    "DELETE FROM genre",
    "MERGE INTO genre g USING genre s ON g.name = s.name WHEN MATCHED THEN DELETE",
    "DROP TABLE genre",
    "CREATE TABLE pwned (a int)",
    "ALTER TABLE genre ADD COLUMN pwned int",
    "TRUNCATE genre",
    "VACUUM",
    "SELECT 1; DROP TABLE genre",
    "SELECT * FROM genre; DELETE FROM genre",
    "WITH x AS (SELECT 1) DELETE FROM genre",
    "WITH d AS (DELETE FROM genre RETURNING *) SELECT * FROM d",
    "/* just a comment */ DROP TABLE genre",
    "-- comment\nDELETE FROM genre",
    "SELECT * INTO pwned FROM genre",
    "SELECT * FROM genre FOR UPDATE",
    "BEGIN",
    "COMMIT",
    "",
]

SQLITE = [
    *COMMON,
    "ATTACH DATABASE ':memory:' AS pwned",
    "DETACH DATABASE main",
    "PRAGMA user_version = 7",
    "PRAGMA journal_mode = WAL",
    "VACUUM INTO '/tmp/queryeval-pwned.sqlite'",
    "REPLACE INTO genre VALUES (1, 'x')",
    "INSERT OR REPLACE INTO genre VALUES (1, 'x')",
    "REINDEX",
]

POSTGRES = [
    *COMMON,
    "SELECT pg_terminate_backend(pg_backend_pid())",
    "SELECT set_config('default_transaction_read_only', 'off', false)",
    "SELECT nextval('x')",
    "COPY genre TO '/tmp/queryeval-pwned.csv'",
    "GRANT ALL ON genre TO PUBLIC",
    "SET default_transaction_read_only = off",
    "LOCK TABLE genre",
    "CALL pwned()",
    "DO $$ BEGIN DELETE FROM genre; END $$",
    "EXPLAIN ANALYZE DELETE FROM genre",
    # effects that outlive a rolled-back transaction
    "SELECT pg_try_advisory_lock(1)",
    "SELECT pg_create_logical_replication_slot('s', 'test_decoding')",
    "SELECT pg_stat_reset()",
]

#: Writes the *connection* must stop even when the guard is bypassed (``trusted=True``).
SQLITE_RAW_WRITES = [
    "INSERT INTO genre VALUES (999, 'x')",
    "UPDATE genre SET name = 'x'",
    "DELETE FROM genre",
    "DROP TABLE genre",
    "CREATE TABLE pwned (a int)",
    "PRAGMA user_version = 7",
]
POSTGRES_RAW_WRITES = [
    "INSERT INTO genre VALUES (999, 'x')",
    "UPDATE genre SET name = 'x'",
    "DELETE FROM genre",
    "DROP TABLE genre",
    "CREATE TABLE pwned (a int)",
    "WITH d AS (DELETE FROM genre RETURNING *) SELECT * FROM d",
    "SELECT * INTO pwned FROM genre",
    "TRUNCATE genre",
]

#: PostgreSQL-specific queries the guard must let through (and the server runs).
POSTGRES_ALLOWED = [
    "SELECT name::text FROM artist WHERE name ILIKE '%ac%'",
    "SELECT DISTINCT ON (artist_id) artist_id, title FROM album ORDER BY artist_id, title",
    "SELECT * FROM generate_series(1, 3) AS g(x)",
    "SELECT date_trunc('month', invoice_date), sum(total) FROM invoice GROUP BY 1",
    "SELECT name, rank() OVER (ORDER BY name) FROM genre",
    "SELECT count(*) FILTER (WHERE total > 5) FROM invoice",
    "SELECT a.name, t.n FROM artist a, LATERAL (SELECT count(*) AS n FROM album b "
    "WHERE b.artist_id = a.artist_id) t",
    "SELECT '{\"a\": 1}'::jsonb ->> 'a'",
    "SELECT pg_sleep(0)",
    "SELECT 1 WHERE EXISTS (SELECT 1 FROM genre)",
]

DUCKDB = [
    *COMMON,
    "ATTACH 'pwned.duckdb' AS pwned",
    "DETACH chinook",
    "INSTALL httpfs",
    "LOAD httpfs",
    "COPY genre TO 'pwned.csv'",
    "EXPORT DATABASE 'pwned'",
    "SET enable_external_access = true",
    "RESET lock_configuration",
    "PRAGMA enable_profiling",
    "CHECKPOINT",
    "USE pwned",
    "CREATE SECRET s (TYPE s3, KEY_ID 'x', SECRET 'y')",
    "INSERT OR REPLACE INTO genre VALUES (1, 'x')",
]

#: What the DuckDB *connection* must stop even when the guard is bypassed (``trusted=True``):
#: writes (read_only=True), then file, network and extension access and configuration changes
#: (enable_external_access=false, lock_configuration=true).
DUCKDB_RAW = [
    "INSERT INTO genre VALUES (999, 'x')",
    "UPDATE genre SET name = 'x'",
    "DELETE FROM genre",
    "DROP TABLE genre",
    "CREATE TABLE pwned (a int)",
    "COPY genre TO 'pwned.csv'",
    "ATTACH 'pwned.duckdb' AS pwned",
    "INSTALL httpfs",
    "LOAD httpfs",
    "SET enable_external_access = true",
    "SET memory_limit = '100GB'",
    "SELECT * FROM read_csv('/etc/passwd')",
]

#: Queries the guard lets through but the connection refuses: a SELECT reaching a file.
DUCKDB_FILE_READS = [
    "SELECT * FROM read_csv('/etc/passwd')",
    "SELECT * FROM read_text('/etc/passwd')",
    "SELECT * FROM glob('/etc/*')",
    "SELECT * FROM read_blob('/etc/passwd')",
    "SELECT * FROM read_parquet('https://example.invalid/x.parquet')",
]
