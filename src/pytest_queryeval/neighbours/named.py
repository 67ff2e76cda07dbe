"""The search's engine by name: the file engines of :mod:`.engines` (the same adapter for
every file) and PostgreSQL's (:mod:`.pgengine`, bound to the datasource's URL).

Why a module of its own: :mod:`.pgengine` builds on :mod:`.engines`, so the table that names
both cannot live in either without an import cycle.
"""

from __future__ import annotations

from typing import Any

from .engines import ENGINES, Engine, Rows, inserts
from .schema import DbSchema

#: The suffix of a saved counterexample per engine (PostgreSQL's is a SQL script).
FILE_SUFFIX = {"sqlite": "sqlite", "duckdb": "duckdb", "postgres": "sql"}


def engine_named(name: str, target: str, allow_privileged: bool = False) -> Engine[Any]:
    """The engine ``name`` for ``target``: a file's engine is the same for every file; a
    server's (PostgreSQL) is bound to the datasource's URL, its role and database."""
    if name == "postgres":
        from .pgengine import PostgresEngine

        return PostgresEngine(target, allow_privileged)
    return ENGINES[name]


def engine_inserts(name: str, schema: DbSchema, rows: Rows) -> list[str]:
    """A counterexample's rows as its engine reads INSERTs (PostgreSQL's literals differ)."""
    if name == "postgres":
        from .pgengine import pg_inserts

        return pg_inserts(schema, rows)
    return inserts(schema, rows)


def engine_writer(name: str) -> Engine[Any]:
    """The engine that writes a counterexample of ``name`` (no server is needed to write)."""
    return engine_named(name, "")
