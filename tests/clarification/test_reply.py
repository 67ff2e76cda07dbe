"""``reply:``: a scripted user reply continues an ``expect: clarify`` case to a gold turn
(issue 42 item 4). The case is a two-turn conversation (docs/conversations.md): turn 1 must
ask back, turn 2 (the reply as the user's message, after the question and the prediction's
own clarification question as history) is scored as any turn. On a real SQLite file, with
inline predictions, a predictions file and a live python source that sees the history."""

from __future__ import annotations

import json
import sqlite3
import sys

import pytest

from tests.support import read_report, run_report, write_suite

GOLD = "SELECT sum(total) FROM invoice"
QUESTION = "What were our biggest sales?"
REPLY = "By total amount"
CONFIG = {"datasources": {"db": {"type": "sqlite", "path": "db.sqlite"}},
          "thresholds": {"execution_accuracy": 1.0},
          "clarify_patterns": ["^do you mean"]}
ASK = "Do you mean by total amount or by number of invoices?"


def _case(case_id, predicted=None, **extra):
    out = {"id": case_id, "question": QUESTION, "expect": "clarify",
           "clarification": {"asks_about": ["total amount", "number"]}, "reply": REPLY,
           "gold": GOLD, **extra}
    if predicted is not None:
        out["predicted"] = predicted
    return out


def _db(path) -> None:
    with sqlite3.connect(path / "db.sqlite") as con:
        con.execute("CREATE TABLE invoice (id INTEGER, total REAL)")
        con.executemany("INSERT INTO invoice VALUES (?, ?)", [(1, 2.5), (2, 4.0)])
    con.close()


@pytest.fixture
def reply_suite(pytester: pytest.Pytester) -> pytest.Pytester:
    write_suite(pytester.path, CONFIG, {"test_q.yaml": {"kind": "sql", "datasource": "db",
                                                        "cases": [
        _case("both", [ASK, GOLD]),
        _case("no-question", ["SELECT 1", GOLD]),
        _case("wrong-after", [ASK, "SELECT count(*) FROM invoice"]),
        _case("vague", ["Do you mean something?", GOLD]),
        _case("only-asked", [ASK]),
    ]}})
    _db(pytester.path)
    return pytester


def test_a_reply_case_is_two_scored_turns(reply_suite: pytest.Pytester) -> None:
    _, report = run_report(reply_suite)
    assert report.outcomes == {"both": "passed", "no-question": "failed",
                               "wrong-after": "failed", "vague": "failed",
                               "only-asked": "failed"}
    both = report.by_id["both"]
    assert both["metrics"]["turn_accuracy"] == 1.0
    assert both["metrics"]["interaction_accuracy"] == 1.0
    # the clarify turn has no execution_accuracy to count 0: the case's mean is turn 2's
    assert both["metrics"]["execution_accuracy"] == 1.0
    assert both["metrics"]["clarified"] == 1.0
    first, second = both["details"]["turns"]
    assert (first["turn"], first["question"], first["expect"], first["clarified"]) == \
        (1, QUESTION, "clarify", True)
    assert first["metrics"] == {"clarified": 1.0, "asks_about": 1.0}
    assert (second["turn"], second["question"], second["gold"], second["outcome"]) == \
        (2, REPLY, GOLD, "passed")
    assert second["metrics"]["execution_accuracy"] == 1.0
    assert "clarified" not in second
    no_question = report.by_id["no-question"]
    assert no_question["metrics"]["turn_accuracy"] == 0.5
    assert no_question["details"]["turns"][0]["clarified"] is False
    assert no_question["details"]["turns"][0]["reason"].startswith(
        "answered on a question that expects a question back")
    wrong = report.by_id["wrong-after"]["details"]["turns"]
    assert [t["outcome"] for t in wrong] == ["passed", "failed"]
    assert wrong[1]["metrics"]["execution_accuracy"] == 0.0
    vague = report.by_id["vague"]["details"]["turns"][0]
    assert vague["metrics"] == {"clarified": 1.0, "asks_about": 0.0}
    only = report.by_id["only-asked"]
    assert [t["outcome"] for t in only["details"]["turns"]] == ["passed", "missing"]
    assert only["metrics"]["turn_accuracy"] == 0.5
    # every turn is a question of the aggregate: 5 clarify turns, 4 asked (no-question did
    # not), 5 answer turns of which none asked back
    assert report["aggregates"]["clarification"] == {
        "questions": 10, "expected": 5, "clarified": 4,
        "clarification_precision": 1.0, "clarification_recall": 4 / 5}


def test_merge_recomputes_reply_aggregates(reply_suite: pytest.Pytester) -> None:
    _, whole = run_report(reply_suite, name="whole.json")
    for index in (1, 2):
        reply_suite.runpytest(f"--queryeval-shard={index}/2", f"--queryeval-json=s{index}.json")
    reply_suite.run(sys.executable, "-m", "pytest_queryeval.conclude.cli", "merge",
                    "s1.json", "s2.json", "--queryeval-json=m.json")
    assert read_report(reply_suite.path / "m.json")["aggregates"]["clarification"] == \
        whole["aggregates"]["clarification"]


STANDIN = '''
import json
SEEN = []

def predict(case):
    """A stand-in for a chat model (named as such): asks back on turn 1, answers the reply on
    turn 2, and records what it was given."""
    with open("seen.jsonl", "a") as fh:
        fh.write(json.dumps({"turn": case["turn"], "question": case["question"],
                             "history": case["history"]}) + "\\n")
    if case["turn"] == 1:
        return {"tool_calls": [{"type": "function", "function": {
            "name": "ask_user", "arguments": json.dumps({"question": ASK})}}]}
    return GOLD
'''.replace("ASK", repr(ASK)).replace("GOLD", repr(GOLD))


def test_a_live_source_gets_the_clarification_and_the_reply_as_history(
        pytester: pytest.Pytester) -> None:
    write_suite(pytester.path, {**CONFIG, "predictions": {"source": "python",
                                                          "callable": "model_standin:predict"}},
                {"test_q.yaml": {"kind": "sql", "datasource": "db", "cases": [_case("live")]}})
    (pytester.path / "model_standin.py").write_text(STANDIN, encoding="utf-8")
    _db(pytester.path)
    _, report = run_report(pytester)
    assert report.outcomes == {"live": "passed"}
    seen = [json.loads(line) for line in
            (pytester.path / "seen.jsonl").read_text("utf-8").splitlines()]
    assert seen == [
        {"turn": 1, "question": QUESTION, "history": []},
        {"turn": 2, "question": REPLY, "history": [
            {"role": "user", "content": QUESTION}, {"role": "assistant", "content": ASK}]}]
    assert report.by_id["live"]["details"]["turns"][0]["clarified"] is True


def test_a_predictions_file_gives_each_turn(pytester: pytest.Pytester) -> None:
    rows = [{"id": "filed", "turn": 1, "predicted": {"clarify": ASK}},
            {"id": "filed", "turn": 2, "predicted": GOLD}]
    write_suite(pytester.path, {**CONFIG, "predictions": {"source": "file",
                                                          "path": "preds.jsonl"}},
                {"test_q.yaml": {"kind": "sql", "datasource": "db", "cases": [_case("filed")]}})
    (pytester.path / "preds.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    _db(pytester.path)
    _, report = run_report(pytester)
    assert report.outcomes == {"filed": "passed"}
    assert [t["outcome"] for t in report.by_id["filed"]["details"]["turns"]] == [
        "passed", "passed"]


@pytest.mark.parametrize(("case", "message"), [
    (_case("a", "just one"), "cases?0?.predicted: a case with a reply: predicts two turns*"),
    (_case("a", [ASK, GOLD, GOLD]), "cases?0?.predicted: a case with a reply: predicts two*"),
])
def test_bad_reply_predictions_are_located_errors(pytester: pytest.Pytester, case,
                                                  message) -> None:
    write_suite(pytester.path, CONFIG, {"test_q.yaml": {"kind": "sql", "datasource": "db",
                                                        "cases": [case]}})
    _db(pytester.path)
    result = pytester.runpytest("--queryeval-json=r.json")
    assert read_report(pytester.path / "r.json").outcomes == {"a": "error"}
    result.stdout.fnmatch_lines([f"*test_q.yaml:*: {message}"])


def test_a_clarify_turn_in_a_written_conversation(pytester: pytest.Pytester) -> None:
    """expect: clarify on a user turn of a conversation; the next user turn is the reply, and
    a live source sees the prediction's clarification question as the assistant's turn."""
    write_suite(pytester.path, {**CONFIG, "predictions": {"source": "python",
                                                          "callable": "model_standin:predict"}},
                {"test_q.yaml": {"kind": "sql", "datasource": "db", "cases": [
                    {"id": "chat", "conversation": [
                        {"role": "user", "content": QUESTION, "expect": "clarify",
                         "clarification": {"asks_about": "total amount"}},
                        {"role": "user", "content": REPLY, "gold": GOLD}]}]}})
    (pytester.path / "model_standin.py").write_text(STANDIN, encoding="utf-8")
    _db(pytester.path)
    _, report = run_report(pytester)
    assert report.outcomes == {"chat": "passed"}
    first = report.by_id["chat"]["details"]["turns"][0]
    assert (first["expect"], first["clarified"]) == ("clarify", True)
    assert (first["metrics"]["clarified"], first["metrics"]["asks_about"]) == (1.0, 1.0)
    seen = [json.loads(line) for line in
            (pytester.path / "seen.jsonl").read_text("utf-8").splitlines()]
    assert seen[1]["history"] == [{"role": "user", "content": QUESTION},
                                  {"role": "assistant", "content": ASK}]


@pytest.mark.parametrize(("turn", "message"), [
    ({"reply": "x", "expect": "clarify"}, "conversation?0?.reply: in a conversation the "
                                          "user's reply is the next user turn*"),
    ({"expect": "clarify", "gold": GOLD}, "conversation?0?.gold: a turn with expect: clarify "
                                          "has no gold*"),
    ({"gold": GOLD, "clarification": {"asks_about": "x"}},
     "conversation?0?.clarification: only a turn with expect: clarify has clarification:*"),
    ({"expect": "clarify", "clarification": {"asks_about": [1]}},
     "conversation?0?.clarification.asks_about: must be a term or a non-empty list*"),
])
def test_bad_clarify_turns_are_located_errors(pytester: pytest.Pytester, turn, message) -> None:
    write_suite(pytester.path, CONFIG, {"test_q.yaml": {"kind": "sql", "datasource": "db",
                                                        "cases": [{"id": "a", "conversation": [
        {"role": "user", "content": QUESTION, "predicted": "SELECT 1", **turn},
        {"role": "user", "content": REPLY, "gold": GOLD, "predicted": GOLD}]}]}})
    _db(pytester.path)
    result = pytester.runpytest("--queryeval-json=r.json")
    assert read_report(pytester.path / "r.json").outcomes == {"a": "error"}
    result.stdout.fnmatch_lines([f"*test_q.yaml:*: cases?0?.{message}"])


def test_the_gold_audit_runs_the_reply_s_gold_and_nothing_for_a_question_back(
        pytester: pytest.Pytester) -> None:
    write_suite(pytester.path, CONFIG, {"test_q.yaml": {"kind": "sql", "datasource": "db",
                                                        "cases": [
        _case("good", [ASK, GOLD]),
        _case("broken", [ASK, GOLD], gold="SELECT nope FROM invoice"),
        {"id": "plain", "question": QUESTION, "expect": "clarify", "predicted": {"clarify": ASK}},
    ]}})
    _db(pytester.path)
    _, report = run_report(pytester, "--queryeval-audit-golds")
    assert report.outcomes == {"good": "passed", "broken": "failed", "plain": "passed"}
    text = json.dumps(report.by_id["broken"])
    assert "turn 2: " in text and "nope" in text
