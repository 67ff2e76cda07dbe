"""Ordinary SQL gets its structure scores (issue 60 item 5): on the user's own database a
table alias written without ``AS`` is scored as what the query means (sqlglot's normalisation
before Spider's parser); on a Spider artifact (a ``spider-schema`` source) the reference's
grammar holds as it is; a gold that still gets no exact set match says why.

A real SQLite file, and a Spider ``tables.json`` of the same two tables in the benchmark's
own format.
"""

from __future__ import annotations

import json
import sqlite3

import pytest

from tests.support import dump, run_report

NO_AS = ("SELECT c.name FROM customers c JOIN orders o ON c.id = o.customer_id "
         "WHERE o.total > 10")
WITH_AS = ("SELECT c.name FROM customers AS c JOIN orders AS o ON c.id = o.customer_id "
           "WHERE o.total > 10")
PLAIN = ("SELECT customers.name FROM customers JOIN orders ON customers.id = orders.customer_id "
         "WHERE orders.total > 10")
WINDOW = "SELECT name, row_number() OVER (ORDER BY id) FROM customers"

TABLES = [{
    "db_id": "shop",
    "table_names_original": ["customers", "orders"], "table_names": ["customers", "orders"],
    "column_names_original": [[-1, "*"], [0, "id"], [0, "name"], [1, "id"],
                              [1, "customer_id"], [1, "total"]],
    "column_names": [[-1, "*"], [0, "id"], [0, "name"], [1, "id"], [1, "customer id"],
                     [1, "total"]],
    "column_types": ["text", "number", "text", "number", "number", "number"],
    "primary_keys": [1, 3], "foreign_keys": [[4, 1]]}]

CASES = [{"id": "gold-no-as", "question": "q", "gold": NO_AS, "predicted": PLAIN},
         {"id": "gold-as", "question": "q", "gold": WITH_AS, "predicted": PLAIN},
         {"id": "pred-no-as", "question": "q", "gold": WITH_AS, "predicted": NO_AS}]


@pytest.fixture
def shop(suite: pytest.Pytester) -> pytest.Pytester:
    with sqlite3.connect(suite.path / "shop.db") as con:
        con.executescript(
            "CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT);"
            "CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER "
            "REFERENCES customers(id), total REAL);"
            "INSERT INTO customers VALUES (1, 'ann'), (2, 'bob');"
            "INSERT INTO orders VALUES (1, 1, 30), (2, 2, 12), (3, 1, 7);")
    con.close()
    (suite.path / "tables.json").write_text(json.dumps(TABLES), encoding="utf-8")
    suite.makefile(".yaml", queryeval=dump({
        "datasources": {"shop": {"type": "sqlite", "path": "shop.db"},
                        "spider": {"type": "spider-schema", "tables": "tables.json",
                                   "db_id": "shop"}},
        "thresholds": {"execution_accuracy": 1.0}}))
    return suite


def test_an_alias_without_as_is_scored_as_the_query_means_on_the_users_database(
        shop: pytest.Pytester) -> None:
    shop.makefile(".yaml", test_cases=dump({"kind": "sql", "datasource": "shop",
                                            "cases": CASES}))
    _, report = run_report(shop)
    for cid in ("gold-no-as", "gold-as", "pred-no-as"):
        rec = report.by_id[cid]
        assert rec["metrics"].get("exact_set_match") == 1.0, (cid, rec["metrics"])
        assert rec["difficulty"] == "medium", (cid, rec["difficulty"])
        assert rec["labels"]["hardness"] == "medium"


def test_a_spider_artifact_keeps_the_references_grammar(shop: pytest.Pytester) -> None:
    cases = [{k: v for k, v in c.items()} for c in CASES]
    for c in cases:
        c["thresholds"] = {"exact_set_match": 0.0}
    shop.makefile(".yaml", test_cases=dump({"kind": "sql", "datasource": "spider",
                                            "cases": cases}))
    _, report = run_report(shop)
    # the gold as written is outside the grammar: no structure, as the reference cannot parse it
    assert "exact_set_match" not in report.by_id["gold-no-as"]["metrics"]
    assert report.by_id["gold-as"]["metrics"]["exact_set_match"] == 1.0
    # the reference rejects the prediction without AS: 0, as evaluation.py scores it
    pred = report.by_id["pred-no-as"]
    assert pred["metrics"]["exact_set_match"] == 0.0
    assert "unknown table or alias 'c'" in pred["details"]["structure_parse_error"]


def test_a_gold_outside_the_grammar_even_normalised_says_why(shop: pytest.Pytester) -> None:
    shop.makefile(".yaml", test_cases=dump({"kind": "sql", "datasource": "shop", "cases": [
        {"id": "window", "question": "q", "gold": WINDOW, "predicted": WINDOW}]}))
    _, report = run_report(shop)
    rec = report.by_id["window"]
    assert "exact_set_match" not in rec["metrics"]
    assert rec["details"]["structure_not_scored"].startswith(
        "the gold is outside Spider's grammar: "), rec["details"]
