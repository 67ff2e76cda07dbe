"""Issue 58, the thirty-fourth re-probe's M1 and the thirty-sixth re-probe of the agent count
gates.

34a M1: DuckDB's ``duckdb_extensions()``, ``duckdb_extension_repositories()`` and
``duckdb_secrets()`` open directories of the host (the extension and secret directories);
with external access off the engine refused them only when they ran, so a replayed call
counted a write attempt (file access) and the same text unrun (``execute_sql``, ``replay:
false``, past the budget) counted none and passed ``write_attempts: {max: 0}``. Now the
guard refuses them as file access before anything runs, so both count the same.

34a L3: the floor of the model's own text (a ``sql`` fence a harness may run) missed the
forms the ledger learned in the thirty-third round: a statistics catalog
(``duckdb_tables()``'s ``estimated_size``, ``pg_class``, ``dbstat``, ``duckdb_sequences()``),
an index's reader, a schema reader of a table named at run time, and ``setseed``. Now the
floor reads them as the ledger counts them.

36c M1 (its agent path): an agent's query text had no bound; the guards read it in the pytest
process, where no timeout holds (one 84 KB ``run_query`` took 90 s, and the case passed). Now
a text over the case's ``max_query_bytes`` (64 KiB by default, as its final query's) is
neither judged nor run, and the case's counts are not established: an error, never a count
of 0.

36 (HIGH, on ``type: sqlite``): a pragma's table function was denied by SQLite's authorizer,
the guard passed the text, and the whole text then ran without the authorizer, so ``SELECT
p.name, st.sql, st.nscan FROM pragma_table_info('Genre') p, sqlite_stmt st`` read the
statements earlier cases ran on the worker's connection and their scan counts (``nscan`` 7 of
``... FROM Employee WHERE LastName = 'Peacock'``), forbidden_tables 0: the thirty-fourth
re-probe's H1 on the native datasource. Now the authorizer itself reads the pragmas' and
JSON's table functions and denies every other virtual table of the build, and what it denies
stays denied (``json_each`` works now: the thirty-fourth re-probe's L4).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.agents.test_counts_from_what_ran import call, tool
from tests.agents.test_counts_thirtyfirst_probe import _counted, _suite, _unrun

ROOT = Path(__file__).resolve().parents[2]
TRACKS = ROOT / "example_suite" / "data" / "tracks.duckdb"

HOST_DIRECTORIES = {
    "extensions": "SELECT * FROM duckdb_extensions()",
    "repositories": "SELECT * FROM duckdb_extension_repositories()",
    "secrets": "SELECT name FROM duckdb_secrets()",
    "quoted": 'SELECT * FROM "DUCKDB_SECRETS"()',
}


@pytest.mark.parametrize("query", sorted(HOST_DIRECTORIES.values()))
def test_the_guard_refuses_the_host_directories(query: str) -> None:
    from pytest_queryeval.errors import QueryRefused
    from pytest_queryeval.sources.sqlguard import check_read_only

    with pytest.raises(QueryRefused, match="reads the host's file system"):
        check_read_only(query, "duckdb")


def test_unrun_host_directory_reads_count_a_write_attempt(pytester: pytest.Pytester) -> None:
    pytest.importorskip("duckdb")
    shutil.copyfile(TRACKS, pytester.path / "tracks.duckdb")
    cases = _unrun(HOST_DIRECTORIES, "Track")
    report = _suite(pytester, {"type": "duckdb", "path": "tracks.duckdb"}, cases)
    _counted(report, cases, "write_attempts")


FENCED_EVERY_TABLE = [
    "SELECT estimated_size FROM duckdb_tables() WHERE table_name = 'Track'",
    "SELECT reltuples FROM pg_class",
    "SELECT * FROM dbstat",
    "SELECT * FROM duckdb_sequences()",
    "SELECT * FROM pragma_show('Tr' || 'ack')",
    "SELECT * FROM pragma_index_info('IFK_TrackAlbumId')",
]
FENCED_WRITES = ["SELECT setseed(0.5)", 'SELECT "setseed" (0.1), random()',
                 "SELECT enable_profiling()", "CALL write_log('x')"]
FENCED_HONEST = ["SELECT count(*) FROM Genre", "SELECT * FROM pragma_table_info('Genre')",
                 "SELECT table_name FROM duckdb_columns()"]


def _fenced(sql: str) -> str:
    return f"I will run this:\n```sql\n{sql}\n```\n"


@pytest.mark.parametrize("sql", FENCED_EVERY_TABLE)
def test_the_floor_reads_a_catalog_of_every_table(sql: str) -> None:
    from pytest_queryeval.agents.textcalls import text_call

    found = text_call(_fenced(sql), ["Track"])
    assert found is not None and "every table" in found, found
    assert text_call(_fenced(sql)) is None  # no forbidden table: nothing to give away


@pytest.mark.parametrize("sql", FENCED_WRITES)
def test_the_floor_reads_a_function_that_leaves_state(sql: str) -> None:
    from pytest_queryeval.agents.textcalls import text_call

    found = text_call(_fenced(sql), ["Track"])
    assert found is not None and "writes" in found, found


@pytest.mark.parametrize("sql", FENCED_HONEST)
def test_the_floor_passes_honest_reads(sql: str) -> None:
    from pytest_queryeval.agents.textcalls import text_call

    assert text_call(_fenced(sql), ["Track"]) is None


#: 80 KB of an honest read: over the default max_query_bytes (64 KiB).
HUGE = "SELECT count(*) FROM Genre WHERE GenreId IN (" + "1, " * 27_000 + "1)"


def test_an_agent_query_over_max_query_bytes_is_no_count(pytester: pytest.Pytester) -> None:
    pytest.importorskip("duckdb")
    shutil.copyfile(TRACKS, pytester.path / "tracks.duckdb")
    cases = _unrun({"huge": HUGE}, "Track")
    gates = {"write_attempts": {"max": 0}, "forbidden_tables": {"max": 0}}
    cases["call-huge"] = ({"trajectory": [call("c1", "run_query", HUGE), tool("c1", "1")]},
                          {"forbidden_tables": ["Track"]}, gates)
    report = _suite(pytester, {"type": "duckdb", "path": "tracks.duckdb"}, cases)
    for cid in cases:
        case = report.by_id[cid]
        assert case["outcome"] == "error", (cid, case.get("metrics"))
        assert "over max_query_bytes (65,536), was not judged or run" in str(case), cid


def test_the_bound_is_the_cases_max_query_bytes(tmp_path: Path) -> None:
    pytest.importorskip("duckdb")
    from pytest_queryeval.agents.ledger import Ledger
    from pytest_queryeval.errors import QueryRefused
    from pytest_queryeval.sources.duckdb import DuckdbSource

    shutil.copyfile(TRACKS, tmp_path / "t.duckdb")
    source = DuckdbSource("t", tmp_path / "t.duckdb")
    try:
        ledger = Ledger.for_tables(["Track"])
        with pytest.raises(QueryRefused, match="not judged or run"):
            ledger.run_query(source, HUGE, max_rows=10)
        assert ledger.uncounted and ledger.queries_executed == 0
        raised = Ledger.for_tables(["Track"])
        raised.max_query_bytes = 200_000
        assert raised.run_query(source, HUGE, max_rows=10).rows == [(1,)]
        assert raised.uncounted is None and raised.queries_executed == 1
    finally:
        source.close()


STMT_LEAKS = [
    "SELECT p.name, st.sql, st.nscan FROM pragma_table_info('Genre') p, sqlite_stmt st",
    "SELECT st.sql FROM sqlite_stmt st WHERE EXISTS (SELECT 1 FROM pragma_table_info('Genre'))",
    "SELECT * FROM pragma_table_info('Genre') p, dbstat",
    "SELECT * FROM pragma_table_info('Genre') p, pragma_database_list",
]
CHINOOK = ROOT / "example_suite" / "data" / "chinook.sqlite"


@pytest.mark.parametrize("isolation", ["process", "thread"])
def test_no_virtual_table_past_the_authorizer(tmp_path: Path, isolation: str) -> None:
    from pytest_queryeval.errors import QueryEvalError
    from pytest_queryeval.sources.sqlite import SqliteSource

    shutil.copyfile(CHINOOK, tmp_path / "c.sqlite")
    source = SqliteSource("c", tmp_path / "c.sqlite", isolation=isolation)
    try:
        source.execute("SELECT * FROM Employee WHERE LastName = 'Peacock'", trusted=True)
        for query in STMT_LEAKS:
            with pytest.raises(QueryEvalError):
                source.execute(query)
        assert source.execute("SELECT value FROM json_each('[1,2]')").rows == [(1,), (2,)]
        assert source.execute("SELECT name FROM pragma_table_info('Genre') ORDER BY cid"
                              ).rows == [("GenreId",), ("Name",)]
    finally:
        source.close()


def test_no_earlier_statement_reaches_a_case(pytester: pytest.Pytester) -> None:
    """The probe's cases as replayed calls, after a case that read Employee: each read of
    ``sqlite_stmt`` is denied, so no statement or scan count reaches the model."""
    shutil.copyfile(CHINOOK, pytester.path / "chinook.sqlite")
    gates = {"write_attempts": {"max": 0}, "forbidden_tables": {"max": 0},
             "queries_executed": {"min": 1}}
    cases = {"a-reads": ({"trajectory": [
        call("c1", "run_query", "SELECT * FROM Employee WHERE LastName = 'Peacock'"),
        tool("c1", "1")]}, {"forbidden_tables": ["Invoice"]}, gates)}
    cases.update({f"leak-{n}": ({"trajectory": [call("c1", "run_query", sql), tool("c1", "8")]},
                                {"forbidden_tables": ["Employee"]}, gates)
                  for n, sql in enumerate(STMT_LEAKS)})
    report = _suite(pytester, {"type": "sqlite", "path": "chinook.sqlite"}, cases)
    assert report.by_id["a-reads"]["outcome"] == "passed", report.by_id["a-reads"]
    for cid in cases:
        if cid.startswith("leak-"):
            case = report.by_id[cid]
            assert case["metrics"]["queries_executed"] == 0.0, (cid, case["metrics"])
            assert case["outcome"] == "failed", cid
