"""The PostgreSQL layer of the guard (sources/pgguard.py) without a server: PostgreSQL's own
parser decodes the escapes a text match misses, the functions that run SQL given as text are
refused in any nesting, and without pglast a PostgreSQL prediction is refused, never run."""

from __future__ import annotations

import sys

import pytest

from pytest_queryeval.errors import QueryRefused, QuerySyntaxError
from pytest_queryeval.sources.pgguard import check_postgres, volatile_refusal
from pytest_queryeval.sources.sqlguard import FORBIDDEN_FUNCTIONS, check_read_only

from .attacks import POSTGRES_ALLOWED

TEXT_RUNNER = "executes SQL given as text (or on another connection), which no guard can check"

REFUSED = {
    r"""SELECT U&"\0064blink_exec"('host=127.0.0.1 user=w', 'DELETE FROM genre')""":
        f"refused: function dblink_exec() {TEXT_RUNNER}",
    r"""SELECT U&"d!0062link" UESCAPE '!' ('x', 'y')""": f"refused: function dblink() {TEXT_RUNNER}",
    "SELECT dblink_connect('c', 'dbname=x') WHERE dblink_send_query('c', 'DELETE') = 1":
        f"refused: function dblink_connect() {TEXT_RUNNER}",
    "SELECT 1 \x00; DELETE FROM genre":
        "refused: the statement holds a NUL character, which PostgreSQL never receives in a "
        "query",
    "SELECT query_to_xml('SELECT dblink_exec(''x'', ''DELETE FROM genre'')', true, false, '')":
        f"refused: function query_to_xml() {TEXT_RUNNER}",
    "SELECT pg_catalog.cursor_to_xml('c', 1, true, false, '')":
        f"refused: function cursor_to_xml() {TEXT_RUNNER}",
    "SELECT * FROM ts_stat('SELECT pg_advisory_lock(1)::text::tsvector')":
        f"refused: function ts_stat() {TEXT_RUNNER}",
    "SELECT count(*) FROM genre WHERE xmlexists('//r' PASSING BY REF "
    "query_to_xml('SELECT pg_advisory_lock(1)', true, false, ''))":
        f"refused: function query_to_xml() {TEXT_RUNNER}",
    "SELECT * FROM genre g, LATERAL (SELECT x FROM dblink_get_result('c') AS t(x int)) s":
        f"refused: function dblink_get_result() {TEXT_RUNNER}",
    r"""SELECT U&"\0070g_terminate_backend"(pid) FROM pg_stat_activity""":
        "refused: function pg_terminate_backend() has side effects",
    r"""SELECT "pg_advisory_lock"(5555)""": "refused: function pg_advisory_lock() has side effects",
    r"""SELECT U&"\006Co_import"('/dev/zero')""": "refused: function lo_import() has side effects",
    "SELECT 1 FROM genre FOR KEY SHARE": "refused: FOR UPDATE/SHARE lock inside a query",
    "WITH d AS (UPDATE genre SET name = 'x' RETURNING *) SELECT * FROM d":
        "refused: UPDATE inside a query",
    "SELECT 1 INTO TEMP t": "refused: SELECT INTO inside a query",
    "EXPLAIN ANALYZE SELECT 1": "refused: EXPLAIN is not a read-only query",
    "SELECT 1; SELECT 2": "refused: 2 statements; only one query is executed",
}


@pytest.mark.parametrize("sql", sorted(REFUSED))
def test_refused_as_the_server_reads_it(sql: str) -> None:
    with pytest.raises(QueryRefused) as info:
        check_postgres(sql, FORBIDDEN_FUNCTIONS)
    assert info.value.reason() == REFUSED[sql]


def test_the_whole_guard_refuses_escaped_names() -> None:
    """sqlglot alone let these through: the PostgreSQL parse is part of check_read_only."""
    with pytest.raises(QueryRefused, match=r"^function dblink_exec\(\) executes SQL"):
        check_read_only(r"""SELECT U&"\0064blink_exec"('c', 'DELETE FROM genre')""", "postgres")
    with pytest.raises(QueryRefused, match=r"^function pg_advisory_lock\(\) has side effects"):
        check_read_only(r"""SELECT U&"\0070g_advisory_lock"(5555)""", "postgres")
    # other dialects keep their own guard: there the escape is not PostgreSQL's
    assert check_read_only(r"""SELECT "x"(1)""", "sqlite") == ()
    # a long statement is checked in the guard's worker, and its functions come back from it
    long = "SELECT pg_sleep(0) + " + "+".join(["1"] * 3000)
    assert check_read_only(long, "postgres") == ("pg_sleep",)
    assert check_read_only(long, "postgres") == ("pg_sleep",)  # remembered


@pytest.mark.parametrize("sql", POSTGRES_ALLOWED)
def test_legitimate_queries_pass(sql: str) -> None:
    assert check_read_only(sql, "postgres") == check_postgres(sql, FORBIDDEN_FUNCTIONS)


def test_called_functions_are_named_as_resolved() -> None:
    assert check_postgres(r"""SELECT U&"\0072andom"(), pg_catalog.now(), s.f(1), count(*)""") \
        == ("random", "pg_catalog.now", "s.f", "count")


def test_deep_statement_is_read_without_recursion() -> None:
    """``SELECT 1+1+...`` nests as deep as it is long: past Python's recursion limit it is
    still read, and past the parser's own limit it is refused."""
    assert check_postgres("SELECT " + "+".join(["1"] * 5000) + " + pg_sleep(0)") \
        == ("pg_sleep",)
    with pytest.raises(QueryRefused, match="nests deeper than PostgreSQL's parser allows"):
        check_postgres("SELECT " + "+".join(["1"] * 200_000))


def test_syntax_error_is_left_to_the_server() -> None:
    assert check_postgres("SELECT FROM WHERE") == ()
    with pytest.raises(QuerySyntaxError, match="PostgreSQL's parser cannot read"):
        check_postgres("SELECT '\udcff'")  # a lone surrogate: no UTF-8 for the parser


def test_volatile_refusal() -> None:
    volatile = [("pg_catalog", "random"), ("pg_catalog", "setseed"), ("public", "f")]
    assert volatile_refusal(["random", "pg_catalog.random"], volatile) is None
    assert volatile_refusal(["count", "other.f"], volatile) is None
    assert str(volatile_refusal(["setseed"], volatile)).startswith(
        "function setseed() is volatile (pg_proc.provolatile = 'v')")
    assert str(volatile_refusal(["f"], volatile)).startswith("function f() is volatile")


def test_without_pglast_postgres_predictions_are_refused(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A stand-in for an install without the extra: ``import pglast`` fails."""
    monkeypatch.setitem(sys.modules, "pglast", None)
    with pytest.raises(QueryRefused) as info:
        check_read_only("SELECT count(*) FROM genre", "postgres")
    assert info.value.reason() == (
        "refused: PostgreSQL predictions are checked with PostgreSQL's own parser, which needs "
        "pglast: pip install 'pytest-queryeval[sqlalchemy]'; an unchecked statement is never "
        "executed")
    check_read_only("SELECT count(*) FROM genre", "sqlite")
