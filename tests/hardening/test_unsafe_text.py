"""Unsafe characters from suites and predictions: a case id with a lone surrogate is a located
error for that case only (it crashed pytest, and the next file's case failed with a wrong
error), and terminal escape codes, other control characters and lone surrogates in predictions
and results never reach the console raw; every report is still written and parses (junit XML
forbids most control characters)."""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import by_id, check_all_reports, no_traceback, run_with_all_reports

ESCAPES = "\x1b[2J\x1b]0;pwned\x07\x1b[31mred\x9b"

SUITE_A = r"""kind: sql
datasource: local
thresholds: {execution_accuracy: 1.0}
cases:
  - id: "x\ud800"
    gold: SELECT 1
    predicted: SELECT 1
  - id: escapes
    gold: SELECT 1
    predicted: "SELECT '\e[2J\e]0;pwned\a\e[31mred\x9b' AS x"
  - id: surrogate-in-prediction
    gold: SELECT 1
    predicted: "SELECT 'a\ud800b' AS x"
"""
SUITE_B = """kind: sql
datasource: local
thresholds: {execution_accuracy: 1.0}
cases:
  - id: next-file
    gold: SELECT 1
    predicted: SELECT 1
"""


def test_unsafe_ids_and_escape_codes(suite: pytest.Pytester, chinook_copy: Path) -> None:
    (suite.path / "queryeval.yaml").write_text(
        "datasources:\n  local: {type: sqlite, path: chinook.sqlite}\n")
    (suite.path / "test_a.yaml").write_text(SUITE_A)
    (suite.path / "test_b.yaml").write_text(SUITE_B)
    result, report = run_with_all_reports(suite, "-rA", "-vv", subprocess=True)
    no_traceback(result)
    recs = by_id(report)
    assert set(recs) == {"x\\ud800", "escapes", "surrogate-in-prediction", "next-file"}
    bad_id = recs["x\\ud800"]
    assert bad_id["outcome"] == "error"
    assert bad_id["error"] == ("test_a.yaml:5: cases[0].id: must not contain '::', control "
                               "characters or lone surrogates")
    assert recs["next-file"]["outcome"] == "passed"
    assert recs["escapes"]["outcome"] == "failed"
    assert recs["surrogate-in-prediction"]["outcome"] in ("failed", "error")
    result.assert_outcomes(passed=1, failed=3)
    texts = check_all_reports(suite.path, list(recs))
    terminal = result.stdout.str() + result.stderr.str()
    for name, text in {**texts, "terminal": terminal}.items():
        if name in ("json", "xlsx"):
            continue  # JSON escapes them itself; the workbook is checked by openpyxl above
        assert "\x1b" not in text and "\x07" not in text and "\x9b" not in text, name
    assert "\\x1b[2J" in terminal, "the escape codes are shown, escaped"
