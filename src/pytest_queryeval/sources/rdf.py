"""``type: rdf``: a local graph file queried in process (pyoxigraph) or in a worker process.

Spec keys: ``path`` (required), ``engine`` (``pyoxigraph`` default | ``rdflib``), ``isolation``
(``process`` default | ``thread``, pyoxigraph only), ``format``
(a name such as ``turtle`` or a media type; default: from the extension), ``lenient``
(pyoxigraph: skip IRI validation, needed for some real files), ``base_iri``, ``timeout``,
``max_rows``, ``max_bytes`` (size of one result, default 64 MiB), ``max_memory`` (memory a
query may add to a worker process, default 2 GiB), ``load_timeout`` (worker start, default
300 s), ``allow_service`` (default false: SERVICE and FROM / FROM NAMED IRIs that name no
graph of the file are refused, and the workers run without network; see the guard).

Loading is done once per process per ``(path, mtime, size, engine, isolation, format, lenient,
base_iri)`` and shared by every source and case (module-level registry), so a suite of 100
cases on one building parses the building once.

Timeouts, and why there are two isolations:

* Default: ``process`` for both engines. Predicted queries are untrusted model output: in a
  thread, a runaway prediction keeps a core and its memory after its timeout (a cartesian
  product grew to ~590 MB in 4 s). Gold and predictions share the one worker, so blank-node
  labels of one load compare equal.
* ``isolation: thread`` (opt-in, for trusted suites: no pickling of results between
  processes). pyoxigraph releases the GIL while it evaluates
  but has no cancellation API. The query runs in a daemon thread; at the timeout the caller
  gets :class:`QueryTimeout` and the thread is abandoned. A streaming query stops at its next
  solution (the thread checks a cancel flag); one that blocks inside the engine (a huge sort,
  aggregate or filtered cross product) keeps a core busy, and its memory, until it completes.
* ``isolation: process``. The graph lives in a worker *process*, a private
  :class:`~pytest_queryeval._isolation.sandbox.Sandbox` whose setup step loads it once and then serves
  queries (the same worker, memory cap and Ctrl-C handling as the SQL engines); at the
  timeout the worker is killed and a fresh one loads the graph again for the next query
  (bldg11 takes 0.2 s with pyoxigraph, 2-3 s with rdflib). rdflib always runs
  this way: it holds the GIL in pure Python, so an abandoned thread would slow the whole
  session down for minutes (BuildingQA MORTAR_009 runs > 60 s in rdflib). Use it for
  pyoxigraph too when predictions may be pathological (untrusted model output at scale).

Both engines see the union of all graphs as the default graph (TriG/N-Quads files).

Why one module of this size: loading a graph, the two engines, their normal form and the worker
protocol must agree on every term, so they are kept in one adapter.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import os
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from itertools import repeat
from operator import attrgetter
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

from .._isolation.sandbox import (
    Sandbox,
    SandboxCrashed,
    SandboxMemoryError,
    SandboxNotStarted,
    SandboxTimeout,
    SandboxTooBig,
    worker_state,
)
from .._util import safefile
from .._util.gcpolicy import gc_paused
from ..errors import ConfigError, QueryEvalError, QueryFailed, QueryTimeout, SourceUnavailable
from ..results import ResultTable, Term
from .base import (
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_ROWS,
    DEFAULT_TIMEOUT,
    SourceDefaults,
    check_isolation,
    check_keys,
    positive,
    positive_int,
)
from .packed import TermColumn, pack_terms, rows_of, term_columns, unpack_terms
from .rdf_codec import XSD_STRING, Fields, star_columns_sorted, term_fields
from .sparqlguard import check_query

if TYPE_CHECKING:
    import pyoxigraph
    import rdflib

_T = TypeVar("_T")

ENGINES = ("pyoxigraph", "rdflib")
DEFAULT_LOAD_TIMEOUT = 300.0
#: Address space a query may add to a worker process once the graph is loaded: SPARQL can build
#: a string ten times longer per ``BIND(CONCAT(?v, ?v, ...))``, 10 GB in seconds, and the
#: timeout comes too late for memory.
DEFAULT_MAX_MEMORY = 2 * 1024 * 1024 * 1024

#: extension -> (pyoxigraph RdfFormat attribute, rdflib format name, has named graphs)
_FORMATS: dict[str, tuple[str, str, bool]] = {
    "ttl": ("TURTLE", "turtle", False),
    "turtle": ("TURTLE", "turtle", False),
    "nt": ("N_TRIPLES", "nt", False),
    "ntriples": ("N_TRIPLES", "nt", False),
    "n-triples": ("N_TRIPLES", "nt", False),
    "rdf": ("RDF_XML", "xml", False),
    "owl": ("RDF_XML", "xml", False),
    "xml": ("RDF_XML", "xml", False),
    "rdfxml": ("RDF_XML", "xml", False),
    "rdf/xml": ("RDF_XML", "xml", False),
    "jsonld": ("JSON_LD", "json-ld", False),
    "json-ld": ("JSON_LD", "json-ld", False),
    "trig": ("TRIG", "trig", True),
    "nq": ("N_QUADS", "nquads", True),
    "nquads": ("N_QUADS", "nquads", True),
    "n-quads": ("N_QUADS", "nquads", True),
    "n3": ("N3", "n3", False),
}
_MEDIA_TYPES = {
    "text/turtle": "ttl", "application/n-triples": "nt", "application/rdf+xml": "rdf",
    "application/ld+json": "jsonld", "application/trig": "trig", "application/n-quads": "nq",
    "text/n3": "n3",
}


def resolve_format(path: Path, fmt: str | None, key: str = "format") -> tuple[str, str, bool]:
    """(pyoxigraph format, rdflib format, named graphs) from ``format`` or the file extension."""
    key = (fmt or "").strip().lower()
    key = _MEDIA_TYPES.get(key, key)
    if not key:
        key = path.suffix.lower().lstrip(".")
        if key == "gz":
            raise ConfigError(f"{path.name}: compressed graph files are not supported; "
                              "decompress it or set 'format'", key=key)
    if key not in _FORMATS:
        raise ConfigError(f"unknown RDF format {key!r} for {path.name} (known: "
                          f"{', '.join(sorted(set(_FORMATS)))})", key=key)
    return _FORMATS[key]


# --------------------------------------------------------------------------- term conversion

def _ox_term(t: object) -> Fields | None:
    """A pyoxigraph term's fields in the normal form (:func:`.rdf_codec.term_fields`)."""
    if t is None:
        return None
    kind = _ox_kinds().get(type(t))
    if kind == "literal":
        lit = cast("pyoxigraph.Literal", t)
        return term_fields("literal", lit.value, lit.datatype.value, lit.language)
    if kind is not None:
        return (kind, cast("pyoxigraph.NamedNode | pyoxigraph.BlankNode", t).value, None, None)
    return ("triple", str(t), None, None)


def _ox_terms(terms: list[Any]) -> list[Fields | None]:
    """``[_ox_term(t) for t in terms]`` for one column's distinct terms, a column of only IRIs
    in C and one of only literals without a Python call per simple string: the worker's
    share of a large result is mostly this, once per distinct term."""
    kinds = _ox_kinds()
    types = {kinds.get(t) for t in set(map(type, terms))}
    if types == {"uri"}:
        return list(zip(repeat("uri"), map(_OX_VALUE, terms), repeat(None), repeat(None),
                        strict=False))
    if types != {"literal"}:
        return list(map(_ox_term, terms))
    return [("literal", v, None, None) if d == XSD_STRING and not lang
            else term_fields("literal", v, d, lang)
            for v, d, lang in zip(map(_OX_VALUE, terms), map(_OX_DATATYPE, terms),
                                  map(_OX_LANGUAGE, terms), strict=True)]


_OX_VALUE = attrgetter("value")
_OX_DATATYPE = attrgetter("datatype.value")
_OX_LANGUAGE = attrgetter("language")


@functools.cache
def _ox_kinds() -> dict[type, str]:
    """pyoxigraph's term classes by kind (looked up once per distinct term of a result)."""
    import pyoxigraph as ox

    return {ox.NamedNode: "uri", ox.BlankNode: "bnode", ox.Literal: "literal"}


def _rdflib_term(t: object) -> Fields | None:
    """An rdflib term's fields in the normal form (:func:`.rdf_codec.term_fields`)."""
    if t is None:
        return None
    from rdflib.term import BNode, Literal, URIRef

    if isinstance(t, URIRef):
        return ("uri", str(t), None, None)
    if isinstance(t, BNode):
        return ("bnode", str(t), None, None)
    if isinstance(t, Literal):
        dt = str(t.datatype) if t.datatype is not None else None
        return term_fields("literal", str(t), dt, t.language)
    return ("triple", str(t), None, None)


# --------------------------------------------------------------------------- pyoxigraph

@dataclass
class _Solutions:
    """A SELECT or ASK result in the column form of :mod:`.packed` (one :class:`Term` per
    distinct engine term of a column, built once) or as the ASK answer's one row."""

    columns: list[str]
    n: int
    cells: list[TermColumn]
    truncated: bool = False
    rows: list[tuple[Any, ...]] | None = None  # ASK: [(answer,)]

    def table(self) -> ResultTable:
        rows = self.rows if self.rows is not None else rows_of(self.n, self.cells)
        return ResultTable(self.columns, rows, self.truncated)

    def size(self) -> int:
        """:func:`_terms_bytes` of the rows (what ``isolation: thread`` caps), from the
        column form: the packed reply holds each distinct term once, so its own size would
        let a result of many equal terms past ``max_bytes`` and into the parent's memory."""
        if self.rows is not None:
            return _terms_bytes(self.rows)
        size = 0
        for terms, indices in self.cells:
            lengths = [16 if t is None else len(t[1]) + 8 for t in terms]
            size += sum(map(lengths.__getitem__, indices))
        return size

    def reply(self) -> tuple[list[str], Any, bool]:
        """What a worker sends back (:func:`.packed.unpack_rows` reads the rows)."""
        rows = self.rows if self.rows is not None else pack_terms(self.n, self.cells)
        return self.columns, rows, self.truncated


class _Cancelled(Exception):
    """The caller gave up on an in-process query (its timeout or Ctrl-C)."""



def _solutions(cols: list[str], rows: Iterable[Iterable[object]], max_rows: int,
               term: Callable[[Any], Fields | None],
               terms: Callable[[list[Any]], list[Fields | None]] | None = None) -> _Solutions:
    """At most ``max_rows`` of an engine's solutions (one more read to know it was cut), by
    column with each distinct term built once (:func:`term_columns`)."""
    n, cells, truncated = term_columns(map(tuple, rows), term, max_rows, terms)
    return _Solutions(cols, n, cells, truncated)

def _ox_collect(store: pyoxigraph.Store, query: str, max_rows: int, base_iri: str | None,
                cancel: threading.Event | None = None) -> _Solutions | None:
    """Run ``query`` on a pyoxigraph store (None when cancelled mid-way)."""
    import pyoxigraph as ox

    try:
        res = store.query(query, base_iri=base_iri, use_default_graph_as_union=True)
        if isinstance(res, ox.QueryBoolean):
            return _Solutions(["boolean"], 1, [], rows=[(bool(res),)])
        if not isinstance(res, ox.QuerySolutions):
            raise QueryFailed("only SELECT and ASK results are tables")
        cols = [v.value for v in res.variables]
        with gc_paused():  # the engine evaluates in Rust: new tuples, no Python garbage
            return _solutions(cols, _checked(res, cancel), max_rows, _ox_term, _ox_terms)
    except _Cancelled:
        return None
    except QueryFailed:
        raise
    except SyntaxError as exc:
        raise QueryFailed(f"syntax error: {exc}") from None
    except Exception as exc:  # engine errors (OSError, ValueError...) are model errors
        raise QueryFailed(f"{type(exc).__name__}: {exc}") from None


def _checked(solutions: Iterable[_T], cancel: threading.Event | None) -> Iterable[_T]:
    """``solutions``, stopping with :class:`_Cancelled` once ``cancel`` is set (in a worker
    there is no flag: the parent kills it)."""
    if cancel is None:
        return solutions
    return _until(solutions, cancel)


def _until(solutions: Iterable[_T], cancel: threading.Event) -> Iterator[_T]:
    for sol in solutions:
        if cancel.is_set():
            raise _Cancelled
        yield sol


@dataclass
class _OxStore:
    """A pyoxigraph store in this process; queries run in abandonable daemon threads."""

    store: Any  # pyoxigraph.Store, None once closed
    triples: int
    load_seconds: float
    #: IRIs of the file's named graphs (the only ones a FROM may name, see the guard).
    graphs: frozenset[str] = frozenset()

    def run(self, query: str, timeout: float, max_rows: int, base_iri: str | None,
            max_bytes: int) -> ResultTable:
        outcome: dict[str, Any] = {}
        done = threading.Event()
        cancel = threading.Event()
        store = self.store

        def work() -> None:
            try:
                got = _ox_collect(store, query, max_rows, base_iri, cancel)
                outcome["table"] = got.table() if got is not None else None
            except QueryFailed as exc:
                # without its frames and the engine's error: they hold the engine's
                # solutions, which pyoxigraph refuses to drop on another thread (an
                # unraisable error in whichever test collects them)
                exc.__context__ = None
                outcome["error"] = exc.with_traceback(None)
            finally:
                done.set()

        worker = threading.Thread(target=work, name="queryeval-pyoxigraph", daemon=True)
        worker.start()
        try:
            finished = done.wait(timeout)
        except BaseException:  # Ctrl-C: abandon the query (it stops at its next solution)
            cancel.set()
            raise
        if not finished:
            cancel.set()
            raise QueryTimeout(f"no result within {timeout:g} s (pyoxigraph; query abandoned)")
        if "error" in outcome:
            raise outcome["error"]
        table: ResultTable = outcome["table"]
        return _too_big(max_bytes) if _terms_bytes(table.rows) > max_bytes else table

    def close(self) -> None:
        self.store = None


def _load_pyoxigraph(path: Path, fmt: str, lenient: bool, base_iri: str | None) -> _OxStore:
    import pyoxigraph as ox

    t0 = time.perf_counter()
    store = ox.Store()
    try:
        store.bulk_load(path=str(path), format=getattr(ox.RdfFormat, fmt), base_iri=base_iri,
                        lenient=lenient)
    except SyntaxError as exc:
        hint = "" if lenient else " (set 'lenient: true' to skip IRI validation)"
        raise SourceUnavailable(f"cannot parse {path}: {exc}{hint}") from exc
    except OSError as exc:
        raise SourceUnavailable(f"cannot read {path}: {exc}") from exc
    return _OxStore(store, len(store), time.perf_counter() - t0, _ox_graphs(store))


def _ox_graphs(store: pyoxigraph.Store) -> frozenset[str]:
    import pyoxigraph as ox

    return frozenset(g.value for g in store.named_graphs() if isinstance(g, ox.NamedNode))


def _rdflib_graphs(graph: rdflib.Graph) -> frozenset[str]:
    from rdflib.graph import DATASET_DEFAULT_GRAPH_ID
    from rdflib.term import URIRef

    contexts = graph.contexts() if hasattr(graph, "contexts") else []
    return frozenset(str(c.identifier) for c in contexts
                     if isinstance(c.identifier, URIRef)
                     and c.identifier != DATASET_DEFAULT_GRAPH_ID)


def _cut_network() -> str:
    """Take this worker off the network, for good: a new, empty network namespace (Linux,
    where user namespaces are allowed), else an audit hook that refuses socket and urllib use
    (Python code: rdflib; pyoxigraph's own HTTP client is out of its reach). The guard refuses
    SERVICE first; this is the layer under it. Returns which layer holds."""
    with contextlib.suppress(OSError, AttributeError, ValueError):
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        for flags in (0x10000000 | 0x40000000, 0x40000000):  # NEWUSER|NEWNET, NEWNET
            if libc.unshare(flags) == 0:
                return "namespace"

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if event in ("socket.connect", "socket.getaddrinfo", "socket.sendto",
                     "urllib.Request"):
            raise PermissionError(f"network access is off in this worker ({event})")

    sys.addaudithook(hook)
    return "audit-hook"


# --------------------------------------------------------------------------- worker process

def _terms_bytes(rows: list[tuple[Any, ...]]) -> int:
    """Size of an in-process result: its terms' text and 8 bytes a cell (pickling the rows, as
    a worker does anyway, would cost half as much again as the query in this mode)."""
    return sum(len(t.value) if isinstance(t, Term) else 8 for row in rows for t in row) + \
        8 * sum(map(len, rows))


def _too_big(max_bytes: int) -> ResultTable:
    """A result over ``max_bytes``: truncated, never scored (its rows are not kept)."""
    return ResultTable([], [], True, meta={"max_bytes": max_bytes})


def _rdflib_collect(graph: rdflib.Graph, query: str, max_rows: int, base_iri: str | None,
                    ) -> _Solutions:
    try:
        res = graph.query(query, base=base_iri)
        if res.type == "ASK":
            return _Solutions(["boolean"], 1, [], rows=[(bool(res.askAnswer),)])
        if res.type != "SELECT":
            raise QueryFailed("only SELECT and ASK results are tables")
        cols = [str(v) for v in (res.vars or [])]
        # a SELECT result iterates its rows
        return _solutions(cols, cast("Iterable[tuple[object, ...]]", res), max_rows,
                          _rdflib_term)
    except QueryFailed:
        raise
    except Exception as exc:
        raise QueryFailed(f"{type(exc).__name__}: {exc}") from None


def _load_graph(engine: str, path: str, fmt: tuple[str, str, bool], lenient: bool,
                base_iri: str | None, allow_service: bool) -> tuple[Any, ...]:
    """The setup of every sandbox worker of one graph: load it into :func:`worker_state`,
    then take the worker off the network (unless ``allow_service``): after the load, which
    may read what the file refers to, and before the worker has threads (``unshare``).
    ``("ready", triples, seconds, graphs, network)``, or ``("error", message)``: a file
    that does not load is the source's problem, reported by the parent, not a crash."""
    try:
        t0 = time.perf_counter()
        if engine == "rdflib":
            import rdflib
            import rdflib.plugins.sparql

            # FROM <iri> must never fetch a URL or read a file into the dataset.
            rdflib.plugins.sparql.SPARQL_LOAD_GRAPHS = False
            graph: Any = rdflib.Dataset(default_union=True) if fmt[2] else rdflib.Graph()
            graph.parse(path, format=fmt[1], publicID=base_iri)
            triples, graphs = len(graph), _rdflib_graphs(graph)
        else:
            loaded = _load_pyoxigraph(Path(path), fmt[0], lenient, base_iri)
            graph, triples, graphs = loaded.store, loaded.triples, loaded.graphs
        network = "on (allow_service)" if allow_service else _cut_network()
    except Exception as exc:
        return ("error", exc.reason() if isinstance(exc, QueryEvalError)
                else f"{type(exc).__name__}: {exc}")
    worker_state()[_GRAPH] = (engine, graph, base_iri)
    return ("ready", triples, time.perf_counter() - t0, graphs, network)


#: The :func:`worker_state` key of the graph a worker loaded.
_GRAPH = "rdf-graph"


def _query(query: str, max_rows: int, max_bytes: int | None = None,
           ) -> tuple[list[str], Any, bool] | None:
    """One query on the worker's graph, its rows in the packed form (:mod:`.packed`); None
    when they hold more than ``max_bytes`` (:meth:`_Solutions.size`)."""
    if _GRAPH not in worker_state():  # the worker was replaced between two calls
        raise QueryFailed("the graph is not loaded in this worker; run the query again")
    engine, graph, base_iri = worker_state()[_GRAPH]
    if engine == "rdflib":
        got = _rdflib_collect(graph, query, max_rows, base_iri)
    else:
        ox = _ox_collect(graph, query, max_rows, base_iri)
        assert ox is not None
        got = ox
    if max_bytes is not None and got.size() > max_bytes:
        return None
    return got.reply()


class _Worker:
    """One loaded graph in a private :class:`~pytest_queryeval._isolation.sandbox.Sandbox` (rdflib, or
    pyoxigraph isolated). The graph is loaded by the worker's setup step, so every worker the
    sandbox starts, the one it starts after a kill too, holds it before its first query."""

    def __init__(self, engine: str, path: Path, fmt: tuple[str, str, bool], lenient: bool,
                 base_iri: str | None, load_timeout: float,
                 max_memory: int = DEFAULT_MAX_MEMORY, allow_service: bool = False) -> None:
        self.engine, self.path, self.fmt, self.lenient = engine, path, fmt, lenient
        self.base_iri = base_iri
        self.allow_service = allow_service
        self.graphs: frozenset[str] = frozenset()
        #: How the worker is kept off the network ("namespace", "audit-hook", or on).
        self.network = ""
        self.load_timeout = load_timeout
        self.max_memory = max_memory
        self.triples = 0
        self.load_seconds = 0.0
        #: Workers that loaded the graph so far (a kill and the next query add one).
        self.starts = 0
        self.lock = threading.Lock()
        self._box = Sandbox(f"rdf-{engine}", max_memory=max_memory, preload=(__name__,),
                            setup=(_load_graph, (engine, str(path), fmt, lenient, base_iri,
                                                 allow_service)),
                            start_timeout=load_timeout)
        #: The terms of the last result, by their fields (:func:`.packed.unpack_terms`: a
        #: case's gold and predicted results share equal terms).
        self._terms: dict[Any, Term] = {}
        #: The process id of the worker whose load this object has seen.
        self._loaded: int | None = None

    def _ensure(self) -> None:
        """A worker with the graph loaded (SourceUnavailable when the file does not load)."""
        try:
            self._box.start()
        except SandboxNotStarted as exc:
            if exc.timed_out:
                raise SourceUnavailable(f"{self.engine} did not load {self.path} within "
                                        f"{self.load_timeout:g} s (load_timeout)") from None
            raise SourceUnavailable(f"{self.engine} worker for {self.path} died while "
                                    "loading") from None
        pid = self._box.pid
        if pid == self._loaded:
            return
        value = self._box.setup_value
        if value[0] != "ready":
            self._box.close()
            raise SourceUnavailable(f"cannot load {self.path} with {self.engine}: {value[1]}")
        self._loaded = pid
        self.starts += 1
        self.triples, self.load_seconds = int(value[1]), float(value[2])
        self.graphs, self.network = frozenset(value[3]), str(value[4])

    def ensure_started(self) -> None:
        with self.lock:
            self._ensure()

    def run(self, query: str, timeout: float, max_rows: int, base_iri: str | None,
            max_bytes: int) -> ResultTable:
        del base_iri  # fixed at load time for the worker
        with self.lock:
            self._ensure()
            try:
                reply = self._box.call(_query, query, max_rows, max_bytes,
                                       timeout=timeout, max_reply=max_bytes)
            except SandboxTooBig:  # the rows stayed in the worker
                return _too_big(max_bytes)
            except SandboxTimeout:
                raise QueryTimeout(f"no result within {timeout:g} s ({self.engine} worker "
                                   "killed)") from None
            except SandboxMemoryError:
                raise QueryFailed("out of memory: the query went over max_memory") from None
            except SandboxCrashed:
                raise QueryFailed(f"{self.engine} worker died while evaluating the query "
                                  "(out of memory? see max_memory)") from None
            if reply is None:  # the rows stayed in the worker
                return _too_big(max_bytes)
            columns, packed, truncated = reply
            rows, self._terms = unpack_terms(packed, self._terms)
        return ResultTable(list(columns), rows, bool(truncated))

    def alive(self) -> bool:
        """True while the worker that loaded the graph runs (after a kill, the sandbox's
        next worker is not it until a query has seen its load)."""
        pid = self._box.pid
        return pid is not None and pid == self._loaded

    def close(self) -> None:
        with self.lock:
            self._box.close()


# --------------------------------------------------------------------------- registry

_REGISTRY: dict[tuple[Any, ...], Any] = {}
_REGISTRY_LOCK = threading.Lock()
_HASHES: dict[tuple[str, int, int], str] = {}


def _file_key(path: Path) -> tuple[str, int, int]:
    try:
        st = safefile.check(path, "graph")  # not /dev/zero, a FIFO or a 5 GB sparse file
    except safefile.UnsafeFile as exc:
        raise SourceUnavailable(f"graph file refused: {exc}") from exc
    except OSError as exc:
        raise SourceUnavailable(f"graph file not found: {path}") from exc
    return (str(path), st.st_mtime_ns, st.st_size)


def file_sha256(path: Path) -> str:
    """sha256 of the graph file (cached per path/mtime/size)."""
    key = _file_key(path)
    if key not in _HASHES:
        _HASHES[key] = safefile.sha256([path], "graph")
    return _HASHES[key]


def loaded_store(path: Path, engine: str, fmt: tuple[str, str, bool], lenient: bool,
                 base_iri: str | None, load_timeout: float, isolation: str = "thread",
                 max_memory: int = DEFAULT_MAX_MEMORY, allow_service: bool = False) -> Any:
    """The shared loaded store for this file version, engine and isolation (loaded once)."""
    if engine == "rdflib":
        isolation = "process"
    key = (*_file_key(path), engine, isolation, fmt, lenient, base_iri,
           (max_memory, allow_service) if isolation == "process" else None)
    with _REGISTRY_LOCK:
        if key in _REGISTRY:
            return _REGISTRY[key]
        store: Any
        if isolation == "thread":
            store = _load_pyoxigraph(path, fmt[0], lenient, base_iri)
        else:
            store = _Worker(engine, path, fmt, lenient, base_iri, load_timeout, max_memory,
                            allow_service)
            store.ensure_started()
        # An older version of the same file is dropped (its worker stopped), not kept forever.
        for old in [k for k in _REGISTRY if k[0] == key[0] and k[3:] == key[3:]]:
            _REGISTRY.pop(old).close()
        _REGISTRY[key] = store
        return store


def clear_registry() -> None:
    """Drop every loaded store and stop rdflib workers (tests; interpreter exit)."""
    with _REGISTRY_LOCK:
        stores = list(_REGISTRY.values())
        _REGISTRY.clear()
    for s in stores:
        s.close()


atexit.register(clear_registry)


# --------------------------------------------------------------------------- the source

#: Spec keys accepted besides ``type``.
RDF_KEYS = frozenset({"path", "engine", "format", "lenient", "base_iri", "timeout", "max_rows",
                      "max_bytes", "max_memory", "load_timeout", "isolation", "allow_service"})


class RdfSource(SourceDefaults):
    """A read-only local RDF graph. See the module docstring for the spec keys."""

    type = "rdf"
    timeout: float

    @classmethod
    def from_spec(cls, name: str, spec: Mapping[str, Any]) -> RdfSource:
        """Build from a resolved ``datasources:`` entry (unknown keys are a ConfigError)."""
        check_keys(name, cls.type, spec, RDF_KEYS)
        return cls(name, spec)

    def __init__(self, name: str, spec: Mapping[str, Any]) -> None:
        self.name = name
        raw = spec.get("path")
        if not isinstance(raw, str | os.PathLike) or not str(raw):
            raise ConfigError("type rdf needs 'path' (a graph file)", key=f"datasources.{name}.path")
        self.path = Path(raw).expanduser().resolve()
        self.engine = str(spec.get("engine", "pyoxigraph")).lower()
        if self.engine not in ENGINES:
            raise ConfigError(f"unknown engine {self.engine!r} (use {' or '.join(ENGINES)})",
                              key=f"datasources.{name}.engine")
        self.format = resolve_format(self.path, spec.get("format"), f"datasources.{name}.format")
        self.lenient = bool(spec.get("lenient", False))
        base = spec.get("base_iri")
        self.base_iri = str(base) if base else None
        self.timeout = positive(spec, "timeout", DEFAULT_TIMEOUT, name)
        self.max_rows = int(positive(spec, "max_rows", DEFAULT_MAX_ROWS, name))
        self.load_timeout = positive(spec, "load_timeout", DEFAULT_LOAD_TIMEOUT, name)
        self.max_bytes = positive_int(spec.get("max_bytes", DEFAULT_MAX_BYTES), name, "max_bytes")
        self.max_memory = positive_int(spec.get("max_memory", DEFAULT_MAX_MEMORY), name,
                                       "max_memory")
        self.isolation = check_isolation(name, str(spec.get("isolation", "process")).lower())
        allow = spec.get("allow_service", False)
        if not isinstance(allow, bool):
            raise ConfigError(f"must be true or false, not {allow!r}",
                              key=f"datasources.{name}.allow_service")
        #: SERVICE (federation) and FROM IRIs outside the file are refused unless this is set.
        self.allow_service = allow
        if self.engine == "rdflib" and self.isolation != "process":
            raise ConfigError("rdflib always runs in a worker process (it cannot be "
                              "interrupted in a thread): isolation: process",
                              key=f"datasources.{name}.isolation")

    def _store(self) -> Any:
        return loaded_store(self.path, self.engine, self.format, self.lenient, self.base_iri,
                            self.load_timeout, self.isolation, self.max_memory,
                            self.allow_service)

    def execute(self, query: str, *, timeout: float | None = None, max_rows: int | None = None,
                trusted: bool = False) -> ResultTable:
        """Guard, then run ``query``; raises QueryRefused/QueryTimeout/QueryFailed.

        ``timeout``/``max_rows`` default to the spec's values (``None``).
        """
        del trusted  # gold queries are guarded too: a local graph is never written
        timeout = self.timeout if timeout is None else timeout
        max_rows = self.max_rows if max_rows is None else max_rows
        c = check_query(query, allow_service=self.allow_service, timeout=timeout)
        store = self._store()
        if c.from_graphs or c.from_named:  # only graphs of the file (the store knows them)
            check_query(query, allow_service=self.allow_service, graphs=store.graphs)
        t0 = time.perf_counter()
        table: ResultTable = store.run(query, timeout, max_rows, self.base_iri, self.max_bytes)
        table.seconds = time.perf_counter() - t0
        table.columns, table.rows = star_columns_sorted(table.columns, table.rows, c.select_star)
        table.meta.update({"engine": self.engine, "isolation": self.isolation, "form": c.form,
                           "order_by": c.has_order_by, "max_rows": max_rows})
        return table

    def fingerprint(self) -> str:
        """``rdf:<engine>:<sha256 of the file>`` — changes whenever the data does."""
        return f"rdf:{self.engine}:{file_sha256(self.path)}"

    def triple_count(self) -> int:
        return int(self._store().triples)

    def close(self) -> None:
        """Nothing per source: the loaded store is shared by the session (see registry)."""
