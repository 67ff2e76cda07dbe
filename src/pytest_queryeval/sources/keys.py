"""The keys the plugin itself reads from a SQL datasource, and their checks.

Why apart from the sources: ``writable: sandbox`` (dml/ddl tasks may run on throwaway copies of
the datasource, :mod:`..tasks`) and ``now:`` (the pinned clock, :mod:`.clock`) are read by the
plugin before any query and never reach the source; they are checked when the suite is loaded
(config.py), so a typo in either fails the cases that use the datasource with the file and
line, before any case runs, instead of surfacing per case (or never, for ``now``).

The same load-time check covers two keys a source would otherwise meet only when a case opens
it, as an internal error: the ``path`` of a ``sqlite`` or ``duckdb`` datasource must name a
database file of that engine (``path: /etc/passwd`` is "not a SQLite database", a directory
is "a directory"), and ``engine_options`` of a ``sqlalchemy`` datasource may hold only the
``create_engine()`` arguments a YAML file can give as data (:data:`ENGINE_OPTIONS`): an
argument that takes a Python callable or class (``creator``, ``poolclass``, ``module``,
``json_serializer``, ...) is refused by name, as a string there was never called but failed
inside SQLAlchemy.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Mapping

from . import PLUGIN_KEYS as PLUGIN_KEYS  # re-exported: read here before the table
from . import source_type, source_types

#: Datasource keys holding paths, resolved against the directory of the file defining them
#: (config.py); the reports show them relative (report/records.py), which is why they live
#: here, below both, and not in config.py.
PATH_KEYS = ("path", "tables", "file", "directory")


def plugin_key_types() -> tuple[str, ...]:
    """The datasource types that accept :data:`PLUGIN_KEYS` (their table entries say
    ``plugin_keys``), in the table's order."""
    return tuple(name for name, entry in source_types().items()
                 if entry.plugin_keys)


def plugin_key_problems(spec: Mapping[str, object]) -> list[tuple[str, str]]:
    """``writable`` and ``now`` of a datasource, checked when the suite loads: a typo in
    either would otherwise surface only when a case runs (or never, for ``now``)."""
    problems: list[tuple[str, str]] = []
    for key in sorted(PLUGIN_KEYS & set(spec)):
        if not source_type(spec.get("type")).plugin_keys:
            problems.append((key, f"only SQL datasources ({', '.join(plugin_key_types())}) "
                                  f"take {key}:"))
        elif key == "writable" and spec[key] not in ("sandbox", False):
            problems.append((key, f"must be 'sandbox' (dml/ddl tasks run on throwaway copies "
                                  f"of this datasource) or false, not {spec[key]!r}"))
        elif key == "now":
            from .clock import parse_instant

            try:
                parse_instant(spec[key])
            except ValueError as exc:
                problems.append((key, str(exc)))
    return problems


#: The first bytes of a database file of each file engine (a type's ``database_file``):
#: SQLite's 16-byte header string; DuckDB's magic ``DUCK`` after an 8-byte checksum. An empty
#: file is a new, empty SQLite database to SQLite; DuckDB refuses one.
_MAGIC: dict[str, Callable[[bytes], bool]] = {
    "sqlite": lambda head: head == b"" or head.startswith(b"SQLite format 3\x00"),
    "duckdb": lambda head: head[8:12] == b"DUCK",
}
_ENGINE_NAMES = {"sqlite": "SQLite", "duckdb": "DuckDB"}


def _scalar(value: object) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def _data(value: object, depth: int = 0) -> bool:
    """Plain data (scalars, and lists and string-keyed mappings of them, a few levels)."""
    if _scalar(value):
        return True
    if depth >= 3:
        return False
    if isinstance(value, list):
        return all(_data(v, depth + 1) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _data(v, depth + 1) for k, v in value.items())
    return False


def _whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value >= 0


def _flag(value: object) -> bool:
    return isinstance(value, bool)


def _text(value: object) -> bool:
    return isinstance(value, str)


#: ``engine_options`` keys (SQLAlchemy ``create_engine()`` arguments) a datasource may set,
#: each with what its value must be. Everything else is refused: an argument that takes a
#: callable, a class or a module cannot be written in YAML, and an unknown one is a typo.
ENGINE_OPTIONS: dict[str, tuple[Callable[[object], bool], str]] = {
    "pool_size": (_whole, "a whole number"),
    "max_overflow": (lambda v: isinstance(v, int) and not isinstance(v, bool),
                     "a whole number"),
    "pool_timeout": (_number, "a number of seconds"),
    "pool_recycle": (lambda v: isinstance(v, int | float) and not isinstance(v, bool),
                     "a number of seconds"),
    "pool_pre_ping": (_flag, "true or false"),
    "pool_use_lifo": (_flag, "true or false"),
    "pool_reset_on_return": (lambda v: v in ("rollback", "commit", None),
                             "rollback, commit or null"),
    "echo": (lambda v: isinstance(v, bool) or v == "debug", "true, false or debug"),
    "echo_pool": (lambda v: isinstance(v, bool) or v == "debug", "true, false or debug"),
    "hide_parameters": (_flag, "true or false"),
    "isolation_level": (_text, "a string"),
    "logging_name": (_text, "a string"),
    "pool_logging_name": (_text, "a string"),
    "query_cache_size": (_whole, "a whole number"),
    "insertmanyvalues_page_size": (_whole, "a whole number"),
    "label_length": (_whole, "a whole number"),
    "max_identifier_length": (_whole, "a whole number"),
    "paramstyle": (_text, "a string"),
    "implicit_returning": (_flag, "true or false"),
    "use_insertmanyvalues": (_flag, "true or false"),
    "enable_from_linting": (_flag, "true or false"),
    "connect_args": (lambda v: isinstance(v, dict) and _data(v),
                     "a mapping of the driver's connect() arguments (plain values)"),
    "execution_options": (lambda v: isinstance(v, dict) and _data(v),
                          "a mapping of plain values"),
}
#: Driver ``connect()`` arguments (in ``connect_args``) that take Python objects: sqlite3's
#: ``factory``, psycopg's ``cursor_factory``, ``row_factory``, ``context``, psycopg2's
#: ``connection_factory``, PyMySQL's ``conv`` and ``cursorclass``, an SSL context.
_OBJECT_CONNECT_ARGS = frozenset({"factory", "cursor_factory", "row_factory",
                                  "connection_factory", "context", "conv", "cursorclass",
                                  "ssl_context", "sslcontext", "creator"})
#: ``create_engine()`` arguments that take Python objects, named in the refusal.
_OBJECT_OPTIONS = frozenset({"creator", "poolclass", "pool", "module", "json_serializer",
                             "json_deserializer", "plugins", "strategy", "async_creator",
                             "execution_options_hook"})


def source_problems(spec: Mapping[str, object]) -> list[tuple[str, str]]:
    """``path`` of a file engine (its entry's ``database_file``) and ``engine_options`` (of a
    type whose keys have it: SQLAlchemy), checked when the suite loads (``spec`` with its
    paths made absolute): (key, problem) for each."""
    problems: list[tuple[str, str]] = []
    kind = spec.get("type")
    entry = source_type(kind)
    engine = entry.database_file
    path = spec.get("path")
    if engine is not None and "path" not in spec:
        problems.append(("path", f"missing: a {kind} datasource needs the path of its "
                                 f"{_ENGINE_NAMES[engine]} database file"))
    elif engine is not None and path is not None and not isinstance(path, str):
        problems.append(("path", f"must be the path of a {_ENGINE_NAMES[engine]} database "
                                 f"file (a string), not {type(path).__name__}"))
    elif engine is not None and isinstance(path, str):
        problem = _database_file_problem(path, engine)
        if problem:
            problems.append(("path", problem))
    if "engine_options" in (entry.keys or ()) and "engine_options" in spec:
        problems.extend((f"engine_options{'.' + key if key else ''}", problem)
                        for key, problem in engine_option_problems(spec["engine_options"]))
    return problems


def _database_file_problem(path: str, kind: str) -> str | None:
    """Why ``path`` cannot be a database of ``kind``; a missing file is the source's to say
    (with its own words, when a case opens it)."""
    name = os.path.basename(path.rstrip(os.sep)) or path
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return None
    if stat.S_ISDIR(mode):
        return f"{name!r} is a directory, not a {_ENGINE_NAMES[kind]} database file"
    if not stat.S_ISREG(mode):
        return None  # a FIFO or device: the path check of config.py names it already
    try:
        with open(path, "rb") as fh:
            head = fh.read(16)
    except OSError as exc:
        return f"{name!r} cannot be read: {exc.strerror or type(exc).__name__}"
    if not _MAGIC[kind](head):
        return f"{name!r} is not a {_ENGINE_NAMES[kind]} database file (its first bytes " \
               f"are not the {_ENGINE_NAMES[kind]} header)"
    return None


def engine_option_problems(options: object) -> list[tuple[str, str]]:
    """(key, problem) for a ``sqlalchemy`` datasource's ``engine_options`` (key "" for the
    mapping itself)."""
    if options is None:
        return []
    if not isinstance(options, dict):
        return [("", "must be a mapping of SQLAlchemy create_engine() arguments")]
    problems: list[tuple[str, str]] = []
    for key, value in options.items():
        name = str(key)
        if name == "connect_args" and isinstance(value, dict) \
                and _OBJECT_CONNECT_ARGS & set(map(str, value)):
            taken = sorted(_OBJECT_CONNECT_ARGS & set(map(str, value)))
            problems.append((name, f"{', '.join(taken)}: takes a Python object, which a "
                                   "queryeval.yaml cannot give; not allowed"))
        elif name in _OBJECT_OPTIONS:
            problems.append((name, "takes a Python object (a callable, class or module), "
                                   "which a queryeval.yaml cannot give; not allowed"))
        elif name not in ENGINE_OPTIONS:
            from .._util.wording import suggest

            problems.append((name, f"unknown create_engine() argument"
                                   f"{suggest(name, ENGINE_OPTIONS)} (allowed: "
                                   f"{', '.join(sorted(ENGINE_OPTIONS))})"))
        elif not ENGINE_OPTIONS[name][0](value):
            shown = repr(value) if len(repr(value)) <= 60 else f"{repr(value)[:57]}..."
            problems.append((name, f"must be {ENGINE_OPTIONS[name][1]}, not {shown}"))
    return problems
