"""The walls' declarations (issue 58 item 8): every registered type declares them, a type in
the corpus's registry has a live instance or says why not, a wall a type cannot hold is in its
declaration and in the docs, and a suite on such a type is warned, naming the datasource and
the wall; a suite on a type that holds every wall is not.

Before: no type declared its walls and a suite on ``type: ladybug``, which runs in the pytest
process, was told nothing.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from pytest_queryeval.sources.walls import MEANINGS, Walls, open_walls
from tests.support import run_report, write_suite

from .conftest import registered
from .live import LIVE, NOT_LIVE

ROOT = Path(__file__).resolve().parents[2]
GRAPH = ROOT / "example_suite" / "data" / "movies.cypher"
CHINOOK = ROOT / "example_suite" / "data" / "chinook.sqlite"


def test_every_type_declares_its_walls(type_name: str, request: pytest.FixtureRequest) -> None:
    walls = registered(request.config)[type_name].walls
    assert isinstance(walls, Walls), f"type {type_name!r} declares no walls (SourceType.walls)"
    assert [name for name, _ in walls.items()] == list(MEANINGS)


def test_every_type_is_live_or_says_why(type_name: str) -> None:
    assert type_name in LIVE or NOT_LIVE.get(type_name, "").strip(), (
        f"type {type_name!r}: no live instance in tests/walls/live.py LIVE and no reason in "
        "NOT_LIVE: the hostile corpus would skip it silently")


def _walls_section(doc: str) -> str:
    text = (ROOT / "docs" / doc).read_text(encoding="utf-8")
    match = re.search(r"^## The walls\n(.*?)(?=^## |\Z)", text, re.S | re.M)
    assert match, f"docs/{doc} has no '## The walls' section"
    return match.group(1)


def test_the_docs_state_each_types_walls(type_name: str, request: pytest.FixtureRequest) -> None:
    """docs/architecture.md's table has a row per type naming each wall it cannot hold."""
    walls = registered(request.config)[type_name].walls
    assert walls is not None
    rows = [line for line in _walls_section("architecture.md").splitlines()
            if line.startswith(f"| `{type_name}` |")]
    assert len(rows) == 1, f"docs/architecture.md 'The walls': no row for `{type_name}`"
    cells = [c.strip() for c in rows[0].strip("|").split("|")][1:]
    assert len(cells) == len(MEANINGS)
    for (wall, value), cell in zip(walls.items(), cells, strict=True):
        assert (cell == "yes") == (value is True), f"{type_name}.{wall}: the docs say {cell!r}"


@pytest.mark.parametrize("doc", ["sql-sources.md", "sparql-sources.md", "cypher.md"])
def test_each_family_doc_has_the_walls(doc: str) -> None:
    assert "architecture.md#the-walls" in _walls_section(doc)


def test_a_wall_is_true_or_says_why_it_cannot_hold() -> None:
    assert Walls(process="cannot: in process").unmet() == {"process": "in process"}
    for bad in ("no", "cannot: ", False, ""):
        with pytest.raises(ValueError, match="wall process: True or 'cannot: ' and the reason"):
            Walls(process=bad)  # type: ignore[arg-type]


def test_isolation_thread_gives_up_the_process_and_its_memory_cap() -> None:
    found = open_walls([("chinook", {"type": "sqlite", "isolation": "thread"}),
                        ("chinook", {"type": "sqlite", "isolation": "thread"}),
                        ("other", {"type": "sqlite"})])
    assert [f.message for f in found] == [
        "datasources.chinook.isolation: a sqlite datasource does not hold the wall process (a "
        "process of its own): isolation: thread runs queries in the pytest process",
        "datasources.chinook.isolation: a sqlite datasource does not hold the wall "
        "memory_bound (a memory bound): isolation: thread runs queries in the pytest process"]
    assert {(f.file, f.line) for f in found} == {(None, None)}  # written in no queryeval.yaml


def _ladybug_suite(root: Path) -> None:
    shutil.copyfile(GRAPH, root / "movies.cypher")
    shutil.copyfile(CHINOOK, root / "chinook.sqlite")
    write_suite(root, {"datasources": {
        "movies": {"type": "ladybug", "path": "movies.cypher"},
        "chinook": {"type": "sqlite", "path": "chinook.sqlite"}}}, {
        "test_movies.yaml": {"kind": "cypher", "datasource": "movies", "cases": [
            {"id": "people", "gold": "MATCH (p:Person) RETURN count(p)",
             "predicted": "MATCH (p:Person) RETURN count(p)"}]},
        "test_chinook.yaml": {"kind": "sql", "datasource": "chinook", "cases": [
            {"id": "genres", "gold": "SELECT count(*) FROM Genre",
             "predicted": "SELECT count(*) FROM Genre"}]}})


def test_a_suite_on_a_type_that_cannot_hold_a_wall_is_warned(pytester: pytest.Pytester) -> None:
    """``isolation: thread`` gives up the worker: the process and memory walls (ladybug, the
    first example here, holds every wall since it runs in a worker of its own)."""
    shutil.copyfile(CHINOOK, pytester.path / "chinook.sqlite")
    write_suite(pytester.path, {"datasources": {
        "inproc": {"type": "sqlite", "path": "chinook.sqlite", "isolation": "thread"},
        "chinook": {"type": "sqlite", "path": "chinook.sqlite"}}}, {
        "test_chinook.yaml": {"kind": "sql", "cases": [
            {"id": "genres", "datasource": "inproc", "gold": "SELECT count(*) FROM Genre",
             "predicted": "SELECT count(*) FROM Genre"},
            {"id": "tracks", "datasource": "chinook", "gold": "SELECT count(*) FROM Track",
             "predicted": "SELECT count(*) FROM Track"}]}})
    result, report = run_report(pytester, "-n", "2")
    assert report.outcomes == {"genres": "passed", "tracks": "passed"}
    out = result.stdout.str()
    config = (pytester.path / "queryeval.yaml").read_text(encoding="utf-8").splitlines()
    line = next(n for n, text in enumerate(config, 1) if "thread" in text)
    for wall in ("process", "memory_bound"):
        said = (f"queryeval.yaml:{line}: QueryEvalWarning: datasources.inproc.isolation: ")
        assert said in out and f"the wall {wall}" in out, f"no warning for {wall}:\n{out}"
    for wall in ("read_only", "file_access", "time_limit"):
        assert f"the wall {wall}" not in out
    assert "datasources.chinook" not in out  # sqlite in its worker holds every wall


def test_a_suite_on_types_that_hold_every_wall_is_not_warned(pytester: pytest.Pytester) -> None:
    shutil.copyfile(CHINOOK, pytester.path / "chinook.sqlite")
    write_suite(pytester.path, {"datasources": {
        "chinook": {"type": "sqlite", "path": "chinook.sqlite"}}}, {
        "test_chinook.yaml": {"kind": "sql", "datasource": "chinook", "cases": [
            {"id": "genres", "gold": "SELECT count(*) FROM Genre",
             "predicted": "SELECT count(*) FROM Genre"}]}})
    result, report = run_report(pytester, "-W", "error::pytest_queryeval.errors.QueryEvalWarning")
    assert report.outcomes == {"genres": "passed"}
    assert "does not hold the wall" not in result.stdout.str()


def test_a_type_registered_through_the_hook_is_in_the_corpus(
        request: pytest.FixtureRequest) -> None:
    """A plugin's type is parametrized like a built-in one: derived from DuckDB, it inherits
    DuckDB's walls, and with no live instance and no reason its corpus tests fail, naming the
    tables to fill (``live`` fixture), rather than being skipped."""
    from pytest_queryeval.sources import SourceType
    from pytest_queryeval.sources.duckdb import DuckdbSource

    from .conftest import _wall_marks

    class CsvDirSource(DuckdbSource):
        pass

    class Plugin:
        @pytest.hookimpl
        def pytest_queryeval_source_types(self, config: pytest.Config) -> dict[str, object]:
            return {"csvdir": CsvDirSource}

    plugin = Plugin()
    request.config.pluginmanager.register(plugin, "walls-csvdir")
    try:
        entry = registered(request.config)["csvdir"]
    finally:
        request.config.pluginmanager.unregister(plugin)
    assert isinstance(entry, SourceType) and entry.walls == Walls()
    assert "csvdir" not in LIVE and "csvdir" not in NOT_LIVE
    assert _wall_marks("csvdir", entry.walls, "files") == []


def test_rehearse_false_gives_up_the_time_limit_of_a_bolt_datasource(
        request: pytest.FixtureRequest) -> None:
    """Without the rehearsal a prediction runs on the FalkorDB server itself, which checks its
    timeout between rows only: the time limit inside one expression is the cost bounds'
    estimate (the thirty-third re-probe found two forms it missed, issue 58), so the
    datasource declares it, and a suite is warned at the ``rehearse`` key. The default, and
    ``rehearse: true``, hold it; ``0`` is not ``false``."""
    walls = registered(request.config)["bolt"].walls
    assert walls.holds("time_limit")
    unrehearsed = walls.of_spec({"rehearse": False})
    assert not unrehearsed.holds("time_limit")
    assert unrehearsed.unmet()["time_limit"].startswith("with rehearse: false a prediction runs")
    assert walls.of_spec({"rehearse": True}).holds("time_limit")
    assert walls.of_spec({"rehearse": 0}).holds("time_limit")
    assert {k for k, _ in unrehearsed.items()} == set(MEANINGS)
    assert walls.gave_up({"rehearse": False})["time_limit"][1] == "rehearse"
    for wall in ("process", "read_only", "memory_bound"):  # the copy's walls: the server's
        assert unrehearsed.unmet()[wall].startswith("with rehearse: false"), wall
        assert "copy" not in unrehearsed.unmet()[wall], wall
        assert "copy" in walls.of_spec({}).unmet()[wall] or wall == "memory_bound", wall


def test_a_wall_given_up_by_a_key_names_a_wall() -> None:
    with pytest.raises(ValueError, match="no wall 'speed'"):
        Walls(given_up=(("fast", True, {"speed": "cannot: no"}),))
    with pytest.raises(ValueError, match="wall time_limit: True or 'cannot: ' and the reason"):
        Walls(given_up=(("fast", True, {"time_limit": "no"}),))


def test_a_suite_without_the_rehearsal_is_warned_at_its_key(pytester: pytest.Pytester) -> None:
    """The warning names ``rehearse`` and its line; the server is not reached (a closed
    loopback port): the warning comes before any query."""
    write_suite(pytester.path, {"datasources": {
        "films": {"type": "bolt", "url": "bolt://127.0.0.1:9", "timeout": 2,
                  "rehearse": False}}}, {
        "test_films.yaml": {"kind": "cypher", "datasource": "films", "cases": [
            {"id": "people", "gold": "MATCH (p:Person) RETURN count(p)",
             "predicted": "MATCH (p:Person) RETURN count(p)"}]}})
    result = pytester.runpytest("-p", "no:cacheprovider")
    out = result.stdout.str()
    config = (pytester.path / "queryeval.yaml").read_text(encoding="utf-8").splitlines()
    line = next(n for n, text in enumerate(config, 1) if "rehearse" in text)
    said = f"queryeval.yaml:{line}: QueryEvalWarning: datasources.films.rehearse: "
    assert said in out and "the wall time_limit" in out, out
