"""The prediction pool on its own (no pytest session): bounds, once-only keys, cancellation,
errors re-raised in the taker, and the end of the session reaching running requests."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from pytest_queryeval.errors import PredictionError
from pytest_queryeval.model import Case
from pytest_queryeval.predict import make_predictor
from pytest_queryeval.predict._bounded import Aborted, run_command
from pytest_queryeval.predict.base import Prediction
from pytest_queryeval.predict.pool import (
    ABORT,
    DEFAULT_CONCURRENCY,
    PredictionPool,
    concurrency_of,
    parse_concurrency,
)
from tests.fixtures.model_service import ModelService, Request
from tests.fixtures.openai_standin import KEY, MODEL
from tests.support import make_case


class Gate:
    """Requests that block until released, counting how many run at once."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.lock = threading.Lock()
        self.running = 0
        self.peak = 0
        self.calls: list[str] = []
        self.arrived = threading.Semaphore(0)

    def request(self, name: str, value: object = None):
        def call() -> Prediction:
            with self.lock:
                self.calls.append(name)
                self.running += 1
                self.peak = max(self.peak, self.running)
            self.arrived.release()
            self.release.wait(30)
            with self.lock:
                self.running -= 1
            if isinstance(value, BaseException):
                raise value
            return Prediction(value if value is not None else name, usage={"prompt_tokens": 3})
        return call


def test_a_group_runs_at_most_its_limit_and_each_key_once():
    pool, gate = PredictionPool(), Gate()
    for i in range(10):
        assert pool.submit((f"c{i}", 0), "model", 3, gate.request(f"c{i}"))
    assert not pool.submit(("c0", 0), "model", 3, gate.request("again"))  # never twice
    for _ in range(3):
        assert gate.arrived.acquire(timeout=30)
    assert not gate.arrived.acquire(timeout=0.2)  # the fourth waits for a free slot
    assert pool.progress().running == 3
    gate.release.set()
    results = [pool.take((f"c{i}", 0)) for i in range(10)]
    assert [r.value for r in results] == [f"c{i}" for i in range(10)]
    assert results[0].usage == {"prompt_tokens": 3}
    assert sorted(gate.calls) == sorted(f"c{i}" for i in range(10))
    assert gate.peak == 3 and pool.max_running("model") == 3
    assert pool.progress().done == pool.progress().total == 10
    pool.close()


def test_groups_are_bounded_separately_and_repeats_are_keys_of_their_own():
    pool, gate = PredictionPool(), Gate()
    for r in range(3):
        pool.submit(("q", r), "a", 1, gate.request(f"a{r}"))
        pool.submit(("q", 10 + r), "b", 2, gate.request(f"b{r}"))
    for _ in range(3):
        assert gate.arrived.acquire(timeout=30)  # 1 of a and 2 of b
    assert not gate.arrived.acquire(timeout=0.2)
    gate.release.set()
    assert [pool.take(("q", r)).value for r in range(3)] == ["a0", "a1", "a2"]
    assert pool.max_running("a") == 1 and pool.max_running("b") == 2
    assert pool.limits() == {"a": 1, "b": 2}
    pool.close()


def test_errors_are_raised_where_the_prediction_is_taken():
    pool, gate = PredictionPool(), Gate()
    gate.release.set()
    pool.submit(("bad", 0), "m", 2, gate.request("bad", PredictionError("HTTP 500: overloaded")))
    pool.submit(("good", 0), "m", 2, gate.request("good"))
    with pytest.raises(PredictionError, match="HTTP 500: overloaded"):
        pool.take(("bad", 0))
    assert pool.take(("good", 0)).value == "good"
    with pytest.raises(KeyError):
        pool.take(("never", 0))
    pool.close()


def test_only_requests_not_started_can_be_cancelled():
    pool, gate = PredictionPool(), Gate()
    for i in range(4):
        pool.submit((f"c{i}", 0), "m", 1, gate.request(f"c{i}"))
    assert gate.arrived.acquire(timeout=30)  # c0 runs, c1..c3 wait
    assert pool.started(("c0", 0)) and not pool.started(("c2", 0))
    assert pool.cancel([("c0", 0), ("c2", 0)]) == [("c2", 0)]
    assert ("c2", 0) not in pool and ("c0", 0) in pool
    gate.release.set()
    assert pool.take(("c3", 0)).value == "c3"
    with pytest.raises(KeyError):  # its caller requests it itself
        pool.take(("c2", 0))
    assert "c2" not in gate.calls
    assert pool.progress().total == 3
    pool.close()


def test_a_steal_withdraws_all_of_its_requests_or_none():
    pool, gate = PredictionPool(), Gate()
    for i in range(4):
        pool.submit((f"c{i}", 0), "m", 1, gate.request(f"c{i}"))
    assert gate.arrived.acquire(timeout=30)  # c0 runs
    assert not pool.withdraw([("c0", 0), ("c3", 0)])  # c0 started: nothing withdrawn
    assert ("c3", 0) in pool
    assert pool.withdraw([("c2", 0), ("c3", 0)])
    assert ("c2", 0) not in pool and ("c3", 0) not in pool
    gate.release.set()
    assert pool.take(("c1", 0)).value == "c1"
    assert sorted(gate.calls) == ["c0", "c1"]
    pool.close()


def test_taking_calls_on_wait_while_the_request_runs():
    pool, gate = PredictionPool(), Gate()
    pool.submit(("slow", 0), "m", 1, gate.request("slow"))
    waits: list[int] = []

    def on_wait() -> None:
        waits.append(1)
        if len(waits) == 2:
            gate.release.set()

    assert pool.take(("slow", 0), on_wait, poll=0.01).value == "slow"
    assert len(waits) >= 2
    pool.close()


def test_closing_the_pool_kills_a_running_command(tmp_path: Path):
    """A command in the pool ignores SIGINT and sleeps: closing the pool (the session ends)
    kills its process group at once and the request ends with Aborted."""
    script = tmp_path / "hang.py"
    script.write_text("import os, pathlib, signal, time\n"
                      "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
                      "pathlib.Path('pid').write_text(str(os.getpid()))\n"
                      "time.sleep(300)\n")
    pool = PredictionPool()
    outcome: list[BaseException] = []

    def call() -> Prediction:
        assert ABORT.get() is pool.abort
        try:
            run_command([sys.executable, str(script)], b"", tmp_path, 300, 1000)
        except BaseException as exc:
            outcome.append(exc)
            raise
        return Prediction("unreachable")

    pool.submit(("c", 0), "cmd", 1, call)
    pid_file = tmp_path / "pid"
    for _ in range(600):
        if pid_file.exists() and pid_file.read_text():
            break
        threading.Event().wait(0.05)
    pid = int(pid_file.read_text())
    pool.close()  # kills the group synchronously
    assert subprocess.run(["ps", "-o", "stat=", "-p", str(pid)], capture_output=True,
                          text=True).stdout.strip() in ("", "Z")
    for _ in range(200):
        if outcome:
            break
        threading.Event().wait(0.05)
    assert isinstance(outcome[0], Aborted)
    assert ABORT.get() is None  # set only in the pool's threads


@pytest.mark.parametrize("outcome", [PredictionError("timed out: no answer"), "SELECT 1"])
def test_a_request_the_close_cut_short_is_taken_as_closed_unless_it_answered(outcome):
    """The session ends while a request runs; shutting its socket makes it fail (a judge's
    vote read "timed out ... in 0.0 s" on a loaded CI host) before the taker wakes: the taker
    sees the pool closed (KeyError), as when it wakes first, never the abort's side effect.
    An answer that arrived all the same is kept."""
    gate = Gate()
    pool = PredictionPool()
    pool.submit(("c", 0), "g", 1, gate.request("c", outcome))
    assert gate.arrived.acquire(timeout=30)
    pool.close()
    gate.release.set()
    limit = time.monotonic() + 30
    while pool.progress().done == 0:
        assert time.monotonic() < limit
        time.sleep(0.01)
    if isinstance(outcome, str):
        assert pool.take(("c", 0)).value == outcome
    else:
        with pytest.raises(KeyError):
            pool.take(("c", 0))


def test_concurrency_values():
    assert concurrency_of(None) == DEFAULT_CONCURRENCY == 4
    assert concurrency_of({"concurrency": 16}) == 16
    assert concurrency_of({"concurrency": 16}, override=2) == 2
    assert parse_concurrency("8") == 8 and parse_concurrency(3) == 3
    for bad in (0, -1, "x", True, 2.5, 10_000):
        with pytest.raises(ValueError, match="must be"):
            parse_concurrency(bad)


class _Overloaded(ModelService):
    """Stand-in for a model service that answers every request with HTTP 500."""

    def answer(self, request: Request) -> tuple[int, object]:
        return 500, b""


def _case() -> Case:
    return make_case(file=Path("cases.yaml"), question="How many?")


@pytest.mark.parametrize("source", ["http", "openai"])
def test_a_source_waiting_to_retry_makes_no_request_once_the_session_ends(source, openai_standin):
    """Retries back off 30 s; the pool closes during the first wait: the request ends with
    the reason at once and the model service is not asked again (it was, after the wait)."""
    if source == "http":
        server = _Overloaded().start()
        spec = {"source": "http", "url": f"{server.url}/p",
                "retries": 3, "backoff": 30}
        calls = lambda: len(server.requests)  # noqa: E731
    else:
        pytest.importorskip("openai")
        openai_standin.script = {"How many?": [{"status": 500}] * 4}
        spec = {"source": "openai", "model": MODEL, "base_url": openai_standin.base_url,
                "api_key": KEY, "retries": 3, "backoff": 30}
        calls = lambda: len(openai_standin.requests)  # noqa: E731
    predictor = make_predictor(spec, Path("."), [])
    pool = PredictionPool()
    pool.submit(("c", 0), source, 1, lambda: predictor.predict(_case()))
    limit = time.monotonic() + 60
    while calls() == 0:
        assert time.monotonic() < limit, "the model service was never asked"
        time.sleep(0.01)
    pool.close()  # the session ends (Ctrl-C, -x) during the 30 s wait
    limit = time.monotonic() + 20  # well short of the 30 s wait before the next attempt
    while pool.progress().done == 0:
        assert time.monotonic() < limit, "the request waited to retry after the session ended"
        time.sleep(0.01)
    req = pool._requests[("c", 0)]
    assert isinstance(req.error, PredictionError)
    assert "not retried: the session ended during the wait before the next attempt" in str(
        req.error)
    assert calls() == 1
    if source == "http":
        server.stop()
