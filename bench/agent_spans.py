"""Records OpenInference spans of the example agent, as a team's tracer would in production.

The agent is example_suite/agents' one: an OpenAI-compatible chat model asked in a tool loop
(get_schema, sample_rows, run_query, ask_user, abstain) on the Chinook file. The model is the
scripted stand-in (example_suite/agents/scripted_model.py replaying agent_script.yaml, plus
the questions below), or any OpenAI-compatible server given by its URL (the real local model
of tests/fixtures/llm_server.py). The tools run for real on a copy of Chinook; each run is one
trace: a CHAIN root span (the question in, the answer out), an LLM span per model call and a
TOOL span per tool call, written as OTLP JSON lines, one span per line. This module is the
stand-in for a production tracer (Phoenix, Logfire), which cannot run here.

    python bench/agent_spans.py OUT.jsonl --spans 1000 [--base-url URL --model NAME]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sqlite3
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
AGENTS = ROOT / "example_suite" / "agents"
CHINOOK = ROOT / "example_suite" / "data" / "chinook.sqlite"
OUT = "llm.output_messages.0.message"
MODEL_NAME = "scripted-agent"
MAX_STEPS = 8

#: More questions a production agent is asked on Chinook, scripted like the example's own:
#: each a schema lookup, then the query, then the answer.
QUERIES = {
    "How many artists are in the catalogue?": "SELECT count(*) FROM Artist",
    "How many albums does AC/DC have?":
        "SELECT count(*) FROM Album WHERE ArtistId = 1",
    "Which media types do we sell?": "SELECT Name FROM MediaType ORDER BY Name",
    "How many customers live in Brazil?":
        "SELECT count(*) FROM Customer WHERE Country = 'Brazil'",
    "What is the total of all invoices?": "SELECT round(sum(Total), 2) FROM Invoice",
    "Which playlists are there?": "SELECT Name FROM Playlist ORDER BY PlaylistId",
    "How many tracks are longer than ten minutes?":
        "SELECT count(*) FROM Track WHERE Milliseconds > 600000",
    "Which countries have the most invoices?":
        "SELECT BillingCountry, count(*) AS n FROM Invoice GROUP BY BillingCountry "
        "ORDER BY n DESC, BillingCountry LIMIT 5",
    "How many employees report to the general manager?":
        "SELECT count(*) FROM Employee WHERE ReportsTo = 1",
    "What is the average track price?": "SELECT round(avg(UnitPrice), 2) FROM Track",
}
#: Secrets users paste into questions (each form the masker knows), planted in some traces.
SECRETS = [
    "sk-proj-Zq8x7Vb1Nc2Mm3Ll4Kk5Jj6Hh7",
    "ghp_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5",
    "AKIAIOSFODNN7EXAMPLE",
    "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
    "Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.c2lnbmF0dXJlc2lnbmF0dXJl",
]


def script() -> dict[str, list[dict[str, Any]]]:
    """The example agent's script and the questions above, each also asked with a secret
    pasted in (a user's key) and in other spellings (deduplicated as one question)."""
    import yaml

    out: dict[str, list[dict[str, Any]]] = yaml.safe_load(
        (AGENTS / "agent_script.yaml").read_text(encoding="utf-8"))
    for question, query in QUERIES.items():
        out[question] = [{"tool_calls": [{"name": "get_schema", "arguments": {}}]},
                         {"tool_calls": [{"name": "run_query", "arguments": {"query": query}}]},
                         {"content": f"Here is what I found.\n```sql\n{query}\n```"}]
    for question in list(out):
        if question in QUERIES or question.startswith("Which genre"):
            out[question.lower().rstrip("?")] = out[question]
    for n, secret in enumerate(SECRETS):
        question = list(QUERIES)[n]
        out[f"{question} (my key is {secret})"] = out[question]
    return out


def sample_questions() -> list[str]:
    """The questions of example_suite/mined's recording: the example agent's own, four more,
    each asked twice, one spelled otherwise and one with a key pasted in."""
    example = list(script())[:6]
    more = list(QUERIES)[:4]
    return [*example, *more, *example, *more, "which genre has the most tracks",
            f"{next(iter(QUERIES))} (my key is {SECRETS[0]})"]


def scripted_model() -> Any:
    """The example's scripted stand-in, serving :func:`script` on a loopback port."""
    spec = importlib.util.spec_from_file_location("example_scripted_model",
                                                  AGENTS / "scripted_model.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.ScriptedModel(script())


def attr(key: str, value: Any) -> dict[str, Any]:
    kind = "intValue" if isinstance(value, int) and not isinstance(value, bool) else "stringValue"
    return {"key": key, "value": {kind: value if kind == "intValue" else str(value)}}


#: The agent's instructions: the tables of Chinook, and the form of a query.
SYSTEM = ("You answer questions on the Chinook music store's SQLite database with the tools. "
          "Tables: Artist(ArtistId, Name), Album(AlbumId, Title, ArtistId), Track(TrackId, "
          "Name, AlbumId, GenreId, Milliseconds, UnitPrice), Genre(GenreId, Name), "
          "MediaType(MediaTypeId, Name), Playlist(PlaylistId, Name), Customer(CustomerId, "
          "FirstName, LastName, Country, Email), Employee(EmployeeId, FirstName, LastName, "
          "Title, ReportsTo), Invoice(InvoiceId, CustomerId, BillingCountry, Total). "
          "Call run_query with one SQL query, for example: SELECT count(*) FROM Track")

TOOLS = [{"type": "function", "function": {"name": n, "description": d, "parameters": {
    "type": "object", "properties": p, "required": [k for k in p if k in ("query", "reason")]}}}
    for n, d, p in (
    ("get_schema", "The CREATE TABLE statements", {"table": {"type": "string"}}),
    ("sample_rows", "A few rows of a table", {"table": {"type": "string"},
                                              "limit": {"type": "integer"}}),
    ("run_query", "Run one read-only SQL query", {"query": {"type": "string"}}),
    ("ask_user", "Ask the user back", {"question": {"type": "string"}}),
    ("abstain", "Give no answer", {"reason": {"type": "string"}}))]


class Agent:
    """The tool loop, traced."""

    def __init__(self, base_url: str, model: str, db: Path, api_key: str = "sk-stand-in",
                 first_tool: str | None = None, temperature: float = 0.0) -> None:
        """``first_tool``: each run's first step must call that tool (the OpenAI API's
        ``tool_choice``, as a production agent may set it): the real 135M model calls no tool
        of its own accord, so without it its traces hold no query to mine. What it calls the
        tool with, and every later step, is the model's. ``temperature`` above 0: each trace
        samples with its own seed (the trace's number), as production traffic varies."""
        self.base_url, self.model, self.api_key = base_url.rstrip("/"), model, api_key
        self.first_tool, self.temperature, self.seed = first_tool, temperature, 1
        self.con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        self.clock = 1_700_000_000_000_000_000

    def _tick(self, ns: int = 1_000_000) -> int:
        self.clock += ns
        return self.clock

    def chat(self, messages: list[dict[str, Any]]) -> dict[str, Any]:
        request: dict[str, Any] = {"model": self.model, "messages": messages, "tools": TOOLS,
                                   "temperature": self.temperature, "seed": self.seed,
                                   "max_tokens": 200}
        if self.first_tool and not any(m.get("role") == "tool" for m in messages):
            request["tool_choice"] = {"type": "function", "function": {"name": self.first_tool}}
        body = json.dumps(request).encode()
        req = urllib.request.Request(f"{self.base_url}/chat/completions", data=body,
                                     headers={"Content-Type": "application/json",
                                              "Authorization": f"Bearer {self.api_key}"})
        with urllib.request.urlopen(req, timeout=300) as resp:
            return dict(json.load(resp)["choices"][0]["message"])

    def tool(self, name: str, args: dict[str, Any]) -> tuple[str, bool]:
        """The tool's result text, and whether it failed."""
        try:
            if name == "get_schema":
                where = " AND name = ?" if args.get("table") else ""
                rows = self.con.execute(f"SELECT sql FROM sqlite_master WHERE type = 'table'"
                                        f"{where}", [args["table"]] if where else []).fetchall()
                return json.dumps({"schema": [r[0] for r in rows]}), False
            if name == "sample_rows":
                table = str(args.get("table", "")).replace('"', "")
                rows = self.con.execute(f'SELECT * FROM "{table}" LIMIT ?',
                                        [int(args.get("limit") or 3)]).fetchall()
                return json.dumps({"rows": [list(r) for r in rows]}, default=str), False
            if name == "run_query":
                rows = self.con.execute(str(args.get("query", ""))).fetchmany(20)
                return json.dumps({"rows": [list(r) for r in rows]}, default=str), False
        except (sqlite3.Error, ValueError) as exc:
            return json.dumps({"error": str(exc)}), True
        return json.dumps({"ok": True}), False

    def run(self, trace_id: str, question: str, tags: list[str]) -> list[dict[str, Any]]:
        """One traced run of the agent on ``question``: its spans."""
        if self.temperature:
            self.seed = int(trace_id[:8], 16) + 1
        root = {"traceId": trace_id, "spanId": f"{trace_id[:8]}00000000", "name": "agent",
                "startTimeUnixNano": str(self._tick()), "attributes": [
                    attr("openinference.span.kind", "CHAIN"),
                    attr("input.value", json.dumps({"question": question})),
                    attr("tag.tags", json.dumps(tags))]}
        spans: list[dict[str, Any]] = [root]
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": f"Question: {question}"}]
        answer = ""
        for step in range(MAX_STEPS):
            start = self._tick()
            message = self.chat(messages)
            calls = message.get("tool_calls") or []
            llm = [attr("openinference.span.kind", "LLM"),
                   attr("llm.input_messages.0.message.role", "user"),
                   attr("llm.input_messages.0.message.content", question)]
            for n, call in enumerate(calls):
                fn = call.get("function") or {}
                llm += [attr(f"{OUT}.tool_calls.{n}.tool_call.function.name", fn.get("name")),
                        attr(f"{OUT}.tool_calls.{n}.tool_call.function.arguments",
                             fn.get("arguments") or "{}")]
            spans.append({"traceId": trace_id, "spanId": f"{trace_id[:8]}{step:04d}0001",
                          "parentSpanId": root["spanId"], "startTimeUnixNano": str(start),
                          "endTimeUnixNano": str(self._tick()), "attributes": llm})
            messages.append({"role": "assistant", "content": message.get("content") or "",
                             **({"tool_calls": calls} if calls else {})})
            if not calls:
                answer = str(message.get("content") or "")
                break
            if self._tools(trace_id, step, calls, messages, spans, root["spanId"]):
                answer = "(stopped: asked the user back or abstained)"
                break
        root["endTimeUnixNano"] = str(self._tick())
        root["attributes"].append(attr("output.value", answer))
        return spans

    def _tools(self, trace_id: str, step: int, calls: list[dict[str, Any]],
               messages: list[dict[str, Any]], spans: list[dict[str, Any]], parent: str,
               ) -> bool:
        """Each tool call run and traced; True when the run ends there."""
        ends = False
        for n, call in enumerate(calls):
            fn = call.get("function") or {}
            name = str(fn.get("name") or "")
            try:
                args = json.loads(fn.get("arguments") or "{}")
            except ValueError:
                args = {}
            args = args if isinstance(args, dict) else {}
            start = self._tick()
            result, failed = self.tool(name, args)
            span: dict[str, Any] = {
                "traceId": trace_id, "spanId": f"{trace_id[:8]}{step:04d}{n + 2:04d}",
                "parentSpanId": parent, "startTimeUnixNano": str(start),
                "endTimeUnixNano": str(self._tick()), "attributes": [
                    attr("openinference.span.kind", "TOOL"), attr("tool.name", name),
                    attr("input.value", json.dumps(args)), attr("output.value", result)]}
            if failed:
                span["status"] = {"code": "STATUS_CODE_ERROR"}
            spans.append(span)
            messages.append({"role": "tool", "tool_call_id": call.get("id"), "content": result})
            ends |= name in ("ask_user", "abstain")
        return ends


def record(agent: Agent, spans_wanted: int, questions: list[str], traces: int | None = None,
           ) -> list[dict[str, Any]]:
    """Traces of the agent over ``questions`` in turn until ``spans_wanted`` spans (or
    ``traces`` traces)."""
    spans: list[dict[str, Any]] = []
    n = 0
    while (n < traces) if traces is not None else (len(spans) < spans_wanted):
        question = questions[n % len(questions)]
        tags = ["prod"]
        spans.extend(agent.run(f"{n:08x}{'0' * 24}", question, tags))
        n += 1
    return spans


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    ap.add_argument("out", type=Path)
    ap.add_argument("--spans", type=int, default=1000)
    ap.add_argument("--base-url", default=None, help="an OpenAI-compatible /v1 URL (default: "
                    "the scripted stand-in)")
    ap.add_argument("--model", default="scripted-agent")
    ap.add_argument("--db", type=Path, default=CHINOOK)
    ap.add_argument("--sample", action="store_true",
                    help="the questions of example_suite/mined (each once, in order)")
    args = ap.parse_args()
    server = None if args.base_url else scripted_model()
    agent = Agent(args.base_url or server.base_url, args.model, args.db)
    questions = sample_questions() if args.sample else list(script())
    try:
        spans = record(agent, 1 if args.sample else args.spans, questions,
                       traces=len(questions) if args.sample else None)
    finally:
        if server is not None:
            server.close()
    args.out.write_text("".join(json.dumps(s) + "\n" for s in spans), encoding="utf-8")
    print(f"{len(spans)} spans written to {args.out}")


if __name__ == "__main__":
    main()
