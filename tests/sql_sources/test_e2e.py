"""A YAML suite on real Chinook files, run through pytest itself (pytester): the user's view."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support import read_report

from .conftest import sha256, write_chinook_suite

CASES = {
    "kind": "sql",
    "datasource": "chinook",
    "thresholds": {"execution_accuracy": 1.0},
    "cases": [
        {"id": "artists", "question": "How many artists?", "gold": "SELECT count(*) FROM artist",
         "predicted": "SELECT COUNT(*) FROM Artist"},
        {"id": "wrong", "gold": "SELECT name FROM genre WHERE genreid < 4",
         "predicted": "SELECT name FROM genre WHERE genreid < 3"},
        {"id": "drop", "gold": "SELECT count(*) FROM genre", "predicted": "DROP TABLE genre"},
        {"id": "sneaky", "gold": "SELECT count(*) FROM genre",
         "predicted": "SELECT 1; DELETE FROM genre"},
        {"id": "slow", "gold": "SELECT 1", "timeout": 0.5,
         "predicted": "SELECT count(*) FROM track a, track b, track c"},
        {"id": "broken-gold", "gold": "SELECT * FROM no_such_table", "predicted": "SELECT 1"},
        {"id": "recorded", "gold": "SELECT 1", "datasource": None,
         "gold_result": {"columns": ["x"], "rows": [[1], [2]]},
         "predicted_result": {"columns": ["y"], "rows": [[2], [1]]}, "predicted": "SELECT 1"},
    ],
}


@pytest.fixture
def chinook_e2e(pytester: pytest.Pytester, shared_data: Path) -> pytest.Pytester:
    write_chinook_suite(pytester.path, shared_data, {},
                        {"test_chinook.yaml": json.dumps(CASES, indent=1)})
    return pytester


def _report(path: Path) -> dict[str, Any]:
    return read_report(path).by_id


def test_suite_outcomes(chinook_e2e: pytest.Pytester) -> None:
    db = chinook_e2e.path / "data" / "chinook.sqlite"
    before = sha256(db)
    result = chinook_e2e.runpytest("--queryeval-json=r.json", "-p", "no:cacheprovider")
    cases = _report(chinook_e2e.path / "r.json")
    assert cases["artists"]["outcome"] == "passed"
    assert cases["artists"]["metrics"]["execution_accuracy"] == 1.0
    assert cases["artists"]["difficulty"] == "easy"
    assert cases["wrong"]["outcome"] == "failed"
    assert cases["drop"]["outcome"] == "failed"
    assert cases["drop"]["reason"].startswith("refused: DROP")
    assert cases["sneaky"]["reason"].startswith("refused: 2 statements")
    assert cases["slow"]["reason"] == "timeout: query exceeded 0.5 s"
    assert cases["broken-gold"]["outcome"] == "error"
    assert "gold error" in cases["broken-gold"]["error"]
    assert cases["recorded"]["outcome"] == "passed"
    assert sha256(db) == before
    result.stdout.fnmatch_lines(["*refused: DROP*"])


def test_gold_cache_survives_sessions(chinook_e2e: pytest.Pytester) -> None:
    only = {**CASES, "cases": CASES["cases"][:1]}  # type: ignore[dict-item]
    chinook_e2e.makefile(".yaml", test_chinook=json.dumps(only))
    chinook_e2e.runpytest("--queryeval-json=a.json")
    chinook_e2e.runpytest("--queryeval-json=b.json")
    a, b = _report(chinook_e2e.path / "a.json"), _report(chinook_e2e.path / "b.json")
    assert a["artists"]["metrics"]["gold_seconds"] == b["artists"]["metrics"]["gold_seconds"]
    chinook_e2e.runpytest("--queryeval-json=c.json", "--queryeval-no-cache")
    c = _report(chinook_e2e.path / "c.json")
    assert c["artists"]["metrics"]["execution_accuracy"] == 1.0
