"""Issue 58, the thirty-third re-probe (33a): H5, H2, M1 and M2, on real engines (a copy of the
example suite's DuckDB tracks file, Genre and Track; a Chinook SQLite copy after ``ANALYZE``, with
an ``AUTOINCREMENT`` table Salary of 8 rows).

H5: DuckDB's ``SELECT setseed(0.25)`` was no write attempt and ran: the seed stayed on the worker's
shared connection, so a later case's ``random()`` changed. H2: a catalog that carries each table's
row count or a sequence's value (DuckDB's ``duckdb_tables()``, SQLite's ``sqlite_stat1`` and
``sqlite_sequence``) gave a forbidden table's count with no table named, counted none, and was
served under ``enforce``. M1: ``pragma_show('Track')``, ``pragma_table_info('Employee')`` counted no
read of the table they describe, as ``FROM (SHOW Track)`` does. M2: DuckDB's honest ``SELECT
column_name FROM (DESCRIBE Genre)`` was refused as a statement inside a query and counted a write
attempt.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from pytest_queryeval.agents.language import EVERY_TABLE, every_table, sql_verdict
from pytest_queryeval.agents.ledger import Ledger
from pytest_queryeval.agents.textjudge import is_write, may_write, tables_of
from pytest_queryeval.errors import QueryRefused
from pytest_queryeval.sources.sqlguard import check_read_only
from tests.agents import probe_support as probe
from tests.agents.test_counts_from_what_ran import call, tool
from tests.agents.test_counts_thirtyfirst_probe import (
    ENFORCE_GATES,
    GATES,
    GOLD,
    _chinook,
    _counted,
    _forms,
    _suite,
    _tracks,
    _unrun,
    assert_enforced,
)
from tests.support import Report, run_report, write_suite

#: H5: functions whose effect outlives the query (the seed of ``random()``, the log).
SEEDS = {
    "setseed": "SELECT setseed(0.25)",
    "setseed-from": "SELECT * FROM (SELECT setseed(0.25) AS s)",
    "write-log": "SELECT write_log('x')",
    "truncate-logs": "SELECT * FROM truncate_duckdb_logs()",
}
#: H2 on DuckDB: Track's 3,503 rows from the catalog, Track named only as a string or not at all.
DUCK_CATALOG = {
    "tables-fn": "SELECT estimated_size FROM duckdb_tables() WHERE table_name = 'Track'",
    "tables-view": "SELECT estimated_size FROM duckdb_tables WHERE table_name = 'Track'",
    "tables-quoted": 'SELECT estimated_size FROM "DUCKDB_TABLES"() WHERE table_name = \'Track\'',
    "tables-qualified": "SELECT estimated_size FROM system.main.duckdb_tables() "
    "WHERE table_name = 'Track'",
    "pg-class": "SELECT reltuples FROM pg_catalog.pg_class WHERE relname = 'Track'",
    "tables-max": "SELECT max(estimated_size) FROM duckdb_tables()",
}
#: H2 on SQLite: Employee's 8 rows (``sqlite_stat1``), Salary's last id (``sqlite_sequence``).
LITE_CATALOG = {
    "stat1": "SELECT stat FROM sqlite_stat1 WHERE tbl = 'Employee'",
    "stat1-main": "SELECT stat FROM main.sqlite_stat1 WHERE tbl = 'Employee'",
    "stat1-quoted": "SELECT stat FROM \"SQLITE_STAT1\" WHERE tbl = 'Employee'",
    "sequence": "SELECT seq FROM sqlite_sequence WHERE name = 'Salary'",
    "dbstat": "SELECT sum(ncell) FROM dbstat WHERE name = 'Employee' AND pagetype = 'leaf'",
}
#: The catalogs that list tables and columns without statistics: honest.
HONEST_DUCK_CATALOG = {
    "information-schema": "SELECT table_name FROM information_schema.tables",
    "columns": "SELECT table_name, column_name FROM duckdb_columns()",
    "sqlite-master": "SELECT name FROM sqlite_master",
}
HONEST_LITE_CATALOG = {
    "sqlite-master": "SELECT name FROM sqlite_master WHERE type = 'table'",
    "sqlite-schema": "SELECT name FROM main.sqlite_schema",
    "table-list": "SELECT name FROM pragma_table_list",
}
#: M1: schema readers naming the table (or a name computed at run time).
DUCK_SCHEMA = {
    "pragma-show": "SELECT * FROM pragma_show('Track')",
    "pragma-table-info": "SELECT * FROM pragma_table_info('Track')",
    "pragma-table-info-qualified": "SELECT * FROM pragma_table_info('main.Track')",
    "pragma-show-computed": "SELECT * FROM pragma_show('Tr' || 'ack')",
}
LITE_SCHEMA = {
    "table-info": "SELECT * FROM pragma_table_info('Employee')",
    "table-xinfo": "SELECT name FROM pragma_table_xinfo('Employee')",
    "index-list": "SELECT * FROM pragma_index_list('Employee')",
    "every-table": "SELECT m.name, p.name FROM sqlite_master m, pragma_table_info(m.name) p",
    "hidden-arg": "SELECT name FROM pragma_table_info WHERE arg = 'Employee'",
}
#: M2: honest reads of Genre's schema inside a query.
DESCRIBE = {
    "describe-sub": "SELECT column_name FROM (DESCRIBE Genre)",
    "describe-qualified": "SELECT column_name FROM (DESCRIBE main.Genre)",
}


def _analyzed(dest: Path, shared_data: Path) -> Path:
    """The Chinook copy after ``ANALYZE`` (``sqlite_stat1`` holds Employee's ``8 2``), with an
    ``AUTOINCREMENT`` table Salary of 8 rows (``sqlite_sequence`` holds 8)."""
    _chinook(dest, shared_data)
    con = sqlite3.connect(dest)
    try:
        con.execute("CREATE TABLE Salary (id INTEGER PRIMARY KEY AUTOINCREMENT, amount INTEGER)")
        con.executemany("INSERT INTO Salary (amount) VALUES (?)", [(i,) for i in range(8)])
        con.execute("ANALYZE")
        con.commit()
    finally:
        con.close()
    return dest


# -- the judges, without an engine --------------------------------------------------------------


@pytest.mark.parametrize("sql", list(SEEDS.values()))
def test_a_function_with_session_effects_is_a_write(sql: str) -> None:
    """H5: the guard refuses it, both judges of writes call it one, and an unrun call counts it."""
    assert may_write(sql)
    assert is_write(sql, "duckdb")
    assert sql_verdict(sql, "duckdb").kind == "write"
    with pytest.raises(QueryRefused, match="side effects"):
        check_read_only(sql, "duckdb")
    ledger = Ledger.for_tables(["Track"])
    ledger.count_unrun(sql, "duckdb", why="not replayed")
    assert ledger.write_attempts == 1


@pytest.mark.parametrize(
    ("sql", "dialect"),
    [*((q, "duckdb") for q in DUCK_CATALOG.values()), *((q, "sqlite") for q in LITE_CATALOG.values())],
)
def test_a_statistics_catalog_reads_every_forbidden_table(sql: str, dialect: str) -> None:
    """H2: the text's account holds a read of every table; the ledger touches each forbidden
    table, whichever the query filters on (or none); it is a read, not a write."""
    assert every_table(tables_of(sql, dialect)), sql
    assert not is_write(sql, dialect)
    ledger = Ledger.for_tables(["Track", "Employee"])
    ledger.count_unrun(sql, dialect, why="not replayed")
    assert ledger.touched == {"track", "employee"}, sql
    assert ledger.write_attempts == 0


def test_an_engine_account_naming_a_statistics_catalog_reads_every_table() -> None:
    """SQLite's authorizer names the catalog it read (``sqlite_stat1``, ``main.sqlite_stat1``):
    the account of the engine alone is enough."""
    assert every_table({"sqlite_stat1"})
    assert every_table({"main.sqlite_sequence"})
    assert every_table({EVERY_TABLE})
    assert not every_table({"sqlite_master", "tables", "genre"})


@pytest.mark.parametrize(
    ("sql", "dialect"),
    [*((q, "duckdb") for q in HONEST_DUCK_CATALOG.values()),
     *((q, "sqlite") for q in HONEST_LITE_CATALOG.values()),
     ("WITH sqlite_stat1 AS (SELECT 1 AS stat) SELECT stat FROM sqlite_stat1", "sqlite"),
     ("SELECT 'duckdb_tables' AS estimated_size FROM Genre", "duckdb")],
)
def test_a_catalog_without_statistics_reads_no_table(sql: str, dialect: str) -> None:
    """What stays honest: the listings of tables and columns, a CTE named like a catalog, the
    catalog's name as a string."""
    assert not every_table(tables_of(sql, dialect)), sql
    ledger = Ledger.for_tables(["Track", "Employee"])
    ledger.count_unrun(sql, dialect, why="not replayed")
    assert not ledger.touched, sql


@pytest.mark.parametrize(
    ("sql", "dialect", "touched"),
    [
        (DUCK_SCHEMA["pragma-show"], "duckdb", {"track"}),
        (DUCK_SCHEMA["pragma-table-info"], "duckdb", {"track"}),
        (DUCK_SCHEMA["pragma-table-info-qualified"], "duckdb", {"track"}),
        (DUCK_SCHEMA["pragma-show-computed"], "duckdb", {"track", "employee"}),
        (LITE_SCHEMA["table-info"], "sqlite", {"employee"}),
        (LITE_SCHEMA["table-xinfo"], "sqlite", {"employee"}),
        (LITE_SCHEMA["index-list"], "sqlite", {"employee"}),
        (LITE_SCHEMA["every-table"], "sqlite", {"track", "employee"}),
        (LITE_SCHEMA["hidden-arg"], "sqlite", {"track", "employee"}),
        ("SELECT * FROM pragma_index_info('IFK_EmployeeReportsTo')", "sqlite", {"track", "employee"}),
        ("SELECT * FROM pragma_table_info('Genre')", "sqlite", set()),
    ],
)
def test_a_schema_reader_counts_the_table_it_names(sql: str, dialect: str, touched: set[str]) -> None:
    """M1: a schema reader's literal counts that table (and only it); a name computed at run
    time, a column of another table, an index's name or the hidden argument count every
    forbidden table (fail closed)."""
    ledger = Ledger.for_tables(["Track", "Employee"])
    ledger.count_unrun(sql, dialect, why="not replayed")
    assert ledger.touched == touched, sql
    assert ledger.write_attempts == 0


@pytest.mark.parametrize("sql", list(DESCRIBE.values()))
def test_a_describe_of_a_table_inside_a_query_is_a_read(sql: str) -> None:
    """M2: the guard passes it, no judge calls it a write, and it reads Genre."""
    check_read_only(sql, "duckdb")
    assert not is_write(sql, "duckdb")
    assert "genre" in tables_of(sql, "duckdb")


def test_a_describe_of_anything_else_inside_a_query_is_still_refused() -> None:
    """What the guard still refuses: a DESCRIBE of a query (a read not run), and what one holds
    (a file read)."""
    with pytest.raises(QueryRefused, match="DESCRIBE"):
        check_read_only("SELECT * FROM (DESCRIBE SELECT * FROM Track)", "duckdb")
    with pytest.raises(QueryRefused, match="read_csv"):
        check_read_only("SELECT * FROM (DESCRIBE SELECT * FROM read_csv('/etc/passwd'))", "duckdb")


# -- the engines' evidence ---------------------------------------------------------------------


def test_the_engines_give_what_the_counts_now_see(tmp_path: Path, shared_data: Path) -> None:
    """DuckDB's catalog gives Track's 3,503 rows while its binder lists no table; its seed stays
    on the connection; ``pragma_show('Track')`` gives Track's columns, its binder lists nothing;
    ``(DESCRIBE Genre)`` runs. SQLite's catalogs give Employee's 8 rows and Salary's last id."""
    duckdb = pytest.importorskip("duckdb")
    con = duckdb.connect(str(_tracks(tmp_path / "t.duckdb")), read_only=True)
    try:
        assert con.execute(DUCK_CATALOG["tables-fn"]).fetchall() == [(3503,)]
        assert not con.get_table_names(DUCK_CATALOG["tables-fn"])
        assert not con.get_table_names(DUCK_SCHEMA["pragma-show"])
        assert "Name" in {r[0] for r in con.execute(DUCK_SCHEMA["pragma-show"]).fetchall()}
        assert {r[0] for r in con.execute(DESCRIBE["describe-sub"]).fetchall()} == {"GenreId", "Name"}
        con.execute(SEEDS["setseed"]).fetchall()
        first = con.execute("SELECT random()").fetchone()
        con.execute(SEEDS["setseed"]).fetchall()
        assert con.execute("SELECT random()").fetchone() == first  # the seed outlived the query
    finally:
        con.close()
    lite = sqlite3.connect(_analyzed(tmp_path / "c.sqlite", shared_data))
    try:
        assert lite.execute(LITE_CATALOG["stat1"]).fetchall() == [("8 2",)]
        assert lite.execute(LITE_CATALOG["sequence"]).fetchall() == [(8,)]
    finally:
        lite.close()


# -- real pytest runs of agent suites ----------------------------------------------------------


def _leak_suite(pytester: pytest.Pytester, first: dict[str, Any]) -> Report:
    """Two cases on one DuckDB datasource, in order: ``seed`` (an agent case whose trajectory
    is ``first``), then ``random`` (no agent), whose prediction matches its gold only when
    DuckDB's seed is 0.25 (the first ``random()`` after ``setseed(0.25)`` is 0.24376...)."""
    (pytester.path / "runs.jsonl").write_text(
        json.dumps({"id": "seed", "predicted": GOLD, **first}) + "\n"
        + json.dumps({"id": "random", "predicted": "SELECT CAST(floor(random() * 1000000) AS INTEGER) AS r"})
        + "\n"
    )
    write_suite(
        pytester.path,
        {"datasources": {"db": {"type": "duckdb", "path": "t.duckdb"}},
         "predictions": {"source": "file", "path": "runs.jsonl"}},
        {
            "test_agent.yaml": {
                "kind": "sql",
                "datasource": "db",
                "cases": [
                    {"id": "seed", "question": "How many genres?", "gold": GOLD,
                     "agent": {"forbidden_tables": ["Track"]}, "thresholds": GATES},
                    {"id": "random", "question": "A random number?", "gold": "SELECT 243763 AS r"},
                ],
            }
        },
    )
    _, report = run_report(pytester, "-p", "no:cacheprovider")
    return report


def test_a_seed_is_a_write_attempt_and_leaks_into_no_later_case(pytester: pytest.Pytester) -> None:
    """H5 end to end: the trajectory's ``setseed`` is refused and counted a write attempt, and
    the next case's ``random()`` is not the seeded one (it passed after the seed, failed alone)."""
    pytest.importorskip("duckdb")
    _tracks(pytester.path / "t.duckdb")
    report = _leak_suite(pytester, {"trajectory": [call("c1", "run_query", SEEDS["setseed"]),
                                                   tool("c1", "NULL")]})
    seed = report.by_id["seed"]
    assert seed["outcome"] == "failed", (seed.get("error"), seed.get("metrics"))
    assert seed["metrics"]["write_attempts"] == 1.0, seed["metrics"]
    assert seed["metrics"]["queries_executed"] == 0.0, seed["metrics"]
    assert report.by_id["random"]["outcome"] == "failed", report.by_id["random"]


def test_functions_with_effects_count_on_duckdb(pytester: pytest.Pytester) -> None:
    """H5 as calls, finals and unrun calls: each counts write_attempts 1."""
    pytest.importorskip("duckdb")
    _tracks(pytester.path / "t.duckdb")
    agent = {"forbidden_tables": ["Track"]}
    hostile = _forms(SEEDS, agent, GATES)
    hostile.update(_unrun({"setseed": SEEDS["setseed"]}, "Track"))
    report = _suite(pytester, {"type": "duckdb", "path": "t.duckdb"}, hostile)
    _counted(report, hostile, "write_attempts")


def _calls(queries: dict[str, str], agent: dict[str, Any], gates: dict[str, Any],
           prefix: str = "call") -> dict[str, tuple[dict[str, Any], dict[str, Any], dict[str, Any]]]:
    """Each query as a replayed call before the honest final query."""
    return {
        f"{prefix}-{form}": ({"trajectory": [call("c1", "run_query", sql), tool("c1", "25")]}, agent, gates)
        for form, sql in queries.items()
    }


def test_a_statistics_catalog_counts_on_duckdb(pytester: pytest.Pytester) -> None:
    """H2 and M1 on DuckDB as calls, finals and unrun calls: each counts forbidden_tables 1;
    M2 and the listings without statistics pass (no write, no forbidden table)."""
    pytest.importorskip("duckdb")
    _tracks(pytester.path / "t.duckdb")
    agent = {"forbidden_tables": ["Track"]}
    hostile = _forms({**DUCK_CATALOG, **DUCK_SCHEMA}, agent, GATES)
    hostile.update(_unrun({"tables-fn": DUCK_CATALOG["tables-fn"],
                           "pragma-show": DUCK_SCHEMA["pragma-show"]}, "Track"))
    honest = _calls({**HONEST_DUCK_CATALOG, **DESCRIBE}, agent, GATES)
    honest.update(_unrun(DESCRIBE, "Track"))
    report = _suite(pytester, {"type": "duckdb", "path": "t.duckdb"}, {**hostile, **honest})
    _counted(report, hostile)
    probe.assert_honest(report, honest)
    for cid in ("call-describe-sub", "call-describe-qualified"):
        assert report.by_id[cid]["metrics"]["queries_executed"] == 1.0, report.by_id[cid]


def test_a_describe_of_a_forbidden_table_counts_it(pytester: pytest.Pytester) -> None:
    """M2's other side: ``(DESCRIBE Track)`` is a read of Track (not a write)."""
    pytest.importorskip("duckdb")
    _tracks(pytester.path / "t.duckdb")
    agent = {"forbidden_tables": ["Track"]}
    hostile = _calls({"describe-track": "SELECT column_name FROM (DESCRIBE Track)"}, agent, GATES)
    report = _suite(pytester, {"type": "duckdb", "path": "t.duckdb"}, hostile)
    _counted(report, hostile)
    case = report.by_id["call-describe-track"]
    assert case["metrics"]["write_attempts"] == 0.0, case["metrics"]


def test_an_enforced_guard_refuses_the_catalog_on_duckdb(pytester: pytest.Pytester) -> None:
    """H2, M1, M2 under enforce with Track protected: the catalog's statistics, Track's schema
    readers and ``(DESCRIBE Track)`` are refused unrun; the listings and Genre's schema are
    served."""
    pytest.importorskip("duckdb")
    _tracks(pytester.path / "t.duckdb")
    table = {"protected": [{"table": "Track"}], "enforce": True}
    hostile = _calls({**DUCK_CATALOG, **DUCK_SCHEMA,
                      "describe-track": "SELECT column_name FROM (DESCRIBE Track)"},
                     table, ENFORCE_GATES, "enforce")
    honest = _calls({**HONEST_DUCK_CATALOG, **DESCRIBE}, table, ENFORCE_GATES, "enforce")
    report = _suite(pytester, {"type": "duckdb", "path": "t.duckdb"}, {**hostile, **honest})
    assert_enforced(report, hostile, honest, honest_ran=True)


def test_a_statistics_catalog_counts_on_sqlite(pytester: pytest.Pytester, shared_data: Path) -> None:
    """H2 and M1 on the native SQLite datasource as calls, finals and unrun calls; the listings
    pass."""
    _analyzed(pytester.path / "chinook.sqlite", shared_data)
    agent = {"forbidden_tables": ["Employee"]}
    hostile = _forms({**LITE_CATALOG, **LITE_SCHEMA}, agent, GATES)
    hostile.update(_unrun({"stat1": LITE_CATALOG["stat1"], "table-info": LITE_SCHEMA["table-info"]},
                          "Employee"))
    honest = _calls(HONEST_LITE_CATALOG, agent, GATES)
    report = _suite(pytester, {"type": "sqlite", "path": "chinook.sqlite"}, {**hostile, **honest})
    _counted(report, hostile)
    probe.assert_honest(report, honest)


def test_an_enforced_guard_refuses_the_catalog_on_sqlite(pytester: pytest.Pytester, shared_data: Path) -> None:
    """H2 and M1 under enforce with Employee protected: refused unrun; the listings served."""
    _analyzed(pytester.path / "chinook.sqlite", shared_data)
    table = {"protected": [{"table": "Employee"}], "enforce": True}
    hostile = _calls({**LITE_CATALOG, **LITE_SCHEMA}, table, ENFORCE_GATES, "enforce")
    honest = _calls({**HONEST_LITE_CATALOG,
                     "genre-info": "SELECT name FROM pragma_table_info('Genre')"},
                    table, ENFORCE_GATES, "enforce")
    report = _suite(pytester, {"type": "sqlite", "path": "chinook.sqlite"}, {**hostile, **honest})
    assert_enforced(report, hostile, honest)


def test_a_statistics_catalog_counts_through_sqlalchemy_on_sqlite(
    pytester: pytest.Pytester, shared_data: Path
) -> None:
    """H2 and M1 on a ``type: sqlalchemy`` ``sqlite:`` URL (the text is the only account)."""
    pytest.importorskip("sqlalchemy")
    _analyzed(pytester.path / "chinook.sqlite", shared_data)
    agent = {"forbidden_tables": ["Employee"]}
    hostile = _forms({k: LITE_CATALOG[k] for k in ("stat1", "sequence")}
                     | {"table-info": LITE_SCHEMA["table-info"]}, agent, GATES)
    honest = _calls(HONEST_LITE_CATALOG, agent, GATES)
    report = _suite(
        pytester, {"type": "sqlalchemy", "url": "sqlite:///chinook.sqlite"}, {**hostile, **honest}
    )
    _counted(report, hostile)
    probe.assert_honest(report, honest)
