"""Pools of several xdist workers sharing one session through an exchange directory
(:mod:`pytest_queryeval.predict.exchange`), without pytest: two pools in this process stand in
for two workers (claims are files, slots are ``flock`` locks on separate open files, so they
behave across pools as across processes); a real child process stands in for a worker that
dies holding a claim."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from pytest_queryeval.errors import PredictionError, QueryFailed
from pytest_queryeval.predict.base import Prediction
from pytest_queryeval.predict.exchange import Exchange
from pytest_queryeval.predict.pool import PredictionPool

from .test_prediction_pool import Gate


def _pools(root: Path) -> tuple[PredictionPool, PredictionPool]:
    return PredictionPool(Exchange(root)), PredictionPool(Exchange(root))


def test_two_workers_make_each_request_once_within_one_bound(tmp_path: Path):
    a, b = _pools(tmp_path)
    gate = Gate()
    keys = [(f"c{i}", 0) for i in range(12)]
    for pool in (a, b):  # every worker queues every request of the session
        assert pool.submit_many((k, "model", 3, gate.request(k[0])) for k in keys) == 12
    for _ in range(3):
        assert gate.arrived.acquire(timeout=30)
    assert not gate.arrived.acquire(timeout=0.3)  # 3 slots for the session, not 3 per worker
    gate.release.set()
    # each worker takes the cases it runs, whoever made the request
    values = [(a if i % 2 else b).take(k).value for i, k in enumerate(keys)]
    assert values == [k[0] for k in keys]
    assert sorted(gate.calls) == sorted(k[0] for k in keys)  # each once
    assert gate.peak == 3
    assert a.progress().done + b.progress().done == 12
    a.close()
    b.close()


def test_a_waiting_case_gets_its_request_first(tmp_path: Path):
    """The case a worker runs now jumps its pool's queue (unless another worker has it)."""
    a, _ = _pools(tmp_path)
    gate = Gate()
    a.submit(("busy", 0), "model", 1, gate.request("busy"))
    assert gate.arrived.acquire(timeout=30)
    for i in range(5):
        a.submit((f"c{i}", 0), "model", 1, gate.request(f"c{i}"))
    taker = threading.Thread(target=a.take, args=(("c4", 0),))
    taker.start()
    while a._requests[("c4", 0)] is not a._groups["model"].queue[0]:
        threading.Event().wait(0.01)
    gate.release.set()
    taker.join(30)
    assert gate.calls[:2] == ["busy", "c4"]
    a.close()


def test_errors_reach_the_worker_that_runs_the_case(tmp_path: Path):
    a, b = _pools(tmp_path)

    class Odd(Exception):  # an __init__ that cannot be replayed from its args
        def __init__(self, code: int, text: str) -> None:
            super().__init__(f"{text} ({code})")

    def fail(exc: BaseException):
        def call() -> Prediction:
            raise exc
        return call

    a.submit(("refused", 0), "model", 2, fail(PredictionError("HTTP 500: model overloaded")))
    a.submit(("failed", 0), "model", 2, fail(QueryFailed("no such table: x")))
    a.submit(("odd", 0), "model", 2, fail(Odd(7, "model said no")))
    while a.progress().done < 3:  # a made all three: b only reads them
        threading.Event().wait(0.01)
    for key in (("refused", 0), ("failed", 0), ("odd", 0)):
        b.submit(key, "model", 2, fail(AssertionError("requested twice")))
    with pytest.raises(PredictionError, match="HTTP 500: model overloaded"):
        b.take(("refused", 0))
    with pytest.raises(QueryFailed, match="no such table: x"):
        b.take(("failed", 0))
    with pytest.raises(PredictionError, match=r"^Odd: model said no \(7\)$"):
        b.take(("odd", 0))
    a.close()
    b.close()


def test_a_value_that_cannot_be_passed_is_an_error_of_the_other_worker_only(tmp_path: Path):
    a, b = _pools(tmp_path)
    value = (lambda: 1,)  # a python source returned something pickle cannot carry
    a.submit(("c", 0), "model", 1, lambda: Prediction(value))
    while a.progress().done < 1:
        threading.Event().wait(0.01)
    b.submit(("c", 0), "model", 1, lambda: Prediction("requested twice"))
    with pytest.raises(PredictionError, match="cannot be passed between xdist workers"):
        b.take(("c", 0))
    assert a.take(("c", 0)).value is value
    a.close()
    b.close()


def _running_in_a(root: Path) -> tuple[PredictionPool, PredictionPool, Gate]:
    """Pool ``a`` claimed ``("c", 0)`` and is requesting it; ``b`` queued it after."""
    a, b = _pools(root)
    gate = Gate()
    a.submit(("c", 0), "model", 1, gate.request("c"))
    assert gate.arrived.acquire(timeout=30)
    b.submit(("c", 0), "model", 1, gate.request("twice"))
    return a, b, gate


def test_a_worker_whose_cases_are_done_answers_the_running_requests_first(tmp_path: Path):
    a, b, gate = _running_in_a(tmp_path)
    finished = threading.Event()
    ender = threading.Thread(target=lambda: (a.finish(), finished.set()))
    ender.start()
    assert not finished.wait(0.3), "finish() returned with a request running"
    gate.release.set()
    assert b.take(("c", 0)).value == "c"
    ender.join(30)
    assert finished.is_set()
    assert gate.calls == ["c"]
    b.close()


def test_an_interrupted_worker_tells_the_others_their_answers_will_not_come(tmp_path: Path):
    a, b, gate = _running_in_a(tmp_path)
    a.close()  # Ctrl-C: running requests are abandoned
    with pytest.raises(PredictionError, match="the session stopped while another xdist worker "
                                              "was requesting this prediction"):
        b.take(("c", 0))
    gate.release.set()
    assert gate.calls == ["c"]
    b.close()


def test_a_worker_that_died_holding_a_claim_is_named_and_not_replaced(tmp_path: Path):
    child = subprocess.run(
        [sys.executable, "-c", "import sys; from pytest_queryeval.predict.exchange import "
         "Exchange; import os; print(os.getpid()); Exchange(sys.argv[1]).claim(('c', 0))",
         str(tmp_path)], capture_output=True, text=True, check=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    pid = int(child.stdout)
    b = PredictionPool(Exchange(tmp_path))
    gate = Gate()
    b.submit(("c", 0), "model", 1, gate.request("twice"))
    with pytest.raises(PredictionError, match=rf"the xdist worker \(pid {pid}\) that was "
                                              "requesting this prediction stopped before it "
                                              "answered"):
        b.take(("c", 0))
    assert gate.calls == []  # never requested a second time
    b.close()


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc (Linux)")
def test_a_dead_worker_not_yet_reaped_is_dead(tmp_path: Path):
    """xdist's controller reaps a crashed worker late: until then its pid answers
    ``kill(pid, 0)``. Its life lock is gone at once."""
    child = subprocess.Popen(
        [sys.executable, "-c", "import sys, os; from pytest_queryeval.predict.exchange import "
         "Exchange; Exchange(sys.argv[1]).claim(('c', 0)); print(os.getpid(), flush=True); "
         "os._exit(3)", str(tmp_path)], stdout=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    try:
        assert child.stdout is not None
        pid = int(child.stdout.readline())
        for _ in range(3000):
            if "zombie" in _state(pid):
                break
            threading.Event().wait(0.01)
        assert "zombie" in _state(pid)
        os.kill(pid, 0)  # no error: the zombie looks alive to kill()
        exchange = Exchange(tmp_path)
        assert not exchange.alive(pid)
        assert exchange.alive(os.getpid())
        b = PredictionPool(exchange)
        b.submit(("c", 0), "model", 1, lambda: Prediction("requested twice"))
        with pytest.raises(PredictionError, match=rf"\(pid {pid}\) .* stopped before it"):
            b.take(("c", 0))
        b.close()
    finally:
        child.wait()


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/status").read_text().lower()
    except OSError:
        return ""


def test_claims_are_exclusive_across_processes(tmp_path: Path):
    here = Exchange(tmp_path)
    assert here.claim(("c", 1))
    assert not here.claim(("c", 1))
    assert here.owner(("c", 1)) == os.getpid()
    assert here.owner(("c", 2)) is None
    code = ("import sys; from pytest_queryeval.predict.exchange import Exchange; "
            "print(Exchange(sys.argv[1]).claim(('c', 1)), Exchange(sys.argv[1]).claim(('c', 2)))")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True,
                         text=True, check=True,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}).stdout
    assert out.split() == ["False", "True"]
    assert not here.claim(("c", 2))
