"""What the SQL sources that run queries in a :mod:`~pytest_queryeval.sandbox` worker share:
the reply a worker sends back, the sandbox's failures turned into per-case reasons, and the
fingerprint of a database file.

Why one place: SQLite, DuckDB and SQLAlchemy differ in how they connect and fetch, not in how
a result crosses the process boundary or in what a killed worker means to a user, so a
reason worded for one engine reads the same for the others.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from ..errors import QueryFailed, QueryTimeout, SourceUnavailable
from ..results import ResultTable
from ..sandbox import Sandbox, SandboxCrashed, SandboxMemoryError, SandboxTimeout, SandboxTooBig
from .base import payload_bytes

#: What a worker returns for one query: columns, rows, truncated, meta, seconds (plain values,
#: cheap to pickle; :class:`ResultTable` itself is rebuilt in the parent).
Reply = tuple[list[str], list[tuple[Any, ...]], bool, dict[str, Any], float]
#: Why a file engine's worker was killed at the deadline (its own interrupt did not stop it).
ENGINE_KILLED = "the engine did not stop by itself: its worker was killed"


def worker_reply(table: ResultTable, max_bytes: int) -> Reply:
    """The reply for ``table``; a result cut by ``max_bytes`` keeps only the rows that fit,
    so the rest never leave the worker (the parent would hold up to twice the cap)."""
    if "max_bytes" in table.meta:
        size = 0
        for i, row in enumerate(table.rows):
            size += payload_bytes([row])
            if size > max_bytes:
                del table.rows[i:]
                break
    return table.columns, table.rows, table.truncated, table.meta, table.seconds


def call_query(box: Sandbox, fn: Any, *args: Any, timeout: float, hard_timeout: float,
               max_bytes: int, max_memory: int, killed: str) -> ResultTable:
    """``fn(*args)`` in ``box``, its :data:`Reply` as a table; the sandbox's failures become
    the case's reason (``killed`` says why a worker had to be killed at ``timeout``)."""
    try:
        columns, rows, truncated, meta, seconds = box.call(
            fn, *args, timeout=hard_timeout, max_reply=2 * max_bytes)
    except SandboxTimeout:
        raise QueryTimeout(f"query exceeded {timeout:g} s ({killed})") from None
    except SandboxTooBig:
        return ResultTable([], [], True, meta={"max_bytes": max_bytes})
    except SandboxMemoryError:
        raise QueryFailed(f"out of memory: the query went over max_memory "
                          f"({max_memory:,} bytes)") from None
    except SandboxCrashed:
        raise QueryFailed(f"the query's worker died (out of memory? max_memory is "
                          f"{max_memory:,} bytes)") from None
    return ResultTable(columns, rows, truncated, seconds, meta)


class FileFingerprint:
    """``<prefix>:<size>:<mtime_ns>:<sha256>`` of a database file and its write-ahead log.

    Size and mtime alone would miss a same-size rewrite within the mtime resolution, so the
    content is hashed too; the hash is recomputed only when a size or mtime changes.
    """

    def __init__(self, prefix: str, path: Path, wal_suffix: str) -> None:
        self.prefix = prefix
        self.path = path
        self.wal = path.with_name(path.name + wal_suffix)
        self._stat: tuple[int, int, int, int] | None = None
        self._value: str | None = None

    def __call__(self, name: str) -> str:
        try:
            st = self.path.stat()
            wst = self.wal.stat() if self.wal.exists() else None
        except OSError as e:
            raise SourceUnavailable(f"datasource {name!r}: {e}") from None
        key = (st.st_size, st.st_mtime_ns, wst.st_size if wst else -1,
               wst.st_mtime_ns if wst else -1)
        if self._value is None or self._stat != key:
            h = hashlib.sha256()
            for p in (self.path, self.wal) if wst else (self.path,):
                with p.open("rb") as f:
                    for chunk in iter(lambda: f.read(1 << 20), b""):
                        h.update(chunk)
            self._value = f"{self.prefix}:{st.st_size}:{st.st_mtime_ns}:{h.hexdigest()}"
            self._stat = key
        return self._value
