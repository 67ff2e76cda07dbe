"""The data-source contract shared by SQL and SPARQL engines."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol

from ..errors import ConfigError
from ..results import ResultTable

DEFAULT_TIMEOUT = 30.0
DEFAULT_MAX_ROWS = 100_000


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
