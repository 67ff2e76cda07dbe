"""``clarification: {asks_about}`` decided by the judge where a case has one: the real
``openai`` client against the loopback stand-in judge (tests/fixtures/openai_standin.py, a
stand-in for the judge model: its verdicts are scripted by the clarification it is shown), a
real SQLite file, the verdicts pinned so a second run asks nothing."""

from __future__ import annotations

import json
import sqlite3

import pytest

from tests.fixtures.openai_standin import KEY, MODEL
from tests.support import run_report, write_suite

pytest.importorskip("openai")

MEANING = "Do you want the invoice sums or how many there are?"
OFFTOPIC = "Which colour theme do you like?"
YES = json.dumps({"asks_about": True, "reason": "sums are total amounts"})
NO = json.dumps({"asks_about": False, "reason": "asks about colours, not amounts"})


def judged_suite(pytester, standin, cases):
    write_suite(pytester.path, {
        "datasources": {"db": {"type": "sqlite", "path": "db.sqlite"}},
        "judge": {"model": MODEL, "base_url": standin.base_url, "api_key": "${QE_JUDGE_KEY}",
                  "retries": 0, "timeout": 30}},
        {"test_q.yaml": {"kind": "sql", "datasource": "db", "cases": cases}})
    sqlite3.connect(pytester.path / "db.sqlite").close()


def case(case_id, said):
    return {"id": case_id, "question": "Show invoices by value", "expect": "clarify",
            "clarification": {"asks_about": ["total amount"]}, "predicted": {"clarify": said}}


def test_the_judge_decides_asks_about_and_its_verdicts_are_pinned(pytester, openai_standin,
                                                                  monkeypatch):
    monkeypatch.setenv("QE_JUDGE_KEY", KEY)
    openai_standin.containing = {MEANING: YES, OFFTOPIC: NO}
    judged_suite(pytester, openai_standin, [case("meaning", MEANING), case("offtopic", OFFTOPIC)])
    _, report = run_report(pytester, "-p", "no:cacheprovider")
    # the terms alone would fail "meaning" (no "total amount" in it): the judge passes it
    assert report.outcomes == {"meaning": "passed", "offtopic": "failed"}
    assert report.by_id["meaning"]["metrics"]["asks_about"] == 1.0
    judged = report.by_id["meaning"]["details"]["clarification"]["asks_about"]
    assert judged["terms"] == ["total amount"]
    assert judged["judge"]["accepted"] is True and judged["judge"]["pinned"] is False
    assert report.by_id["offtopic"]["metrics"]["asks_about"] == 0.0
    assert report.by_id["offtopic"]["reason"] == (
        "the clarification question does not ask about total amount (the judge: asks about "
        "colours, not amounts)")
    assert len(openai_standin.requests) == 2
    prompt = openai_standin.requests[0]["messages"][0]["content"]
    assert "[BEGIN DATA assistant clarification]" in prompt and f"| {MEANING}" in prompt
    assert openai_standin.requests[0]["response_format"]["schema"]["required"] == [
        "asks_about", "reason"]
    assert (pytester.path / "queryeval-judge-pins.jsonl").is_file()
    _, again = run_report(pytester, "-p", "no:cacheprovider", name="again.json")
    assert again.outcomes == report.outcomes
    assert len(openai_standin.requests) == 2  # pinned: nothing asked
    assert again.by_id["meaning"]["details"]["clarification"]["asks_about"]["judge"]["pinned"]


def test_an_unreadable_judge_answer_is_an_error_not_a_zero(pytester, openai_standin,
                                                           monkeypatch):
    monkeypatch.setenv("QE_JUDGE_KEY", KEY)
    openai_standin.containing = {MEANING: "Yes, it asks about that."}
    judged_suite(pytester, openai_standin, [case("meaning", MEANING)])
    _, report = run_report(pytester, "-p", "no:cacheprovider")
    assert report.outcomes == {"meaning": "error"}
    assert "judge error: the judge's answer holds no JSON object" in report.by_id["meaning"]["error"]
