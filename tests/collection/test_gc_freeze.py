"""Large suites freeze what collection built (gc.freeze) and hand it back at the end."""

from __future__ import annotations

import gc
import json

import pytest

from pytest_queryeval._util import gcpolicy
from tests.sdmx_cases import GDP, MEX, dump, sdmx_case, selection
from tests.support import read_report

CONFTEST = """
import gc
SEEN = []
def pytest_runtest_call(item):
    SEEN.append(gc.get_freeze_count())
def pytest_sessionfinish(session):
    (session.config.rootpath / "frozen.json").write_text(__import__("json").dumps(SEEN))
"""


@pytest.mark.parametrize(("threshold", "frozen"), [(3, True), (100, False)])
def test_collected_objects_are_frozen_for_the_run_and_released(
        suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, threshold: int,
        frozen: bool) -> None:
    monkeypatch.setattr(gcpolicy, "FREEZE_MIN_CASES", threshold)
    suite.makeconftest(CONFTEST)
    suite.makefile(".yaml", queryeval="record_only: true\n")  # about the GC, not a gate
    suite.makefile(".yaml", test_big=dump({"kind": "sdmx", "cases": [
        sdmx_case(f"c{i}", selection(GDP), selection(GDP if i % 2 else MEX)) for i in range(7)]}))
    before = gc.get_freeze_count()
    result = suite.runpytest_inprocess("--queryeval-json=r.json")
    result.assert_outcomes(passed=7)
    seen = json.loads((suite.path / "frozen.json").read_text())
    assert len(seen) == 7
    assert all(n > before for n in seen) is frozen
    assert gc.get_freeze_count() == before  # everything handed back to the GC
    if frozen:  # and frozen again at interpreter exit, where the finalizer would rescan it all
        assert gcpolicy._EXIT_FREEZE == [True]
    report = read_report(suite.path / "r.json")
    assert [c["metrics"]["macro_f1"] for c in report["cases"]] == [0.0, 1.0] * 3 + [0.0]
