"""The engines ``task:`` cases run on are one table (issue 51 item 5): an engine it does not
hold is refused by name, never run as the last branch of a switch on engine names."""

from __future__ import annotations

import sqlite3

import pytest

from pytest_queryeval.sources import SOURCE_TYPES, SourceType
from pytest_queryeval.sources.sqlite import SqliteSource
from pytest_queryeval.tasks.case import engine_of
from pytest_queryeval.tasks.engines import TASK_ENGINES, server_copies, task_engine


@pytest.mark.parametrize("name", list(TASK_ENGINES))
def test_every_engine_says_how_its_copies_are_made_and_cleaned(name: str) -> None:
    entry = task_engine(name)
    assert entry.name == name
    # a local copy drops its temporary objects itself; a server's copy has DISCARD ALL
    assert (entry.temporary is None) == entry.server_copies
    assert not (entry.in_memory_copy and entry.server_copies)


def test_an_engine_the_table_does_not_hold_is_refused_by_name(
        monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError, match="task: cases do not run on engine 'mysql'"):
        task_engine("mysql")
    assert not server_copies("mysql") and not server_copies(None)
    # a type that claims tasks on a dialect no engine entry answers takes none
    monkeypatch.setitem(SOURCE_TYPES, "mysqlish", SourceType.inherit(
        SqliteSource, dialect=lambda spec: "mysql", tasks=frozenset({"mysql"})))
    assert engine_of({"type": "mysqlish", "path": "x"}) is None
    assert engine_of({"type": "sqlite", "path": "x"}) == "sqlite"


def test_the_collateral_check_names_a_connection_it_cannot_read() -> None:
    from pytest_queryeval.tasks.engines import of

    class Other:
        pass

    assert of(sqlite3.connect(":memory:")).name == "sqlite"
    with pytest.raises(ValueError, match=r"does not read a .* connection"):
        of(Other())  # type: ignore[arg-type]
    duckdb = pytest.importorskip("duckdb")
    assert of(duckdb.connect()).name == "duckdb"
