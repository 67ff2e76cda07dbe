"""``type: ladybug``: an embedded graph database (the ``ladybug`` package, extra ``cypher``)
opened read-only.

Spec keys: ``path`` (required): a ladybug database file, or a Cypher script (``*.cypher``)
whose statements build the graph; ``timeout`` (seconds, default 30), ``max_rows`` (default
100,000), ``max_memory`` (the engine's buffer pool in bytes, default 256 MiB: ladybug's own
default is 80 % of the machine's memory).

Why read-only by the engine: a database file is opened with ``read_only=True``, and a script
is run once into a database in a temporary folder which is then closed and opened again
read-only; every write (``CREATE``, ``MERGE``, ``SET``, ``DELETE``, schema changes, ``COPY``)
is refused by ladybug itself, and the reason names the clause and where it is
(:func:`.guard.first_write`). What a read-only database still allows beyond the graph (files,
extensions, other databases) is refused before execution by :func:`.guard.check`.

Queries run in the pytest process (no sandbox worker): ladybug's query timeout interrupts a
pipelined query within milliseconds (10^10 rows of two nested ``UNWIND``: stopped after
0.1 s), but not one expression that builds a huge value before the pipeline starts
(``UNWIND range(1, 1000000000)`` ran 56 s past a 0.05 s timeout); ``max_memory`` bounds the
buffer pool, not such a value.
"""

from __future__ import annotations

import hashlib
import importlib
import shutil
import tempfile
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import (
    ConfigError,
    MissingDependency,
    QueryFailed,
    QueryRefused,
    QueryTimeout,
    SourceUnavailable,
)
from ..results import ResultTable
from ..sources.base import (
    DEFAULT_MAX_ROWS,
    DEFAULT_TIMEOUT,
    SourceDefaults,
    check_keys,
    positive,
    positive_int,
)
from . import guard

TYPE = "ladybug"
KEYS = frozenset({"path", "timeout", "max_rows", "max_memory"})
DEFAULT_MAX_MEMORY = 256 * 1024 * 1024
_BATCH = 1_000
_READ_ONLY = "read-only database"


def _ladybug() -> Any:
    """The engine module, imported by name: a core install (no ``cypher`` extra) type-checks
    this folder without it (scripts/mypy-core.sh)."""
    try:
        ladybug = importlib.import_module("ladybug")
    except ImportError:
        raise MissingDependency("type: ladybug needs the ladybug package: pip install "
                                "'pytest-queryeval[cypher]'") from None
    return ladybug


def script_statements(text: str) -> list[str]:
    """The statements of a Cypher script, split at the ``;`` that end them (not those inside
    a string or a comment)."""
    out: list[str] = []
    start = 0
    for tok in guard.tokens(text):
        if tok.text == ";" and tok.kind == "punct":
            offset = _offset(text, tok)
            out.append(text[start:offset])
            start = offset + 1
    out.append(text[start:])
    return [s.strip() for s in out if any(t.kind != "comment" for t in guard.tokens(s))]


def _offset(text: str, tok: guard.Token) -> int:
    lines = text.split("\n")
    return sum(len(line) + 1 for line in lines[: tok.line - 1]) + tok.column - 1


class LadybugSource(SourceDefaults):
    """One ladybug database, opened on first use and shared by the session's cases."""

    type = TYPE

    def __init__(self, name: str, path: str, *, timeout: float = DEFAULT_TIMEOUT,
                 max_rows: int = DEFAULT_MAX_ROWS,
                 max_memory: int = DEFAULT_MAX_MEMORY) -> None:
        self.name = name
        self.path = Path(path)
        self.timeout = timeout
        self.max_rows = max_rows
        self.max_memory = max_memory
        self._lock = threading.Lock()
        self._db: Any = None
        self._conn: Any = None
        self._tmp: str | None = None
        self._fingerprint: str | None = None

    @classmethod
    def from_spec(cls, name: str, spec: Mapping[str, Any]) -> LadybugSource:
        check_keys(name, TYPE, spec, KEYS)
        path = spec.get("path")
        if not isinstance(path, str) or not path:
            raise ConfigError("missing: a ladybug datasource needs 'path' (a database file or "
                              "a .cypher script that builds the graph)",
                              key=f"datasources.{name}.path")
        return cls(name, path,
                   timeout=positive(spec, "timeout", DEFAULT_TIMEOUT, name),
                   max_rows=positive_int(spec.get("max_rows", DEFAULT_MAX_ROWS), name,
                                         "max_rows"),
                   max_memory=positive_int(spec.get("max_memory", DEFAULT_MAX_MEMORY), name,
                                           "max_memory"))

    @property
    def is_script(self) -> bool:
        return self.path.suffix.lower() == ".cypher"

    # -- opening ---------------------------------------------------------------------------

    def _open(self) -> Any:
        if self._conn is not None:
            return self._conn
        lb = _ladybug()
        if not self.path.is_file():
            raise SourceUnavailable(f"datasource {self.name!r}: no ladybug database or Cypher "
                                    f"script at {self.path.name!r}")
        target = str(self.path)
        if self.is_script:
            target = self._build(lb)
        try:
            # one thread: the rows of an unordered result come in one order every run (with
            # more, their order changed between runs, and so did the positional metrics)
            self._db = lb.Database(target, read_only=True, buffer_pool_size=self.max_memory,
                                   max_num_threads=1)
            self._conn = lb.Connection(self._db)
        except RuntimeError as exc:
            raise SourceUnavailable(f"datasource {self.name!r}: ladybug cannot open "
                                    f"{self.path.name!r}: {_first_line(exc)}") from None
        return self._conn

    def _build(self, lb: Any) -> str:
        """Run the script into a database of a temporary folder; its path."""
        self._tmp = tempfile.mkdtemp(prefix="queryeval-ladybug-")
        target = str(Path(self._tmp) / "graph.lbug")
        text = self.path.read_text(encoding="utf-8")
        db = lb.Database(target, buffer_pool_size=self.max_memory)
        conn = lb.Connection(db)
        try:
            for number, statement in enumerate(script_statements(text), 1):
                try:
                    conn.execute(statement)
                except RuntimeError as exc:
                    raise SourceUnavailable(
                        f"datasource {self.name!r}: statement {number} of "
                        f"{self.path.name!r} failed: {_first_line(exc)}") from None
        finally:
            conn.close()
            db.close()
        return target

    # -- the contract ----------------------------------------------------------------------

    def execute(self, query: str, *, timeout: float | None = None,
                max_rows: int | None = None, trusted: bool = False) -> ResultTable:
        guard.check(query)
        limit = self.max_rows if max_rows is None else int(max_rows)
        seconds = float((self.timeout or DEFAULT_TIMEOUT) if timeout is None else timeout)
        with self._lock:
            conn = self._open()
            conn.set_query_timeout(max(1, int(seconds * 1000)))
            start = time.perf_counter()
            try:
                result = conn.execute(query)
                if isinstance(result, list):  # several statements: the guard refuses them
                    raise QueryRefused("more than one statement: one read-only query is "
                                       "executed")
                columns = [str(c) for c in result.get_column_names()]
                rows: list[tuple[Any, ...]] = []
                while result.has_next() and len(rows) <= limit:
                    rows.extend(tuple(r) for r in result.get_n(min(_BATCH, limit + 1 - len(rows))))
                result.close()
            except RuntimeError as exc:
                raise _engine_error(exc, query, time.perf_counter() - start, seconds) from None
            elapsed = time.perf_counter() - start
        if len(rows) > limit:
            return ResultTable(columns, rows[:limit], truncated=True, seconds=elapsed,
                               meta={"max_rows": limit})
        return ResultTable(columns, rows, seconds=elapsed)

    def fingerprint(self) -> str:
        """The engine and the content of the file (a script's text, a database's bytes)."""
        if self._fingerprint is None:
            digest = hashlib.sha256()
            try:
                with self.path.open("rb") as fh:
                    for chunk in iter(lambda: fh.read(1 << 20), b""):
                        digest.update(chunk)
            except OSError:
                return f"{TYPE}:{self.path.name}:unreadable"
            self._fingerprint = f"{TYPE}:{digest.hexdigest()}"
        return self._fingerprint

    def ddl(self) -> list[tuple[str, str]]:
        """Each node and relationship table as the ``CREATE ... TABLE`` that makes it: what a
        model's ``{schema}`` shows."""
        out: list[tuple[str, str]] = []
        with self._lock:
            conn = self._open()
            tables = conn.execute("CALL show_tables() RETURN name, type ORDER BY id").get_all()
            for name, kind in tables:
                props = conn.execute(f"CALL table_info('{name}') RETURN name, type").get_all()
                cols = ", ".join(f"{p} {t}" for p, t in props)
                if kind == "REL":
                    ends = conn.execute(f"CALL show_connection('{name}') RETURN *").get_all()
                    pairs = ", ".join(f"FROM {e[0]} TO {e[1]}" for e in ends)
                    cols = f"{pairs}, {cols}" if cols else pairs
                out.append((str(name), f"CREATE {kind} TABLE {name}({cols});"))
        return out

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._db.close()
            self._conn = self._db = None
            if self._tmp is not None:
                shutil.rmtree(self._tmp, ignore_errors=True)
                self._tmp = None


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def _engine_error(exc: RuntimeError, query: str, elapsed: float, seconds: float) -> Exception:
    """The engine's error as the plugin's: a refused write located at its clause, an
    interrupted query a timeout, anything else a failed query."""
    message = _first_line(exc)
    if _READ_ONLY in message:
        write = guard.first_write(query)
        at = f"{write.text.upper()} at {guard.where(write)}: " if write is not None else ""
        return QueryRefused(f"{at}the graph is read-only (ladybug: {message})")
    if message.rstrip(".") == "Interrupted":
        return QueryTimeout(f"the query ran over {seconds:g} s (stopped after "
                            f"{elapsed:.1f} s)")
    return QueryFailed(message)
