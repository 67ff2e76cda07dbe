"""Clarification precision and recall over a run (issue 42 item 4): whether the model asked a
question back when, and only when, it should.

Computed from the case records alone (each one's ``details.clarification``: ``expected`` and
``clarified``), so ``queryeval merge`` recomputes it from the shards exactly as a whole run
does. Precision is over the cases whose prediction asked back (the share that expected it),
recall over the cases that expect a question back (the share that asked); each is ``null``
when its denominator is 0, never a silent 0 or 1. A conversation counts each scored turn as a
question (a case with a ``reply:`` is two: the question back, then the answer).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

#: The record statuses that are questions the model answered (a skipped case is not one).
JUDGED = ("passed", "failed", "error")


def clarification_flags(record: Mapping[str, object]) -> list[tuple[bool, bool]]:
    """(expects a question back, the prediction asked one) for each question of a record:
    its ``details.clarification``, or each scored turn of a conversation (``expect:
    clarify`` and ``clarified`` of its ``details.turns`` entries: a turn is a question)."""
    details = record.get("details")
    if not isinstance(details, Mapping):
        return [(False, False)]
    turns = details.get("turns")
    if isinstance(turns, list):
        return [(t.get("expect") == "clarify", bool(t.get("clarified")))
                for t in turns if isinstance(t, Mapping)]
    info = details.get("clarification")
    if not isinstance(info, Mapping):
        return [(False, False)]
    return [(bool(info.get("expected")), bool(info.get("clarified")))]


def clarification_aggregate(records: Sequence[Mapping[str, object]]
                            ) -> dict[str, float | int | None] | None:
    """``aggregates.clarification``, or None when no case expects a question back and no
    prediction asked one (a run without clarification is reported as before)."""
    flags = [f for r in records if r.get("status") in JUDGED for f in clarification_flags(r)]
    if not any(expected or clarified for expected, clarified in flags):
        return None
    both = sum(1 for expected, clarified in flags if expected and clarified)
    clarified_n = sum(1 for _, clarified in flags if clarified)
    expected_n = sum(1 for expected, _ in flags if expected)
    return {"questions": len(flags), "expected": expected_n, "clarified": clarified_n,
            "clarification_precision": both / clarified_n if clarified_n else None,
            "clarification_recall": both / expected_n if expected_n else None}
