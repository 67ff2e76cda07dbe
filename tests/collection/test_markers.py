"""Every marker the plugin applies is registered by the plugin, whatever else is installed.

``xdist_group`` (put on every case with a datasource, so pytest-xdist's ``--dist loadgroup``
keeps a datasource on one worker) is registered by pytest-xdist itself; without xdist,
``--strict-markers`` aborted collection and ``-W error`` turned the unknown-mark warning into an
error. These runs are subprocesses with ``-p no:xdist`` so that the project's own pytest-xdist
cannot register the marker for the plugin.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: One SQLite datasource, kind, difficulty and tag marks, skip and xfail: every mark applied.
SUITE = {
    "kind": "sql",
    "datasource": "shop",
    "tags": ["smoke"],
    "thresholds": {"execution_accuracy": 1.0},
    "cases": [
        {"id": "count", "gold": "SELECT count(*) FROM item", "predicted": "SELECT COUNT(*) FROM item"},
        {"id": "wrong", "gold": "SELECT name FROM item WHERE id < 3",
         "predicted": "SELECT name FROM item WHERE id < 2", "xfail": "known gap"},
        {"id": "later", "gold": "SELECT 1", "skip": "not yet"},
    ],
}


def make_suite(path: Path) -> None:
    with sqlite3.connect(path / "shop.sqlite") as db:
        db.execute("CREATE TABLE item (id INTEGER PRIMARY KEY, name TEXT)")
        db.executemany("INSERT INTO item VALUES (?, ?)", [(1, "pen"), (2, "ink"), (3, "nib")])
    db.close()
    (path / "pytest.ini").write_text("[pytest]\nqueryeval_files = test_*.yaml\n")
    (path / "queryeval.yaml").write_text(json.dumps(
        {"datasources": {"shop": {"type": "sqlite", "path": "shop.sqlite"}}}))
    (path / "test_shop.yaml").write_text(json.dumps(SUITE, indent=1))


STRICT = ("--strict-markers", "-W", "error", "-p", "no:cacheprovider", "-rxs")


def test_strict_markers_and_warnings_as_errors_without_xdist(pytester: pytest.Pytester) -> None:
    make_suite(pytester.path)
    result = pytester.runpytest_subprocess("-p", "no:xdist", *STRICT)
    assert "not found in markers configuration option" not in result.stdout.str()
    result.assert_outcomes(passed=1, xfailed=1, skipped=1)
    # the group marker is really on the items (and documented in --markers)
    items = pytester.runpytest_subprocess("-p", "no:xdist", "--markers")
    items.stdout.fnmatch_lines(["@pytest.mark.xdist_group*"])


def test_xdist_group_still_groups_with_xdist(pytester: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    make_suite(pytester.path)
    result = pytester.runpytest_subprocess("-n", "2", "--dist", "loadgroup", *STRICT)
    result.assert_outcomes(passed=1, xfailed=1, skipped=1)


def _run(cmd: list[str], cwd: Path, timeout: float) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTEST_ADDOPTS")}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout, check=False)
    assert proc.returncode == 0, f"{' '.join(cmd)} exited {proc.returncode}:\n" \
                                 f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


@pytest.mark.slow
def test_core_install_only(tmp_path: Path) -> None:
    """A fresh venv with ``pip install pytest-queryeval`` (no extras, no xdist): strict runs pass."""
    src = tmp_path / "src"
    shutil.copytree(ROOT / "src", src / "src",
                    ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copyfile(ROOT / name, src / name)
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True, clear=True).create(env_dir)
    python = env_dir / ("Scripts/python.exe" if sys.platform == "win32" else "bin/python")
    _run([str(python), "-m", "pip", "install", "-q", str(src)], tmp_path, 900)
    listed = _run([str(python), "-m", "pip", "list", "--format=json"], tmp_path, 120)
    names = {p["name"].lower() for p in json.loads(listed.stdout)}
    assert "pytest-queryeval" in names
    assert not names & {"pytest-xdist", "sqlalchemy", "numpy", "sdmx1", "xlsxwriter"}, names
    suite = tmp_path / "suite"
    suite.mkdir()
    make_suite(suite)
    run = _run([str(python), "-m", "pytest", *STRICT], suite, 300)
    assert "1 passed, 1 skipped, 1 xfailed" in run.stdout, run.stdout


def test_a_tag_pytest_refuses_as_a_marker_is_a_located_error(pytester: pytest.Pytester) -> None:
    """Issue 49 item 3: pytest refuses a marker starting with ``_``; such a tag failed the
    collection of every file, it is now its case's located error and the other cases run."""
    make_suite(pytester.path)
    suite = {**SUITE, "tags": None, "cases": [{**SUITE["cases"][0], "tags": ["_x"]},
                                              {**SUITE["cases"][0], "id": "other"}]}
    (pytester.path / "test_shop.yaml").write_text(json.dumps(suite, indent=1))
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, errors=0, failed=1)
    result.stdout.fnmatch_lines(["*test_shop.yaml:*tags: tag '_x' is not a valid marker name*"])
