"""``task:`` cases switch on no engine name (issue 51 item 5).

The collateral check compared the engine's name in each of its steps (``engine == "sqlite"``,
``"duckdb"``, else PostgreSQL's catalog queries), so an engine added to
:data:`pytest_queryeval.tasks.engines.TASK_ENGINES` fell into PostgreSQL's branch everywhere
without a word. Each engine's answers are its entry's (its ``catalog``,
:mod:`pytest_queryeval.tasks.catalogs`): no module of ``tasks/`` compares a value with an
engine's name. Read from the source with ``ast``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest_queryeval
from pytest_queryeval.tasks.engines import TASK_ENGINES

TASKS = Path(pytest_queryeval.__file__).parent / "tasks"


def name_switches(source: str, names: frozenset[str]) -> list[int]:
    """The lines of ``source`` that compare something with one of ``names`` (``==``, ``!=``,
    ``in`` a literal tuple, list or set of them)."""
    def named(node: ast.expr) -> bool:
        if isinstance(node, ast.Constant):
            return node.value in names
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            return any(named(e) for e in node.elts)
        return False

    return [node.lineno for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Compare) and any(named(n) for n in (node.left, *node.comparators))]


def test_no_task_module_switches_on_an_engine_name() -> None:
    names = frozenset(TASK_ENGINES)
    found = [f"{path.name}:{line}" for path in sorted(TASKS.glob("*.py"))
             for line in name_switches(path.read_text(encoding="utf-8"), names)]
    assert found == []


def test_the_check_finds_each_form_of_switch() -> None:
    source = ('if engine == "sqlite":\n    pass\n'
              'x = "duckdb" != kind\n'
              'y = name in ("postgres", "other")\n'
              'z = conninfo(url, "postgres")\n'   # a database's name, passed: no switch
              'w = engine == "mysql"\n')          # not a task engine
    assert name_switches(source, frozenset(TASK_ENGINES)) == [1, 3, 4]


def test_every_engine_brings_its_catalog() -> None:
    """What every entry must satisfy, a new engine's too: a catalog of its own that says
    which connections are its, none claiming another's."""
    import sqlite3

    from pytest_queryeval.tasks.catalogs import Catalog
    from pytest_queryeval.tasks.engines import of

    for entry in TASK_ENGINES.values():
        assert type(entry.catalog) is not Catalog, entry.name
        assert entry.catalog.module, entry.name
    con = sqlite3.connect(":memory:")
    try:
        assert of(con).name == "sqlite"
    finally:
        con.close()
