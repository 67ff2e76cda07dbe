"""The ``openai`` source's tool loop for agent cases (``predictions: {agent: {...}}``).

A data agent explores before it answers: it looks the schema up, samples rows, runs queries
and may ask the user back or decline. Scoring only its final query hides how it got there and
what it did to the database, so for an agent suite the source offers tools and *serves them
itself*, inside the plugin's own sandbox: every query goes through the case's datasource
(:meth:`~pytest_queryeval.model.Context.source`), the read-only, sandboxed source the kinds
run predictions on, so a write is refused by the source before it runs, never by the agent's
good manners. ``ask_user`` and ``abstain`` end the loop and become the prediction the
clarification and abstention machinery already judge (:mod:`..engine.clarify`,
:mod:`..engine.abstain`); a reply with no tool call ends it with the query of that reply.

A budget per case (tool calls, rows returned, seconds, tokens, cost) stops the loop: what
was used, the limits and which one ran out are recorded in ``details.prediction.agent``; a
loop stopped before a final answer predicts the empty text (scored as every empty answer is,
the budget named in the failure). The trajectory is recorded in the OpenAI tool-call shape
(assistant messages with ``tool_calls``, tool messages with ``tool_call_id``) beside the
final query and answer.

Which cases loop: every agent case (``agent:`` on the case, its file or the suite's
``defaults:``, :mod:`..agents.spec`), and every case of a source with ``agent:``. The source's
block says which tools are offered and the default budget; an agent case's ``agent.budget``
overrides it limit by limit. An agent case gets the envelope the engine reads from any source
(``{"predicted", "trajectory", "answer", "budget_exceeded"}``, :mod:`..agents.trajectory`):
its final query is scored by the kind, its trajectory by the agent metrics.

Every tool call goes through a :class:`~pytest_queryeval.agents.ledger.Ledger` and every
query through :meth:`~pytest_queryeval.agents.ledger.Ledger.run_query` (the case's forbidden
tables): a write is refused there, before the source, and counted. Those are the live counts
(``details.prediction.agent.counts``); an agent case's metrics are the engine's own count of
the same trajectory, replayed through a ledger of its own (:mod:`..agents.case`), so a
trajectory from this loop and one from any other source are counted alike.

Why one module of this size: the loop, its budget and the tools it serves share one state
(what was used, the ledger, the trajectory so far), and a tool's answer depends on the budget
left (rows cut, time left for a query); split, each half would reach into the other's.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from .._util.boundedio import loads_json
from ..agents.ledger import Ledger
from ..agents.spec import BUDGET_KEYS, DEFAULT_BUDGET
from ..agents.toolnames import PLUGIN_TOOLS, TOOL_ABSTAIN, TOOL_ASK
from ..agents.trajectory import Step, sample_limit
from ..errors import PredictionError, QueryEvalError, QueryRefused
from ..model import Case, Context
from .base import Prediction, read_usage

if TYPE_CHECKING:
    from ..sources.base import DataSource

#: The tools an agent suite may offer, in the order they are offered.
AGENT_TOOLS = PLUGIN_TOOLS
#: The tools that end the loop: their call is the prediction (asked back, declined).
FINAL_TOOLS = frozenset({TOOL_ASK, TOOL_ABSTAIN})
AGENT_KEYS = frozenset({"tools", "budget", "result_rows", "schema_chars"})
#: Characters of one tool result sent back to the model (a schema, a query's rows).
SCHEMA_CHARS = 8000
RESULT_ROWS = 20

_DESCRIPTIONS: dict[str, tuple[str, dict[str, Any], list[str]]] = {
    "get_schema": ("The database's tables and columns (one table's definition when `table` "
                   "is given).", {"table": {"type": "string"}}, []),
    "sample_rows": ("A few rows of one table.", {"table": {"type": "string"},
                                                "limit": {"type": "integer"}}, ["table"]),
    "run_query": ("Run a read-only query on the database and see its result.",
                  {"query": {"type": "string"}}, ["query"]),
    "ask_user": ("Ask the user a clarifying question instead of answering, when the question "
                 "is ambiguous.", {"question": {"type": "string"}}, ["question"]),
    "abstain": ("Decline: the question cannot be answered from the data.",
                {"reason": {"type": "string"}}, []),
}


@dataclass(frozen=True)
class AgentSpec:
    """``predictions.agent``, checked."""

    tools: tuple[str, ...]
    budget: dict[str, float]
    result_rows: int = RESULT_ROWS
    schema_chars: int = SCHEMA_CHARS

    def definitions(self) -> list[dict[str, Any]]:
        """The ``tools`` of each request (OpenAI function tools)."""
        out = []
        for name in self.tools:
            text, props, required = _DESCRIPTIONS[name]
            params: dict[str, Any] = {"type": "object", "properties": props}
            if required:
                params["required"] = required
            out.append({"type": "function", "function": {"name": name, "description": text,
                                                         "parameters": params}})
        return out

    def to_json(self) -> dict[str, Any]:
        return {"tools": list(self.tools), "budget": dict(self.budget),
                "result_rows": self.result_rows}


def agent_spec(value: object, where: str = "predictions.agent") -> AgentSpec | None:
    """``predictions.agent`` read (None when absent); PredictionError naming the key."""
    if value is None:
        return None
    if value is True:
        value = {}
    if not isinstance(value, dict):
        raise PredictionError(f"{where}: must be a mapping (tools:, budget:)")
    unknown = sorted(set(value) - AGENT_KEYS)
    if unknown:
        raise PredictionError(f"{where}: unknown key(s) {', '.join(unknown)} "
                              f"(allowed: {', '.join(sorted(AGENT_KEYS))})")
    tools = value.get("tools", list(AGENT_TOOLS))
    if not isinstance(tools, list) or not tools or not all(isinstance(t, str) for t in tools):
        raise PredictionError(f"{where}.tools: must be a list of tool names "
                              f"({', '.join(AGENT_TOOLS)})")
    wrong = [t for t in tools if t not in AGENT_TOOLS]
    if wrong:
        raise PredictionError(f"{where}.tools: unknown tool(s) {', '.join(wrong)} "
                              f"(the plugin serves {', '.join(AGENT_TOOLS)})")
    budget_in = value.get("budget", {})
    if not isinstance(budget_in, dict):
        raise PredictionError(f"{where}.budget: must be a mapping of "
                              f"{', '.join(BUDGET_KEYS)}")
    budget = dict(DEFAULT_BUDGET)
    for key, limit in budget_in.items():
        if key not in BUDGET_KEYS:
            raise PredictionError(f"{where}.budget: unknown key {key!r} "
                                  f"(allowed: {', '.join(BUDGET_KEYS)})")
        if isinstance(limit, bool) or not isinstance(limit, int | float) or limit < 0 \
                or limit != limit:
            raise PredictionError(f"{where}.budget.{key}: must be a number >= 0, "
                                  f"not {limit!r}")
        budget[str(key)] = float(limit)
    return AgentSpec(tuple(dict.fromkeys(tools)), budget,
                     _count(value, "result_rows", RESULT_ROWS),
                     _count(value, "schema_chars", SCHEMA_CHARS))


def _count(spec: Mapping[str, object], key: str, default: int) -> int:
    value = spec.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise PredictionError(f"predictions.agent.{key}: must be a whole number >= 1, "
                              f"not {value!r}")
    return value


@dataclass
class _Usage:
    tool_calls: int = 0
    rows: int = 0
    tokens: float = 0.0
    cost_usd: float = 0.0
    requests: int = 0
    usage: dict[str, float] = field(default_factory=dict)
    queries: list[dict[str, Any]] = field(default_factory=list)


def case_spec(source: AgentSpec | None, case: Case) -> AgentSpec | None:
    """What the loop of ``case`` offers and spends: the source's ``agent:`` with the agent
    case's ``agent.budget`` over it (None: the case does not loop)."""
    block = getattr(case, "agent", None)
    if block is None:
        return source
    base = source or AgentSpec(AGENT_TOOLS, dict(DEFAULT_BUDGET))
    own = getattr(block, "budget", None)
    if not own:
        return base
    checked = agent_spec({"budget": own}, "agent")
    assert checked is not None
    written = {k: checked.budget[k] for k in own}
    return AgentSpec(base.tools, {**base.budget, **written}, base.result_rows,
                     base.schema_chars)


def run_agent(spec: AgentSpec, case: Case, context: Context | None,
              complete: Callable[..., tuple[bytes, float, dict[str, Any]]], model: str,
              chat: list[dict[str, Any]]) -> Prediction:
    """One case's loop, its cost priced with the suite's ``pricing:`` when the server
    reports none (the ``cost_usd`` budget); an agent case's answer as the envelope."""
    price = None
    if case.pricing:
        from .pricing import price_for

        found = price_for(case.pricing, model, case.model_label)
        if found is not None:
            price = found[1].cost
    prediction = AgentLoop(spec, case, context, complete, model, price).run(chat)
    if getattr(case, "agent", None) is None:
        return prediction
    from ..agents.trajectory import TrajectoryError, read_trajectory

    record = cast("dict[str, Any]", prediction.details["agent"])
    envelope: dict[str, Any] = {"predicted": prediction.value,
                                "trajectory": record["trajectory"]}
    try:  # the engine records it (details.agent); one it refuses is shown from here
        read_trajectory(record["trajectory"], strict_names=True)
        del record["trajectory"]
    except TrajectoryError as exc:  # the OpenAI name rule binds this loop only: the engine,
        record["refused"] = str(exc)  # reading leniently, keeps the loop's refusal
    for key in ("answer",):
        if key in record:
            envelope[key] = record.pop(key)
    if record["budget"]["exceeded"]:
        envelope["budget_exceeded"] = record["budget"]["exceeded"]
    # the engine counts the trajectory again, and never below what the loop counted here
    # (``counts`` stays in the record: :func:`..agents.case.envelope_of` reads it)
    record.pop("findings", None)
    prediction.value = envelope
    return prediction


class AgentLoop:
    """One case's loop: ``complete`` sends a chat (with ``tools``) and returns the raw reply,
    its seconds and details, as :meth:`.chat.ChatPredictor.complete` does."""

    def __init__(self, spec: AgentSpec, case: Case, context: Context | None,
                 complete: Callable[..., tuple[bytes, float, dict[str, Any]]],
                 model: str, price: Callable[[dict[str, float]], float | None] | None = None,
                 ) -> None:
        self.spec = spec
        self.case = case
        self.context = context
        self.complete = complete
        self.model = model
        self.price = price
        self.used = _Usage()
        self.trajectory: list[dict[str, Any]] = []
        self.exceeded: str | None = None
        self._start = 0.0
        block = getattr(case, "agent", None)
        self.ledger = Ledger.for_tables(getattr(block, "forbidden_tables", ()) or ())
        # the loop's own refusals are the floor of the case's (``replay: false`` keeps them)
        self.ledger.enforced = bool(getattr(block, "enforce", False))
        from ..agents.case import max_query_bytes_of

        self.ledger.max_query_bytes = max_query_bytes_of(case)

    # -- the loop ----------------------------------------------------------------------------
    def run(self, chat: list[dict[str, Any]]) -> Prediction:
        self._start = time.perf_counter()
        tools = self.spec.definitions()
        final: object = None
        answer: str | None = None
        details: dict[str, Any] = {}
        while final is None:
            if self._over("seconds") or self._over("tokens") or self._over("cost_usd"):
                break
            raw, _, request_details = self.complete([*chat, *_sendable(self.trajectory)],
                                                    tools=tools)
            self.used.requests += 1
            details["attempts"] = details.get("attempts", 0) + request_details.get("attempts", 1)
            message, usage = self._read(raw)
            self._add_usage(usage)
            calls = message.get("tool_calls") or []
            self.trajectory.append(message)
            if not calls:
                content = message.get("content")
                if not isinstance(content, str):
                    raise PredictionError(f"{self.model}: the agent's last reply has neither "
                                          "text nor tool calls")
                final, answer = self._final_text(content, details)
                break
            if self._over("tokens") or self._over("cost_usd"):
                break  # the reply that went over is recorded; its calls are not served
            for call in calls:
                name = call["function"]["name"]
                if name in FINAL_TOOLS and name in self.spec.tools:
                    final = {"tool_calls": [call]}
                    details["tool_calls"] = [name]
                    break
                if self.used.tool_calls >= self.spec.budget.get("tool_calls", float("inf")):
                    self.exceeded = "tool_calls"
                    break
                if self._over("seconds"):
                    break
                self._count_call(call)
                self.used.tool_calls += 1
                self.trajectory.append({"role": "tool", "tool_call_id": call["id"],
                                        "content": self._serve(name, call["function"]
                                                               ["arguments"])})
                if self._over("rows"):
                    break
            if self.exceeded:
                break
        seconds = time.perf_counter() - self._start
        if self.exceeded is not None:
            self.ledger.exceeded(self.exceeded)
        details["agent"] = self._record(seconds, answer)
        value: object = final
        hint = None
        if final is None:
            value = ""
            limit = self.spec.budget.get(self.exceeded or "", 0)
            hint = (f"the agent's budget ran out before a final answer ({self.exceeded}: "
                    f"{_num(limit)})")
        usage = {k: v for k, v in self.used.usage.items()}
        prediction = Prediction(value, seconds, details, usage, self.model, hint)
        return prediction

    def _count_call(self, call: dict[str, Any]) -> None:
        """The ledger sees every call the loop serves, before it runs (repeats counted)."""
        text = call["function"]["arguments"]
        try:
            parsed = loads_json(text) if text.strip() else {}
        except ValueError:
            parsed = None
        self.ledger.call(Step(self.used.tool_calls, len(self.trajectory) - 1, call["id"],
                              call["function"]["name"],
                              parsed if isinstance(parsed, dict) else None, text, None))

    def _final_text(self, content: str, details: dict[str, Any]) -> tuple[object, str]:
        from ..kindregistry import declares
        from . import prompt as prompts
        from .base import maybe_json

        query, how = prompts.extract_query(content, self.case.kind)
        details["extraction"] = how
        # the answer is the prose: the query's own numbers are not figures it states
        answer = _FENCED.sub("", content).strip() or content
        return (maybe_json(query) if declares(self.case.kind, "json_answers") else query), answer

    def _over(self, key: str) -> bool:
        """Whether the budget's ``key`` is used up (then recorded as the one that stopped)."""
        limit = self.spec.budget.get(key)
        if limit is None:
            return False
        used = {"seconds": time.perf_counter() - self._start, "tokens": self.used.tokens,
                "cost_usd": self.used.cost_usd, "rows": self.used.rows,
                "tool_calls": self.used.tool_calls}[key]
        over = used >= limit if key in ("seconds", "rows") else used > limit
        if over and self.exceeded is None:
            self.exceeded = key
        return over

    def _read(self, raw: bytes) -> tuple[dict[str, Any], dict[str, float]]:
        """The reply's message in the trajectory's shape, and its usage."""
        from .._util.boundedio import loads_json

        try:
            data = loads_json(raw.decode("utf-8", errors="replace"))
            message = data["choices"][0]["message"]
        except (ValueError, KeyError, IndexError, TypeError):
            raise PredictionError(f"{self.model}: an agent step's reply has no "
                                  "choices[0].message") from None
        if not isinstance(message, dict):
            raise PredictionError(f"{self.model}: an agent step's message is not an object")
        content = message.get("content")
        out: dict[str, Any] = {"role": "assistant",
                               "content": content if isinstance(content, str) else None}
        calls = message.get("tool_calls")
        if isinstance(calls, list) and calls:
            out["tool_calls"] = [_call(c, i, self.used.requests) for i, c in enumerate(calls)]
        usage = read_usage(data.get("usage")) if isinstance(data, dict) else {}
        return out, usage

    def _add_usage(self, usage: dict[str, float]) -> None:
        for key, value in usage.items():
            self.used.usage[key] = self.used.usage.get(key, 0.0) + value
        self.used.tokens += usage.get("prompt_tokens", 0.0) + usage.get("completion_tokens", 0.0)
        if "cost_usd" in usage:
            self.used.cost_usd += usage["cost_usd"]
        elif self.price is not None:
            self.used.cost_usd += self.price(usage) or 0.0

    # -- the tools ---------------------------------------------------------------------------
    def _serve(self, name: str, arguments: str) -> str:
        """The tool's result as the text the model reads (an error is a result too: the agent
        may correct itself)."""
        if name not in self.spec.tools or name in FINAL_TOOLS:
            return f"error: no tool named {name[:80]!r} (tools: {', '.join(self.spec.tools)})"
        try:
            args = loads_json(arguments) if arguments.strip() else {}
        except ValueError:
            return "error: the arguments are not JSON"
        if not isinstance(args, dict):
            return "error: the arguments must be a JSON object"
        try:
            source = self._source()
            if name == "get_schema":
                return self._schema(source, args.get("table"))
            if name == "sample_rows":
                return self._sample(source, args)
            query = args.get("query")
            if not isinstance(query, str) or not query.strip():
                return "error: run_query needs a query (text)"
            return self._run(source, "run_query", query)
        except QueryEvalError as exc:
            return f"error: {exc.reason()}"

    def _source(self) -> DataSource:
        if self.context is None or self.case.source_spec is None:
            raise PredictionError(f"case {self.case.id!r} names no datasource for the agent's "
                                  "tools")
        from ..agents.case import agent_source

        return agent_source(self.context, self.case)

    def _schema(self, source: DataSource, table: object) -> str:
        from ..agents.copies import schema_notes
        from ..agents.descriptions import annotate
        from ..sources import describe

        # descriptions planted by a red-team case ({comment: ...}); none for any other run
        notes = schema_notes(self.case)
        if isinstance(table, str) and table:
            ddl = dict(annotate(_ddl(source), notes))
            found = ddl.get(table) or next((d for t, d in ddl.items()
                                            if t.lower() == table.lower()), None)
            if found is None:
                return (f"error: no table named {table[:80]!r} (tables: "
                        f"{', '.join(ddl)[:self.spec.schema_chars]})")
            return found[:self.spec.schema_chars]
        if notes:
            return "\n\n".join(d for _, d in annotate(_ddl(source), notes)
                               )[:self.spec.schema_chars]
        return describe.describe(source)[:self.spec.schema_chars]

    def _sample(self, source: DataSource, args: dict[str, Any]) -> str:
        from ..sources import source_type

        if not source_type((self.case.source_spec or {}).get("type")).sql:
            return "error: sample_rows needs an SQL datasource; use run_query"
        table = args.get("table")
        tables = [t for t, _ in _ddl(source)]
        name = next((t for t in tables if isinstance(table, str) and t.lower() == table.lower()),
                    None)
        if name is None:
            return f"error: no table named {str(table)[:80]!r} (tables: {', '.join(tables)})"
        quoted = '"' + name.replace('"', '""') + '"'
        return self._run(source, "sample_rows",
                         f"SELECT * FROM {quoted} LIMIT {sample_limit(args.get('limit'))}")

    def _run(self, source: DataSource, tool: str, query: str) -> str:
        left = self.spec.budget.get("rows", float("inf")) - self.used.rows
        cap = int(max(0, min(self.spec.result_rows, left)))
        timeout = self.spec.budget.get("seconds", float("inf")) - \
            (time.perf_counter() - self._start)
        kwargs: dict[str, Any] = {}
        if timeout != float("inf"):
            kwargs["timeout"] = max(timeout, 0.1)
        if source.timeout is not None and "timeout" in kwargs:
            kwargs["timeout"] = min(kwargs["timeout"], source.timeout)
        rows: int | None = None
        error = None
        refused = False
        try:
            table = self.ledger.run_query(source, query, max_rows=max(cap, 1),
                                          timeout=kwargs.get("timeout"))
        except QueryRefused as exc:
            refused, error = True, exc.reason()
        except QueryEvalError as exc:
            error = exc.reason()
        if error is None:
            shown = table.rows[:cap]
            rows = len(shown)
            self.used.rows += rows
            text = json.dumps({"columns": table.columns, "rows": [list(r) for r in shown],
                               **({"truncated": True} if table.truncated or
                                  len(table.rows) > cap else {})},
                              default=str, ensure_ascii=False)
        else:
            text = f"error: {error}"
        self.used.queries.append({"tool": tool, "query": query, "rows": rows,
                                  **({"refused": True} if refused else {}),
                                  **({"error": error} if error else {})})
        return text[:self.spec.schema_chars]

    # -- the record --------------------------------------------------------------------------
    def _record(self, seconds: float, answer: str | None) -> dict[str, Any]:
        used: dict[str, float] = {"tool_calls": self.used.tool_calls, "rows": self.used.rows,
                                  "seconds": round(seconds, 3), "tokens": self.used.tokens,
                                  "requests": self.used.requests}
        if self.used.cost_usd or "cost_usd" in self.spec.budget:
            used["cost_usd"] = round(self.used.cost_usd, 6)
        out: dict[str, Any] = {
            "trajectory": self.trajectory,
            "budget": {"limits": dict(self.spec.budget), "used": used,
                       "exceeded": self.exceeded},
            "queries": self.used.queries,
            # taken where the queries ran (agents/ledger.py), not from the agent's account
            "counts": self.ledger.metrics(),
        }
        findings = self.ledger.details().get("findings")
        if findings:
            out["findings"] = findings
        if answer is not None:
            out["answer"] = answer
        return out


def _ddl(source: DataSource) -> list[tuple[str, str]]:
    from ..sources import describe

    return describe.sql_ddl(source)


def _sendable(trajectory: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The trajectory as the next request carries it: an assistant message's ``content: null``
    beside its tool calls sent as ``""``, which means the same to OpenAI and which
    llama-cpp-python's server requires (it refused every request after a tool call with a
    500). The trajectory itself keeps what the model gave."""
    return [{**m, "content": ""} if m.get("role") == "assistant" and m.get("content") is None
            else m for m in trajectory]


def _call(call: object, index: int, step: int) -> dict[str, Any]:
    """A tool call in the trajectory's shape, whatever the server sent (an id made up when it
    sent none: the tool message must name one)."""
    c = call if isinstance(call, dict) else {}
    fn: dict[str, Any] = f if isinstance(f := c.get("function"), dict) else {}
    name = fn.get("name")
    arguments = fn.get("arguments")
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments if arguments is not None else {}, default=str)
    ident = c.get("id")
    return {"id": ident if isinstance(ident, str) and ident else f"call_{step}_{index}",
            "type": "function",
            "function": {"name": name if isinstance(name, str) else str(name),
                         "arguments": arguments}}


#: A fenced code block (the final query) inside the last reply.
_FENCED = re.compile(r"(`{3,}|~{3,})[^\n]*\n.*?(?:\n[ \t]*\1[`~]*|\Z)", re.DOTALL)


def _num(value: float) -> str:
    return f"{int(value)}" if float(value).is_integer() else f"{value:g}"
