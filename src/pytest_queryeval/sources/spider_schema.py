"""``type: spider-schema``: a Spider ``tables.json``, schema only (structural metrics).

Spider-style suites often ship the schemas without the databases; such a source gives the
SQL kind what the Spider evaluator needs (tables, columns, foreign keys per ``db_id``) and
executes nothing, so only structural metrics (or recorded results) apply.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from .. import safefile
from ..errors import ConfigError, QueryFailed, SourceUnavailable
from ..results import ResultTable
from .base import DEFAULT_MAX_ROWS, DEFAULT_TIMEOUT, SourceDefaults


class SpiderSchemaSource(SourceDefaults):
    """Schemas from a Spider ``tables.json``; :meth:`execute` always fails (no data)."""

    type = "spider-schema"
    dialect = "sqlite"  # Spider's databases are SQLite
    executable = False

    def __init__(self, name: str, tables: str | Path, *, db_id: str | None = None) -> None:
        if not isinstance(tables, str | Path):
            raise ConfigError("'tables' must be the path of a Spider tables.json",
                              key=f"datasources.{name}.tables")
        self.name = name
        self.tables_path = Path(tables)
        #: A default ``db_id`` for cases that give none.
        self.db_id = db_id

    def __repr__(self) -> str:
        return f"SpiderSchemaSource({self.name!r}, {str(self.tables_path)!r})"

    def execute(self, query: str, *, timeout: float = DEFAULT_TIMEOUT,
                max_rows: int = DEFAULT_MAX_ROWS, trusted: bool = False) -> ResultTable:
        raise QueryFailed(f"datasource {self.name!r} is a spider-schema source: it has no data "
                          "to execute queries on (give gold_result/predicted_result, or a "
                          "sqlite/sqlalchemy datasource)")

    def schema(self, db_id: str | None) -> Any:
        """The :class:`~pytest_queryeval.metrics.spider.Schema` of one database."""
        db = db_id or self.db_id
        if not db:
            raise ConfigError(f"datasource {self.name!r} (spider-schema) needs the case "
                              "option 'db_id'", key="db_id")
        if not self.tables_path.is_file():
            raise SourceUnavailable(f"datasource {self.name!r}: no file at {self.tables_path}")
        try:
            safefile.check(self.tables_path, "structure")
        except OSError as e:
            raise SourceUnavailable(f"datasource {self.name!r}: {e}") from None
        from ..metrics.spider import Schema

        return Schema.from_tables_json(self.tables_path, db)

    def fingerprint(self) -> str:
        try:
            digest = hashlib.sha256(safefile.read_bytes(self.tables_path, "structure")).hexdigest()
        except OSError as e:
            raise SourceUnavailable(f"datasource {self.name!r}: {e}") from None
        return f"spider-schema:{digest}"

    def close(self) -> None:
        pass
