"""What the engine asks of an agent case: the envelope taken out of its prediction, and the
agent metrics of one scored prediction with the database side's counts.

Why the counts are taken here by replaying: a trajectory from outside the plugin (a python,
http or command source, a predictions file) says which queries the agent ran, not what
they did; each ``run_query`` call (and each ``sample_rows`` read, as the tool serves it) is
run again on the case's sandboxed datasource through a
:class:`~.ledger.Ledger` (read-only, a write refused and counted), so queries, rows, writes
and forbidden tables are the database's numbers. The plugin's own tool loop ran them through
the same ledger and hands the same trajectory, so both paths count alike.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .ledger import Ledger, replay
from .scoring import score_agent
from .spec import AgentSpec
from .trajectory import Envelope, Trajectory, step_query, step_sample_query

if TYPE_CHECKING:
    from ..model import Case, Context, Threshold

#: Rows a replayed query may return (each is counted; the rest is cut by the source).
REPLAY_MAX_ROWS = 10_000


def agent_scores(case: Case, context: Context, env: Envelope,
                 rows: Sequence[Sequence[object]] | None) -> tuple[dict[str, float],
                                                                   dict[str, Any]]:
    """The agent metrics of one prediction (``rows``: its final result, when it ran)."""
    spec = case.agent if isinstance(case.agent, AgentSpec) else AgentSpec()
    ledger = Ledger.for_tables(spec.forbidden_tables)
    problem = None
    traj = env.trajectory
    if traj is not None and spec.replay and any(step_query(s) or step_sample_query(s)
                                                for s in traj.steps):
        problem = _replay(case, context, ledger, traj)
    elif traj is not None:
        for step in traj.steps:
            ledger.call(step)
    if env.budget_exceeded:
        ledger.exceeded(env.budget_exceeded)
    compare = case.options.get("compare")
    tolerance = compare.get("float_tolerance") if isinstance(compare, dict) else None
    metrics, details = score_agent(spec, env, question=case.question or "", rows=rows,
                                   tolerance=tolerance, ledger=ledger)
    if problem:
        details["replay_error"] = problem
    return metrics, details


def _replay(case: Case, context: Context, ledger: Ledger, traj: Trajectory) -> str | None:
    from ..errors import QueryEvalError
    from ..sources import SOURCE_TYPES

    try:
        source = context.source(case)
    except QueryEvalError as exc:
        return f"the trajectory's queries were not counted: {exc.reason()}"
    kind = SOURCE_TYPES.get(getattr(source, "type", ""))
    if kind is None or not kind.sql:
        return "the trajectory's queries were not counted: its datasource is not an SQL one"
    timeout = case.options.get("timeout")
    replay(traj, source, ledger, max_rows=REPLAY_MAX_ROWS,
           timeout=float(timeout) if isinstance(timeout, int | float) else None)
    return None


def failed_agent_thresholds(case: Case, metrics: dict[str, float]
                            ) -> list[tuple[Threshold, float | None]]:
    """The case's thresholds on agent metrics that ``metrics`` break (for the outcomes the
    kind did not score: an abstention, a question back, a query that could not run)."""
    from ..metricnames import AGENT_METRICS
    from ..rules.thresholds import evaluate as check_thresholds

    bounds = {m: t for m, t in case.thresholds.items() if m in AGENT_METRICS and m in metrics}
    return check_thresholds(bounds, metrics) if bounds else []
