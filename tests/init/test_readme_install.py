"""Issue 44 item 4: the README's first-suite words, followed in an empty virtual environment.

The README says to install the package from the clone (``pip install /path/to/clone``; the
name is not on the package index), then ``queryeval init --datasource ... --dir ...`` and
``pytest`` in that folder. This test does exactly that, offline:

* a fresh venv (``python -m venv --without-pip``; ``pip --python VENV`` installs into it, so the
  venv's own bundled setuptools, older than the ``setuptools>=68`` the build needs, plays no
  part);
* the package's dependencies cannot be downloaded here, so the venv sees those of the running
  environment through a ``.pth`` file naming a folder of links to its site-packages entries,
  every ``pytest_queryeval`` entry left out (the development install must not answer for the
  one under test); ``--no-deps --no-build-isolation`` then installs the clone with no network;
* the clone is a copy of the repository's source (the build writes ``build/`` and an
  ``egg-info`` beside the sources it is given), installed by its path as the README says;
* ``PYTHONPATH`` is removed, and the test checks that the venv imports the installed copy.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DB = REPO / "example_suite" / "data" / "chinook.sqlite"


def _run(argv: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=600,
                          check=False)


@pytest.mark.slow
def test_readme_install_then_init_then_pytest_in_an_empty_venv(tmp_path):
    readme = (REPO / "README.md").read_text()
    first = readme.split("## Your first suite", 1)[1].split("\n## ", 1)[0]
    assert "pip install /path/to/pytest-queryeval" in first
    assert "queryeval init --datasource shop.db --dir shop-suite" in first
    assert "pip install pytest-queryeval" not in first

    clone = tmp_path / "pytest-queryeval"
    shutil.copytree(REPO, clone, ignore=shutil.ignore_patterns(
        ".git", ".venv", "tests", "bench", "example_suite", "docs", "__pycache__", "*.pyc",
        ".pytest_cache", ".mypy_cache", ".ruff_cache", "build", "*.egg-info"))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; "
                                "print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    deps = tmp_path / "deps"
    deps.mkdir()
    for entry in Path(sysconfig.get_paths()["purelib"]).iterdir():
        low = entry.name.lower()
        if "pytest_queryeval" in low or "pytest-queryeval" in low or low.endswith(".pth"):
            continue
        (deps / entry.name).symlink_to(entry)
    (site / "deps.pth").write_text(f"{deps}\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env["PIP_NO_INDEX"] = "1"

    install = _run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q",
                    "--no-deps", "--no-build-isolation", str(clone)], tmp_path, env)
    assert install.returncode == 0, install.stderr
    where = _run([str(python), "-c", "import pytest_queryeval; print(pytest_queryeval.__file__)"],
                 tmp_path, env)
    assert where.stdout.strip().startswith(str(venv)), where.stdout + where.stderr

    work = tmp_path / "project"
    work.mkdir()
    shutil.copyfile(DB, work / "shop.db")
    init = _run([str(venv / "bin" / "queryeval"), "init", "--datasource", "shop.db",
                 "--dir", "shop-suite"], work, env)
    assert init.returncode == 0, init.stderr
    run = _run([str(python), "-m", "pytest", "-p", "no:randomly", "-p", "no:cacheprovider"],
               work / "shop-suite", env)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert "3 passed" in run.stdout
    assert "queryeval: PASSED" in run.stdout
