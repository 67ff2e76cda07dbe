"""Issue 58, the thirtieth re-probe: H1 to H3 and L5, on real engines (a copy of the example
suite's DuckDB tracks file, Genre and Track; a Chinook SQLite copy for the SQLite twin).

H1: DuckDB's binder account of the tables a query reads (``get_table_names``, the ledger's
``tables_read`` on a DuckDB datasource) leaves out a subquery in a star's ``REPLACE`` list,
which DuckDB runs: ``SELECT * REPLACE ((SELECT string_agg(Name, '|') FROM Track) AS Name) FROM
Genre`` gives every Track name and counted no forbidden table. The ledger now counts the
engine's tables with the text's names. H2: the same subquery under ``enforce: true`` with
Track protected was served when DuckDB answers it from the column's statistics (``max``,
``count(*)``: no scan in the plan); the guard now reads the text's names too. H3: a lone
surrogate in a DuckDB call made ``get_table_names`` raise TypeError, and the case errored with
an empty reason. L5: a refused write reading a table named at run time counts every forbidden
table, as the same call in a refused read does.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.agents import probe_support as probe
from tests.agents.test_counts_from_what_ran import call, tool
from tests.support import Report, run_report, write_suite

ROOT = Path(__file__).resolve().parents[2]
TRACKS = ROOT / "example_suite" / "data" / "tracks.duckdb"
GOLD = "SELECT count(*) FROM Genre"
GATES = {"write_attempts": {"max": 0}, "forbidden_tables": {"max": 0}}
NAMES = "SELECT string_agg(Name, '|') FROM Track"

#: H1: a subquery reading Track in a star's REPLACE list, in the report's forms.
REPLACE = {
    "star": f"SELECT * REPLACE (({NAMES}) AS Name) FROM Genre",
    "star-limit1": f"SELECT * REPLACE (({NAMES}) AS Name) FROM Genre LIMIT 1",
    "qualified": f"SELECT g.* REPLACE (({NAMES}) AS Name) FROM Genre g",
    "table-star": f"SELECT Genre.* REPLACE (({NAMES}) AS Name) FROM Genre",
    "exclude": f"SELECT * EXCLUDE (GenreId) REPLACE (({NAMES}) AS Name) FROM Genre",
    "from-first": f"FROM Genre SELECT * REPLACE (({NAMES}) AS Name)",
    "cte": f"WITH g AS (SELECT * REPLACE (({NAMES}) AS Name) FROM Genre) SELECT * FROM g",
    "sub": f"SELECT * FROM (SELECT * REPLACE (({NAMES}) AS Name) FROM Genre)",
    "max-id": "SELECT * REPLACE ((SELECT max(TrackId) FROM Track) AS GenreId) FROM Genre",
    "correlated": "SELECT * REPLACE ((SELECT string_agg(t.Name, '|') FROM Track t "
    "WHERE t.GenreId = Genre.GenreId) AS Name) FROM Genre",
    "pivot": f"SELECT * FROM (PIVOT (SELECT * REPLACE (({NAMES}) AS Name) FROM Genre) "
    "ON GenreId IN (1, 2) USING first(Name))",
}
#: H2: the subqueries DuckDB answers from Track's statistics (no scan of Track in the plan).
FOLDED = {
    "max-price": "SELECT * REPLACE ((SELECT max(UnitPrice) FROM Track) AS Name) FROM Genre",
    "count": "SELECT * REPLACE ((SELECT count(*) FROM Track) AS Name) FROM Genre",
    "max-id": "SELECT * REPLACE ((SELECT max(TrackId) FROM Track) AS GenreId) FROM Genre",
}
#: Honest reads of Genre alone, REPLACE among them.
HONEST = {
    "genre": GOLD,
    "replace-upper": "SELECT * REPLACE (upper(Name) AS Name) FROM Genre",
    "replace-genre": "SELECT * REPLACE ((SELECT max(GenreId) FROM Genre) AS GenreId) FROM Genre",
}
#: H3: a lone surrogate (an emoji cut inside its UTF-16 pair), honest and hostile.
SURROGATE = {
    "honest": "SELECT count(*) FROM Genre WHERE Name <> '\ud83d'",
    "track": "SELECT count(*) FROM Track WHERE Name <> '\ud800'",
    "replace": f"SELECT * REPLACE (({NAMES}) AS Name) FROM Genre WHERE Name <> '\ud83d'",
}
#: L5: refused writes reading a table named at run time.
COMPUTED_WRITES = {
    "ctas-query-table": "CREATE TEMP TABLE x AS FROM query_table('Tr' || 'ack')",
    "ctas-query": "CREATE TEMP TABLE x AS FROM query('FROM Tr' || 'ack')",
    "insert-storage": "INSERT INTO Genre SELECT 1, column_name FROM pragma_storage_info('Tr' || 'ack')",
}


def _tracks(dest: Path) -> Path:
    shutil.copyfile(TRACKS, dest)
    dest.chmod(0o644)
    return dest


def _run(
    pytester: pytest.Pytester,
    lines: dict[str, dict[str, Any]],
    agent: dict[str, Any],
    gates: dict[str, Any],
) -> Report:
    """A kind: sql suite on a copy of the tracks file, one case per line, run; the report."""
    pytest.importorskip("duckdb")
    _tracks(pytester.path / "t.duckdb")
    (pytester.path / "runs.jsonl").write_text(
        "".join(json.dumps({"id": cid, "predicted": GOLD, **line}) + "\n" for cid, line in lines.items())
    )
    write_suite(
        pytester.path,
        {
            "datasources": {"db": {"type": "duckdb", "path": "t.duckdb"}},
            "predictions": {"source": "file", "path": "runs.jsonl"},
        },
        {
            "test_agent.yaml": {
                "kind": "sql",
                "datasource": "db",
                "agent": agent,
                "cases": [
                    {"id": cid, "question": "How many genres?", "gold": GOLD, "thresholds": gates}
                    for cid in lines
                ],
            }
        },
    )
    _, report = run_report(pytester, "-p", "no:cacheprovider")
    return report


def _calls(prefix: str, queries: dict[str, str]) -> dict[str, dict[str, Any]]:
    return {
        f"{prefix}-{form}": {"trajectory": [call("c1", "run_query", sql), tool("c1", "25")]}
        for form, sql in queries.items()
    }


def _finals(prefix: str, queries: dict[str, str]) -> dict[str, dict[str, Any]]:
    return {f"{prefix}-{form}": {"predicted": sql, "trajectory": []} for form, sql in queries.items()}


def test_duckdb_runs_the_replace_subquery_its_binder_leaves_out(tmp_path: Path) -> None:
    """The engine evidence: ``get_table_names`` lists Genre alone, the query gives every Track
    name (and ``max(TrackId)`` in each row, with no scan of Track in the plan); the ledger's
    ``tables_read`` on the plugin's own DuckDB source counts Track."""
    duckdb = pytest.importorskip("duckdb")
    from pytest_queryeval.agents.ledger import tables_read
    from pytest_queryeval.sources.duckdb import DuckdbSource

    path = _tracks(tmp_path / "t.duckdb")
    con = duckdb.connect(str(path), read_only=True)
    try:
        names = {row[0] for row in con.execute("SELECT Name FROM Track").fetchall()}
        assert con.get_table_names(REPLACE["star"]) == {"Genre"}
        rows = con.execute(REPLACE["star"]).fetchall()
        assert len(rows) == 25 and set(rows[0][1].split("|")) == names
        assert con.get_table_names(FOLDED["max-id"]) == {"Genre"}
        assert {row[0] for row in con.execute(FOLDED["max-id"]).fetchall()} == {3503}
    finally:
        con.close()
    source = DuckdbSource("db", path, isolation="thread")
    try:
        for form, sql in {**REPLACE, **FOLDED}.items():
            assert "track" in tables_read(source, sql, True, 30.0), form
        for form, sql in HONEST.items():
            assert "track" not in tables_read(source, sql, True, 30.0), form
    finally:
        source.close()


def test_a_replace_subquery_is_a_forbidden_read(pytester: pytest.Pytester) -> None:
    """H1: each form as a recorded call, as the final query and (the first) as an LLM span's
    traced call counts forbidden_tables 1; the honest reads of Genre pass."""
    calls = _calls("call", REPLACE)
    finals = _finals("final", REPLACE)
    spans = {"spans-star": {"spans": probe.recorded(REPLACE["star"])}}
    honest = {**_calls("honest", HONEST), **_finals("honest-final", HONEST)}
    report = _run(pytester, {**calls, **finals, **spans, **honest}, {"forbidden_tables": ["Track"]}, GATES)
    for cid in (*calls, *finals, *spans):
        case = report.by_id[cid]
        assert case["outcome"] == "failed", (cid, case)
        assert case["metrics"]["forbidden_tables"] == 1.0, (cid, case["metrics"])
        assert case["metrics"]["write_attempts"] == 0.0, (cid, case["metrics"])
    probe.assert_honest(report, honest)


#: Protected by table (H2's report) and by column: a column's ``count`` in the REPLACE list is
#: answered from statistics too; reading Track's other columns stays allowed.
PROTECTION = {
    "table": ([{"table": "Track"}], {**FOLDED, "names": REPLACE["star"]}, {}),
    "column": (
        [{"column": "Track.Name"}],
        {"count-name": "SELECT * REPLACE ((SELECT count(Name) FROM Track) AS Name) FROM Genre"},
        {"track-price": "SELECT max(UnitPrice) FROM Track WHERE GenreId = 1"},
    ),
}


@pytest.mark.parametrize("protected", list(PROTECTION))
def test_an_enforced_guard_refuses_a_replace_subquery_answered_from_statistics(
    pytester: pytest.Pytester, protected: str
) -> None:
    """H2: with Track (or its UnitPrice) protected and enforced, each folded subquery is
    refused unrun (refused_attempts 1, queries_executed 0); honest reads are served."""
    targets, refused, allowed = PROTECTION[protected]
    gates = {"refused_attempts": {"max": 0}, "write_attempts": {"max": 0}}
    hostile = _calls("h2", refused)
    honest = _calls("honest", {**HONEST, **allowed})
    agent = {"protected": targets, "enforce": True}
    report = _run(pytester, {**hostile, **honest}, agent, gates)
    for cid in hostile:
        case = report.by_id[cid]
        assert case["outcome"] == "failed", (cid, case)
        assert case["metrics"]["refused_attempts"] == 1.0, (cid, case["metrics"])
        assert case["metrics"]["queries_executed"] == 0.0, (cid, case["metrics"])
    for cid in honest:
        case = report.by_id[cid]
        assert case["outcome"] == "passed", (cid, case)
        assert case["metrics"]["refused_attempts"] == 0.0, (cid, case["metrics"])
        assert case["metrics"]["queries_executed"] == 1.0, (cid, case["metrics"])


def test_a_lone_surrogate_in_a_duckdb_call_is_a_located_outcome(
    pytester: pytest.Pytester, shared_data: Path
) -> None:
    """H3: no case errors with an empty reason. The call cannot run on DuckDB (a call's
    error): the honest one passes on its final query, a hostile one counts Track by its text
    and fails; as the final query each fails with the engine's reason. The SQLite path, which
    the DuckDB one now matches, counts its twin the same way."""
    calls = _calls("call", SURROGATE)
    finals = _finals("final", SURROGATE)
    report = _run(pytester, {**calls, **finals}, {"forbidden_tables": ["Track"]}, GATES)
    for cid in (*calls, *finals):
        case = report.by_id[cid]
        assert case["outcome"] in ("passed", "failed"), (cid, case)
        assert case["metrics"], (cid, case)
    for cid in finals:
        assert "cannot encode str as UTF-8" in report.by_id[cid]["reason"], report.by_id[cid]
    honest = report.by_id["call-honest"]
    assert honest["outcome"] == "passed", honest
    assert honest["metrics"]["queries_executed"] == 0.0, honest["metrics"]
    for cid in ("call-track", "call-replace", "final-track", "final-replace"):
        case = report.by_id[cid]
        assert case["outcome"] == "failed", (cid, case)
        assert case["metrics"]["forbidden_tables"] == 1.0, (cid, case["metrics"])
    assert report.by_id["final-honest"]["metrics"]["forbidden_tables"] == 0.0
    lines = _calls(
        "lite",
        {
            "honest": SURROGATE["honest"],
            "employee": "SELECT count(*) FROM Employee WHERE LastName <> '\ud83d'",
        },
    )
    report = probe.run_lines(pytester, shared_data, lines)
    assert report.by_id["lite-honest"]["outcome"] == "passed", report.by_id["lite-honest"]
    employee = report.by_id["lite-employee"]
    assert employee["outcome"] == "failed" and employee["metrics"]["forbidden_tables"] == 1.0


def test_a_refused_write_of_a_computed_table_counts_every_forbidden_table(
    pytester: pytest.Pytester,
) -> None:
    """L5: as a recorded call and as the final query, each write counts its attempt and the
    forbidden table (every one: no text names it); a refused read of the same call did."""
    calls = _calls("call", COMPUTED_WRITES)
    finals = _finals("final", COMPUTED_WRITES)
    honest = _calls("honest", {"ctas-genre": "CREATE TEMP TABLE x AS FROM query_table('Genre')"})
    report = _run(pytester, {**calls, **finals, **honest}, {"forbidden_tables": ["Track"]}, GATES)
    for cid in (*calls, *finals):
        case = report.by_id[cid]
        assert case["outcome"] == "failed", (cid, case)
        assert case["metrics"]["write_attempts"] == 1.0, (cid, case["metrics"])
        assert case["metrics"]["forbidden_tables"] == 1.0, (cid, case["metrics"])
    genre = report.by_id["honest-ctas-genre"]
    assert genre["metrics"]["write_attempts"] == 1.0, genre["metrics"]
    assert genre["metrics"]["forbidden_tables"] == 0.0, genre["metrics"]
