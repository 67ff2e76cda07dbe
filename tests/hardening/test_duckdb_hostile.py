"""A DuckDB suite through the whole plugin (pytester): gold against prediction with
execution_accuracy, and hostile predictions between honest cases, each failing with its own
reason while the file stays byte-for-byte unchanged and no file appears beside it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.sql_sources.attacks import DUCKDB, DUCKDB_FILE_READS
from tests.sql_sources.duckdb_data import build_chinook_duckdb

from .conftest import by_id, no_traceback, run_suite
from .test_hostile_queries import SQL_EXTRA, expected_reason

pytest.importorskip("duckdb")

HONEST = [
    {"id": "artists", "gold": "SELECT count(*) FROM artist",
     "predicted": "SELECT COUNT(*) FROM Artist"},
    {"id": "top-genre", "gold": "SELECT g.name FROM genre g JOIN track t USING (genre_id) "
                                "GROUP BY g.name ORDER BY count(*) DESC LIMIT 1",
     "predicted": "SELECT name FROM genre WHERE genre_id = (SELECT genre_id FROM track "
                  "GROUP BY genre_id ORDER BY count(*) DESC LIMIT 1)"},
    {"id": "wrong", "gold": "SELECT name FROM genre WHERE genre_id < 4",
     "predicted": "SELECT name FROM genre WHERE genre_id < 3"},
]
RUNAWAY = {"id": "runaway", "gold": "SELECT 1", "timeout": 2,
           "predicted": "SELECT count(*) FROM range(1000000) a, range(1000000) b"}
HUGE = {"id": "huge", "datasource": "small", "gold": "SELECT name FROM track LIMIT 3",
        "predicted": "SELECT repeat('x', 1000) FROM range(200000)"}


def _attacks() -> list[tuple[str, str]]:
    seen: list[str] = []
    for q in [*DUCKDB, *SQL_EXTRA, *DUCKDB_FILE_READS]:
        if q not in seen:
            seen.append(q)
    return [(f"attack-{i:03d}", q) for i, q in enumerate(seen)]


def _sha(path: Path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def duckdb_suite(suite: pytest.Pytester) -> pytest.Pytester:
    db = suite.path / "data" / "chinook.duckdb"
    db.parent.mkdir()
    build_chinook_duckdb(db, suite.path)
    for csv in suite.path.glob("*.csv"):
        csv.unlink()
    suite.makefile(".yaml", queryeval=json.dumps({"datasources": {
        "chinook": {"type": "duckdb", "path": "data/chinook.duckdb"},
        "small": {"type": "duckdb", "path": "data/chinook.duckdb", "max_bytes": 100_000},
    }}))
    cases: list[dict[str, Any]] = [HONEST[0]]
    cases += [{"id": cid, "gold": "SELECT count(*) FROM genre", "predicted": q}
              for cid, q in _attacks()]
    cases += [*HONEST[1:], RUNAWAY, HUGE]
    suite.makefile(".yaml", test_duckdb=json.dumps(
        {"kind": "sql", "datasource": "chinook", "thresholds": {"execution_accuracy": 1.0},
         "cases": cases}, indent=1))
    return suite


def test_duckdb_suite_through_the_plugin(duckdb_suite: pytest.Pytester) -> None:
    db = duckdb_suite.path / "data" / "chinook.duckdb"
    before = _sha(db)
    result, report = run_suite(duckdb_suite, "-p", "no:cacheprovider")
    no_traceback(result)
    cases = by_id(report)
    attacks = _attacks()
    assert len(report["cases"]) == len(attacks) + len(HONEST) + 2
    for cid in ("artists", "top-genre"):
        assert cases[cid]["outcome"] == "passed", cases[cid]
        assert cases[cid]["metrics"]["execution_accuracy"] == 1.0
    assert cases["wrong"]["outcome"] == "failed"
    assert cases["wrong"]["metrics"]["execution_accuracy"] == 0.0
    wrong = []
    for cid, query in attacks:
        rec = cases[cid]
        expected = (("refused: the source allows no file, network or extension access",
                     *(f"refused: function {name}() reads a file or URL"  # the guard, first
                       for name in ("read_csv", "read_text", "glob", "read_blob",
                                    "read_parquet")))
                    if query in DUCKDB_FILE_READS
                    else expected_reason(query, ("refused: ", "cannot parse: ")))
        if rec["outcome"] != "failed" or not str(rec["reason"]).startswith(expected) \
                or rec["metrics"].get("execution_accuracy") != 0.0:
            wrong.append((query, rec["outcome"], rec["reason"] or rec["error"]))
    assert not wrong, "\n".join(map(repr, wrong))
    assert cases["runaway"]["outcome"] == "failed"
    assert cases["runaway"]["reason"] == "timeout: query exceeded 2 s"
    assert cases["huge"]["outcome"] == "failed"
    assert cases["huge"]["reason"] == ("truncated: the predicted result holds more than "
                                       "100,000 bytes (max_bytes); a partial result is never "
                                       "scored")
    assert _sha(db) == before
    assert sorted(p.name for p in db.parent.iterdir()) == ["chinook.duckdb"]
