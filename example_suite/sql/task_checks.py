"""A Python check of example_suite/sql/test_tasks.yaml (docs/tasks.md): called in the sandbox
worker as ``function(conn, predicted, gold)`` on the prediction's copy of the database."""


def no_price_lowered(conn, predicted, gold):
    """No track costs less than the cheapest price before the change (0.99)."""
    cheapest = conn.execute("SELECT min(UnitPrice) FROM Track").fetchone()[0]
    assert cheapest >= 0.99, f"a price was lowered to {cheapest}"
