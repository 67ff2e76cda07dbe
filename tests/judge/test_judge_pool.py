"""The judge's calls as requests of the run's prediction pool (issue 26 item 5): the pool's
bound (the session's under xdist), its end on Ctrl-C, and ``max_calls`` as a cap of the run.
The judge model is the loopback stand-in (tests/fixtures/openai_standin.py), slowed down so
that requests overlap; the client is the real ``openai`` one."""

from __future__ import annotations

import json
import threading
import time

import pytest

from pytest_queryeval.engine import Evaluator
from pytest_queryeval.judge.config import JudgeSpec
from pytest_queryeval.judge.run import STOPPED, ask_prompt
from pytest_queryeval.judge.verdict import JudgeError
from tests.fixtures.openai_standin import KEY, MODEL
from tests.judge.test_judge_run import ACCEPT, GOLD_COUNT, music, run, write_music_suite  # noqa: F401

pytest.importorskip("openai")


def slow(standin, seconds):
    """Every answer of the stand-in takes ``seconds`` (its requests overlap meanwhile)."""
    respond = standin.respond

    def delayed(*args):
        time.sleep(seconds)
        return respond(*args)

    standin.respond = delayed


def one_case_per_file(pytester, preds, **extra):
    for i, pred in enumerate(preds):  # one file each: xdist workers split them
        pytester.makefile(".yaml", **{f"test_w{i}": json.dumps({
            "kind": "sql", "datasource": "music",
            "thresholds": {"execution_accuracy": 0, "judge_ex": 1},
            "cases": [{"id": f"w{i}", "question": "How many artists?", "gold": GOLD_COUNT,
                       "predicted": pred, **extra}]})})


def test_under_xdist_the_judge_bound_is_the_sessions_not_each_workers(
        music, openai_standin, monkeypatch):  # noqa: F811
    pytest.importorskip("xdist")
    preds = [f"SELECT count(*), 'x{i}' FROM artists" for i in range(2)]
    openai_standin.containing = dict.fromkeys(preds, ACCEPT)
    slow(openai_standin, 0.4)
    write_music_suite(music, openai_standin, [], votes=4, concurrency=2)
    one_case_per_file(music, preds)
    result, cases = run(music, monkeypatch, "-n", "2")
    result.assert_outcomes(passed=2)
    assert len(openai_standin.requests) == 8
    assert openai_standin.max_in_flight == 2  # two workers, 4 votes each: still 2 at once
    assert [cases[f"w{i}"]["details"]["judge"]["calls"] for i in range(2)] == [4, 4]
    # the judge's calls share the pool, but are not predictions: no progress line counts them
    assert "queryeval: predictions" not in result.stdout.str()


def test_the_judge_calls_are_not_counted_as_predictions(openai_standin):
    from pytest_queryeval.predict.base import Prediction
    from pytest_queryeval.predict.pool import PredictionPool

    pool = PredictionPool()
    assert pool.submit(("judge", 1), "judge:m", 2, lambda: Prediction("v"), counted=False)
    assert pool.submit(("case", 0), "openai:m", 2, lambda: Prediction("p"))
    assert pool.take(("judge", 1)).value == "v" and pool.take(("case", 0)).value == "p"
    progress = pool.progress()
    assert (progress.done, progress.total, progress.running) == (1, 1, 0)
    pool.close()


def test_under_xdist_max_calls_caps_the_run_not_each_worker(
        music, openai_standin, monkeypatch):  # noqa: F811
    pytest.importorskip("xdist")
    preds = [f"SELECT count(*), 'x{i}' FROM artists" for i in range(4)]
    openai_standin.containing = dict.fromkeys(preds, ACCEPT)
    write_music_suite(music, openai_standin, [], max_calls=2)
    one_case_per_file(music, preds)
    result, cases = run(music, monkeypatch, "-n", "2")
    result.assert_outcomes(passed=2, failed=2)  # a judge error fails its item
    assert len(openai_standin.requests) == 2
    refused = [c for c in cases.values() if "max_calls (2) reached" in (c.get("error") or "")]
    assert len(refused) == 2


def spec_of(standin, **values):
    return JudgeSpec(model=MODEL, base_url=standin.base_url, api_key=KEY, retries=0,
                     timeout=30, **values)


def test_no_judge_call_once_the_session_ended(openai_standin):
    evaluator = Evaluator()
    evaluator.close()
    with pytest.raises(JudgeError, match=STOPPED):
        ask_prompt(spec_of(openai_standin), "Is it the same?", {}, {}, evaluator,
                   evaluator.judge_session(), pooled=True)
    assert openai_standin.requests == []


def test_ctrl_c_withdraws_the_votes_not_yet_asked(openai_standin):
    """The session ends (as on Ctrl-C) while the first of three votes is being answered, one
    at a time: the other two are never asked. The answer takes 2 s: with 0.5 s, a loaded
    host once let it arrive before the session ended."""
    slow(openai_standin, 2.0)
    evaluator = Evaluator()
    spec = spec_of(openai_standin, votes=3, concurrency=1)
    outcome: list[BaseException | None] = []

    def judge():
        try:
            ask_prompt(spec, "Is it the same?", {}, {}, evaluator, evaluator.judge_session(),
                       pooled=True)
            outcome.append(None)
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=judge)
    thread.start()
    deadline = time.monotonic() + 20
    while not openai_standin.requests and time.monotonic() < deadline:
        time.sleep(0.01)
    evaluator.close()
    thread.join(20)
    assert not thread.is_alive()
    assert isinstance(outcome[0], JudgeError) and STOPPED in str(outcome[0])
    time.sleep(2.5)  # past the first answer: a vote still queued would have been asked
    assert len(openai_standin.requests) == 1
