"""Hostile statements in ``task: dml|ddl`` cases (issue 39 items 1 and 8): a task runs on
throwaway copies, so a statement that would reach past its copy (attaching the datasource or a
new file, ``VACUUM INTO``, extension loading, file-touching pragmas; on DuckDB also ``COPY ...
TO``, ``EXPORT DATABASE``, ``INSTALL``/``LOAD`` and file readers) is refused by the engine, the
case names the refusal, and nothing outside the copies changes: the datasource's checksum and
journal mode, the files of the suite's directory and of a directory outside it.

Each form runs a whole suite through pytest (pytester) on a real SQLite or DuckDB file; the
hostile statement stands in the prediction, the gold or a check."""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tests.support import dump, run_report, write_suite

ROOT = Path(__file__).resolve().parents[2]
#: The suite's own files a run may add (the report, Python's caches).
RUN_FILES = {"r.json", "__pycache__", ".pytest_cache"}

#: ``{db}``: the datasource's absolute path; ``{out}``: a directory outside the suite.
SQLITE_FORMS: dict[str, tuple[str, str]] = {
    "attach-uri-rw": ("ATTACH 'file:{db}?mode=rw' AS o; "
                      "INSERT INTO o.Genre (Name) VALUES ('pwned')", "ATTACH"),
    "attach-relative": ("ATTACH 'chinook.sqlite' AS o; "
                        "INSERT INTO o.Genre (Name) VALUES ('pwned')", "ATTACH"),
    "attach-wal": ("ATTACH '{db}' AS o; PRAGMA o.journal_mode = WAL", "ATTACH"),
    "attach-new-file": ("ATTACH '{out}/new.sqlite' AS n; CREATE TABLE n.t (x)", "ATTACH"),
    "attach-expression": ("ATTACH '{out}/' || 'expr.sqlite' AS n; CREATE TABLE n.t (x)",
                          "ATTACH"),
    "attach-memory-then-detach": ("ATTACH ':memory:' AS m; DETACH m", "ATTACH"),
    "vacuum-into": ("VACUUM INTO '{out}/copy.sqlite'", "VACUUM"),
    "load-extension": ("SELECT load_extension('{out}/evil')", "load_extension"),
    "temp-store-directory": ("PRAGMA temp_store_directory = '{out}'", "PRAGMA temp_store_directory"),
    "writable-schema": ("PRAGMA writable_schema = ON", "PRAGMA writable_schema"),
}

#: DuckDB: the datasource holds ``orders(id, total)``; ``{csv}`` is a file outside the suite.
#: Each form and how its reason starts: the copy's ``enable_external_access = false`` refuses
#: every file, and its locked configuration every setting that would lift it or write files.
FILES_OFF = "refused: Permission Error: Cannot access "
DUCKDB_FORMS: dict[str, tuple[str, str]] = {
    "attach": ("ATTACH '{db}' AS o; INSERT INTO o.orders VALUES (9, 1)", FILES_OFF),
    "attach-relative": ("ATTACH 'shop.duckdb' AS o; INSERT INTO o.orders VALUES (9, 1)",
                        FILES_OFF),
    "attach-new-file": ("ATTACH '{out}/new.duckdb' AS n; CREATE TABLE n.t (x INTEGER)",
                        FILES_OFF),
    "copy-to": ("COPY (SELECT * FROM orders) TO '{out}/rows.csv'", FILES_OFF),
    "copy-from": ("COPY orders FROM '{csv}'", FILES_OFF),
    "export-database": ("EXPORT DATABASE '{out}/export'", FILES_OFF),
    "install": ("INSTALL httpfs", FILES_OFF),
    "install-elsewhere": ("SET extension_directory = '{out}'; INSTALL json",
                          "refused: Invalid Input Error: Cannot change configuration option "
                          "\"extension_directory\""),
    "load": ("LOAD '{out}/evil.duckdb_extension'",
             "refused: Permission Error: Loading external extensions is disabled"),
    "read-file": ("CREATE TABLE leak AS SELECT * FROM read_csv('{csv}')", FILES_OFF),
    "glob": ("CREATE TABLE leak AS SELECT * FROM glob('{out}/*')", FILES_OFF),
    "persistent-secret": ("CREATE PERSISTENT SECRET s (TYPE S3, KEY_ID 'k', SECRET 's')",
                          FILES_OFF),
    "temp-directory": ("SET temp_directory = '{out}'",
                       "refused: Invalid Input Error: Cannot change configuration option "
                       "\"temp_directory\" - the configuration has been locked"),
    "external-access-on": ("SET enable_external_access = true",
                           "refused: Invalid Input Error: Cannot change configuration option "
                           "\"enable_external_access\""),
    "unlock": ("SET lock_configuration = false", "refused: Invalid Input Error: Cannot "
               "change configuration option \"lock_configuration\""),
    # DuckDB 2.0.1 aborted the whole worker on this one before the configuration was locked
    "log-to-file": ("CALL enable_logging(storage = 'file', storage_path = '{out}/log')",
                    "refused: Invalid Input Error: Cannot change configuration option "
                    "\"enable_logging\""),
}


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def listing(*dirs: Path) -> set[str]:
    """Every file and directory under ``dirs`` but those a run of pytest writes itself."""
    return {str(p) for d in dirs for p in d.rglob("*")
            if not RUN_FILES & set(p.relative_to(d).parts)}


def journal_mode(path: Path) -> str:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return str(conn.execute("PRAGMA journal_mode").fetchone()[0])
    finally:
        conn.close()


@pytest.fixture
def outside(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory outside the suite that a hostile statement aims at."""
    out = tmp_path_factory.mktemp("outside")
    (out / "rows.csv").write_text("id,total\n9,1\n")
    return out


def fill(text: str, db: Path, outside: Path) -> str:
    return text.format(db=db, out=outside, csv=outside / "rows.csv")


def run_untouched(pytester: pytest.Pytester, db: Path, outside: Path,
                  cases: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each case's record, after asserting that the run changed nothing outside its copies:
    the datasource's bytes (and, for SQLite, its journal mode) and the files of the suite's
    directory and of ``outside``."""
    pytester.makefile(".yaml", test_t=dump({"kind": "sql", "datasource": "shop",
                                            "cases": cases}))
    before = (sha256(db), listing(pytester.path, outside))
    mode = journal_mode(db) if db.suffix == ".sqlite" else None
    _, report = run_report(pytester, "-p", "no:cacheprovider", fresh=True)
    assert (sha256(db), listing(pytester.path, outside)) == before
    if mode is not None:
        assert journal_mode(db) == mode
    return report.by_id


GENRES = {"query": "SELECT count(*) FROM Genre", "rows": [[25]]}
NO_OP = "UPDATE Genre SET Name = Name"
#: What a DML/DDL task does, harmless pragmas included: it keeps working under the refusals.
LEGITIMATE = ["PRAGMA foreign_keys = ON", "SAVEPOINT s",
              "CREATE TABLE note (id INTEGER PRIMARY KEY, track INTEGER REFERENCES Track)",
              "INSERT INTO note (track) SELECT TrackId FROM Track WHERE GenreId = 1",
              "CREATE INDEX ix_note ON note(track)", "CREATE VIEW v_note AS SELECT * FROM note",
              "CREATE TRIGGER tr AFTER DELETE ON note BEGIN SELECT 1; END",
              "ALTER TABLE note ADD COLUMN seen INTEGER", "RELEASE s",
              "CREATE TEMP TABLE scratch AS SELECT 1 AS x", "PRAGMA user_version = 3",
              "UPDATE note SET seen = 1", "DELETE FROM note WHERE id > 1000"]


def test_sqlite_task_statements_never_leave_the_copy(pytester: pytest.Pytester,
                                                     outside: Path) -> None:
    """Every form in the prediction fails with its refusal named; in the gold the case is the
    suite's error; in a check the check fails with it; legitimate statements pass."""
    db = pytester.path / "chinook.sqlite"
    shutil.copyfile(ROOT / "example_suite" / "data" / "chinook.sqlite", db)
    write_suite(pytester.path, {"datasources": {"shop": {
        "type": "sqlite", "path": "chinook.sqlite", "writable": "sandbox"}}})
    work = "; ".join(LEGITIMATE)
    cases = [{"id": form, "task": "dml", "gold": NO_OP, "predicted": fill(text, db, outside),
              "checks": [GENRES]} for form, (text, _) in SQLITE_FORMS.items()]
    cases += [
        {"id": "in-gold", "task": "dml", "predicted": NO_OP, "checks": [GENRES],
         "gold": fill(SQLITE_FORMS["attach-uri-rw"][0], db, outside)},
        {"id": "in-check", "task": "dml", "gold": NO_OP, "predicted": NO_OP,
         "checks": [{"query": f"VACUUM INTO '{outside}/check.sqlite'", "rows": []}]},
        {"id": "legitimate", "task": "ddl", "gold": work, "predicted": work,
         "checks": [{"query": "SELECT count(*), sum(seen) FROM note", "rows": [[1000, 1000]]},
                    {"query": "SELECT * FROM pragma_table_info('note')", "compare": "gold"},
                    {"schema": {"tables": {"note": ["seen"]}, "indexes": ["ix_note"]}}]}]
    got = run_untouched(pytester, db, outside, cases)
    for form, (_, what) in SQLITE_FORMS.items():
        assert got[form]["outcome"] == "failed", form
        assert got[form]["reason"].startswith(f"refused: {what} is not allowed in a task"), \
            (form, got[form]["reason"])
    assert got["attach-uri-rw"]["reason"] == \
        "refused: ATTACH is not allowed in a task (it would reach files outside the copy)"
    assert got["in-gold"]["outcome"] == "error"
    assert "the gold failed on its copy: refused: ATTACH is not allowed in a task (it would " \
        "reach files outside the copy)" in got["in-gold"]["error"]
    assert got["in-check"]["outcome"] == "failed"
    assert got["in-check"]["reason"].startswith(
        "1 of 1 check failed: rows of VACUUM INTO '"), got["in-check"]["reason"]
    assert got["in-check"]["reason"].endswith(
        ": refused: VACUUM is not allowed in a task (it would reach files outside the copy)")
    assert got["legitimate"]["outcome"] == "passed", got["legitimate"]


def test_duckdb_task_statements_never_leave_the_copy(pytester: pytest.Pytester,
                                                     outside: Path) -> None:
    duckdb = pytest.importorskip("duckdb")
    db = pytester.path / "shop.duckdb"
    conn = duckdb.connect(str(db))
    conn.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, total DOUBLE)")
    conn.execute("INSERT INTO orders VALUES (1, 30), (2, 12), (3, 7)")
    conn.close()
    write_suite(pytester.path, {"datasources": {"shop": {
        "type": "duckdb", "path": "shop.duckdb", "writable": "sandbox"}}})
    got = run_untouched(pytester, db, outside, [
        {"id": form, "task": "dml", "gold": "UPDATE orders SET total = total",
         "predicted": fill(text, db, outside),
         "checks": [{"query": "SELECT count(*) FROM orders", "rows": [[3]]}]}
        for form, (text, _) in DUCKDB_FORMS.items()])
    for form, (_, reason) in DUCKDB_FORMS.items():
        assert got[form]["outcome"] == "failed", form
        assert got[form]["reason"].startswith(reason), (form, got[form]["reason"])
