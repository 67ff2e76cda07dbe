"""Predictions requested ahead in a bounded pool (issue 17 item 1), against a loopback HTTP
server that stands in for the user's model service (``StandInModelService``): it counts every
request per case and the most requests it held at once, which is how these tests know that
requests overlapped, never more than ``concurrency`` of them, and that no case was asked twice.
No wall-clock time is asserted."""

from __future__ import annotations

import json
import sys
import zlib
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from tests.fixtures.model_service import ModelService, Request
from tests.sdmx_cases import GDP, dump, sdmx_case, selection
from tests.support import read_report

RIGHT = selection(GDP)


class StandInModelService(ModelService):
    """Stand-in for a user's model service: answers every case with ``RIGHT`` after
    ``latency`` seconds (times 0.5 to 1.5, fixed per case, so answers finish out of order, or
    ``latencies[id]``), HTTP 500 for the ids in ``failing``."""

    def __init__(self, latency: float = 0.2, failing: frozenset[str] = frozenset()) -> None:
        super().__init__()
        self.latency = latency
        self.failing = failing
        #: Seconds for these ids instead.
        self.latencies: dict[str, float] = {}

    def delay(self, request: Request) -> float:
        case_id = str(request.case_id)
        return self.latencies.get(case_id, self.latency * (
            0.5 + (zlib.crc32(case_id.encode()) % 100) / 100))

    def answer(self, request: Request) -> tuple[int, Any]:
        if request.case_id in self.failing:
            return 500, b"model overloaded"
        return 200, {"predicted": RIGHT}


@pytest.fixture
def model_service() -> Iterator[StandInModelService]:
    server = StandInModelService().start()
    yield server
    server.stop()


def _suite(pytester: pytest.Pytester, url: str, n: int, **source: Any) -> list[str]:
    ids = [f"case-{i:03d}" for i in range(n)]
    pytester.makefile(".yaml", queryeval=dump({"predictions": {
        "source": "http", "url": f"{url}/predict", "body": {"case": "{case}"},
        "response_path": "predicted", "retries": 0, "timeout": 30, **source}}))
    pytester.makefile(".yaml", test_cases=dump({
        "kind": "sdmx", "thresholds": {"macro_precision": 1.0},
        "cases": [sdmx_case(i, selection(GDP)) for i in ids]}))
    return ids


def _report(pytester: pytest.Pytester) -> dict[str, Any]:
    return read_report(pytester.path / "r.json")


def test_a_serial_run_requests_ahead_within_the_bound(suite, model_service):
    ids = _suite(suite, model_service.url, 12, concurrency=3)
    model_service.failing = frozenset({"case-004"})
    result = suite.runpytest("--queryeval-json=r.json", "-p", "no:randomly")
    result.assert_outcomes(passed=11, failed=1)
    assert model_service.calls == dict.fromkeys(ids, 1)  # each case asked once
    assert 1 < model_service.peak <= 3, model_service.peak
    report = _report(suite)
    assert [c["id"] for c in report["cases"]] == ids  # the run's order, not the answers'
    failed = next(c for c in report["cases"] if c["id"] == "case-004")
    assert failed["outcome"] == "error"
    assert "HTTP 500 Internal Server Error: model overloaded after 1 attempt(s)" in failed["error"]
    result.stdout.fnmatch_lines(["queryeval: predictions 12/12 done in * s (concurrency 3)"])


def test_the_default_bound_is_4_and_the_command_line_overrides_it(suite, model_service):
    _suite(suite, model_service.url, 12)
    suite.runpytest("-p", "no:randomly").assert_outcomes(passed=12)
    assert 1 < model_service.peak <= 4, model_service.peak
    model_service.calls.clear()
    model_service.peak = 0
    _suite(suite, model_service.url, 12, concurrency=2)
    result = suite.runpytest("-p", "no:randomly", "--queryeval-concurrency", "6")
    result.assert_outcomes(passed=12)
    assert 2 < model_service.peak <= 6, model_service.peak
    result.stdout.fnmatch_lines(["*(concurrency 6)"])


def test_deselected_and_skipped_cases_are_not_requested(suite, model_service):
    ids = _suite(suite, model_service.url, 10)
    result = suite.runpytest("-p", "no:randomly", "-k", "not case-007 and not case-008")
    result.assert_outcomes(passed=8, deselected=2)
    assert model_service.calls == {i: 1 for i in ids if i not in ("case-007", "case-008")}


def test_collect_only_requests_nothing(suite, model_service):
    _suite(suite, model_service.url, 5)
    assert suite.runpytest("--collect-only").ret == pytest.ExitCode.OK
    assert not model_service.calls


def test_a_progress_line_while_predictions_are_outstanding(suite, model_service):
    """One request at a time at 0.4 s: the run lasts longer than the line's 2 s interval."""
    model_service.latency = 0.4
    _suite(suite, model_service.url, 8, concurrency=1)
    result = suite.runpytest("-p", "no:randomly")
    result.assert_outcomes(passed=8)
    result.stdout.fnmatch_lines([
        "queryeval: predictions */8 done, 1 in flight, * case(s) scored",
        "queryeval: predictions 8/8 done in * s (concurrency 1)"])


def test_quiet_runs_print_no_progress_line(suite, model_service):
    _suite(suite, model_service.url, 4)
    result = suite.runpytest("-q", "-p", "no:randomly")
    result.assert_outcomes(passed=4)
    assert "queryeval: predictions" not in result.stdout.str()


@pytest.mark.parametrize("dist", ["load", "worksteal", "loadgroup"])
def test_under_xdist_each_case_is_requested_once_within_the_sessions_bound(suite, model_service,
                                                                           dist):
    """The workers share the session's requests: ``concurrency: 4`` is what the model service
    sees from the whole run (two workers used to make up to 8 at once), every case is asked
    once whichever worker runs it, and the controller's progress counts each once."""
    ids = _suite(suite, model_service.url, 40, concurrency=4)
    skipped = {"case-013", "case-029"}
    result = suite.runpytest_subprocess(
        "-n", "2", "--dist", dist, "--queryeval-json=r.json", "-p", "no:randomly",
        "-k", " and ".join(f"not {i}" for i in sorted(skipped)))
    result.assert_outcomes(passed=38)
    assert model_service.calls == {i: 1 for i in ids if i not in skipped}
    assert 1 < model_service.peak <= 4, model_service.peak
    assert [c["id"] for c in _report(suite)["cases"]] == [i for i in ids if i not in skipped]
    result.stdout.fnmatch_lines(["queryeval: predictions 38/38 done*"])


def test_under_dist_each_every_worker_runs_each_case_on_one_request(suite, model_service):
    """``--dist each`` runs every case on every worker: the answer is requested once and read
    by both (each worker asked for its own copy before)."""
    ids = _suite(suite, model_service.url, 12, concurrency=3)
    result = suite.runpytest_subprocess("-n", "2", "--dist", "each", "-p", "no:randomly")
    result.assert_outcomes(passed=24)
    assert model_service.calls == dict.fromkeys(ids, 1)
    assert model_service.peak <= 3, model_service.peak


def test_under_xdist_a_worker_with_no_cases_left_answers_the_others_first(suite, model_service):
    """``--dist loadfile``: one worker runs the one fast case of ``test_a.yaml`` and has
    nothing left while the requests it made at the start for the other worker's file (slow
    answers) still run. It keeps its process until they are answered, so no case is told its
    prediction was abandoned."""
    ids = _suite(suite, model_service.url, 12, concurrency=8)
    suite.makefile(".yaml", test_a=dump({
        "kind": "sdmx", "thresholds": {"macro_precision": 1.0},
        "cases": [sdmx_case("fast", selection(GDP))]}))
    model_service.latencies = {"fast": 0.0, **dict.fromkeys(ids, 1.5)}
    result = suite.runpytest_subprocess("-n", "2", "--dist", "loadfile", "--queryeval-json=r.json",
                                        "-p", "no:randomly")
    result.assert_outcomes(passed=13)
    assert model_service.calls == dict.fromkeys(["fast", *ids], 1)
    assert {c["outcome"] for c in _report(suite)["cases"]} == {"passed"}


def test_concurrency_is_checked_before_the_run(suite, model_service):
    _suite(suite, model_service.url, 2)
    for bad in ("0", "many", "-3", "100000"):
        result = suite.runpytest("--queryeval-concurrency", bad)
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        assert "queryeval: --queryeval-concurrency must be" in result.stderr.str()
    assert not model_service.calls


def test_a_bad_concurrency_in_the_suite_config_fails_its_cases_with_file_and_line(suite,
                                                                                  model_service):
    _suite(suite, model_service.url, 2, concurrency=0)
    result = suite.runpytest("--queryeval-json=r.json")
    result.assert_outcomes(failed=2)
    line = next(n for n, text in enumerate(
        (suite.path / "queryeval.yaml").read_text().splitlines(), 1) if "concurrency" in text)
    assert {c["error"] for c in _report(suite)["cases"]} == {
        f"prediction error: queryeval.yaml:{line}: predictions.concurrency: must be a positive "
        "integer, not 0"}
    assert not model_service.calls


ASYNC_MODEL = """
import asyncio, json, pathlib, urllib.request

state = {"in_flight": 0, "peak": 0, "loops": set()}

async def predict(case):
    state["in_flight"] += 1
    state["peak"] = max(state["peak"], state["in_flight"])
    state["loops"].add(id(asyncio.get_running_loop()))
    await asyncio.sleep(0.2)
    state["in_flight"] -= 1
    pathlib.Path("async.json").write_text(json.dumps(
        {"peak": state["peak"], "loops": len(state["loops"])}))
    return json.loads(pathlib.Path("answer.json").read_text())
"""


def test_an_async_python_callable_is_awaited_several_at_once_on_one_loop(suite):
    suite.makepyfile(async_model=ASYNC_MODEL)
    (suite.path / "answer.json").write_text(json.dumps(RIGHT))
    suite.makefile(".yaml", queryeval=dump({"predictions": {
        "source": "python", "function": "async_model:predict", "concurrency": 5}}))
    suite.makefile(".yaml", test_cases=dump({
        "kind": "sdmx", "thresholds": {"macro_precision": 1.0},
        "cases": [sdmx_case(f"a{i}", selection(GDP)) for i in range(10)]}))
    result = suite.runpytest_subprocess("-p", "no:randomly")
    result.assert_outcomes(passed=10)
    seen = json.loads((suite.path / "async.json").read_text())
    assert 1 < seen["peak"] <= 5, seen
    assert seen["loops"] == 1  # one event loop: clients made once stay usable


COMMAND_MODEL = """
import json, sys, urllib.request
case = json.load(sys.stdin)
req = urllib.request.Request(sys.argv[1], data=json.dumps({"case": case}).encode(),
                             headers={"Content-Type": "application/json"})
print(json.dumps(json.load(urllib.request.urlopen(req, timeout=30))["predicted"]))
"""


def test_command_predictions_run_several_at_once(suite, model_service):
    suite.makepyfile(ask=COMMAND_MODEL)
    suite.makefile(".yaml", queryeval=dump({"predictions": {
        "source": "command", "command": [sys.executable, "ask.py", model_service.url],
        "concurrency": 3}}))
    ids = [f"c{i}" for i in range(8)]
    suite.makefile(".yaml", test_cases=dump({
        "kind": "sdmx", "thresholds": {"macro_precision": 1.0},
        "cases": [sdmx_case(i, selection(GDP)) for i in ids]}))
    suite.runpytest("-p", "no:randomly").assert_outcomes(passed=8)
    assert model_service.calls == dict.fromkeys(ids, 1)
    assert 1 < model_service.peak <= 3, model_service.peak


HOOK = """
def pytest_queryeval_predict(case, config):
    return None  # consulted in the main thread, when each case runs
"""


def test_a_predict_hook_keeps_its_cases_requested_when_they_run(suite, model_service):
    """The hook may answer a case itself: its source is not asked ahead of it."""
    ids = _suite(suite, model_service.url, 6)
    suite.makeconftest(HOOK)
    suite.runpytest("-p", "no:randomly").assert_outcomes(passed=6)
    assert model_service.calls == dict.fromkeys(ids, 1)
    assert model_service.peak == 1


def test_under_xdist_each_repeat_is_its_own_request_made_once(suite, model_service):
    ids = _suite(suite, model_service.url, 10, concurrency=4)
    result = suite.runpytest_subprocess("-n", "2", "--queryeval-repeat", "3",
                                        "--queryeval-json=r.json", "-p", "no:randomly")
    result.assert_outcomes(passed=10)
    assert model_service.calls == dict.fromkeys(ids, 3)
    assert model_service.peak <= 4, model_service.peak
    assert {len(c["details"]["repeat"]["runs"]) for c in _report(suite)["cases"]} == {3}


CRASHING_MODEL = """
import json, os, pathlib, time

def predict(case):
    with open("requests.log", "a") as log:
        log.write(case["id"] + "\\n")
    if case["id"] == "boom":
        time.sleep(0.3)  # the other requests of this worker are in flight too
        os._exit(3)  # the model's client takes the xdist worker down
    time.sleep(0.5)
    return json.loads(pathlib.Path("answer.json").read_text())
"""


def test_a_worker_that_crashes_mid_request_costs_only_its_requests(suite):
    """A python source kills its xdist worker while it and others are in flight: the session
    ends, every other case is scored, the cases whose requests died with the worker are errors
    that name it, and no request is made twice (the replacement worker reads the answers
    already published and never re-asks a dead worker's claim)."""
    suite.makepyfile(crashing_model=CRASHING_MODEL)
    (suite.path / "answer.json").write_text(json.dumps(RIGHT))
    suite.makefile(".yaml", queryeval=dump({"predictions": {
        "source": "python", "function": "crashing_model:predict", "concurrency": 4}}))
    ids = [f"c{i:02d}" for i in range(6)] + ["boom"] + [f"d{i:02d}" for i in range(6)]
    suite.makefile(".yaml", test_cases=dump({
        "kind": "sdmx", "thresholds": {"macro_precision": 1.0},
        "cases": [sdmx_case(i, selection(GDP)) for i in ids]}))
    # (it hung: the dead worker stayed a zombie, and a zombie answers kill(pid, 0))
    result = suite.runpytest_subprocess("-n", "2", "-p", "no:randomly", "--queryeval-json=r.json",
                                        timeout=120)
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()[-3000:]
    asked = Counter((suite.path / "requests.log").read_text().split())
    assert set(asked.values()) == {1}, asked  # nothing requested twice
    cases = {c["id"]: c for c in _report(suite)["cases"]}
    assert sorted(cases) == sorted(ids)  # the case the dead worker was running included
    died = [i for i, c in cases.items() if c["outcome"] != "passed"]
    assert "boom" in died
    for i in died:  # its requests lost, or the case it was running when it died
        assert cases[i]["outcome"] == "error"
        assert "stopped before it answered" in cases[i]["error"] or \
            "crashed while running" in cases[i]["error"], cases[i]
    passed = [i for i, c in cases.items() if c["outcome"] == "passed"]
    # lost at most: the dead worker's 4 requests (boom among them) and the case it ran
    assert len(passed) >= len(ids) - 5
    assert all(asked[i] == 1 for i in passed)
