"""A conversation's turns as cases: the case one scored turn is scored as, the kind's checks of
each turn's gold, and the difficulty of the whole conversation.

Why here and not beside the scoring of a conversation (:mod:`..engine.conversation`): suite
reading checks the turns and rates the conversation when it reads a case, the gold audit
audits each turn, and suite reading is on a floor below the engine (docs/architecture.md,
floors).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

from ..model import Case, Kind, Turn


def turn_case(case: Case, turn: Turn, history: list[dict[str, str]]) -> Case:
    """The case one scored turn is asked and scored as: the conversation case with the turn's
    question, gold, inline prediction and thresholds, its number and the history before it."""
    return dataclasses.replace(
        case, question=turn.question, gold=turn.gold, gold_result=turn.gold_result,
        gold_result_files=None, gold_result_multi=False, predicted=turn.predicted,
        predicted_result=None, thresholds=dict(turn.thresholds), default_thresholds=[],
        errors=[], expect=turn.expect, turns=None, turn=turn.number, history=history,
        clarification=turn.raw.get("clarification") if turn.expect == "clarify" else None,
        raw={k: v for k, v in case.raw.items() if k != "conversation"})


def turn_problems(kind: Kind, case: Case) -> Iterator[tuple[str, str]]:
    """The kind's own checks of each scored turn's gold, as ``conversation[i].<key>`` paths."""
    for turn in case.turns or ():
        if not turn.scored or turn.expect != "answer":
            continue
        for key_path, message in kind.validate(turn_case(case, turn, [])):
            yield f"conversation[{turn.index}].{key_path}", message


#: Spider's hardness levels, easiest first: a conversation is as hard as its hardest turn.
_LEVELS = ("easy", "medium", "hard", "extra")


def conversation_difficulty(kind: Kind, case: Case) -> str | None:
    """The difficulty the kind rates a conversation: its hardest scored turn's (SQL: Spider's
    hardness of the turn's gold), else the last rated turn's; None when no turn is rated."""
    rated: list[str] = []
    for turn in case.turns or ():
        if turn.scored and turn.expect == "answer":
            try:
                level = kind.difficulty(turn_case(case, turn, []))
            except Exception:  # a broken gold is reported when the case runs
                level = None
            if level:
                rated.append(level)
    if not rated:
        return None
    if all(level in _LEVELS for level in rated):
        return max(rated, key=_LEVELS.index)
    return rated[-1]
