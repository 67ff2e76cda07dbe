"""Helpers for the hardening tests: suites written into a pytester directory, run through the
real plugin, and the reports read back."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.plugin.conftest import dump

__all__ = ["dump", "read_report", "run_suite"]


@pytest.fixture
def suite(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeini("[pytest]\nqueryeval_files = test_*.yaml\n")
    return pytester


@pytest.fixture
def chinook_copy(shared_data: Path, pytester: pytest.Pytester) -> Path:
    """A private, *writable* copy of Chinook inside the suite: read-only must be proven."""
    dst = pytester.path / "chinook.sqlite"
    shutil.copyfile(shared_data / "chinook" / "Chinook_Sqlite.sqlite", dst)
    dst.chmod(0o644)
    return dst


def read_report(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def run_suite(pytester: pytest.Pytester, *args: str, subprocess: bool = False,
              ) -> tuple[pytest.RunResult, dict[str, Any]]:
    """Run the suite with a JSON report; return the result and the parsed report."""
    report = pytester.path / "report.json"
    if report.exists():
        report.unlink()
    run = pytester.runpytest_subprocess if subprocess else pytester.runpytest
    result = run("--queryeval-json=report.json", *args)
    assert report.is_file(), result.stdout.str()[-3000:]
    return result, read_report(report)


def by_id(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["id"]: c for c in report["cases"]}


def no_traceback(result: pytest.RunResult) -> None:
    text = result.stdout.str() + result.stderr.str()
    assert "Traceback (most recent call last)" not in text, text[-3000:]
    assert "INTERNALERROR" not in text, text[-3000:]
    assert "internal error in" not in text, text[-3000:]
