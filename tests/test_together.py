"""``tests/together.py``: under ``-n 2``, the tests of an ``xdist_group`` module that share a
module fixture's parameter run on one worker, so the fixture is made once per parameter (with
xdist's plain ``load`` it was made on both workers; ``--dist loadgroup`` does nothing on pytest
9.2, pytest-dev/pytest-xdist#1386)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

CONFTEST = """
import pytest
from tests import together

def pytest_configure(config):
    together.name_the_file(config)

@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    together.write_keys(config, items)

@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    if config.getvalue("dist") != "load":
        return None
    return together.scheduler(config, log)
"""

MODULE = """
import os
import pytest

pytestmark = pytest.mark.xdist_group("heavy")
LOG = {log!r}

@pytest.fixture(scope="module", params=["a", "b", "c"])
def artifact(request):
    return request.param

@pytest.fixture(scope="module")
def runs(artifact):
    with open(LOG, "a") as out:
        out.write(artifact + " " + os.environ["PYTEST_XDIST_WORKER"] + "\\n")
    return artifact

@pytest.mark.parametrize("way", range(6))
def test_way(runs, way):
    pass

def test_same(runs):
    pass
"""

OTHER = """
import pytest

@pytest.mark.parametrize("i", range(30))
def test_other(i):
    pass
"""


def test_a_grouped_module_fixture_is_made_once_per_parameter(pytester: pytest.Pytester,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("xdist")
    log = pytester.path / "setups.txt"
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_heavy=MODULE.format(log=str(log)), test_other=OTHER)
    env_path = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    monkeypatch.setenv("PYTHONPATH", env_path)
    result = pytester.runpytest_subprocess("-n", "2", "-p", "no:randomly", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=3 * 7 + 30)
    setups = sorted(line.split()[0] for line in log.read_text(encoding="utf-8").splitlines())
    assert setups == ["a", "b", "c"], log.read_text(encoding="utf-8")
