"""A live instance of every registered datasource type, built on the real engines and servers
of the test fixtures, for the hostile corpus (:mod:`.test_walls`).

A new type is picked up from the registry by the corpus; it needs an entry here (how to build
one) or in :data:`NOT_LIVE` (why none can be built here), which
``test_every_type_is_live_or_says_why`` checks.
"""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from pytest_queryeval.sources import open_source
from pytest_queryeval.sources.base import DataSource

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "example_suite" / "data"
#: Seconds each hostile query may run (kept small: the corpus runs on every type in CI).
TIMEOUT = 1.0
#: Address space of a sandbox worker (a huge value fails there).
MAX_MEMORY = 512 * 1024 * 1024


@dataclass
class Live:
    """One open datasource of a type and what the corpus checks on it."""

    family: str
    source: DataSource
    #: An honest query and its rows, asked after every category (None: the type runs nothing).
    honest: str | None
    answer: list[tuple[Any, ...]] | None
    #: The data, as a value that changes when the data does.
    state: Callable[[], object]
    #: A query run trusted that shows the connection's settings (None: none to show).
    settings: str | None = None
    #: Switches the type's guard off for ``engine_writes`` (None: ``trusted=True`` does).
    unguard: Callable[[pytest.MonkeyPatch], None] | None = None
    cleanup: list[Callable[[], None]] = field(default_factory=list)


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _copy(src: Path, tmp: Path) -> Path:
    dst = tmp / src.name
    shutil.copyfile(src, dst)
    dst.chmod(0o644)
    return dst


def _spec(**spec: object) -> dict[str, object]:
    return {"timeout": TIMEOUT, **spec}


def sqlite(request: pytest.FixtureRequest, tmp: Path) -> Live:
    path = _copy(EXAMPLE / "chinook.sqlite", tmp)
    src = open_source("walls", _spec(type="sqlite", path=str(path), max_memory=MAX_MEMORY))
    return Live("sql", src, "SELECT count(*) FROM Genre", [(25,)], lambda: _sha(path),
                "SELECT * FROM pragma_cache_size, pragma_query_only")


def duckdb(request: pytest.FixtureRequest, tmp: Path) -> Live:
    path = _copy(EXAMPLE / "tracks.duckdb", tmp)
    src = open_source("walls", _spec(type="duckdb", path=str(path), max_memory=MAX_MEMORY))
    return Live("sql", src, "SELECT count(*) FROM Genre", [(25,)], lambda: _sha(path),
                "SELECT current_setting('threads'), current_setting('memory_limit'), "
                "current_setting('enable_external_access')")


def sqlalchemy(request: pytest.FixtureRequest, tmp: Path) -> Live:
    server = request.getfixturevalue("postgres_server")
    src = open_source("walls", _spec(type="sqlalchemy", url=server.readonly_url()))
    return Live("sql", src, "SELECT count(*) FROM Genre", [(25,)], server.checksum,
                "SELECT current_setting('work_mem'), current_setting('search_path'), "
                "current_setting('statement_timeout')")


def spider_schema(request: pytest.FixtureRequest, tmp: Path) -> Live:
    shared = request.getfixturevalue("shared_data")
    tables = shared / "spider" / "tables.json"
    src = open_source("walls", {"type": "spider-schema", "tables": str(tables),
                                "db_id": "concert_singer"})
    return Live("sql", src, None, None, lambda: _sha(tables))


def _benign_check(module: str) -> Callable[[pytest.MonkeyPatch], None]:
    """The SPARQL guard of ``module`` answering every text as it answers a plain SELECT: the
    hostile text then reaches the engine."""
    def unguard(monkeypatch: pytest.MonkeyPatch) -> None:
        import importlib

        mod = importlib.import_module(module)
        real = mod.check_query
        monkeypatch.setattr(mod, "check_query", lambda query, **kw: real(
            "SELECT * WHERE { ?s ?p ?o }", **{k: v for k, v in kw.items() if k != "graphs"}))
    return unguard


def rdf(request: pytest.FixtureRequest, tmp: Path) -> Live:
    path = _copy(EXAMPLE / "soda_brick.ttl", tmp)
    src = open_source("walls", _spec(type="rdf", path=str(path), max_memory=MAX_MEMORY))
    count = "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }"
    before = src.execute(count).rows
    return Live("sparql", src, count, before,
                lambda: (_sha(path), src.execute(count).rows),
                unguard=_benign_check("pytest_queryeval.sources.rdf"))


def sparql(request: pytest.FixtureRequest, tmp: Path) -> Live:
    server = request.getfixturevalue("oxigraph_endpoint")
    src = open_source("walls", _spec(type="sparql", endpoint=server.query_url, retries=0))
    count = "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }"
    return Live("sparql", src, count, src.execute(count).rows,
                lambda: (server.triple_count(), server.dump_sha256()),
                unguard=_benign_check("pytest_queryeval.sources.sparql"))


def _no_cypher_guard(name: str) -> Callable[[pytest.MonkeyPatch], None]:
    def unguard(monkeypatch: pytest.MonkeyPatch) -> None:
        from pytest_queryeval.cypher import guard

        monkeypatch.setattr(guard, name, lambda query: None)
    return unguard


def ladybug(request: pytest.FixtureRequest, tmp: Path) -> Live:
    pytest.importorskip("ladybug")
    path = _copy(EXAMPLE / "movies.cypher", tmp)
    src = open_source("walls", _spec(type="ladybug", path=str(path)))
    count = "MATCH (n) OPTIONAL MATCH (n)-[r]->() RETURN count(DISTINCT n), count(r)"
    return Live("cypher", src, count, src.execute(count).rows,
                lambda: (_sha(path), src.execute(count).rows),
                "CALL current_setting('threads') RETURN *", _no_cypher_guard("check"),
                cleanup=[src.close])


def bolt(request: pytest.FixtureRequest, tmp: Path) -> Live:
    server = request.getfixturevalue("bolt_server")
    server.unstick()
    src = open_source("walls", _spec(type="bolt", url=server.url))
    count = "MATCH (n) OPTIONAL MATCH (n)-[r]->() RETURN count(DISTINCT n), count(r)"

    def state() -> object:
        server.unstick()
        return server.count()
    return Live("cypher", src, count, [tuple(server.count())], state,
                unguard=_no_cypher_guard("check_server"), cleanup=[src.close])


#: How to build a live instance of each registered type.
LIVE: dict[str, Callable[[pytest.FixtureRequest, Path], Live]] = {
    "sqlite": sqlite, "duckdb": duckdb, "sqlalchemy": sqlalchemy,
    "spider-schema": spider_schema, "rdf": rdf, "sparql": sparql,
    "ladybug": ladybug, "bolt": bolt,
}

#: The markers of the server fixtures a type's live instance starts (``-m "not postgres"``
#: deselects it with the other tests of that server).
SERVER_MARKS: dict[str, str] = {"sqlalchemy": "postgres", "sparql": "oxigraph"}

#: Registered types no live instance can be built of here, with why: the corpus reports them
#: skipped with this reason (a type in neither table fails).
NOT_LIVE: dict[str, str] = {}
