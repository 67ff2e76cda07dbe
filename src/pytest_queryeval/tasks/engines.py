"""What a ``task: dml|ddl`` case needs of the engine its copies run on, one entry per engine.

Why a table: the engine's name was switched on in the task modules (``task.engine ==
"postgres"``, ``"sqlite" if isinstance(conn, sqlite3.Connection) else "duckdb"``), so an engine
that was neither fell silently into the last branch. The engines ``task:`` runs on are those a
datasource type's entry lists (``SourceType.tasks``); each is answered here, and a name the
table does not hold is refused by name (:func:`task_engine`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .catalogs import Catalog, DuckdbCatalog, PostgresCatalog, SqliteCatalog

if TYPE_CHECKING:
    from .dbapi import Connection


@dataclass(frozen=True)
class TaskEngine:
    """One engine's answers."""

    name: str
    #: Its copies are databases a server makes from a template (:mod:`.pgcopies`), the
    #: prediction checked before any copy is made and run confined on it (:mod:`.pgconfine`);
    #: else the copies are local (a file copied, or SQLite's in memory).
    server_copies: bool = False
    #: A copy is an in-memory SQLite database (:func:`.run._sqlite_copy`).
    in_memory_copy: bool = False
    #: The query listing a copy's temporary objects as ``(kind, name)``, the DROP verb of each
    #: kind, and the schema their names are qualified with; None: the server drops them
    #: (``DISCARD ALL``).
    temporary: tuple[str, dict[str, str], str] | None = None
    #: Its catalog, as the collateral check reads it (:mod:`.catalogs`); it also says
    #: whether a connection is one of this engine's (:func:`of`).
    catalog: Catalog = field(default_factory=Catalog)


#: The engines, by the name ``tasks.case.engine_of`` gives (a SQL dialect).
TASK_ENGINES: dict[str, TaskEngine] = {
    "sqlite": TaskEngine(
        "sqlite", in_memory_copy=True, catalog=SqliteCatalog(), temporary=(
            "SELECT type, name FROM sqlite_temp_master WHERE type IN ('trigger', 'view', "
            "'table') ORDER BY CASE type WHEN 'trigger' THEN 0 WHEN 'view' THEN 1 ELSE 2 END",
            {"trigger": "TRIGGER", "view": "VIEW", "table": "TABLE"}, "temp")),
    "duckdb": TaskEngine(
        "duckdb", catalog=DuckdbCatalog(), temporary=(
            "SELECT 'view', view_name FROM duckdb_views() WHERE temporary AND NOT internal "
            "UNION ALL SELECT 'table', table_name FROM duckdb_tables() WHERE temporary "
            "UNION ALL SELECT 'macro', function_name FROM duckdb_functions() WHERE "
            "database_name = 'temp' AND NOT internal AND function_type = 'macro' "
            "UNION ALL SELECT 'table macro', function_name FROM duckdb_functions() WHERE "
            "database_name = 'temp' AND NOT internal AND function_type = 'table_macro' "
            "UNION ALL SELECT 'sequence', sequence_name FROM duckdb_sequences() WHERE "
            "temporary",
            {"view": "VIEW", "table": "TABLE", "macro": "MACRO",
             "table macro": "MACRO TABLE", "sequence": "SEQUENCE"}, "temp.main")),
    "postgres": TaskEngine("postgres", server_copies=True, catalog=PostgresCatalog()),
}


def task_engine(name: str | None) -> TaskEngine:
    """The entry of engine ``name``; ValueError naming it when tasks do not run there."""
    entry = TASK_ENGINES.get(name or "")
    if entry is None:
        raise ValueError(f"task: cases do not run on engine {name!r} (they run on "
                         f"{', '.join(TASK_ENGINES)})")
    return entry


def server_copies(name: str | None) -> bool:
    """Whether engine ``name`` makes its copies on a server (False for one tasks do not run
    on: nothing is copied there)."""
    entry = TASK_ENGINES.get(name or "")
    return entry is not None and entry.server_copies


def of(conn: Connection) -> TaskEngine:
    """The engine of a copy's connection (its catalog's :meth:`~.catalogs.Catalog.owns`):
    a connection of another engine is refused by its module, never read as one of these."""
    for entry in TASK_ENGINES.values():
        if entry.catalog.owns(conn):
            return entry
    raise ValueError(f"the collateral check does not read a {type(conn).__module__} connection")
