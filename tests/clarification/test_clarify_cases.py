"""``expect: clarify``, predictions that ask a question back, ``clarification: {asks_about}``
and the clarification aggregates, end to end on a real SQLite database (the reports,
``queryeval merge`` and located errors)."""

from __future__ import annotations

import json
import sqlite3
import sys

import pytest

from pytest_queryeval.engine.abstain import abstention
from pytest_queryeval.engine.clarify import Asked, clarification, missing_terms
from tests.support import read_report, run_report, write_suite

GOLD = "SELECT x FROM t ORDER BY x"
CONFIG = {"datasources": {"db": {"type": "sqlite", "path": "db.sqlite"}},
          "thresholds": {"execution_accuracy": 1.0},
          "clarify_patterns": ["^(do|did) you mean", r"^which \w+ do you"]}
TOOL = {"tool_calls": [{"id": "call_1", "type": "function", "function": {
    "name": "ask_user", "arguments": json.dumps({"question": "Which YEAR do you mean?"})}}]}
# (id, expect, asks_about, predicted): expected (E) and clarified (C) flags in the comment
CASES = [
    ("right", None, None, GOLD),                                            # -  -
    ("asked", "clarify", ["total", "number of invoices"],
     "Do you mean the Total amount or the number of  invoices?"),           # E  C  passes
    ("asked-obj", "clarify", None, {"clarify": "By year or by month?"}),    # E  C  passes
    ("asked-tool", "clarify", ["year"], TOOL),                              # E  C  passes
    ("vague", "clarify", ["total", "count"], "Do you mean something else?"),  # E  C  fails
    ("answered", "clarify", None, "SELECT 1"),                              # E  -  fails
    ("declined", "clarify", None, None),                                    # E  -  fails
    ("over-asked", None, None, "Did you mean the sum?"),                    # -  C  fails
]


def _case(case_id, expect, terms, predicted):
    out = {"id": case_id, "question": case_id, "predicted": predicted}
    if expect is None:
        out["gold"] = GOLD
    else:
        out["expect"] = expect
    if terms is not None:
        out["clarification"] = {"asks_about": terms}
    return out


def _db(path) -> None:
    with sqlite3.connect(path / "db.sqlite") as con:
        con.execute("CREATE TABLE t (x INTEGER)")
        con.executemany("INSERT INTO t VALUES (?)", [(1,), (2,), (3,)])
    con.close()


@pytest.fixture
def clarify_suite(pytester: pytest.Pytester) -> pytest.Pytester:
    write_suite(pytester.path, CONFIG, {"test_q.yaml": {
        "kind": "sql", "datasource": "db", "cases": [_case(*c) for c in CASES]}})
    _db(pytester.path)
    return pytester


def test_outcomes_metrics_and_reasons(clarify_suite: pytest.Pytester) -> None:
    _, report = run_report(clarify_suite)
    assert report.outcomes == {
        "right": "passed", "asked": "passed", "asked-obj": "passed", "asked-tool": "passed",
        "vague": "failed", "answered": "failed", "declined": "failed", "over-asked": "failed"}
    cases = report.by_id
    assert "clarified" not in cases["right"]["metrics"]  # no clarification in play: unchanged
    assert "clarification" not in (cases["right"].get("details") or {})
    assert cases["asked"]["metrics"] == {"clarified": 1.0, "asks_about": 1.0}
    assert cases["asked"]["thresholds"] == {"clarified": {"min": 1.0}, "asks_about": {"min": 1.0}}
    info = cases["asked"]["details"]["clarification"]
    assert info["how"] == "question matching clarify_patterns '^(do|did) you mean'"
    assert info["asks_about"] == {"terms": ["total", "number of invoices"], "missing": []}
    assert cases["asked-obj"]["metrics"] == {"clarified": 1.0}
    assert cases["asked-obj"]["thresholds"] == {"clarified": {"min": 1.0}}
    tool = cases["asked-tool"]["details"]["clarification"]
    assert (tool["how"], tool["question"]) == ("ask_user tool call", "Which YEAR do you mean?")
    assert cases["vague"]["metrics"] == {"clarified": 1.0, "asks_about": 0.0}
    assert cases["vague"]["reason"] == (
        "the clarification question does not mention total, count (clarification.asks_about): "
        "'Do you mean something else?'")
    assert cases["answered"]["metrics"] == {"clarified": 0.0}
    assert cases["answered"]["reason"].startswith(
        "answered on a question that expects a question back (expect: clarify)")
    assert cases["declined"]["reason"].startswith("abstained (null) on a question that expects "
                                                  "a question back")
    assert cases["declined"]["details"]["abstention"] == {"expected": False, "abstained": True,
                                                         "how": "null"}
    # every reference metric, as for an abstention: what its reference gives no answer (0)
    over = cases["over-asked"]["metrics"]
    assert over["clarified"] == 1.0 and over["execution_accuracy"] == over["bird_ex"] == 0.0
    assert {v for k, v in over.items() if k not in ("clarified", "gold_seconds")} == {0.0}
    assert cases["over-asked"]["reason"] == (
        "asked a question back (question matching clarify_patterns '^(do|did) you mean') on a "
        "question that expects an answer: 'Did you mean the sum?'")


def test_aggregates_precision_and_recall(clarify_suite: pytest.Pytester) -> None:
    """Clarified: asked, asked-obj, asked-tool, vague, over-asked = 5; expected: the six
    expect: clarify cases; both: 4. Precision 4/5, recall 4/6."""
    result, report = run_report(clarify_suite, "--queryeval-markdown=r.md",
                                "--queryeval-html=r.html")
    assert report["aggregates"]["clarification"] == {
        "questions": 8, "expected": 6, "clarified": 5,
        "clarification_precision": 4 / 5, "clarification_recall": 4 / 6}
    result.stdout.fnmatch_lines(["Clarification (asked when and only when it should), "
                                 "8 questions: clarification_precision=0.8*"])
    for name in ("r.md", "r.html"):
        assert "clarification recall" in (clarify_suite.path / name).read_text("utf-8"), name


def test_merge_recomputes_the_clarification_aggregates(clarify_suite: pytest.Pytester) -> None:
    _, whole = run_report(clarify_suite, name="whole.json")
    for index in (1, 2):
        clarify_suite.runpytest(f"--queryeval-shard={index}/2", f"--queryeval-json=s{index}.json")
    merged = clarify_suite.run(sys.executable, "-m", "pytest_queryeval.conclude.cli", "merge",
                               "s1.json", "s2.json", "--queryeval-json=m.json")
    assert (clarify_suite.path / "m.json").is_file(), merged.stdout.str()
    assert read_report(clarify_suite.path / "m.json")["aggregates"]["clarification"] == \
        whole["aggregates"]["clarification"]


def test_no_clarification_in_play_adds_no_aggregate(pytester: pytest.Pytester) -> None:
    write_suite(pytester.path, CONFIG, {"test_q.yaml": {
        "kind": "sql", "datasource": "db", "cases": [_case(*CASES[0])]}})
    _db(pytester.path)
    _, report = run_report(pytester)
    assert "clarification" not in report["aggregates"]


def test_a_json_case_clarifies_as_sql_does(pytester: pytest.Pytester) -> None:
    """The engine recognises a question back before any kind scores: a json case too."""
    write_suite(pytester.path, {}, {"test_j.yaml": {"kind": "json", "cases": [
        {"id": "j", "question": "Show the report", "expect": "clarify",
         "clarification": {"asks_about": "quarter"},
         "predicted": {"clarify": "For which quarter?"}}]}})
    _, report = run_report(pytester)
    assert report.outcomes == {"j": "passed"}
    assert report.by_id["j"]["metrics"] == {"clarified": 1.0, "asks_about": 1.0}


@pytest.mark.parametrize(("case", "config", "message"), [
    ({"id": "a", "expect": "ask", "predicted": None},
     {}, "test_q.yaml:*: cases?0?.expect: must be one of answer, abstain, clarify, not 'ask'"),
    ({"id": "a", "expect": "clarify", "gold": GOLD, "predicted": None},
     {}, "test_q.yaml:*: cases?0?.gold: a case with expect: clarify has no gold unless a reply:*"),
    ({"id": "a", "gold": GOLD, "clarification": {"asks_about": ["x"]}, "predicted": None},
     {}, "test_q.yaml:*: cases?0?.clarification: only a case with expect: clarify has "
         "clarification: (expect is 'answer')"),
    ({"id": "a", "expect": "abstain", "reply": "yes", "predicted": None},
     {}, "test_q.yaml:*: cases?0?.reply: only a case with expect: clarify has reply:*"),
    ({"id": "a", "expect": "clarify", "clarification": {"asks_about": []}, "predicted": None},
     {}, "test_q.yaml:*: cases?0?.clarification.asks_about: must be a term or a non-empty list*"),
    ({"id": "a", "expect": "clarify", "clarification": {"about": ["x"]}, "predicted": None},
     {}, "test_q.yaml:*: cases?0?.clarification.about: unknown key (known: asks_about)"),
    ({"id": "a", "expect": "clarify", "clarification": ["x"], "predicted": None},
     {}, "test_q.yaml:*: cases?0?.clarification: must be a mapping*"),
    ({"id": "a", "expect": "clarify", "reply": " ", "predicted": None},
     {}, "test_q.yaml:*: cases?0?.reply: must be the user's reply (non-blank text)"),
    ({"id": "a", "expect": "clarify", "reply": "By total", "predicted": None},
     {}, "test_q.yaml:*: cases?0?.reply: a reply continues the conversation to a gold turn*"),
    ({"id": "a", "expect": "clarify", "predicted": None},
     {"clarify_patterns": ["(?"]}, "queryeval.yaml:*: clarify_patterns: '(?' is not a regular "
                                   "expression*"),
])
def test_bad_values_are_located_errors(pytester: pytest.Pytester, case, config, message) -> None:
    write_suite(pytester.path, {"datasources": {"db": {"type": "sqlite", "path": "db.sqlite"}},
                                **config},
                {"test_q.yaml": {"kind": "sql", "datasource": "db", "cases": [case]}})
    sqlite3.connect(pytester.path / "db.sqlite").close()
    result = pytester.runpytest("--queryeval-json=r.json")
    if not config:
        assert read_report(pytester.path / "r.json").outcomes == {"a": "error"}
    result.stdout.fnmatch_lines([f"*{message}"])


@pytest.mark.parametrize(("value", "asked"), [
    ("Do you mean 2024?", Asked("question matching clarify_patterns '^(do|did) you mean'",
                                "Do you mean 2024?")),
    ("SELECT 1", None), (None, None), ("", None),
    ({"clarify": "Which one?"}, Asked('{"clarify": ...}', "Which one?")),
    ({"clarify": " "}, None), ({"clarify": True}, None),
    ({"name": "ask_user", "arguments": {"question": "Which?"}}, Asked("ask_user tool call", "Which?")),
    ({"tool": "ask_user"}, Asked("ask_user tool call", "")),
    ({"function": {"name": "ask_user", "arguments": '{"text": "Sum or count?"}'}},
     Asked("ask_user tool call", "Sum or count?")),
    ({"function": {"name": "ask_user", "arguments": "not json?"}},
     Asked("ask_user tool call", "not json?")),
    (TOOL, Asked("ask_user tool call", "Which YEAR do you mean?")),
    ({"tool_calls": [{"function": {"name": "run_sql"}}]}, None),
    ({"tool_calls": [{"function": {"name": "abstain"}}]}, None),
])
def test_clarification_forms(value, asked) -> None:
    assert clarification(value, CONFIG["clarify_patterns"]) == asked


def test_a_question_back_is_not_an_abstention() -> None:
    assert abstention({"clarify": "Which one?"}, ()) is None
    assert abstention(TOOL, ()) is None


def test_terms_are_matched_case_insensitively_with_white_space_folded() -> None:
    assert missing_terms("Total  AMOUNT or count?", ["total amount", "Count", "year"]) == ["year"]
    assert missing_terms("ＴＯＴＡＬ?", ["total"]) == []  # fullwidth letters (NFKC)
