"""Issue 44 item 3: live answers kept between runs (``cache: true``,
``--queryeval-prediction-cache``).

Each source is asked through a real local server that counts what it receives: the openai
source through the loopback OpenAI-compatible server of ``fixtures/openai_standin.py`` (the
real ``openai`` client; the llama.cpp server would take minutes for the same count), the http
source through a stdlib ``http.server`` (``fixtures/model_service.py``), the command source
through a script that appends a line to a counter file each time it runs. A second run of an
unchanged suite sends nothing; a changed parameter, ``repeat:`` and
``--queryeval-refresh-predictions`` ask again.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.model_service import ModelService, Request
from tests.fixtures.openai_standin import KEY, MODEL, OpenAIStandin
from tests.sdmx_cases import dump
from tests.support import read_report, run_report

GOLD = "SELECT x FROM t ORDER BY x"
SECRET = "tok-cache-secret-0123456789"


class _Service(ModelService):
    def answer(self, request: Request) -> tuple[int, Any]:
        return 200, {"predicted": GOLD, "usage": {"prompt_tokens": 7, "completion_tokens": 3}}


@pytest.fixture
def service() -> Any:
    server = _Service().start()
    yield server
    server.stop()


@pytest.fixture
def sql_suite(suite: pytest.Pytester) -> pytest.Pytester:
    with sqlite3.connect(suite.path / "db.sqlite") as con:
        con.execute("CREATE TABLE t (x INTEGER)")
        con.executemany("INSERT INTO t VALUES (?)", [(1,), (2,), (3,)])
    con.close()
    suite.makefile(".yaml", test_cases=dump({
        "kind": "sql", "datasource": "db", "thresholds": {"execution_accuracy": 1.0},
        "cases": [{"id": "a", "question": "all x", "gold": GOLD},
                  {"id": "b", "question": "every x", "gold": GOLD}]}))
    return suite


def _config(pytester: pytest.Pytester, predictions: dict[str, Any]) -> None:
    pytester.makefile(".yaml", queryeval=dump({
        "datasources": {"db": {"type": "sqlite", "path": "db.sqlite"}},
        "predictions": predictions}))


def _entries(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.json") if p.parent.parent.name == "predictions"
                  or p.parent.parent == root)


def _openai(standin: OpenAIStandin, **extra: Any) -> dict[str, Any]:
    return {"source": "openai", "model": MODEL, "base_url": standin.base_url, "api_key": KEY,
            "retries": 0, "cache": True, **extra}


def test_openai_second_run_sends_no_request_and_a_change_asks_again(sql_suite, openai_standin):
    openai_standin.answers = {"all x": f"```sql\n{GOLD}\n```", "every x": f"```sql\n{GOLD}\n```"}
    _config(sql_suite, _openai(openai_standin))
    result, report = run_report(sql_suite)
    result.assert_outcomes(passed=2)
    assert len(openai_standin.requests) == 2
    assert report["prediction_cache"] == {"answers": 2, "from_cache": 0, "requested": 2,
                                          "carried": 0, "refreshed": 0, "repeated": 0,
                                          "ignored": 0}
    assert report.by_id["a"]["details"]["prediction"]["cache"] == "stored"
    # the default directory: under pytest's cache dir; the key is in no entry
    store = sql_suite.path / ".pytest_cache" / "d" / "queryeval" / "predictions"
    files = sorted(store.rglob("*.json"))
    assert len(files) == 2
    assert all(KEY not in f.read_text() for f in files)

    result, report = run_report(sql_suite)
    result.assert_outcomes(passed=2)
    assert len(openai_standin.requests) == 2  # nothing sent
    assert report["prediction_cache"]["from_cache"] == 2
    case = report.by_id["a"]
    assert case["details"]["prediction"]["cache"] == "hit"
    assert case["predicted"] == GOLD
    assert case["metrics"]["prompt_tokens"] > 0  # the answer's tokens, as first recorded
    result.stdout.fnmatch_lines(["*prediction cache: 2 of 2 answers from the cache, "
                                 "0 requested*"])

    _config(sql_suite, _openai(openai_standin, temperature=0.5))  # a parameter changed
    result, report = run_report(sql_suite)
    assert len(openai_standin.requests) == 4
    assert openai_standin.requests[-1]["temperature"] == 0.5
    assert report["prediction_cache"]["requested"] == 2

    run_report(sql_suite, "--queryeval-refresh-predictions")
    assert len(openai_standin.requests) == 6
    result, report = run_report(sql_suite, "--queryeval-repeat", "3")
    assert len(openai_standin.requests) == 12  # 3 runs of 2 cases, none from the cache
    # each run is a request the counter counts (issue 49 item 5: it was 2, a case each)
    assert (report["prediction_cache"]["requested"], report["prediction_cache"]["repeated"]) \
        == (6, 6)
    result, report = run_report(sql_suite)
    assert len(openai_standin.requests) == 12  # the refreshed entries answer
    assert report["prediction_cache"]["from_cache"] == 2


def test_without_cache_every_run_asks(sql_suite, openai_standin):
    spec = _openai(openai_standin)
    del spec["cache"]
    _config(sql_suite, spec)
    run_report(sql_suite)
    _, report = run_report(sql_suite)
    assert len(openai_standin.requests) == 4
    assert "prediction_cache" not in report


def test_http_cache_dir_option_secrets_and_repeat(sql_suite, service, tmp_path):
    spec = {"source": "http", "url": f"{service.url}/predict?token={SECRET}",
            "headers": {"Authorization": f"Bearer {SECRET}"}, "retries": 0}
    _config(sql_suite, spec)
    store = tmp_path / "answers"
    result, report = run_report(sql_suite, f"--queryeval-prediction-cache={store}")
    result.assert_outcomes(passed=2)
    assert len(service.requests) == 2
    files = sorted(store.rglob("*.json"))
    assert len(files) == 2
    assert all(SECRET not in f.read_text() for f in files)
    result, report = run_report(sql_suite, f"--queryeval-prediction-cache={store}")
    result.assert_outcomes(passed=2)
    assert len(service.requests) == 2
    assert report["prediction_cache"]["from_cache"] == 2
    # a new secret is no new request: it is not part of what decides the answer
    _config(sql_suite, {**spec, "headers": {"Authorization": "Bearer another-secret-value"}})
    run_report(sql_suite, f"--queryeval-prediction-cache={store}")
    assert len(service.requests) == 2
    # a parameter that is part of the request is
    _config(sql_suite, {**spec, "body": {"q": "{question}", "style": "short"}})
    run_report(sql_suite, f"--queryeval-prediction-cache={store}")
    assert len(service.requests) == 4
    # repeat: 3 in the case file: three requests per case, none cached
    sql_suite.makefile(".yaml", test_cases=dump({
        "kind": "sql", "datasource": "db", "thresholds": {"execution_accuracy": 1.0},
        "cases": [{"id": "a", "question": "all x", "gold": GOLD, "repeat": 3},
                  {"id": "b", "question": "every x", "gold": GOLD}]}))
    _, report = run_report(sql_suite, f"--queryeval-prediction-cache={store}")
    assert len(service.requests) == 4 + 3
    assert report.by_id["a"]["details"]["prediction"]["cache"] == "repeat"
    assert report.by_id["b"]["details"]["prediction"]["cache"] == "hit"


def test_command_source_counts_runs(sql_suite):
    counter = sql_suite.path / "runs.txt"
    sql_suite.makepyfile(model=(
        "import json, sys\n"
        "case = json.load(sys.stdin)\n"
        f"open({str(counter)!r}, 'a').write(case['id'] + '\\n')\n"
        f"print({GOLD!r})\n"))
    spec = {"source": "command", "command": [sys.executable, "model.py"], "cache": True}
    _config(sql_suite, spec)
    result, _ = run_report(sql_suite)
    result.assert_outcomes(passed=2)
    assert sorted(counter.read_text().split()) == ["a", "b"]
    result, report = run_report(sql_suite)
    result.assert_outcomes(passed=2)
    assert sorted(counter.read_text().split()) == ["a", "b"]
    assert report["prediction_cache"]["from_cache"] == 2
    _config(sql_suite, {**spec, "command": [sys.executable, "model.py", "--v2"]})
    run_report(sql_suite)
    assert len(counter.read_text().split()) == 4
    _config(sql_suite, {**spec, "cache": "yes"})
    result, _ = run_report(sql_suite)
    result.stdout.fnmatch_lines(["*queryeval.yaml:*: predictions.cache: must be true or false, "
                                 "not 'yes'*"])


def test_two_xdist_workers_share_the_cache(sql_suite, service, tmp_path):
    """Four cases, two pairs asking the same request (the body holds only the question):
    two workers write the same entries; the second run sends nothing."""
    pytest.importorskip("xdist")
    sql_suite.makefile(".yaml", test_cases=dump({
        "kind": "sql", "datasource": "db", "thresholds": {"execution_accuracy": 1.0},
        "cases": [{"id": f"c{i}", "question": f"q{i % 2}", "gold": GOLD} for i in range(4)]}))
    _config(sql_suite, {"source": "http", "url": f"{service.url}/predict",
                        "body": {"q": "{question}"}, "retries": 0})
    store = tmp_path / "answers"
    args = ("-n", "2", f"--queryeval-prediction-cache={store}")
    result, report = run_report(sql_suite, *args, subprocess=True)
    result.assert_outcomes(passed=4)
    first = len(service.requests)
    assert 2 <= first <= 4
    assert len(sorted(store.rglob("*.json"))) == 2
    assert not list(store.rglob("*.tmp"))
    result, report = run_report(sql_suite, *args, subprocess=True)
    result.assert_outcomes(passed=4)
    assert len(service.requests) == first
    assert report["prediction_cache"]["from_cache"] == 4


def test_shards_merge_and_resume_keep_the_count(sql_suite, service, tmp_path):
    """Two shards of a cached run, merged: the merged report counts both shards' answers from
    the cache; a retry with --queryeval-resume carries the records as they were."""
    from pytest_queryeval.conclude.cli import main

    _config(sql_suite, {"source": "http", "url": f"{service.url}/predict", "retries": 0,
                        "cache": True})
    run_report(sql_suite)  # fills the cache
    assert len(service.requests) == 2
    for i in (1, 2):
        run_report(sql_suite, f"--queryeval-shard={i}/2", name=f"shard-{i}.json")
    assert len(service.requests) == 2
    out = sql_suite.path / "merged.json"
    assert main(["merge", str(sql_suite.path / "shard-1.json"),
                 str(sql_suite.path / "shard-2.json"), "-o", str(out)]) == 0
    merged = json.loads(out.read_text())
    assert merged["prediction_cache"]["answers"] == 2
    assert merged["prediction_cache"]["from_cache"] == 2
    _, resumed = run_report(sql_suite, "--queryeval-resume=shard-1.json", name="retry.json")
    # shard 1's cases are carried: neither read from the cache nor requested now
    carried = len(read_report(sql_suite.path / "shard-1.json")["cases"])
    assert {k: resumed["prediction_cache"][k] for k in ("from_cache", "requested", "carried")} \
        == {"from_cache": 2 - carried, "requested": 0, "carried": carried}
    assert len(service.requests) == 2


def test_the_counter_counts_every_turn_and_not_what_a_resume_carries(sql_suite, service):
    """Issue 49 item 5: each conversation turn (a clarification's reply too) is a request the
    counter counts, as the server does; a retry with --queryeval-resume requests nothing for
    the cases it carries, and says so."""
    _config(sql_suite, {"source": "http", "url": f"{service.url}/predict", "retries": 0,
                        "cache": True})
    sql_suite.makefile(".yaml", test_talk=dump({"kind": "sql", "datasource": "db", "cases": [
        {"id": "talk", "conversation": [
            {"role": "user", "content": "all x", "gold": GOLD},
            {"role": "user", "content": "and again", "gold": GOLD}]},
        {"id": "ask", "question": "which x?", "expect": "clarify",
         "reply": "all of them", "gold": GOLD}]}))
    result, report = run_report(sql_suite)
    asked = len(service.requests)
    assert asked == 2 + 2 + 2  # two cases, two turns, a clarification and its reply
    assert {k: report["prediction_cache"][k] for k in ("answers", "requested", "from_cache")} \
        == {"answers": asked, "requested": asked, "from_cache": 0}
    result.stdout.fnmatch_lines([f"prediction cache: 0 of {asked} answers from the cache, "
                                 f"{asked} requested"])
    result, carried = run_report(sql_suite, "--queryeval-resume=r.json", name="retry.json")
    assert len(service.requests) == asked
    assert {k: carried["prediction_cache"][k] for k in ("answers", "requested", "carried")} \
        == {"answers": asked, "requested": 0, "carried": asked}
    result.stdout.fnmatch_lines([f"prediction cache: 0 of {asked} answers from the cache, "
                                 f"0 requested, {asked} carried from an earlier attempt"])


def test_cache_true_without_pytest_cache_says_it_keeps_nothing(sql_suite, service):
    """Issue 49 item 5: under -p no:cacheprovider (common in CI) ``cache: true`` has nowhere
    to keep an answer: the run says so instead of asking again in silence."""
    _config(sql_suite, {"source": "http", "url": f"{service.url}/predict", "retries": 0,
                        "cache": True})
    for _ in range(2):
        result, report = run_report(sql_suite, "-p", "no:cacheprovider")
        result.stdout.fnmatch_lines(["*QueryEvalWarning: predictions.cache: true keeps nothing "
                                     "in this run: pytest's cache is off*"])
    assert len(service.requests) == 4
    assert "prediction_cache" not in report
