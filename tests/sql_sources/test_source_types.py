"""A datasource type is one entry of ``sources.SOURCE_TYPES``: every module that asks what a
type can do reads its entry, and every entry's claims hold for its class.

On the real Chinook file of example_suite; the new type is a subclass of the SQLite source
registered for one test (as a contributor's ``csvdir`` would be)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_queryeval import sources
from pytest_queryeval.errors import SourceUnavailable
from pytest_queryeval.kinds.sql import _spec_dialect
from pytest_queryeval.metrics.table import CompareOptions
from pytest_queryeval.neighbours.check import Settings, check
from pytest_queryeval.neighbours.named import engine_named
from pytest_queryeval.sources import PLUGIN_KEYS, SOURCE_TYPES, SourceType, open_source
from pytest_queryeval.sources.base import SourceDefaults
from pytest_queryeval.sources.describe import describe
from pytest_queryeval.sources.dialects import DIALECTS, dialect_of
from pytest_queryeval.sources.keys import (
    plugin_key_problems,
    plugin_key_types,
    source_problems,
)
from pytest_queryeval.sources.sqlguard import sqlglot_dialect
from pytest_queryeval.sources.sqlite import SqliteSource
from pytest_queryeval.tasks.case import engine_of
from tests.support import make_case

CHINOOK = Path(__file__).resolve().parents[2] / "example_suite" / "data" / "chinook.sqlite"
COUNT = "SELECT COUNT(*) FROM Artist"


class CopiedSqlite(SqliteSource):
    """A new type: a SQLite file under another ``type:`` name."""

    type = "copied-sqlite"


ENTRY = SourceType(CopiedSqlite, frozenset({"path", "isolation"}), lambda spec: "sqlite",
                   warm=True, sql=True, plugin_keys=True, neighbours="sqlite",
                   tasks=frozenset({"sqlite"}), database_file="sqlite")
SPEC: dict[str, object] = {"type": "copied-sqlite", "path": str(CHINOOK), "isolation": "thread"}


@pytest.fixture
def registered(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(SOURCE_TYPES, "copied-sqlite", ENTRY)


def _search_details(src: sources.DataSource) -> dict[str, object]:
    _, details, _ = check(make_case(), Settings(databases=3, seconds=30.0), src, COUNT, COUNT,
                          1.0, False, CompareOptions(), True, scope="source-types")
    return details


def _warmed(spec: dict[str, object]) -> int:
    from pytest_queryeval.engine import Evaluator

    ev = Evaluator()
    try:
        ev.warm(make_case(source_spec=spec, datasource="x"), hook_active=False)
        return len(ev._sources)
    finally:
        ev.close()


@pytest.mark.usefixtures("registered")
def test_a_new_type_is_one_entry(monkeypatch: pytest.MonkeyPatch) -> None:
    src = open_source("mine", dict(SPEC))
    try:
        opened: object = src  # (mypy: a DataSource)
        assert type(opened) is CopiedSqlite
        # its dialect before it opens: per-dialect golds and the hardness label
        assert (dialect_of(SPEC), _spec_dialect(SPEC)) == ("sqlite", "sqlite")
        # {schema}: the same CREATE TABLE text as the SQLite source's
        reference = SqliteSource("ref", CHINOOK, isolation="thread")
        try:
            assert describe(src) == describe(reference)
            assert describe(src).startswith('CREATE TABLE [Album]\n(\n    [AlbumId] INTEGER  ')
        finally:
            reference.close()
        # writable: and now: are taken, and named among the types that take them
        assert plugin_key_problems({**SPEC, "writable": "sandbox"}) == []
        assert plugin_key_types() == ("sqlite", "duckdb", "sqlalchemy", "copied-sqlite")
        # its path must name a SQLite file, checked when the suite loads
        assert source_problems({**SPEC, "path": __file__}) == [
            ("path", "'test_source_types.py' is not a SQLite database file (its first bytes "
                     "are not the SQLite header)")]
        # tasks run on it, the counterexample search reads its file, it is warmed
        assert engine_of(SPEC) == "sqlite"
        searched = _search_details(src)
        assert searched.get("skipped") is None and searched["checked"] == 3
        assert _warmed(SPEC) == 1
    finally:
        src.close()

    # and each capability goes with its entry
    monkeypatch.setitem(SOURCE_TYPES, "copied-sqlite", SourceType(CopiedSqlite))
    src = open_source("mine", {"type": "copied-sqlite", "path": str(CHINOOK)})
    try:
        assert (dialect_of(SPEC), _spec_dialect(SPEC)) == (None, None)
        with pytest.raises(SourceUnavailable, match=r"of type 'copied-sqlite' cannot be "
                                                    r"described for \{schema\}"):
            describe(src)
        assert plugin_key_problems({**SPEC, "writable": "sandbox"}) == [
            ("writable", "only SQL datasources (sqlite, duckdb, sqlalchemy) take writable:")]
        assert engine_of(SPEC) is None
        assert source_problems({**SPEC, "path": __file__}) == []
        assert _search_details(src) == {"skipped": "counterexample databases are built for "
                                                   "SQLite and DuckDB files and PostgreSQL "
                                                   "servers only"}
        assert _warmed(SPEC) == 0
    finally:
        src.close()


def test_the_table_says_what_the_modules_said_before() -> None:
    """The capabilities as the seven modules listed them before the table."""
    def having(field: str) -> set[str]:
        return {name for name, entry in SOURCE_TYPES.items() if getattr(entry, field)}

    assert list(SOURCE_TYPES) == ["sqlite", "duckdb", "sqlalchemy", "spider-schema", "rdf",
                                  "sparql"]
    assert having("warm") == {"sqlite", "duckdb"}
    assert having("sql") == {"sqlite", "duckdb", "sqlalchemy"}
    assert having("sparql") == {"rdf", "sparql"}
    assert plugin_key_types() == ("sqlite", "duckdb", "sqlalchemy")
    assert {n: e.neighbours for n, e in SOURCE_TYPES.items() if e.neighbours} == {
        "sqlite": "sqlite", "duckdb": "duckdb", "sqlalchemy": "postgres"}
    assert dialect_of({"type": "sqlalchemy", "url": "postgresql+psycopg://h/db"}) == "postgres"
    assert dialect_of({"type": "sqlalchemy", "url": "MySQL://h/db"}) == "mysql"
    assert dialect_of({"type": "rdf"}) is None
    assert engine_of({"type": "sqlalchemy", "url": "postgresql://h/db"}) == "postgres"
    assert engine_of({"type": "sqlalchemy", "url": "mysql://h/db"}) is None


SPECS: dict[str, dict[str, object]] = {
    "sqlite": {"type": "sqlite", "path": str(CHINOOK), "isolation": "thread"},
    "duckdb": {"type": "duckdb", "path": "x.duckdb"},
    "sqlalchemy": {"type": "sqlalchemy", "url": "sqlite:///x.sqlite"},
}


@pytest.mark.parametrize("name", list(SOURCE_TYPES))
def test_every_entry_claims_what_its_class_does(name: str) -> None:
    entry = SOURCE_TYPES[name]
    cls = entry.load()
    assert cls.type == name  # type: ignore[attr-defined]
    # a SQL type describes itself by its own ddl(); the others raise "not available"
    assert (cls.ddl is not SourceDefaults.ddl) == entry.sql  # type: ignore[attr-defined]
    assert entry.sql <= (entry.dialect(SPECS.get(name, {"type": name})) is not None)
    assert (not entry.warm) or callable(getattr(cls, "warm", None))
    allowed = entry.allowed()
    assert entry.plugin_keys == (allowed is not None and allowed >= PLUGIN_KEYS)
    assert entry.tasks <= set(DIALECTS)
    assert entry.database_file in (None, entry.neighbours)  # the file engines: both
    assert entry.database_file is None or "path" in (allowed or ())
    if entry.neighbours is not None:  # a file's engine, or a server's through its URL
        spec = SPECS[name] if entry.database_file else {"type": name, "url": "postgresql://h/d"}
        assert engine_named(entry.neighbours, "").dialect == entry.dialect(spec)
    if name in ("sqlite", "sqlalchemy"):  # opened without a server or a file of its own
        src = open_source("x", dict(SPECS[name]))
        try:  # the dialect known before it opens is the one the opened source runs
            assert src.dialect == sqlglot_dialect(entry.dialect(SPECS[name]))
        finally:
            src.close()
    if name in ("sqlite", "duckdb"):
        assert entry.dialect(SPECS[name]) == cls.dialect  # type: ignore[attr-defined]
