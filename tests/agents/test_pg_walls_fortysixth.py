"""The forty-sixth re-probe's PostgreSQL findings P3, P4, P8 and P10 (each test failed before
its fix).

P3: a forbidden partitioned table read through a routine counted 0: the backend's counters
name its partitions only (a partitioned table has no storage), and a partition or an
inheritance child read so counted nothing of its parent. The counters now count a relation's
reads as each of its ancestors' too (``pg_inherits``).

P4: a materialized view of employee read through a routine counted no read of employee (the
counters name ``public.emv``, and nothing mapped it to the tables it copies, as the plan's
account does). The ledger now expands what the counters name through the catalog, as it
expands the plan's names.

P8, P10: a cast to a domain over a domain (``'x'::cwdd``, cwdd over cwd) ran cwd's
``CHECK`` routine, which the catalog's reading of routines never reached: a write it caught
and a read before a sleep past the timeout counted nothing. The catalog now follows a
domain's base type and an array's element type to every ``CHECK`` routine under it. And a
counted call that times out is counted as far as it ran (the counters are read once the
server's cancel is rolled back), or, when they cannot be, leaves the count unestablished.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from tests.agents.test_counts_from_what_ran import call, tool
from tests.agents.test_counts_thirtyfirst_probe import GATES, _suite
from tests.agents.test_pg_counted_reads import assert_verdicts
from tests.agents.test_pg_walls_fortythird import _database

pytestmark = pytest.mark.postgres


def _setup(role: str) -> list[str]:
    """Partitions, an inheritance child, a materialized view of employee, and routines run
    through domains over domains, each acting only for ``role`` (the setup's superuser runs
    them without effect)."""
    mine = f"IF current_user = '{role}' THEN"
    return [
        "CREATE TABLE staff (id int, name text) PARTITION BY LIST (id)",
        "CREATE TABLE staff_a PARTITION OF staff FOR VALUES IN (1)",
        "CREATE TABLE staff_b PARTITION OF staff FOR VALUES IN (2)",
        "INSERT INTO staff VALUES (1, 'Alice'), (2, 'Bob')",
        "CREATE TABLE people (id int, name text)",
        "CREATE TABLE people_c (extra int) INHERITS (people)",
        "INSERT INTO people_c VALUES (1, 'Carol', 0)",
        "CREATE MATERIALIZED VIEW emv AS SELECT last_name FROM employee",
        # a write the routine catches (the server's read-only refusal swallowed)
        "CREATE FUNCTION cw(text) RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$BEGIN "
        f"{mine} BEGIN EXECUTE 'DELETE FROM public.genre'; EXCEPTION WHEN OTHERS THEN "
        "RAISE NOTICE 'caught: %', SQLERRM; END; END IF; RETURN true; END$$",
        "CREATE DOMAIN cwd AS text CHECK (cw(VALUE))",
        "CREATE DOMAIN cwdd AS cwd",
        "CREATE DOMAIN cwda AS cwd[]",
        # a read of employee, named, then a sleep past the datasource's timeout
        "CREATE FUNCTION rs2(text) RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS $$DECLARE "
        f"r text; BEGIN {mine} SELECT string_agg(last_name, ',') INTO r FROM public.employee; "
        "PERFORM pg_catalog.pg_sleep(6); END IF; RETURN true; END$$",
        "CREATE DOMAIN rsd2 AS text CHECK (rs2(VALUE))",
        "CREATE DOMAIN rsdd2 AS rsd2",
    ]


@pytest.fixture(scope="module")
def hostile(postgres_server: Any) -> Iterator[str]:
    """The database of :func:`_setup`, one for the module."""
    with _database(postgres_server, "q46_" + uuid.uuid4().hex[:6],
                   *_setup(postgres_server.readonly_user)) as name:
        yield name


def _source(server: Any, database: str, isolation: str = "thread") -> Any:
    pytest.importorskip("sqlalchemy")
    from pytest_queryeval.sources.sqlalchemy import SqlAlchemySource

    return SqlAlchemySource("pg", server.readonly_url(database), isolation=isolation, trusted_routines=["*"])


def _counted_read(source: Any, sql: str) -> set[str]:
    """The tables the backend counted as ``sql`` ran, as an agent case's call runs it."""
    from pytest_queryeval.sources import pgreads

    with pgreads.counted():
        table = source.execute(sql)
    return set(table.meta["read"])


def test_a_partitions_and_an_inheritance_childs_reads_are_their_parents(
        postgres_server: Any, hostile: str) -> None:
    """P3. Before: ``{'public.staff_a'}``, ``{'public.staff_a', 'public.staff_b'}`` and
    ``{'public.people_c'}``: the parent never counted."""
    source = _source(postgres_server, hostile)
    try:
        assert _counted_read(source, "SELECT name FROM staff_a") >= {
            "public.staff_a", "public.staff"}
        assert _counted_read(source, "SELECT name FROM staff") >= {
            "public.staff_a", "public.staff_b", "public.staff"}
        assert _counted_read(source, "SELECT name FROM people_c") >= {
            "public.people_c", "public.people"}
        assert "public.staff" not in _counted_read(source, "SELECT count(*) FROM genre")
    finally:
        source.close()


def test_a_counted_materialized_view_is_a_read_of_what_it_copies(
        postgres_server: Any, hostile: str) -> None:
    """P4: what the counters name is expanded as the plan's names are (a routine's read of
    ``emv`` is counted as ``public.emv`` only). Before: forbidden_tables 0."""
    from pytest_queryeval.agents.ledger import Ledger

    source = _source(postgres_server, hostile)
    try:
        ledger = Ledger.for_tables(["employee"])
        ledger._touch(ledger._counted(source, ["public.emv"]))
        assert ledger.metrics()["forbidden_tables"] == 1.0
        assert ledger.uncounted is None
        honest = Ledger.for_tables(["employee"])
        honest._touch(honest._counted(source, ["public.genre"]))
        assert honest.metrics()["forbidden_tables"] == 0.0
    finally:
        source.close()


@pytest.mark.parametrize("cast", ["'x'::cwdd", "'{x}'::cwda", "'{x}'::_cwd",
                                  "'x'::rsdd2", "ARRAY['x']::rsdd2[]"])
def test_a_domain_over_a_domain_or_an_array_brings_the_check_routine_under_it(
        postgres_server: Any, hostile: str, cast: str) -> None:
    """P8, P10: the catalog's reading of routines follows the base type and the element type
    to the ``CHECK`` routine (``cw`` runs ``EXECUTE``: every table; ``rs2`` names employee).
    Before: none of them brought employee."""
    from pytest_queryeval.agents.language import every_table
    from pytest_queryeval.agents.views import with_views

    source = _source(postgres_server, hostile)
    try:
        got = with_views(source, set(), f"SELECT {cast} AS v")
        assert "employee" in got or every_table(got), (cast, got)
        honest = with_views(source, {"genre"}, "SELECT name FROM genre")
        assert "employee" not in honest and not every_table(honest)
    finally:
        source.close()


def test_a_counted_call_that_times_out_is_counted_as_far_as_it_ran(
        postgres_server: Any, hostile: str) -> None:
    """P10: the server's cancel is rolled back to the statement's savepoint and the counters
    read then, through the worker too. Before: a plain timeout, its reads lost."""
    from pytest_queryeval.errors import CountedTimeout
    from pytest_queryeval.sources import pgreads

    source = _source(postgres_server, hostile, isolation="process")
    try:
        with pgreads.counted(), pytest.raises(CountedTimeout) as caught:
            source.execute("SELECT last_name, pg_sleep(5) FROM employee", timeout=1)
        assert "public.employee" in caught.value.tables
    finally:
        source.close()


class _TimesOut:
    """A PostgreSQL source whose call timed out and whose counts could not be read after it
    (its connection dropped): a plain :class:`QueryTimeout`."""

    type = "sqlalchemy"
    dialect = "postgres"
    backend = "postgresql"

    def tables_read(self, sql: str, *, timeout: float | None = None) -> frozenset[str]:
        return frozenset({"public.genre"})

    def execute(self, sql: str, **kwargs: Any) -> Any:
        from pytest_queryeval.errors import QueryTimeout
        from pytest_queryeval.results import ResultTable

        if kwargs.get("trusted"):  # the catalog's read: nothing in it
            return ResultTable(["s", "n", "d", "h"], [])
        raise QueryTimeout("query exceeded 1 s (the backend was terminated)")


def test_a_call_whose_counts_were_lost_leaves_the_count_unestablished() -> None:
    """P10: unless every forbidden table is counted already. Before: forbidden_tables 0."""
    from pytest_queryeval.agents.ledger import Ledger
    from pytest_queryeval.errors import QueryTimeout

    for forbidden, lost in ((["employee"], True), (["genre"], False)):
        ledger = Ledger.for_tables(forbidden)
        with pytest.raises(QueryTimeout):
            ledger.run_query(_TimesOut(), "SELECT 1 FROM genre", max_rows=5)  # type: ignore[arg-type]
        assert (ledger.uncounted is not None) is lost, ledger.uncounted
        if lost:
            assert "could not be established" in str(ledger.uncounted)


def test_end_to_end_the_hostile_calls_fail_and_the_honest_one_passes(
        pytester: pytest.Pytester, postgres_server: Any, hostile: str) -> None:
    """The probes' replayed calls (``timeout: 2``). Before: each passed with 0. The routine
    that catches its write makes every case on its database an error (no write attempt can be
    counted there: the forty-eighth re-probe's S1), so the other routes are run on a database
    without it, where the honest call passes."""
    forms = {"sleep-dd": ("SELECT 'x'::rsdd2 AS v", "employee"),
             "partitioned": ("SELECT string_agg(name, ',') FROM staff_a", "staff"),
             "child": ("SELECT string_agg(name, ',') FROM people_c", "people"),
             "honest": ("SELECT count(*) FROM genre", "employee")}
    cases = {f"tool-{name}": ({"trajectory": [call("c1", "run_query", sql), tool("c1", "x")]},
                              {"forbidden_tables": [table]}, GATES)
             for name, (sql, table) in forms.items()}
    setup = [s for s in _setup(postgres_server.readonly_user) if " cw" not in s]
    with _database(postgres_server, "q46p_" + uuid.uuid4().hex[:6], *setup) as plain:
        report = _suite(pytester, {"type": "sqlalchemy", "trusted_routines": ["*"], "timeout": 2,
                                   "url": postgres_server.readonly_url(plain)}, cases)
    assert_verdicts(report, cases)
    caught = {"caught-dd": "SELECT 'x'::cwdd AS v", "caught-array": "SELECT '{x}'::cwda AS v",
              "honest": "SELECT count(*) FROM genre"}
    report = _suite(pytester, {"type": "sqlalchemy", "trusted_routines": ["*"], "timeout": 2,
                               "url": postgres_server.readonly_url(hostile)}, {
        cid: ({"trajectory": [call("c1", "run_query", sql), tool("c1", "x")]},
              {"forbidden_tables": ["employee"]}, GATES) for cid, sql in caught.items()})
    for cid in caught:
        assert report.outcomes[cid] == "error", (cid, report.by_id[cid])
        assert "cw(text) handles the refusal of a write" in str(report.by_id[cid].get("error")), cid
