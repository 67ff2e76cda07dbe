"""Issue 42 item 1: predictions per turn from every source, each given the turn's number and
the history before it (CONV-SPEC): a predictions file's rows with ``turn``, a real python
callable, a real loopback HTTP service, a real command, and the openai source against the
OpenAI-compatible stand-in that records the chat it receives (tests/fixtures/openai_standin.py)."""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest

from tests.conversations.chat_suite import COUNT, COUNT_2024, COUNT_2024_BIG, chat, conversation_suite
from tests.fixtures.model_service import ModelService, Request
from tests.fixtures.openai_standin import KEY, MODEL, OpenAIStandin
from tests.support import run_report

#: The answers of a model that gets every turn right except turn 1 (it counts invoices over 10).
WRONG_FIRST = {1: "SELECT count(*) FROM invoice WHERE total > 10", 2: COUNT_2024,
               3: COUNT_2024_BIG}
RIGHT = {1: COUNT, 2: COUNT_2024, 3: COUNT_2024_BIG}
Q1, Q2, Q3 = ("How many invoices are there?", "And only those from 2024?",
              "Of those, how many are over 10?")
#: What turn 3 is told came before it, with gold history.
GOLD_HISTORY_3 = [
    {"role": "user", "content": Q1}, {"role": "assistant", "content": COUNT},
    {"role": "assistant", "content": "There are 5 invoices."},
    {"role": "user", "content": Q2}, {"role": "assistant", "content": COUNT_2024}]

MODEL_MODULE = """
import json, pathlib

ANSWERS = {answers}


def predict(case):
    with open(pathlib.Path(__file__).with_name("calls.jsonl"), "a") as fh:
        fh.write(json.dumps(case) + "\\n")
    return ANSWERS[str(case["turn"])]
"""


def _calls(path: Any) -> dict[int, dict[str, Any]]:
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    return {row["turn"]: row for row in rows}


def test_predictions_file_rows_per_turn(pytester: pytest.Pytester) -> None:
    conversation_suite(pytester.path, [{"id": "invoices-chat", "conversation": chat()}],
                       {"predictions": {"source": "file", "path": "preds.jsonl"}})
    rows = [{"id": "invoices-chat", "turn": 2, "predicted": COUNT_2024},
            {"id": "invoices-chat", "turn": 1, "predicted": COUNT}]  # turn 3 missing
    (pytester.path / "preds.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    _, report = run_report(pytester)
    rec = report.by_id["invoices-chat"]
    assert [t["outcome"] for t in rec["details"]["turns"]] == ["passed", "passed", "missing"]
    assert rec["metrics"]["turn_accuracy"] == pytest.approx(2 / 3)
    assert report.outcomes == {"invoices-chat": "failed"}
    assert "match no collected case" not in json.dumps(report.get("warnings", []))


@pytest.mark.parametrize("history", ["gold", "predicted"])
def test_python_callable_gets_turn_and_history(pytester: pytest.Pytester, history: str) -> None:
    conversation_suite(pytester.path, [{"id": "invoices-chat", "history": history,
                                        "conversation": chat()}],
                       {"predictions": {"source": "python", "function": "model:predict"}})
    answers = {str(k): v for k, v in WRONG_FIRST.items()}
    (pytester.path / "model.py").write_text(MODEL_MODULE.format(answers=answers))
    _, report = run_report(pytester)
    calls = _calls(pytester.path / "calls.jsonl")
    assert sorted(calls) == [1, 2, 3]
    assert calls[1]["history"] == [] and calls[2]["question"] == Q2
    expected = [dict(m) for m in GOLD_HISTORY_3]
    if history == "predicted":  # what the model said, not the gold
        expected[1]["content"] = WRONG_FIRST[1]
        expected[4]["content"] = WRONG_FIRST[2]
    assert calls[3]["history"] == expected
    rec = report.by_id["invoices-chat"]
    assert [t["outcome"] for t in rec["details"]["turns"]] == ["failed", "passed", "passed"]
    assert rec["details"]["history"] == history
    assert rec["details"]["turns"][0]["predicted"] == WRONG_FIRST[1]


class _TurnService(ModelService):
    """A model service answering each turn from :data:`RIGHT`."""

    def answer(self, request: Request) -> tuple[int, Any]:
        return 200, {"predicted": RIGHT[int(request.body["turn"])]}


def test_http_service_gets_turn_and_history(pytester: pytest.Pytester) -> None:
    service = _TurnService().start()
    try:
        conversation_suite(pytester.path, [{"id": "invoices-chat", "conversation": chat()}],
                           {"predictions": {"source": "http", "url": service.url + "/predict"}})
        _, report = run_report(pytester)
    finally:
        service.stop()
    bodies = {r.body["turn"]: r.body for r in service.requests}
    assert sorted(bodies) == [1, 2, 3]
    assert bodies[3]["history"] == GOLD_HISTORY_3
    assert bodies[3]["id"] == "invoices-chat" and bodies[3]["question"] == Q3
    assert report.outcomes == {"invoices-chat": "passed"}
    assert report.by_id["invoices-chat"]["metrics"]["interaction_accuracy"] == 1.0


COMMAND = """
import json, sys
case = json.load(sys.stdin)
with open("cmd_calls.jsonl", "a") as fh:
    fh.write(json.dumps(case) + "\\n")
print(json.dumps({{"predicted": {answers}[str(case["turn"])]}}))
"""


def test_command_gets_turn_and_history(pytester: pytest.Pytester) -> None:
    answers = {str(k): v for k, v in RIGHT.items()}
    (pytester.path / "model_cmd.py").write_text(COMMAND.format(answers=answers))
    conversation_suite(pytester.path, [{"id": "invoices-chat", "conversation": chat()}],
                       {"predictions": {"source": "command",
                                        "command": [sys.executable, "model_cmd.py"]}})
    _, report = run_report(pytester)
    calls = _calls(pytester.path / "cmd_calls.jsonl")
    assert calls[3]["history"] == GOLD_HISTORY_3 and calls[2]["turn"] == 2
    assert report.outcomes == {"invoices-chat": "passed"}


def test_openai_source_sends_prior_turns_as_messages(pytester: pytest.Pytester,
                                                     openai_standin: OpenAIStandin) -> None:
    for number, question in ((1, Q1), (2, Q2), (3, Q3)):
        openai_standin.answers[question] = f"```sql\n{RIGHT[number]}\n```"
    conversation_suite(pytester.path, [{"id": "invoices-chat", "conversation": chat()}],
                       {"predictions": {"source": "openai", "model": MODEL,
                                        "base_url": openai_standin.base_url, "api_key": KEY,
                                        "prompt": "Question: {question}"}})
    _, report = run_report(pytester)
    assert report.outcomes == {"invoices-chat": "passed"}
    chats = [r["messages"] for r in openai_standin.requests]
    assert len(chats) == 3
    assert [m["role"] for m in chats[0]] == ["system", "user"]
    # the third request: system, the earlier turns as said, then the question asked now
    assert chats[2][1:-1] == GOLD_HISTORY_3
    assert chats[2][-1] == {"role": "user", "content": f"Question: {Q3}"}
