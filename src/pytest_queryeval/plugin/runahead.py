"""The run's predictions requested ahead of scoring (pytest side of :mod:`..predict.pool`).

When the run starts (after collection, ``-k``/``-m``/``--lf`` and deselection), the live
predictions of the items this process will run are queued in the session's prediction pool, in
run order. A serial run knows its items at once. The xdist workers on the controller's
machine (the default) all know every item too, and share the session's requests through an
exchange (:mod:`..predict.exchange`): every worker queues all of them, each request is made by
the worker that claims it first, and the worker that runs a case reads its answer. The
controller hands a worker its items a few at a time, so a pool that knew only those ran dry
between batches.

A worker on another machine (``--tx ssh=...``) learns its items from the controller, batch by
batch (``runtests``), and may lose pending ones to another worker (``steal``, ``--dist
worksteal``): the worker's command handler is wrapped so that each batch is queued as it
arrives and a steal withdraws the stolen cases' requests, or is refused when one of them
already started. Each case's prediction is thus requested by exactly one worker, the one that
runs it. Without the hook this relies on (another xdist version), each case is requested when
it runs, as before: slower, never twice.

A progress line (``predictions done/total``, throttled) goes to the terminal while the pool
runs ahead; ``-q`` silences it.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING

import pytest

from ..engine import Evaluator
from ..predict import Prediction
from ..predict.pool import PredictionPool

if TYPE_CHECKING:
    from ..predict.exchange import Exchange

#: Seconds between two progress lines.
PROGRESS_EVERY = 2.0
#: Seconds before a worker answers a steal it declines (``--dist worksteal``).
STEAL_DECLINED_PAUSE = 0.2

_Request = tuple[tuple[str, int], str, int, Callable[[], Prediction]]
#: The pool requests of the item at each index of ``session.items`` (one per repeat).
_Requests = dict[int, list[_Request]]


def start(session: pytest.Session, evaluator: Evaluator, *, worker: bool) -> None:
    """Queue the predictions of the items this process runs (see the module docstring);
    ``worker``: this process is an xdist worker."""
    config = session.config
    if config.option.collectonly or not session.items:
        return
    if session.testsfailed and not config.option.continue_on_collection_errors:
        return  # pytest ends the session: "errors during collection"
    hook_active = bool(config.hook.pytest_queryeval_predict.get_hookimpls())
    requests: _Requests = {}
    from .nodes import RUNNER, QueryEvalItem

    carried = config.stash[RUNNER].carried  # --queryeval-resume: scored by an earlier attempt
    from .pycases import requests_ahead

    keys: set[tuple[str, int]] = set()
    for index, item in enumerate(session.items):
        if item.get_closest_marker("skip") or item.nodeid in carried:
            continue
        if isinstance(item, QueryEvalItem):
            wanted = evaluator.requests(item.case, hook_active=hook_active)
        else:  # a Python case, when its fields can be read before its test runs
            wanted = requests_ahead(item, evaluator, hook_active=hook_active, taken=keys)
        if wanted:
            requests[index] = wanted
            keys.update(r[0] for r in wanted)
    exchange = _exchange(config) if worker else None
    evaluator.exchange = exchange  # the judge's calls and max_calls use it too
    if not requests:
        return
    evaluator.preflight()  # a source whose server is down: its cases error at once
    pool = evaluator.start_pool(exchange)
    if not worker or exchange is not None:  # the controller's progress line follows the pool (ProgressLine)
        pool.submit_many(r for rs in requests.values() for r in rs)
    else:
        _follow_the_controller(config, pool, requests, len(session.items))


def _exchange(config: pytest.Config) -> Exchange | None:
    """An xdist worker's :class:`~..predict.exchange.Exchange` when it runs on the controller's
    machine, else None."""
    root = config.workerinput.get("queryeval_exchange")  # type: ignore[attr-defined]
    if not root:
        return None
    from ..predict.exchange import Exchange, available

    if not available():
        return None
    try:
        return Exchange(root)
    except OSError:  # the controller's directory is not here: request cases as they come
        return None


def _follow_the_controller(config: pytest.Config, pool: PredictionPool, requests: _Requests,
                           count: int) -> None:
    """xdist worker: queue each batch the controller sends this worker, as it arrives."""
    interactor = next((p for p in config.pluginmanager.get_plugins()
                       if type(p).__name__ == "WorkerInteractor"), None)
    original = getattr(interactor, "handle_command", None)
    if interactor is None or not callable(original) or not hasattr(interactor, "sendevent"):
        return  # each case is requested when it runs

    def queue(indices: Iterable[int]) -> None:
        pool.submit_many(r for i in indices for r in requests.get(i, ()))

    def handle_command(command: object) -> None:
        if isinstance(command, tuple) and len(command) == 2 and isinstance(command[1], dict):
            name, kwargs = command
            if name == "runtests":
                queue(kwargs.get("indices", ()))
            elif name == "runtests_all":
                queue(range(count))
            elif name == "steal":
                keys = [r[0] for i in kwargs.get("indices", ()) for r in requests.get(i, ())]
                if not pool.withdraw(keys):
                    # declined, as xdist declines a steal that includes a running test; the
                    # pause keeps the controller, which asks again at once, from spinning
                    time.sleep(STEAL_DECLINED_PAUSE)
                    interactor.sendevent("unscheduled", indices=[])
                    return
                # withdrawn: a case xdist then keeps here anyway is requested when it runs
        original(command)

    interactor.handle_command = handle_command


def worker_counts(pool: PredictionPool) -> tuple[int, int, int, bool]:
    """What an xdist worker tells the controller of its pool (:meth:`ProgressLine.from_worker`):
    done, total, running, and whether it shares the session's requests (an exchange)."""
    counts = pool.progress()
    return counts.done, counts.total, counts.running, pool.exchange is not None


class ProgressLine:
    """``queryeval: predictions 57/200 done, 12 in flight, 31 case(s) scored`` at most every
    :data:`PROGRESS_EVERY` seconds while predictions are outstanding, and one closing line
    (:meth:`close`). A serial run counts its own pool (``pool()``: the evaluator's, from when
    the run starts); under xdist the controller, which has none, sums what its workers
    report."""

    def __init__(self, config: pytest.Config,
                 pool: Callable[[], PredictionPool | None] = lambda: None) -> None:
        self.config = config
        self._pool_of = pool
        self._pool: PredictionPool | None = None
        self.scored = 0
        self._last = time.monotonic()
        self._shown_done = -1
        self._closed = False
        #: xdist controller: the latest (done, total, running) of each worker, and whether
        #: it shares the session's requests through an exchange (its total is the session's).
        self.workers: dict[str, tuple[int, int, int]] = {}
        self.shared: dict[str, bool] = {}

    @property
    def pool(self) -> PredictionPool | None:
        """The serial run's pool, once the run has started one (the throttle starts then)."""
        if self._pool is None:
            self._pool = self._pool_of()
            if self._pool is not None:  # the throttle counts from the first request
                self._last = time.monotonic() - self._pool.progress().seconds
        return self._pool

    def counts(self) -> tuple[int, int, int]:
        if self.pool is not None:
            p = self.pool.progress()
            return p.done, p.total, p.running
        done = sum(w[0] for w in self.workers.values())
        # workers sharing an exchange each hold the session's requests; else their own
        totals = [w[1] for w in self.workers.values()]
        total = max(totals) if any(self.shared.values()) else sum(totals)
        return done, total, sum(w[2] for w in self.workers.values())

    def update(self) -> None:
        if self._closed or self.config.get_verbosity() < 0:
            return
        done, total, running = self.counts()
        if total == 0:
            return
        if done >= total and self.pool is not None:  # a serial run's total is final
            self.close()
            return
        now = time.monotonic()
        if done >= total or now - self._last < PROGRESS_EVERY or done == self._shown_done:
            return
        self._last = now
        self._shown_done = done
        self._write(f"queryeval: predictions {done}/{total} done, {running} in flight, "
                    f"{self.scored} case(s) scored")

    def close(self) -> None:
        """The closing line, once, when any prediction was requested ahead."""
        if self._closed or self.config.get_verbosity() < 0:
            return
        self._closed = True
        done, total, _ = self.counts()
        if total == 0:
            return
        took = ""
        if self.pool is not None:
            took = f" in {self.pool.progress().seconds:.1f} s"
        limits = self.pool.limits() if self.pool is not None else {}
        bound = f" (concurrency {', '.join(sorted({str(v) for v in limits.values()}))})" \
            if limits else ""
        self._write(f"queryeval: predictions {done}/{total} done{took}{bound}")

    def _write(self, line: str) -> None:
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is None:
            return
        # never inside a test's captured output, whoever calls it
        capman = self.config.pluginmanager.get_plugin("capturemanager")
        with capman.global_and_fixture_disabled() if capman is not None else _nothing():
            if getattr(getattr(reporter, "_tw", None), "width_of_current_line", 0):
                reporter.write("\n")  # xdist's letters: a line without a file name
            reporter.write_line(line)

    def from_report(self, report: pytest.TestReport) -> None:
        """A case's report reached this process: one more case scored (and, from an xdist
        worker, its pool's counts). The line itself waits for :meth:`update`, called once
        the terminal has written the case's result (``pytest_runtest_logfinish``)."""
        self.scored += 1
        node = getattr(getattr(getattr(report, "node", None), "gateway", None), "id", "?")
        self.from_worker(str(node), getattr(report, "queryeval_predictions", None))

    def from_worker(self, node: str, counts: object) -> None:
        """A worker's ``(done, total, running[, shared])``: with a case's report, and its
        final counts when it ends (its pool may have answered other workers' cases after its
        own last case)."""
        if isinstance(counts, list | tuple) and len(counts) in (3, 4):
            self.workers[node] = (int(counts[0]), int(counts[1]), int(counts[2]))
            self.shared[node] = len(counts) == 4 and bool(counts[3])


@contextlib.contextmanager
def _nothing() -> Iterator[None]:
    yield
