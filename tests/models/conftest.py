"""A two-model suite on a real SQLite file: six cases, two predictions files that differ on
four of them, and one case with its own inline prediction (never fanned out)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from tests.support import dump, write_suite

RIGHT = {"q1": "SELECT COUNT(*) FROM t", "q2": "SELECT MAX(x) FROM t",
         "q3": "SELECT MIN(x) FROM t", "q4": "SELECT SUM(x) FROM t",
         "q5": "SELECT x FROM t WHERE x > 1 ORDER BY x", "q6": "SELECT AVG(x) FROM t"}
WRONG = "SELECT 42"
#: model-a is wrong on q6 only, model-b on q1..q4: five disagreements, four model-a's way
#: (exact McNemar: 4 against 1 discordant cases, p = 2 * (1 + 5) / 2 ** 5 = 0.375).
MODEL_A = {**RIGHT, "q6": WRONG}
MODEL_B = {**RIGHT, **dict.fromkeys(("q1", "q2", "q3", "q4"), WRONG)}


def _predictions(answers: dict[str, str], latency: float) -> str:
    return "".join(json.dumps({"id": i, "predicted": q, "latency": latency}) + "\n"
                   for i, q in answers.items())


def two_model_suite(root: Path, predictions: object = None) -> Path:
    """The suite under ``root``; ``predictions`` replaces the models mapping of its config."""
    db = root / "data.sqlite"
    root.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE t (x INTEGER)")
        conn.executemany("INSERT INTO t VALUES (?)", [(1,), (2,), (3,)])
    conn.close()
    config = {
        "datasources": {"db": {"type": "sqlite", "path": "data.sqlite"}},
        "predictions": predictions if predictions is not None else {
            "model-a": {"source": "file", "path": "a.jsonl"},
            "model-b": {"source": "file", "path": "b.jsonl"}},
    }
    cases = {"kind": "sql", "datasource": "db",
             "cases": [{"id": i, "question": f"question {i}", "gold": q}
                       for i, q in RIGHT.items()]
             + [{"id": "inline", "question": "count", "gold": RIGHT["q1"],
                 "predicted": RIGHT["q1"]}]}
    return write_suite(root, config, {"test_cases.yaml": dump(cases),
                                      "a.jsonl": _predictions(MODEL_A, 0.5),
                                      "b.jsonl": _predictions(MODEL_B, 1.5)})


@pytest.fixture
def models_suite(pytester: pytest.Pytester) -> pytest.Pytester:
    two_model_suite(pytester.path)
    return pytester
