"""Issue 58, the twelfth re-probe's H4: a predictions-file row of a conversation that no turn
asks (a history-only user turn's, a turn past the conversation's user turns, a row without a
turn) was dropped silently, so the DELETE its trajectory ran passed ``write_attempts: {max:
0}``. Every row of a case is used, or it is that case's error naming the file, the line, the
row's id and turn and why it is not used."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.agents.test_counts_from_what_ran import _chinook
from tests.support import run_report, write_suite

GOLD = "SELECT count(*) FROM Genre"


def _call(cid: str, query: str) -> list[dict[str, Any]]:
    return [{"role": "assistant", "content": None, "tool_calls": [
        {"id": cid, "type": "function",
         "function": {"name": "run_query", "arguments": json.dumps({"query": query})}}]},
        {"role": "tool", "tool_call_id": cid, "content": "25"}]


def _conversation(scored: list[bool]) -> list[dict[str, Any]]:
    return [{"role": "user", "content": f"Question {i + 1}: how many genres?",
             **({"gold": GOLD} if s else {})} for i, s in enumerate(scored)]


CASES: dict[str, tuple[list[bool], dict[int | None, str]]] = {
    "history-turn1": ([False, True], {1: "DELETE FROM Genre", 2: GOLD}),
    "past-the-end": ([True, True], {1: GOLD, 2: GOLD, 3: "DELETE FROM Genre"}),
    "honest": ([True, True], {1: GOLD, 2: GOLD}),
    "honest-history": ([False, True], {2: GOLD}),
}


def test_a_row_no_turn_asks_is_the_case_error(pytester: pytest.Pytester,
                                              shared_data: Path) -> None:
    _chinook(pytester.path, shared_data)
    lines = [json.dumps({"id": cid, "turn": turn, "predicted": GOLD,
                         "trajectory": _call("a", query)})
             for cid, (_, rows) in CASES.items() for turn, query in rows.items()]
    (pytester.path / "runs.jsonl").write_text("\n".join(lines) + "\n")
    write_suite(pytester.path, {
        "datasources": {"db": {"type": "sqlite", "path": "chinook.sqlite"}},
        "predictions": {"source": "file", "path": "runs.jsonl"}},
        {"test_chat.yaml": {"kind": "sql", "datasource": "db", "agent": True, "cases": [
            {"id": cid, "conversation": _conversation(scored),
             "thresholds": {"write_attempts": {"max": 0}}}
            for cid, (scored, _) in CASES.items()]}})
    _, report = run_report(pytester, "-p", "no:cacheprovider")
    history = report.by_id["history-turn1"]
    assert history["outcome"] == "error"
    assert "runs.jsonl:1: the row for 'history-turn1' turn 1 is not used (user turn 1 is " \
        "history only" in json.dumps(history)
    past = report.by_id["past-the-end"]
    assert past["outcome"] == "error"
    assert "runs.jsonl:5: the row for 'past-the-end' turn 3 is not used (the conversation " \
        "has 2 user turn(s))" in json.dumps(past)
    # files whose rows are all used score as before
    assert report.by_id["honest"]["outcome"] == "passed"
    assert report.by_id["honest-history"]["outcome"] == "passed"
