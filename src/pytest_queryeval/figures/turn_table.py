"""The Spider test-suite evaluator's turn table for a run's conversation cases.

SParC and CoSQL results are published as this table (exact match per turn 1, 2, 3, 4, > 4, per
hardness and ``joint_all``), so ``--queryeval-spider-table`` prints it in the evaluator's own
layout, from the records' per-turn ``exact_set_match`` (``details.turns[*].metrics``): a user
puts the two side by side and compares digits. The numbers are :mod:`..metrics.tsse`'s; this
module only reads records. A case scored with ``conversation_scoring: tsse`` (its record has
``details.dropped_turns``) drops its missing turns as the reference does; every other case
scores them 0. How many turns were dropped is said whenever any were, table or not.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from .._util.wording import plural

if TYPE_CHECKING:
    from ..metrics.tsse import Turn
    from ..model import RecordLike

#: The per-turn metric the reference's table counts.
EXACT = "exact_set_match"


def turn_hardness(gold: object) -> str | None:
    """The gold's Spider hardness (schema-free, as the collection rates it); the first of
    several alternatives; None outside the grammar (counted under ``all`` only)."""
    from ..errors import GoldError
    from ..metrics.spider import hardness

    if isinstance(gold, list) and gold:
        gold = gold[0]
    if not isinstance(gold, str):
        return None
    try:
        return hardness(gold)
    except GoldError:
        return None


def _turns(record: RecordLike) -> tuple[list[Turn], bool] | None:
    """The record's scored turns as the table counts them and whether one of them was scored
    with exact set match; None when it is not a conversation that could have been (an answered
    turn without the metric)."""
    from ..metrics.tsse import Turn

    details = record.get("details")
    entries = details.get("turns") if isinstance(details, Mapping) else None
    if not isinstance(entries, list) or not entries:
        return None
    out: list[Turn] = []
    seen = False
    for entry in entries:
        if not isinstance(entry, Mapping):
            return None
        metrics = entry.get("metrics")
        value = metrics.get(EXACT) if isinstance(metrics, Mapping) else None
        outcome = entry.get("outcome")
        if isinstance(value, int | float):
            seen = True
        elif outcome not in ("missing", "error"):
            return None  # answered, but not scored with exact set match
        exact = None if outcome == "missing" else (
            float(value) if isinstance(value, int | float) else 0.0)
        # a merged report's slimmed turn holds the hardness instead of the gold
        hard = entry.get("hardness") if "hardness" in entry else turn_hardness(entry.get("gold"))
        out.append(Turn(exact, hard if isinstance(hard, str) else None))
    return out, seen


def _mode(record: RecordLike) -> str:
    from ..metrics.tsse import ALL, TSSE

    details = record.get("details")
    dropped = details.get("dropped_turns") if isinstance(details, Mapping) else None
    return TSSE if isinstance(dropped, int) else ALL


def turn_table_lines(records: Sequence[RecordLike], *, full: bool) -> list[str]:
    """With ``full`` (``--queryeval-spider-table``), the reference's tables for the
    conversation cases; always, a line saying how many missing turns were dropped or scored 0."""
    from ..metrics.tsse import ALL, TSSE, format_levels, format_turns, turn_table

    interactions: list[list[Turn]] = []
    modes: list[str] = []
    scored = False  # a conversation with every turn missing counts when others were scored
    for record in records:
        found = _turns(record)
        if found is not None:
            interactions.append(found[0])
            modes.append(_mode(record))
            scored = scored or found[1]
    if not scored:
        return []
    table = turn_table(interactions, ALL, modes)
    lines: list[str] = []
    if full:
        scoring = ", ".join(sorted(set(modes)))
        lines.extend([f"Spider test-suite turn table (official evaluator layout, "
                      f"conversation_scoring: {scoring}):",
                      *format_levels(table), *format_turns(table), ""])
    if table.dropped:
        lines.append(f"conversation_scoring: {TSSE} dropped "
                     f"{plural(table.dropped, 'gold turn')} without a predicted turn from every "
                     "count (the reference's zip)")
    scored_zero = table.missing - table.dropped
    if scored_zero and full:
        lines.append(f"{plural(scored_zero, 'gold turn')} without a predicted turn scored 0 "
                     f"(conversation_scoring: {TSSE} would drop them, as the reference does)")
    if lines and lines[-1]:
        lines.append("")
    return lines
