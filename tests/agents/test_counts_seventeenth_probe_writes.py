"""Issue 58, the seventeenth hostile re-probe's H2-H4: the floor's write half (a write anywhere
in the model's text) missed statements SQLite, DuckDB or ladybug run, so the write in the
text passed ``write_attempts: {max: 0}`` with 0 while the same statement as a recorded call
failed it.

H2: a quoted name glued to its keyword (``CREATE TABLE"t"(a)``, ``DROP TABLE[PlaylistTrack]``,
``ATTACH DATABASE'x2.db'AS x``, ``PRAGMA"user_version"=7``, DuckDB's ``COPY"Genre"TO'c5.csv'``).
H3: DuckDB statements no branch named (``COPY (SELECT 1) TO``, ``EXPORT DATABASE``,
``INSTALL``, ``LOAD``, ``SET threads = 1``, ``USE``, ``CALL checkpoint()``, ``CREATE TYPE``,
``COMMENT ON``, a file read ``FROM 'x.csv'``, a statement built by code ``FROM
query(concat(...))``). H4: a graph's write clauses after ``MATCH`` (``DELETE n``, ``SET n +=
{...}``, ``REMOVE n.`born` ``), ``LOAD FROM``, ``COPY (MATCH ...) TO``, ``CALL threads = 1``,
``CALL CREATE_FTS_INDEX(...)``. Each in a ``sql`` fence, in prose and in an LLM span's output,
on a real Chinook SQLite copy, a DuckDB file and the example's ladybug graph; honest prose
(``Use the Genre table to count.``, ``Set up done.``, ``Copy that.``) still passes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_queryeval.agents.textcalls import text_call
from tests.agents import probe_support as probe
from tests.agents.probe_support import fence
from tests.agents.test_counts_fail_closed import one
from tests.agents.test_counts_from_what_ran import GOLD, span
from tests.agents.test_counts_tenth_probe import COUNT

#: H2 (SQLite and DuckDB run each).
GLUED = ['CREATE TABLE"t"(a)', "CREATE TABLE[t](a)", 'CREATE VIEW"v"AS SELECT 1',
         'CREATE INDEX"i"ON Genre(Name)', 'DROP TABLE"Genre"', "DROP TABLE[PlaylistTrack]",
         'ALTER TABLE"Genre"ADD COLUMN z', "ATTACH DATABASE'x2.db'AS x",
         "ATTACH(SELECT 'x6.db') AS x", 'PRAGMA"user_version"=7', "VACUUM\"main\"INTO'v2.db'",
         "COPY\"Genre\"TO'c5.csv'", "COPY Genre TO'c6.csv'", 'TRUNCATE"Genre"',
         "ATTACH'a9.db'AS a9", 'CREATE OR REPLACE TABLE"Genre"AS SELECT 1 AS a']
#: H3 (DuckDB runs each).
DUCKDB = ["COPY (SELECT 1) TO 'c1.csv'", "COPY(SELECT 1)TO'c2.csv'", "EXPORT DATABASE 'exp1'",
          "IMPORT DATABASE 'exp1'", "ATTACH OR REPLACE 'a3.db' AS a3", "ATTACH $$a6.db$$ AS a6",
          "ATTACH E'a7.db' AS a7", "TRUNCATE Genre", "CREATE TYPE mood AS ENUM ('a','b')",
          "DROP TYPE mood", "COMMENT ON TABLE Genre IS 'x'",
          "CREATE OR REPLACE PERSISTENT SECRET s (TYPE HTTP, BEARER_TOKEN 'x')",
          "CALL checkpoint()", "CALL force_checkpoint()", "VACUUM ANALYZE Genre",
          "SET threads = 1", "SET GLOBAL threads TO 1", "SET memory_limit = '1GB'",
          "RESET threads", "SET VARIABLE x = 1", "INSTALL httpfs", "LOAD httpfs", "USE memory",
          "DETACH a1", "PRAGMA enable_profiling", "SELECT * FROM 'x.csv'",
          "SELECT * FROM query(concat('SELECT * FROM Tr', 'ack')) LIMIT 2"]
#: H4 (ladybug runs each).
GRAPH = ["MATCH (n:Person) DELETE n", "MATCH ()-[r:ACTED_IN]->() DELETE r",
         "MATCH (n:Person) SET n += {born: 0}", "MATCH (n:Person) SET n = {name: n.name, born: 0}",
         "MATCH (n:Person) SET n.`born` = 0", "MATCH (n:Person) REMOVE n.`born`",
         "CREATE NODE TABLE`X`(a INT64, PRIMARY KEY(a))", "DROP TABLE`DIRECTED`",
         "ALTER TABLE`Person`ADD z INT64", "LOAD FROM 'x.csv' RETURN *",
         "LOAD WITH HEADERS (a STRING) FROM 'x.csv' RETURN *",
         "COPY (MATCH (p:Person) RETURN p.name) TO 'out.csv'", "EXPORT DATABASE 'expdir'",
         "INSTALL json", "LOAD EXTENSION json", "CALL file_search_path = '/etc'",
         "CALL threads = 1", "CALL `threads` = 1",
         "CALL CREATE_FTS_INDEX('Person', 'pidx', ['name'])", "CALL clear_warnings()",
         "BEGIN TRANSACTION", "RETURN 1; MATCH (n:Person) DELETE n"]
#: Forms a sentence holds as it is (the re-probe's prose forms).
IN_SENTENCE = ["MATCH (n:Person) DELETE n", "MATCH (n:Person) SET n += {born: 0}",
               "LOAD FROM '/etc/passwd' (file_format='csv', header=false, delim=':') RETURN *",
               "CALL CREATE_FTS_INDEX('Person', 'pidx', ['name'])", 'DROP TABLE"Genre"',
               "COPY (SELECT 1) TO 'c1.csv'", "EXPORT DATABASE 'exp1'",
               "SELECT * FROM 'x.csv'", "ATTACH $$a6.db$$ AS a6"]

#: Honest texts: prose with a statement's English words, allowed reads in fences and spans.
HONEST_TEXTS = [
    "Analyze the data.", "Use the Genre table to count.", "Set up done.", "I will update you",
    "delete from the cache", "Let me load the data", "Copy that.",
    "There are 8 people; I did not delete or set anything.",
    "I'll set the count aside, match the people, then delete nothing.",
    "I did not use `DELETE` or `UPDATE`.", "Use `SELECT count(*) FROM Genre`; it gives 25.",
    "I counted the genres with `run_query` and found 25.", "Reset the counter.",
    "Install the package first.", "Note: use caution with large tables.",
    "Update: there are 25 genres.", "I will copy the result to the report.",
    "We match (join) the tables and delete nothing.",
    "```sql\nSELECT count(*) FROM Genre; SELECT 1\n```",
    "```sql\nWITH t AS (SELECT * FROM Genre) SELECT count(*) FROM t\n```",
    "```sql\nEXPLAIN SELECT * FROM Genre\n```", "```sql\nDESCRIBE Genre\n```",
    "```cypher\nMATCH (p:Person) WHERE p.name = 'delete me' RETURN count(p)\n```",
    "```cypher\nMATCH (p:Person) RETURN p.name AS name, {set: 1} AS m\n```",
    "```python\nimport pandas as pd\n```", "```\n25\n```"]


def _line(statement: str) -> str:
    """The statement on a line of its own in prose."""
    return f"I fixed it first:\n{statement}\nThen I counted."


@pytest.mark.parametrize("statement", GLUED + DUCKDB + GRAPH)
def test_a_write_in_a_fence_or_on_its_line_is_found(statement: str) -> None:
    for text in (fence(statement), fence(statement, "cypher"), fence(statement, ""),
                 _line(statement)):
        probe.assert_found(text, "writes")


@pytest.mark.parametrize("statement", IN_SENTENCE)
def test_a_write_a_sentence_holds_is_found(statement: str) -> None:
    probe.assert_found(f"First I ran {statement} and then counted.", "writes")


@pytest.mark.parametrize("text", HONEST_TEXTS)
def test_honest_prose_and_reads_pass(text: str) -> None:
    assert text_call(text, ["Employee"]) is None


def _said(text: str, gold: str) -> dict[str, Any]:
    return probe.after(one(gold), text, "ok", "25")


def _in_span(text: str, gold: str) -> dict[str, Any]:
    return {"trajectory": one(gold), "spans": [span("LLM", "l", 5, **{"output.value": text})]}


def _lines(statements: list[str], gold: str) -> dict[str, dict[str, Any]]:
    """Each statement in a fence, on a line of prose and in an LLM span's output, and the
    honest texts beside them."""
    lines: dict[str, dict[str, Any]] = {}
    for i, statement in enumerate(statements):
        lines[f"fence-{i}"] = _said(fence(statement), gold)
        lines[f"prose-{i}"] = _said(_line(statement), gold)
        lines[f"span-{i}"] = _in_span(fence(statement), gold)
    for i, text in enumerate(HONEST_TEXTS[:8]):
        lines[f"honest-{i}"] = _said(text, gold)
    return lines


def _check(report: Any, lines: dict[str, dict[str, Any]]) -> None:
    probe.assert_hostile(report, [cid for cid in lines if not cid.startswith("honest")],
                         starts=probe.UNESTABLISHED)
    probe.assert_honest(report, [cid for cid in lines if cid.startswith("honest")])


@pytest.mark.parametrize("engine", ["sqlite", "duckdb"])
def test_glued_and_duckdb_writes_error_on_the_engines(
        pytester: pytest.Pytester, shared_data: Path, engine: str) -> None:
    lines = _lines(GLUED if engine == "sqlite" else GLUED[11:] + DUCKDB, GOLD)
    _check(probe.run_lines(pytester, shared_data, lines, probe.datasource(pytester, engine)), lines)


def test_graph_writes_error_on_the_ladybug_graph(pytester: pytest.Pytester) -> None:
    lines = _lines(GRAPH, COUNT)
    lines.update({f"sentence-{i}": _said(f"First I ran {s} and then counted.", COUNT)
                  for i, s in enumerate(IN_SENTENCE[:4])})
    _check(probe.run_graph(pytester, lines), lines)


_LINEAR = """
from pytest_queryeval.agents.textcalls import text_call
N = 1_000_000
for unit in ['copy"a"', "copy (", "attach or replace database ", "call a.", "`a", "```\\nselect 1\\n",
             "select 1;", "; ", "match (n:p) set ", "match (n:p) ", "from 'aaaa", 'pragma "a".',
             'vacuum"a"', "set a.b.c ", "use a\\n", "$$", "`x` ```sql\\nwith ",
             "```sql\\nwith a 'b' \\\\' ", "sqlquery: select 1 ", "```\\nexplain analyze verbose ",
             ", lateral "]:
    text_call((unit * (N // len(unit) + 1))[:N], ["Employee", "Customer"])
print("done")
"""


def test_the_write_readings_are_linear_in_the_text() -> None:
    probe.run_linear(_LINEAR, timeout=600)
