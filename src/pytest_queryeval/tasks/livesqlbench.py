"""LiveSQLBench ``test_cases``: a Management task's Python test run as the reference runs it.

Reference: bird-bench/livesqlbench@59d7bd0cb3cc5f2d0f478b8dfb5e4d4876ea0dc8 (MIT)
``evaluation/src/evaluation.py`` (``run_test_case``: the source, prefixed with ``from datetime
import date``, is ``exec``-ed with the helpers as globals and ``conn``, ``pred_sqls``,
``sol_sqls``, ``db_name``, ``kwargs`` as locals, then ``test_case(pred_sqls, sol_sqls, db_name,
conn)`` is called; the test passes when nothing is raised, and ANY exception, not only an
``AssertionError``, fails it) and the helpers a test case may call, from ``db_utils.py``
(``perform_query_on_postgresql_databases``, ``execute_queries``) and ``test_utils.py``
(``ex_base``, ``performance_compare_by_qep``, ``check_sql_function_usage``, ``remove_distinct``,
``remove_comments``, ``remove_round``, ``preprocess_results``; the per-query rewrites and
``preprocess_results`` are :mod:`..metrics.soft_ex`'s port of the same file).

Why a port and not the reference's own code: the reference's helpers use psycopg2 and module
state (a connection pool per database name); here they run in the sandbox worker on the task's
copy, with psycopg 3. What differs is only what cannot matter to a test case: with no ``conn``
the helpers use the copy's connection instead of opening a pool, ``SET statement_timeout`` is
sent only to PostgreSQL (the worker's deadline bounds the whole task anyway), and a test case
that imports ``psycopg2`` itself fails here if psycopg2 is not installed.

Kept from the reference, on purpose: ``execute_queries`` never raises (it returns
``(rows, error, timeout)``, rows of the last statement that ran, ``None`` after an error), so a
test case that indexes the rows of a failed query fails with a TypeError, as there; the
``exec`` keeps globals and locals apart, so a name bound at the source's top level (the
prepended ``date`` included) is not visible inside ``test_case``.

What differs, on purpose: a source that does not compile, or defines no ``test_case``, is a
*broken* check (the case is an error: the suite's fault), where the reference fails the
instance for every prediction, its own gold included.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from ..metrics import soft_ex

if TYPE_CHECKING:
    from .dbapi import CursorConnection

#: The reference, named in reports and docs.
REFERENCE = "bird-bench/livesqlbench@59d7bd0 evaluation/src/evaluation.py, test_utils.py, db_utils.py"
#: The reference's cap on fetched rows (``perform_query_on_postgresql_databases``).
MAX_ROWS = 10000

#: The connection used when a helper is called without one (the task's copy, while a test case
#: runs): the reference opens a pooled connection to ``db_name`` instead.
_DEFAULT_CONN: CursorConnection | None = None


class BrokenTest(Exception):
    """The test case's source cannot be run at all (does not compile, no ``test_case``)."""


def _is_postgres(conn: CursorConnection) -> bool:
    return type(conn).__module__.startswith("psycopg")


def _programming_error(exc: Exception) -> bool:
    return type(exc).__name__ == "ProgrammingError" or any(
        c.__name__ == "ProgrammingError" for c in type(exc).__mro__)


def perform_query_on_postgresql_databases(query: str, db_name: str, conn: CursorConnection | None = None,
                                          ) -> tuple[list[tuple[Any, ...]] | None, Any]:
    """``(rows, conn)``: the query executed and committed; rows up to :data:`MAX_ROWS`, or None
    when the statement returns none. An error rolls back and is raised."""
    if conn is None:
        conn = cast("CursorConnection", _DEFAULT_CONN)  # set while a test case runs
    cursor = conn.cursor()
    if _is_postgres(conn):
        cursor.execute("SET statement_timeout = '60s';")
    try:
        cursor.execute(query)
        conn.commit()
        try:
            rows = cursor.fetchmany(MAX_ROWS + 1)
            result: list[tuple[Any, ...]] | None = [tuple(r) for r in rows[:MAX_ROWS]]
        except Exception as exc:
            if not _programming_error(exc):
                raise
            result = None
        return result, conn
    except Exception:
        conn.rollback()
        raise
    finally:
        cursor.close()


def execute_queries(queries: str | Sequence[str], db_name: str, conn: CursorConnection, logger: object = None,
                    section_title: str = "",
                    ) -> tuple[list[tuple[Any, ...]] | None, bool, bool]:
    """``(rows of the last statement, execution_error, timeout_error)``; stops at the first
    error and never raises."""
    result: list[tuple[Any, ...]] | None = None
    if isinstance(queries, str):
        queries = [queries]
    for query in queries:
        try:
            result, conn = perform_query_on_postgresql_databases(query, db_name, conn=conn)
        except Exception as exc:
            if type(exc).__name__ == "QueryCanceled":
                return result, False, True
            return result, True, False
    return result, False, False


def remove_comments(sql_list: Sequence[str]) -> list[str]:
    return [soft_ex.remove_comments(s) for s in sql_list]


def remove_distinct(sql_list: Sequence[str]) -> list[str]:
    return [soft_ex.remove_distinct(s) for s in sql_list]


def remove_round(sql_list: Sequence[str]) -> list[str]:
    return [soft_ex.remove_round(s) for s in sql_list]


def preprocess_results(results: Sequence[Sequence[Any]], decimal_places: int = 2,
                       ) -> list[tuple[Any, ...]]:
    return soft_ex.preprocess_results(results, decimal_places)


def check_sql_function_usage(sqls: Sequence[str], required_keywords: Sequence[str]) -> int:
    """1 when every keyword occurs (case-insensitive) in the statements joined, else 0."""
    if not sqls:
        return 0
    combined = " ".join(s.lower() for s in sqls)
    return 1 if all(kw.lower() in combined for kw in required_keywords) else 0


def ex_base(pred_sqls: Sequence[str], sol_sqls: Sequence[str], db_name: str, conn: CursorConnection,
            conditions: dict[str, Any] | None = None) -> int:
    """Both statement lists run on ``conn``; 1 when their last results match after
    ``preprocess_results`` (as sets, or as lists with ``conditions.order``)."""
    if not pred_sqls or not sol_sqls:
        return 0
    predicted, pred_err, pred_to = execute_queries(pred_sqls, db_name, conn, None, "")
    ground, gt_err, gt_to = execute_queries(sol_sqls, db_name, conn, None, "")
    if any([pred_err, pred_to, gt_err, gt_to]):
        return 0
    predicted_rows = preprocess_results(predicted or [])
    ground_rows = preprocess_results(ground or [])
    if not predicted_rows or not ground_rows:
        return 0
    if conditions is not None and conditions.get("order", False):
        return 1 if predicted_rows == ground_rows else 0
    return 1 if set(predicted_rows) == set(ground_rows) else 0


def performance_compare_by_qep(old_sqls: Sequence[str], sol_sqls: Sequence[str], db_name: str,
                               conn: CursorConnection) -> int:
    """1 when the summed EXPLAIN total cost of ``sol_sqls``' DML is lower than ``old_sqls``'
    (each side inside BEGIN ... ROLLBACK; other statements executed, not costed)."""
    if not old_sqls or not sol_sqls:
        return 0

    def cost(sql_list: Sequence[str]) -> float:
        total = 0.0
        for sql in sql_list:
            if not sql.strip().upper().startswith(("SELECT", "INSERT", "UPDATE", "DELETE")):
                with contextlib.suppress(Exception):
                    perform_query_on_postgresql_databases(sql, db_name, conn=conn)
                continue
            try:
                rows, _ = perform_query_on_postgresql_databases(
                    f"EXPLAIN (FORMAT JSON) {sql}", db_name, conn=conn)
                if not rows:
                    continue
                plan = rows[0][0]
                if isinstance(plan, str):
                    plan = json.loads(plan)
                part = plan[0].get("Plan", {}).get("Total Cost", 0.0) \
                    if isinstance(plan, list) and plan else 0.0
                total += float(part)
            except Exception:
                pass
        return total

    def side(sql_list: Sequence[str]) -> float:
        try:
            perform_query_on_postgresql_databases("BEGIN", db_name, conn=conn)
            return cost(sql_list)
        finally:
            perform_query_on_postgresql_databases("ROLLBACK", db_name, conn=conn)

    old_total = side(old_sqls)
    sol_total = side(sol_sqls)
    return 1 if sol_total < old_total else 0


def _globals(pred_result: object) -> dict[str, Any]:
    """The reference's ``global_env`` of ``run_test_case``."""
    return {
        "perform_query_on_postgresql_databases": perform_query_on_postgresql_databases,
        "execute_queries": execute_queries,
        "ex_base": ex_base,
        "performance_compare_by_qep": performance_compare_by_qep,
        "check_sql_function_usage": check_sql_function_usage,
        "remove_distinct": remove_distinct,
        "remove_comments": remove_comments,
        "remove_round": remove_round,
        "preprocess_results": preprocess_results,
        "pred_query_result": pred_result,
    }


def run_test_case(source: str, conn: CursorConnection, pred_sqls: list[str], sol_sqls: list[str],
                  db_name: str, pred_result: object = None) -> str:
    """Run one test case: '' when it passed, else why it failed. :class:`BrokenTest` when its
    source cannot run at all."""
    global _DEFAULT_CONN

    code = "from datetime import date\n" + source
    try:
        compiled = compile(code + "\n__test_case_result__ = test_case(pred_sqls, sol_sqls, "
                                  "db_name, conn, **kwargs)", "<test_case>", "exec")
    except SyntaxError as exc:
        raise BrokenTest(f"the test case does not compile: {type(exc).__name__}: {exc.msg} "
                         f"(line {(exc.lineno or 1) - 1} of its source)") from None
    if "test_case" not in _names_defined(code):
        raise BrokenTest("the test case's source defines no function test_case")
    local_env: dict[str, Any] = {"conn": conn, "pred_sqls": pred_sqls, "sol_sqls": sol_sqls,
                                 "db_name": db_name, "kwargs": {}}
    old_stdout, sys.stdout = sys.stdout, io.StringIO()
    _DEFAULT_CONN = conn
    try:
        exec(compiled, _globals(pred_result), local_env)
    except AssertionError as exc:
        return f"assertion failed{': ' + ' '.join(str(exc).split())[:300] if str(exc) else ''}"
    except Exception as exc:
        return f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]}"
    finally:
        sys.stdout = old_stdout
        _DEFAULT_CONN = None
    return ""


def _names_defined(code: str) -> set[str]:
    """Top-level function names of ``code`` (it compiles)."""
    import ast

    return {n.name for n in ast.parse(code).body
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
