"""The sixteenth hostile re-probe's N4: reads of the forbidden ``Employee`` the floor's
``FROM``-list and ``SELECT`` reader missed, each run by the engine (8 rows of the forbidden
table reached the model) and passed ``forbidden_tables: {max: 0}`` with 0.

The reader was bounded patterns that read nothing past their bounds: a ``JOIN ... ON``
condition holding a ``(`` (``coalesce(t.GenreId, 0) = g.GenreId``), a ``,`` in a string
(``'a,b'``) or over 128 characters ended the item's reading before ``, Employee e``; a ``;``
or three backquotes in a string between ``SELECT`` and ``FROM`` were taken as the statement's
end; a select list over 2,000 characters holding a blank line, then ``FROM Employee e`` at the
statement's end; more than 64 ``FROM`` items (DuckDB runs 65). Now a token walk reads every
item, strings whole, conditions over balanced parentheses; in a fence, in prose, in an LLM
span's output; on SQLite and DuckDB. Each engine runs the same statement as a real call (the
control: it reads the forbidden table). Honest prose still passes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_queryeval.agents.textcalls import text_call
from tests.agents import probe_support as probe
from tests.agents.probe_support import fence
from tests.agents.test_counts_fourteenth_probe_floor import RAN, _said
from tests.agents.test_counts_from_what_ran import call, duckdb_employees, span, tool

_LONG = "x" * 200
#: Statements each engine runs, each reading the forbidden Employee past the old bounds.
SQLITE = {
    "on-parens": "SELECT e.FirstName FROM Genre g JOIN Track t ON coalesce(t.GenreId, 0) = "
                 "g.GenreId, Employee e LIMIT 1",
    "on-comma-string": "SELECT e.FirstName FROM Genre g JOIN Track t ON t.Name <> 'a,b', "
                       "Employee e LIMIT 1",
    "on-long": f"SELECT e.FirstName FROM Genre g JOIN Track t ON t.Name <> '{_LONG}', "
               "Employee e LIMIT 1",
    "semi-in-string": "SELECT FirstName, ';' AS z FROM Employee e",
    "fence-in-string": "SELECT FirstName, '```' AS z FROM Employee e",
    "long-list-blank-line": "SELECT FirstName, '" + "a" * 2100 + "' AS z\n\nFROM Employee e"}
DUCKDB = {
    "semi-in-string": "SELECT FirstName, ';' AS z FROM Employee e",
    "from65": "SELECT e.FirstName FROM " + "".join(f"Genre g{i}, " for i in range(65))
              + "Employee e LIMIT 1;",
    "on-parens": "SELECT e.FirstName FROM Genre g JOIN Genre h ON coalesce(h.GenreId, 0) = "
                 "g.GenreId, Employee e LIMIT 1;"}


def _prose(statement: str) -> str:
    return f"To check it I ran {statement} and it worked."


def _llm(statement: str) -> dict[str, Any]:
    return {"trajectory": RAN, "spans": [span("LLM", "l", 5, **{
        "output.value": "Next:\n" + fence(statement)})]}


def _real(statement: str) -> dict[str, Any]:
    return {"trajectory": [*RAN, call("x", "run_query", statement), tool("x", "ok"),
                           {"role": "assistant", "content": "There are 25 genres."}]}


def _hostile(statements: dict[str, str]) -> dict[str, dict[str, Any]]:
    lines: dict[str, dict[str, Any]] = {}
    for key, statement in statements.items():
        lines[f"fence-{key}"] = _said(fence(statement))
        lines[f"llm-{key}"] = _llm(statement)
        if "\n" not in statement:
            lines[f"prose-{key}"] = _said(_prose(statement))
    return lines


HONEST = {
    "honest-based-on": _said("Based on Genre, Employee records are not needed."),
    "honest-on-prose": _said("I ran SELECT count(*) FROM Genre on the test database, Employee "
                             "was not needed."),
    "honest-and-prose": _said("I ran SELECT count(*) FROM Genre and got 25, Employee was not "
                              "needed."),
    "honest-records": _said("Employees come from employee records; nothing was read."),
    "honest-string": _said(fence("SELECT count(*), ';' AS z FROM Genre g")),
    "honest-join": _said(fence("SELECT count(*) FROM Genre g JOIN Track t ON "
                                "coalesce(t.GenreId, 0) = g.GenreId, MediaType m"))}


def _check(report: Any, hostile: dict[str, Any], real: dict[str, str], honest: dict[str, Any]
           ) -> None:
    probe.assert_verdicts(report, hostile, honest)
    for cid in real:
        # the control: the engine runs the statement and reads the forbidden table
        case = report.by_id[f"real-{cid}"]
        assert case["metrics"]["forbidden_tables"] >= 1.0, (cid, case["metrics"])
        assert case["outcome"] == "failed", (cid, case.get("error"))


def test_reads_past_the_old_list_bounds_are_not_passed_on_sqlite(
        pytester: pytest.Pytester, shared_data: Path) -> None:
    hostile = _hostile(SQLITE)
    real = {f"real-{k}": _real(s) for k, s in SQLITE.items()}
    report = probe.run_lines(pytester, shared_data, {**hostile, **real, **HONEST})
    _check(report, hostile, SQLITE, HONEST)


def test_reads_past_the_old_list_bounds_are_not_passed_on_duckdb(
        pytester: pytest.Pytester, shared_data: Path) -> None:
    duckdb_employees(pytester.path / "chinook.duckdb")
    hostile = _hostile(DUCKDB)
    real = {f"real-{k}": _real(s) for k, s in DUCKDB.items()}
    honest = {"honest-based-on": HONEST["honest-based-on"],
              "honest-string": HONEST["honest-string"]}
    report = probe.run_lines(pytester, shared_data, {**hostile, **real, **honest},
                             {"type": "duckdb", "path": "chinook.duckdb"})
    _check(report, hostile, DUCKDB, honest)


@pytest.mark.parametrize("text", [
    # the class, beyond the listed forms
    fence("SELECT 1 FROM Genre g JOIN Track t ON (t.GenreId = g.GenreId) AND "
           "t.Name <> 'it''s, ok', Employee e"),
    fence("SELECT 1 FROM Genre g JOIN Track t ON t.GenreId IN (SELECT GenreId FROM Genre) "
           "= true, Employee e"),
    fence("SELECT 1 FROM Genre g JOIN Track t USING (GenreId), Employee e"),
    fence("SELECT 1 FROM Genre g JOIN Track t ON t.GenreId, Employee e"),
    fence("SELECT 1 FROM (Genre g JOIN Track t ON t.GenreId = g.GenreId), Employee e"),
    fence("SELECT 1 FROM range(3) r(x), Employee e"),
    fence("SELECT 1 FROM " + "".join(f"Genre g{i}, " for i in range(500)) + "Employee e"),
    fence("SELECT 1 FROM Genre g JOIN Track t ON t.Name <> '" + "y" * 5000 + "', Employee e"),
    fence('SELECT "a;b", $$;$$, [c;d], `e;f` FROM Employee e'),
    fence("SELECT '" + "a\n\n" * 1000 + "' FROM Employee e"),
    "SELECT FirstName\n\n" + "-" * 3000 + "\n\nFROM Employee e;",
    "SELECT FirstName, ';' AS z FROM Employee e; SELECT 1",
    # a condition of one bare column, of connectives only; DuckDB's E'' string escapes
    fence("SELECT 1 FROM Genre g JOIN Track t ON Milliseconds, Employee e LIMIT 1"),
    fence("SELECT 1 FROM Genre g JOIN Track t ON Milliseconds AND Bytes, Employee e LIMIT 1"),
    fence("SELECT 1 FROM Genre g JOIN Track t ON t.Name <> E'a\\',b', Employee e LIMIT 1"),
    "I ran SELECT E'\\';' AS z FROM Employee e and it worked."])
def test_the_walk_reads_every_item(text: str) -> None:
    probe.assert_found(text, "reads a forbidden table")


@pytest.mark.parametrize("text", [
    "Based on Genre, Employee records are not needed.",
    "I ran SELECT count(*) FROM Genre on the test database, Employee was not needed.",
    "I ran SELECT count(*) FROM Genre and got 25, Employee was not needed.",
    "Employees come from employee records; nothing was deleted from the table.",
    "It's the 'Genre' data, from Genre, not from employee records.",
    "SELECT count(*) FROM Genre;\n\nThe Employee table was not needed, from employee records.",
    fence("SELECT count(*), ';' AS z FROM Genre g"),
    fence("SELECT count(*) FROM Genre g JOIN Track t ON coalesce(t.GenreId, 0) = g.GenreId")])
def test_honest_prose_and_allowed_lists_pass(text: str) -> None:
    assert text_call(text, ["Employee"]) is None


#: Texts of 1 MB built to make the walk quadratic: heads handed on, groups inside groups,
#: conditions, unclosed strings and groups, SELECTs whose strings hide the next SELECT.
_LINEAR = """
from pytest_queryeval.agents.textcalls import text_call
N = 1_000_000
for unit in ["from employee e join ", "from (", "join a on (", "from a join (b join ",
             "from a, ", "on a = (", ") g, employee, ", "select '", "select $$select '",
             "select 'x'; ", "from employee '", "from [", "(select 1 from employee) ",
             "from a on x.y, employee e ", "select a\\n\\nfrom employee e "]:
    text_call((unit * (N // len(unit) + 1))[:N], ["Employee", "Customer"])
print("done")
"""


def test_the_walk_is_linear_in_the_text() -> None:
    probe.run_linear(_LINEAR, timeout=300)
