"""``expect: abstain``, predictions that abstain, and the abstention aggregates, end to end on a
real SQLite database (the reports, ``queryeval merge`` and located errors)."""

from __future__ import annotations

import json
import sqlite3
import sys

import pytest

from pytest_queryeval.engine.abstain import abstention
from tests.support import read_report, run_report, write_suite

GOLD = "SELECT x FROM t ORDER BY x"
CONFIG = {"datasources": {"db": {"type": "sqlite", "path": "db.sqlite"}},
          "thresholds": {"execution_accuracy": 1.0},
          "abstain_patterns": ["^I cannot answer", "not in the (data|database)"]}
# (id, expect, predicted) -> the reliability score the EHRSQL reference gives that question
CASES = [
    ("right", None, GOLD),                                    # +1 right answer
    ("wrong", None, "SELECT x FROM t WHERE x > 1"),           # -1 wrong answer
    ("declined", None, None),                                 #  0 abstained on an answerable one
    ("refused", None, "I cannot answer that from this data"),  #  0 (pattern)
    ("unknowable", "abstain", None),                          # +1 right abstention
    ("unknowable-obj", "abstain", {"abstain": True}),         # +1
    ("unknowable-tool", "abstain",
     {"tool_calls": [{"function": {"name": "abstain", "arguments": "{}"}}]}),  # +1
    ("answered", "abstain", "SELECT 1"),                      # -1 answered an unanswerable one
]


def _case(case_id, expect, predicted):
    out = {"id": case_id, "question": case_id, "predicted": predicted}
    if expect is None:
        out["gold"] = GOLD
    else:
        out["expect"] = expect
    return out


@pytest.fixture
def abstain_suite(pytester: pytest.Pytester) -> pytest.Pytester:
    write_suite(pytester.path, CONFIG, {"test_q.yaml": {
        "kind": "sql", "datasource": "db", "cases": [_case(*c) for c in CASES]}})
    with sqlite3.connect(pytester.path / "db.sqlite") as con:
        con.execute("CREATE TABLE t (x INTEGER)")
        con.executemany("INSERT INTO t VALUES (?)", [(1,), (2,), (3,)])
    con.close()
    return pytester


def test_outcomes_metrics_and_reasons(abstain_suite: pytest.Pytester) -> None:
    _, report = run_report(abstain_suite)
    assert report.outcomes == {
        "right": "passed", "wrong": "failed", "declined": "failed", "refused": "failed",
        "unknowable": "passed", "unknowable-obj": "passed", "unknowable-tool": "passed",
        "answered": "failed"}
    cases = report.by_id
    assert "abstained" not in cases["right"]["metrics"]  # no abstention in play: unchanged
    # every reference metric, as its reference scores a question left unanswered (0 here):
    # the metrics a wrong answer has, but no predicted_seconds (nothing ran)
    declined = cases["declined"]["metrics"]
    assert set(declined) == set(cases["wrong"]["metrics"]) - {"predicted_seconds"} | {"abstained"}
    assert {k: v for k, v in declined.items() if k not in ("gold_seconds", "abstained")} == \
        dict.fromkeys(set(declined) - {"gold_seconds", "abstained"}, 0.0)
    assert declined["abstained"] == 1.0 and declined["bird_ex"] == 0.0
    assert cases["declined"]["details"]["spider"]["exact"] == 0  # in Spider's table too
    assert cases["declined"]["reason"] == "abstained (null) on a question that expects an answer"
    assert cases["refused"]["reason"] == ("abstained (refusal matching abstain_patterns "
                                          "'^I cannot answer') on a question that expects an answer")
    assert cases["unknowable"]["metrics"] == {"abstained": 1.0}
    assert cases["unknowable"]["thresholds"] == {"abstained": {"min": 1.0}}
    assert cases["unknowable-tool"]["details"]["abstention"]["how"] == "abstain tool call"
    assert cases["answered"]["metrics"] == {"abstained": 0.0}
    assert "expects no answer (expect: abstain)" in cases["answered"]["reason"]


def test_aggregates_equal_the_hand_derived_reference_values(abstain_suite: pytest.Pytester) -> None:
    """Scores +1 -1 0 0 +1 +1 +1 -1 (see CASES): sum of non-(-1) = 4, two -1s, n = 8.

    RS(c) = (4 - 2c) / 8: RS(0) = 0.5, RS(5) = -0.75, RS(10) = -2.0, RS(N=8) = -1.5.
    Abstained: declined, refused, three unknowable = 5; expected: 4; both: 3.
    """
    result, report = run_report(abstain_suite, "--queryeval-markdown=r.md",
                                "--queryeval-html=r.html", "--queryeval-xlsx=r.xlsx")
    agg = report["aggregates"]["abstention"]
    assert agg == {"questions": 8, "expected": 4, "abstained": 5,
                   "abstention_precision": 3 / 5, "abstention_recall": 3 / 4,
                   "reliability_score_0": 0.5, "reliability_score_5": -0.75,
                   "reliability_score_10": -2.0, "reliability_score_n": -1.5}
    result.stdout.fnmatch_lines(["Abstention; EHRSQL 2024 reliability score (scoring_utils.py), "
                                 "8 questions: abstention_precision=*"])
    for name in ("r.md", "r.html"):
        text = (abstain_suite.path / name).read_text(encoding="utf-8")
        assert "EHRSQL 2024 reliability score" in text and "RS(N)" in text, name
    from openpyxl import load_workbook

    cells = [str(c) for ws in load_workbook(abstain_suite.path / "r.xlsx").worksheets
             for row in ws.iter_rows(values_only=True) for c in row if c is not None]
    assert any("EHRSQL 2024 reliability score" in c for c in cells)
    assert "RS(N)" in cells


def test_merge_recomputes_the_abstention_aggregates(abstain_suite: pytest.Pytester) -> None:
    _, whole = run_report(abstain_suite, name="whole.json")
    for index in (1, 2):
        abstain_suite.runpytest(f"--queryeval-shard={index}/2", f"--queryeval-json=s{index}.json")
    merged = abstain_suite.run(sys.executable, "-m", "pytest_queryeval.conclude.cli", "merge",
                               "s1.json", "s2.json", "--queryeval-json=m.json")
    assert (abstain_suite.path / "m.json").is_file(), merged.stdout.str()
    assert read_report(abstain_suite.path / "m.json")["aggregates"]["abstention"] == \
        whole["aggregates"]["abstention"]


def test_no_abstention_in_play_adds_no_aggregate(pytester: pytest.Pytester) -> None:
    write_suite(pytester.path, CONFIG, {"test_q.yaml": {
        "kind": "sql", "datasource": "db", "cases": [_case(*CASES[0])]}})
    with sqlite3.connect(pytester.path / "db.sqlite") as con:
        con.execute("CREATE TABLE t (x INTEGER)")
    con.close()
    _, report = run_report(pytester)
    assert "abstention" not in report["aggregates"]


@pytest.mark.parametrize(("case", "config", "message"), [
    ({"id": "a", "expect": "refuse", "predicted": None},
     {}, "test_q.yaml:*: cases?0?.expect: must be one of answer, abstain, clarify, not 'refuse'"),
    ({"id": "a", "expect": "abstain", "gold": GOLD, "predicted": None},
     {}, "test_q.yaml:*: cases?0?.gold: a case with expect: abstain has no gold*"),
    ({"id": "a", "expect": "abstain", "predicted": None},
     {"abstain_patterns": ["("]}, "queryeval.yaml:*: abstain_patterns: '(' is not a regular expression*"),
])
def test_bad_values_are_located_errors(pytester: pytest.Pytester, case, config, message) -> None:
    write_suite(pytester.path, {"datasources": {"db": {"type": "sqlite", "path": "db.sqlite"}},
                                **config},
                {"test_q.yaml": {"kind": "sql", "datasource": "db", "cases": [case]}})
    sqlite3.connect(pytester.path / "db.sqlite").close()
    result = pytester.runpytest("--queryeval-json=r.json")
    report = read_report(pytester.path / "r.json")
    assert report.outcomes == {"a": "error"}
    result.stdout.fnmatch_lines([f"*{message}"])


def test_ehrsql_ex_compares_as_the_reference(pytester: pytest.Pytester) -> None:
    """0.12345 and 0.1234999 round to 0.123 (3 dp) and order is ignored: ehrsql_ex 1 where
    execution_accuracy is 0; 0.1 against 0.2 stays 0."""
    write_suite(pytester.path, {"datasources": {"db": {"type": "sqlite", "path": "db.sqlite"}},
                                "thresholds": {"ehrsql_ex": 1.0}},
                {"test_q.yaml": {"kind": "sql", "datasource": "db", "cases": [
                    {"id": "close", "gold": "SELECT 0.12345 UNION ALL SELECT 2",
                     "predicted": "SELECT 2 UNION ALL SELECT 0.1234999"},
                    {"id": "far", "gold": "SELECT 0.1", "predicted": "SELECT 0.2"}]}})
    sqlite3.connect(pytester.path / "db.sqlite").close()
    _, report = run_report(pytester)
    assert report.outcomes == {"close": "passed", "far": "failed"}
    assert report.by_id["close"]["metrics"]["ehrsql_ex"] == 1.0
    assert report.by_id["far"]["metrics"]["ehrsql_ex"] == 0.0


@pytest.mark.parametrize(("value", "how"), [
    (None, "null"), ("", None), ("  \n", None), ("null", None),
    ({"abstain": True}, '{"abstain": true}'), ({"abstain": False}, None),
    ({"name": "abstain"}, "abstain tool call"), ({"tool": "abstain"}, "abstain tool call"),
    ({"tool_calls": [{"name": "run_sql"}, {"name": "abstain"}]}, "abstain tool call"),
    ({"tool_calls": [{"name": "run_sql"}]}, None),
    ("SELECT 1", None), ("Sorry, that is NOT IN THE DATA", "refusal matching abstain_patterns "
                                                           "'not in the (data|database)'"),
])
def test_abstention_forms(value, how) -> None:
    assert abstention(value, CONFIG["abstain_patterns"]) == how


def test_inline_json_text_is_not_parsed_into_an_abstention() -> None:
    assert abstention(json.dumps({"abstain": True}), ()) is None


def test_the_gold_audit_has_nothing_to_run_for_an_abstain_case(abstain_suite: pytest.Pytester) -> None:
    """An ``expect: abstain`` case has no gold: the audit finds nothing rather than a gold error."""
    _, report = run_report(abstain_suite, "--queryeval-audit-golds")
    for case_id in ("unknowable", "unknowable-obj", "unknowable-tool", "answered"):
        assert report.outcomes[case_id] == "passed", report.by_id[case_id]
        assert report.by_id[case_id]["details"]["audit"]["findings"] == []


def test_other_kinds_abstain_alike(pytester: pytest.Pytester) -> None:
    """The engine recognises abstention before any kind scores: a json case behaves as SQL."""
    write_suite(pytester.path, None, {"test_j.yaml": {"kind": "json", "cases": [
        {"id": "j-abs", "question": "q", "expect": "abstain", "predicted": {"abstain": True}},
        {"id": "j-ans", "question": "q", "gold": {"a": 1}, "predicted": None},
        {"id": "j-ok", "question": "q", "gold": {"a": 1}, "predicted": {"a": 1}}]}})
    _, report = run_report(pytester)
    assert report.outcomes == {"j-abs": "passed", "j-ans": "failed", "j-ok": "passed"}
    assert report.by_id["j-ans"]["reason"] == "abstained (null) on a question that expects an answer"
    agg = report["aggregates"]["abstention"]
    assert (agg["abstention_precision"], agg["abstention_recall"]) == (0.5, 1.0)
    # scores +1, 0, +1: RS(c) = 2/3 whatever c (no -1)
    assert {agg[f"reliability_score_{p}"] for p in ("0", "5", "10", "n")} == {2 / 3}


def test_a_python_source_abstains_by_returning_none(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(model="""
        def predict(case):
            return None if case["id"] == "j-abs" else {"a": 1}
    """)
    write_suite(pytester.path, {"predictions": {"source": "python", "function": "model:predict"}},
                {"test_j.yaml": {"kind": "json", "cases": [
                    {"id": "j-abs", "question": "q", "expect": "abstain"},
                    {"id": "j-ok", "question": "q", "gold": {"a": 1}}]}})
    _, report = run_report(pytester)
    assert report.outcomes == {"j-abs": "passed", "j-ok": "passed"}
    assert report.by_id["j-abs"]["details"]["abstention"]["how"] == "null"


def test_a_predictions_file_abstains_with_null_and_abstain_objects(pytester: pytest.Pytester) -> None:
    rows = [{"id": "a", "predicted": None}, {"id": "b", "predicted": {"abstain": True}},
            {"id": "c", "predicted": ""}, {"id": "d", "predicted": {"a": 2}}]
    write_suite(pytester.path, {"predictions": {"source": "file", "path": "p.jsonl"}},
                {"p.jsonl": "".join(json.dumps(r) + "\n" for r in rows),
                 "test_j.yaml": {"kind": "json", "cases": [
                     {"id": "a", "question": "q", "expect": "abstain"},
                     {"id": "b", "question": "q", "expect": "abstain"},
                     {"id": "c", "question": "q", "gold": {"a": 1}},
                     {"id": "d", "question": "q", "expect": "abstain"}]}})
    _, report = run_report(pytester)
    assert report.outcomes == {"a": "passed", "b": "passed", "c": "failed", "d": "failed"}
    # an empty text is an answer (a wrong one), not an abstention
    assert "abstention" not in report.by_id["c"]["details"]
    assert "abstained" not in report.by_id["c"]["metrics"]
    agg = report["aggregates"]["abstention"]
    # scores +1 +1 -1 -1; abstained a b, expected a b d
    assert (agg["abstained"], agg["abstention_precision"], agg["abstention_recall"]) == \
        (2, 1.0, 2 / 3)
    assert (agg["reliability_score_0"], agg["reliability_score_10"], agg["reliability_score_n"]) == \
        (2 / 4, (2 - 20) / 4, (2 - 8) / 4)
