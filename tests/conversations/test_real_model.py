"""Issue 42 item 1: the openai source sends a conversation's earlier turns to a **real**
OpenAI-compatible server running a real small model (tests/fixtures/llm_server.py): the
server's own token count of the second turn's prompt grows by the history it was sent."""

from __future__ import annotations

import pytest

from tests.conversations.chat_suite import COUNT, conversation_suite
from tests.fixtures.llm_server import KEY, MODEL
from tests.support import run_report

pytest.importorskip("openai")
pytestmark = pytest.mark.slow

#: Both turns ask the same words, so the only difference between their prompts is the history.
QUESTION = "How many invoices are there?"


def test_the_second_turn_carries_the_first_to_a_real_server(pytester, llm_server) -> None:
    conversation_suite(pytester.path, [{"id": "twice", "conversation": [
        {"role": "user", "content": QUESTION, "gold": COUNT},
        {"role": "user", "content": QUESTION, "gold": COUNT}]}],
        {"predictions": {"source": "openai", "model": MODEL, "base_url": llm_server.base_url,
                         "api_key": KEY, "temperature": 0, "seed": 1, "max_tokens": 48,
                         "retries": 0, "timeout": 300, "prompt": "Question: {question}"}})
    _, report = run_report(pytester)
    rec = report.by_id["twice"]
    turns = rec["details"]["turns"]
    assert [t["outcome"] for t in turns] != [] and all(
        t["outcome"] in ("passed", "failed") for t in turns), rec.get("error")
    assert all(t["predicted"] for t in turns)
    first, second = (t["metrics"]["prompt_tokens"] for t in turns)
    # the earlier user turn and its gold answer, as the server's tokenizer counts them
    history = llm_server.tokens(QUESTION) + llm_server.tokens(COUNT)
    assert second - first >= history
    assert rec["metrics"]["prompt_tokens"] == first + second  # the conversation's total
