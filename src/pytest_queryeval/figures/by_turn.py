"""Conversation cases in every report (issue 42 item 1): which records are conversations, the
by-turn table each format prints, and a case's outcome per turn for the baseline.

A conversation record holds ``details.turns``: one entry per scored turn, each with its
``turn`` (the user turn's number), its ``outcome`` and its ``metrics`` (docs/reports.md, "By
turn"). An SDMX record's ``details.turns`` (its per-turn term scores, with no ``outcome``) is
not one: SDMX reports stay as they were. Every writer reads the table from the aggregate
(``aggregates.by_turn``, ``aggregates.conversations``), never from the records, so a merged
or resumed run prints what a serial run prints.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._util.wording import plural
from .columns import is_detail_metric, lead_metrics, ordered_metrics
from .numbers import pct

if TYPE_CHECKING:
    from ..model import RecordLike

#: A turn's outcomes (``details.turns[i].outcome``): ``missing`` is a gold turn the prediction
#: never reached, scored 0 and counted in every denominator.
PASSED, MISSING = "passed", "missing"
#: The counts of a ``by_turn`` entry; every other key is a metric's mean over the turn.
COUNTS = ("turns", "passed", "missing", "turn_accuracy")
#: The metric columns the terminal and Markdown tables show (the HTML and Excel ones show all).
SHOWN_METRICS = 3


def scored_turns(record: RecordLike) -> list[Mapping[str, Any]] | None:
    """The scored turns of a conversation record, in its order; None for any other record
    (no ``details.turns``, or an SDMX record's, whose entries carry no outcome)."""
    details = record.get("details")
    if not isinstance(details, Mapping):
        return None
    turns = details.get("turns")
    if not isinstance(turns, list) or not turns:
        return None
    entries = [t for t in turns if isinstance(t, Mapping)]
    if len(entries) != len(turns) or not all(
            "outcome" in t and turn_number(t) is not None for t in entries):
        return None
    return entries


def turn_number(entry: Mapping[str, Any]) -> int | None:
    """The entry's turn number (an int >= 1), or None when it has none."""
    value = entry.get("turn")
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        return None
    return value


def turn_outcomes(record: RecordLike) -> dict[int, str]:
    """``{turn: outcome}`` of a conversation record (empty for any other): what the baseline
    file keeps of each turn, and what a comparison pairs."""
    return {int(entry["turn"]): str(entry.get("outcome"))
            for entry in scored_turns(record) or ()}


def flip_id(case_id: str, turn: int) -> str:
    """How a turn's flip is named in every report: ``invoices-chat#turn3``."""
    return f"{case_id}#turn{turn}"


def slim_turns(turns: object) -> object:
    """A conversation's ``details.turns`` with only what the aggregates and the baseline read
    (``queryeval merge`` keeps this much of each record; the texts stay on disk)."""
    if not isinstance(turns, list) or not all(isinstance(t, Mapping) and "outcome" in t
                                              for t in turns):
        return turns
    from .turn_table import turn_hardness

    # the gold's Spider hardness stays (the turn table counts by it), not the gold's text
    return [{**{k: v for k, v in t.items() if k not in ("question", "gold", "predicted",
                                                          "reason")},
             **({"hardness": hard} if (hard := turn_hardness(t.get("gold"))) else {})}
            for t in turns]


@dataclass(frozen=True)
class TurnTable:
    """The by-turn table every format prints: a row per turn number, then ``all``."""

    #: The metric columns, in the reports' order.
    metrics: list[str]
    #: (turn label, turns, passed, missing, turn accuracy, a mean per metric column).
    rows: list[tuple[str, int, int, int, float | None, list[float | None]]]
    conversations: Mapping[str, Any]

    @property
    def missing(self) -> bool:
        """Whether any turn is missing (the column is shown only then)."""
        return any(row[3] for row in self.rows)


def turn_table(agg: Mapping[str, Any], gated: set[str] | None = None, *,
               every: bool = False) -> TurnTable | None:
    """The table of ``agg["by_turn"]``, None when the run has no conversation case.
    ``gated`` (the report's :func:`~.columns.gated_metrics`): only the columns a summary leads
    with, as the kinds' tables (the gated metrics, else the first headline one; at most
    :data:`SHOWN_METRICS`); ``every``: the per-component ones too (the Excel sheet: a SQL
    turn has 30 Spider component scores)."""
    by_turn = agg.get("by_turn")
    if not isinstance(by_turn, Mapping) or not by_turn:
        return None
    names = {m for entry in by_turn.values() if isinstance(entry, Mapping)
             for m in entry if m not in COUNTS}
    metrics = [m for m in ordered_metrics(names) if every or not is_detail_metric(m)]
    if gated is not None:
        metrics = lead_metrics(metrics, gated)[:SHOWN_METRICS]
    rows: list[tuple[str, int, int, int, float | None, list[float | None]]] = []
    for key in sorted(by_turn, key=_turn_key):
        entry = by_turn[key]
        rows.append((str(key), int(entry.get("turns") or 0), int(entry.get("passed") or 0),
                     int(entry.get("missing") or 0), _number(entry.get("turn_accuracy")),
                     [_number(entry.get(m)) for m in metrics]))
    conv = agg.get("conversations")
    conversations: Mapping[str, Any] = conv if isinstance(conv, Mapping) else {}
    if len(rows) > 1:
        rows.append(("all", sum(r[1] for r in rows), sum(r[2] for r in rows),
                     sum(r[3] for r in rows), _number(conversations.get("turn_accuracy")),
                     [None] * len(metrics)))
    return TurnTable(metrics, rows, conversations)


def _turn_key(key: object) -> tuple[int, str]:
    text = str(key)
    return (int(text), "") if text.isdigit() else (1 << 30, text)


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def conversations_line(conversations: Mapping[str, Any]) -> str:
    """``conversations: 3 cases, interaction accuracy 33.3% (1 of 3), turn accuracy ...``."""
    cases = int(conversations.get("cases") or 0)
    turns = int(conversations.get("turns") or 0)
    passed = int(conversations.get("passed") or 0)
    interactions = int(conversations.get("interactions_passed") or 0)
    missing = int(conversations.get("missing") or 0)
    dropped = conversations.get("dropped_turns")
    text = (f"conversations: {plural(cases, 'case')}, interaction accuracy "
            f"{pct(_number(conversations.get('interaction_accuracy')))} ({interactions} of "
            f"{cases}), turn accuracy {pct(_number(conversations.get('turn_accuracy')))} "
            f"({passed} of {plural(turns, 'scored turn')}"
            + (f", {missing} missing" if missing else "") + ")")
    if dropped:
        text += (f"; {plural(int(dropped), 'turn')} dropped by conversation_scoring: tsse "
                 "(counted in no denominator)")
    return text


def junit_properties(agg: Mapping[str, Any]) -> list[tuple[str, float | int]]:
    """The by-turn table as junit ``<testsuite>`` properties: ``queryeval.turn.2.turns``,
    ``queryeval.turn.2.turn_accuracy``, ``queryeval.turn.2.mean.<metric>`` and
    ``queryeval.conversations.*`` (none without a conversation case)."""
    table = turn_table(agg)
    if table is None:
        return []
    out: list[tuple[str, float | int]] = []
    for label, turns, passed, missing, rate, means in table.rows:
        if label == "all":
            continue
        prefix = f"queryeval.turn.{label}"
        out += [(f"{prefix}.turns", turns), (f"{prefix}.passed", passed)]
        if missing:
            out.append((f"{prefix}.missing", missing))
        if rate is not None:
            out.append((f"{prefix}.turn_accuracy", float(f"{rate:.6g}")))
        out += [(f"{prefix}.mean.{m}", float(f"{v:.6g}"))
                for m, v in zip(table.metrics, means, strict=True) if v is not None]
    for key in ("cases", "turns", "passed", "interaction_accuracy", "turn_accuracy"):
        value = _number(table.conversations.get(key))
        if value is not None:
            out.append((f"queryeval.conversations.{key}",
                        int(value) if key in ("cases", "turns", "passed")
                        else float(f"{value:.6g}")))
    return out
