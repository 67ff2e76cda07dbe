"""Make edge_oracle.json: EvalBench 1.20.0's TrajectoryMatcher run unmodified on the inputs
the plugin once read differently from it (issue 60 item 4; see PROVENANCE.md).

    python make_edge_oracle.py <the wheel's unpacked evalbench/ directory> > edge_oracle.json

Each item is an agent case as the plugin is given it: ``gold`` (the case's
``agent.trajectory`` as written; ``"absent"`` in ``omit`` leaves keys out), ``generated``
(the envelope's ``trajectory``: OpenAI messages, or a value that is not a list) and
``error`` (the envelope's ``error``). The reference receives what an EvalBench harness
would hand its scorer: the gold as written, the tool names of the messages in call order
(the plugin's own tools under the MCP server ``queryeval``) or the non-list value itself,
and the error as given. Scores under the four configurations
(``enforce_order`` x ``filter_native_tools``), in make_oracle.py's order.
"""

from __future__ import annotations

import json
import sys
import types

sys.path.insert(0, sys.argv[1])
for _name, _rel in (("generators", "generators"), ("generators.models", "generators/models")):
    _pkg = types.ModuleType(_name)  # as make_oracle.py: the harness adapters are not imported
    _pkg.__path__ = [f"{sys.argv[1]}/{_rel}"]
    sys.modules[_name] = _pkg

from scorers.trajectorymatcher import TrajectoryMatcher  # noqa: E402

PLUGIN = ("get_schema", "sample_rows", "run_query", "ask_user", "abstain")
CONFIGS = [{"enforce_order": o, "filter_native_tools": f} for o in (False, True)
           for f in (True, False)]


def messages(*names: str) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    for i, name in enumerate(names):
        args = {"query": "SELECT 1"} if name == "run_query" else {}
        out.append({"role": "assistant", "content": None,
                    "tool_calls": [{"id": f"c{i}", "type": "function",
                                    "function": {"name": name, "arguments": json.dumps(args)}}]})
        out.append({"role": "tool", "tool_call_id": f"c{i}", "content": "ok"})
    return out


def reference_side(generated: object) -> object:
    """What the harness hands EvalBench: a message list's tool names, else the value."""
    if not isinstance(generated, list):
        return generated
    return [f"queryeval__{c['function']['name']}" if c["function"]["name"] in PLUGIN
            else c["function"]["name"]
            for m in generated for c in (m.get("tool_calls") or [])]


RQ = ["queryeval__run_query"]
ITEMS: list[tuple[str, object, object, object]] = [  # form, gold, generated, error
    *[(f"falsy generated {g!r}, empty gold", [], g, None) for g in (False, 0, "", {})],
    *[(f"falsy generated {g!r}, gold run_query", RQ, g, None) for g in (False, 0, "", {})],
    ("generated text '[]', empty gold", [], "[]", None),
    ("generated JSON text of a matching trajectory", RQ, json.dumps(messages("run_query")),
     None),
    *[(f"error {e!r} with a matching trajectory", RQ, messages("run_query"), e)
      for e in (0, False, [], {}, "")],
    ("error 'boom' with a matching trajectory", RQ, messages("run_query"), "boom"),
    ("gold null, empty trajectory", None, [], None),
    ("gold null, run_query called", None, messages("run_query"), None),
    ("gold null, a native tool called", None, messages("Read"), None),
    ("generated naïve_tool beside run_query", RQ, messages("run_query", "naïve_tool"), None),
    ("generated CJK name beside run_query", RQ, messages("run_query", "查询表"), None),
    ("generated full-width name beside run_query", RQ,
     messages("run_query", "ｒｕｎ＿ｑｕｅｒｙ"), None),
    ("generated CJK MCP name", ["数据库__查询"], messages("数据库__查询", "run_query"), None),
    ("native name dropped by the filter (reference 50)",
     ["queryeval__run_query", "cloud-sql__list_tables"], messages("run_query", "naïve_tool"),
     None),
    ("generated path-character name", RQ, messages("run_query", "../../etc/passwd"), None),
    ("gold naïve_tool, generated naïve_tool", ["naïve_tool", "queryeval__run_query"],
     messages("naïve_tool", "run_query"), None),
]


def main() -> None:
    out = []
    for form, gold, generated, error in ITEMS:
        actual = reference_side(generated)
        scores = []
        for config in CONFIGS:
            s, why = TrajectoryMatcher(config).compare("q", "", "sql", gold, "", "", "", actual,
                                                       "", error)
            scores.append([s, None if "Set:" in why else why])
        out.append({"form": form, "gold": gold, "generated": generated, "error": error,
                    "reference_actual": actual, "scores": scores})
    json.dump({"configs": CONFIGS, "items": out}, sys.stdout, separators=(",", ":"),
              sort_keys=True, ensure_ascii=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
