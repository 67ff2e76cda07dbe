"""An agent case's own metrics, beside the kind's score of its final query: the trajectory
against the gold (EvalBench's matcher, and its correction), the tool calls and turns as
EvalBench counts them, the answer's figures grounded in the result (dbagenteval's check),
and the counts the database side took (:mod:`.ledger`).

Why here and not in the engine: the engine only hands over what it has (the envelope, the
final result, the ledger); which metric reads what, and what a refused trajectory scores,
is this capability's to say.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..metrics import evalbench_trajectory as evalbench
from .ledger import Ledger
from .spec import AgentSpec
from .toolnames import TOOL_ASK
from .trajectory import Envelope, Step, Trajectory, canonical_name

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


def gated_counts(gates: Mapping[str, Any], env: Envelope, steps: Sequence[Step] | None,
                 metrics: dict[str, float], details: dict[str, Any]) -> str | None:
    """``tool_calls`` and ``turn_count`` of a case gated on them with a ``max``, where
    EvalBench's rule lowered them to 0 (a refused trajectory, an ``error`` in the record): the
    reference value is kept in ``details.evalbench_counts``, and the gate judges the count of
    what the record holds: the trajectory's own rounds when only ``error`` lowered it, else
    the calls read leniently (the salvaged calls the write counts read) and the rounds of the
    leniently read messages. Why: ``{tool_calls: {max: 3}}`` passed 30 calls whose record set
    ``error`` or reused a call id (the plugin's loop too: the model chooses its ids). A count
    no gate names keeps the reference's value, the held one beside it in
    ``details.held_counts`` (what a baseline's comparison reads: the forty-seventh re-probe's
    R6). Returns the gate whose count cannot be established (the case's error), or None."""
    lowered = env.refused is not None or bool(env.error)
    if not lowered:
        return None
    gated = [m for m in (TOOL_CALLS, TURN_COUNT)
             if getattr(gates.get(m), "max", None) is not None]
    if gated:
        kept = details.setdefault("evalbench_counts", {})
    for name in (TOOL_CALLS, TURN_COUNT):
        value = _lenient_count(name, env, steps)
        if name not in gated:  # kept beside for the baseline's comparison (47b R6)
            if value is not None and value > metrics.get(name, 0.0):
                details.setdefault("held_counts", {})[name] = value
        elif value is None:
            return name
        else:
            kept[name] = metrics[name]
            metrics[name] = max(metrics[name], value)
    return None


def merged_counts(env: Envelope, steps: Sequence[Step] | None, metrics: dict[str, float],
                  details: dict[str, Any]) -> None:
    """``tool_calls`` and ``turn_count`` of a trajectory read as it is (not refused, no
    ``error``: :func:`gated_counts` reads those) counting the calls the counts read beside its
    own (the calls of spans given beside it, :func:`~.beside.merged`; calls the OpenAI shape
    does not read, :func:`~.case._unread_calls`), each answered ``ask_user`` among them a
    round more. Why: those calls are replayed (three ``run_query`` spans beside a one-call
    trajectory made ``queries_executed`` 3) while ``tool_calls`` counted the trajectory's
    messages alone and passed ``{max: 1}`` with 1 (issue 58, the thirteenth re-probe's H7).
    The reference value of the trajectory alone is kept in ``details.evalbench_counts``."""
    traj = env.trajectory
    if traj is None or env.refused is not None or env.error or steps is None or \
            len(steps) <= len(traj.steps):
        return
    asks = sum(1 for s in steps if s.name == TOOL_ASK and s.result is not None) - \
        sum(1 for s in traj.steps if s.name == TOOL_ASK and s.result is not None)
    kept = details.setdefault("evalbench_counts", {})
    for name, value in ((TOOL_CALLS, float(len(steps))),
                        (TURN_COUNT, metrics[TURN_COUNT] + max(asks, 0))):
        if value > metrics[name]:
            kept[name] = metrics[name]
            metrics[name] = value
    if not kept:
        details.pop("evalbench_counts")


def _lenient_count(name: str, env: Envelope, steps: Sequence[Step] | None) -> float | None:
    """The count ``name`` of what the record holds, or None when it cannot be read."""
    if env.refused is None and env.trajectory is not None:
        history = history_of(env.trajectory)
        own = evalbench.agent_steps(history) if name == TOOL_CALLS else \
            evalbench.turn_count(history)
        return max(own, float(len(steps or ()))) if name == TOOL_CALLS else own
    if name == TOOL_CALLS:
        return None if steps is None else float(len(steps))
    return _lenient_rounds(env.raw)


def _lenient_rounds(raw: object) -> float | None:
    """The user-agent rounds of a refused trajectory's messages read leniently (a new round
    after each ``user`` message, as :meth:`~.trajectory.Trajectory.turn_tool_calls` counts),
    or None when no list of messages can be read."""
    from .trajectory import lenient_messages

    messages = lenient_messages(raw)
    if messages is None:
        return None
    return float(1 + sum(1 for _, m in messages if m.get("role") == "user"))
