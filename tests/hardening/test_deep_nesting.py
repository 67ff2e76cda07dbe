"""Deeply nested untrusted data (issue 52, hardening): a list nested 600 or 3,000 levels deep in
a prediction, an agent's tool result or an envelope's extra keys, from a ``python`` source
(live objects no JSON decoder bounded), a predictions file (decoded under the 200-level
bound), and JSON reports read back by ``merge``, ``view``, ``--queryeval-baseline``.

Before: the record's walkers (the secret scrubber, the record's cleaning, ``cap_details``,
the JSON encoder under ``cap_value``) ended a 600-deep value in a RecursionError that failed
the case's test with a pytest traceback, or "internal error in predictor". Now every walker
stops at ``MAX_WALK_DEPTH`` with a marker: each case gets its located result, the other cases
and every report are as they would be."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from pytest_queryeval._util.boundedio import MAX_WALK_DEPTH, TOO_DEEP, shallow
from pytest_queryeval._util.secrets import Scrubber
from pytest_queryeval.conclude.cli import main as queryeval
from pytest_queryeval.report.caps import cap_details, cap_record, cap_value
from tests.support import run_report, write_suite


def deep(n: int) -> object:
    value: object = "bottom"
    for _ in range(n):
        value = [value]
    return value


def depth(value: object) -> int:
    n = 0
    while isinstance(value, list | dict):
        value = value[0] if isinstance(value, list) else next(iter(value.values()))
        n += 1
    return n


def innermost(value: object) -> object:
    while isinstance(value, list):
        value = value[0]
    return value


CALL = {"role": "assistant", "content": None, "tool_calls": [
    {"id": "a", "type": "function",
     "function": {"name": "run_query", "arguments": "{\"query\": \"SELECT 1\"}"}}]}


def _suite(pytester: pytest.Pytester, predictions: dict[str, Any]) -> None:
    with sqlite3.connect(pytester.path / "db.sqlite") as con:
        con.execute("CREATE TABLE t (x INTEGER)")
        con.execute("INSERT INTO t VALUES (1)")
    con.close()
    cases = [{"id": "ok", "question": "q", "gold": "SELECT 1"},
             {"id": "deep_result", "question": "q", "gold": "SELECT 1",
              "agent": {"trajectory": ["run_query"]}},
             {"id": "deep_extra", "question": "q", "gold": "SELECT 1",
              "agent": {"trajectory": ["run_query"]}},
             {"id": "deep_predicted", "question": "q", "gold": "SELECT 1"}]
    write_suite(pytester.path, {"datasources": {"db": {"type": "sqlite", "path": "db.sqlite"}},
                                "predictions": predictions},
                {"test_q.yaml": {"kind": "sql", "datasource": "db", "cases": cases}})


@pytest.mark.parametrize("levels", [600, 3000])
def test_a_python_source_answering_deep_nesting_gives_located_results(
        pytester: pytest.Pytester, levels: int) -> None:
    pytester.makepyfile(deep_model=f"""
        def deep(n):
            v = "bottom"
            for _ in range(n):
                v = [v]
            return v
        CALL = {CALL!r}
        def predict(case):
            if case["id"] == "deep_result":
                return {{"predicted": "SELECT 1", "trajectory": [
                    CALL, {{"role": "tool", "tool_call_id": "a", "content": deep({levels})}}]}}
            if case["id"] == "deep_extra":
                return {{"predicted": "SELECT 1", "trajectory": [
                    CALL, {{"role": "tool", "tool_call_id": "a", "content": "1"}}],
                    "meta": deep({levels})}}
            if case["id"] == "deep_predicted":
                return deep({levels})
            return "SELECT 1"
    """)
    _suite(pytester, {"source": "python", "function": "deep_model:predict"})
    result, report = run_report(pytester, "-p", "no:cacheprovider", "--queryeval-html=r.html",
                                "--queryeval-markdown=r.md", "--junitxml=r.xml")
    assert "RecursionError" not in result.stdout.str()
    assert report.outcomes == {"ok": "passed", "deep_result": "passed", "deep_extra": "passed",
                               "deep_predicted": "error"}
    by_id = report.by_id
    assert by_id["deep_result"]["details"]["agent"]["refused"] == (
        "trajectory: nested deeper than 32 levels")
    assert by_id["deep_result"]["metrics"]["trajectory_match"] == 0.0
    assert by_id["deep_extra"]["metrics"]["trajectory_match"] == 100.0
    predicted = by_id["deep_predicted"]
    assert predicted["error"] == "prediction error: expected predicted SQL text, got list"
    assert innermost(predicted["predicted"]) == TOO_DEEP
    assert depth(predicted["predicted"]) < MAX_WALK_DEPTH
    for name in ("r.html", "r.md", "r.xml"):
        text = (pytester.path / name).read_text()
        assert "deep_predicted" in text and "RecursionError" not in text


def test_a_predictions_file_nested_near_and_past_the_bound(pytester: pytest.Pytester) -> None:
    """195 levels in a predictions file: the case is a located prediction error, the other
    cases run. 300 and 2,000 levels (past the decoder's own stack): that line's case is the
    error, its line named, the others run (before: an INTERNALERROR of the decoder, no
    report; then every case of the file an error, the forty-seventh re-probe's O2). A line
    whose id cannot be read makes the file refused, as a line that is not JSON does."""
    lines = [{"id": "ok", "predicted": "SELECT 1"},
             {"id": "deep_result", "predicted": "SELECT 1", "trajectory": [
                 CALL, {"role": "tool", "tool_call_id": "a", "content": deep(190)}]},
             {"id": "deep_extra", "predicted": "SELECT 1"},
             {"id": "deep_predicted", "predicted": deep(195)}]
    (pytester.path / "preds.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    _suite(pytester, {"source": "file", "path": "preds.jsonl"})
    _, report = run_report(pytester, "-p", "no:cacheprovider")
    assert report.outcomes == {"ok": "passed", "deep_result": "passed", "deep_extra": "passed",
                               "deep_predicted": "error"}
    assert report.by_id["deep_result"]["details"]["agent"]["refused"] == (
        "trajectory: nested deeper than 32 levels")
    for depth in (300, 2000):
        deepest = '{"id": "deep_predicted", "predicted": ' + "[" * depth + '"x"' + "]" * depth \
            + "}"
        (pytester.path / "preds.jsonl").write_text(
            "".join(json.dumps(x) + "\n" for x in lines[:3]) + deepest + "\n")
        result, report = run_report(pytester, "-p", "no:cacheprovider", fresh=True)
        assert "RecursionError" not in result.stdout.str()
        assert report.outcomes == {"ok": "passed", "deep_result": "passed",
                                   "deep_extra": "passed", "deep_predicted": "error"}, depth
        assert report.by_id["deep_predicted"]["error"] == (
            "prediction error: preds.jsonl:4: invalid JSON: nested deeper than 200 levels")
    unnamed = '{"predicted": ' + "[" * 2000 + '"x"' + "]" * 2000 + ', "id": "deep_predicted"}'
    (pytester.path / "preds.jsonl").write_text(
        "".join(json.dumps(x) + "\n" for x in lines[:3]) + unnamed + "\n")
    result, report = run_report(pytester, "-p", "no:cacheprovider", fresh=True)
    assert set(report.outcomes.values()) == {"error"}  # as for a line that is not JSON
    assert report.by_id["ok"]["error"] == (
        "prediction error: preds.jsonl:4: invalid JSON: nested deeper than 200 levels")


def test_reports_read_back_nested_near_and_past_the_bound(
        pytester: pytest.Pytester, tmp_path: Path) -> None:
    """merge, view and the baseline read a report whose case nests 195 levels, and refuse
    one nesting 300 or 3,000 levels with the file named (the baseline before: read whole,
    then an INTERNALERROR in its walkers, or in the decoder's own recursion)."""
    pytester.makepyfile(deep_model="def predict(case):\n    return 'SELECT 1'\n")
    _suite(pytester, {"source": "python", "function": "deep_model:predict"})
    _, report = run_report(pytester, "-p", "no:cacheprovider")
    for levels, readable in ((195, True), (300, False), (3000, False)):
        edited = json.loads(json.dumps(report))
        edited["cases"][0]["details"]["x"] = None  # the nesting, written as text below
        path = tmp_path / f"deep{levels}.json"
        path.write_text(json.dumps(edited).replace('"x": null', '"x": ' + "[" * levels
                                                   + "]" * levels))
        merged = tmp_path / f"m{levels}.json"
        view = tmp_path / f"v{levels}.html"
        assert (queryeval(["merge", str(path), "-o", str(merged)]) == 0) is readable
        assert (queryeval(["view", str(path), "-o", str(view)]) == 0) is readable
        assert merged.is_file() is readable and view.is_file() is readable
        result = pytester.runpytest("-p", "no:cacheprovider", f"--queryeval-baseline={path}")
        out = result.stdout.str() + result.stderr.str()
        assert "RecursionError" not in out
        assert ("nested deeper than 200 levels" in out) is not readable


def test_each_walker_stops_at_the_bound() -> None:
    """The walkers one by one, on 5,000 levels (past any stack): a marker at the bound."""
    value = deep(5000)
    assert depth(Scrubber(["secret"]).data(value)) == MAX_WALK_DEPTH
    assert depth(cap_details({"x": value})) == MAX_WALK_DEPTH
    assert depth(shallow(value)) == MAX_WALK_DEPTH
    capped = cap_value(value)
    assert depth(capped) == MAX_WALK_DEPTH and innermost(capped) == TOO_DEEP
    json.dumps(capped)  # what the report writer does next
    rec = cap_record({"predicted": value, "details": {"agent": {"trajectory": [
        CALL, {"role": "tool", "tool_call_id": "a", "content": value}]}}})
    assert rec["details"]["agent"]["trajectory"][1]["content"].startswith("[[[[")


def test_the_tool_loop_given_deeply_nested_arguments(pytester: pytest.Pytester,
                                                     agent_standin: Any) -> None:
    """A model whose tool-call arguments nest 3,000 levels (the scripted stand-in behind the
    real ``openai`` client): the tool answers that they are not JSON, the agent goes on, the
    case is scored (before: the decoder's RecursionError ended the loop, "internal error")."""
    pytest.importorskip("openai")
    nested = "[" * 3000 + "]" * 3000
    question = "How many rows?"
    agent_standin.script = {question: [
        {"content": None, "tool_calls": [{"name": "run_query", "arguments": nested}]},
        {"content": "```sql\nSELECT 1\n```"}]}
    with sqlite3.connect(pytester.path / "db.sqlite") as con:
        con.execute("CREATE TABLE t (x INTEGER)")
    con.close()
    write_suite(pytester.path, {
        "datasources": {"db": {"type": "sqlite", "path": "db.sqlite"}},
        "predictions": {"source": "openai", "model": "scripted-agent",
                        "base_url": agent_standin.base_url, "api_key": "none", "retries": 0,
                        "agent": {"budget": {}}}},
        {"test_q.yaml": {"kind": "sql", "datasource": "db", "cases": [
            {"id": "loop", "question": question, "gold": "SELECT 1",
             "agent": {"trajectory": ["run_query"]}}]}})
    result, report = run_report(pytester, "-p", "no:cacheprovider", "--queryeval-html=r.html")
    assert "RecursionError" not in result.stdout.str()
    case = report.by_id["loop"]
    assert case["outcome"] == "passed", case.get("error")
    trajectory = case["details"]["agent"]["trajectory"]
    assert trajectory[1]["content"] == "error: the arguments are not JSON"


def test_the_step_table_given_deeply_nested_arguments() -> None:
    """A report read back (view) whose step arguments are a 3,000-deep JSON text."""
    from pytest_queryeval.report.trajectory import Step

    text = "[" * 3000 + "]" * 3000
    assert Step("run_query", text, None).args_key() == text
