"""A count the replay cut is never a count gate's pass (issue 58, the twelfth re-probe's M6):
calls past the replay's budget were left out of ``queries_executed`` and ``rows_read``, and a
reply past the replay's 10,000 rows was counted as 10,000, so ``{max: N}`` on either passed
on a lowered count. Now a case gated on one of them is not established; a case gated on
neither is scored as before. On a real Chinook SQLite copy, from a predictions file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.agents.test_counts_fail_closed import one
from tests.agents.test_counts_from_what_ran import GOLD, QUESTION, _chinook
from tests.agents.test_counts_ninth_probe import UNESTABLISHED
from tests.support import run_report, write_suite

#: 20,300 rows (the cross product of 7 media types and 2,900 numbers), past the cap.
WIDE = ("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2900) "
        "SELECT i, MediaTypeId FROM n, MediaType")


def _suite(pytester: pytest.Pytester, shared_data: Path,
           cases: dict[str, tuple[list[dict[str, Any]], dict[str, Any]]]) -> None:
    import json

    _chinook(pytester.path, shared_data)
    (pytester.path / "runs.jsonl").write_text("".join(
        json.dumps({"id": cid, "predicted": GOLD, "trajectory": trajectory}) + "\n"
        for cid, (trajectory, _) in cases.items()))
    write_suite(pytester.path, {
        "datasources": {"db": {"type": "sqlite", "path": "chinook.sqlite"}},
        "predictions": {"source": "file", "path": "runs.jsonl"}},
        {"test_agent.yaml": {"kind": "sql", "datasource": "db",
                             "agent": {"budget": {"tool_calls": 2}},
                             "cases": [{"id": cid, "question": QUESTION, "gold": GOLD,
                                        "thresholds": gates}
                                       for cid, (_, gates) in cases.items()]}})


def test_a_count_the_replay_cut_is_not_established(pytester: pytest.Pytester,
                                                   shared_data: Path) -> None:
    four = [m for i in range(4) for m in one(f"SELECT {i} FROM Genre", cid=f"c{i}")]
    _suite(pytester, shared_data, {
        "past-budget-queries": (four, {"queries_executed": {"max": 3}}),
        "past-budget-rows": (four, {"rows_read": {"max": 100}}),
        "wide-rows": (one(WIDE), {"rows_read": {"max": 10_000}}),
        "honest-ungated": (four, {"execution_accuracy": 1.0}),
        "honest-wide-ungated": (one(WIDE), {"execution_accuracy": 1.0}),
    })
    _, report = run_report(pytester, "-p", "no:cacheprovider")
    for cid, gate in (("past-budget-queries", "queries_executed"),
                      ("past-budget-rows", "rows_read"), ("wide-rows", "rows_read")):
        case = report.by_id[cid]
        assert case["outcome"] == "error", (cid, case["outcome"], case["metrics"])
        assert case["error"].startswith(UNESTABLISHED + f"{gate}: "), case["error"]
    assert "past the replay's budget" in report.by_id["past-budget-queries"]["error"]
    assert "was cut at 10,000 rows" in report.by_id["wide-rows"]["error"]
    assert report.by_id["honest-ungated"]["outcome"] == "passed"
    assert report.by_id["honest-wide-ungated"]["outcome"] == "passed"
