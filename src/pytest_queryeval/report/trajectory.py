"""An agent case's trajectory shown step by step beside the gold one, with the step where
the two part (the terminal failure text, the Markdown and HTML reports, ``queryeval view``).

Why a module of its own: every report shows the same rows (one tool call per step, its
arguments and what came back), computed once here from the record, and the record holds
the trajectory bounded (:func:`.caps.cap_trajectory`): a trajectory comes from the model
under test, and a 10,000-call loop or a tool result holding a megabyte must not reach a
report whole. A tool result is data, never markup or an instruction: the writers escape it
as they escape a predicted query, and nothing here reads it but to show it.

Where a record keeps them: an agent case's trajectory and gold in ``details.agent``
(:mod:`..agents.scoring`), a trajectory the tool loop ran for a case without ``agent:`` (or
one the agent case refused as malformed) in ``details.prediction.agent``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .._util.boundedio import loads_json
from ..model import RecordLike

#: Characters of a cell in the step table (terminal, Markdown).
CELL = 120


# -- the steps --------------------------------------------------------------------------------
@dataclass(frozen=True)
class Step:
    """One tool call of a trajectory, with what came back (None: nothing did)."""

    name: str
    #: The arguments' JSON text (None: a gold step that names only its tool).
    arguments: str | None
    result: str | None

    def args_key(self) -> object:
        """The arguments as JSON values when they parse, so that spacing and key order do
        not part two steps."""
        text = self.arguments or ""
        try:
            return json.dumps(loads_json(text), sort_keys=True) if text.strip() else "{}"
        except ValueError:
            return text.strip()


def same_step(agent: Step, gold: Step) -> bool:
    """The agent's step is the gold's: the same tool, and the same arguments when the gold
    states them (a gold of tool names only, EvalBench's form, compares names)."""
    return agent.name == gold.name and (gold.arguments is None
                                        or agent.args_key() == gold.args_key())


def steps_of(trajectory: object) -> list[Step]:
    """The tool calls of a trajectory in order, each with its tool message's content; a
    final answer without a call is not a step (the final query is shown beside). A gold of
    tool names (``agent: {trajectory: [...]}``) or ``{name, arguments}`` steps is read too."""
    if not isinstance(trajectory, list):
        return []
    if trajectory and not any(isinstance(m, Mapping) and "role" in m for m in trajectory):
        return [_short_step(m) for m in trajectory]
    results = {m.get("tool_call_id"): m.get("content") for m in trajectory
               if isinstance(m, Mapping) and m.get("role") == "tool"}
    out: list[Step] = []
    for message in trajectory:
        if not isinstance(message, Mapping) or not isinstance(message.get("tool_calls"), list):
            continue
        for call in message["tool_calls"]:
            if not isinstance(call, Mapping):
                continue
            fn: Mapping[str, Any] = f if isinstance(f := call.get("function"), Mapping) else {}
            result = results.get(call.get("id"))
            out.append(Step(str(fn.get("name")), str(fn.get("arguments") or "{}"),
                            None if result is None else str(result)))
    return out


def _short_step(item: object) -> Step:
    if isinstance(item, Mapping):
        args = item.get("arguments")
        text = None if args is None else args if isinstance(args, str) else \
            json.dumps(args, default=str, ensure_ascii=False)
        return Step(str(item.get("name")), text, None)
    return Step(str(item), None, None)


def parting(predicted: Sequence[Step], gold: Sequence[Step]) -> int | None:
    """The index of the first step where the two trajectories part (a different tool or
    arguments, or one ended), or None when they agree step for step."""
    for i, (p, g) in enumerate(zip(predicted, gold, strict=False)):
        if not same_step(p, g):
            return i
    if len(predicted) != len(gold):
        return min(len(predicted), len(gold))
    return None


def trajectories(record: RecordLike) -> tuple[object, object]:
    """The agent's trajectory and the gold one a record holds (None where it holds none):
    an agent case's (``details.agent``, :mod:`..agents.scoring`), else the tool loop's own
    record of a case without ``agent:`` (``details.prediction.agent``)."""
    details = record.get("details") or {}
    if not isinstance(details, Mapping):
        return None, None
    scored: Mapping[str, Any] = a if isinstance(a := details.get("agent"), Mapping) else {}
    made = details.get("prediction")
    loop = made.get("agent") if isinstance(made, Mapping) else None
    predicted = scored.get("trajectory")
    if predicted is None and isinstance(loop, Mapping):
        predicted = loop.get("trajectory")
    return predicted, scored.get("gold_trajectory")


@dataclass(frozen=True)
class Table:
    """The rows every report shows: ``(step, predicted, gold, parts)``."""

    rows: list[tuple[int, Step | None, Step | None]]
    parts_at: int | None
    has_gold: bool


def step_table(record: RecordLike) -> Table | None:
    """The step table of a record with a trajectory, else None."""
    predicted, gold = trajectories(record)
    if predicted is None and gold is None:
        return None
    mine, theirs = steps_of(predicted), steps_of(gold)
    n = max(len(mine), len(theirs))
    rows = [(i + 1, mine[i] if i < len(mine) else None, theirs[i] if i < len(theirs) else None)
            for i in range(n)]
    return Table(rows, parting(mine, theirs) if gold is not None else None, gold is not None)


def step_text(step: Step | None, limit: int = CELL) -> str:
    """``run_query({"query": "SELECT 1"}) → [[1]]`` on one line, cut."""
    if step is None:
        return "—"
    text = f"{step.name}({_flat(step.arguments or '')})"
    if step.result is not None:
        text += f" → {_flat(step.result)}"
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _flat(text: str) -> str:
    return " ".join(text.split())


def parting_line(table: Table) -> str:
    if not table.has_gold:
        return f"{len(table.rows)} tool call(s); no gold trajectory to compare"
    if table.parts_at is None:
        return "the trajectory follows the gold step for step"
    return f"the trajectory parts from the gold at step {table.parts_at + 1}"


def trajectory_lines(record: RecordLike, limit: int = 40) -> list[str]:
    """The terminal's lines: a line per step, predicted then gold, the parting step marked
    (steps past ``limit`` counted, not shown)."""
    table = step_table(record)
    if table is None:
        return []
    out = ["trajectory: " + parting_line(table)]
    for number, mine, theirs in table.rows[:limit]:
        mark = "  ← parts here" if table.parts_at == number - 1 else ""
        out.append(f"  {number:>3} agent: {step_text(mine)}{mark}")
        if table.has_gold:
            out.append(f"      gold:  {step_text(theirs)}")
    if len(table.rows) > limit:
        out.append(f"  … {len(table.rows) - limit:,} more step(s)")
    return out


#: Steps of a trajectory ``queryeval view`` embeds per case and run.
MAX_STEPS = 200
#: An agent case's steps as the viewer embeds them: the parting step's index (None: none
#: parts), whether a gold is given, the parting line's string, and per step its number and
#: the agent's and the gold's step text (string indices, -1 for none).
Steps = tuple[int | None, bool, int, list[tuple[int, int, int]]]


def view_steps(record: RecordLike, add: Callable[[object], int]) -> Steps | None:
    """The record's trajectory beside its gold for ``queryeval view`` (``add``: the page's
    string table), or None."""
    table = step_table(record)
    if table is None:
        return None
    rows = [(number, add(step_text(mine, 400)) if mine else -1,
             add(step_text(theirs, 400)) if theirs else -1)
            for number, mine, theirs in table.rows[:MAX_STEPS]]
    line = parting_line(table)
    if len(table.rows) > MAX_STEPS:
        line += f" ({len(table.rows) - MAX_STEPS:,} more steps in the JSON report)"
    return table.parts_at, table.has_gold, add(line), rows
