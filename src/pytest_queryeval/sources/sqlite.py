"""The embedded default SQL source: a SQLite file opened read-only (stdlib ``sqlite3``)."""

from __future__ import annotations

import hashlib
import sqlite3
import threading
import time
from pathlib import Path
from urllib.parse import quote

from ..errors import QueryFailed, QueryRefused, QueryTimeout, SourceUnavailable
from ..results import ResultTable
from .base import DEFAULT_MAX_BYTES, DEFAULT_MAX_ROWS, DEFAULT_TIMEOUT, FetchedRows, positive_int
from .sqlguard import check_read_only

#: VM instructions between two deadline checks: small enough to stop within milliseconds,
#: large enough to cost nothing measurable.
_PROGRESS_STEPS = 10_000
_FETCH_BATCH = 1_000
#: Largest string or blob a query may build (SQLITE_LIMIT_LENGTH): the row cap bounds rows, this
#: bounds one value (``randomblob(500000000)`` would otherwise allocate 500 MB in one cell).
MAX_VALUE_BYTES = 16 * 1024 * 1024
#: Most a batch of fetched rows can hold (rows x columns x MAX_VALUE_BYTES): the batch size is
#: cut so that ``max_bytes`` is checked before this much more is fetched.
_BATCH_BYTES = 512 * 1024 * 1024


def batch_rows(columns: int) -> int:
    """Rows per ``fetchmany``: as many as ``_BATCH_BYTES`` allows at the worst (every value at
    the length cap), from 1 to 1 000; the size of small batches costs little in SQLite."""
    return max(1, min(_FETCH_BATCH, _BATCH_BYTES // (max(columns, 1) * MAX_VALUE_BYTES)))


class SqliteSource:
    """A SQLite database file, opened with ``mode=ro`` and ``PRAGMA query_only``.

    Two layers keep the file unchanged: predicted statements are refused by
    :func:`check_read_only` before execution, and the connection cannot write anyway.
    """

    type = "sqlite"
    dialect = "sqlite"

    def __init__(self, name: str, path: str | Path, *, timeout: float = DEFAULT_TIMEOUT,
                 max_rows: int = DEFAULT_MAX_ROWS, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.name = name
        self.path = Path(path)
        self.timeout = float(timeout)
        self.max_rows = int(max_rows)
        self.max_bytes = positive_int(max_bytes, name, "max_bytes")
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()
        self._fp_stat: tuple[int, int, int, int] | None = None
        self._fp: str | None = None

    def __repr__(self) -> str:
        return f"SqliteSource({self.name!r}, {str(self.path)!r})"

    # -- connection ---------------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        if self._conn is not None:
            return self._conn
        if not self.path.is_file():
            raise SourceUnavailable(f"datasource {self.name!r}: no SQLite file at {self.path}")
        uri = f"file:{quote(str(self.path.resolve()))}?mode=ro"
        try:
            conn = sqlite3.connect(uri, uri=True, check_same_thread=False, isolation_level=None)
            conn.execute("PRAGMA query_only = ON")
            conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_VALUE_BYTES)
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()  # not a database?
        except sqlite3.Error as e:
            raise SourceUnavailable(f"datasource {self.name!r}: cannot open {self.path}: {e}") \
                from None
        self._conn = conn
        return conn

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    # -- execution ----------------------------------------------------------------------------

    def execute(self, query: str, *, timeout: float | None = None, max_rows: int | None = None,
                trusted: bool = False) -> ResultTable:
        """Run one query; the deadline covers both execution and fetching (progress handler).

        A result over ``max_rows`` rows or ``max_bytes`` (:func:`payload_bytes`, checked after
        each batch) comes back truncated, with the cap that cut it in ``meta``."""
        timeout = self.timeout if timeout is None else float(timeout)
        max_rows = self.max_rows if max_rows is None else int(max_rows)
        if not trusted:
            check_read_only(query, self.dialect)
        with self._lock:
            conn = self._connect()
            deadline = time.monotonic() + timeout
            expired = False

            def progress() -> int:
                nonlocal expired
                if time.monotonic() > deadline:
                    expired = True
                    return 1  # non-zero aborts the statement ("interrupted")
                return 0

            conn.set_progress_handler(progress, _PROGRESS_STEPS)
            start = time.perf_counter()
            fetched = FetchedRows(max_rows, self.max_bytes)
            try:
                cur = conn.execute(query)
                columns = [d[0] for d in cur.description or ()]
                step = batch_rows(len(columns))
                while fetched.add(cur.fetchmany(fetched.wanted(step))):
                    pass
                cur.close()
            except sqlite3.Error as e:
                if expired:
                    raise QueryTimeout(f"query exceeded {timeout:g} s") from None
                msg = str(e)
                if "readonly database" in msg:  # mode=ro and query_only both say so
                    raise QueryRefused(f"the source is read-only ({msg})") from None
                raise QueryFailed(msg) from None
            except (ValueError, OverflowError) as e:  # bad text encoding, huge ints...
                raise QueryFailed(str(e)) from None
            finally:
                conn.set_progress_handler(None, 0)
                if conn.in_transaction:
                    conn.rollback()
            seconds = time.perf_counter() - start
        return fetched.table(columns, seconds)

    # -- identity -----------------------------------------------------------------------------

    def fingerprint(self) -> str:
        """``sqlite:<size>:<mtime_ns>:<sha256>`` of the file (and of its WAL, if any).

        Size and mtime alone would miss a same-size rewrite within the mtime resolution, so the
        content is hashed too; the hash is recomputed only when size or mtime change.
        """
        try:
            st = self.path.stat()
            wal = self.path.with_name(self.path.name + "-wal")
            wst = wal.stat() if wal.exists() else None
        except OSError as e:
            raise SourceUnavailable(f"datasource {self.name!r}: {e}") from None
        key = (st.st_size, st.st_mtime_ns, wst.st_size if wst else -1,
               wst.st_mtime_ns if wst else -1)
        if self._fp is None or self._fp_stat != key:
            h = hashlib.sha256()
            for p in (self.path, wal) if wst else (self.path,):
                with p.open("rb") as f:
                    for chunk in iter(lambda: f.read(1 << 20), b""):
                        h.update(chunk)
            self._fp = f"sqlite:{st.st_size}:{st.st_mtime_ns}:{h.hexdigest()}"
            self._fp_stat = key
        return self._fp

    def tables(self) -> tuple[dict[str, list[str]], list[tuple[str, str, str, str]]]:
        """Tables with their columns, and foreign keys as (table, column, ref_table, ref_column)."""
        with self._lock:
            conn = self._connect()
            names = [r[0] for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY rowid")]
            tables: dict[str, list[str]] = {}
            fks: list[tuple[str, str, str, str]] = []
            for t in names:
                quoted = '"' + t.replace('"', '""') + '"'
                tables[t] = [r[1] for r in conn.execute(f"PRAGMA table_info({quoted})")]
                for r in conn.execute(f"PRAGMA foreign_key_list({quoted})"):
                    fks.append((t, r[3], r[2], r[4]))
        return tables, fks
