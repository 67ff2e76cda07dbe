"""Issue 58, the forty-seventh re-probe's Q4: a count the record's shape lowered, under a suite gate.

EvalBench scores ``tool_calls`` 0 for a trajectory it refuses (calls on a ``user`` or
``developer`` message, a ``null`` among the messages). A case whose own thresholds bound
``tool_calls`` was judged on the calls the record holds; a suite's ``gates: {tool_calls:
{mean_max: 1}}`` read the reference's 0 and passed with a mean of 0.6 where the calls were 3
in each case. Each test failed before.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.agents.test_counts_from_what_ran import GOLD, QUESTION, _chinook
from tests.support import run_report, write_suite

_ANSWER = {"role": "assistant", "content": "There are 25 genres."}


def _call(role: str, cid: str) -> dict[str, Any]:
    return {"role": role, "content": None, "tool_calls": [{
        "id": cid, "type": "function",
        "function": {"name": "run_query", "arguments": json.dumps({"query": GOLD})}}]}


def _reply(cid: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": cid, "content": "25"}


def _three(shape: str) -> list[Any]:
    """One assistant call, then two more on messages of ``shape``."""
    out: list[Any] = [_call("assistant", "c0"), _reply("c0")]
    for cid in ("c1", "c2"):
        if shape == "null":
            out += [None, _call("assistant", cid), _reply(cid)]
        else:
            out += [_call(shape, cid), _reply(cid)]
    return out


SHAPES = ("assistant", "user", "developer", "null")


def _run(pytester: pytest.Pytester, shared_data: Path, gates: dict[str, Any]) -> Any:
    _chinook(pytester.path, shared_data)
    (pytester.path / "runs.jsonl").write_text("".join(
        json.dumps({"id": s, "predicted": GOLD, "trajectory": [*_three(s), _ANSWER]}) + "\n"
        for s in SHAPES), encoding="utf-8")
    write_suite(pytester.path, {"datasources": {"db": {"type": "sqlite", "path": "chinook.sqlite"}},
                                "predictions": {"source": "file", "path": "runs.jsonl"},
                                **({"gates": gates} if gates else {})},
                {"test_agent.yaml": {"kind": "sql", "datasource": "db", "cases": [
                    {"id": s, "question": QUESTION, "gold": GOLD, "agent": {}}
                    for s in SHAPES]}})
    return run_report(pytester, "-p", "no:cacheprovider")


def test_a_suite_gate_judges_the_calls_the_record_holds(
        pytester: pytest.Pytester, shared_data: Path) -> None:
    res, report = _run(pytester, shared_data, {"tool_calls": {"mean_max": 1}})
    got = {s: report.by_id[s]["metrics"]["tool_calls"] for s in SHAPES}
    assert got == dict.fromkeys(SHAPES, 3.0), got
    for shape in ("user", "developer", "null"):
        assert report.by_id[shape]["details"]["agent"]["evalbench_counts"]["tool_calls"] == 0.0
    assert res.ret == 1
    assert any("gate FAIL" in line and "tool_calls = 3.0000" in line for line in res.outlines), \
        [line for line in res.outlines if "gate" in line]


def test_without_a_gate_the_reference_value_stays(
        pytester: pytest.Pytester, shared_data: Path) -> None:
    """EvalBench's own value, as the conformance layer compares it."""
    _, report = _run(pytester, shared_data, {})
    got = {s: report.by_id[s]["metrics"]["tool_calls"] for s in SHAPES}
    assert got == {"assistant": 3.0, "user": 0.0, "developer": 0.0, "null": 0.0}, got


def test_a_baselines_max_drop_compares_the_calls_the_record_holds(
        pytester: pytest.Pytester, shared_data: Path) -> None:
    """The forty-seventh re-probe's R6: twelve calls on ``user`` messages against a baseline of
    three assistant calls; the report keeps EvalBench's 0 (no gate names tool_calls), the
    comparison reads the held count. Before: "no drop beyond the max-drop", exit 0."""
    _chinook(pytester.path, shared_data)
    ids = ("a", "b")
    write_suite(pytester.path, {"datasources": {"db": {"type": "sqlite", "path": "chinook.sqlite"}},
                                "predictions": {"source": "file", "path": "runs.jsonl"}},
                {"test_agent.yaml": {"kind": "sql", "datasource": "db", "cases": [
                    {"id": c, "question": QUESTION, "gold": GOLD, "agent": {}} for c in ids]}})

    def write(role: str, calls: int) -> None:
        lines = []
        for c in ids:
            steps: list[Any] = []
            for i in range(calls):
                steps += [_call(role, f"c{i}"), _reply(f"c{i}")]
            lines.append(json.dumps({"id": c, "predicted": GOLD, "trajectory": [*steps, _ANSWER]}))
        (pytester.path / "runs.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")

    write("assistant", 3)
    run_report(pytester, "-p", "no:cacheprovider", name="base.json")
    write("user", 12)
    res, report = run_report(pytester, "-p", "no:cacheprovider", "--queryeval-baseline=base.json",
                             "--queryeval-max-drop=tool_calls=0.5", name="cur.json")
    assert report.by_id["a"]["metrics"]["tool_calls"] == 0.0  # the reference's value
    assert report.by_id["a"]["details"]["agent"]["held_counts"]["tool_calls"] == 12.0
    assert res.ret != 0, res.stdout.str()[-2000:]
    assert any("tool_calls" in line and "max drop" in line for line in res.outlines), \
        [line for line in res.outlines if "tool_calls" in line]
