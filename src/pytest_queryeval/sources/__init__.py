"""Data sources: build one from a resolved ``datasources:`` spec.

Each type maps to a ``module:Class`` string so that only the engines a suite uses get imported
(SQLAlchemy, psycopg and rdflib are costly to import). A class is constructed as
``Class(name, spec)`` through its ``from_spec`` classmethod when it has one, else with the
spec's keys as keyword arguments (minus ``type``).
"""

from __future__ import annotations

import importlib
from typing import Any

from ..datasource_keys import PLUGIN_KEYS
from ..errors import ConfigError
from .base import DataSource, check_keys

#: ``type:`` value -> ``"module:Class"``. Add a line to support another engine.
SOURCE_TYPES: dict[str, str] = {
    "sqlite": "pytest_queryeval.sources.sqlite:SqliteSource",
    "duckdb": "pytest_queryeval.sources.duckdb:DuckdbSource",
    "sqlalchemy": "pytest_queryeval.sources.sqlalchemy:SqlAlchemySource",
    "spider-schema": "pytest_queryeval.sources.spider_schema:SpiderSchemaSource",
    "rdf": "pytest_queryeval.sources.rdf:RdfSource",
    "sparql": "pytest_queryeval.sources.sparql:SparqlSource",
}

#: Types whose source, opened at collection, starts only its sandbox worker there
#: (``warm``, :meth:`~pytest_queryeval.engine.Evaluator.warm`): no connection, no load.
WARM_TYPES = frozenset({"sqlite", "duckdb"})

#: Keys each type accepts besides ``type`` (for located validation errors).
SOURCE_KEYS: dict[str, frozenset[str]] = {
    "sqlite": frozenset({"path", "timeout", "max_rows", "max_bytes", "max_memory",
                         "isolation"}) | PLUGIN_KEYS,
    "duckdb": frozenset({"path", "timeout", "max_rows", "max_bytes", "max_memory", "threads",
                         "isolation"}) | PLUGIN_KEYS,
    "sqlalchemy": frozenset({"url", "timeout", "max_rows", "max_bytes", "version", "schema",
                             "engine_options", "allow_privileged", "isolation",
                             "max_memory"}) | PLUGIN_KEYS,
    "spider-schema": frozenset({"tables", "db_id"}),
}


def open_source(name: str, spec: dict[str, Any]) -> DataSource:
    """The data source for ``spec`` (paths absolute, ``${VAR}`` expanded by the caller).

    Raises :class:`ConfigError` for an unknown type or bad keys, located at the
    ``queryeval.yaml`` line that defines it; opening is lazy, so an unreachable server surfaces
    later, per query, as ``SourceUnavailable``.
    """
    try:
        return _open(name, spec)
    except ConfigError as exc:
        from ..config import locate_datasource

        raise locate_datasource(exc, name, spec) from None


def _open(name: str, spec: dict[str, Any]) -> DataSource:
    source_type = spec.get("type")
    if not isinstance(source_type, str) or source_type not in SOURCE_TYPES:
        from ..wording import suggest

        known = ", ".join(sorted(SOURCE_TYPES))
        hint = suggest(source_type, SOURCE_TYPES) if isinstance(source_type, str) else ""
        raise ConfigError(f"unknown datasource type {source_type!r}{hint} (known: {known})",
                          key=f"datasources.{name}.type")
    module, _, cls_name = SOURCE_TYPES[source_type].partition(":")
    cls = getattr(importlib.import_module(module), cls_name)
    if hasattr(cls, "from_spec"):
        return cls.from_spec(name, spec)  # type: ignore[no-any-return]
    kwargs = {k: v for k, v in spec.items() if k != "type"}
    allowed = SOURCE_KEYS.get(source_type)
    if allowed is not None:
        check_keys(name, source_type, kwargs, allowed)
    for key in PLUGIN_KEYS & set(kwargs):
        del kwargs[key]
    try:
        return cls(name, **kwargs)  # type: ignore[no-any-return]
    except (TypeError, ValueError) as e:
        raise ConfigError(str(e), key=f"datasources.{name}") from None
