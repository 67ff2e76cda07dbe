"""The data-source contract shared by SQL and SPARQL engines."""

from __future__ import annotations

import marshal
import sys
from collections.abc import Iterable, Mapping
from contextvars import ContextVar
from functools import partial
from itertools import chain
from typing import Any, Protocol, cast

from .._util.numeric import MAX_COUNT, option_limit, short_repr
from ..errors import ConfigError, QueryFailed, SourceUnavailable
from ..results import ResultTable
from .packed import PLAIN, PackedRows, unpack_rows

DEFAULT_TIMEOUT = 30.0
DEFAULT_MAX_ROWS = 100_000
#: Default ``max_bytes`` of every source: the size of one result (SQL: :func:`payload_bytes`;
#: local RDF: the terms' text and 8 bytes a cell; SPARQL endpoint: the response body). ``max_rows`` bounds the
#: rows, this bounds what they hold (``SELECT zeroblob(10000000) FROM big_table``).
DEFAULT_MAX_BYTES = 64 * 1024 * 1024

_SIZED = (str, bytes, bytearray)


class DataSource(Protocol):
    """A read-only query engine. Implementations must refuse writes *before* executing.

    The four capabilities below and :meth:`ddl` are what the kinds and the audit may rely on;
    a source class gets their defaults from :class:`SourceDefaults`, and a custom source from
    the ``pytest_queryeval_datasource`` hook that declares none gets them too
    (:func:`declared`). What a *type* can do before a source opens is its
    :class:`~pytest_queryeval.sources.SourceType` entry.
    """

    name: str
    type: str
    #: The sqlglot dialect its SQL is guarded and rewritten in (None: sqlglot's default, or
    #: not an SQL source).
    dialect: str | None
    #: False for a source that only describes a schema (``spider-schema``): nothing is run on
    #: it, so gold and predicted results must be recorded.
    executable: bool
    #: Seconds a query may run unless a case says otherwise (None: the source has no default,
    #: and a guard that needs one uses its own).
    timeout: float | None
    #: The Spider database a case without ``db_id`` means (``spider-schema`` sources).
    db_id: str | None

    def execute(self, query: str, *, timeout: float = DEFAULT_TIMEOUT,
                max_rows: int = DEFAULT_MAX_ROWS, trusted: bool = False) -> ResultTable:
        """Run one query. ``trusted`` is True only for gold queries (still read-only).

        Raises QueryRefused, QueryTimeout, QueryFailed or SourceUnavailable. A result cut at
        ``max_rows`` comes back with ``truncated=True``.
        """
        ...

    def fingerprint(self) -> str:
        """Identity of the data (for the gold-result cache); never contains a password."""
        ...

    def ddl(self) -> list[tuple[str, str]]:
        """``(table, CREATE TABLE ...;)`` for every table, in definition order: what a model's
        ``{schema}`` shows and what the hallucination metric reads. A source that cannot say
        raises SourceUnavailable (:meth:`SourceDefaults.ddl`, and :func:`declared` for a
        custom source without it)."""
        ...

    def close(self) -> None: ...


#: ``isolation:`` values: queries in a sandbox worker process (the default) or in the pytest
#: process (trusted suites).
ISOLATIONS = ("process", "thread")


def check_isolation(name: str, value: object) -> str:
    """``value`` when it is one of :data:`ISOLATIONS` (ConfigError naming datasource
    ``name``'s key otherwise): one rule and one message for every source that has the key."""
    if value not in ISOLATIONS:
        raise ConfigError(f"isolation must be {' or '.join(ISOLATIONS)}, not {value!r}",
                          key=f"datasources.{name}.isolation")
    return str(value)


class SourceDefaults:
    """The capabilities of a source that does not declare them: every built-in source class
    inherits this, so the contract holds without each repeating the common values."""

    dialect: str | None = None
    executable: bool = True
    timeout: float | None = None
    db_id: str | None = None

    def ddl(self) -> list[tuple[str, str]]:
        """Not available: a source that is no SQL engine has no ``CREATE TABLE`` to show."""
        raise no_ddl(str(getattr(self, "name", "")), str(getattr(self, "type", "")))


def no_ddl(name: str, type_: str) -> SourceUnavailable:
    """What :meth:`DataSource.ddl` raises where it is not available."""
    return SourceUnavailable(f"datasource {name!r} of type {type_!r} cannot be described "
                             "for {schema}")


def tidy_ddl(ddl: str) -> str:
    """One statement, trailing blanks and empty lines gone, ending with ``;``."""
    lines = [line.rstrip() for line in ddl.strip().splitlines() if line.strip()]
    text = "\n".join(lines)
    return text if text.endswith(";") else text + ";"


class _Limited(Protocol):
    """A source's own limits (read by :func:`call_limits`)."""

    @property
    def timeout(self) -> float: ...

    @property
    def max_rows(self) -> int: ...


def call_limits(source: _Limited, timeout: float | None, max_rows: int | None,
                ) -> tuple[float, int]:
    """A query's timeout and row cap: those given to the call, else the source's own."""
    return (float(source.timeout if timeout is None else timeout),
            int(source.max_rows if max_rows is None else max_rows))


#: The capabilities :func:`declared` fills in, with their defaults.
CAPABILITIES: dict[str, Any] = {key: getattr(SourceDefaults, key)
                                for key in ("dialect", "executable", "timeout", "db_id")}


def declared(source: object, name: str, type_: str) -> DataSource:
    """A source from the ``pytest_queryeval_datasource`` hook with the whole contract: what it
    does not declare of :data:`CAPABILITIES` gets the default (written on the object, as a
    :class:`SourceDefaults` subclass would have it), and a missing ``name`` or ``type`` the
    datasource's. Why: a custom source written before the capabilities were part of the
    contract keeps working, and callers read attributes instead of guessing with getattr."""
    missing = {key: value for key, value in
               {**CAPABILITIES, "name": name, "type": type_}.items()
               if not hasattr(source, key)}
    if not hasattr(source, "ddl"):
        missing["ddl"] = partial(_raise_no_ddl, name, type_)
    try:
        for key, value in missing.items():
            setattr(source, key, value)
    except (AttributeError, TypeError):  # __slots__ or frozen: read through a view instead
        return cast(DataSource, _Completed(source, missing))
    return cast(DataSource, source)


def _raise_no_ddl(name: str, type_: str) -> list[tuple[str, str]]:
    raise no_ddl(name, type_)


class _Completed:
    """A custom source that cannot take attributes, seen with the ones it lacks."""

    def __init__(self, source: object, missing: dict[str, object]) -> None:
        self.__dict__.update(missing)
        self._source = source

    def __getattr__(self, key: str) -> Any:
        return getattr(self._source, key)


def check_keys(name: str, type_: str, spec: Mapping[str, Any], allowed: Iterable[str]) -> None:
    """A datasource spec key nobody reads is a typo: name it (``type`` is always allowed)."""
    allowed = frozenset(allowed)
    unknown = sorted(set(spec) - allowed - {"type"})
    if unknown:
        import difflib

        close = difflib.get_close_matches(str(unknown[0]), sorted(allowed), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ConfigError(f"unknown key(s) {', '.join(unknown)} for type {type_}{hint} "
                          f"(allowed: {', '.join(sorted(allowed))})",
                          key=f"datasources.{name}.{unknown[0]}")


def whole_rows(source: Any, query: str, max_rows: int) -> list[tuple[Any, ...]]:
    """The rows of a trusted catalog query, whole: QueryFailed when ``max_rows`` or the
    source's ``max_bytes`` cut them (a catalog read in part would account for some of the
    database's objects and not others)."""
    table = source.execute(query, trusted=True, max_rows=max_rows)
    if table.truncated or table.meta.get("max_bytes") is not None:
        raise QueryFailed(f"the catalog is over {max_rows:,} rows or the datasource's "
                          "max_bytes")
    return [tuple(row) for row in table.rows]


def payload_bytes(rows: list[tuple[Any, ...]]) -> int:
    """The size of fetched rows, about as their values take in memory: the length of a
    ``marshal`` dump (one C pass; text and binary values count their length, numbers a few
    bytes), or value by value when a driver returns types marshal cannot write."""
    try:
        return len(marshal.dumps(rows))
    except ValueError:  # Decimal, datetime, UUID...
        return sum(map(_value_bytes, chain.from_iterable(rows)))


def _value_bytes(value: object) -> int:
    if isinstance(value, _SIZED):
        return len(value)
    if isinstance(value, dict | list | tuple):  # JSON documents from the driver
        return len(repr(value))
    return sys.getsizeof(value)


def positive(spec: Mapping[str, Any], key: str, default: float, name: str) -> float:
    """A positive number from the spec (ConfigError naming the key otherwise)."""
    try:
        return float(option_limit(key, spec.get(key, default)))
    except ValueError as exc:
        raise ConfigError(str(exc), key=f"datasources.{name}.{key}") from None


def positive_int(value: object, name: str, key: str) -> int:
    """A positive whole number from datasource ``name``'s spec (ConfigError naming the key)."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= MAX_COUNT:
        raise ConfigError(f"must be a positive whole number (at most {MAX_COUNT:,}), not "
                          f"{short_repr(value)}",
                          key=f"datasources.{name}.{key}")
    return value


#: Set (True) by a sandbox worker's query function around the fetch whose result it sends
#: back: :class:`FetchedRows` then keeps batches of plain cells as the marshal dumps it makes
#: anyway to count their bytes (:class:`PackedBatches`), not as row objects, so the worker
#: never holds a large result as Python objects (250 bytes a row instead of 40).
PACK_BATCHES: ContextVar[bool] = ContextVar("queryeval_pack_batches", default=False)


class PackedBatches(list):  # type: ignore[type-arg]
    """The rows of a :data:`PACK_BATCHES` fetch: an empty list holding the batches' marshal
    dumps (``chunks``), which only the worker's reply reads."""

    def __init__(self, chunks: list[bytes]) -> None:
        super().__init__()
        self.chunks = chunks


class FetchedRows:
    """The rows of one result as they are fetched, batch by batch, under ``max_rows`` and
    ``max_bytes`` (:func:`payload_bytes` of each batch): the one loop state every SQL source
    shares, and the table it makes, truncated by the cap that stopped it."""

    def __init__(self, max_rows: int, max_bytes: int) -> None:
        self.rows: list[tuple[Any, ...]] = []
        self.max_rows, self.max_bytes = max_rows, max_bytes
        self.size = 0
        #: Bytes of the last batch added.
        self.last = 0
        self.over_bytes = False
        #: Rows fetched so far.
        self.count = 0
        #: Marshal dumps of the batches (:data:`PACK_BATCHES`), while every batch was plain.
        self.chunks: list[bytes] | None = [] if PACK_BATCHES.get() else None

    def wanted(self, step: int) -> int:
        """Rows to ask for next: ``step``, or fewer to stop one past ``max_rows``."""
        return min(step, self.max_rows + 1 - self.count)

    def add(self, batch: list[tuple[Any, ...]]) -> bool:
        """Keep a batch; True while there is more to fetch (the batch was not empty and no cap
        has been passed)."""
        if not batch:
            return False
        self.count += len(batch)
        if self.chunks is not None and set(map(type, chain.from_iterable(batch))) <= PLAIN:
            data = marshal.dumps(batch)  # what payload_bytes measures
            self.chunks.append(data)
            self.last = len(data)
        else:
            if self.chunks:  # a batch marshal cannot carry exactly: rows from here on
                self.rows = self._unpacked()
            self.chunks = None
            self.rows.extend(batch)
            self.last = payload_bytes(batch)
        self.size += self.last
        self.over_bytes = self.size > self.max_bytes
        return not self.over_bytes and self.count <= self.max_rows

    def _unpacked(self) -> list[tuple[Any, ...]]:
        return unpack_rows(PackedRows("chunks", self.chunks or []))

    def table(self, columns: list[str], seconds: float) -> ResultTable:
        """The result, ``truncated`` with ``meta`` naming the cap it went over, if any."""
        if self.chunks:
            if not self.over_bytes and self.count <= self.max_rows:
                return ResultTable(columns, PackedBatches(self.chunks), seconds=seconds)
            self.rows = self._unpacked()  # cut below, row by row (rare: a cap was passed)
            self.chunks = None
        rows = self.rows[: self.max_rows]
        if self.over_bytes:
            return ResultTable(columns, rows, truncated=True, seconds=seconds,
                               meta={"max_bytes": self.max_bytes})
        truncated = self.count > self.max_rows
        return ResultTable(columns, rows, truncated=truncated, seconds=seconds,
                           meta={"max_rows": self.max_rows} if truncated else {})
