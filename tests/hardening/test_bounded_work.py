"""Work a hostile prediction makes the plugin do is bounded, with a precise per-case reason:

* a predicted query over ``max_query_bytes`` (64 KiB by default; a 1 MB ``SELECT 1+1+...``
  kept the guard's parser busy for 36 s) is refused unparsed, on SQL and SPARQL; the limit is
  configurable per file or case;
* a long statement under the limit is parsed in a worker process killed at the guard's
  deadline (sqlglot's parse runs in one call no timer can stop);
* the column-alignment search (30 predicted against 6 gold columns took 162 s) and the
  execution-accuracy column assignment (12 columns of equal value multisets: factorial) stop
  at a deterministic work budget: the case fails with "search budget exhausted: ...", never
  with a guessed score, and the other cases run.

No timing is asserted: the reasons prove which bound ended the work."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from .conftest import by_id, dump, no_traceback, run_suite

ONE_MB_SUM = "SELECT " + "+".join(["1"] * 500_000)  # 1,000,006 bytes


def _sqlite(path: Path) -> Path:
    db = path / "tiny.sqlite"
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE t (x INTEGER)")
    conn.execute("INSERT INTO t VALUES (1)")
    conn.commit()
    conn.close()
    return db


def _ttl(path: Path) -> Path:
    ttl = path / "tiny.ttl"
    ttl.write_text("<http://x/a> <http://x/p> 1 .\n", encoding="utf-8")
    return ttl


def test_oversized_predictions_are_refused_unparsed(suite: pytest.Pytester) -> None:
    _sqlite(suite.path)
    _ttl(suite.path)
    suite.makefile(".yaml", queryeval=dump({"datasources": {
        "db": {"type": "sqlite", "path": "tiny.sqlite"},
        "graph": {"type": "rdf", "path": "tiny.ttl"}}}))
    sparql_big = "SELECT ?x WHERE { ?s ?p ?x FILTER(" + "||".join(["?x = 1"] * 150_000) + ") }"
    suite.makefile(".yaml", test_sql=dump({
        "kind": "sql", "datasource": "db", "thresholds": {"execution_accuracy": 1.0},
        "cases": [
            {"id": "sql-honest", "gold": "SELECT x FROM t", "predicted": "SELECT x FROM t"},
            {"id": "sql-1mb", "gold": "SELECT x FROM t", "predicted": ONE_MB_SUM},
            # the limit is configurable: 100 bytes refuses an ordinary query
            {"id": "sql-small-limit", "gold": "SELECT x FROM t", "max_query_bytes": 100,
             "predicted": "SELECT x FROM t WHERE x = 1 " + "AND x = 1 " * 20},
        ]}))
    suite.makefile(".yaml", test_sparql=dump({
        "kind": "sparql", "datasource": "graph", "thresholds": {"execution_accuracy": 1.0},
        "cases": [
            {"id": "sparql-honest", "gold": "SELECT ?x WHERE { ?s ?p ?x }",
             "predicted": "SELECT ?x WHERE { ?s ?p ?x }"},
            {"id": "sparql-big", "gold": "SELECT ?x WHERE { ?s ?p ?x }", "predicted": sparql_big},
        ]}))
    suite.makefile(".yaml", test_bad_limit=dump({
        "kind": "sql", "datasource": "db", "max_query_bytes": "lots",
        "cases": [{"id": "bad-limit", "gold": "SELECT x FROM t", "predicted": "SELECT 1"}]}))
    result, report = run_suite(suite)
    no_traceback(result)
    recs = by_id(report)
    assert recs["sql-honest"]["outcome"] == "passed"
    assert recs["sparql-honest"]["outcome"] == "passed"
    assert recs["sql-1mb"]["outcome"] == "failed"
    assert recs["sql-1mb"]["reason"] == (
        "refused: the predicted query holds 1,000,006 bytes, over max_query_bytes (65,536); "
        "it was not parsed or executed")
    assert recs["sql-small-limit"]["reason"].startswith(
        "refused: the predicted query holds 228 bytes, over max_query_bytes (100)")
    size = len(sparql_big.encode())
    assert recs["sparql-big"]["outcome"] == "failed"
    assert recs["sparql-big"]["reason"] == (
        f"refused: the predicted query holds {size:,} bytes, over max_query_bytes (65,536); "
        "it was not parsed or executed")
    assert recs["bad-limit"]["outcome"] == "error"
    assert "test_bad_limit.yaml:" in recs["bad-limit"]["error"]
    assert "max_query_bytes: must be a positive integer" in recs["bad-limit"]["error"]


def test_the_guard_parse_of_a_long_statement_has_a_hard_deadline(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Under max_query_bytes but slow to parse: the worker is killed at the deadline."""
    import importlib

    from pytest_queryeval.errors import QueryRefused

    # sys.modules' own module: an in-process pytester run may have left a stale package attribute
    sqlguard = importlib.import_module("pytest_queryeval.sources.sqlguard")
    monkeypatch.setattr(sqlguard, "GUARD_TIMEOUT", 0.5)
    slow = "SELECT " + "+".join(["1"] * 200_000)  # ~8 s of sqlglot parsing
    with pytest.raises(QueryRefused) as info:
        sqlguard.check_read_only(slow, "sqlite")
    assert str(info.value) == ("the guard could not parse this 400,006-character statement "
                               "within 0.5 s; an unchecked statement is never executed")
    # the worker was replaced: a long honest statement is checked, a long write refused (with
    # the default deadline: a busy machine may take more than 0.5 s to start the new worker)
    monkeypatch.undo()
    sqlguard.check_read_only("SELECT " + " + ".join(["1"] * 2000), "sqlite")
    with pytest.raises(QueryRefused, match="DELETE is not a read-only query"):
        sqlguard.check_read_only("DELETE FROM t WHERE x = " + "+".join(["1"] * 3000), "sqlite")


def _lookalike(columns: int, rows: int, seed: int) -> dict[str, Any]:
    """Columns of values drawn from three: every column looks like every other."""
    rnd = random.Random(seed)
    return {"columns": [f"c{i}" for i in range(columns)],
            "rows": [[rnd.randrange(3) for _ in range(columns)] for _ in range(rows)]}


def _shifted(columns: int, rows: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """Gold rows ``(k, k, ..., k)``; predicted the same but the last column shifted by one:
    every column has the gold's value multiset and every projection without the last column
    matches, so the assignment search tries every permutation."""
    gold = {"columns": [f"g{i}" for i in range(columns)],
            "rows": [[k] * columns for k in range(rows)]}
    pred = {"columns": [f"p{i}" for i in range(columns)],
            "rows": [[k] * (columns - 1) + [(k + 1) % rows] for k in range(rows)]}
    return gold, pred


def test_comparison_searches_stop_at_their_budget(suite: pytest.Pytester) -> None:
    gold_tsse, pred_tsse = _shifted(12, 5)
    ok = {"columns": ["n"], "rows": [[1]]}
    suite.makefile(".yaml", test_search=dump({
        # the budgets are under test: the comparison's deadline (the case's timeout, 30 s by
        # default) must not end the ~5 s searches first on a loaded machine
        "kind": "sql", "thresholds": {"execution_accuracy": 1.0}, "timeout": 600,
        "cases": [
            {"id": "honest", "gold_result": ok, "predicted_result": ok},
            {"id": "alignment-30-vs-6", "gold_result": _lookalike(6, 20, 1),
             "predicted_result": _lookalike(30, 20, 2)},
            {"id": "assignment-12", "gold_result": gold_tsse, "predicted_result": pred_tsse},
            {"id": "after", "gold_result": ok, "predicted_result": ok},
        ]}))
    result, report = run_suite(suite)
    no_traceback(result)
    recs = by_id(report)
    assert recs["honest"]["outcome"] == recs["after"]["outcome"] == "passed"
    align = recs["alignment-30-vs-6"]
    assert align["outcome"] == "failed"
    assert align["reason"] == ("search budget exhausted: the column alignment of 30 predicted "
                               "to 6 gold columns stopped after 20,000,000 units of work")
    assign = recs["assignment-12"]
    assert assign["outcome"] == "failed"
    assert assign["reason"] == ("search budget exhausted: the column assignment of 12 columns "
                                "(execution accuracy) stopped after 20,000,000 units of work")
    result.assert_outcomes(passed=2, failed=2)
