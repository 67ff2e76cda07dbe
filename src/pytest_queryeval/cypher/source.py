"""``type: ladybug``: an embedded graph database (the ``ladybug`` package, extra ``cypher``)
opened read-only in a sandbox worker process.

Spec keys: ``path`` (required): a ladybug database file, or a Cypher script (``*.cypher``)
whose statements build the graph; ``timeout`` (seconds, default 30), ``max_rows`` (default
100,000), ``max_memory`` (the engine's buffer pool in bytes, default 256 MiB: ladybug's own
default is 80 % of the machine's memory; the worker may hold twice that beyond its size once
the graph is open), ``max_values`` (the values a result may carry to the pytest process, every
list item and map entry counted, default 1,000,000: :mod:`.values`).

Why a worker and what walls it has: :mod:`.worker` (issue 58). The pytest process never
imports the engine: a script is built into a database of a temporary folder by a worker of
its own, closed, then opened read-only by the query worker, which confines itself first; every
query runs there on a fresh connection, under the engine's timeout and a hard deadline one
second later (parsing included), its resident memory bounded by the parent.

Every write (``CREATE``, ``MERGE``, ``SET``, ``DELETE``, schema changes, ``COPY``) is refused
by ladybug itself, and the reason names the clause and where it is (:func:`.guard.first_write`).
What a read-only database still allows beyond the graph (files, extensions, other databases,
settings) is refused before execution by :func:`.guard.check`, then by the engine's plan
(:func:`.worker.plan_refusal`), and the kernel refuses the files and sockets both missed.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import re
import shutil
import signal
import sys
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .._isolation.sandbox import (
    Sandbox,
    SandboxCrashed,
    SandboxMemoryError,
    SandboxNotStarted,
    SandboxTimeout,
    SandboxTooBig,
)
from ..errors import (
    ConfigError,
    MissingDependency,
    QueryFailed,
    QueryRefused,
    QueryTimeout,
    QueryUnparsed,
    SourceUnavailable,
)
from ..results import ResultTable
from ..sources.base import (
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_ROWS,
    DEFAULT_TIMEOUT,
    SourceDefaults,
    check_keys,
    positive,
    positive_int,
)
from . import guard, worker
from .sourcekeys import LADYBUG, LADYBUG_KEYS
from .values import DEFAULT_MAX_VALUES

TYPE = LADYBUG
KEYS = LADYBUG_KEYS
DEFAULT_MAX_MEMORY = 256 * 1024 * 1024
#: The form of the values a result holds (in the gold cache's key): 2, a wide integer an
#: ``int`` (issue 60), no longer a ``Decimal``.
VALUES = 2
_READ_ONLY = "read-only database"
#: The engine's error for a file the confined worker may not open (:func:`.worker.open_graph`).
_DENIED = re.compile(r"^IO exception: .*Permission denied\.?$")
#: Seconds past the timeout before the worker is killed (the engine's own timeout normally
#: stops a pipelined query at the timeout, and the worker survives).
HARD_GRACE = 1.0
#: Seconds a script may take to build its graph (the suite's own statements).
BUILD_TIMEOUT = 3600.0
#: Bytes a file the build worker writes may hold (the graph's database).
_MAX_FILE = 1 << 40


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
    """One ladybug database, opened read-only in a worker on first use and shared by the
    session's cases (each query on a fresh connection there)."""

    type = TYPE

    def __init__(self, name: str, path: str, *, timeout: float = DEFAULT_TIMEOUT,
                 max_rows: int = DEFAULT_MAX_ROWS,
                 max_memory: int = DEFAULT_MAX_MEMORY,
                 max_values: int = DEFAULT_MAX_VALUES) -> None:
        self.name = name
        self.path = Path(path)
        self.timeout = timeout
        self.max_rows = max_rows
        self.max_memory = max_memory
        self.max_values = max_values
        self._lock = threading.Lock()
        self._box: Sandbox | None = None
        self._tmp: str | None = None
        self._fingerprint: str | None = None
        #: How the worker is walled off the files and the network (:func:`.worker.open_graph`).
        self.confinement = ""

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
                                           "max_memory"),
                   max_values=positive_int(spec.get("max_values", DEFAULT_MAX_VALUES), name,
                                           "max_values"))

    @property
    def is_script(self) -> bool:
        return self.path.suffix.lower() == ".cypher"

    # -- opening ---------------------------------------------------------------------------

    def _worker(self) -> Sandbox:
        """The worker holding the graph, started (and the script built) on first use."""
        with self._lock:
            if self._box is not None:
                return self._box
            _check_engine()
            if not self.path.is_file():
                raise SourceUnavailable(f"datasource {self.name!r}: no ladybug database or "
                                        f"Cypher script at {self.path.name!r}")
            target = self._build() if self.is_script else str(self.path.resolve())
            box = self._sandbox("ladybug", setup=(_in_worker("open_graph"),
                                                  (target, self.max_memory)))
            try:
                box.start()
            except SandboxNotStarted as exc:
                box.close()
                raise SourceUnavailable(f"datasource {self.name!r}: the ladybug worker did "
                                        f"not start ({exc})") from None
            status, detail = box.setup_value
            if status != "ready":
                box.close()
                raise SourceUnavailable(f"datasource {self.name!r}: ladybug cannot open "
                                        f"{self.path.name!r}: {detail}")
            self.confinement, self._box = detail, box
            return box

    def _sandbox(self, name: str, **kwargs: Any) -> Sandbox:
        """A private worker: no address-space cap (ladybug maps a large one when it opens), its
        resident memory bounded instead."""
        return Sandbox(name, max_memory=self.max_memory, max_rss=2 * self.max_memory,
                       max_file=_MAX_FILE, preload=(worker.__name__,), **kwargs)

    def _build(self) -> str:
        """Run the script into a database of a temporary folder (in a worker of its own);
        its path. The folder is named after this process, and the folders a killed session
        left (their process gone) are removed first: each held a built graph."""
        from .._util.safefile import private_tempdir

        self._tmp = private_tempdir("queryeval-ladybug-graph-", whole=True)
        target = str(Path(self._tmp) / "graph.lbug")
        statements = script_statements(self.path.read_text(encoding="utf-8"))
        box = self._sandbox("ladybug-build")
        try:
            failure = box.call(_in_worker("build"), self.path.name, target, statements,
                               self.max_memory, timeout=BUILD_TIMEOUT)
        except QueryFailed as exc:  # the sandbox's timeout, crash, memory bound
            raise SourceUnavailable(f"datasource {self.name!r}: building the graph of "
                                    f"{self.path.name!r} failed: {exc}") from None
        finally:
            box.close()
        if failure is not None:
            raise SourceUnavailable(f"datasource {self.name!r}: {failure}")
        return target

    # -- the contract ----------------------------------------------------------------------

    def execute(self, query: str, *, timeout: float | None = None,
                max_rows: int | None = None, trusted: bool = False) -> ResultTable:
        """One query in the worker; ``trusted`` (a gold) skips the engine's plan check."""
        guard.check(query)
        guard.check_text(query)
        limit = self.max_rows if max_rows is None else int(max_rows)
        seconds = float((self.timeout or DEFAULT_TIMEOUT) if timeout is None else timeout)
        box = self._worker()
        try:
            reply = box.call(_in_worker("run"), query, int(seconds * 1000), limit, not trusted,
                             self.max_values, timeout=seconds + HARD_GRACE, max_reply=2 * DEFAULT_MAX_BYTES)
        except SandboxTimeout:
            raise QueryTimeout(f"the query ran over {seconds:g} s (the engine did not stop "
                               "by itself, parsing or building a value: its worker was "
                               "killed)") from None
        except SandboxTooBig:
            return ResultTable([], [], True, meta={"max_bytes": DEFAULT_MAX_BYTES})
        except SandboxMemoryError:
            raise QueryFailed(f"out of memory: the query's worker held more than "
                              f"{2 * self.max_memory:,} bytes beyond the open graph (twice "
                              "max_memory); it was killed") from None
        except SandboxCrashed:
            raise QueryFailed(_crashed(box.last_exit)) from None
        return _table(reply, query, seconds)

    @staticmethod
    def not_a_read(query: str) -> str | None:
        """Why an agent's Cypher text the scorer does not run is not a read, or None
        (:func:`.reads.not_a_read`: the guard's tokenizer and clause keywords)."""
        from .reads import not_a_read

        return not_a_read(query)

    def write_clause(self, query: str) -> str | None:
        """The first clause of ``query`` that writes, with where it is (``DELETE at line 1,
        column 18``), or None: what an agent's query that crashed the engine or outlived its
        deadline asked, counted as a write attempt (the read-only engine never got to refuse
        it); so is a ``CALL`` of a procedure named as building or removing something
        (``create_fts_index`` failed unplanned where its extension is not loaded)."""
        write = guard.first_write(query)
        if write is not None:
            return f"{write.text.upper()} at {guard.where(write)}"
        call = guard.first_building_call(query)
        return None if call is None else f"CALL {call[1]} at {guard.where(call[0])}"

    def fingerprint(self) -> str:
        """The engine, the form of its values (:data:`VALUES`: a gold cached in an older
        form is not read back) and the content of the file (a script's text, a database's
        bytes)."""
        if self._fingerprint is None:
            digest = hashlib.sha256()
            try:
                with self.path.open("rb") as fh:
                    for chunk in iter(lambda: fh.read(1 << 20), b""):
                        digest.update(chunk)
            except OSError:
                return f"{TYPE}:{self.path.name}:unreadable"
            self._fingerprint = f"{TYPE}:{VALUES}:{digest.hexdigest()}"
        return self._fingerprint

    def ddl(self) -> list[tuple[str, str]]:
        """Each node and relationship table as the ``CREATE ... TABLE`` that makes it: what a
        model's ``{schema}`` shows."""
        box = self._worker()
        try:
            return list(box.call(_in_worker("describe"), timeout=DEFAULT_TIMEOUT))
        except QueryFailed as exc:
            raise SourceUnavailable(f"datasource {self.name!r}: its schema could not be "
                                    f"read: {exc}") from None

    def close(self) -> None:
        with self._lock:
            if self._box is not None:
                self._box.close()
            self._box = None
            if self._tmp is not None:
                shutil.rmtree(self._tmp, ignore_errors=True)
                self._tmp = None


def _check_engine() -> None:
    """MissingDependency without the engine (found, not imported: the pytest process never
    loads it)."""
    if importlib.util.find_spec("ladybug") is None:
        raise MissingDependency("type: ladybug needs the ladybug package: pip install "
                                "'pytest-queryeval[cypher]'")


def _crashed(code: int | None) -> str:
    how = ""
    if code is not None and code < 0:
        with contextlib.suppress(ValueError):
            how = f" ({signal.Signals(-code).name})"
    return (f"the graph engine crashed on this query{how}: its worker died, and the next "
            "query gets a new one")


def _table(reply: tuple[Any, ...], query: str, seconds: float) -> ResultTable:
    """The worker's reply as a table, or the plugin's error."""
    if reply[0] == "refused":
        raise QueryRefused(str(reply[1]))
    if reply[0] == "error":
        raise _engine_error(str(reply[1]), query, float(reply[2]), seconds)
    if reply[0] == "values":  # over max_values: counted in the worker, nothing sent
        return ResultTable([], [], truncated=True, seconds=float(reply[2]),
                           meta={"max_values": int(reply[1])})
    _, columns, rows, truncated, elapsed = reply
    if truncated:
        return ResultTable(columns, rows, truncated=True, seconds=elapsed,
                           meta={"max_rows": len(rows)})
    return ResultTable(columns, rows, seconds=elapsed)


def _engine_error(message: str, query: str, elapsed: float, seconds: float) -> Exception:
    """The engine's error as the plugin's: a refused write located at its clause, an
    interrupted query a timeout, anything else a failed query."""
    if _READ_ONLY in message:
        write = guard.first_write(query)
        at = f"{write.text.upper()} at {guard.where(write)}: " if write is not None else ""
        return QueryRefused(f"{at}the graph is read-only (ladybug: {message})")
    if _DENIED.search(message):
        return QueryRefused(f"the query opens a file, and the graph's worker may open none but "
                            f"the graph (ladybug: {message})")
    if message.rstrip(".") == "Interrupted":
        return QueryTimeout(f"the query ran over {seconds:g} s (stopped after "
                            f"{elapsed:.1f} s)")
    if message.startswith("Parser exception"):
        return QueryUnparsed(message)
    return QueryFailed(message)


def _in_worker(name: str) -> Any:
    """The worker module's function ``name`` as ``sys.modules`` holds it now: the sandbox
    sends a function by its module and name, and pickle refuses one that is not the object
    that name gives (a module imported again, as pytester's in-process runs do)."""
    module = sys.modules.get(worker.__name__)
    if module is None:
        module = importlib.import_module(worker.__name__)
    return getattr(module, name)
