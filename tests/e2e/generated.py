"""The generated suite of the end-to-end layer: one small SQL suite on real SQLite and DuckDB
files that holds, together, what users combine (issue 43 item 8): a pass, compared failures
with near misses (``[]`` and ``["distinct"]``), an error (a gold that cannot run), an xfail, a
case asked twice (``repeat: 2``), one case fanned out over two engines, a task that writes on a
throwaway copy, and a live stand-in model: a loopback HTTP server standing in for a user's
model service (``source: http``, asked through the prediction pool; :class:`StandInModel`),
or, where no server can run beside the suite's runners, a ``source: python`` function in the
suite's folder that answers from the same table."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from tests.fixtures.model_service import ModelService, Request
from tests.support import write_suite

#: The stand-in model's answers, by case id.
ANSWERS = {
    "ann-total": "SELECT SUM(total) FROM orders WHERE customer = 'ann'",
    "big-orders": "SELECT id FROM orders WHERE total > 12",
    "customers": "SELECT customer FROM orders",
    "broken-gold": "SELECT 1",
    "known-gap": "SELECT count(*) FROM orders WHERE total > 100",
    "asked-twice": "SELECT count(*) FROM orders",
    "on-two-engines": "SELECT customer, count(*) FROM orders GROUP BY customer ORDER BY customer",
    "raise-prices": "UPDATE orders SET total = total + 1",
    # a conversation (issue 42): asked turn by turn; turn 3 takes the largest order, not the sum
    "orders-chat": {"1": "SELECT count(*) FROM orders",
                    "2": "SELECT count(*) FROM orders WHERE customer = 'ann'",
                    "3": "SELECT max(total) FROM orders WHERE customer = 'ann'"},
}

CASES = [
    {"id": "ann-total", "question": "How much did ann spend?",
     "gold": "SELECT sum(total) FROM orders WHERE customer = 'ann'"},
    {"id": "big-orders", "question": "Which orders are 12 or more?",
     "gold": "SELECT id FROM orders WHERE total >= 12"},
    {"id": "customers", "question": "Who ordered?", "gold": "SELECT DISTINCT customer FROM orders"},
    {"id": "broken-gold", "question": "What does the missing table hold?",
     "gold": "SELECT * FROM no_such_table"},
    {"id": "known-gap", "question": "How many orders are over 10?", "xfail": "a known gap",
     "gold": "SELECT count(*) FROM orders WHERE total > 10"},
    {"id": "asked-twice", "question": "How many orders?", "repeat": 2,
     "gold": "SELECT count(*) FROM orders"},
    {"id": "on-two-engines", "question": "Orders per customer?", "datasource": ["shop", "duck"],
     "gold": "SELECT customer, count(*) FROM orders GROUP BY customer ORDER BY customer"},
    {"id": "orders-chat", "conversation": [
        {"role": "user", "content": "How many orders are there?",
         "gold": "SELECT count(*) FROM orders"},
        {"role": "assistant", "content": "There are 3 orders."},
        {"role": "user", "content": "And how many are ann's?",
         "gold": "SELECT count(*) FROM orders WHERE customer = 'ann'"},
        {"role": "user", "content": "What did she spend?",
         "gold": "SELECT sum(total) FROM orders WHERE customer = 'ann'"}]},
]
TASKS = [
    {"id": "raise-prices", "question": "Add 1 to every order's total.", "task": "dml",
     "gold": "UPDATE orders SET total = total + 1",
     "checks": [{"query": "SELECT id, total FROM orders", "compare": "gold"}]},
]
ROWS = "INSERT INTO orders VALUES (1, 'ann', 30), (2, 'bob', 12), (3, 'ann', 7);"
SCHEMA = "CREATE TABLE orders (id INTEGER PRIMARY KEY, customer TEXT, total REAL);"

STANDIN = f'''"""A stand-in for a live model service (the e2e layer's generated suite)."""
import json

ANSWERS = json.loads({json.dumps(json.dumps(ANSWERS))})


def predict(case):
    answer = ANSWERS[case["id"].split("[")[0]]  # a fanned-out item: the case's own answer
    return answer[str(case["turn"])] if isinstance(answer, dict) else answer  # a turn's
'''


class StandInModel(ModelService):
    """The model service the generated suite asks (a stand-in: a user's service cannot run
    here): :data:`ANSWERS` by case id, a fanned-out item by its case's."""

    def answer(self, request: Request) -> tuple[int, Any]:
        case_id = str(request.case_id).split("[")[0]
        if case_id not in ANSWERS:
            return 404, b"no such case"
        answer = ANSWERS[case_id]
        if isinstance(answer, dict):  # a conversation: the turn's answer
            answer = answer[str(request.body["case"]["turn"])]
        return 200, {"predicted": answer}


def make_suite(root: Path, service: str | None = None) -> Path:
    """Write the generated suite under ``root`` (its own rootdir) and return ``root``; its
    model is the HTTP service at ``service`` (a :class:`StandInModel`'s url), else the python
    stand-in."""
    import duckdb

    config = {
        "datasources": {
            "shop": {"type": "sqlite", "path": "shop.db"},
            "duck": {"type": "duckdb", "path": "shop.duckdb"},
            "store": {"type": "sqlite", "path": "shop.db", "writable": "sandbox"},
        },
        "predictions": {"source": "http", "url": f"{service}/predict", "body": {"case": "{case}"},
                        "response_path": "predicted", "retries": 0, "timeout": 30}
        if service else {"source": "python", "function": "standin_model:predict"},
        "model": "standin",
        "thresholds": {"execution_accuracy": 1.0},
        "gates": {"pass_rate": 0.3, "execution_accuracy": {"mean": 0.3}},
    }
    write_suite(root, config, {
        "test_shop.yaml": {"kind": "sql", "datasource": "shop", "cases": CASES},
        "test_tasks.yaml": {"kind": "sql", "datasource": "store", "cases": TASKS},
        "standin_model.py": STANDIN,
    })
    with sqlite3.connect(root / "shop.db") as db:
        db.executescript(SCHEMA + ROWS)
    db.close()
    con = duckdb.connect(str(root / "shop.duckdb"))
    con.execute(SCHEMA.replace("INTEGER PRIMARY KEY", "INTEGER"))
    con.execute(ROWS)
    con.close()
    return root
