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
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

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
