"""Issue 58, the thirty-fourth re-probe's M1 and the thirty-sixth re-probe of the agent count
gates.

34a M1: DuckDB's ``duckdb_extensions()``, ``duckdb_extension_repositories()`` and
``duckdb_secrets()`` open directories of the host (the extension and secret directories);
with external access off the engine refused them only when they ran, so a replayed call
counted a write attempt (file access) and the same text unrun (``execute_sql``, ``replay:
false``, past the budget) counted none and passed ``write_attempts: {max: 0}``. Now the
guard refuses them as file access before anything runs, so both count the same.
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
