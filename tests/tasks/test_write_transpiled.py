"""``--queryeval-write-transpiled`` (issue 28 item 6): the gold audit writes a transpiled gold
whose result matched the SQLite gold's into its case file as the dialect's explicit entry, on a
real SQLite Chinook file and a real DuckDB file; mismatching and unchecked ones are listed and
never written, and the rest of the file (comments, order, quoting) is left as it was."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.support import write_suite
from tests.tasks.test_dialects_fanout import CHINOOK, duckdb_copy, report

#: A case file as a person writes it: comments, flow and block mappings, quoting.
CASES = """\
# Rock counts, written once for SQLite
kind: sql
cases:
  - id: rock   # the plain one
    datasource: [chinook, duck]
    transpile: {from: sqlite}
    gold:
      sqlite: SELECT count(*) FROM Track WHERE GenreId = 1  # checked by hand
  # LIKE ignores case on SQLite only
  - id: like
    datasource: [chinook, duck]
    transpile: {from: sqlite}
    gold: {sqlite: "SELECT count(*) FROM Genre WHERE Name LIKE 'rock%'"}
  - id: alone
    datasource: [duck]
    transpile: {from: sqlite}
    gold: {sqlite: 'SELECT count(*) FROM Genre'}
  - id: flow
    datasource: [chinook, duck]
    transpile: {from: sqlite}
    gold: {sqlite: [SELECT Name FROM Genre WHERE GenreId = 1, SELECT 'Rock']}
"""


@pytest.fixture
def transpile_suite(pytester: pytest.Pytester) -> pytest.Pytester:
    shutil.copyfile(CHINOOK, pytester.path / "chinook.sqlite")
    duckdb_copy(pytester.path / "chinook.duckdb")
    write_suite(pytester.path, {"datasources": {
        "chinook": {"type": "sqlite", "path": "chinook.sqlite"},
        "duck": {"type": "duckdb", "path": "chinook.duckdb"}}}, {"test_rock.yaml": CASES})
    return pytester


def load(path: Path) -> Any:
    from pytest_queryeval.suite.yamlload import load_file, plain

    return plain(load_file(path))


def test_a_checked_transpile_is_written_and_the_others_are_listed(
        transpile_suite: pytest.Pytester) -> None:
    path = transpile_suite.path / "test_rock.yaml"
    os.chmod(path, 0o640)
    before = load(path)
    result = transpile_suite.runpytest("--queryeval-json=r.json", "-p", "no:cacheprovider",
                             "--queryeval-audit-golds", "--queryeval-write-transpiled")
    text = path.read_text()
    assert text == CASES.replace(
        "      sqlite: SELECT count(*) FROM Track WHERE GenreId = 1  # checked by hand\n",
        "      sqlite: SELECT count(*) FROM Track WHERE GenreId = 1  # checked by hand\n"
        "      duckdb: SELECT COUNT(*) FROM Track WHERE GenreId = 1\n").replace(
        "    gold: {sqlite: [SELECT Name FROM Genre WHERE GenreId = 1, SELECT 'Rock']}\n",
        "    gold: {sqlite: [SELECT Name FROM Genre WHERE GenreId = 1, SELECT 'Rock'], duckdb: "
        "[\"SELECT Name FROM Genre WHERE GenreId = 1\", \"SELECT 'Rock'\"]}\n")
    after = load(path)
    before["cases"][0]["gold"]["duckdb"] = "SELECT COUNT(*) FROM Track WHERE GenreId = 1"
    before["cases"][3]["gold"]["duckdb"] = ["SELECT Name FROM Genre WHERE GenreId = 1",
                                            "SELECT 'Rock'"]
    assert after == before
    assert os.stat(path).st_mode & 0o777 == 0o640

    written = report(transpile_suite.path / "r.json")["audit"]["transpiled"]
    assert [(i["id"], i["line"], i["dialect"], i["items"]) for i in written["written"]] == [
        ("rock", 4, "duckdb", ["rock[duck]"]), ("flow", 18, "duckdb", ["flow[duck]"])]
    assert [(i["id"], i["dialect"], i["reason"]) for i in written["not_written"]] == [
        ("like", "duckdb", "its result differs from the sqlite gold's (transpile-mismatch)"),
        ("alone", "duckdb", "no sqlite datasource to compare its result with "
                            "(transpile-unchecked)")]
    result.stdout.fnmatch_lines([
        "transpiled golds written into their case files: 2, not written: 2",
        "  written     test_rock.yaml:4 rock: gold.duckdb",
        "  written     test_rock.yaml:18 flow: gold.duckdb",
        "  not written test_rock.yaml:10 like: gold.duckdb: its result differs from the sqlite "
        "gold's (transpile-mismatch)",
        "  not written test_rock.yaml:14 alone: gold.duckdb: no sqlite datasource *"])
    assert result.ret == 1  # the mismatch is still an error finding

    # the written golds are explicit now: a second audit transpiles only the refused ones
    transpile_suite.runpytest("--queryeval-json=r2.json", "-p", "no:cacheprovider",
                    "--queryeval-audit-golds", "--queryeval-write-transpiled")
    assert path.read_text() == text
    cases = {c["id"]: c for c in report(transpile_suite.path / "r2.json")["cases"]}
    assert "transpiled" not in cases["rock[duck]"]["details"]["audit"]
    again = report(transpile_suite.path / "r2.json")["audit"]["transpiled"]
    assert again["written"] == [] and len(again["not_written"]) == 2


def test_a_json_case_file_stays_json(transpile_suite: pytest.Pytester) -> None:
    path = transpile_suite.path / "test_rock.yaml"
    path.write_text(json.dumps({"kind": "sql", "cases": [
        {"id": "rock", "datasource": ["chinook", "duck"], "transpile": {"from": "sqlite"},
         "gold": {"sqlite": "SELECT count(*) FROM Track WHERE GenreId = 1"}}]}, indent=1))
    result = transpile_suite.runpytest("-p", "no:cacheprovider", "--queryeval-audit-golds",
                             "--queryeval-write-transpiled")
    assert result.ret == 0
    assert json.loads(path.read_text())["cases"][0]["gold"] == {
        "sqlite": "SELECT count(*) FROM Track WHERE GenreId = 1",
        "duckdb": "SELECT COUNT(*) FROM Track WHERE GenreId = 1"}


def test_a_gold_edited_during_the_run_is_not_overwritten(transpile_suite: pytest.Pytester) -> None:
    """The file is read again at the end: an entry written after collection wins."""
    path = transpile_suite.path / "test_rock.yaml"
    transpile_suite.makeconftest(f"""
import pathlib
def pytest_collection_finish(session):
    p = pathlib.Path({str(path)!r})
    p.write_text(p.read_text().replace(
        "  # checked by hand", "\\n      duckdb: SELECT 42"))
""")
    result = transpile_suite.runpytest("--queryeval-json=r.json", "-p", "no:cacheprovider",
                             "--queryeval-audit-golds", "--queryeval-write-transpiled")
    assert "duckdb: SELECT 42" in path.read_text()
    assert "SELECT COUNT(*) FROM Track" not in path.read_text()
    refused = report(transpile_suite.path / "r.json")["audit"]["transpiled"]["not_written"]
    assert ("rock", "the case already has a duckdb gold") in {
        (i["id"], i["reason"]) for i in refused}
    assert result.ret == 1


def test_the_option_needs_the_audit(transpile_suite: pytest.Pytester) -> None:
    result = transpile_suite.runpytest("-p", "no:cacheprovider", "--queryeval-write-transpiled")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*invalid options:*", "*--queryeval-write-transpiled needs "
                                 "--queryeval-audit-golds*"])
    assert (transpile_suite.path / "test_rock.yaml").read_text() == CASES
