"""The walls as a contract of the registry (issue 58 item 8): the shared hostile corpus
(:mod:`.corpus`) runs against every registered datasource type, built-in or registered through
``pytest_queryeval_source_types``, parametrized over the registry at collection, so a new type
inherits these tests. Each category expects exactly what the type's ``walls`` declare: a wall
it holds must hold (a breach fails), a wall it declares it cannot hold is an expected failure
(strict: when the wall starts to hold, the declaration must say so), not run when running it
could crash the run or change the shared data.

Before: no type declared its walls; ``type: ladybug`` ran in the pytest process, where a list
literal nested 3,000 deep killed the run with a segfault and ``WITH * LOAD FROM
'/etc/passwd'`` returned the file, with nothing warning a suite that used it.
"""

from __future__ import annotations

import contextlib
import json
import resource
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_queryeval.errors import QueryEvalError
from pytest_queryeval.sources import source_types
from pytest_queryeval.sources.sqlguard import GUARD_TIMEOUT
from pytest_queryeval.sources.walls import Walls

from .conftest import registered
from .corpus import families
from .live import LIVE, TIMEOUT, Live

#: Seconds a hostile query may take to end: its timeout, the SQL guard's own parse deadline
#: (a parse in a worker, killed at it), and a killed worker's restart or a graph's reload.
LIMIT = TIMEOUT + GUARD_TIMEOUT + 5.0
#: Seconds the honest query after a category may run: a next case's own timeout (30 s by
#: default), not the hostile queries' 1 s, which a rehearsal copy restarted after a crash
#: overran on a loaded machine ("the honest query after them: timeout"). A server still busy
#: with a hostile query (issue 58 item 4: minutes) still fails it.
HONEST_TIMEOUT = 10.0
#: Seconds the runaway of the ``process`` check runs.
RUNAWAY = 3.0
#: How much the pytest process may grow while a category runs.
GROWTH = 256 * 1024 * 1024


@pytest.fixture(scope="module")
def canary(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A host file whose name and content carry a token, and a path never to be created."""
    folder = tmp_path_factory.mktemp("canary")
    token = f"canary{time.time_ns()}"  # in the content only: a reason may name the path
    path = folder / "host-file.csv"
    path.write_text(f'<http://example.org/{token}> <http://example.org/p> "{token}" .\n',
                    encoding="utf-8")
    return {"file": str(path), "dir": str(folder), "out": str(folder / "out-pwned"),
            "token": token}


_LIVES: dict[str, Live] = {}


@pytest.fixture
def live(type_name: str, request: pytest.FixtureRequest,
         tmp_path_factory: pytest.TempPathFactory) -> Live:
    """One instance per type for the module (built on first use, closed at its end)."""
    if type_name not in LIVE:
        pytest.fail(f"type {type_name!r} is registered but has no live instance in "
                    "tests/walls/live.py LIVE and no reason in NOT_LIVE")
    if type_name not in _LIVES:
        _LIVES[type_name] = LIVE[type_name](request, tmp_path_factory.mktemp(type_name))
    return _LIVES[type_name]


@pytest.fixture(scope="module", autouse=True)
def _registry(request: pytest.FixtureRequest) -> Iterator[None]:
    """The hook's types registered as a run that uses them has them (this outer session's
    plugin sleeps), and the live instances closed at the end."""
    from pytest_queryeval.sources import register_type, unregister_type

    added = [name for name in registered(request.config) if name not in source_types()]
    for name in added:
        register_type(name, registered(request.config)[name])
    yield
    for name in added:
        unregister_type(name)
    while _LIVES:
        item = _LIVES.popitem()[1]
        for close in item.cleanup:
            with contextlib.suppress(Exception):
                close()


def _queries(live: Live, category: str, canary: dict[str, str]) -> list[str]:
    return [q.replace("{file}", canary["file"]).replace("{dir}", canary["dir"])
            .replace("{out}", canary["out"]) for q in families()[live.family][category]]


def _run(live: Live, query: str, *, trusted: bool = False,
         timeout: float = TIMEOUT) -> tuple[str, Any, float]:
    """``("result", table, seconds)`` or ``("error", reason, seconds)``; any other
    exception is a breach (it would be a traceback in a user's run)."""
    start = time.monotonic()
    try:
        table = live.source.execute(query, timeout=timeout, trusted=trusted)
    except QueryEvalError as exc:
        return "error", exc.reason(), time.monotonic() - start
    return "result", table, time.monotonic() - start


def _text(outcome: Any) -> str:
    if isinstance(outcome, str):
        return outcome
    return json.dumps([outcome.columns, [list(r) for r in outcome.rows]], default=str)


def _breaches(live: Live, category: str, queries: list[str], canary: dict[str, str],
              trusted: bool) -> list[str]:
    out = []
    for query in queries:
        kind, outcome, seconds = _run(live, query, trusted=trusted)
        shown = query[:90]
        # a deep text is a wall's matter when it crashes, runs past the limit or grows the
        # process (checked below and in test_wall); an engine that answers it within the
        # limit (PostgreSQL evaluates 2,000 nested scalar subqueries) breaks no wall
        if kind == "result" and category in ("writes", "engine_writes", "crash"):
            out.append(f"{shown!r} answered {_text(outcome)[:200]}")
        if kind == "error" and not outcome.split(":", 1)[-1].strip():
            out.append(f"{shown!r} ended in an error without a reason")
        if canary["token"] in _text(outcome):
            out.append(f"{shown!r} showed the host file: {_text(outcome)[:200]}")
        if Path(canary["out"]).exists():
            out.append(f"{shown!r} created {canary['out']}")
        if seconds > LIMIT:
            out.append(f"{shown!r} ran {seconds:.1f} s, past the limit ({LIMIT:g} s)")
    return out


def _max_rss() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def test_wall(type_name: str, category: str, live: Live, canary: dict[str, str],
              monkeypatch: pytest.MonkeyPatch) -> None:
    walls = source_types()[type_name].walls
    assert walls is not None, f"type {type_name!r} declares no walls"
    before, settings = live.state(), _settings(live)
    trusted = category == "engine_writes"
    if trusted and live.unguard is not None:
        live.unguard(monkeypatch)
    rss = _max_rss()
    breaches = _breaches(live, category, _queries(live, category, canary), canary, trusted)
    monkeypatch.undo()
    if category == "huge_value" and _max_rss() - rss > GROWTH:
        breaches.append(f"the pytest process grew by {(_max_rss() - rss) >> 20} MiB")
    if category == "crash" and walls.holds("process"):
        breaches += _runaway_elsewhere(live, type_name)
    if live.honest is not None:
        kind, outcome, _ = _run(live, live.honest, timeout=HONEST_TIMEOUT)
        if kind != "result" or [tuple(r) for r in outcome.rows] != live.answer:
            breaches.append(f"the honest query after them: {_text(outcome)[:200]}")
    if live.state() != before:
        breaches.append("the data changed")
    if _settings(live) != settings:
        breaches.append(f"the settings changed: {settings} -> {_settings(live)}")
    assert not breaches, "\n".join(breaches)


def _settings(live: Live) -> object:
    if live.settings is None:
        return None
    _, outcome, _ = _run(live, live.settings, trusted=True)
    return _text(outcome)


def _runaway_cpu(live: Live) -> tuple[float, float]:
    """Seconds of the pytest process's CPU, and of the clock, a :data:`RUNAWAY`-second
    runaway of the family takes."""
    runaway = families()[live.family]["huge_range"][0]
    cpu = time.process_time()
    start = time.monotonic()
    with contextlib.suppress(QueryEvalError):
        live.source.execute(runaway, timeout=RUNAWAY)
    return time.process_time() - cpu, time.monotonic() - start


def _runaway_elsewhere(live: Live, type_name: str) -> list[str]:
    """The ``process`` wall: a runaway query burns no CPU of the pytest process. An engine in
    this process spins all of :data:`RUNAWAY` (1 s of CPU a second idle, 0.1-0.2 s on a
    machine whose two cores ran eight test sessions), a worker's parent only waits (0.002 s a
    second) plus what it spends once (a killed worker's respawn, a garbage collection: up to
    0.1 s)."""
    used, seconds = _runaway_cpu(live)
    if used > RUNAWAY / 10:
        return [f"a runaway used {used:.2f} s of the pytest process's CPU in {seconds:.1f} s: "
                "its engine runs in this process"]
    return []


#: What the agent's tools are given of the corpus: the categories every type must hold and
#: the host files where the type declares that wall (a tool runs a query as a prediction does).
AGENT_CATEGORIES = ("writes", "config", "files")


def _tool_calls(live: Live, walls: Walls, canary: dict[str, str]) -> list[tuple[str, str, str]]:
    """``(category, tool, arguments)``: each query to ``run_query``; the writes, the host
    file's path and a path out of the folder as the table name of the tools that take one
    (with a limit far past any cap)."""
    from pytest_queryeval.predict.agent import AGENT_TOOLS, FINAL_TOOLS

    calls = []
    unfinished = ("unfinished_writes",) if walls.holds("process") and \
        "unfinished_writes" in families()[live.family] else ()
    for category in (*AGENT_CATEGORIES, *unfinished):
        if category == "files" and not walls.holds("file_access"):
            continue  # declared: the expected failure is test_wall's
        calls += [(category, "run_query", json.dumps({"query": query}))
                  for query in _queries(live, category, canary)]
    tables = [*_queries(live, "writes", canary), canary["file"], "../" * 12 + "etc/passwd"]
    for tool in (t for t in AGENT_TOOLS if t not in FINAL_TOOLS and t != "run_query"):
        calls += [("tables", tool, json.dumps({"table": table, "limit": 10 ** 12}))
                  for table in tables]
    return calls


def test_agent_tools(type_name: str, live: Live, canary: dict[str, str]) -> None:
    """The corpus through every tool of an agent (``predict/agent.py``: ``get_schema``,
    ``sample_rows``, ``run_query``), as a model's tool call sends it: every answer is the
    tool's text (an error too), a write never runs, a host file never shows, the data and the
    settings are unchanged."""
    from pytest_queryeval.predict.agent import AgentLoop, agent_spec
    from tests.support import make_case

    walls = source_types()[type_name].walls
    assert walls is not None, f"type {type_name!r} declares no walls"
    spec = agent_spec({"tools": ["get_schema", "sample_rows", "run_query"]})
    assert spec is not None
    case = make_case(source_spec={"type": type_name}, datasource="walls")

    class Context:
        def source(self, case: object) -> Any:
            return live.source

    loop = AgentLoop(spec, case, Context(), lambda *a, **k: (b"", 0.0, {}),  # type: ignore[arg-type]
                     "stand-in: no model is asked")
    before, settings = live.state(), _settings(live)
    breaches = []
    for category, tool, arguments in _tool_calls(live, walls, canary):
        counted = loop.ledger.write_attempts
        text = loop._serve(tool, arguments)
        shown = f"{tool}({arguments[:90]})"
        if category in ("writes", "unfinished_writes") and tool == "run_query" and \
                not text.startswith("error: "):
            breaches.append(f"{shown} answered {text[:200]}")
        if category == "unfinished_writes" and loop.ledger.write_attempts != counted + 1:
            breaches.append(f"{shown} counted {loop.ledger.write_attempts - counted} write "
                            f"attempts, not 1 ({text[:120]})")
        if canary["token"] in text or Path(canary["out"]).exists():
            breaches.append(f"{shown} reached the host file: {text[:200]}")
    assert loop.used.queries, "the tools ran nothing"
    assert live.state() == before, "the data changed"
    assert _settings(live) == settings, "the settings changed"
    assert not breaches, "\n".join(breaches)


def test_the_process_check_tells_the_pytest_process_from_a_worker(tmp_path: Path) -> None:
    """The ``process`` wall's check is not vacuous: the same SQLite runaway burns the pytest
    process's CPU with ``isolation: thread`` (which gives the wall up), several times what it
    costs with a worker, which the check lets through."""
    from pytest_queryeval.sources import open_source

    from .live import EXAMPLE

    path = tmp_path / "chinook.sqlite"
    path.write_bytes((EXAMPLE / "chinook.sqlite").read_bytes())
    used = {}
    for isolation in ("process", "thread"):
        source = open_source("walls", {"type": "sqlite", "path": str(path), "timeout": TIMEOUT,
                                       "isolation": isolation})
        live = Live("sql", source, None, None, lambda: None)
        try:
            source.execute("SELECT 1")  # the worker started: a run's first query, not this
            used[isolation] = _runaway_cpu(live)[0]
            if isolation == "process":
                assert _runaway_elsewhere(live, "sqlite") == []
        finally:
            source.close()
    assert used["thread"] > 3 * used["process"] + 0.05, used
    walls = source_types()["sqlite"].walls
    assert walls is not None
    assert walls.holds("process") and not walls.of_spec({"isolation": "thread"}).holds("process")
