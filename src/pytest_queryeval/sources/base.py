"""The data-source contract shared by SQL and SPARQL engines."""

from __future__ import annotations

import marshal
import sys
from collections.abc import Iterable, Mapping
from itertools import chain
from typing import Any, Protocol

from ..errors import ConfigError
from ..results import ResultTable

DEFAULT_TIMEOUT = 30.0
DEFAULT_MAX_ROWS = 100_000
#: Cap on the size of one SQL result (:func:`payload_bytes`), as ``max_bytes`` is for a SPARQL
#: response: ``max_rows`` bounds the rows, this bounds what they hold (a predicted
#: ``SELECT zeroblob(10000000) FROM big_table`` would otherwise fill the memory).
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
        raise ConfigError(f"unknown key(s) {', '.join(unknown)} for type {type_} "
                          f"(allowed: {', '.join(sorted(allowed))})", key=f"datasources.{name}")


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


def positive_int(value: Any, name: str, key: str) -> int:
    """A positive whole number from datasource ``name``'s spec (ConfigError naming the key)."""
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ConfigError(f"must be a positive whole number, not {value!r}",
                          key=f"datasources.{name}.{key}")
    return value


def truncated_table(columns: list[str], rows: list[tuple[Any, ...]], max_rows: int,
                    max_bytes: int | None, seconds: float) -> ResultTable:
    """The fetched result, marked truncated when it went over ``max_rows`` or (``max_bytes``
    given) over the byte cap; ``meta`` names the cap for the failure message."""
    if max_bytes is not None:
        return ResultTable(columns, rows[:max_rows], truncated=True, seconds=seconds,
                           meta={"max_bytes": max_bytes})
    truncated = len(rows) > max_rows
    return ResultTable(columns, rows[:max_rows], truncated=truncated, seconds=seconds,
                       meta={"max_rows": max_rows} if truncated else {})
