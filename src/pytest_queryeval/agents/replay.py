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

from .._util.boundedio import repeated_key
from ..errors import CountUnknown, QueryEvalError, SourceUnavailable
from .ledger import Ledger
from .statements import (
    STATEMENT,
    all_texts,
    loose_queries,
    query_tool,
    statement_text,
)
from .toolnames import TOOL_ABSTAIN, TOOL_ASK, TOOL_QUERY, TOOL_SAMPLE, plugin_tool
from .trajectory import QUERY_ARGUMENT, Step, sample_table, step_query, step_sample_query

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


def step_queries(step: Step, sql: bool, cut: list[str] | None = None
                 ) -> tuple[str | None, list[str]]:
    """The query a step is replayed with, and the queries it holds that are judged on their
    text. What the tool recorded it ran (:attr:`Step.executed`) is replayed when it differs
    from what was asked, and the asked query is judged beside it (both count). A call no
    replay runs (a query tool under another name, ``RUN_QUERY``, ``execute_sql``,
    ``functions.run_query``; a query under another argument, ``sql``, ``Query``, a list, JSON
    in JSON, bare text) is judged on the text of its queries: never dropped."""
    query = query_of(step, sql)
    if plugin_tool(step.name) in _FINAL:
        return query, []
    if step.executed is not None:
        asked = " ".join((query or "").split())
        ran = [q for q in loose_queries(step.name, step.executed, cut)
               if " ".join(q.split()) != asked]
        if ran:
            return ran[0], ([query] if query is not None else []) + ran[1:]
    if query is not None:
        return query, _beside_query(step, cut)
    return None, loose_queries(step.name, step.arguments_text, cut)


def _beside_query(step: Step, cut: list[str] | None = None) -> list[str]:
    """The statements a ``run_query`` call holds beside its ``query`` (another argument,
    ``{"query": "SELECT 1", "sql": "DELETE ..."}``): a harness may have run either, so each
    is judged on its text."""
    if plugin_tool(step.name) != TOOL_QUERY or step.arguments is None or \
            set(step.arguments) <= {QUERY_ARGUMENT}:
        return []
    import json

    rest = {k: v for k, v in step.arguments.items() if k != QUERY_ARGUMENT}
    return loose_queries(step.name, json.dumps(rest, ensure_ascii=False, default=str), cut)


#: The arguments each tool the plugin serves declares (the tool loop's schema), and those
#: it needs.
_SCHEMA = {TOOL_SAMPLE: ({"table", "limit"}, "table"), TOOL_QUERY: ({QUERY_ARGUMENT},
                                                                     QUERY_ARGUMENT)}


def malformed_call(step: Step) -> str | None:
    """Why a ``sample_rows`` or ``run_query`` call's arguments cannot be read as the tool's
    schema, so that what a harness serving it ran is unknown, or None. A ``sample_rows`` call
    whose ``table`` is no table name (a list, an object, missing, ``table_name`` instead),
    or that holds other arguments; a ``run_query`` call with no text ``query`` and no
    statement in its arguments to judge; either with an argument given twice (which one a
    harness read is its JSON parser's choice)."""
    tool = plugin_tool(step.name)
    if tool not in _SCHEMA:
        return None
    declared, needed = _SCHEMA[tool]
    shown = step.arguments_text[:120]
    twice = None if step.arguments is None else repeated_key(step.arguments_text)
    if twice is not None:
        return f"its argument {twice[:60]!r} is given twice: {shown!r}"
    if tool == TOOL_QUERY:  # a query under another argument or shape is judged on its text
        if isinstance((step.arguments or {}).get(QUERY_ARGUMENT), str) or \
                step_queries(step, True) != (None, []):
            return None
        return (f"no query text in its arguments {shown!r} (run_query takes "
                f'{{"{QUERY_ARGUMENT}": "<a query>"}})')
    if step.arguments is None:
        return f"its arguments are not a JSON object ({step.error}): {shown!r}"
    if set(step.arguments) - declared or sample_table(step.arguments.get(needed)) is None:
        return (f"its arguments {shown!r} are not sample_rows' schema "
                '({"table": "<a table name>", "limit": <rows>}): what it read is unknown')
    return None


def unjudged(step: Step, sql: bool) -> str | None:
    """Why a call of a trajectory the plugin's loop did not write may hold a statement that no
    count judges, or None: its arguments nest past what is read, or a query tool's arguments
    (``execute_sql``, ``run_query``) hold a text reading as SQL that is neither replayed nor
    judged (JSON that does not parse, ``{"sql": "DELETE ...`` cut short; a statement inside
    the query text's own JSON), or another tool's arguments (``postgres``, ``duckdb``, a
    tool named in another script) hold a statement with its object at their head. What a
    harness serving the call ran is then unknown, and the counts are not established (fail
    closed), never lowered by a reader that stopped."""
    from .sweep import reads_as_sql

    cut: list[str] = []
    query, judged = step_queries(step, sql, cut)
    if cut:
        return cut[0]
    known = {" ".join(t.split()) for t in ([query] if query is not None else []) + judged}
    held: object = step.arguments if step.arguments is not None else step.arguments_text
    texts = all_texts(held, 0) + (all_texts(step.executed, 0) if step.executed else [])
    every = query_tool(step.name)
    for text in texts:
        # another tool's argument is prose unless it starts like a statement and holds one
        # with its object (``postgres {"input": "DELETE FROM Genre"}``; not ``SELECT syntax``)
        statement = (reads_as_sql(text) or STATEMENT.match(text)) if every else \
            statement_text(text)
        if statement and " ".join(text.split()) not in known:
            return (f"its arguments hold {' '.join(text.split())[:80]!r}, which reads as a "
                    "statement that no count judges")
    return None


def replay(steps: Sequence[Step], source: DataSource, ledger: Ledger, bounds: Bounds, *,
           sql: bool) -> None:
    """Count ``steps`` from the database side: every call goes through :meth:`Ledger.call`,
    every query through :meth:`Ledger.run_query` on the sandboxed ``source`` (read-only; a
    write is refused and counted), until ``bounds`` are spent. Errors of the replayed queries
    are the agent's, not the run's: counted, not raised. A datasource that goes away, or one
    that cannot say what a query read, leaves the counts unestablished (:meth:`Ledger.uncount`)."""
    start = time.monotonic()
    served = 0
    judge = getattr(source, "not_a_read", None)
    if not sql and callable(judge):
        ledger.not_a_read = judge  # the graph source's own reading of its language
    for n, step in enumerate(steps):
        final = plugin_tool(step.name) in _FINAL
        left = bounds.seconds - (time.monotonic() - start)
        over = None if final else ("tool_calls" if served >= bounds.tool_calls
                                   else "seconds" if left <= 0 else None)
        if over is not None:
            rest = sum(1 for s in steps[n:] if plugin_tool(s.name) not in _FINAL)
            ledger.not_replayed(over, rest)
            count_unrun(steps[n:], ledger, getattr(source, "dialect", None), sql=sql,
                        why="past the budget, not run", seconds=bounds.seconds,
                        source=source)
            return
        ledger.call(step)
        served += 0 if final else 1
        query, judged = step_queries(step, sql)
        for text in judged:
            ledger.count_unrun(text, getattr(source, "dialect", None), sql_source=sql,
                               why="not replayed: judged on its text", source=source)
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
                        why="not run", seconds=bounds.seconds)
            return
        except QueryEvalError:
            continue


def count_unrun(steps: Sequence[Step], ledger: Ledger, dialect: str | None, *, sql: bool,
                why: str, seconds: float | None = None,
                source: DataSource | None = None) -> None:
    """Steps that are not run, counted from their text: repeated calls, the writes their
    queries hold and, on an SQL datasource, the forbidden tables they name
    (:meth:`Ledger.count_unrun`), within ``seconds`` (the budget's, again: judging 5,500
    heavy texts took 46 s for one case, the thirteenth re-probe's L1); the calls past it are
    not judged, so the counts are not established (never a count lowered by a bound)."""
    until = None if seconds is None else time.monotonic() + seconds
    for n, step in enumerate(steps):
        if until is not None and time.monotonic() > until:
            ledger.uncount(out_of_time(len(steps) - n, seconds or 0.0, why))
            return
        ledger.call(step)
        query, judged = step_queries(step, sql)
        for text in ([query] if query is not None else []) + judged:
            left = None if until is None else max(until - time.monotonic(), 0.001)
            ledger.count_unrun(text, dialect, why=why, sql_source=sql, source=source,
                               timeout=left)


def out_of_time(calls: int, seconds: float, why: str) -> str:
    """The error of a case whose ``calls`` were not judged on their text within the budget's
    ``seconds`` (``why``: why they were not run)."""
    return (f"the agent's counts could not be established: {calls:,} tool call(s) ({why}) "
            f"were not judged on their text within the budget's {seconds:g} s (seconds), so "
            "what they wrote and read is not counted")
