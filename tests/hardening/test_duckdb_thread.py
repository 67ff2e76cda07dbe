"""DuckDB with ``isolation: thread`` on a query that DuckDB's interrupt does not stop (one
``levenshtein`` of two 200,000-character strings runs for minutes in a single call): the case
ends with its timeout and a precise reason, the cases after it run on a fresh connection, and
the session finishes within its timeouts plus a margin; Ctrl-C stops the session within
seconds and the report of the finished cases is written. Before, both the timeout and Ctrl-C
were ignored (killed at 60 s, no report). Real DuckDB file, real plugin in a subprocess."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from pytest_queryeval.sources.sandboxed import HARD_GRACE

from .conftest import by_id, dump, no_traceback, run_suite
from .test_interrupt_sql import _check, _suite, interrupt_mid_query

duckdb = pytest.importorskip("duckdb")

LEVENSHTEIN = "SELECT levenshtein(repeat('a', 200000), repeat('b', 200000))"
#: Start-up of a pytest subprocess and DuckDB under load, on top of the case's timeouts.
MARGIN_S = 30.0


def _genre(path: Path) -> None:
    conn = duckdb.connect(str(path / "g.duckdb"))
    conn.execute("CREATE TABLE genre AS SELECT range AS id FROM range(25)")
    conn.close()


def test_an_uninterruptible_query_ends_at_its_timeout(suite: pytest.Pytester) -> None:
    _genre(suite.path)
    suite.makefile(".yaml", queryeval=dump({"datasources": {
        "db": {"type": "duckdb", "path": "g.duckdb", "isolation": "thread"}}}))
    suite.makefile(".yaml", test_cases=dump({
        "kind": "sql", "datasource": "db", "thresholds": {"execution_accuracy": 1.0},
        "cases": [
            {"id": "before", "gold": "SELECT count(*) FROM genre",
             "predicted": "SELECT count(*) FROM genre"},
            {"id": "lev", "gold": "SELECT 1", "predicted": LEVENSHTEIN, "timeout": 3},
            {"id": "after", "gold": "SELECT count(*) FROM genre",
             "predicted": "SELECT count(id) FROM genre"},
        ]}))
    start = time.monotonic()
    result, report = run_suite(suite, "-p", "no:cacheprovider", subprocess=True)
    elapsed = time.monotonic() - start
    no_traceback(result)
    cases = by_id(report)
    assert cases["before"]["outcome"] == "passed"
    assert cases["after"]["outcome"] == "passed"  # on a fresh connection
    assert cases["lev"]["outcome"] == "failed"
    assert cases["lev"]["reason"] == (
        "timeout: query exceeded 3 s (the engine did not stop by itself: the query was "
        "abandoned, still running in a thread of this process; isolation: process would "
        "kill it)"), cases["lev"]["reason"]
    assert elapsed < 3 + HARD_GRACE + MARGIN_S, f"the session took {elapsed:.0f} s"


def test_ctrl_c_during_an_uninterruptible_query(suite: pytest.Pytester) -> None:
    _genre(suite.path)
    ids = _suite(suite, {"type": "duckdb", "path": "g.duckdb", "isolation": "thread"},
                 LEVENSHTEIN, "SELECT count(*) FROM genre", 3, 3)
    done, _ = interrupt_mid_query(suite, scored_first=3)
    finished = _check(suite, done, ids[:3])
    assert finished == ids[:3], "exactly the cases finished before Ctrl-C"
