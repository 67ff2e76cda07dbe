"""A trajectory's tool calls run again on the case's datasource, within bounds, so that its
counts are the database's.

Why bounded: a trajectory is the model's answer. One reply of 2,000 heavy ``run_query`` calls,
or a predictions-file line of 20,000, replayed in full at up to the query timeout each, ran for
hours for one case. The replay keeps to the budget the tool loop keeps to (``tool_calls``,
``seconds``; :func:`~.spec.budget_limits`) and to the run's query timeout: the calls past it are
not run, the case is over budget (``budget_exceeded``, which a budget gate fails) and the
record says how many were not replayed. What was not run still counts where the text alone can
say it (a write, a forbidden table named, a repeated call), so a bound never lowers a count.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import QueryEvalError, SourceUnavailable
from .ledger import CountUnknown, Ledger
from .trajectory import TOOL_ABSTAIN, TOOL_ASK, Step, plugin_tool, step_query, step_sample_query

if TYPE_CHECKING:
    from ..sources.base import DataSource

#: The tools that end the loop (asked back, declined): never counted against ``tool_calls``.
_FINAL = frozenset({TOOL_ASK, TOOL_ABSTAIN})


@dataclass(frozen=True)
class Bounds:
    """What a replay may spend."""

    #: Tool calls replayed at most (the loop's ``tool_calls`` budget).
    tool_calls: float
    #: Wall seconds the replay may take (the loop's ``seconds`` budget).
    seconds: float
    #: Seconds one query may run (the case's ``timeout``; None: the source's own, and the
    #: seconds left when the source has none).
    timeout: float | None
    #: Rows one query may return (each is counted; the rest is cut by the source).
    max_rows: int


def query_of(step: Step, sql: bool) -> str | None:
    """The query a step runs on the datasource: a ``run_query`` call's, and on an SQL
    datasource a ``sample_rows`` call's as the tool serves it; None for any other step, or an
    empty query (the tool loop runs neither)."""
    query = step_query(step) or (step_sample_query(step) if sql else None)
    return query if query and query.strip() else None


def replay(steps: Sequence[Step], source: DataSource, ledger: Ledger, bounds: Bounds, *,
           sql: bool) -> None:
    """Count ``steps`` from the database side: every call goes through :meth:`Ledger.call`,
    every query through :meth:`Ledger.run_query` on the sandboxed ``source`` (read-only; a
    write is refused and counted), until ``bounds`` are spent. Errors of the replayed queries
    are the agent's, not the run's: counted, not raised. A datasource that goes away, or one
    that cannot say what a query read, leaves the counts unestablished (:meth:`Ledger.uncount`)."""
    start = time.monotonic()
    served = 0
    for n, step in enumerate(steps):
        final = plugin_tool(step.name) in _FINAL
        left = bounds.seconds - (time.monotonic() - start)
        over = None if final else ("tool_calls" if served >= bounds.tool_calls
                                   else "seconds" if left <= 0 else None)
        if over is not None:
            rest = sum(1 for s in steps[n:] if plugin_tool(s.name) not in _FINAL)
            ledger.not_replayed(over, rest)
            count_unrun(steps[n:], ledger, getattr(source, "dialect", None), sql=sql,
                        why="past the budget, not run")
            return
        ledger.call(step)
        served += 0 if final else 1
        query = query_of(step, sql)
        if query is None:
            continue
        per_query = bounds.timeout if bounds.timeout is not None else source.timeout
        timeout = left if per_query is None else min(per_query, left)
        try:
            ledger.run_query(source, query, max_rows=bounds.max_rows,
                             timeout=max(timeout, 0.1))
        except (SourceUnavailable, CountUnknown) as exc:
            ledger.uncount(f"the agent's counts could not be established: {exc.reason()}")
            count_unrun(steps[n + 1:], ledger, getattr(source, "dialect", None), sql=sql,
                        why="not run")
            return
        except QueryEvalError:
            continue


def count_unrun(steps: Sequence[Step], ledger: Ledger, dialect: str | None, *, sql: bool,
                why: str) -> None:
    """Steps that are not run, counted from their text: repeated calls, the writes their
    queries hold and, on an SQL datasource, the forbidden tables they name
    (:meth:`Ledger.count_unrun`)."""
    for step in steps:
        ledger.call(step)
        query = query_of(step, sql)
        if query is not None:
            ledger.count_unrun(query, dialect, why=why, sql_source=sql)
