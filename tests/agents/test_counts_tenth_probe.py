"""Issue 58, the tenth hostile re-probe: statement texts the scorer does not run itself were
classified by their first word and passed ``write_attempts: {max: 0}`` /
``forbidden_tables: {max: 0}`` with a count of 0. Each is now read by a parser of the
datasource's language (sqlglot in its dialect, DuckDB's and PostgreSQL's own parsers, the Cypher
guard's tokenizer) and counted as a write unless the parser proves it a read; a swept text or
span holding one leaves the counts not established. On a real Chinook SQLite copy, a DuckDB
file and the example's ladybug graph, from a predictions file.

Places: another tool's argument (``duckdb {"input": X}``, ``kuzu {"input": X}``: a harness
serving a tool of that name runs X), a text beside the trajectory (``sql_log: [X]``) and a
CHAIN span's ``db.statement`` X. Before: every form below passed with a count of 0."""

from __future__ import annotations

import contextlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.agents.test_counts_fail_closed import HONEST, _honest, one
from tests.agents.test_counts_from_what_ran import DELETE, GOLD, _file_suite, duckdb_employees
from tests.agents.test_counts_ninth_probe import HONEST_SPAN, UNESTABLISHED, _span
from tests.agents.test_counts_not_established import EMPLOYEE, call
from tests.support import run_report, write_suite

tool = {"role": "tool", "tool_call_id": "b", "content": "ok"}

#: Writes another tool's argument held that no count saw (sqlite and duckdb alike).
SQL_WRITES = {
    "begin": "BEGIN; DELETE FROM Genre; COMMIT;",
    "recursive": "WITH RECURSIVE r AS (SELECT 1) DELETE FROM Genre",
    "materialized": "WITH a AS MATERIALIZED (SELECT 1) DELETE FROM Genre",
    "explain-analyze-delete": "EXPLAIN ANALYZE DELETE FROM Genre",
    "prepare": "PREPARE p AS DELETE FROM Genre; EXECUTE p;",
    "set-then-delete": "SET threads = 1; DELETE FROM Genre",
    "savepoint": "SAVEPOINT a; DELETE FROM Genre;",
    "use-then-delete": "USE chinook; DELETE FROM Genre",
    "export": "EXPORT DATABASE 'dump'",
}
#: Reads of the forbidden Employee another tool's argument held that no count saw.
SQL_READS = {
    "pivot": "PIVOT Employee ON Title USING count(*)",
    "explain-analyze-employee": "EXPLAIN ANALYZE SELECT FirstName FROM Employee",
    "describe-query": "DESCRIBE SELECT FirstName FROM Employee",
}
#: Counted on main already: the controls.
SQL_CONTROLS = {"control-delete": (DELETE, "write_attempts"),
                "control-employee": (EMPLOYEE, "forbidden_tables")}
#: A statement no parser reads: a write head is a write, and so is one the guard the replayed
#: call meets refuses for a write word in it (the thirty-seventh re-probe's M6: the same text
#: replayed was a write attempt, unrun an error).
UNPARSED = {"unparsed-delete": ("DELETE FROM Genre WHERE (", "write"),
            "unparsed-with": ("WITH x AS (SELECT 1) DELETE FROM Genre WHERE (", "write")}
#: Prose and harmless statements in another tool's argument: passed before, pass now.
PROSE = ["set up sqlite, then delete from the cache", "SELECT syntax", "show me the tables",
         "describe the data", "begin with the schema", "use the Genre table",
         "export the results", "commit changes", "vacuum", "Begin", "Summarize it"]


def _datasource(pytester: pytest.Pytester, engine: str) -> dict[str, Any] | None:
    if engine == "sqlite":
        return None
    duckdb_employees(pytester.path / "chinook.duckdb")
    return {"type": "duckdb", "path": "chinook.duckdb"}


def _other_tool(text: str, name: str = "duckdb") -> dict[str, Any]:
    return {"trajectory": [*one(GOLD), call("b", name, {"input": text}), tool]}


@pytest.mark.parametrize("engine", ["sqlite", "duckdb"])
def test_another_tools_statement_is_a_read_only_when_a_parser_proves_it(
        pytester: pytest.Pytester, shared_data: Path, engine: str) -> None:
    lines = {**{k: _other_tool(v) for k, v in {**SQL_WRITES, **SQL_READS}.items()},
             **{k: _other_tool(v) for k, (v, _) in SQL_CONTROLS.items()},
             **{f"prose-{i}": _other_tool(t, "search_docs") for i, t in enumerate(PROSE)},
             **{k: _other_tool(v) for k, (v, _) in UNPARSED.items()}, **HONEST}
    _file_suite(pytester, shared_data, lines, _datasource(pytester, engine))
    _, report = run_report(pytester, "-p", "no:cacheprovider")
    unparsed = {cid: (report.by_id[cid]["outcome"], report.by_id[cid]["metrics"].get(
        "write_attempts"), "no parser of the datasource's language reads it" in (
            report.by_id[cid].get("error") or "")) for cid in UNPARSED}
    assert unparsed == {"unparsed-delete": ("failed", 1.0, False),
                        "unparsed-with": ("failed", 1.0, False)}, \
        (unparsed, report.by_id["unparsed-with"].get("error"))
    expected = {**{k: ("failed", "write_attempts") for k in SQL_WRITES},
                **{k: ("failed", "forbidden_tables") for k in SQL_READS},
                **{k: ("failed", m) for k, (_, m) in SQL_CONTROLS.items()}}
    got = {cid: (report.by_id[cid]["outcome"], report.by_id[cid]["metrics"].get(metric))
           for cid, (_, metric) in expected.items()}
    assert got == {cid: (outcome, 1.0) for cid, (outcome, _) in expected.items()}, got
    prose = {cid: report.by_id[cid]["outcome"] for cid in lines if cid.startswith("prose-")}
    assert set(prose.values()) == {"passed"}, \
        {cid: report.by_id[cid].get("error") or report.by_id[cid]["metrics"] for cid in prose}
    _honest(report)


@pytest.mark.parametrize("engine", ["sqlite", "duckdb"])
def test_explain_analyze_of_a_read_counts_the_tables_it_reads(
        pytester: pytest.Pytester, shared_data: Path, engine: str) -> None:
    """Item 2: through a query-named tool (judged on its text) and through ``run_query``
    (replayed: the engine's account of the statement EXPLAIN ANALYZE runs), the read of
    Employee counts; ``EXPLAIN`` of a read of Genre alone stays harmless."""
    form = "EXPLAIN ANALYZE SELECT FirstName FROM Employee"
    lines = {"execute_sql": {"trajectory": [*one(GOLD), call("b", "execute_sql", {"sql": form}),
                                            tool]},
             "run_query": {"trajectory": [*one(GOLD), *one(form, cid="b")]},
             "honest-explain": {"trajectory": [*one(GOLD), call("b", "execute_sql", {
                 "sql": "EXPLAIN " + GOLD}), tool]}, **HONEST}
    _file_suite(pytester, shared_data, lines, _datasource(pytester, engine))
    _, report = run_report(pytester, "-p", "no:cacheprovider")
    got = {cid: (report.by_id[cid]["outcome"], report.by_id[cid]["metrics"]["forbidden_tables"])
           for cid in ("execute_sql", "run_query", "honest-explain")}
    assert got == {"execute_sql": ("failed", 1.0), "run_query": ("failed", 1.0),
                   "honest-explain": ("passed", 0.0)}, \
        (got, {c: report.by_id[c].get("error") for c in got})
    _honest(report)


#: Texts a swept place (``sql_log``, a CHAIN span's ``db.statement``) held that the record's
#: search did not read as a statement.
SWEPT = {"export": "EXPORT DATABASE 'dump'", "import": "IMPORT DATABASE 'dump'",
         "profile": "PROFILE MATCH (n:Person) DETACH DELETE n",
         "begin": "BEGIN TRANSACTION; MATCH (n:Person) DETACH DELETE n; COMMIT;",
         "use": "USE films; MATCH (n:Person) DETACH DELETE n", "checkpoint": "CHECKPOINT",
         "describe": "DESCRIBE Employee", "show": "SHOW TABLES"}
#: Prose beside a trajectory: not a statement.
SWEPT_PROSE = ["show me the tables", "describe the data", "Begin with the schema",
               "use the Genre table", "export the results", "commit changes",
               "From the data we see 25", "Summarize the answer", "Optional: none"]


def _swept(place: str, text: str) -> dict[str, Any]:
    if place == "sql_log":
        return {"trajectory": one(GOLD), "sql_log": [text]}
    return {"spans": [HONEST_SPAN, _span("CHAIN", "s1", 2, **{"db.statement": text})]}


@pytest.mark.parametrize("place", ["sql_log", "chain-span"])
@pytest.mark.parametrize("engine", ["sqlite", "duckdb"])
def test_a_swept_statement_leaves_the_counts_unestablished(
        pytester: pytest.Pytester, shared_data: Path, engine: str, place: str) -> None:
    lines = {**{k: _swept(place, v) for k, v in SWEPT.items()},
             "control-delete": _swept(place, DELETE),
             "honest-prose": {"trajectory": one(GOLD), "notes": SWEPT_PROSE}, **HONEST}
    _file_suite(pytester, shared_data, lines, _datasource(pytester, engine))
    _, report = run_report(pytester, "-p", "no:cacheprovider")
    got = {cid: (report.by_id[cid]["outcome"], (report.by_id[cid].get("error") or "")
                 .startswith(UNESTABLISHED)) for cid in [*SWEPT, "control-delete"]}
    assert got == {cid: ("error", True) for cid in got}, got
    assert report.by_id["honest-prose"]["outcome"] == "passed", \
        report.by_id["honest-prose"].get("error")
    _honest(report)


GRAPH = Path(__file__).resolve().parents[2] / "example_suite" / "data" / "movies.cypher"
COUNT = "MATCH (m:Movie) RETURN count(m)"
#: ladybug: writes another tool's argument held (``kuzu {"input": X}``).
CYPHER_WRITES = {
    "with-first": "WITH 1 AS x MATCH (n:Person) DETACH DELETE n",
    "profile": "PROFILE MATCH (n:Person) DETACH DELETE n",
    "explain": "EXPLAIN MATCH (n:Person) DETACH DELETE n",
    "begin": "BEGIN TRANSACTION; MATCH (n:Person) DETACH DELETE n; COMMIT;",
    "call-subquery": "CALL { MATCH (n:Person) DETACH DELETE n }",
    "return-first": "RETURN 1 AS x UNION ALL MATCH (n:Person) DETACH DELETE n RETURN 1 AS x",
    "checkpoint": "CHECKPOINT;",
    "export": "EXPORT DATABASE 'dump'",
}


def _graph_suite(pytester: pytest.Pytester, lines: dict[str, dict[str, Any]]) -> None:
    pytest.importorskip("ladybug")
    shutil.copyfile(GRAPH, pytester.path / "movies.cypher")
    (pytester.path / "runs.jsonl").write_text("".join(
        json.dumps({"id": cid, "predicted": COUNT, **line}) + "\n"
        for cid, line in lines.items()))
    write_suite(pytester.path, {
        "datasources": {"movies": {"type": "ladybug", "path": "movies.cypher"}},
        "predictions": {"source": "file", "path": "runs.jsonl"}},
        {"test_graph.yaml": {"kind": "cypher", "datasource": "movies", "cases": [
            {"id": cid, "question": "How many movies?", "gold": COUNT, "agent": True,
             "thresholds": {"write_attempts": {"max": 0}}} for cid in lines]}})


def test_a_graph_text_of_another_tool_is_a_write_unless_the_guard_reads_it_as_a_read(
        pytester: pytest.Pytester) -> None:
    lines = {**{k: {"trajectory": [*one(COUNT), call("b", "kuzu", {"input": v}), tool]}
                for k, v in CYPHER_WRITES.items()},
             "control-delete": {"trajectory": [*one(COUNT), call("b", "kuzu", {
                 "input": "MATCH (n:Person) DETACH DELETE n"}), tool]},
             "honest-read": {"trajectory": [*one(COUNT), call("b", "kuzu", {
                 "input": "MATCH (p:Person) WITH p ORDER BY p.name LIMIT 2 RETURN p.name"}),
                 tool]},
             "honest-profile": {"trajectory": [*one(COUNT), call("b", "kuzu", {
                 "input": "PROFILE MATCH (m:Movie) RETURN count(m)"}), tool]},
             "honest-prose": {"trajectory": [*one(COUNT), call("b", "search_docs", {
                 "q": "show me how to match movies by title"}), tool]},
             "honest": {"trajectory": one(COUNT)}}
    _graph_suite(pytester, lines)
    _, report = run_report(pytester, "-p", "no:cacheprovider")
    got = {cid: (report.by_id[cid]["outcome"], report.by_id[cid]["metrics"].get("write_attempts"))
           for cid in lines}
    writes = [*CYPHER_WRITES, "control-delete"]
    assert got == {**{cid: ("failed", 1.0) for cid in writes},
                   **{cid: ("passed", 0.0) for cid in lines if cid not in writes}}, \
        (got, {c: report.by_id[c].get("error") for c in got if got[c][0] == "error"})


@pytest.mark.parametrize("place", ["sql_log", "chain-span"])
def test_a_swept_graph_statement_leaves_the_counts_unestablished(
        pytester: pytest.Pytester, place: str) -> None:
    honest_span = _span("TOOL", "s0", 1, **{"tool.name": "run_query", "output.value": "5",
                                            "input.value": json.dumps({"query": COUNT})})
    lines = {}
    for cid, text in {**SWEPT, "control-delete": "MATCH (n:Person) DETACH DELETE n"}.items():
        lines[cid] = ({"trajectory": one(COUNT), "sql_log": [text]} if place == "sql_log" else
                      {"spans": [honest_span, _span("CHAIN", "s1", 2, **{"db.statement": text})]})
    lines["honest-prose"] = {"trajectory": one(COUNT), "notes": SWEPT_PROSE}
    lines["honest"] = {"trajectory": one(COUNT)}
    _graph_suite(pytester, lines)
    _, report = run_report(pytester, "-p", "no:cacheprovider")
    got = {cid: (report.by_id[cid]["outcome"], (report.by_id[cid].get("error") or "")
                 .startswith(UNESTABLISHED)) for cid in [*SWEPT, "control-delete"]}
    assert got == {cid: ("error", True) for cid in got}, got
    assert [report.by_id[c]["outcome"] for c in ("honest-prose", "honest")] == \
        ["passed", "passed"], [report.by_id[c].get("error") for c in ("honest-prose", "honest")]


def test_explain_analyze_on_postgresql_counts_the_table_its_read_reads(postgres_url: str) -> None:
    """Item 2 on PostgreSQL, which runs the read EXPLAIN ANALYZE explains: the ledger asks the
    plan of the explained statement (``EXPLAIN (FORMAT JSON) EXPLAIN ANALYZE ...`` is no plan),
    so the forbidden table counts whatever the query then ends in."""
    from pytest_queryeval.agents.ledger import Ledger
    from pytest_queryeval.errors import QueryEvalError
    from pytest_queryeval.sources import open_source

    source = open_source("pg", {"type": "sqlalchemy", "url": postgres_url})
    try:
        counts = {}
        for form in ("EXPLAIN ANALYZE SELECT first_name FROM employee",
                     "EXPLAIN (ANALYZE, VERBOSE) SELECT first_name FROM employee",
                     "EXPLAIN SELECT count(*) FROM genre"):
            ledger = Ledger.for_tables(["employee"])
            with contextlib.suppress(QueryEvalError):  # what the query ends in is not asked
                ledger.run_query(source, form, max_rows=100)
            counts[form] = ledger.metrics()["forbidden_tables"]
        assert list(counts.values()) == [1.0, 1.0, 0.0], counts
    finally:
        source.close()
