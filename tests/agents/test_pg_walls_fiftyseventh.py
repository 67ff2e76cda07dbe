"""Issue 58, the counted session's own values (after the fifty-fifth and fifty-sixth
re-probes of the agents' walls on PostgreSQL).

Each round found another route by which a routine turned parallel query back on inside a
counted statement, and a read in a parallel worker went uncounted: ``RESET ALL`` (B1) undid
the statement's ``SET LOCAL`` with no setting named. A counted connection now starts with
parallel query off as the session's own value (``options=-c max_parallel_workers=0 ...``,
:data:`pytest_queryeval.sources.pgreads.SERIAL_OPTIONS`), so what a reset restores is off
too, and a database whose routines reset is counted instead of refused: before, every agent
case there was an error ("may change a setting the counts depend on"), the honest ones too.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tests.agents.test_pg_counted_serial import _forced
from tests.agents.test_pg_walls_fiftieth import _NO_SIGNALS
from tests.agents.test_pg_walls_fortysixth import _source
from tests.agents.test_pg_walls_fortythird import _database

pytestmark = pytest.mark.postgres

_QUERY = "SELECT l_agg(b) AS n FROM public.t57"


def _setup(postgres_server: Any, name: str) -> list[str]:
    """Parallel query forced, the leader kept out (the database's own defaults), and
    ``l_agg``'s state function reading ``sales.orders`` after ``RESET ALL``, inside an
    ``EXCEPTION`` block whose rollback would undo a change of settings."""
    role = postgres_server.readonly_user
    return [*_NO_SIGNALS, "CREATE TABLE public.t57 (b text)",
            "INSERT INTO public.t57 VALUES ('x'), ('y')",
            "CREATE SCHEMA sales", "CREATE TABLE sales.orders (id int, secret text)",
            "INSERT INTO sales.orders SELECT i, 'TOPSECRET' FROM generate_series(1, 20000) i",
            f"GRANT USAGE ON SCHEMA sales TO {role}", f"GRANT SELECT ON sales.orders TO {role}",
            "ANALYZE",
            f"ALTER DATABASE {name} SET {_forced(postgres_server)} = on",
            f"ALTER DATABASE {name} SET parallel_leader_participation = off",
            f"ALTER DATABASE {name} SET parallel_setup_cost = 0",
            f"ALTER DATABASE {name} SET parallel_tuple_cost = 0",
            f"ALTER DATABASE {name} SET min_parallel_table_scan_size = 0",
            "CREATE FUNCTION l_sf(text, text) RETURNS text LANGUAGE plpgsql VOLATILE AS $f$"
            f"DECLARE leak text := ''; BEGIN IF session_user = '{role}' THEN "
            "BEGIN RESET ALL; SELECT max(secret) INTO leak FROM sales.orders; PERFORM 1/0; "
            "EXCEPTION WHEN division_by_zero THEN NULL; END; END IF; "
            "RETURN coalesce($1, '') || $2 || coalesce(leak, ''); END$f$",
            "CREATE AGGREGATE l_agg(text) (sfunc = l_sf, stype = text, initcond = '')"]


def test_a_reset_restores_parallel_query_off_and_the_read_is_counted(
        postgres_server: Any) -> None:
    """Before: the routine's ``RESET ALL`` made the database a blinder, every counted
    statement on it an error; now the read after it runs in the leader and is counted."""
    from pytest_queryeval.sources import pgreads

    name = "q57_r_" + uuid.uuid4().hex[:6]
    with _database(postgres_server, name, *_setup(postgres_server, name)):
        source = _source(postgres_server, name)
        try:
            with pgreads.counted():
                table = source.execute(_QUERY)
                honest = source.execute("SELECT b FROM public.t57")
        finally:
            source.close()
    assert "TOPSECRET" in str(table.rows)
    assert {"public.t57", "sales.orders"} <= set(table.meta["read"]), table.meta
    assert honest.meta["read"] == ["public.t57"], honest.meta


def test_a_session_without_its_own_serial_values_still_refuses_a_reset(
        postgres_server: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the startup options do not reach the session (a driver without libpq's
    ``options``, a pooler that drops them: here, none sent), ``RESET ALL`` restores parallel
    query on, and the routine that runs it leaves the counts unknown, as before."""
    from pytest_queryeval.errors import CountUnknown
    from pytest_queryeval.sources import pgreads

    monkeypatch.setattr(pgreads, "SERIAL_OPTIONS", "")
    name = "q57_u_" + uuid.uuid4().hex[:6]
    with _database(postgres_server, name, *_setup(postgres_server, name)):
        source = _source(postgres_server, name)
        try:
            with pgreads.counted():
                assert "read" not in source.execute(_QUERY).meta  # (no count: the plan's)
                with pytest.raises(CountUnknown, match=r"l_sf\(\) runs RESET ALL"):
                    source.tables_read(_QUERY)
        finally:
            source.close()


def test_the_counted_pool_alone_starts_serial(postgres_server: Any) -> None:
    """Gold queries and predictions outside agent cases keep the database's own parallel
    plans: only the counted statements' pool starts with parallel query off, after the
    user's own ``options`` (the last ``-c`` wins)."""
    from sqlalchemy import text

    from pytest_queryeval.sources.sqlalchemy import SqlAlchemySource

    source = SqlAlchemySource("pg", postgres_server.readonly_url(), isolation="thread",
                              engine_options={"connect_args": {
                                  "options": "-c max_parallel_workers=3 -c work_mem=5MB"}})
    show = text("SELECT current_setting('max_parallel_workers'), current_setting('work_mem')")
    try:
        with source._engine().connect() as plain, source._engine(counted=True).connect() as c:
            assert tuple(plain.execute(show).one()) == ("3", "5MB")
            assert tuple(c.execute(show).one()) == ("0", "5MB")
    finally:
        source.close()
