"""The Spider test-suite evaluator's interaction scores: exact match per turn and ``joint_all``.

Reference: taoyds/test-suite-sql-eval ``evaluation.py`` @ e97acc546ecbee8fa27fa8dbf025ef61493a876c
(``evaluate`` and ``print_scores``, ``--etype match``), the official SParC and CoSQL evaluator.
Published SParC/CoSQL numbers are this table, so it is reproduced digit for digit: per gold turn
index the exact set match (columns ``turn 1`` .. ``turn 4``, then ``turn > 4``), per gold
hardness, and ``joint_all``: the share of interactions whose scored turns all match.

One reference behaviour is a quirk, kept only under its name: the reference pairs predicted and
gold turns with ``zip``, so a predicted interaction with fewer turns silently drops the missing
gold turns from every count (they cannot fail ``joint_all`` either, and an interaction with no
predicted turn at all counts as a joint success: ``all([])``). ``conversation_scoring: tsse``
(:data:`TSSE`) does that and says how many turns it dropped; the default (:data:`ALL`) scores a
missing turn 0 and keeps it in every denominator. The reference can only miss trailing turns (a
shorter session); a turn missing in the middle of a conversation is dropped where it is.

Its other text rule, ``value`` in a prediction read as ``1`` (:func:`reference_prediction`), is
applied by :func:`score_texts` here and by ``queryeval import sparc --reference`` for suites.
Pure: no pytest, no records (``figures/turn_table.py`` reads those).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

#: The two ways a conversation's missing predicted turns are counted (``conversation_scoring``).
ALL = "all"
TSSE = "tsse"
MODES = (ALL, TSSE)

#: The reference's column names, in its order.
TURN_COLUMNS = ("turn 1", "turn 2", "turn 3", "turn 4", "turn > 4")
HARDNESS = ("easy", "medium", "hard", "extra")
LEVEL_COLUMNS = (*HARDNESS, "all", "joint_all")


@dataclass(frozen=True, slots=True)
class Turn:
    """One gold turn of an interaction: its exact set match (``None``: no predicted turn) and
    the gold's Spider hardness (``None`` when unknown: counted under ``all`` only)."""

    exact: float | None
    hardness: str | None = None


@dataclass(slots=True)
class Column:
    count: int = 0
    matched: float = 0.0

    @property
    def exact(self) -> float:
        """The reference's mean; a column without items prints 0 (it skips the division)."""
        return self.matched / self.count if self.count else 0.0


@dataclass(slots=True)
class TurnTable:
    """The counts and means the reference prints for interactions, and what the mode dropped."""

    mode: str
    turns: dict[str, Column] = field(default_factory=lambda: {c: Column() for c in TURN_COLUMNS})
    levels: dict[str, Column] = field(
        default_factory=lambda: {c: Column() for c in LEVEL_COLUMNS})
    #: gold turns left out of every count (``tsse`` mode only: missing predicted turns)
    dropped: int = 0
    #: gold turns with no predicted turn (counted 0 in ``all`` mode, dropped in ``tsse``)
    missing: int = 0

    @property
    def interactions(self) -> int:
        return self.levels["joint_all"].count


def turn_column(number: int) -> str:
    """The reference's column of the 1-based turn ``number`` (``idx > 3`` shares ``turn > 4``)."""
    if number < 1:
        raise ValueError(f"turn numbers start at 1, got {number}")
    return TURN_COLUMNS[min(number, 5) - 1]


def turn_table(interactions: Iterable[Sequence[Turn]], mode: str = ALL,
               modes: Sequence[str] | None = None) -> TurnTable:
    """Count interactions as ``evaluate`` does; each is its gold turns in order. ``modes``
    gives each interaction its own ``conversation_scoring`` (a suite may set it per case)."""
    for m in (mode, *(modes or ())):
        if m not in MODES:
            raise ValueError(f"conversation_scoring must be one of {', '.join(MODES)}, got {m!r}")
    table = TurnTable(mode)
    for i, turns in enumerate(interactions):
        drop = (modes[i] if modes is not None else mode) == TSSE
        table.levels["joint_all"].count += 1
        joint = True
        for number, turn in enumerate(turns, 1):
            exact = turn.exact
            if exact is None:
                table.missing += 1
                if drop:
                    table.dropped += 1
                    continue
                exact = 0.0
            for col in (table.turns[turn_column(number)], table.levels["all"],
                        table.levels.get(turn.hardness or "")):
                if col is not None:
                    col.count += 1
                    col.matched += exact
            joint = joint and exact == 1
        if joint:
            table.levels["joint_all"].matched += 1
    return table


def _row(name: str, values: Sequence[object], fmt: str) -> str:
    """``print_formated_s``: ``"{:20} " + " ".join([fmt] * n)``."""
    return ("{:20} " + " ".join([fmt] * len(values))).format(name, *values)


def format_levels(table: TurnTable) -> list[str]:
    """The header, count and exact-match rows of the reference's first table, with its
    ``joint_all`` column (the partial-matching rows need each turn's components: not kept)."""
    cols = [table.levels[c] for c in LEVEL_COLUMNS]
    return [_row("", list(LEVEL_COLUMNS), "{:20}"),
            _row("count", [c.count for c in cols], "{:<20d}"),
            "",
            "====================== EXACT MATCHING ACCURACY =====================",
            _row("exact match", [c.exact for c in cols], "{:<20.3f}")]


def format_turns(table: TurnTable) -> list[str]:
    """The reference's turn table (``print_scores``' last lines, the two blank lines before it
    included), line for line."""
    cols = [table.turns[c] for c in TURN_COLUMNS]
    return ["", "",
            _row("", list(TURN_COLUMNS), "{:20}"),
            _row("count", [c.count for c in cols], "{:<20d}"),
            "",
            "====================== TURN EXACT MATCHING ACCURACY =====================",
            _row("exact match", [c.exact for c in cols], "{:<20.3f}")]


def reference_prediction(text: str) -> str:
    """The reference reads ``value`` (a model's placeholder) as ``1`` anywhere in a prediction
    (``p_str.replace("value", "1")``), identifiers included."""
    return text.replace("value", "1")


# -- the reference's text files ----------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class TextTurn:
    """One non-blank line of a TSSE interaction file: its fields and where it was read."""

    fields: tuple[str, ...]
    line: int


def read_sessions(path: str | Path) -> list[list[TextTurn]]:
    """Interactions as ``evaluate`` reads them: a blank line ends one (two in a row make an empty
    one), the last counts without a trailing blank line, fields split on tabs."""
    return parse_sessions(Path(path).read_text(encoding="utf-8"))


def parse_sessions(text: str) -> list[list[TextTurn]]:
    """:func:`read_sessions` of a file's text (line numbers from 1)."""
    sessions: list[list[TextTurn]] = []
    current: list[TextTurn] = []
    # ``readlines()`` of a file opened in text mode: universal newlines, and only those
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    if lines[-1] == "":
        lines.pop()
    for n, line in enumerate(lines, 1):
        if not line.strip():
            sessions.append(current)
            current = []
        else:
            current.append(TextTurn(tuple(line.strip().split("\t")), n))
    if current:
        sessions.append(current)
    return sessions


def score_texts(gold: Sequence[Sequence[tuple[str, str]]], pred: Sequence[Sequence[str]],
                tables: str | Path) -> list[list[Turn]]:
    """Each gold turn ``(sql, db_id)`` scored against the predicted turn at its index (none:
    ``exact=None``) with the plugin's port of the evaluator's exact set match, after the
    reference's ``value`` rewrite (:func:`reference_prediction`)."""
    from .spider import Schema, structure_scores

    out: list[list[Turn]] = []
    for g_session, p_session in zip(gold, pred, strict=True):
        turns: list[Turn] = []
        for i, (g_sql, db_id) in enumerate(g_session):
            schema = Schema.from_tables_json(tables, db_id)
            if i >= len(p_session):
                from .spider import hardness

                turns.append(Turn(None, hardness(g_sql, schema)))
                continue
            res = structure_scores(g_sql, reference_prediction(p_session[i]), schema)
            turns.append(Turn(float(res.exact), res.hardness))
        out.append(turns)
    return out
