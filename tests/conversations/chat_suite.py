"""A small real SQLite store the conversation tests ask questions of, and the suite on it."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from tests.support import dump, write_suite

#: Invoices of two years: 3 in 2023, 2 in 2024 (one of them over 10).
INVOICES = [(1, "2023-02-01", 4.0), (2, "2023-06-01", 8.0), (3, "2023-11-01", 12.0),
            (4, "2024-01-05", 5.0), (5, "2024-03-09", 15.0)]


def make_store(path: Path) -> Path:
    """``store.sqlite``: one table, ``invoice(id, invoice_date, total)``."""
    with sqlite3.connect(path) as con:
        con.execute("CREATE TABLE invoice (id INTEGER PRIMARY KEY, invoice_date TEXT, "
                    "total REAL)")
        con.executemany("INSERT INTO invoice VALUES (?, ?, ?)", INVOICES)
    con.close()
    return path


COUNT = "SELECT count(*) FROM invoice"
COUNT_2024 = "SELECT count(*) FROM invoice WHERE invoice_date >= '2024-01-01'"
COUNT_2024_BIG = ("SELECT count(*) FROM invoice WHERE invoice_date >= '2024-01-01' "
                  "AND total > 10")


def chat(**turn_predictions: Any) -> list[dict[str, Any]]:
    """The three-turn conversation the tests share; ``p1``/``p2``/``p3`` add inline
    predictions to turns 1, 2, 3."""
    turns: list[dict[str, Any]] = [
        {"role": "user", "content": "How many invoices are there?", "gold": COUNT},
        {"role": "assistant", "content": "There are 5 invoices."},
        {"role": "user", "content": "And only those from 2024?", "gold": COUNT_2024},
        {"role": "user", "content": "Of those, how many are over 10?", "gold": COUNT_2024_BIG},
    ]
    for key, index in (("p1", 0), ("p2", 2), ("p3", 3)):
        if key in turn_predictions:
            turns[index]["predicted"] = turn_predictions[key]
    return turns


def conversation_suite(root: Path, cases: list[dict[str, Any]],
                       config: dict[str, Any] | None = None, kind: str = "sql") -> Path:
    """A suite in ``root`` on a fresh store, ``cases`` in ``test_chat.yaml``."""
    make_store(root / "store.sqlite")
    write_suite(root, {"datasources": {"store": {"type": "sqlite", "path": "store.sqlite"}},
                       **(config or {})},
                {"test_chat.yaml": dump({"kind": kind, "datasource": "store",
                                         "cases": cases})})
    return root
