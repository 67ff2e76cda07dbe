"""The ``openai`` source and the judge against a real model: SmolLM2-135M-Instruct served by
llama-cpp-python's OpenAI-compatible server (tests/fixtures/llm_server.py), on the real
Chinook file of the example suite.

What a real server proves that the stand-in cannot: the plugin's requests are ones a real
server accepts, its usage and replies are read as a real server writes them, and the judge's
JSON schema (judge/verdict.py ``SCHEMA``) is one a real grammar engine enforces, which is what
lets a 135M model answer in the judge's structure at all. What the model answers is not
asserted (a 135M model's SQL is mostly wrong, and its verdicts are guesses): only that each
answer is read, counted and scored as a per-case outcome. Faults and exact verdicts stay with
the stand-in (test_openai_source.py, tests/judge).
"""

from __future__ import annotations

import json
import shutil
import sqlite3

import pytest

from pytest_queryeval.judge.prompt import build_prompt, show_result
from pytest_queryeval.judge.verdict import CATEGORIES, SCHEMA, parse_verdict
from tests.conftest import ROOT
from tests.fixtures.llm_server import KEY, MODEL
from tests.support import read_report

pytest.importorskip("openai")
pytestmark = pytest.mark.slow

CHINOOK = ROOT / "example_suite" / "data" / "chinook.sqlite"
#: Short answers: the model is slow on two cores, and a count needs few tokens.
MAX_TOKENS = 64
CASES = [
    {"id": "artists", "question": "How many artists are in the catalog?",
     "gold": "SELECT count(*) FROM Artist"},
    {"id": "genres", "question": "List the names of all genres.",
     "gold": "SELECT Name FROM Genre"},
]
PRICE = {"input_per_mtok": 1.0, "output_per_mtok": 3.0}


def test_openai_source_scores_real_predictions_with_the_servers_usage(pytester, llm_server,
                                                                      monkeypatch):
    shutil.copyfile(CHINOOK, pytester.path / "chinook.sqlite")
    pytester.makeini("[pytest]\nqueryeval_files = test_*.yaml\n")
    pytester.makefile(".yaml", test_live=json.dumps({
        "kind": "sql", "datasource": "chinook", "thresholds": {"execution_accuracy": 1.0},
        "cases": CASES}))
    pytester.makefile(".yaml", queryeval=json.dumps({
        "datasources": {"chinook": {"type": "sqlite", "path": "chinook.sqlite"}},
        "predictions": {"source": "openai", "model": MODEL, "base_url": llm_server.base_url,
                        "api_key": "${QE_REAL_KEY}", "temperature": 0, "seed": 1,
                        "max_tokens": MAX_TOKENS, "concurrency": 1, "retries": 0,
                        "timeout": 300},
        "pricing": {MODEL: PRICE}}))
    monkeypatch.setenv("QE_REAL_KEY", KEY)
    result = pytester.runpytest("--queryeval-json=r.json")
    # each case passed or failed on its own: no usage error, no internal error
    assert result.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED), result.stdout.str()
    report = read_report(pytester.path / "r.json")
    cases = {c["id"]: c for c in report["cases"]}
    assert set(cases) == {"artists", "genres"}
    for case_id, case in cases.items():
        assert case["outcome"] in ("passed", "failed"), (case_id, case.get("error"))
        details = case["details"]["prediction"]
        # the server's reply, and the query taken out of it
        assert details["reply"].strip(), case_id
        assert case["predicted"].strip(), case_id
        assert details["attempts"] == 1
        assert details["finish_reason"] in ("stop", "length")
        metrics = case["metrics"]
        # usage as the server counted it: the prompt holds Chinook's eleven CREATE TABLE
        # statements (more tokens than the question alone by far), the answer at most
        # max_tokens, and exactly max_tokens when the server cut it
        question_tokens = llm_server.tokens(next(c["question"] for c in CASES
                                                 if c["id"] == case_id))
        assert metrics["prompt_tokens"] > question_tokens + 500
        assert 0 < metrics["completion_tokens"] <= MAX_TOKENS
        if details["finish_reason"] == "length":
            assert metrics["completion_tokens"] == MAX_TOKENS
        assert metrics["cost_usd"] == pytest.approx(
            (metrics["prompt_tokens"] * PRICE["input_per_mtok"]
             + metrics["completion_tokens"] * PRICE["output_per_mtok"]) / 1e6)
        assert metrics["prediction_seconds"] > 0
        # the prediction ran on the real file: scored, not an error
        assert metrics["execution_accuracy"] in (0.0, 1.0)


def _result(conn, sql):
    cur = conn.execute(sql)
    return show_result([d[0] for d in cur.description], cur.fetchall())


def test_judge_prompt_gets_a_verdict_in_the_schema_from_a_real_model(llm_server):
    conn = sqlite3.connect(f"file:{CHINOOK}?mode=ro", uri=True)
    question = "How many artists are in the catalog?"
    gold = "SELECT count(*) FROM Artist"
    predicted = "SELECT count(DISTINCT Name) FROM Artist"
    schema = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'Artist'").fetchone()[0]
    prompt = build_prompt(question=question, gold=gold, predicted=predicted,
                          gold_result=_result(conn, gold), predicted_result=_result(conn, predicted),
                          schema=schema)
    conn.close()
    reply = llm_server.post("/chat/completions", {
        "model": MODEL, "messages": [{"role": "user", "content": prompt}],
        "temperature": 0, "seed": 1, "max_tokens": 200,
        "response_format": {"type": "json_object", "schema": SCHEMA}})
    choice = reply["choices"][0]
    answer = choice["message"]["content"]
    assert choice["finish_reason"] == "stop", answer
    verdict = parse_verdict(answer)
    assert verdict.category in CATEGORIES
    # constrained output: the whole answer is the object, with exactly the schema's keys
    assert set(json.loads(answer)) == {"category", "reason"}
    assert reply["usage"]["completion_tokens"] > 0
