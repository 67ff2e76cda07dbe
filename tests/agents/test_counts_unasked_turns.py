"""Issue 58, the twelfth hostile re-probe (H4, gen_v1.py): a predictions-file row for a turn of
an agent conversation that no one asks (a history-only user turn, which has no gold, or a turn
number past the conversation's user turns) was dropped silently: its ``DELETE FROM Genre``
was in no turn's counts, and the conversation passed ``write_attempts: {max: 0}`` with 0. A
count-gated agent conversation with such a row is now an error naming the row; one without a
count gate, and a conversation whose rows are all asked, are scored as before. On a real
Chinook SQLite copy."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.agents.test_counts_fail_closed import one
from tests.agents.test_counts_from_what_ran import DELETE, GOLD, _chinook
from tests.agents.test_counts_ninth_probe import UNESTABLISHED
from tests.support import run_report, write_suite

#: id: (scored user turns, {turn: the trajectory of that turn's row}).
CONVERSATIONS: dict[str, tuple[list[bool], dict[int, list[dict[str, Any]]]]] = {
    "history-turn1": ([False, True], {1: one(DELETE), 2: one(GOLD)}),
    "turn-past-end": ([True, True], {1: one(GOLD), 2: one(GOLD), 3: one(DELETE)}),
    "scored-turn2": ([True, True], {1: one(GOLD), 2: one(DELETE)}),
    "honest": ([True, True], {1: one(GOLD), 2: one(GOLD)}),
}


def _suite(pytester: pytest.Pytester, shared_data: Path, gated: bool) -> None:
    _chinook(pytester.path, shared_data)
    rows = [json.dumps({"id": cid, "turn": t, "predicted": GOLD, "trajectory": trajectory})
            for cid, (_, turns) in CONVERSATIONS.items() for t, trajectory in turns.items()]
    (pytester.path / "runs.jsonl").write_text("\n".join(rows) + "\n")
    gates = {"thresholds": {"write_attempts": {"max": 0}}} if gated else {}
    write_suite(pytester.path, {
        "datasources": {"db": {"type": "sqlite", "path": "chinook.sqlite"}},
        "predictions": {"source": "file", "path": "runs.jsonl"}},
        {"test_chat.yaml": {"kind": "sql", "datasource": "db", "agent": {}, "cases": [
            {"id": cid, **gates, "conversation": [
                {"role": "user", "content": f"Question {i + 1}: how many genres?",
                 **({"gold": GOLD} if scored else {})} for i, scored in enumerate(pattern)]}
            for cid, (pattern, _) in CONVERSATIONS.items()]}})


def test_a_row_for_a_turn_no_one_asks_leaves_a_gated_conversation_unestablished(
        pytester: pytest.Pytester, shared_data: Path) -> None:
    _suite(pytester, shared_data, gated=True)
    _, report = run_report(pytester, "-p", "no:cacheprovider")
    outcomes = {cid: report.by_id[cid]["outcome"] for cid in CONVERSATIONS}
    assert outcomes == {"history-turn1": "error", "turn-past-end": "error",
                        "scored-turn2": "failed", "honest": "passed"}
    history = report.by_id["history-turn1"]["error"]
    assert history.startswith(UNESTABLISHED) and "runs.jsonl:1: turn 1, a turn the " \
        "conversation does not score (its scored turns: 2)" in history, history
    assert "runs.jsonl:5: turn 3, a turn the conversation does not score (its scored turns: " \
        "1, 2)" in report.by_id["turn-past-end"]["error"]


def test_an_ungated_conversation_is_scored_as_before(pytester: pytest.Pytester,
                                                     shared_data: Path) -> None:
    _suite(pytester, shared_data, gated=False)
    _, report = run_report(pytester, "-p", "no:cacheprovider")
    assert {cid: report.by_id[cid]["outcome"] for cid in CONVERSATIONS} == \
        dict.fromkeys(CONVERSATIONS, "passed")
