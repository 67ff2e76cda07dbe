"""The run counts (``queries_executed``, ``rows_read``) of calls the replay does not run.

Why a rule of its own: those two counts are the database's, taken as the replay runs the
plugin's own tools (``run_query``, ``sample_rows``). A call of any other tool that may have run
a query (``sql_db_query``, ``execute_sql``, ``mcp__db__query``, ``RunQuery``, ``postgres`` given
a statement) is judged on its text for writes and forbidden tables, and what it ran and read
was simply left out: ``SELECT * FROM Track`` through ``sql_db_query`` passed ``rows_read:
{max: 10}`` with 1, and ``execute_sql {}`` passed every gate (issue 58, the thirteenth
re-probe's H1). So is a trajectory under ``replay: false`` (its H2): nothing ran, so the run
counts are unknown, not 0. Each leaves the counts of a case gated on them not established, as
the replay's budget cut does, never a pass on a lowered count.
"""

from __future__ import annotations

import re
import time
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING

from .codetools import code_tool
from .datareaders import argument_texts, case_tables, data_reader, names_table
from .querynames import query_named
from .replay import out_of_time, query_of, step_queries
from .toolnames import PLUGIN_TOOLS, TOOL_QUERY, plugin_tool
from .trajectory import Step

if TYPE_CHECKING:
    from ..model import Case, Context
    from .ledger import Ledger

#: The counts a call the replay did not run leaves unknown (what it ran and what it read).
RUN_COUNTS = ("queries_executed", "rows_read")


def unrun_query(step: Step, sql: bool, also: Collection[Step] = ()) -> tuple[str, bool] | None:
    """Why what ``step`` ran and read is not counted, and whether nothing of it can be judged
    at all (every count is then unknown, not only :data:`RUN_COUNTS`), or None. ``also``: the
    steps holding a request the datasource's own reading found in another tool's
    argument (SPARQL: :func:`~.sparqlargs.sparql_requests`).

    A statement the replay judges on its text and does not run: any of a call of a tool the
    plugin does not serve (``execute_sql {"sql": ...}``, ``RUN_QUERY``, ``postgres {"input":
    "SELECT ..."}``, a statement in another tool's argument), or beside ``run_query``'s own
    ``query`` (which a harness may have run instead). A query-named tool (:func:`query_named`)
    whose arguments hold no statement to judge (``execute_sql {}``, ``{"query_id": "q17"}``,
    ``run_saved_query {"name": ...}``): what it ran is unknown, as a ``run_query`` call with
    no query text is (:func:`~.replay.malformed_call`). Honest tools that run no query
    (``get_weather``, ``mcp__db__list_tables``) and the plugin's other tools are none."""
    tool = plugin_tool(step.name)
    if (tool in PLUGIN_TOOLS and tool != TOOL_QUERY) or code_tool(step.name) is not None:
        return None  # replayed, malformed (:func:`~.replay.malformed_call`) or code's rule
    query, judged = step_queries(step, sql)
    asked = query_of(step, sql)
    unrun = [t for t in judged if t != asked]
    where = f"tool call {step.index} ({step.name[:80]!r})"
    if unrun or (query is None and any(step is s for s in also)):
        text = " ".join(unrun[0].split())[:80] if unrun else "a request"
        side = " beside its query" if tool == TOOL_QUERY else ""
        return (f"{where}: its statement {text!r}{side} is not run by the replay (it runs the "
                "plugin's run_query and sample_rows only) but judged on its text for writes "
                "and forbidden tables, so what it ran and read is not counted", False)
    if query is None and tool != TOOL_QUERY and query_named(step.name):
        return (f"{where}: a query tool the plugin does not serve, whose arguments hold no "
                f"statement to judge ({step.arguments_text[:80]!r}): what it ran is unknown",
                True)
    return None


def unrun_counts(case: Case, steps: Sequence[Step], ledger: Ledger, *, sql: bool,
                 replayed: bool, also: Collection[Step] = (),
                 context: Context | None = None, seconds: float | None = None) -> None:
    """The counts of a trajectory the plugin's loop did not write that ``steps`` leave
    unknown, the case's error at its first count gate they hold (:func:`unrun_query`; a
    forbidden table a foreign tool names, :func:`forbidden_named`; a foreign tool that reads
    rows, :func:`~.datareaders.data_reader`, with the tables of the case's database in
    ``context``, asked once); with
    ``replay: false`` (not ``replayed``), ``queries_executed`` and ``rows_read`` of a
    trajectory holding a query: nothing ran, so they are unknown, not 0 (writes and forbidden
    tables are still judged on the queries' text). Within ``seconds`` (the budget's, again,
    as :func:`~.replay.count_unrun` judges): the steps past it are not judged, so the counts
    are not established."""
    if ledger.uncounted is not None:
        return
    run_gate = next((m for m in RUN_COUNTS if m in case.thresholds), None)
    if not replayed:
        queries = sum(1 for s in steps if step_queries(s, sql) != (None, []))
        if queries and run_gate is not None:
            ledger.uncount(f"the agent's counts could not be established: {run_gate}: replay: "
                           f"false, so the trajectory's {queries:,} quer(y/ies) were not run "
                           "and what they ran and read is not counted")
            return
    count_gate = first_count_gate(case)
    listed: Collection[str] | None = None
    until = None if seconds is None else time.monotonic() + seconds
    for n, step in enumerate(steps):
        if until is not None and time.monotonic() > until:
            ledger.uncount(out_of_time(len(steps) - n, seconds or 0.0, "not replayed"))
            return
        found = unrun_query(step, sql, also)
        gate = None if found is None else (count_gate if found[1] else run_gate)
        if found is None and "forbidden_tables" in case.thresholds:
            named = forbidden_named(step, ledger.forbidden - ledger.touched)
            if named is not None:
                found, gate = (named, False), "forbidden_tables"
        if found is None and run_gate is not None and _foreign(step):
            if listed is None:
                listed = case_tables(case, context) if context is not None else frozenset()
            read = data_reader(step, listed)
            if read is not None:
                found, gate = (read, False), run_gate
        if found is not None and gate is not None:
            from ..errors import ConfigError

            where = ConfigError(found[0], file=str(case.file), line=case.line,
                                key=f"thresholds.{gate}")
            ledger.uncount(f"the agent's counts could not be established: {where}")
            return


def _foreign(step: Step) -> bool:
    """Whether ``step`` calls a tool the plugin does not serve that no other rule reads (not
    one running code, nor a query tool)."""
    return plugin_tool(step.name) not in PLUGIN_TOOLS and code_tool(step.name) is None and \
        not query_named(step.name)


def forbidden_named(step: Step, forbidden: Collection[str]) -> str | None:
    """Why a call of a tool the plugin does not serve may have read a forbidden table it names
    (in its arguments, their JSON decoded, or in its name: ``read_table {"table":
    "Employee"}``, ``{"table": "\\u0045mployee"}``, ``list_employees {}``, ``getemployees {}``:
    :func:`~.datareaders.names_table`), or None. Such a tool is not replayed and holds no
    statement to judge, so what it read is unknown: it passed ``forbidden_tables: {max: 0}``
    with 0 (issue 58, the thirteenth re-probe's residue of H1; the fourteenth's F6 and M2). A
    table its statement reads is counted already (those are left out of ``forbidden``); the
    plugin's own tools are replayed."""
    if plugin_tool(step.name) in PLUGIN_TOOLS or code_tool(step.name) is not None:
        return None
    where = f"tool call {step.index} ({step.name[:80]!r}), a tool the plugin does not serve,"
    texts = argument_texts(step) if forbidden else []
    if texts is None:
        return f"{where} has more arguments than are read: what it read is unknown"
    for table in sorted(forbidden):
        last = table.rsplit(".", 1)[-1]
        word = re.compile(rf"(?<![\w$]){re.escape(last)}(?![\w$])", re.IGNORECASE)
        if names_table(step.name, table) or any(word.search(t) for t in texts):
            return f"{where} names the forbidden table {last!r}: what it read is unknown"
    return None


def first_count_gate(case: Case) -> str | None:
    """The first of the case's thresholds on a count (``leaks`` aside), or None."""
    from ..metricnames import AGENT_COUNT_METRICS

    return next((m for m in case.thresholds if m in AGENT_COUNT_METRICS and m != "leaks"),
                None)
