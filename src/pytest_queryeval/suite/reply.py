"""A case with ``expect: clarify`` and a scripted ``reply:`` read as a two-turn conversation
(issue 42 item 4, docs/abstention.md "Clarification").

``{question, expect: clarify, clarification, reply, gold}`` is what a clarification loop looks
like in a product: the question is ambiguous, the right output is a question back, the user
answers, and the turn after the answer has a gold. Turn 1 is scored as a clarification
(``clarified``, ``asks_about``); turn 2 (the reply as the user's message, after the question
and the prediction's own clarification question as history) is scored as any turn of the
kind, by :mod:`..engine.conversation`. Why scripted: CI never depends on a simulated user.

Why apart from :mod:`.cases`: the case reader stays one list of steps; this builds the turns
the conversation engine reads (:class:`~..model.Turn`), as :mod:`.conversation` does for a
written ``conversation:``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Protocol

from .._yaml.yamlload import LocDict
from ..metricnames import INTERACTION_ACCURACY
from ..model import MISSING, Case, Threshold, Turn
from ..rules.clarify import ASKS_ABOUT, CLARIFIED
from ..rules.thresholds import judges_answer


class _Errors(Protocol):
    items: list[str]

    def add(self, container: object, key: object, path: str, message: str) -> None: ...


def reply_conversation(case: Case, entry: LocDict, kp: Callable[[str], str],
                       errors: _Errors) -> None:
    """Turn a checked ``expect: clarify`` case with ``reply:`` into its two scored turns: the
    case's clarification bounds judge turn 1, its answer bounds turn 2, and the case is judged
    by ``interaction_accuracy >= 1`` (both turns pass) unless it bounds that itself."""
    assert case.reply is not None  # the reader calls this only for a case with a reply
    clarify = {m: t for m, t in case.thresholds.items()
               if m in (CLARIFIED, ASKS_ABOUT) or not judges_answer(m)}
    answer = {m: t for m, t in case.thresholds.items() if m not in (CLARIFIED, ASKS_ABOUT)}
    first = Turn(number=1, index=0, question=case.question or "", expect="clarify",
                 thresholds=clarify, raw={"clarification": case.clarification})
    second = Turn(number=2, index=1, question=case.reply, gold=case.gold,
                  gold_result=case.gold_result, thresholds=answer)
    if case.predicted is not MISSING:
        value = case.predicted
        if not isinstance(value, list) or not 1 <= len(value) <= 2:
            errors.add(entry, "predicted", kp("predicted"), "a case with a reply: predicts two "
                       "turns: a list of the clarification and the answer after the reply "
                       "(one entry: the second turn is missing)")
            return
        for turn, predicted in zip((first, second), value, strict=False):
            turn.predicted = predicted
    case.turns = [first, second]
    case.gold, case.gold_result = None, None
    if case.difficulty is None:  # as a written conversation: its answered turn's
        from .. import kinds as kind_registry
        from ..rules.conversation import conversation_difficulty

        with contextlib.suppress(KeyError, ImportError):
            case.difficulty = conversation_difficulty(kind_registry.get_kind(case.kind), case)
    own = entry.get("thresholds") or {}
    case.thresholds = {INTERACTION_ACCURACY: case.thresholds.get(
        INTERACTION_ACCURACY, Threshold(INTERACTION_ACCURACY, min=1.0))}
    case.default_thresholds = [] if INTERACTION_ACCURACY in own else [INTERACTION_ACCURACY]
