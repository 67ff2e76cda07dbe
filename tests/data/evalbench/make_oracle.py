"""Make oracle.json: EvalBench 1.20.0's TrajectoryMatcher, AgentSteps and TurnCount run
unmodified on generated inputs (see PROVENANCE.md).

    python make_oracle.py <the wheel's unpacked evalbench/ directory> > oracle.json

Three parts:
* ``pairs``: (expected, actual, generated_error) as EvalBench's scorer receives them (tool
  names, or values that are not lists; ``{"tuple": [...]}`` in the file stands for a
  tuple), each scored under the four configurations
  (``enforce_order`` x ``filter_native_tools``).
* ``trajectories``: OpenAI tool-call trajectories (what a queryeval prediction carries) and a
  gold name list; the reference is given the names in call order, the plugin's own tools
  under the MCP server ``queryeval`` (``run_query`` -> ``queryeval__run_query``), and one
  ``conversation_history`` entry per user-agent round (a round ends at the user's reply: a
  ``user`` message or the answer to an ``ask_user`` call), its agent payload
  ``{"tool_calls": [...]}``.
* ``histories``: conversation histories in EvalBench's own shapes (``stats.tools.totalCalls``,
  JSON text, unparseable payloads, a history that is not a list) for AgentSteps and TurnCount.
"""

from __future__ import annotations

import json
import random
import sys
import types

sys.path.insert(0, sys.argv[1])
# ``generators/models/__init__.py`` imports every harness adapter (absl, google-genai, ...);
# the matcher needs only ``tool_naming``, so the two packages are entered by their paths
# without running that __init__ (the modules themselves are imported unmodified).
for _name, _rel in (("generators", "generators"), ("generators.models", "generators/models")):
    _pkg = types.ModuleType(_name)
    _pkg.__path__ = [f"{sys.argv[1]}/{_rel}"]
    sys.modules[_name] = _pkg

from scorers.agentsteps import AgentSteps  # noqa: E402
from scorers.trajectorymatcher import TrajectoryMatcher  # noqa: E402
from scorers.turncount import TurnCount  # noqa: E402

PLUGIN = ("get_schema", "sample_rows", "run_query", "ask_user", "abstain")
NAMES = ["queryeval__run_query", "queryeval__get_schema", "queryeval__sample_rows",
         "cloud-sql__list_tables", "cloud-sql__execute_sql", "a__b__c", "Read", "Bash",
         "run_query", "get_schema", "update_topic", "__x", "x__", "___", "a___b", "mcp__s__t"]
CONFIGS = [{"enforce_order": o, "filter_native_tools": f} for o in (False, True)
           for f in (True, False)]


def score(cls_config: dict, expected: object, actual: object, error: object) -> list[object]:
    matcher = TrajectoryMatcher(cls_config)
    s, why = matcher.compare("q", "", "sql", expected, "", "", "", actual, "", error)
    # the Jaccard explanation prints two sets, whose order varies with PYTHONHASHSEED
    return [s, None if "Set:" in why else why]


def pairs(rng: random.Random) -> list[dict[str, object]]:
    fixed: list[tuple[object, object, object]] = [
        ([], [], None), (None, None, None), ([], ["Read"], None),
        (["queryeval__run_query"], ["queryeval__run_query"] * 3, None),
        (["queryeval__run_query"] * 3, ["queryeval__run_query"], None),
        (["a__b", "c__d"], ["c__d", "a__b"], None),
        (["a__b"], ["a__b"], "timeout after 60 s"), (["a__b"], ["a__b"], ""),
        (["a__b"], ["a__b"], 0), (["a__b"], "a__b", None), ("a__b", ["a__b"], None),
        ({"a__b": 1}, ["a__b"], None), (["a__b"], ("a__b",), None), ((), [], None),
        ("", ["a__b"], None), (["a__b"], {}, None), (["Read", "Bash"], ["Read"], None),
        (["x__", "__x"], ["___"], None), (["a___b"], ["a___b", "a___b"], None),
    ]
    out = [{"expected": e, "actual": a, "error": err} for e, a, err in fixed]
    for _ in range(400):
        e = [rng.choice(NAMES) for _ in range(rng.randint(0, 8))]
        a = [rng.choice(NAMES) for _ in range(rng.randint(0, 8))]
        if rng.random() < 0.3 and e:
            a = list(e)
            rng.shuffle(a)
            if rng.random() < 0.5:
                a.insert(rng.randint(0, len(a)), rng.choice(e))
        out.append({"expected": e, "actual": a, "error": None})
    for item in out:
        item["scores"] = [score(c, item["expected"], item["actual"], item["error"])
                          for c in CONFIGS]
        for side in ("expected", "actual"):  # JSON has no tuple: {"tuple": [...]} stands for one
            if isinstance(item[side], tuple):
                item[side] = {"tuple": list(item[side])}
    return out


def canonical(name: str) -> str:
    return f"queryeval__{name}" if name in PLUGIN else name


def trajectory(rng: random.Random, n: int) -> list[dict[str, object]]:
    names = [*PLUGIN, "cloud-sql__list_tables", "Read", "lookup"]
    messages: list[dict[str, object]] = []
    k = 0
    while k < n:
        calls = []
        for _ in range(rng.randint(1, 3)):
            k += 1
            name = rng.choice(names)
            args = {"query": rng.choice(["SELECT 1", "SELECT 2", "select  1"])} \
                if name == "run_query" else ({"question": "which?"} if name == "ask_user" else {})
            calls.append({"id": f"call_{k}", "type": "function",
                          "function": {"name": name, "arguments": json.dumps(args)}})
        messages.append({"role": "assistant", "content": None, "tool_calls": calls})
        for c in calls:
            messages.append({"role": "tool", "tool_call_id": c["id"], "content": "ok"})
        if rng.random() < 0.15:
            messages.append({"role": "user", "content": "the 2009 ones"})
    if rng.random() < 0.5:
        messages.append({"role": "assistant", "content": "done", "tool_calls": None})
    return messages


def evalbench_inputs(messages: list[dict[str, object]]) -> tuple[list[str], list[dict[str, object]]]:
    names: list[str] = []
    rounds: list[list[object]] = [[]]
    asks: set[object] = set()
    for m in messages:
        if m["role"] == "assistant":
            for c in m.get("tool_calls") or []:
                names.append(canonical(c["function"]["name"]))
                rounds[-1].append(c)
                if c["function"]["name"] == "ask_user":
                    asks.add(c["id"])
        elif m["role"] == "user" or (m["role"] == "tool" and m["tool_call_id"] in asks):
            rounds.append([])
    history = [{"user": "q", "agent": {"tool_calls": r}} for r in rounds]
    return names, history


def trajectories(rng: random.Random) -> list[dict[str, object]]:
    out = []
    gold_names = ["get_schema", "run_query", "queryeval__run_query", "sample_rows",
                  "cloud-sql__list_tables", "Read"]
    for i in range(120):
        messages = trajectory(rng, rng.randint(0, 9))
        gold = [rng.choice(gold_names) for _ in range(rng.randint(0, 5))]
        names, history = evalbench_inputs(messages)
        error = "agent crashed" if i % 40 == 39 else None
        out.append({
            "trajectory": messages, "gold": gold, "error": error,
            "scores": [score(c, [canonical(g) for g in gold], names, error) for c in CONFIGS],
            "agent_steps": list(AgentSteps({}).compare("q", "", "", None, "", "", "", None,
                                                       json.dumps(history), error)),
            "turn_count": list(TurnCount({}).compare("q", "", "", None, "", "", "", None,
                                                     json.dumps(history), error)),
        })
    return out


def histories() -> list[dict[str, object]]:
    raw: list[object] = [
        [], [{"user": "a", "agent": {"tool_calls": [1, 2]}}],
        [{"user": "a", "agent": json.dumps({"stats": {"tools": {"totalCalls": 5}},
                                            "tool_calls": [1]})}],
        [{"user": "a", "agent": {"stats": {"tools": {"totalCalls": "7"}}}}],
        [{"user": "a", "agent": {"stats": {"tools": {"totalCalls": "x"}}, "tool_calls": [1]}}],
        [{"user": "a", "agent": "plain text answer"}, "not a dict", {"user": "b"}],
        [{"user": "a", "agent": {"stats": [], "tool_calls": "abc"}}],
        {"conversation_history": [{"agent": {"tool_calls": [1, 2, 3]}}]},
        {"conversation_history": json.dumps([{"agent": {"tool_calls": [1]}}, {}])},
        {"other": 1}, "not json", "", {"conversation_history": {"a": 1}},
    ]
    out = []
    for h in raw:
        text = h if isinstance(h, str) else json.dumps(h)
        out.append({"history": text,
                    "agent_steps": list(AgentSteps({}).compare(
                        "q", "", "", None, "", "", "", None, text, None)),
                    "turn_count": list(TurnCount({}).compare(
                        "q", "", "", None, "", "", "", None, text, None))})
    return out


def main() -> None:
    rng = random.Random(52)
    data = {"configs": CONFIGS, "pairs": pairs(rng), "trajectories": trajectories(rng),
            "histories": histories()}
    json.dump(data, sys.stdout, separators=(",", ":"), sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
