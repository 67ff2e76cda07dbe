"""The data-source contract shared by SQL and SPARQL engines."""

from __future__ import annotations

import marshal
import sys
from collections.abc import Iterable, Mapping
from itertools import chain
from typing import Any, Protocol

from ..errors import ConfigError
from ..numeric import MAX_COUNT, option_limit, short_repr
from ..results import ResultTable

DEFAULT_TIMEOUT = 30.0
DEFAULT_MAX_ROWS = 100_000
#: Default ``max_bytes`` of every source: the size of one result (SQL: :func:`payload_bytes`;
#: local RDF: the pickled reply; SPARQL endpoint: the response body). ``max_rows`` bounds the
#: rows, this bounds what they hold (``SELECT zeroblob(10000000) FROM big_table``).
DEFAULT_MAX_BYTES = 64 * 1024 * 1024

_SIZED = (str, bytes, bytearray)


class DataSource(Protocol):
    """A read-only query engine. Implementations must refuse writes *before* executing."""

    name: str
    type: str

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

    def close(self) -> None: ...


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


def payload_bytes(rows: list[tuple[Any, ...]]) -> int:
    """The size of fetched rows, about as their values take in memory: the length of a
    ``marshal`` dump (one C pass; text and binary values count their length, numbers a few
    bytes), or value by value when a driver returns types marshal cannot write."""
    try:
        return len(marshal.dumps(rows))
    except ValueError:  # Decimal, datetime, UUID...
        return sum(map(_value_bytes, chain.from_iterable(rows)))


def _value_bytes(value: Any) -> int:
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


def positive_int(value: Any, name: str, key: str) -> int:
    """A positive whole number from datasource ``name``'s spec (ConfigError naming the key)."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= MAX_COUNT:
        raise ConfigError(f"must be a positive whole number (at most {MAX_COUNT:,}), not "
                          f"{short_repr(value)}",
                          key=f"datasources.{name}.{key}")
    return value


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

    def wanted(self, step: int) -> int:
        """Rows to ask for next: ``step``, or fewer to stop one past ``max_rows``."""
        return min(step, self.max_rows + 1 - len(self.rows))

    def add(self, batch: list[tuple[Any, ...]]) -> bool:
        """Keep a batch; True while there is more to fetch (the batch was not empty and no cap
        has been passed)."""
        if not batch:
            return False
        self.rows.extend(batch)
        self.last = payload_bytes(batch)
        self.size += self.last
        self.over_bytes = self.size > self.max_bytes
        return not self.over_bytes and len(self.rows) <= self.max_rows

    def table(self, columns: list[str], seconds: float) -> ResultTable:
        """The result, ``truncated`` with ``meta`` naming the cap it went over, if any."""
        rows = self.rows[: self.max_rows]
        if self.over_bytes:
            return ResultTable(columns, rows, truncated=True, seconds=seconds,
                               meta={"max_bytes": self.max_bytes})
        truncated = len(self.rows) > self.max_rows
        return ResultTable(columns, rows, truncated=truncated, seconds=seconds,
                           meta={"max_rows": self.max_rows} if truncated else {})
