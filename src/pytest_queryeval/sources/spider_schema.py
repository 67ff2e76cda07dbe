"""``type: spider-schema``: a Spider ``tables.json``, schema only (structural metrics).

Spider-style suites often ship the schemas without the databases; such a source gives the
SQL kind what the Spider evaluator needs (tables, columns, foreign keys per ``db_id``) and
executes nothing, so only structural metrics (or recorded results) apply.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from .._util import safefile
from ..errors import ConfigError, QueryFailed, SourceUnavailable
from ..results import ResultTable
from .base import DEFAULT_MAX_ROWS, DEFAULT_TIMEOUT, SourceDefaults

#: sha256 of each tables.json by (path, device, inode, size, mtime_ns): a rewrite changes the
#: size or the mtime (a same-size rewrite within the mtime's resolution is the accepted blind
#: spot, as for every file fingerprint that is not re-hashed per use).
_DIGESTS: dict[tuple[str, int, int, int, int], str] = {}
_DIGESTS_SIZE = 64


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
        """The Spider evaluator's :class:`~pytest_queryeval.sources.spider_tables.Schema` of one
        database."""
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
        from .spider_tables import Schema

        return Schema.from_tables_json(self.tables_path, db)

    def fingerprint(self) -> str:
        """``spider-schema:<sha256>`` of the tables.json, hashed once per process for each
        (file, size, mtime) seen: the kind asks for it on every case, and hashing the 811 KB
        Spider file each time was a fifth of a whole Spider dev run."""
        try:
            st = safefile.check(self.tables_path, "structure")
            key = (str(self.tables_path), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
            digest = _DIGESTS.get(key)
            if digest is None:
                digest = hashlib.sha256(
                    safefile.read_bytes(self.tables_path, "structure")).hexdigest()
                if len(_DIGESTS) >= _DIGESTS_SIZE:
                    del _DIGESTS[next(iter(_DIGESTS))]
                _DIGESTS[key] = digest
        except OSError as e:
            raise SourceUnavailable(f"datasource {self.name!r}: {e}") from None
        return f"spider-schema:{digest}"

    def close(self) -> None:
        pass
