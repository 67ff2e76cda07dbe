"""A case's ``agent:`` block: what makes it an agent case, read once where the case is read.

Why a block of its own and not more case keys: an agent case is opt-in (a case without it is
scored as before, its prediction never read as an envelope), and its keys (the gold
trajectory, the tables it must not read, its budget) mean nothing to any other case.

    agent:
      trajectory: [get_schema, run_query]   # the gold tool names, in order
      filter_native_tools: true             # EvalBench's default: only server__tool names
      forbidden_tables: [employee]          # read by none of its queries
      budget: {tool_calls: 8}               # the tool loop's (the openai source)
      replay: true                          # count an outside trajectory's queries again
      protected: [{table: Employee}, {column: Customer.Email},
                  {table: Invoice, where: "CustomerId = 2"}]   # planted with canaries
      enforce: true                         # the engine withholds what is protected
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .canaries import Instruction, Target, read_protected

if TYPE_CHECKING:
    from collections.abc import Iterable

    from ..sources.base import DataSource

#: The keys ``agent:`` takes.
AGENT_KEYS = ("trajectory", "filter_native_tools", "forbidden_tables", "budget", "replay",
              "protected", "canary_seed", "enforce", "instructions")
#: What a budget may bound (the tool loop's limits; the replay of a trajectory is bounded by
#: ``tool_calls`` and ``seconds``): ``rows`` counts the rows the tools returned to the agent,
#: ``tokens`` prompt plus completion tokens over every request, ``cost_usd`` what the server
#: reported or the suite's ``pricing:`` prices.
BUDGET_KEYS = ("tool_calls", "rows", "seconds", "tokens", "cost_usd")
#: Bounds an agent gets unless the suite says otherwise: a loop always ends, and so does the
#: replay of a trajectory from outside.
DEFAULT_BUDGET: dict[str, float] = {"tool_calls": 20, "rows": 1000, "seconds": 300}
#: Characters of a gold tool name: any text, as EvalBench reads it (canonical
#: ``server__tool`` names are longer than the OpenAI rule allows a call; that rule binds
#: the plugin's own tool loop only).
_GOLD_NAME_CHARS = 200


@dataclass(frozen=True)
class AgentSpec:
    """A checked ``agent:`` block."""

    #: The gold tool names in order (None: no gold trajectory, no trajectory_match).
    trajectory: tuple[str, ...] | None = None
    filter_native_tools: bool = True
    forbidden_tables: tuple[str, ...] = ()
    #: The tool loop's budget, as written (checked by the loop that spends it).
    budget: dict[str, Any] = field(default_factory=dict)
    #: Replay an outside trajectory's run_query calls on the datasource to count them.
    replay: bool = True
    #: What the agent's user must not see: planted with canaries in a throwaway copy of the
    #: datasource, and traced through the run (:mod:`.canaries`).
    protected: tuple[Target, ...] = ()
    #: The canaries' seed: the same canaries in every run; another seed rotates them (a
    #: published suite's canaries may have reached a model's training data).
    canary_seed: int = 0
    #: The engine withholds what ``protected`` names from the agent (roles, grants and
    #: row-level security; SQLite's authorizer; DuckDB's plan): :mod:`.enforce`.
    enforce: bool = False
    #: Text planted in the copy the agent reads: an instruction hidden in the data, in a row
    #: or in a table's or column's description (a red-team attack, :mod:`.redteam`).
    instructions: tuple[Instruction, ...] = ()


def read_agent(value: object) -> tuple[AgentSpec | None, list[tuple[str, str]]]:
    """``agent:`` checked: the spec, and ``(key path, message)`` for each problem."""
    if value is None or value is True:
        return AgentSpec(), []
    if not isinstance(value, Mapping):
        return None, [("agent", "must be a mapping (trajectory:, forbidden_tables:, budget:, "
                                "filter_native_tools:, replay:, protected:) or true")]
    problems: list[tuple[str, str]] = []
    for key in value:
        if key not in AGENT_KEYS:
            problems.append((f"agent.{key}", f"unknown key (allowed: {', '.join(AGENT_KEYS)})"))
    gold: tuple[str, ...] | None = None
    raw = value.get("trajectory")
    if "trajectory" in value and not raw and not isinstance(raw, list):
        gold = ()  # null, false, 0, "", {}: EvalBench's ``or []``, the empty gold
    elif raw is not None:
        if not isinstance(raw, list):
            problems.append(("agent.trajectory", "must be a list of tool names"))
        else:
            for i, name in enumerate(raw):
                if not isinstance(name, str) or not name or len(name) > _GOLD_NAME_CHARS:
                    problems.append((f"agent.trajectory[{i}]", f"{name!r} is not a tool name "
                                     f"(a text of 1 to {_GOLD_NAME_CHARS} characters)"))
            gold = tuple(str(n) for n in raw)
    tables = value.get("forbidden_tables", [])
    if not isinstance(tables, list) or not all(isinstance(t, str) and t for t in tables):
        problems.append(("agent.forbidden_tables", "must be a list of table names"))
        tables = []
    tables = _forbidden(tables, problems)
    flags = {}
    for key, default in (("filter_native_tools", True), ("replay", True), ("enforce", False)):
        flag = value.get(key, default)
        if not isinstance(flag, bool):
            problems.append((f"agent.{key}", f"must be true or false, not {flag!r}"))
            flag = default
        flags[key] = flag
    budget = value.get("budget", {})
    if not isinstance(budget, Mapping):
        problems.append(("agent.budget", "must be a mapping of limits"))
        budget = {}
    protected, seed = _protection(value, problems)
    if flags["enforce"] and not protected:
        problems.append(("agent.enforce", "needs protected: (what the engine withholds)"))
    planted = _instructions(value.get("instructions", []), problems)
    if planted and not protected:
        problems.append(("agent.instructions", "needs protected: (planted in the same copy)"))
    if problems:
        return None, problems
    return AgentSpec(gold, flags["filter_native_tools"], tuple(tables), dict(budget),
                     flags["replay"], protected, seed, flags["enforce"], planted), []


def _forbidden(tables: list[str], problems: list[tuple[str, str]]) -> list[str]:
    """Each name of ``forbidden_tables`` as the datasource resolves it (:func:`table_name`):
    ``main.Employee``, ``"Employee"`` or ``Employee `` never matched a table the engine
    reported, so a read of it passed ``forbidden_tables: {max: 0}``."""
    out = []
    for i, raw in enumerate(tables):
        name = table_name(raw)
        if name is None:
            problems.append((f"agent.forbidden_tables[{i}]",
                             f"{raw[:80]!r} is not a table name (up to three parts, "
                             "each plain or quoted)"))
        else:
            out.append(name)
    return out


#: One part of a qualified name: "quoted", [bracketed], `backquoted` or plain.
_PART = re.compile(r'\s*(?:"((?:[^"]|"")*)"|\[([^\]]*)\]|`((?:[^`]|``)*)`|([^."\[`]+))\s*')
#: The schemas an unqualified name resolves in (SQLite's and DuckDB's, PostgreSQL's).
DEFAULT_SCHEMAS = frozenset({"main", "public"})


def table_name(text: str) -> str | None:
    """``text`` as a table's name: each part unquoted and stripped of blanks, a catalog and a
    default schema (``main``, ``public``) dropped (``chinook.public.employee`` is
    ``employee``); a name in another schema keeps it (``sales.orders``). None when it is
    not a name of one to three parts."""
    parts: list[str] = []
    pos = 0
    while True:
        m = _PART.match(text, pos)
        if m is None:
            return None
        quoted, bracketed, backquoted, plain = m.groups()
        part = (quoted.replace('""', '"') if quoted is not None else bracketed
                if bracketed is not None else backquoted.replace("``", "`")
                if backquoted is not None else plain.strip())
        if not part.strip():
            return None
        parts.append(part)
        pos = m.end()
        if pos == len(text):
            break
        if text[pos] != ".":
            return None
        pos += 1
    if len(parts) > 3:
        return None
    if len(parts) > 1 and parts[-2].lower() in DEFAULT_SCHEMAS:
        return parts[-1]
    return ".".join(parts[-2:])


def _instructions(value: object, problems: list[tuple[str, str]]
                  ) -> tuple[Instruction, ...]:
    """``instructions: [{table: T, text: ...}, {comment: T.Column, text: ...}]`` checked
    (problems appended)."""
    if not isinstance(value, list):
        problems.append(("agent.instructions", "must be a list of {table: ..., text: ...} or "
                                               "{comment: ..., text: ...}"))
        return ()
    out = []
    for i, item in enumerate(value):
        keys = set(item) if isinstance(item, Mapping) else set()
        if not isinstance(item, Mapping) or keys not in ({"table", "text"}, {"comment", "text"}) \
                or not all(isinstance(item[k], str) and item[k] for k in keys):
            problems.append((f"agent.instructions[{i}]", "must be {table: <name>, text: <the "
                             "text planted in a row>} or {comment: <Table or Table.Column>, "
                             "text: <its description>}"))
            continue
        if "table" in keys:
            out.append(Instruction(str(item["table"]), str(item["text"])))
            continue
        table, _, column = str(item["comment"]).rpartition(".")
        if not table:
            table, column = column, ""
        out.append(Instruction(table, str(item["text"]), column or None, comment=True))
    return tuple(out)


def _protection(value: Mapping[str, Any], problems: list[tuple[str, str]]
                ) -> tuple[tuple[Target, ...], int]:
    """``protected:`` and ``canary_seed:`` checked (problems appended)."""
    protected: tuple[Target, ...] = ()
    if "protected" in value:
        protected, wrong = read_protected(value["protected"])
        problems.extend(wrong)
    seed = value.get("canary_seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        problems.append(("agent.canary_seed", f"must be a whole number >= 0, not {seed!r}"))
        seed = 0
    return protected, seed


def budget_limits(*blocks: object) -> dict[str, float]:
    """:data:`DEFAULT_BUDGET` with each block's limits over it, in order (the source's
    ``agent.budget``, then the case's): the bounds the tool loop spends and a replay keeps to.
    A limit that is not a number >= 0 is left out here: the loop that spends it names it as
    the case's error."""
    out = dict(DEFAULT_BUDGET)
    for block in blocks:
        if not isinstance(block, Mapping):
            continue
        for key, limit in block.items():
            if key in BUDGET_KEYS and not isinstance(limit, bool) and \
                    isinstance(limit, int | float) and limit >= 0:
                out[str(key)] = float(limit)
    return out


def unknown_tables(source: DataSource, names: Iterable[str],
                   timeout: float | None) -> list[int]:
    """The indexes of ``names`` (``forbidden_tables`` as :func:`table_name` gives
    them) that name no table or view of ``source``: one the source lists among its tables is
    known; of any other the engine is asked ``SELECT * FROM <name> LIMIT 0`` (no row read),
    and "no such table" is unknown. A source of another kind (a graph), a timeout or a source
    that went away is not judged (its reads are counted as before)."""
    from ..errors import QueryEvalError, QueryFailed, QuerySyntaxError
    from ..sources import source_type

    if not source_type(getattr(source, "type", None)).sql:
        return []
    listed: set[str] = set()
    lister = getattr(source, "tables", None)
    if callable(lister):
        try:
            listed = {str(t).lower() for t in lister()[0]}
        except (QueryEvalError, TypeError, ValueError, IndexError):
            listed = set()
    out = []
    for i, name in enumerate(names):
        if name.lower() in listed:
            continue
        quoted = ".".join('"' + p.replace('"', '""') + '"' for p in name.split("."))
        kwargs: dict[str, Any] = {"max_rows": 1}
        if timeout is not None:
            kwargs["timeout"] = timeout
        try:
            source.execute(f"SELECT * FROM {quoted} LIMIT 0", **kwargs)
        except (QueryFailed, QuerySyntaxError):
            out.append(i)
        except QueryEvalError:
            continue
    return out
