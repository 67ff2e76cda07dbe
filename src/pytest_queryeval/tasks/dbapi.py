"""The part of a DB-API connection the task modules use: sqlite3, DuckDB and psycopg
connections all have it. Typed here (structurally: nothing is imported) so that a module
reads a copy's rows without ``Any`` and without importing an optional engine."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol


class Cursor(Protocol):
    """What ``execute`` returns: rows to fetch, and their column descriptions."""

    @property
    def description(self) -> Sequence[Sequence[Any]] | None: ...

    def fetchall(self) -> list[Any]: ...

    def fetchone(self) -> Any: ...

    def fetchmany(self, size: int = ..., /) -> list[Any]: ...


class Connection(Protocol):
    """A connection that executes one statement (with its parameters) and returns a cursor."""

    def execute(self, sql: str, parameters: Sequence[Any] = ..., /) -> Cursor: ...


class TransactionInfo(Protocol):
    @property
    def transaction_status(self) -> object: ...


class PgConnection(Connection, Protocol):
    """A psycopg connection: its ``info`` says whether a transaction is open or failed."""

    @property
    def info(self) -> TransactionInfo: ...


class StatementCursor(Cursor, Protocol):
    """A cursor that executes statements itself (LiveSQLBench's helpers use one)."""

    def execute(self, sql: str, /) -> object: ...

    def close(self) -> None: ...


class CursorConnection(Protocol):
    """A connection used through cursors and explicit commits (LiveSQLBench's helpers)."""

    def cursor(self) -> StatementCursor: ...

    def commit(self) -> None: ...

    def rollback(self) -> None: ...
