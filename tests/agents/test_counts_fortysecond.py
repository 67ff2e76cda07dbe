"""Issue 58, the forty-second re-probe of the agent counts (each test failed before its fix).

Q3 to Q5 (DuckDB): a string the comment scan does not know (a ``$a$...$a$`` dollar quote, a
backslash-escaped quote in ``E'\\''``) holding ``--`` made every reading of the text drop the
rest of its line, and the text as written had ``n_v ()`` with a blank, which no call reading
took: a macro over a forbidden view counted 0, a statistics macro served Track's row count
under ``enforce``, and a path macro gave the plugin's temporary directory. The text as written
is one of the readings now.

Q6 (PostgreSQL): a routine declared ``STABLE`` over a ``VOLATILE`` routine of the database
(one over ``pg_read_file``, one taking an advisory lock) was not refused; a volatile routine
of the database is a volatile call too now.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.agents.test_counts_thirtyninth import PG_SETUP
from tests.agents.test_counts_thirtysixth import MACROS, _counts, tracks_with

STRINGS = ["SELECT $a$--$a$ AS s, {call} AS n", "SELECT E'\\'--' AS s, {call} AS n"]
STATISTICS = "CREATE MACRO ss() AS (SELECT estimated_size FROM duckdb_tables() " \
             "WHERE table_name = 'Track')"


@pytest.mark.parametrize("form", STRINGS)
@pytest.mark.parametrize(("forbidden", "call"), [("v_t", "n_v ()"), ("Track", "ss ()")])
def test_a_macro_call_after_an_odd_string_counts(form: str, forbidden: str, call: str,
                                                 tmp_path: Path) -> None:
    from pytest_queryeval.sources.duckdb import DuckdbSource

    source = DuckdbSource("t", tracks_with(tmp_path, *MACROS, STATISTICS))
    try:
        assert _counts(source, forbidden, form.format(call=call)) == (1.0, 1.0, 1.0)
    finally:
        source.close()


@pytest.mark.parametrize("form", STRINGS)
def test_enforce_refuses_a_statistics_macro_after_an_odd_string(form: str,
                                                                tmp_path: Path) -> None:
    from pytest_queryeval.agents.canaries import Target
    from pytest_queryeval.agents.enforce import Guard
    from pytest_queryeval.agents.ledger import ProtectedRead
    from pytest_queryeval.sources.duckdb import DuckdbSource

    path = tracks_with(tmp_path, *MACROS, STATISTICS)
    source = DuckdbSource("t", path)
    try:
        guard = Guard(path, "duckdb", [Target("Track")], source)
        with pytest.raises(ProtectedRead):
            guard.check(form.format(call="ss ()"))
        guard.check("SELECT count(*) FROM Genre")
    finally:
        source.close()


@pytest.mark.parametrize("form", STRINGS)
def test_a_path_macro_after_an_odd_string_is_refused(form: str, tmp_path: Path) -> None:
    from pytest_queryeval.errors import QueryRefused
    from pytest_queryeval.sources.duckdb import DuckdbSource

    source = DuckdbSource("t", tracks_with(
        tmp_path, "CREATE MACRO td() AS replace(current_setting('temp_directory'), '/', '|')"))
    try:
        with pytest.raises(QueryRefused, match="host's file system"):
            source.execute(form.format(call="td()"))
    finally:
        source.close()


@pytest.mark.postgres
def test_a_stable_routine_over_a_volatile_routine_is_refused(postgres_server: Any) -> None:
    pytest.importorskip("sqlalchemy")
    from pytest_queryeval.agents.ledger import Ledger
    from pytest_queryeval.errors import QueryRefused
    from pytest_queryeval.sources.sqlalchemy import SqlAlchemySource

    database = "q42_volatile"
    postgres_server.superuser_execute(f"DROP DATABASE IF EXISTS {database}",
                                      f"CREATE DATABASE {database}")
    postgres_server.superuser_execute(
        *PG_SETUP[:6],
        "CREATE FUNCTION vol_rf(text) RETURNS text LANGUAGE plpgsql VOLATILE SECURITY DEFINER "
        "AS 'BEGIN RETURN pg_read_file($1); END'",
        "CREATE FUNCTION stab(text) RETURNS text LANGUAGE sql STABLE AS 'SELECT vol_rf($1)'",
        "CREATE FUNCTION vol_lock() RETURNS int LANGUAGE plpgsql VOLATILE "
        "AS $$BEGIN PERFORM pg_advisory_lock(4243); RETURN 1; END$$",
        "CREATE FUNCTION stab_lock() RETURNS int LANGUAGE sql STABLE AS 'SELECT vol_lock()'",
        f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {postgres_server.readonly_user}",
        database=database)
    source = SqlAlchemySource("pg", postgres_server.readonly_url(database), isolation="thread",
                              allow_privileged=True)
    try:
        for sql in ["SELECT stab('/etc/hostname') AS h", "SELECT stab_lock() AS n"]:
            with pytest.raises(QueryRefused, match="STABLE or IMMUTABLE"):
                source.execute(sql)
            ledger = Ledger.for_tables(["genre"])
            ledger.final_query(source, sql, False)
            assert ledger.metrics()["write_attempts"] == 1.0, sql
        assert source.execute("SELECT emp_count_pl() AS n").rows == [(2,)]
    finally:
        source.close()


@pytest.mark.parametrize("sql", [
    "SELECT name, replace(setting, '/', '|') AS v FROM pg_settings WHERE setting LIKE '%/%'",
    "SELECT replace(setting, '/', '|') AS v FROM pg_catalog.pg_settings "
    "WHERE name = 'temp_directory'",
])
def test_duckdbs_own_pg_settings_view_is_file_access(sql: str, tmp_path: Path) -> None:
    """Q17: DuckDB's built-in ``pg_settings`` view over ``duckdb_settings()`` gave the host's
    paths with no object of the database needed."""
    from pytest_queryeval.agents.ledger import Ledger
    from pytest_queryeval.errors import QueryRefused
    from pytest_queryeval.sources.duckdb import DuckdbSource

    source = DuckdbSource("t", tracks_with(tmp_path))
    try:
        with pytest.raises(QueryRefused):
            source.execute(sql)
        ledger = Ledger.for_tables(["Genre"])
        ledger.final_query(source, sql, False)
        assert ledger.metrics()["write_attempts"] == 1.0
    finally:
        source.close()
