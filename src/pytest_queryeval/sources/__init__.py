"""Data sources: build one from a resolved ``datasources:`` spec.

Each type is one :class:`SourceType` entry of :data:`SOURCE_TYPES`: its class (a
``module:Class`` string, so that only the engines a suite uses get imported: SQLAlchemy,
psycopg and rdflib are costly to import), the keys it takes, and every capability the rest of
the plugin asks of a type before or without opening a source (its dialect, the warm-up at
collection, the ``{schema}`` description, ``writable:``/``now:``, the counterexample search,
tasks). Why one table: a type name switched on in several modules made a new type a change in
eight files, and a forgotten one left it silently unsupported. A class is constructed as
``Class(name, spec)`` through its ``from_spec`` classmethod when it has one, else with the
spec's keys as keyword arguments (minus ``type``); either way the spec's keys are first checked
against the entry's ``keys`` when it declares them.

The table is the default implementation of the ``pytest_queryeval_source_types`` hook: a plugin
or a conftest adds a type with :func:`register_type` (the plugin does it with the hook's
results), and it is then relied on for what its entry declares, as a built-in type is. A class
registered without an entry inherits the entry of its nearest registered base class
(:meth:`SourceType.inherit`).
"""

from __future__ import annotations

import importlib
from collections import ChainMap
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, cast

from ..errors import ConfigError
from .base import DataSource, check_keys, declared
from .defined import locate_datasource
from .walls import Walls

__all__ = ["PLUGIN_KEYS", "SOURCE_TYPES", "UNKNOWN", "DataSource", "SourceType", "Walls",
           "locate_datasource", "open_source", "register_type", "source_type", "source_types",
           "unregister_type"]

#: The keys the plugin itself reads from a SQL datasource (``writable:``, ``now:``), checked
#: in :mod:`pytest_queryeval.sources.keys`; a type takes them when its entry says
#: ``plugin_keys``.
PLUGIN_KEYS = frozenset({"writable", "now"})

#: A datasource spec as the suite config resolved it.
Spec = Mapping[str, object]


def _no_dialect(spec: Spec) -> None:
    return None


def _named(dialect: str) -> Callable[[Spec], str | None]:
    """The dialect of every spec of a type that runs one engine."""
    def of(spec: Spec) -> str | None:
        return dialect
    return of


def url_dialect(spec: Spec) -> str | None:
    """The dialect a SQLAlchemy URL's scheme names (``postgresql+psycopg`` is ``postgres``)."""
    url = spec.get("url")
    if not isinstance(url, str) or ":" not in url:
        return None
    scheme = url.split(":", 1)[0].split("+", 1)[0].lower()
    return {"postgresql": "postgres", "postgres": "postgres"}.get(scheme, scheme)


@dataclass(frozen=True)
class SourceType:
    """One ``type:`` of datasource and what the plugin may rely on it for."""

    #: The class, or ``"module:Class"`` imported when a datasource of the type first opens.
    cls: str | type
    #: The keys its spec takes besides ``type`` and the plugin keys (None: the class's
    #: ``from_spec`` checks its own).
    keys: frozenset[str] | None = None
    #: The dialect of a spec, known before the source opens (the name a ``gold:`` mapping
    #: uses; None: not a SQL engine's).
    dialect: Callable[[Spec], str | None] = _no_dialect
    #: Opened at collection, it starts only its sandbox worker there
    #: (:meth:`~pytest_queryeval.engine.Evaluator.warm`): no connection, no load.
    warm: bool = False
    #: A SQL engine whose ``ddl()`` describes it for ``{schema}`` (:mod:`.describe`).
    sql: bool = False
    #: Answers SPARQL: described for ``{schema}`` by its classes and properties.
    sparql: bool = False
    #: Neither SQL nor SPARQL, described for ``{schema}`` by its own ``ddl()`` statements (a
    #: graph's node and relationship tables; no sample rows).
    ddl: bool = False
    #: Takes :data:`PLUGIN_KEYS` (``writable:``, ``now:``).
    plugin_keys: bool = False
    #: The counterexample search's engine for its files (``neighbours.named.engine_named``;
    #: None: not searched); a source with no file is searched through its URL when its
    #: dialect is the engine's (a PostgreSQL ``sqlalchemy`` URL).
    neighbours: str | None = None
    #: The dialects (of :attr:`dialect`) ``task: dml|ddl`` cases run on.
    tasks: frozenset[str] = frozenset()
    #: The engine whose database file its ``path`` must name, checked when the suite loads
    #: (``datasource_keys``: ``"sqlite"`` or ``"duckdb"``; None: no such check).
    database_file: str | None = None
    #: Holds a schema and no data: nothing runs (Spider's exact set match gates a SQL case
    #: by default, a case names its ``db_id``, ``{schema}`` describes nothing), and its Spider
    #: schema is its own, per ``db_id``.
    schema_only: bool = False
    #: Its ``path`` is a SQLite file that Spider's schema reader opens itself.
    sqlite_file: bool = False
    #: Spider 2.0's evaluator scores an empty predicted result zero (it compares empty
    #: results only on its SQLite instances).
    empty_result_scores_zero: bool = True
    #: What it holds against a hostile query (:mod:`.walls`; None: it declares nothing, and
    #: the hostile corpus of the tests refuses such a type).
    walls: Walls | None = None

    def load(self) -> type:
        """The class, imported the first time a datasource of the type opens."""
        if isinstance(self.cls, type):
            return self.cls
        module, _, name = self.cls.partition(":")
        return cast(type, getattr(importlib.import_module(module), name))

    @classmethod
    def inherit(cls, source_class: type, **changes: Any) -> SourceType:
        """The entry of ``source_class``: that of its nearest base class registered as a type
        (every capability, its keys too) with ``changes`` laid over it; a class with no
        registered base gets the defaults. Why: a source derived from ``SqliteSource`` is a
        SQLite source in every respect it does not change, and restating the parent's flags
        was a copy that drifts."""
        for base in source_class.__mro__[1:]:
            path = f"{base.__module__}:{base.__qualname__}"
            parent = next((entry for entry in source_types().values()
                           if entry.cls is base or entry.cls == path), None)
            if parent is not None:
                return replace(parent, cls=source_class, **changes)
        return SourceType(source_class, **changes)

    def allowed(self) -> frozenset[str] | None:
        """Every key its spec takes besides ``type`` (None: its class checks them)."""
        if self.keys is None:
            return None
        return self.keys | PLUGIN_KEYS if self.plugin_keys else self.keys


_FILE_KEYS = frozenset({"path", "timeout", "max_rows", "max_bytes", "max_memory", "isolation"})

#: A server's walls: the plugin sends it queries and holds its own memory; what the server
#: reads is the server's (PostgreSQL: a role without file functions, checked when it connects).
_SERVER = Walls()

#: ``type:`` value -> its entry. Add an entry to support another engine.
SOURCE_TYPES: dict[str, SourceType] = {
    "sqlite": SourceType("pytest_queryeval.sources.sqlite:SqliteSource", _FILE_KEYS,
                         _named("sqlite"), warm=True, sql=True, plugin_keys=True,
                         neighbours="sqlite", tasks=frozenset({"sqlite"}),
                         database_file="sqlite", sqlite_file=True,
                         empty_result_scores_zero=False, walls=Walls()),
    "duckdb": SourceType("pytest_queryeval.sources.duckdb:DuckdbSource",
                         _FILE_KEYS | {"threads"}, _named("duckdb"), warm=True, sql=True,
                         plugin_keys=True, neighbours="duckdb", tasks=frozenset({"duckdb"}),
                         database_file="duckdb", walls=Walls()),
    "sqlalchemy": SourceType("pytest_queryeval.sources.sqlalchemy:SqlAlchemySource",
                             frozenset({"url", "timeout", "max_rows", "max_bytes", "version",
                                        "schema", "engine_options", "allow_privileged",
                                        "isolation", "max_memory", "trusted_routines"}),
                             url_dialect, sql=True, plugin_keys=True, neighbours="postgres",
                             # PostgreSQL; a sqlite: or duckdb: URL was always let through
                             tasks=frozenset({"postgres", "sqlite", "duckdb"}),
                             walls=_SERVER),
    "spider-schema": SourceType("pytest_queryeval.sources.spider_schema:SpiderSchemaSource",
                                frozenset({"tables", "db_id"}), schema_only=True,
                                walls=Walls()),  # it runs nothing
    "rdf": SourceType("pytest_queryeval.sources.rdf:RdfSource", sparql=True, walls=Walls()),
    "sparql": SourceType("pytest_queryeval.sources.sparql:SparqlSource", sparql=True,
                         walls=_SERVER),
}

#: What a type in no table (a ``pytest_queryeval_datasource`` hook's own) is relied on for:
#: nothing.
UNKNOWN = SourceType("")

#: Types registered by plugins and conftests (``pytest_queryeval_source_types``).
_registered: dict[str, SourceType] = {}
#: Every type: the registered ones over the built-in table (a live view).
_TYPES: ChainMap[str, SourceType] = ChainMap(_registered, SOURCE_TYPES)


def source_types() -> Mapping[str, SourceType]:
    """Every type the plugin knows now, built-in and registered."""
    return _TYPES


def register_type(name: str, entry: SourceType | type) -> None:
    """Add type ``name``; a bare class gets the entry it inherits (:meth:`SourceType.inherit`).
    A built-in table entry registered again (the hook's default implementation) changes
    nothing."""
    if SOURCE_TYPES.get(name) is entry:
        return
    _registered[name] = entry if isinstance(entry, SourceType) else SourceType.inherit(entry)


def unregister_type(name: str) -> None:
    """Forget a registered type (a session's conftest types must not leak into the next)."""
    _registered.pop(name, None)


def source_type(name: object) -> SourceType:
    """The entry of type ``name`` (:data:`UNKNOWN` for a type no table holds)."""
    return _TYPES.get(name, UNKNOWN) if isinstance(name, str) else UNKNOWN


def open_source(name: str, spec: dict[str, object]) -> DataSource:
    """The data source for ``spec`` (paths absolute, ``${VAR}`` expanded by the caller).

    Raises :class:`ConfigError` for an unknown type or bad keys, located at the
    ``queryeval.yaml`` line that defines it; opening is lazy, so an unreachable server surfaces
    later, per query, as ``SourceUnavailable``.
    """
    try:
        return _open(name, spec)
    except ConfigError as exc:
        raise locate_datasource(exc, name, spec) from None


def _open(name: str, spec: dict[str, object]) -> DataSource:
    source_type_name = spec.get("type")
    if not isinstance(source_type_name, str) or source_type_name not in _TYPES:
        from .._util.wording import suggest

        known = ", ".join(sorted(_TYPES))
        hint = suggest(source_type_name, list(_TYPES)) \
            if isinstance(source_type_name, str) else ""
        raise ConfigError(f"unknown datasource type {source_type_name!r}{hint} "
                          f"(known: {known})", key=f"datasources.{name}.type")
    entry = _TYPES[source_type_name]
    cls = entry.load()
    kwargs = {k: v for k, v in spec.items() if k != "type"}
    allowed = entry.allowed()
    if allowed is not None:  # declared keys hold for a class with its own from_spec too
        check_keys(name, source_type_name, kwargs, allowed)
    from_spec = getattr(cls, "from_spec", None)
    if from_spec is not None:
        # a registered class gets the capabilities it does not declare, as a hook's source
        return declared(from_spec(name, spec), name, source_type_name)
    for key in PLUGIN_KEYS & set(kwargs):
        del kwargs[key]
    try:
        return declared(cls(name, **kwargs), name, source_type_name)
    except (TypeError, ValueError) as e:
        raise ConfigError(str(e), key=f"datasources.{name}") from None
