"""An agent case's own metrics, beside the kind's score of its final query: the trajectory
against the gold (EvalBench's matcher, and its correction), the tool calls and turns as
EvalBench counts them, the answer's figures grounded in the result (dbagenteval's check),
and the counts the database side took (:mod:`.ledger`).

Why here and not in the engine: the engine only hands over what it has (the envelope, the
final result, the ledger); which metric reads what, and what a refused trajectory scores,
is this capability's to say.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..metrics import evalbench_trajectory as evalbench
from .ledger import Ledger
from .spec import AgentSpec
from .trajectory import Envelope, Trajectory, canonical_name

#: The metric names of the trajectory scores (0-100, EvalBench's scale).
TRAJECTORY_MATCH = "trajectory_match"
TRAJECTORY_MATCH_ORDERED = "trajectory_match_ordered"
TRAJECTORY_MATCH_MULTISET = "trajectory_match_multiset"
#: EvalBench's counts.
TOOL_CALLS = "tool_calls"
TURN_COUNT = "turn_count"
#: 1 when every figure of the final answer is grounded in the final result.
ANSWER_GROUNDED = "answer_grounded"


def history_of(trajectory: Trajectory | None) -> list[dict[str, Any]]:
    """The trajectory as EvalBench's ``conversation_history``: one entry per user-agent
    round, its agent payload holding that round's tool calls."""
    if trajectory is None:
        return [{"agent": {"tool_calls": []}}]
    out: list[dict[str, Any]] = []
    calls = iter(trajectory.steps)
    for count in trajectory.turn_tool_calls():
        out.append({"agent": {"tool_calls": [next(calls).name for _ in range(count)]}})
    return out


def score_agent(spec: AgentSpec, env: Envelope, *, question: str = "",
                rows: Sequence[Sequence[object]] | None = None, tolerance: float | None = None,
                ledger: Ledger | None = None) -> tuple[dict[str, float], dict[str, Any]]:
    """The agent metrics of one prediction and what the record shows of them."""
    metrics: dict[str, float] = {}
    details: dict[str, Any] = {}
    traj = env.trajectory
    if traj is not None:
        details["trajectory"] = traj.to_json()
        problems = [f"step {s.index + 1} ({s.name}): {s.error}" for s in traj.steps if s.error]
        if problems:
            details["step_problems"] = problems[:50]
    if env.answer is not None:
        details["answer"] = env.answer
    if env.refused is not None:
        details["refused"] = env.refused
    if env.error is not None:
        details["error"] = env.error
    # a refused trajectory is one the reference would not get as a list: its rules score it
    actual: object = "refused" if env.refused else (traj.canonical_names() if traj else [])
    if spec.trajectory is not None:
        gold = [canonical_name(n) for n in spec.trajectory]
        details["gold_trajectory"] = list(spec.trajectory)
        native, error = spec.filter_native_tools, env.error
        metrics[TRAJECTORY_MATCH], why = evalbench.trajectory_score(
            gold, actual, filter_native_tools=native, generated_error=error)
        metrics[TRAJECTORY_MATCH_ORDERED], _ = evalbench.trajectory_score(
            gold, actual, enforce_order=True, filter_native_tools=native, generated_error=error)
        metrics[TRAJECTORY_MATCH_MULTISET], _ = evalbench.multiset_score(
            gold, actual, filter_native_tools=native, generated_error=error)
        details["trajectory_match"] = why
    history: object = "refused" if env.refused else history_of(traj)
    metrics[TOOL_CALLS] = evalbench.agent_steps(history, env.error)
    metrics[TURN_COUNT] = evalbench.turn_count(history, env.error)
    if env.answer is not None and rows is not None:
        from ..metrics.grounded_answer import ungrounded_numbers

        missing = ungrounded_numbers(env.answer, question, rows, tolerance)
        metrics[ANSWER_GROUNDED] = 0.0 if missing else 1.0
        if missing:
            details["ungrounded"] = missing[:50]
    if ledger is not None:
        metrics.update(ledger.metrics())
        details.update(ledger.details())
        if not ledger.findings:
            details.pop("findings", None)
    return metrics, details
