"""Issue 58, the twelfth hostile re-probe (H7, gen_k1.py): a trajectory refused for its shape,
or flagged with the agent's ``error``, scored 0 tool calls and 0 turns (EvalBench's rule for its
trajectory scores), so 30 ``run_query`` calls passed ``tool_calls: {max: 3}`` and
``turn_count: {max: 3}``. A case gated on them now counts the calls read (a refused
trajectory's leniently); one not gated on them keeps EvalBench's value. On a real Chinook
SQLite copy, from a predictions file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.agents.test_counts_from_what_ran import GOLD, QUESTION, _chinook
from tests.agents.test_counts_not_established import call
from tests.support import run_report, write_suite


def _answer(cid: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": cid, "content": "25"}


BASE = [m for i in range(30) for m in (call(f"c{i}", "run_query", {"query": GOLD}),
                                       _answer(f"c{i}"))]
RECORDS: dict[str, dict[str, Any]] = {
    "system-first": {"trajectory": [{"role": "system", "content": "You are an agent."}, *BASE]},
    "dup-id": {"trajectory": [m for _ in range(30) for m in (
        call("c", "run_query", {"query": GOLD}), _answer("c"))]},
    "as-text": {"trajectory": json.dumps(BASE)},
    "error-flag": {"trajectory": BASE, "error": "boom"},
    "honest-30": {"trajectory": BASE},
}


def test_a_refused_or_flagged_trajectory_counts_its_calls_under_a_gate(
        pytester: pytest.Pytester, shared_data: Path) -> None:
    _chinook(pytester.path, shared_data)
    lines = {**RECORDS, **{f"ungated-{k}": v for k, v in RECORDS.items()}}
    (pytester.path / "runs.jsonl").write_text("".join(
        json.dumps({"id": cid, "predicted": GOLD, **rec}) + "\n" for cid, rec in lines.items()))
    gates = {"tool_calls": {"max": 3}, "turn_count": {"max": 3}}
    write_suite(pytester.path, {
        "datasources": {"db": {"type": "sqlite", "path": "chinook.sqlite"}},
        "predictions": {"source": "file", "path": "runs.jsonl"}},
        {"test_agent.yaml": {"kind": "sql", "datasource": "db", "agent": True, "cases": [
            {"id": cid, "question": QUESTION, "gold": GOLD,
             **({} if cid.startswith("ungated") else {"thresholds": gates})}
            for cid in lines]}})
    _, report = run_report(pytester, "-p", "no:cacheprovider")
    for cid in RECORDS:
        case = report.by_id[cid]
        assert case["outcome"] == "failed", (cid, case["outcome"], case["metrics"])
        assert case["metrics"]["tool_calls"] == 30.0, cid
        assert case["metrics"]["turn_count"] >= 1.0, cid
    # not gated on them: EvalBench's counts, as before
    assert report.by_id["ungated-error-flag"]["metrics"]["tool_calls"] == 0.0
    assert report.by_id["ungated-dup-id"]["metrics"]["tool_calls"] == 0.0
