"""Issue 42 item 1: a SQL case's conversation, each scored turn scored with the SQL kind's
metrics, the case's turn_accuracy and interaction_accuracy, and a missing turn counted."""

from __future__ import annotations

import pytest

from tests.conversations.chat_suite import COUNT, COUNT_2024, COUNT_2024_BIG, chat, conversation_suite
from tests.support import run_report


def test_every_turn_right_passes_with_per_turn_records(pytester: pytest.Pytester) -> None:
    conversation_suite(pytester.path, [{"id": "invoices-chat", "conversation": chat(
        p1=COUNT, p2=COUNT_2024, p3=COUNT_2024_BIG)}])
    result, report = run_report(pytester, "-p", "no:cacheprovider")
    assert report.outcomes == {"invoices-chat": "passed"}, result.stdout.str()
    rec = report.by_id["invoices-chat"]
    assert rec["metrics"]["turn_accuracy"] == 1.0
    assert rec["metrics"]["interaction_accuracy"] == 1.0
    turns = rec["details"]["turns"]
    assert [t["turn"] for t in turns] == [1, 2, 3]
    assert [t["outcome"] for t in turns] == ["passed"] * 3
    assert turns[1]["question"] == "And only those from 2024?"
    assert turns[1]["gold"] == COUNT_2024 and turns[1]["predicted"] == COUNT_2024
    assert turns[2]["metrics"]["execution_accuracy"] == 1.0
    assert rec["thresholds"] == {"interaction_accuracy": {"min": 1.0}}


def test_a_wrong_and_a_missing_turn_fail_the_case_and_count(pytester: pytest.Pytester) -> None:
    # turn 2 forgets the year; turn 3 has no prediction: 1 of 3 turns pass
    conversation_suite(pytester.path, [{"id": "invoices-chat", "conversation": chat(
        p1=COUNT, p2=COUNT)}])
    result, report = run_report(pytester, "-p", "no:cacheprovider")
    assert report.outcomes == {"invoices-chat": "failed"}
    rec = report.by_id["invoices-chat"]
    assert rec["metrics"]["turn_accuracy"] == pytest.approx(1 / 3)
    assert rec["metrics"]["interaction_accuracy"] == 0.0
    turns = rec["details"]["turns"]
    assert [t["outcome"] for t in turns] == ["passed", "failed", "missing"]
    assert turns[2]["predicted"] is None
    assert turns[2]["metrics"] == {"execution_accuracy": 0.0}
    assert turns[1]["metrics"]["execution_accuracy"] == 0.0
    assert rec["reason"].startswith("turn 2: failed")
    assert "turn 3: missing" in rec["reason"]
    out = result.stdout.str()
    assert "turn 2: failed" in out and "turn 3: missing" in out


def test_case_level_prediction_list_and_a_turn_accuracy_bound(pytester: pytest.Pytester) -> None:
    conversation_suite(pytester.path, [{
        "id": "lenient", "thresholds": {"turn_accuracy": 0.6},
        "predicted": [COUNT, COUNT_2024, COUNT], "conversation": chat()}])
    _, report = run_report(pytester, "-p", "no:cacheprovider")
    rec = report.by_id["lenient"]
    assert rec["metrics"]["turn_accuracy"] == pytest.approx(2 / 3)
    assert report.outcomes == {"lenient": "passed"}
    assert rec["thresholds"] == {"turn_accuracy": {"min": 0.6}}


def test_predicted_history_and_a_turn_that_must_abstain(pytester: pytest.Pytester) -> None:
    """A turn may expect no answer (docs/abstention.md): it passes when the prediction
    abstains, and counts in turn_accuracy like any turn."""
    turns = [*chat(p1=COUNT, p2=COUNT_2024, p3=COUNT_2024_BIG),
             {"role": "user", "content": "And what did each customer earn?",
              "expect": "abstain", "predicted": None}]
    conversation_suite(pytester.path, [{"id": "chat", "history": "predicted",
                                        "conversation": turns}])
    _, report = run_report(pytester)
    rec = report.by_id["chat"]
    assert report.outcomes == {"chat": "passed"}
    last = rec["details"]["turns"][-1]
    assert (last["turn"], last["outcome"], last["expect"]) == (4, "passed", "abstain")
    assert last["metrics"] == {"abstained": 1.0}
    assert rec["details"]["history"] == "predicted"
