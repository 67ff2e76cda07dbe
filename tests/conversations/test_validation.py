"""Issue 42 item 1: a bad conversation is a located error found at collection
(``file:line: key path: message``), before any case runs."""

from __future__ import annotations

import pytest

from tests.conversations.chat_suite import make_store
from tests.support import run_report, write_suite

HEADER = "kind: sql\ndatasource: store\ncases:\n"
GOOD_TURN = ("      - role: user\n"
             "        content: How many invoices?\n"
             "        gold: SELECT count(*) FROM invoice\n")


def _errors(pytester: pytest.Pytester, cases: str) -> str:
    make_store(pytester.path / "store.sqlite")
    write_suite(pytester.path, {"datasources": {"store": {"type": "sqlite",
                                                          "path": "store.sqlite"}}},
                {"test_chat.yaml": HEADER + cases})
    _, report = run_report(pytester)
    assert set(report.outcomes.values()) == {"error"}, report.outcomes
    return "\n".join(str(c["error"]) for c in report["cases"])


@pytest.mark.parametrize(("cases", "expected"), [
    # gold on an assistant turn (line 11)
    ("  - id: a\n    conversation:\n" + GOOD_TURN +
     "      - role: assistant\n        content: five\n        gold: SELECT 5\n",
     "test_chat.yaml:11: cases[0].conversation[1].gold: an assistant turn is history"),
    # an unknown key on a user turn, with a suggestion (line 9)
    ("  - id: a\n    conversation:\n      - role: user\n        content: q\n"
     "        gold: SELECT 1\n        predicted_sql: SELECT 1\n",
     "test_chat.yaml:9: cases[0].conversation[0].predicted_sql: unknown key (did you mean "
     "'predicted'?)"),
    # no scored turn
    ("  - id: a\n    conversation:\n      - role: user\n        content: q\n",
     "test_chat.yaml:5: cases[0].conversation: no scored turn"),
    # both a case-level gold and a conversation (line 5)
    ("  - id: a\n    gold: SELECT 1\n    conversation:\n" + GOOD_TURN,
     "test_chat.yaml:5: cases[0].gold: a conversation case gives its golds on its user turns"),
    # a bad role (line 6)
    ("  - id: a\n    conversation:\n      - role: system\n        content: q\n",
     "test_chat.yaml:6: cases[0].conversation[0].role: must be user or assistant"),
    # history: neither gold nor predicted (line 5)
    ("  - id: a\n    history: simulated\n    conversation:\n" + GOOD_TURN,
     "test_chat.yaml:5: cases[0].history: must be one of gold, predicted, not 'simulated'"),
    # the kind's own check of a turn's gold, located at the turn (line 8)
    ("  - id: a\n    conversation:\n      - role: user\n        content: q\n"
     "        gold: ''\n",
     "test_chat.yaml:8: cases[0].conversation[0].gold:"),
    # a case-level prediction list longer than the scored turns
    ("  - id: a\n    predicted: [SELECT 1, SELECT 2]\n    conversation:\n" + GOOD_TURN,
     "test_chat.yaml:5: cases[0].predicted: 2 predictions for 1 scored turns"),
    # a turn threshold on an unknown metric
    ("  - id: a\n    conversation:\n" + GOOD_TURN +
     "        thresholds: {execution_acuracy: 1}\n",
     "test_chat.yaml:9: cases[0].conversation[0].thresholds.execution_acuracy: unknown metric"),
])
def test_located_errors(pytester: pytest.Pytester, cases: str, expected: str) -> None:
    assert expected in _errors(pytester, cases)


def test_a_conversation_without_kind_stays_sdmx(pytester: pytest.Pytester) -> None:
    """A file with a conversation and no kind anywhere is SDMX, read as before."""
    write_suite(pytester.path, {}, {"test_chat.yaml": (
        "- id: a\n  conversation:\n    - role: user\n      content: q\n"
        "      gold: SELECT 1\n")})
    _, report = run_report(pytester)
    rec = report.by_id["a"]
    assert rec["kind"] == "sdmx"
    assert "turn_accuracy" not in rec["metrics"]
