"""Issue 58, the thirty-third hostile re-probe of the agent count gates (33a H3): a call the
replay does not run is judged by the SQL guard the replayed ``run_query`` meets.

A statement another tool ran (``execute_sql``, ``RUN_QUERY``), one under ``replay: false``,
or one past the replay's budget was judged on its text alone: ``SELECT * FROM query('DELETE
FROM Genre')`` and ``PIVOT Genre ON Name USING count(*)`` counted no write attempt, and
``query_table('Track')`` no read of Track, where the same text replayed counts both. Now the
guard's refusal counts as the replay counts it (:meth:`Ledger._guard_unrun`).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_queryeval.agents.ledger import Ledger
from tests.agents import probe_support as probe
from tests.agents.test_counts_thirtyfirst_probe import _counted, _suite, _tracks, _unrun

#: Each counted a write attempt when replayed, none when judged on its text (on main d2f275a).
WRITES = {
    "query-delete": "SELECT * FROM query('DELETE FROM Genre')",
    "pivot": "PIVOT Genre ON Name USING count(*)",
}
#: Each counted Track when replayed, nothing when judged on its text.
READS = {
    "query-select": "SELECT * FROM query('SELECT Name FROM Track LIMIT 3')",
    "query-table": "SELECT Name FROM query_table('Track') LIMIT 3",
    "storage-info": "SELECT column_name, stats FROM pragma_storage_info('Track')",
}
HONEST = {"genre": "SELECT Name FROM Genre ORDER BY GenreId LIMIT 3"}


@pytest.mark.parametrize("name", sorted(WRITES))
def test_an_unrun_write_through_a_guarded_form_counts(name: str, tmp_path: Path) -> None:
    pytest.importorskip("duckdb")
    from pytest_queryeval.sources.duckdb import DuckdbSource

    _tracks(tmp_path / "t.duckdb")
    source = DuckdbSource("t", tmp_path / "t.duckdb")
    try:
        ledger = Ledger(forbidden=["Track"])
        ledger.count_unrun(WRITES[name], "duckdb", why="not replayed", source=source)
        assert ledger.write_attempts == 1, ledger.details()
        honest = Ledger(forbidden=["Track"])
        honest.count_unrun(HONEST["genre"], "duckdb", why="not replayed", source=source)
        assert honest.write_attempts == 0 and not honest.touched, honest.details()
    finally:
        source.close()


def test_unrun_guarded_forms_count_on_duckdb(pytester: pytest.Pytester) -> None:
    """End to end: each form as another tool's call, under ``replay: false`` and past the
    budget fails its gate (a write attempt, or Track read); the honest read passes."""
    pytest.importorskip("duckdb")
    _tracks(pytester.path / "t.duckdb")
    writes = _unrun(WRITES, "Track")
    reads = _unrun(READS, "Track")
    honest = _unrun(HONEST, "Track")
    report = _suite(pytester, {"type": "duckdb", "path": "t.duckdb"},
                    {**writes, **reads, **honest})
    _counted(report, writes, "write_attempts")
    _counted(report, reads)
    probe.assert_honest(report, honest)
