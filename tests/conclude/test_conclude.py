"""``conclude/__init__.py`` on its own: the run fields a report's end writes, from records."""

from __future__ import annotations

import hashlib

import pytest

from pytest_queryeval.conclude import interrupt_reason, interrupted_report, run_settings, suite_key


def test_suite_key_names_a_partial_run_s_ids() -> None:
    digest = hashlib.sha256(b"a\nb\nc").hexdigest()[:32]
    assert suite_key(["c", "a", "b"], 3) == {"suite": {"cases": 3, "digest": digest}}
    assert suite_key(["c", "a", "b"], 2) == {"suite": {"cases": 3, "digest": digest},
                                             "suite_ids": ["a", "b", "c"]}
    assert suite_key(None, 0) == {}


def test_run_settings_per_kind_lists_values_that_differ() -> None:
    records = [{"kind": "sql", "settings": {"order": "ignore", "tol": 0.1}},
               {"kind": "sql", "settings": {"order": "strict", "tol": 0.1}},
               {"kind": "sdmx"}]
    assert run_settings(records) == {
        "sql": {"order": ['"ignore"', '"strict"'], "tol": 0.1}}


@pytest.mark.parametrize(("exc", "reason"), [
    (None, "interrupted"),
    (KeyboardInterrupt(), "KeyboardInterrupt: Ctrl-C or SIGINT"),
    (RuntimeError("disk full"), "RuntimeError: disk full"),
    (ValueError(), "ValueError"),
])
def test_interrupt_reason(exc: BaseException | None, reason: str) -> None:
    assert interrupt_reason(exc) == reason


def test_an_interrupted_report_has_no_case_and_says_why() -> None:
    report = interrupted_report({"exitstatus": 2}, "pytest.exit: stop")
    assert report["cases"] == []
    assert report["run"] == {"exitstatus": 2, "interrupted": True,
                             "interrupt_reason": "pytest.exit: stop", "settings": {}}
    assert report["gates"] == []
