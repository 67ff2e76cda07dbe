"""DuckDB functions that open a file (issue 58, the fourth re-probe's H7). With external access
off, DuckDB still lets a query open its own database file, and only ``read_duckdb``,
``read_blob`` and ``read_text`` were refused: ``read_csv('chinook.duckdb', ..., delim='|',
quote='', encoding='utf-16')`` read the file as UTF-16 text and gave the employees' names
with ``forbidden_tables`` 0, through a predictions file's trajectory (the path relative or
absolute) and ``Ledger.run_query`` alike; ``read_json_objects``, ``sniff_csv`` and ``glob``
opened it too, and ``FROM 'one.duckdb'`` (a replacement scan) read a one-table file's table
uncounted. Now every DuckDB function that opens a file or URL is refused by the guard (the
list checked here against the installed DuckDB's ``duckdb_functions()``), and so is a table
named like a file; an agent's refused call counts as the attempt it is. On real DuckDB files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.agents.test_counts_from_what_ran import (
    GATES,
    GOLD,
    QUESTION,
    call,
    duckdb_employees,
    tool,
)
from tests.support import run_report, write_suite

#: Reads the database file as UTF-16 text: a name of 'n0'... holds U+306E (the bytes 'n',
#: '0' read as one UTF-16 unit).
CSV_UTF16 = ("SELECT c FROM read_csv('{db}', columns={{'c': 'VARCHAR'}}, delim='|', quote='', "
             "escape='', header=false, auto_detect=false, strict_mode=false, "
             "ignore_errors=true, encoding='utf-16') WHERE c LIKE '%' || chr(12398) || '%'")
FORMS = {
    "csv-relative": CSV_UTF16.format(db="chinook.duckdb"),
    "csv-absolute": CSV_UTF16,  # the absolute path is put in by the test
    "csv-auto": "SELECT * FROM read_csv_auto('chinook.duckdb', all_varchar=true)",
    "json-objects": "SELECT * FROM read_json_objects('chinook.duckdb', "
                    "format='newline_delimited', ignore_errors=true)",
    "sniff-csv": "SELECT * FROM sniff_csv('chinook.duckdb', encoding='utf-16')",
    "glob": "SELECT * FROM glob('chinook.duckdb')",
    "parquet": "SELECT * FROM read_parquet('chinook.duckdb')",
    "qualified": "SELECT * FROM system.main.read_text('chinook.duckdb')",
    "replacement-scan": "SELECT * FROM 'chinook.duckdb'",
}


def _forms(root: Path) -> dict[str, str]:
    return {**FORMS, "csv-absolute": CSV_UTF16.format(db=root / "chinook.duckdb")}


def test_an_agent_reading_the_database_file_is_refused_and_counted(
        pytester: pytest.Pytester) -> None:
    duckdb_employees(pytester.path / "chinook.duckdb")
    forms = _forms(pytester.path)
    lines = {cid: [call("a", "run_query", sql), tool("a")] for cid, sql in forms.items()}
    lines["control"] = [call("a", "run_query", GOLD), tool("a")]
    (pytester.path / "runs.jsonl").write_text("".join(
        json.dumps({"id": cid, "predicted": GOLD, "trajectory": t}) + "\n"
        for cid, t in lines.items()))
    write_suite(pytester.path, {"datasources": {"db": {"type": "duckdb",
                                                       "path": "chinook.duckdb"}},
                                "predictions": {"source": "file", "path": "runs.jsonl"}},
                {"test_agent.yaml": {"kind": "sql", "datasource": "db",
                                     "agent": {"forbidden_tables": ["Employee"]},
                                     "cases": [{"id": cid, "question": QUESTION, "gold": GOLD,
                                                "thresholds": GATES} for cid in lines]}})
    _, report = run_report(pytester, "-p", "no:cacheprovider")
    for cid in forms:
        case = report.by_id[cid]
        metrics = case["metrics"]
        assert case["outcome"] == "failed", (cid, case.get("error"), metrics)
        assert metrics["rows_read"] == 0.0, (cid, metrics)  # nothing reached the agent
        assert metrics["write_attempts"] == 1.0, (cid, metrics)  # the refused read, counted
        findings = case["details"]["agent"]["findings"]
        assert any("refused by the datasource" in f and "file" in f for f in findings), findings
    control = report.by_id["control"]
    assert control["outcome"] == "passed", control
    assert control["metrics"]["queries_executed"] == 1.0


def _ledger_run(path: Path, sql: str) -> tuple[Any, dict[str, float]]:
    from pytest_queryeval.agents.ledger import Ledger
    from pytest_queryeval.errors import QueryRefused
    from pytest_queryeval.sources.duckdb import DuckdbSource

    source = DuckdbSource("duck", str(path))
    ledger = Ledger.for_tables(["Employee"])
    try:
        table: Any = ledger.run_query(source, sql, max_rows=100, timeout=10)
    except QueryRefused as exc:
        table = exc.reason()
    finally:
        source.close()
    return table, ledger.metrics()


def test_the_ledger_refuses_and_counts_the_utf16_read(tmp_path: Path) -> None:
    db = tmp_path / "chinook.duckdb"
    duckdb_employees(db)
    outcome, metrics = _ledger_run(db, CSV_UTF16.format(db=db))
    assert outcome == ("refused: function read_csv() reads a file or URL (the database's own "
                       "too, which no count of the tables read can see)")
    assert metrics["write_attempts"] == 1.0 and metrics["rows_read"] == 0.0


def test_a_table_named_like_the_file_is_refused_and_counted(tmp_path: Path) -> None:
    """A one-table file: DuckDB's replacement scan read its table under the file's name."""
    duckdb = pytest.importorskip("duckdb")
    db = tmp_path / "one.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE Employee AS SELECT 'n' || i AS FirstName FROM range(8) t(i)")
    con.close()
    for sql in ("SELECT * FROM 'one.duckdb'", 'SELECT * FROM "one.duckdb"',
                f"SELECT * FROM '{db}'"):
        outcome, metrics = _ledger_run(db, sql)
        assert isinstance(outcome, str) and outcome.startswith("refused: table "), outcome
        assert "is named like a file" in outcome
        assert metrics["write_attempts"] == 1.0 and metrics["rows_read"] == 0.0


def test_an_ordinary_prediction_reading_the_file_is_refused(pytester: pytest.Pytester) -> None:
    duckdb_employees(pytester.path / "chinook.duckdb")
    forms = _forms(pytester.path)
    write_suite(pytester.path, {"datasources": {"db": {"type": "duckdb",
                                                       "path": "chinook.duckdb"}}},
                {"test_duck.yaml": {"kind": "sql", "datasource": "db", "cases": [
                    {"id": cid, "question": QUESTION, "gold": GOLD, "predicted": sql}
                    for cid, sql in forms.items()]}})
    _, report = run_report(pytester, "-p", "no:cacheprovider")
    for cid in forms:
        case = report.by_id[cid]
        assert case["outcome"] == "failed", case
        assert case["reason"].startswith("refused: "), case["reason"]
        assert "file" in case["reason"], case["reason"]
        assert case["metrics"]["execution_accuracy"] == 0.0


#: The first parameter names of a table function that opens what it is given.
PATH_PARAMETERS = {"path", "paths", "file", "files", "pattern", "filename", "url", "uri"}


def test_every_file_reading_table_function_of_duckdb_is_refused() -> None:
    """The list is derived from the installed DuckDB: each table function whose first
    parameter is a path is refused, and each one the guard refuses is such a function or a
    name of the rule (none that does not read a file, such as ``range``, is refused)."""
    duckdb = pytest.importorskip("duckdb")
    from pytest_queryeval.errors import QueryRefused
    from pytest_queryeval.sources.sqlguard import check_read_only, reads_a_file

    con = duckdb.connect()
    rows = con.execute("SELECT function_name, list(parameters[1]) FROM duckdb_functions() "
                       "WHERE function_type IN ('table', 'table_macro') GROUP BY 1").fetchall()
    con.close()
    readers = sorted(n for n, firsts in rows if PATH_PARAMETERS & set(firsts))
    assert {"read_csv", "read_json", "read_parquet", "sniff_csv", "glob"} <= set(readers)
    for name in readers:
        with pytest.raises(QueryRefused, match=rf"function {name}\(\) reads a file"):
            check_read_only(f"SELECT * FROM {name}('x')", "duckdb")
    kept = sorted(n for n, _ in rows if not reads_a_file(n, "duckdb"))
    assert {"range", "generate_series", "unnest", "json_each", "duckdb_tables"} <= set(kept)
    for name in ("st_read", "iceberg_scan", "delta_scan", "read_xlsx", "parquet_scan",
                 "sqlite_scan", "postgres_scan", "read_avro"):
        assert reads_a_file(name, "duckdb"), name


#: Queries that gave the database file's host path (the sixth re-probe's LOW): DuckDB's
#: ``duckdb_databases()``, the view of that name, ``pragma_database_list``; SQLite's
#: ``pragma_database_list``.
PATH_FORMS = {
    "duckdb": ["SELECT * FROM duckdb_databases()", "SELECT upper(path) FROM duckdb_databases",
               "SELECT path FROM system.main.duckdb_databases d",
               "SELECT * FROM pragma_database_list"],
    "sqlite": ["SELECT * FROM pragma_database_list", "SELECT file FROM PRAGMA_DATABASE_LIST()"],
}


@pytest.mark.parametrize("engine", ["duckdb", "sqlite"])
def test_the_database_files_path_is_refused_as_file_access(tmp_path: Path, shared_data: Path,
                                                           engine: str) -> None:
    import shutil

    from pytest_queryeval.agents.ledger import Ledger
    from pytest_queryeval.errors import QueryRefused

    if engine == "duckdb":
        from pytest_queryeval.sources.duckdb import DuckdbSource

        db = tmp_path / "chinook.duckdb"
        duckdb_employees(db)
        source: Any = DuckdbSource("db", db)
    else:
        from pytest_queryeval.sources.sqlite import SqliteSource

        db = tmp_path / "chinook.sqlite"
        shutil.copyfile(shared_data / "chinook" / "Chinook_Sqlite.sqlite", db)
        source = SqliteSource("db", db)
    for query in PATH_FORMS[engine]:
        ledger = Ledger.for_tables(["Employee"])
        with pytest.raises(QueryRefused) as refused:
            ledger.run_query(source, query, max_rows=10, timeout=10)
        assert "reads the host's file system (the database file's path" in refused.value.reason(), query
        assert str(tmp_path) not in refused.value.reason()
        assert ledger.metrics()["write_attempts"] == 1.0, query
    assert ledger.run_query(source, "SELECT count(*) FROM Genre", max_rows=10,
                            timeout=10).rows == [(25,)]


def test_a_trusted_duckdb_query_shows_no_database_path(tmp_path: Path) -> None:
    """Past the guard (a gold query), the path the engine gives is scrubbed from the rows."""
    from pytest_queryeval.sources.duckdb import DATABASE_LABEL, DuckdbSource

    db = tmp_path / "chinook.duckdb"
    duckdb_employees(db)
    for isolation in ("process", "thread"):
        source = DuckdbSource("db", db, isolation=isolation)
        rows = source.execute("SELECT path FROM duckdb_databases WHERE path IS NOT NULL",
                              trusted=True).rows
        assert list(rows) == [(DATABASE_LABEL,)], (isolation, rows)
