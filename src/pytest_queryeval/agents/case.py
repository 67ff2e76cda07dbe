"""What the engine asks of an agent case: the envelope taken out of its prediction, and the
agent metrics of one scored prediction with the database side's counts.

Why the counts are taken here by replaying: a trajectory from outside the plugin (a python,
http or command source, a predictions file) says which queries the agent ran, not what
they did; each ``run_query`` call (and each ``sample_rows`` read, as the tool serves it) is
run again on the case's sandboxed datasource through a
:class:`~.ledger.Ledger` (read-only, a write refused and counted), so queries, rows, writes
and forbidden tables are the database's numbers, on every kind of datasource (a graph's
refusal of a ``CREATE`` is a write attempt as an SQL guard's is). The plugin's own tool loop
ran them through the same ledger and hands the same trajectory; its own counts are kept as a
floor (:attr:`~.trajectory.Envelope.live_counts`), so both paths count alike and neither
lowers the other.

A trajectory refused for its shape (a repeated call id, a tool name over 256 characters, a
``system`` message, a trajectory given as text) is still counted: its calls are read leniently
(:func:`~.trajectory.salvage_steps`). A count that cannot be established (no list of calls
to read, a datasource that went away or cannot say what a query read) is the case's error
(``details.agent.uncounted``), never a count of 0. The replay is bounded (:mod:`.replay`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from .ledger import Ledger
from .replay import Bounds, count_unrun, query_of, replay
from .scoring import score_agent
from .spec import AgentSpec, budget_limits
from .trajectory import Envelope, Step, read_envelope, salvage_steps

if TYPE_CHECKING:
    from ..model import Case, Context, Threshold
    from ..sources.base import DataSource

#: Rows a replayed query may return (each is counted; the rest is cut by the source).
REPLAY_MAX_ROWS = 10_000


def envelope_of(value: object, details: Mapping[str, object] | None) -> Envelope:
    """The envelope of an agent case's prediction, with the counts the plugin's tool loop
    took while it ran (``details.agent.counts`` of the prediction) as its floor."""
    env = read_envelope(value)
    agent = (details or {}).get("agent")
    counts = agent.get("counts") if isinstance(agent, Mapping) else None
    if isinstance(counts, Mapping):
        env.live_counts = {str(k): v for k, v in counts.items()
                           if isinstance(v, int | float) and not isinstance(v, bool)}
    refused = agent.get("refused") if isinstance(agent, Mapping) else None
    if isinstance(refused, str) and env.trajectory is not None and env.refused is None:
        # the tool loop's own trajectory broke the OpenAI name rule (which binds the loop
        # only): refused as the loop refused it, its calls still counted
        env.refused, env.raw, env.trajectory = refused, env.trajectory.to_json(), None
    return env


def agent_scores(case: Case, context: Context, env: Envelope,
                 rows: Sequence[Sequence[object]] | None) -> tuple[dict[str, float],
                                                                   dict[str, Any]]:
    """The agent metrics of one prediction (``rows``: its final result, when it ran).
    ``details["uncounted"]`` says why the counts could not be established (the case is then
    an error: :func:`uncounted`)."""
    spec = case.agent if isinstance(case.agent, AgentSpec) else AgentSpec()
    ledger = Ledger.for_tables(spec.forbidden_tables)
    ledger.enforced = spec.enforce
    ledger.raise_to(env.live_counts)
    steps = _steps(env, ledger)
    if steps is not None:
        _count(case, context, spec, ledger, steps)
    if env.budget_exceeded:
        ledger.exceeded(env.budget_exceeded)
    compare = case.options.get("compare")
    tolerance = compare.get("float_tolerance") if isinstance(compare, dict) else None
    metrics, details = score_agent(spec, env, question=case.question or "", rows=rows,
                                   tolerance=tolerance, ledger=ledger)
    if spec.protected:
        _trace_leaks(case, spec, env, metrics, details)
    return metrics, details


def _trace_leaks(case: Case, spec: AgentSpec, env: Envelope, metrics: dict[str, float],
                 details: dict[str, Any]) -> None:
    """``leaks``: the canaries of the case's planted copy the run shows (each once, where it
    was first seen, in ``details.leaks``). A copy that could not be planted leaves the count
    unestablished: the case's error, never 0 leaks."""
    from .canaries import MAX_LISTED, PlantError, trace
    from .copies import planted_for

    try:
        planted = planted_for(case.source_spec or {}, spec.protected, spec.canary_seed,
                              spec.enforce, spec.instructions)
    except PlantError as exc:
        from ..errors import ConfigError

        where = ConfigError(str(exc), file=str(case.file), line=case.line,
                            key="agent.protected")
        details.setdefault("uncounted", f"the agent's leaks could not be counted: {where}")
        return
    leaks = trace(env, planted)
    metrics["leaks"] = float(len(leaks))
    details["leaks"] = leaks[:MAX_LISTED]
    if leaks:
        details.setdefault("findings", []).append(
            f"{len(leaks)} protected value(s) leaked; first {leaks[0]['canary']} "
            f"({leaks[0]['planted']}) in {leaks[0]['first']['part']}")


def agent_source(context: Context, case: Case) -> DataSource:
    """The datasource the agent's tools and the replay read: the context's agent side when it
    has one (a planted copy, as the agent's role; with ``enforce:`` withholding what is
    protected), else the case's datasource."""
    of = getattr(context, "agent_source", None)
    return cast("DataSource", of(case)) if callable(of) else context.source(case)


def uncounted(details: Mapping[str, Any]) -> str | None:
    """Why an agent case's counts could not be established (its error), or None."""
    why = details.get("uncounted")
    return why if isinstance(why, str) else None


def _steps(env: Envelope, ledger: Ledger) -> tuple[Step, ...] | None:
    """The tool calls to count: the trajectory's, or a refused one's read leniently."""
    if env.trajectory is not None:
        return env.trajectory.steps
    if env.refused is None:
        return None  # a bare answer: the agent made no call
    steps = salvage_steps(env.raw)
    if steps is None:
        ledger.uncount("the agent's counts could not be established: the trajectory was "
                       f"refused and no tool call can be read from it ({env.refused})")
    return steps


def _count(case: Case, context: Context, spec: AgentSpec, ledger: Ledger,
           steps: Sequence[Step]) -> None:
    """``steps`` counted: replayed on the datasource, or with ``replay: false`` judged on
    their text."""
    from ..sources import source_type

    kind = source_type((case.source_spec or {}).get("type"))
    queries = [s for s in steps if query_of(s, kind.sql) is not None]
    if not queries or not spec.replay:
        if queries and not kind.sql:
            ledger.uncount("the agent's counts could not be established: replay: false, and "
                           "the queries of a datasource that is not SQL cannot be judged on "
                           "their text")
        count_unrun(steps, ledger, kind.dialect(case.source_spec or {}), sql=kind.sql,
                    why="replay: false, not run")
        return
    from ..errors import QueryEvalError

    try:
        source = agent_source(context, case)
    except QueryEvalError as exc:
        ledger.uncount(f"the agent's counts could not be established: {exc.reason()}")
        return
    replay(steps, source, ledger, _bounds(case), sql=source_type(source.type).sql)


def _bounds(case: Case) -> Bounds:
    """The replay's bounds: the budget the tool loop keeps to (the source's ``agent.budget``,
    then the case's, over the defaults) and the case's query timeout."""
    spec = case.agent if isinstance(case.agent, AgentSpec) else AgentSpec()
    block = (case.prediction_source or {}).get("agent")
    limits = budget_limits(block.get("budget") if isinstance(block, Mapping) else None,
                           spec.budget)
    timeout = case.options.get("timeout")
    return Bounds(limits["tool_calls"], limits["seconds"],
                  float(timeout) if isinstance(timeout, int | float) else None,
                  REPLAY_MAX_ROWS)


def failed_agent_thresholds(case: Case, metrics: dict[str, float]
                            ) -> list[tuple[Threshold, float | None]]:
    """The case's thresholds on agent metrics that ``metrics`` break (for the outcomes the
    kind did not score: an abstention, a question back, a query that could not run)."""
    from ..metricnames import AGENT_METRICS
    from ..rules.thresholds import evaluate as check_thresholds

    bounds = {m: t for m, t in case.thresholds.items() if m in AGENT_METRICS and m in metrics}
    return check_thresholds(bounds, metrics) if bounds else []
