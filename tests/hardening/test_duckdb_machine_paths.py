"""DuckDB shows this machine's paths to a query; results, messages and reports do not.

``current_setting('temp_directory')``, ``duckdb_settings()`` and the refusal of
``duckdb_extensions()`` ("Cannot access directory /root/.duckdb/extensions/...") carried the
spill directory and the home directory into committed reports. Real DuckDB, both isolations.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_queryeval.errors import QueryRefused
from pytest_queryeval.sources import open_source
from pytest_queryeval.sources.duckdb import HOME_LABEL, TEMP_LABEL, DuckdbSource

duckdb = pytest.importorskip("duckdb")

HOME = os.path.expanduser("~")


def _build(path: Path) -> Path:
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE t (a INTEGER, p VARCHAR)")
    con.execute("INSERT INTO t VALUES (1, ?), (2, ?), (3, '/rootless/x')",
                [HOME + "/data.csv", HOME + "x/y"])
    con.close()
    return path


@pytest.fixture(params=["process", "thread"])
def source(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[DuckdbSource]:
    src = open_source("d", {"type": "duckdb", "path": str(_build(tmp_path / "d.duckdb")),
                            "isolation": request.param})
    assert isinstance(src, DuckdbSource)
    yield src
    src.close()


def _strings(rows: list[tuple[object, ...]]) -> list[str]:
    return [v for row in rows for v in row if isinstance(v, str)]


def test_the_temp_directory_setting_is_a_label(source: DuckdbSource) -> None:
    """A gold's read of it (trusted); a prediction's is refused (the thirty-ninth re-probe's
    H2: ``upper(current_setting('allowed_paths'))`` carried the database's path past the
    scrub), as is every read of a setting named by anything but a plain literal."""
    got = source.execute("SELECT current_setting('temp_directory')", trusted=True).rows
    assert got == [(TEMP_LABEL,)]
    for sql in ["SELECT current_setting('temp_directory')",
                "SELECT upper(unnest(current_setting('allowed_paths'))::VARCHAR) AS p",
                "SELECT replace(current_setting('allowed_paths')::VARCHAR, '/', '|') AS p",
                "SELECT current_setting('allowed_' || 'paths')",
                "SELECT * FROM duckdb_temporary_files()"]:
        with pytest.raises(QueryRefused, match=r"host path|file system"):
            source.execute(sql)
    assert source.execute("SELECT current_setting('threads') > 0").rows == [(True,)]


def test_duckdb_settings_show_no_temp_or_home_directory(source: DuckdbSource) -> None:
    with pytest.raises(QueryRefused, match="file system"):
        source.execute("SELECT name, upper(value) FROM duckdb_settings()")
    rows = source.execute("SELECT name, value FROM duckdb_settings()", trusted=True).rows
    values = dict(rows)
    assert values["temp_directory"] == TEMP_LABEL
    assert values["allowed_directories"] == f"[{TEMP_LABEL}/]"
    assert values["secret_directory"] == f"{HOME_LABEL}/.duckdb/stored_secrets"
    assert not [v for v in _strings(rows) if HOME + "/" in v or "queryeval-duckdb-" in v]


def test_the_extensions_refusal_names_no_home_directory(source: DuckdbSource) -> None:
    """A gold reaches the engine's own refusal (a prediction is refused by the guard before:
    tests/agents/test_counts_thirtysixth.py), which names the home directory."""
    with pytest.raises(QueryRefused) as info:
        source.execute("SELECT * FROM duckdb_extensions()", trusted=True)
    message = info.value.reason()
    assert f'Cannot access directory "{HOME_LABEL}/.duckdb/extensions/' in message
    assert HOME + "/" not in message


def test_a_path_is_replaced_only_whole(source: DuckdbSource) -> None:
    """Data that holds the home directory as a path is scrubbed like DuckDB's own paths;
    a longer name that starts like it is data, left alone."""
    rows = source.execute("SELECT a, p FROM t ORDER BY a").rows
    assert rows == [(1, f"{HOME_LABEL}/data.csv"), (2, HOME + "x/y"), (3, "/rootless/x")]


def test_the_json_report_holds_no_machine_path(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nqueryeval_files = test_*.yaml\n")
    _build(pytester.path / "d.duckdb")
    pytester.makefile(".yaml", queryeval="datasources:\n  d: {type: duckdb, path: d.duckdb}\n"
                                         "record_only: true\n")
    cases = [  # (id, gold, predicted): the extensions' refusal by the engine is a gold's
        ("temp", "SELECT current_setting('temp_directory')", "SELECT 1"),
        ("settings", "SELECT name, value FROM duckdb_settings()", "SELECT 1"),
        ("paths", "SELECT 1", "SELECT upper(current_setting('allowed_paths')::VARCHAR)"),
        ("extensions", "SELECT * FROM duckdb_extensions()", "SELECT 1"),
        ("good", "SELECT 1", "SELECT 1"),
    ]
    pytester.makefile(".yaml", test_dd=json.dumps({"kind": "sql", "datasource": "d", "cases": [
        {"id": i, "question": "q", "gold": g, "predicted": p} for i, g, p in cases]}))
    result = pytester.runpytest("--queryeval-json=r.json")
    result.assert_outcomes(passed=3, failed=2)  # the gold's refusal, and the refused prediction
    text = (pytester.path / "r.json").read_text()
    assert TEMP_LABEL in text and f"{HOME_LABEL}/.duckdb/extensions" in text
    assert HOME + "/" not in text
    assert "queryeval-duckdb-" not in text
    assert str(pytester.path) not in text
