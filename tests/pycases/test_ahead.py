"""Python cases are asked ahead (issue 59 item 5): a test whose ``queryeval.check(...)`` fields
can be read before it runs (literals, its ``parametrize`` arguments, module globals) joins the
run's pool of requests like a YAML case, so a slow model answers several at once. The model is
a loopback stand-in for the user's model service (tests/fixtures/model_service.py: a real one
cannot run here) that counts requests per case and the most it held at once."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.fixtures.model_service import ModelService, Request
from tests.sdmx_cases import GDP, MEX, dump, sdmx_case, selection
from tests.support import run_report

RIGHT = selection(GDP)
N = 36


class SlowModel(ModelService):
    """Answers every case right after ``latency`` seconds, but the questions in ``wrong``."""

    def __init__(self, latency: float) -> None:
        super().__init__()
        self.latency = latency
        self.wrong: set[str] = set()

    def delay(self, request: Request) -> float:
        return self.latency

    def answer(self, request: Request) -> tuple[int, Any]:
        question = request.body["case"]["conversation"][0]["content"]
        return 200, {"predicted": selection(MEX) if question in self.wrong else RIGHT}


@pytest.fixture
def model() -> Iterator[SlowModel]:
    server = SlowModel(0.5).start()
    assert isinstance(server, SlowModel)
    yield server
    server.stop()


def _config(pytester: pytest.Pytester, url: str) -> None:
    pytester.makefile(".yaml", queryeval=dump({"predictions": {
        "source": "http", "url": f"{url}/predict", "body": {"case": "{case}"},
        "response_path": "predicted", "retries": 0, "timeout": 30, "concurrency": 4}}))


def _cases(n: int = N) -> list[dict[str, Any]]:
    return [sdmx_case(f"py-{i:03d}", RIGHT) for i in range(n)]


PARAMETRIZED = '''
import pytest

CASES = {cases!r}
THRESHOLDS = {{"macro_precision": 1.0}}


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_case(queryeval, case):
    record = queryeval.check(kind="sdmx", thresholds=THRESHOLDS, **case)
    assert record["status"] == "passed"
'''


def test_python_cases_are_asked_ahead_like_yaml_cases(suite, model):
    cases = _cases()
    _config(suite, model.url)
    suite.makepyfile(test_py_cases=PARAMETRIZED.format(cases=cases))
    start = time.monotonic()
    result, report = run_report(suite)
    took = time.monotonic() - start
    result.assert_outcomes(passed=N)
    assert {c["id"] for c in report["cases"]} == {c["id"] for c in cases}
    assert model.calls == {c["id"]: 1 for c in cases}  # each asked once
    # requested ahead, concurrency at a time (asked when its test ran: one at a time)
    assert model.peak == 4, model.peak
    print(f"{N} Python cases, 0.5 s model, concurrency 4: {took:.1f} s")


def test_yaml_cases_for_comparison(suite, model):
    """The same cases in a case file (the timing the report compares with)."""
    cases = _cases()
    _config(suite, model.url)
    suite.makefile(".yaml", test_cases=dump({"kind": "sdmx",
                                             "thresholds": {"macro_precision": 1.0},
                                             "cases": cases}))
    start = time.monotonic()
    result, _ = run_report(suite)
    took = time.monotonic() - start
    result.assert_outcomes(passed=N)
    assert model.peak == 4
    print(f"{N} YAML cases, 0.5 s model, concurrency 4: {took:.1f} s")


def test_fields_that_changed_before_the_test_ran_are_asked_again(suite, model):
    """A global the test reads was changed by a fixture after the run started: the answer
    asked ahead (for the old fields) is not used; the case is asked with its own fields."""
    _config(suite, model.url)
    suite.makepyfile(test_py_cases=f'''
import pytest

TURN = {sdmx_case("py-old", RIGHT)["conversation"]!r}


@pytest.fixture(autouse=True)
def renamed():
    TURN[0]["content"] = "question changed"  # what the model is asked, changed in place


def test_case(queryeval):
    queryeval.check(kind="sdmx", id="py-case", conversation=TURN,
                    thresholds={{"macro_precision": 1.0}})
''')
    model.wrong = {"question py-old"}  # the answer to the old fields would fail the case
    result, _ = run_report(suite)
    result.assert_outcomes(passed=1)
    # the case passed: scored with the answer to its own fields, asked once; the old fields'
    # request was withdrawn before it started or, already under way, ran beside the new one
    # and its answer was dropped. Two requests in flight reach the model in no promised
    # order (under load the new one can arrive first), so the asks are compared sorted.
    asked = sorted(r.body["case"]["conversation"][0]["content"] for r in model.requests)
    assert asked in (["question changed", "question py-old"], ["question changed"]), asked


FROM_A_FIXTURE = '''
import pytest

CASES = {cases!r}


@pytest.fixture(params=CASES, ids=[c["id"] for c in CASES])
def case(request):
    return request.param


def test_case(queryeval, case):
    queryeval.check(kind="sdmx", thresholds={{"macro_precision": 1.0}}, **case)
'''


def test_fields_only_known_when_the_test_runs_are_asked_then(suite, model):
    """A fixture's value is known only when the test runs: those cases are asked then, one
    at a time, as before."""
    cases = _cases(4)
    _config(suite, model.url)
    suite.makepyfile(test_py_cases=FROM_A_FIXTURE.format(cases=cases))
    result, _ = run_report(suite)
    result.assert_outcomes(passed=4)
    assert model.calls == {c["id"]: 1 for c in cases}
    assert model.peak == 1


def test_python_cases_are_asked_ahead_under_xdist(suite, model):
    """``-n 2``: the workers share the session's requests (each asked once, by whichever
    worker claims it first), Python cases among them."""
    cases = _cases(16)
    _config(suite, model.url)
    suite.makepyfile(test_py_cases=PARAMETRIZED.format(cases=cases))
    start = time.monotonic()
    result = suite.runpytest_subprocess("-n", "2", "-p", "no:randomly")
    took = time.monotonic() - start
    result.assert_outcomes(passed=16)
    assert model.calls == {c["id"]: 1 for c in cases}
    assert model.peak > 2, model.peak  # more than the two cases running at once
    print(f"16 Python cases, 0.5 s model, -n 2: {took:.1f} s")


def test_two_tests_with_one_case_id_each_get_their_own_answer(suite, model):
    """Only the first of two tests that name the same case id is asked ahead; the second is
    asked with its own fields when it runs (never given the first one's answer)."""
    _config(suite, model.url)
    suite.makepyfile(test_py_cases=f'''
FIRST = {sdmx_case("x", RIGHT, question="first")["conversation"]!r}
SECOND = [dict(FIRST[0], content="second")]


def test_first(queryeval):
    queryeval.check(kind="sdmx", id="same", conversation=FIRST)


def test_second(queryeval):
    queryeval.check(kind="sdmx", id="same", conversation=SECOND)
''')
    model.wrong = {"question x"}  # the first test's answer would fail the second
    result, _ = run_report(suite)
    result.assert_outcomes(passed=1, failed=1)
    asked = sorted(r.body["case"]["conversation"][0]["content"] for r in model.requests)
    assert asked == ["question x", "second"]
