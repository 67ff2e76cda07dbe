"""``predictions: {source: openai}`` through the whole plugin, with the real ``openai`` client
against the loopback stand-in for the user's model (tests/fixtures/openai_standin.py), on a
real SQLite file."""

from __future__ import annotations

import json
import sqlite3

import pytest

from tests.fixtures.openai_standin import KEY, MODEL, question_of, tokens
from tests.support import run_report, write_suite

pytest.importorskip("openai")

DDL = [
    "CREATE TABLE artists (id INTEGER PRIMARY KEY, name TEXT NOT NULL)",
    "CREATE TABLE albums (id INTEGER PRIMARY KEY, title TEXT, "
    "artist_id INTEGER REFERENCES artists(id))",
]
Q_COUNT = "How many artists are there?"
Q_TITLES = "List every album title."
Q_NAMES = "Which artists are there?"


@pytest.fixture
def music(pytester):
    write_suite(pytester.path)
    conn = sqlite3.connect(pytester.path / "music.sqlite")
    for stmt in DDL:
        conn.execute(stmt)
    conn.executemany("INSERT INTO artists VALUES (?, ?)", [(1, "AC/DC"), (2, "Accept")])
    conn.executemany("INSERT INTO albums VALUES (?, ?, ?)",
                     [(1, "Back in Black", 1), (2, "Balls to the Wall", 2)])
    conn.commit()
    conn.close()
    pytester.makefile(".yaml", test_music=json.dumps({
        "kind": "sql", "datasource": "music", "thresholds": {"execution_accuracy": 1.0},
        "cases": [
            {"id": "count", "question": Q_COUNT, "gold": "SELECT count(*) FROM artists"},
            {"id": "titles", "question": Q_TITLES, "gold": "SELECT title FROM albums"},
            {"id": "names", "question": Q_NAMES, "gold": "SELECT name FROM artists"},
        ]}))
    return pytester


def config(pytester, standin, **predictions):
    spec = {"source": "openai", "model": MODEL, "base_url": standin.base_url,
            "api_key": "${QE_TEST_KEY}", "temperature": 0, "seed": 1, "max_tokens": 200,
            "retries": 1, "backoff": 0.01, **predictions}
    extra = predictions.pop("_suite", {}) if "_suite" in predictions else {}
    spec.pop("_suite", None)
    pytester.makefile(".yaml", queryeval=json.dumps({
        "datasources": {"music": {"type": "sqlite", "path": "music.sqlite"}},
        "predictions": spec, **extra}))


def run(pytester, monkeypatch, *args, key=KEY):
    monkeypatch.setenv("QE_TEST_KEY", key)
    result, report = run_report(pytester, *args)
    return result, report.by_id, report


def test_answers_are_scored_with_tokens_cost_and_the_extraction(music, openai_standin,
                                                                 monkeypatch):
    openai_standin.answers = {
        Q_COUNT: "Here is the query:\n```sql\nSELECT COUNT(*) FROM artists\n```\nIt counts rows.",
        Q_TITLES: "SELECT name FROM artists",  # unfenced, and wrong
        Q_NAMES: "```\nSELECT name FROM artists\n```",
    }
    config(music, openai_standin, _suite={"pricing": {MODEL: {"input_per_mtok": 2.5,
                                                               "output_per_mtok": 10}}})
    result, cases, report = run(music, monkeypatch)
    result.assert_outcomes(passed=2, failed=1)
    assert {i: c["outcome"] for i, c in cases.items()} == {
        "count": "passed", "titles": "failed", "names": "passed"}
    sent = {question_of(r["messages"]): r for r in openai_standin.requests}
    body = sent[Q_COUNT]
    assert (body["model"], body["temperature"], body["seed"], body["max_tokens"]) == \
        (MODEL, 0, 1, 200)
    prompt_tokens = tokens("".join(m["content"] for m in body["messages"]))
    reply = openai_standin.answers[Q_COUNT]
    metrics = cases["count"]["metrics"]
    assert metrics["prompt_tokens"] == prompt_tokens
    assert metrics["completion_tokens"] == tokens(reply)
    assert metrics["cost_usd"] == pytest.approx((prompt_tokens * 2.5 + tokens(reply) * 10) / 1e6)
    assert metrics["prediction_seconds"] > 0
    assert cases["count"]["predicted"] == "SELECT COUNT(*) FROM artists"
    # how the query was found is recorded per case
    details = {i: c["details"]["prediction"] for i, c in cases.items()}
    assert details["count"]["extraction"] == "```sql block"
    assert details["titles"]["extraction"] == "whole reply"
    assert details["names"]["extraction"] == "unlabelled fenced block"
    assert details["count"]["reply"] == reply
    assert (details["count"]["model"], details["count"]["attempts"]) == (MODEL, 1)
    # the prompt: the introspected DDL with types and keys, then the question
    system, user = body["messages"][0], body["messages"][-1]
    assert system["role"] == "system" and "```sql" in system["content"]
    assert "CREATE TABLE albums (id INTEGER PRIMARY KEY, title TEXT, artist_id INTEGER " \
           "REFERENCES artists(id));" in user["content"]
    assert user["content"].endswith(f"Question: {Q_COUNT}")
    assert len(body["messages"]) == 2  # no few-shot examples unless asked
    # totals beside the means in the aggregates
    overall = report["aggregates"]["overall"]["metrics"]
    assert overall["cost_usd"]["total"] == pytest.approx(
        sum(c["metrics"]["cost_usd"] for c in cases.values()))
    assert overall["prompt_tokens"]["total"] == sum(c["metrics"]["prompt_tokens"]
                                                    for c in cases.values())


def test_templates_sample_rows_and_few_shot_examples_from_other_cases(music, openai_standin,
                                                                      monkeypatch):
    config(music, openai_standin, few_shot=2, schema_rows=1,
           system="Kind {kind} on {db_id}.",
           prompt="{schema}\n-- {evidence}\nQuestion: {question}")
    _result, _cases, _ = run(music, monkeypatch)
    sent = {question_of(r["messages"]): r["messages"] for r in openai_standin.requests}
    chat = sent[Q_COUNT]
    assert chat[0] == {"role": "system", "content": "Kind sql on music."}
    # two examples from the other cases, as user/assistant turns, with their golds
    assert [m["role"] for m in chat] == ["system", "user", "assistant", "user", "assistant",
                                         "user"]
    assert chat[1]["content"] == f"Question: {Q_TITLES}"
    assert chat[2]["content"] == "```sql\nSELECT title FROM albums\n```"
    assert chat[3]["content"] == f"Question: {Q_NAMES}"
    # never the case's own gold
    assert all("count(*)" not in m["content"] for m in chat)
    assert "/* 1 example row(s) of artists:\nid | name\n1 | AC/DC */" in chat[-1]["content"]
    assert chat[-1]["content"].endswith(f"-- \nQuestion: {Q_COUNT}")


def test_retry_after_on_429_is_honoured_and_recorded(music, openai_standin, monkeypatch):
    openai_standin.answers = {Q_COUNT: "```sql\nSELECT count(*) FROM artists\n```"}
    openai_standin.script = {Q_COUNT: [{"status": 429, "headers": {"Retry-After": "1"}}]}
    config(music, openai_standin, backoff=0)
    _result, cases, _ = run(music, monkeypatch, "-k", "count")
    assert cases["count"]["outcome"] == "passed"
    details = cases["count"]["details"]["prediction"]
    assert (details["attempts"], details["retry_waits"]) == (2, [1.0])
    first, second = (t for r, t in zip(openai_standin.requests, openai_standin.times,
                                       strict=True) if question_of(r["messages"]) == Q_COUNT)
    assert second - first >= 0.9  # waited what the server asked (backoff alone is 0 s)


def test_bad_input_is_a_per_case_error_with_its_reason(music, openai_standin, monkeypatch):
    openai_standin.answers = {Q_NAMES: "```sql\n```"}
    openai_standin.script = {
        Q_COUNT: [{"body": b"<html>502 Bad Gateway</html>"}],
        Q_TITLES: [{"pad": 5000}],
    }
    config(music, openai_standin, max_bytes=4000, retries=0)
    result, cases, _ = run(music, monkeypatch)
    result.assert_outcomes(failed=3)
    errors = {i: c["error"] for i, c in cases.items()}
    assert "the reply is not JSON: '<html>502 Bad Gateway</html>'" in errors["count"]
    assert "the reply holds more than max_bytes (4,000 bytes" in errors["titles"]
    assert "the model's reply holds no query (```sql block is empty)" in errors["names"]


def test_unknown_model_and_slow_replies(music, openai_standin, monkeypatch):
    config(music, openai_standin, model="no-such-model")
    _result, cases, _ = run(music, monkeypatch, "-k", "count")
    error = cases["count"]["error"]
    assert "HTTP 404: The model `no-such-model` does not exist" in error
    assert "is 'no-such-model' a model this server serves" in error
    assert len(openai_standin.requests) == 1  # a 4xx is not retried

    openai_standin.script = {Q_COUNT: [{"delay": 1.5}]}
    config(music, openai_standin, timeout=0.3, retries=0)
    _result, cases, _ = run(music, monkeypatch, "-k", "count")
    assert "timed out: no complete answer within 0.3 s after 1 attempt(s)" in cases["count"]["error"]


def test_missing_key_variable_and_a_wrong_key_never_leak(music, openai_standin, monkeypatch):
    config(music, openai_standin, api_key="${QE_UNSET_KEY}")
    monkeypatch.delenv("QE_UNSET_KEY", raising=False)
    result, cases, _ = run(music, monkeypatch)
    result.assert_outcomes(failed=3)
    assert "environment variable QE_UNSET_KEY is not set" in cases["count"]["error"]
    assert openai_standin.requests == []

    wrong = "sk-wrong-but-secret-0042"
    config(music, openai_standin)
    result, cases, _ = run(music, monkeypatch, "--junitxml=j.xml", "--queryeval-markdown=r.md",
                           "-rA", key=wrong)
    result.assert_outcomes(failed=3)
    assert "HTTP 401" in cases["count"]["error"] and "***" in cases["count"]["error"]
    outputs = [result.stdout.str(), result.stderr.str()] + [
        (music.path / name).read_text() for name in ("r.json", "j.xml", "r.md")]
    assert all(wrong not in text for text in outputs)


def test_requests_run_ahead_in_the_prediction_pool_bounded_by_concurrency(music, openai_standin,
                                                                          monkeypatch):
    questions = (Q_COUNT, Q_TITLES, Q_NAMES)
    # each reply takes a while: requested one after another, no two would overlap
    openai_standin.script = {q: [{"delay": 0.4}] for q in questions}
    config(music, openai_standin, concurrency=2)
    run(music, monkeypatch)
    assert len(openai_standin.requests) == 3  # each case asked once
    assert openai_standin.max_in_flight == 2
    openai_standin.requests.clear()
    openai_standin.max_in_flight = 0
    openai_standin.script = {q: [{"delay": 0.4}] for q in questions}
    config(music, openai_standin, concurrency=1)
    run(music, monkeypatch)
    assert openai_standin.max_in_flight == 1
    # --queryeval-concurrency overrides the source's concurrency: upwards too
    openai_standin.requests.clear()
    openai_standin.max_in_flight = 0
    openai_standin.script = {q: [{"delay": 0.4}] for q in questions}
    run(music, monkeypatch, "--queryeval-concurrency", "3")
    assert 1 < openai_standin.max_in_flight <= 3
