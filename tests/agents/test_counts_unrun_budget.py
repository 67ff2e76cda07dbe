"""Judging the calls a replay did not run keeps to the budget's ``seconds`` (issue 58, the
thirteenth re-probe's L1, carried): a refused trajectory of 5,500 heavy ``run_query`` calls
under ``{tool_calls: 1}`` took 46 s for one case, every call past the budget parsed for its
writes and forbidden tables. The judging now gets the budget's ``seconds`` again; what it did
not reach is not judged, so the counts are not established (the case's error), never a count
lowered by the bound. On a real Chinook SQLite copy, from a predictions file; the bound is made
to bite by a budget no judging of hundreds of texts can meet (no time is asserted)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.agents.test_counts_fail_closed import one
from tests.agents.test_counts_from_what_ran import GOLD, QUESTION, _chinook
from tests.agents.test_counts_ninth_probe import UNESTABLISHED
from tests.support import run_report, write_suite

N = 300


def _heavy(k: int) -> str:
    return "SELECT " + " + ".join(f"(CASE WHEN a{i} > {i + k} THEN b{i} ELSE c{i} END)"
                                  for i in range(60)) + " FROM Genre"


def _trajectory(refused: bool) -> list[dict[str, Any]]:
    calls = [m for k in range(N) for m in one(_heavy(k), cid=f"c{k}")]
    head = [{"role": "system", "content": "x"}] if refused else []
    return head + calls + one("DELETE FROM Genre", cid="last")


def _suite(pytester: pytest.Pytester, shared_data: Path,
           cases: dict[str, tuple[list[dict[str, Any]], dict[str, Any]]]) -> None:
    _chinook(pytester.path, shared_data)
    (pytester.path / "runs.jsonl").write_text("".join(
        json.dumps({"id": cid, "predicted": GOLD, "trajectory": trajectory}) + "\n"
        for cid, (trajectory, _) in cases.items()))
    write_suite(pytester.path, {
        "datasources": {"db": {"type": "sqlite", "path": "chinook.sqlite"}},
        "predictions": {"source": "file", "path": "runs.jsonl"}},
        {"test_agent.yaml": {"kind": "sql", "datasource": "db", "cases": [
            {"id": cid, "question": QUESTION, "gold": GOLD,
             "thresholds": {"write_attempts": {"max": 0}}, "agent": agent}
            for cid, (_, agent) in cases.items()]}})


@pytest.mark.parametrize("refused", [True, False])
def test_unrun_calls_past_the_budgets_seconds_are_not_judged_and_not_established(
        pytester: pytest.Pytester, shared_data: Path, refused: bool) -> None:
    """Past ``tool_calls: 1`` the rest is judged on its text within ``seconds``: a budget
    of 0 s leaves the write at the end unjudged, so the case is an error naming the
    calls not judged (before: every one was judged, however long it took). The same trajectory
    under the default budget is judged in full: its DELETE is counted and fails the gate."""
    _suite(pytester, shared_data, {
        "tight": (_trajectory(refused), {"budget": {"tool_calls": 1, "seconds": 0}}),
        "judged": (_trajectory(refused), {"budget": {"tool_calls": 1}}),
    })
    _, report = run_report(pytester, "-p", "no:cacheprovider")
    tight = report.by_id["tight"]
    assert tight["outcome"] == "error", (tight["outcome"], tight["metrics"])
    assert tight["error"].startswith(UNESTABLISHED), tight["error"]
    assert "were not judged on their text within the budget's 0 s (seconds)" in \
        tight["error"], tight["error"]
    judged = report.by_id["judged"]
    assert judged["outcome"] == "failed", (judged["outcome"], judged.get("error"))
    assert judged["metrics"]["write_attempts"] == 1.0


def test_replay_false_judging_keeps_to_the_budgets_seconds(
        pytester: pytest.Pytester, shared_data: Path) -> None:
    """``replay: false``: every call is judged on its text, within the budget's seconds."""
    _suite(pytester, shared_data, {
        "tight": (_trajectory(False), {"replay": False, "budget": {"seconds": 0}}),
        "judged": (_trajectory(False), {"replay": False}),
    })
    _, report = run_report(pytester, "-p", "no:cacheprovider")
    tight = report.by_id["tight"]
    assert tight["outcome"] == "error", (tight["outcome"], tight["metrics"])
    assert "were not judged on their text within the budget's 0 s" in tight["error"]
    judged = report.by_id["judged"]
    assert judged["outcome"] == "failed", (judged["outcome"], judged.get("error"))
    assert judged["metrics"]["write_attempts"] == 1.0


def test_the_unrun_rules_keep_to_the_seconds_they_are_given() -> None:
    """``unrun_counts`` (calls of tools the plugin does not serve, judged on their text) stops
    at its ``seconds`` too: what it did not reach leaves the counts not established. With the
    time it needs it finds the foreign tool's statement, as before."""
    from pytest_queryeval.agents.ledger import Ledger
    from pytest_queryeval.agents.trajectory import read_trajectory
    from pytest_queryeval.agents.unrun import unrun_counts
    from pytest_queryeval.model import Case

    foreign = [m for k in range(N) for m in one(_heavy(k), name="execute_sql", cid=f"c{k}")]
    steps = read_trajectory(foreign).steps
    case = Case(id="c", kind="sql", file=Path("test_agent.yaml"), line=1,
                thresholds={"rows_read": {"max": 10}})
    tight = Ledger.for_tables(())
    unrun_counts(case, steps, tight, sql=True, replayed=True, seconds=0.0)
    assert tight.uncounted is not None
    assert f"{N:,} tool call(s) (not replayed) were not judged" in tight.uncounted
    judged = Ledger.for_tables(())
    unrun_counts(case, steps, judged, sql=True, replayed=True)
    assert judged.uncounted is not None
    assert "is not run by the replay" in judged.uncounted
