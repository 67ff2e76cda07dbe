"""A gate can leave out the cases nobody reviewed (issue 63 item 5): ``reviewed_only: true`` on
a gate bounds the reviewed cases alone, so a freshly mined batch whose observed golds the
model does not repeat fails no gate until a person has confirmed them; gates without it
count every case, as before."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.support import dump, run_report

CHINOOK = Path(__file__).resolve().parents[2] / "example_suite" / "data" / "chinook.sqlite"


def _suite(pytester: pytest.Pytester, gate: dict) -> None:
    shutil.copy(CHINOOK, pytester.path / "chinook.sqlite")
    pytester.makefile(".yaml", queryeval=dump({
        "datasources": {"music": {"type": "sqlite", "path": "chinook.sqlite"}},
        "gates": {"pass_rate": gate}}))
    pytester.makefile(".yaml", test_cases=dump({"kind": "sql", "datasource": "music", "cases": [
        {"id": "reviewed", "question": "How many artists?", "gold": "SELECT count(*) FROM Artist",
         "predicted": "SELECT count(*) FROM Artist"},
        {"id": "mined", "question": "How many albums?", "reviewed": False,
         "gold": "SELECT count(*) FROM Album", "predicted": "SELECT count(*) FROM Artist"},
    ]}))


def test_a_reviewed_only_gate_leaves_the_unreviewed_cases_out(pytester: pytest.Pytester) -> None:
    _suite(pytester, {"min": 1.0, "reviewed_only": True})
    result, report = run_report(pytester, "-p", "no:cacheprovider")
    gate = report["gates"][0]
    assert gate["name"] == "pass_rate[reviewed_only]" and gate["reviewed_only"] is True
    assert gate["cases"] == 1 and gate["value"] == 1.0 and gate["passed"] is True
    # the unreviewed case still runs and is reported (failed), apart
    assert report.by_id["mined"]["outcome"] == "failed"
    result.stdout.fnmatch_lines(["unreviewed: 1 case mined by queryeval mine*",
                                 "gate PASS: pass rate reviewed only = 1.0000 (required >= 1, "
                                 "1 case)"])


def test_a_gate_without_it_counts_every_case(pytester: pytest.Pytester) -> None:
    _suite(pytester, {"min": 1.0})
    _, report = run_report(pytester, "-p", "no:cacheprovider")
    gate = report["gates"][0]
    assert "reviewed_only" not in gate and gate["cases"] == 2 and gate["passed"] is False


def test_reviewed_only_must_be_a_boolean(pytester: pytest.Pytester) -> None:
    _suite(pytester, {"min": 1.0, "reviewed_only": "yes"})
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert "gates.pass_rate.reviewed_only: must be true or false" in result.stdout.str() \
        + result.stderr.str()
