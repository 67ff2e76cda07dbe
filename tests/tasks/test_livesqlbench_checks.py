"""``livesqlbench_test`` checks (issue 28 item 3, engine side) on a real SQLite copy of Chinook:
run as the LiveSQLBench reference runs its test cases (any exception fails, the reference's
quirks kept), in the sandbox worker under the task's deadline and memory cap."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_queryeval.errors import ConfigError, QueryTimeout
from pytest_queryeval.tasks import Check, Task, run_task
from pytest_queryeval.tasks.case import parse_checks

ADD = "INSERT INTO Genre (GenreId, Name) VALUES (99, 'Polka')"
HEAD = "def test_case(pred_sqls, sol_sqls, db_name, conn):\n"


def run(path: Path, body: str, predicted: str = ADD, **limits: float) -> tuple[bool, str, str]:
    """(passed, the check's reason, the task's error)."""
    outcome = run_task(Task("sqlite", path, gold=(ADD,), predicted=(predicted,),
                            checks=(Check(livesqlbench_test=HEAD + body),)), **limits)  # type: ignore[arg-type]
    reason = outcome.checks[0].reason if outcome.checks else ""
    return outcome.passed, reason, outcome.error


def test_a_test_case_passes_when_it_raises_nothing(chinook: Path) -> None:
    body = ("    rows, err, _ = execute_queries(\"SELECT Name FROM Genre WHERE GenreId = 99\", "
            "db_name, conn)\n"
            "    assert not err and rows == [('Polka',)], rows\n"
            "    assert pred_sqls == [" + repr(ADD) + "] and sol_sqls == [" + repr(ADD) + "]\n"
            "    assert check_sql_function_usage(pred_sqls, ['insert', 'genre']) == 1\n"
            "    assert ex_base(['SELECT count(*) FROM Genre'], ['SELECT 26'], db_name, conn) == 1\n")
    assert run(chinook, body) == (True, "", "")
    assert run(chinook, body, "SELECT 1") == (
        False, "livesqlbench test case: assertion failed: []", "")


def test_any_exception_fails_the_test_as_in_the_reference(chinook: Path) -> None:
    # execute_queries never raises: the rows of a failed query are None, and indexing them is
    # a TypeError, which fails the test case (not an error of the suite)
    body = "    rows = execute_queries('SELECT nope FROM Genre', db_name, conn)[0]\n" \
           "    return rows[0][0]\n"
    assert run(chinook, body) == (
        False, "livesqlbench test case: TypeError: 'NoneType' object is not subscriptable", "")


def test_the_references_exec_quirks_are_kept(chinook: Path) -> None:
    # globals and locals apart: the prepended `from datetime import date` is not visible
    # inside test_case, so using it fails there as it does in the reference
    assert run(chinook, "    return date(2024, 1, 1)\n")[:2] == (
        False, "livesqlbench test case: NameError: name 'date' is not defined")


def test_a_source_that_cannot_run_is_a_broken_check(chinook: Path) -> None:
    """The reference fails such an instance for every prediction, its gold included; here the
    check is broken (the suite's fault): the task is an error."""
    outcome = run_task(Task("sqlite", chinook, gold=(ADD,), predicted=(ADD,), checks=(
        Check(livesqlbench_test="\n    " + HEAD + "    pass\n"),)))
    assert outcome.error == ("a check broke: livesqlbench test case: the test case does not "
                             "compile: IndentationError: unexpected indent (line 2 of its source)")
    outcome = run_task(Task("sqlite", chinook, gold=(ADD,), predicted=(ADD,), checks=(
        Check(livesqlbench_test="def check(conn):\n    pass\n"),)))
    assert outcome.error == ("a check broke: livesqlbench test case: the test case's source "
                             "defines no function test_case")


def test_the_gold_audit_runs_the_test_case_on_the_golds_copy(chinook: Path) -> None:
    body = "    assert pred_sqls == sol_sqls\n" \
           "    assert execute_queries('SELECT count(*) FROM Genre', db_name, conn)[0] == [(26,)]\n"
    outcome = run_task(Task("sqlite", chinook, gold=(ADD,), predicted=(), checks=(
        Check(livesqlbench_test=HEAD + body),)), audit=True)
    assert outcome.passed, outcome


def test_hostile_test_cases_are_bounded(chinook: Path) -> None:
    with pytest.raises(QueryTimeout):
        run(chinook, "    while True:\n        pass\n", timeout=2)
    hog = run(chinook, "    blocks = []\n    while True:\n        blocks.append(bytearray(64 << 20))\n",
              timeout=60, max_memory=256 << 20)
    assert hog == (False, "livesqlbench test case: MemoryError: ", "")
    assert run(chinook, "    pass\n")[0]  # the worker recovers


@pytest.mark.parametrize(("item", "message"), [
    ({"livesqlbench_test": ""}, "checks[0].livesqlbench_test: must be the Python source"),
    ({"livesqlbench_test": "def test_case(): pass", "python": "m:f"},
     "checks[0]: needs exactly one of rows, compare, schema or python, not python, "
     "livesqlbench_test"),
])
def test_bad_livesqlbench_checks_are_located(item: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError) as exc:
        parse_checks([item])
    assert f"{exc.value.key}: {exc.value.message}".startswith(message)


def test_pred_query_result_and_the_helpers_on_a_duckdb_copy(tmp_path: Path) -> None:
    import duckdb

    path = tmp_path / "t.duckdb"
    with duckdb.connect(str(path)) as conn:
        conn.execute("CREATE TABLE genre (id INTEGER, name TEXT)")
    body = ("    assert pred_query_result == [(1, 'Polka')], pred_query_result\n"
            "    rows, err, _ = execute_queries('SELECT count(*) FROM genre', db_name, conn)\n"
            "    assert rows == [(1,)] and not err, rows\n")
    outcome = run_task(Task("duckdb", path, gold=("INSERT INTO genre VALUES (1, 'Polka')",),
                            predicted=("INSERT INTO genre VALUES (1, 'Polka'); "
                                       "SELECT * FROM genre",),
                            checks=(Check(livesqlbench_test=HEAD + body),)))
    assert outcome.passed, outcome
