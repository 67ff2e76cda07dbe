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

import functools
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .._util.boundedio import repeated_key
from ..errors import QueryEvalError, SourceUnavailable
from .ledger import CountUnknown, Ledger
from .sweep import LEAD as _LEAD
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


@functools.lru_cache(maxsize=8)
def _names(kinds: tuple[str, ...]) -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    """The patterns of a tool name that runs a query (its last part, ``-`` read as ``_``, any
    case), of an argument name that holds one (of a query tool, and of any other tool, where a
    ``query`` is as often a web search's words as a statement): the words of SQL and of each
    registered kind's language (a ``run_<kind>`` tool, a ``<kind>`` argument)."""
    languages = "".join(f"|{re.escape(k)}" for k in kinds)
    return (re.compile(rf"query|sql|sparql|gql|execute|exec\b|statement{languages}", re.I),
            re.compile(rf"query|sql|sparql|statement|command{languages}", re.I),
            re.compile(rf"sql|sparql|statement{languages}", re.I))


def _patterns() -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    from ..kindregistry import known_kinds

    return _names(tuple(known_kinds()))


#: The head of a statement (SQL, a graph language, SPARQL), after blanks and comments (``/* x
#: */ DELETE ...``, ``-- x`` then a line): only a text starting so is judged, so an argument of
#: prose is never read as a write.
_STATEMENT = re.compile(
    _LEAD + r"(?:select|with|values|table|from|explain|pragma|show|describe|summarize|pivot|"
    r"unpivot|checkpoint|force|insert|update|"
    r"delete|merge|upsert|replace|create|drop|alter|truncate|grant|revoke|attach|detach|"
    r"vacuum|copy|call|exec|execute|rename|comment|set|reindex|analyze|lock|load|install|"
    r"import|export|begin|commit|rollback|match|optional|unwind|return|remove|foreach|"
    r"prefix|base|ask|construct|clear|add|move|use)\b", re.IGNORECASE)
#: Levels of JSON in JSON and of nested arguments read for a query; past them, what the
#: arguments hold is not read, and a count that depends on it is not established
#: (:func:`unjudged`), never a silent stop.
_LOOSE_DEPTH = 64


def query_tool(name: str) -> bool:
    """Whether ``name`` is a tool that runs a query (``run_query`` in any spelling,
    ``execute_sql``, ``mcp__db__run_cypher``): its last part, ``-`` read as ``_``."""
    if plugin_tool(name) == TOOL_QUERY:
        return True
    return _patterns()[0].search(re.split(r"\.|/|:|__", name.strip().replace("-", "_"))[-1]) \
        is not None


def loose_queries(name: str, arguments: str, cut: list[str] | None = None) -> list[str]:
    """The statements a call's ``arguments`` text holds: its query-named arguments' texts
    (any nesting, lists, JSON in JSON), and when ``name`` is a query tool, every text of it
    (the bare text itself when it is not JSON); only texts that start like a statement.
    ``cut`` collects where the reading stopped at its depth."""
    _, query_key, statement_key = _patterns()
    tool = query_tool(name)
    keys = query_key if tool else statement_key
    found = _texts(arguments, tool, keys, 0, cut if cut is not None else [], tool)
    return [t for t in found if _STATEMENT.match(t)]


def _texts(value: object, wanted: bool, keys: re.Pattern[str], depth: int, cut: list[str],
           every: bool) -> list[str]:
    """The texts of ``value`` that may be a query: under a query-named key, or any (``every``:
    a query tool's arguments, each of which a harness may have run)."""
    if depth > _LOOSE_DEPTH:
        cut.append(f"its arguments nest deeper than the {_LOOSE_DEPTH} levels read")
        return []
    if isinstance(value, str):
        decoded = _decoded(value)
        if decoded is None:
            return [value.strip()] if wanted else []
        return _texts(decoded, wanted, keys, depth + 1, cut, every)
    if isinstance(value, Mapping):
        named = [k for k in value if keys.search(str(k))]
        return [t for k, v in value.items()
                for t in _texts(v, k in named or (wanted and (every or not named)), keys,
                                depth + 1, cut, every)]
    if isinstance(value, list | tuple):
        return [t for v in value for t in _texts(v, wanted, keys, depth + 1, cut, every)]
    return []


def unjudged(step: Step, sql: bool) -> str | None:
    """Why a call of a trajectory the plugin's loop did not write may hold a statement that no
    count judges, or None: its arguments nest past what is read, or a query tool's arguments
    (``execute_sql``, ``run_query``) hold a text reading as SQL that is neither replayed nor
    judged (JSON that does not parse, ``{"sql": "DELETE ...`` cut short; a statement inside
    the query text's own JSON). What a harness serving the call ran is then unknown, and the
    counts are not established (fail closed), never lowered by a reader that stopped."""
    from .sweep import reads_as_sql

    cut: list[str] = []
    query, judged = step_queries(step, sql, cut)
    if cut:
        return cut[0]
    if not query_tool(step.name):
        return None
    known = {" ".join(t.split()) for t in ([query] if query is not None else []) + judged}
    held: object = step.arguments if step.arguments is not None else step.arguments_text
    for text in _all_texts(held, 0):
        if (reads_as_sql(text) or _STATEMENT.match(text)) and " ".join(text.split()) not in known:
            return (f"its arguments hold {' '.join(text.split())[:80]!r}, which reads as a "
                    "statement that no count judges")
    return None


def _all_texts(value: object, depth: int) -> list[str]:
    """Every text of ``value`` (JSON in text read as its texts, the text itself beside them),
    to :data:`_LOOSE_DEPTH` levels (past them :func:`unjudged` stops first)."""
    if depth > _LOOSE_DEPTH:
        return []
    if isinstance(value, str):
        decoded = _decoded(value)
        return [value] if decoded is None else _all_texts(decoded, depth + 1)
    if isinstance(value, Mapping):
        value = list(value.values())
    if isinstance(value, list | tuple):
        return [t for v in value for t in _all_texts(v, depth + 1)]
    return []


def _decoded(text: str) -> object:
    """``text`` read as JSON when it is JSON (an object, a list or a quoted text), else None."""
    if text.lstrip()[:1] not in ("{", "[", '"'):
        return None
    from .._util.boundedio import BoundedReadError, loads_json

    try:
        return loads_json(text, _LOOSE_DEPTH * 2)
    except BoundedReadError:
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
        query, judged = step_queries(step, sql)
        for text in judged:
            ledger.count_unrun(text, getattr(source, "dialect", None), sql_source=sql,
                               why="not replayed: judged on its text")
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
        query, judged = step_queries(step, sql)
        for text in ([query] if query is not None else []) + judged:
            ledger.count_unrun(text, dialect, why=why, sql_source=sql)
