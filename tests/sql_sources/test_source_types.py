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
        assert "copied-sqlite" in plugin_key_types()
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
            ("writable", f"only SQL datasources ({', '.join(plugin_key_types())}) take "
                         "writable:")]
        assert "copied-sqlite" not in plugin_key_types()
        assert engine_of(SPEC) is None
        assert source_problems({**SPEC, "path": __file__}) == []
        assert _search_details(src) == {"skipped": "counterexample databases are built for "
                                                   "SQLite and DuckDB files and PostgreSQL "
                                                   "servers only"}
        assert _warmed(SPEC) == 0
    finally:
        src.close()


@pytest.mark.parametrize("name", list(SOURCE_TYPES))
def test_every_entry_s_capabilities_hold_together(name: str) -> None:
    """What every type's entry must satisfy, a built-in's or a plugin's (``test_locality``
    runs this on its copy with a new entry): the capabilities that only a SQL engine has
    come with ``sql``, and a schema holds no data."""
    entry = sources.source_types()[name]
    assert not (entry.sql and entry.sparql)
    if entry.warm or entry.plugin_keys or entry.neighbours or entry.tasks or entry.database_file:
        assert entry.sql, name
    if entry.sqlite_file:
        assert entry.database_file == "sqlite"
    if entry.schema_only:
        assert not (entry.sql or entry.sparql or entry.warm)
    assert sources.source_type(name) is entry


def test_a_url_names_its_dialect_and_tasks_engine() -> None:
    assert dialect_of({"type": "sqlalchemy", "url": "postgresql+psycopg://h/db"}) == "postgres"
    assert dialect_of({"type": "sqlalchemy", "url": "MySQL://h/db"}) == "mysql"
    assert dialect_of({"type": "rdf"}) is None
    assert engine_of({"type": "sqlalchemy", "url": "postgresql://h/db"}) == "postgres"
    assert engine_of({"type": "sqlalchemy", "url": "mysql://h/db"}) is None


def test_a_subclass_inherits_its_base_type_s_capabilities() -> None:
    """``SourceType.inherit``: a class derived from a registered type's class is that type in
    every respect it does not change (a ``sqlscript`` source restated 5 of 13 flags)."""
    from dataclasses import replace

    sqlite = SOURCE_TYPES["sqlite"]
    assert SourceType.inherit(CopiedSqlite) == replace(sqlite, cls=CopiedSqlite)
    changed = SourceType.inherit(CopiedSqlite, keys=frozenset({"directory"}),
                                 database_file=None)
    assert (changed.sql, changed.warm, changed.plugin_keys, changed.neighbours,
            changed.tasks, changed.dialect({})) == (True, True, True, "sqlite",
                                                   frozenset({"sqlite"}), "sqlite")
    assert (changed.keys, changed.database_file) == (frozenset({"directory"}), None)
    # a bare class registered is its inherited entry; a class of no registered type, defaults
    sources.register_type("copied", CopiedSqlite)
    try:
        assert sources.source_type("copied") == replace(sqlite, cls=CopiedSqlite)
    finally:
        sources.unregister_type("copied")
    assert sources.source_type("copied") is sources.UNKNOWN
    assert SourceType.inherit(SourceDefaults) == SourceType(SourceDefaults)


def test_declared_keys_are_checked_before_a_class_s_own_from_spec(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A ``directry:`` typo used to reach a ``from_spec`` that read ``directory`` and never
    looked at the others."""
    from pytest_queryeval.errors import ConfigError

    class FromSpec(CopiedSqlite):
        @classmethod
        def from_spec(cls, name: str, spec: dict[str, object]) -> FromSpec:
            return cls(name, CHINOOK, isolation="thread")

    monkeypatch.setitem(SOURCE_TYPES, "from-spec",
                        SourceType.inherit(FromSpec, keys=frozenset({"directory"})))
    with pytest.raises(ConfigError, match=r"unknown key\(s\) directry for type from-spec "
                                          r"\(did you mean 'directory'\?\)") as info:
        open_source("db", {"type": "from-spec", "directry": "x"})
    assert info.value.key == "datasources.db.directry"


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
