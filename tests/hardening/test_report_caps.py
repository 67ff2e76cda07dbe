"""A large result (60 MB, under ``max_bytes``) that differs from the gold: every report stays
small, and each cut says what it cut. Before the caps the whole result was copied into the
diff and from there into every report (a 64 MB result gave a 225 MB JSON report, 189 MB HTML,
186 MB junit and 184 MB of terminal output)."""

from __future__ import annotations

import sqlite3

import pytest

from .conftest import by_id, check_all_reports, dump, run_with_all_reports

#: Bound on each report file and on the terminal output (docs/reference.md, "Limits for untrusted input").
REPORT_BOUND = 1_000_000
VALUE = 15_000_000  # characters per value; 4 rows: 60 MB


def test_a_large_result_gives_small_reports(suite: pytest.Pytester) -> None:
    conn = sqlite3.connect(suite.path / "big.sqlite")
    conn.execute("CREATE TABLE big (k INTEGER, x TEXT)")
    for k in range(4):
        conn.execute("INSERT INTO big VALUES (?, ?)", (k, chr(ord("a") + k) * VALUE))
    conn.commit()
    conn.close()
    suite.makefile(".yaml", queryeval=dump({
        "datasources": {"db": {"type": "sqlite", "path": "big.sqlite", "timeout": 120}}}))
    suite.makefile(".yaml", test_big=dump({
        "kind": "sql", "datasource": "db", "thresholds": {"execution_accuracy": 1.0},
        "cases": [{"id": "big-diff", "gold": "SELECT k, x FROM big",
                   "predicted": "SELECT k, x || 'y' FROM big",
                   "question": "q" * 50_000}]}))
    result, report = run_with_all_reports(suite, "-rf", subprocess=True)
    rec = by_id(report)["big-diff"]
    assert rec["outcome"] == "failed", rec
    assert rec["diff"], "the diff is kept, cut"
    assert any("… [cut: " in line and " MB of 15.0 MB]" in line for line in rec["diff"]), \
        rec["diff"]
    assert rec["question"].endswith("… [cut: 40.0 kB of 50.0 kB]")
    texts = check_all_reports(suite.path, ["big-diff"])
    for name in ("report.json", "report.html", "report.md", "report.xlsx", "junit.xml"):
        size = (suite.path / name).stat().st_size
        assert size < REPORT_BOUND, f"{name}: {size:,} bytes"
    assert "[cut: " in texts["junit"]
    assert "[cut: " in texts["markdown"] or "[cut: " in texts["html"]
    terminal = result.stdout.str() + result.stderr.str()
    assert len(terminal) < REPORT_BOUND, f"terminal output: {len(terminal):,} characters"
    assert "… [cut: " in terminal
