"""A custom source from the ``pytest_queryeval_datasource`` hook that declares none of the
capabilities of :class:`~pytest_queryeval.sources.base.DataSource` (``dialect``,
``executable``, ``timeout``, ``db_id``) still runs sql cases: the engine gives it the
defaults, on the object or, when it takes no attributes, through a view."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from pytest_queryeval.engine import Hooks
from pytest_queryeval.kinds.sql import SqlKind
from pytest_queryeval.results import ResultTable
from pytest_queryeval.sources.base import CAPABILITIES, SourceDefaults

from .conftest import make_case

KIND = SqlKind()


class _Sqlite:
    """A user's source written to the documented contract of name, type, execute,
    fingerprint and close only (a real read-only SQLite connection)."""

    __slots__ = ("_db",)
    name = "plain"
    type = "plain-sqlite"

    def __init__(self, path: Path) -> None:
        self._db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)

    def execute(self, query: str, *, timeout: float = 30, max_rows: int = 1000,
                trusted: bool = False) -> ResultTable:
        cur = self._db.execute(query)
        return ResultTable([d[0] for d in cur.description], cur.fetchall())

    def fingerprint(self) -> str:
        return "plain"

    def close(self) -> None:
        self._db.close()


class PlainSqlite(_Sqlite):
    """The source as most are written: attributes can be added to it."""


class SlottedSqlite(_Sqlite):
    """The same source, but no attribute can be added to it."""

    __slots__ = ()


@pytest.mark.parametrize("cls", [PlainSqlite, SlottedSqlite])
def test_custom_source_without_capabilities_runs_a_sql_case(
        cls: type[_Sqlite], chinook_sqlite: Path, session: Any) -> None:
    session.hooks = Hooks(datasource=lambda name, spec: cls(chinook_sqlite)
                          if spec["type"] == "plain-sqlite" else None)
    case = make_case("SELECT count(*) FROM Artist", spec={"type": "plain-sqlite"},
                     options={"conditions": {"order": False}})
    src = session.source(case)
    assert (type(src) is cls) == (cls is PlainSqlite)  # the object itself, or a view of it
    assert (src.dialect, src.executable, src.timeout, src.db_id) == (None, True, None, None)
    assert (src.name, src.type) == ("plain", "plain-sqlite")
    scored = KIND.evaluate(case, "SELECT COUNT(*) FROM Artist", session)
    assert scored.reason is None
    assert scored.metrics["execution_accuracy"] == 1.0
    assert scored.metrics["soft_ex"] == 1.0


def test_declared_capabilities_are_kept(chinook_sqlite: Path, session: Any) -> None:
    class Declaring(PlainSqlite):
        dialect = "sqlite"
        timeout = 5.0

    session.hooks = Hooks(datasource=lambda name, spec: Declaring(chinook_sqlite))
    src = session.source(make_case("SELECT 1", spec={"type": "x"}, name="mine"))
    assert (src.dialect, src.timeout, src.executable) == ("sqlite", 5.0, True)


def test_the_defaults_are_the_mixins() -> None:
    assert CAPABILITIES == {"dialect": None, "executable": True, "timeout": None,
                            "db_id": None}
    assert all(getattr(SourceDefaults, key) == value for key, value in CAPABILITIES.items())
