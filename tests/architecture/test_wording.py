"""One rule for a count with its noun and for a list cut after its first items."""

from __future__ import annotations

from pytest_queryeval._util.wording import plural, shortlist


def test_plural() -> None:
    assert plural(1, "regression") == "1 regression"
    assert plural(0, "regression") == "0 regressions"
    assert plural(2, "coincidental pass", "coincidental passes") == "2 coincidental passes"


def test_shortlist() -> None:
    assert shortlist(["a", "b"], 3) == "a, b"
    assert shortlist(["a", "b", "c"], 3) == "a, b, c"
    assert shortlist(["a", "b", "c", "d", "e"], 3) == "a, b, c and 2 more"
    assert shortlist(["x (in s1)", "y (in s2)"], 1, sep="; ") == "x (in s1) and 1 more"


def test_summary_counts_of_one_are_singular(suite) -> None:
    """``1 cases``, ``1 errors``, ``1 of 1 cases`` (issue 43): every count in the summary
    lines takes its noun's number."""
    import sqlite3

    from pytest_queryeval.judge.report import summary_lines as judge_lines
    from pytest_queryeval.report.audit import summary_lines as audit_lines
    from pytest_queryeval.report.denominators import over_text
    from tests.support import dump

    with sqlite3.connect(suite.path / "db.sqlite") as conn:
        conn.execute("CREATE TABLE t (a INTEGER)")
    suite.makefile(".yaml", queryeval=dump({"datasources": {"db": {"type": "sqlite",
                                                                    "path": "db.sqlite"}}}))
    suite.makefile(".yaml", test_q=dump({"kind": "sql", "datasource": "db", "cases": [
        {"id": "broken", "gold": "SELECT a FROM nope", "predicted": "SELECT a FROM t"}]}))
    out = suite.runpytest().stdout.str()
    assert "overall: 1 case, 0 passed, 0 failed, 1 error, 0 xfailed, 0 skipped;" in out, out
    assert "1 cases" not in out and "1 errors" not in out
    assert over_text({"n": 1}, 1) == "1 of 1 case"
    assert audit_lines({"cases": 1, "errors": 1, "warnings": 1})[0] == \
        "gold audit: 1 case, 1 error, 1 warning"
    judged = {"judged": 1, "asked": 1, "calls": 1, "pinned": 0, "rescued": [],
              "overturned": [], "errors": [{"id": "x", "error": "down"}]}
    assert judge_lines(judged)[0] == ("judge: 1 case judged (1 asked in 1 call, 0 pinned), "
                                      "0 rescued, 0 overturned, 1 judge error")
