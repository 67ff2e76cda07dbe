"""Predictions requested ahead of scoring, in a bounded pool per prediction source.

Why: pytest runs items one after another, so a model behind an API answered one case at a
time (40 cases at 0.25 s took 17 s, and longer with ``-n 2``). The run's predictions are
therefore submitted here as soon as the run order is known; each item then waits only for its
own. The pool is independent of pytest (the plugin submits, the engine waits) and of the
prediction sources (a request is a zero-argument callable), so every live source, and repeated
requests of one case, share it:

* a request is keyed by :data:`RequestKey` ``(case id, repeat index)``; a key is requested at
  most once (a second :meth:`PredictionPool.submit` of it is ignored);
* each *group* (one prediction source) runs at most ``limit`` requests at once, in submission
  order, on daemon threads (a request stuck in a socket or a child process must not keep an
  interrupted session from exiting);
* :meth:`PredictionPool.cancel` withdraws requests that have not started (atomically: a
  request either started here or never will, so the caller may then make it itself);
* :meth:`PredictionPool.take` returns the :class:`~.base.Prediction` or re-raises what the
  request raised, so failures, retries and timeouts stay those of each case.
* the judge's calls are requests too, in an uncounted group of their own (keys
  ``("judge", pid, ask, vote)``): they share the bound, the session's slots and the end of
  the session, but the progress line counts predictions only.

Requests that are still running when the session ends are abandoned (:meth:`close`): their
threads are daemons, and what they registered with the :class:`Abort` they see (:data:`ABORT`)
is run at once: a command's process group is killed, an HTTP request's socket shut.

An xdist worker's pool shares its requests with the other workers' through an
:class:`~.exchange.Exchange`: each pool is given every request of the session; a request
runs only in the pool that claims it first, within one of the session's ``limit`` slots, and
its answer is published for the worker that runs the case (:meth:`take` waits for it there).
A worker whose own cases are done lets its running requests finish (:meth:`finish`): another
worker may be waiting for them.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
import time
from collections import deque
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .base import Prediction

if TYPE_CHECKING:
    from .exchange import Exchange

#: ``(case id, repeat index)``: what one request of the pool stands for. Repeat 0 is the
#: case's first (and, without ``repeat:``, only) prediction.
RequestKey = tuple[str, int]

#: Simultaneous requests of one prediction source when its ``concurrency:`` is not given.
DEFAULT_CONCURRENCY = 4
#: Seconds between two looks, with an exchange, at whether another worker claimed the
#: request a case is waiting for.
_EXCHANGE_POLL = 0.02



class Abort:
    """The end of the session, as the requests running in the pool see it."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._callbacks: dict[int, Callable[[], None]] = {}
        self._next = 0

    def is_set(self) -> bool:
        return self._event.is_set()

    def wait(self, seconds: float) -> bool:
        """Sleep ``seconds``, or less when the session ends meanwhile (True then)."""
        return self._event.wait(seconds)

    def register(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Run ``callback`` when the session ends (at once if it has); returns the function
        that unregisters it (call it when the request is over)."""
        with self._lock:
            if not self._event.is_set():
                self._next += 1
                token = self._next
                self._callbacks[token] = callback

                def unregister() -> None:
                    with self._lock:
                        self._callbacks.pop(token, None)

                return unregister
        _quietly(callback)
        return _nothing

    def fire(self) -> None:
        with self._lock:
            self._event.set()
            callbacks, self._callbacks = list(self._callbacks.values()), {}
        for callback in callbacks:
            _quietly(callback)


def retry_pause(seconds: float) -> bool:
    """A source's wait before retrying, cut short when the session ends: False then, and the
    source makes no further request (a closed session must not keep asking the model)."""
    abort = ABORT.get()
    if abort is None:
        time.sleep(seconds)
        return True
    return not abort.wait(seconds)


#: The error of a request whose retry the end of the session cancelled.
NOT_RETRIED = "not retried: the session ended during the wait before the next attempt"


def _quietly(callback: Callable[[], None]) -> None:
    with contextlib.suppress(Exception):  # ending the session must not fail on a clean-up
        callback()


def _nothing() -> None:
    return None


#: The :class:`Abort` of the pool running the current request (None outside the pool): a
#: predictor that waits on something external registers how to stop waiting.
ABORT: contextvars.ContextVar[Abort | None] = contextvars.ContextVar(
    "queryeval_abort", default=None)

_PENDING, _RUNNING, _DONE, _CANCELLED = "pending", "running", "done", "cancelled"
#: Claimed by another worker's pool (exchange only): the answer is read from the exchange.
_REMOTE = "remote"


@dataclass(eq=False)  # compared by identity (a queue's remove)
class _Request:
    key: Hashable
    group: str
    call: Callable[[], Prediction]
    state: str = _PENDING
    result: Prediction | None = None
    error: BaseException | None = None
    started: float | None = None
    finished: float | None = None
    #: Running when the pool closed: an error it then ends with is the abort's doing (a
    #: socket shut mid-answer reads as a timeout), not the request's own outcome.
    abandoned: bool = False


@dataclass
class _Group:
    limit: int
    queue: deque[_Request] = field(default_factory=deque)
    threads: int = 0
    running: int = 0
    max_running: int = 0
    #: Exchange slots no thread of this pool holds (each thread keeps one while it lives).
    free_slots: list[int] = field(default_factory=list)
    #: Whether its requests are predictions (:meth:`PredictionPool.progress` counts them);
    #: False for the judge's calls, which share the bound but are not predictions.
    counted: bool = True


@dataclass(frozen=True)
class Progress:
    """Counts of one pool: requests ``done`` of ``total`` submitted, ``running`` now."""

    done: int
    total: int
    running: int
    seconds: float  #: since the first submission


class PredictionPool:
    """Bounded, per-source pools of prediction requests, each key requested at most once."""

    def __init__(self, exchange: Exchange | None = None) -> None:
        #: Shared with the session's other xdist workers (None: this process's pool only).
        self.exchange = exchange
        self._draining = False
        self._cond = threading.Condition()
        self._groups: dict[str, _Group] = {}
        self._requests: dict[Hashable, _Request] = {}
        self._done = 0
        self._cancelled = 0
        #: Requests submitted in groups :meth:`progress` does not count.
        self._hidden = 0
        self._closed = False
        self._t0: float | None = None
        self.abort = Abort()

    # -- submitting --------------------------------------------------------------------
    def submit(self, key: Hashable, group: str, limit: int,
               call: Callable[[], Prediction], counted: bool = True) -> bool:
        """Queue ``call`` under ``key`` in ``group`` (at most ``limit`` running at once; the
        first submission of a group fixes its limit and whether :meth:`progress` counts it).
        False when ``key`` was already submitted or the pool is closed: nothing is requested
        twice."""
        with self._cond:
            if self._closed or self._draining or key in self._requests:
                return False
            if self._t0 is None:
                self._t0 = time.perf_counter()
            grp = self._groups.get(group)
            if grp is None:
                grp = self._groups[group] = _Group(max(1, int(limit)), counted=counted)
                grp.free_slots = list(range(grp.limit - 1, -1, -1))
            if not grp.counted:
                self._hidden += 1
            req = _Request(key, group, call)
            self._requests[key] = req
            grp.queue.append(req)
            if grp.threads < grp.limit and grp.threads < len(grp.queue) + grp.running:
                grp.threads += 1
                threading.Thread(target=self._work, args=(group, grp, grp.free_slots.pop()),
                                 daemon=True, name=f"queryeval-predict-{group[:24]}").start()
            return True

    def submit_many(self, requests: Iterable[tuple[Hashable, str, int, Callable[[], Prediction]]],
                    ) -> int:
        """:meth:`submit` each; the number actually queued."""
        return sum(self.submit(*r) for r in requests)

    def _work(self, name: str, grp: _Group, slot: int) -> None:
        exchange = self.exchange
        while True:
            with self._cond:
                if self._closed or self._draining or not grp.queue:
                    self._retire(grp, slot)
                    return
            # the session's slot first (other workers' requests may hold them all)
            with exchange.slot(name, slot) if exchange is not None else contextlib.nullcontext():
                if not self._run_next(grp, slot):
                    return

    def _retire(self, grp: _Group, slot: int) -> None:
        """A thread ends (the condition's lock held, so a submission sees it gone)."""
        grp.threads -= 1
        grp.free_slots.append(slot)

    def _run_next(self, grp: _Group, slot: int) -> bool:
        """Start and finish the next pending request of ``grp`` that this pool may make
        (with an exchange: the next one no other worker claimed). False, and the thread
        retired, when there is none."""
        exchange = self.exchange
        with self._cond:
            req = None
            while grp.queue and not self._closed and not self._draining:
                candidate = grp.queue.popleft()
                if candidate.state != _PENDING:
                    continue
                if exchange is not None and not exchange.claim(candidate.key):
                    candidate.state = _REMOTE  # another worker requests it
                    candidate.call = _spent
                    self._cond.notify_all()
                    continue
                req = candidate
                break
            if req is None:
                self._retire(grp, slot)
                return False
            req.state = _RUNNING
            req.started = time.perf_counter()
            grp.running += 1
            grp.max_running = max(grp.max_running, grp.running)
        ctx = contextvars.copy_context()
        try:
            result = ctx.run(self._call, req.call)
            error = None
        except BaseException as exc:  # re-raised in the thread that takes the result
            result, error = None, exc
        # counted as done before another worker can see the answer, so that no worker's
        # progress (nor the sum the controller prints) ever lags behind an answer taken
        self._finished(grp, req, result, error)
        if exchange is not None:
            with contextlib.suppress(OSError):  # the session's directory is gone: it ended
                exchange.publish(req.key, result, error)
        return True

    def _finished(self, grp: _Group, req: _Request, result: Prediction | None,
                  error: BaseException | None) -> None:
        with self._cond:
            req.result, req.error = result, error
            req.state = _DONE
            req.finished = time.perf_counter()
            req.call = _spent
            grp.running -= 1
            if grp.counted:
                self._done += 1
            self._cond.notify_all()

    def _call(self, call: Callable[[], Prediction]) -> Prediction:
        ABORT.set(self.abort)
        return call()

    # -- taking ------------------------------------------------------------------------
    def __contains__(self, key: Hashable) -> bool:
        with self._cond:
            req = self._requests.get(key)
            return req is not None and req.state != _CANCELLED

    def take(self, key: Hashable, on_wait: Callable[[], None] | None = None,
             poll: float = 0.5) -> Prediction:
        """The prediction of ``key``, waiting for it if need be (``on_wait`` is called about
        every ``poll`` seconds meanwhile, in this thread: progress lines). Re-raises what the
        request raised; KeyError when ``key`` was never submitted, was cancelled, or the pool
        closed before it answered."""
        exchange = self.exchange
        with self._cond:
            req = self._requests.get(key)
            if req is None or (req.state == _CANCELLED and exchange is None):
                raise KeyError(key)
            last = time.monotonic()
            prioritized = False
            while req.state not in (_DONE, _REMOTE):
                if req.state == _CANCELLED or self._closed:
                    if exchange is None or exchange.claim(key):
                        raise KeyError(key)  # the caller requests it (holding the claim)
                    req.state = _REMOTE
                    break
                if exchange is not None and req.state == _PENDING:
                    if exchange.owner(key) is not None:  # ours would be running
                        req.state, req.call = _REMOTE, _spent
                        break
                    if not prioritized:  # the case runs now: its request goes first
                        prioritized = True
                        self._prioritize(req)
                # interruptible: Ctrl-C lands here
                self._cond.wait(poll if exchange is None else _EXCHANGE_POLL)
                if on_wait is not None and req.state != _DONE and \
                        time.monotonic() - last >= poll:
                    last = time.monotonic()
                    self._cond.release()
                    try:
                        on_wait()
                    finally:
                        self._cond.acquire()
            remote = req.state == _REMOTE
            if req.abandoned and req.error is not None:
                # the close cut it short: taken as in the race's other order (still running
                # when the pool closed), never as the abort's side effect (a "timeout")
                raise KeyError(key)
            result, error = req.result, req.error
            req.result = req.error = None  # the item holds it now; keep the pool small
        if remote:
            assert exchange is not None
            return exchange.wait(key, on_wait, poll)
        if error is not None:
            raise error.with_traceback(error.__traceback__)
        assert result is not None
        return result

    def _prioritize(self, req: _Request) -> None:
        queue = self._groups[req.group].queue
        if queue and queue[0] is not req:
            with contextlib.suppress(ValueError):
                queue.remove(req)
                queue.appendleft(req)

    def cancel(self, keys: Iterable[Hashable]) -> list[Hashable]:
        """Withdraw the requests of ``keys`` that have not started; the keys withdrawn. A
        withdrawn key is never requested by the pool (its caller may request it itself)."""
        out = []
        with self._cond:
            for key in keys:
                req = self._requests.get(key)
                if req is not None and req.state == _PENDING:
                    req.state = _CANCELLED
                    req.call = _spent
                    if self._groups[req.group].counted:
                        self._cancelled += 1
                    out.append(key)
        return out

    def withdraw(self, keys: Iterable[Hashable]) -> bool:
        """Withdraw all of ``keys`` or none: False (nothing withdrawn) when any of them has
        started. Atomic, so a request cannot start between the check and the withdrawal."""
        keys = list(keys)
        with self._cond:
            if any(self._requests[k].state in (_RUNNING, _DONE)
                   for k in keys if k in self._requests):
                return False
            self.cancel(keys)  # the condition's lock is re-entrant
            return True

    def started(self, key: Hashable) -> bool:
        """Whether the request of ``key`` is running or done (it can no longer be cancelled)."""
        with self._cond:
            req = self._requests.get(key)
            return req is not None and req.state in (_RUNNING, _DONE)

    # -- state -------------------------------------------------------------------------
    def progress(self) -> Progress:
        with self._cond:
            running = sum(g.running for g in self._groups.values() if g.counted)
            total = len(self._requests) - self._cancelled - self._hidden
            since = time.perf_counter() - self._t0 if self._t0 is not None else 0.0
            return Progress(self._done, total, running, since)

    def max_running(self, group: str) -> int:
        """The most requests of ``group`` that ran at once (0 when none ran)."""
        with self._cond:
            grp = self._groups.get(group)
            return grp.max_running if grp is not None else 0

    def limits(self) -> dict[str, int]:
        with self._cond:
            return {name: g.limit for name, g in self._groups.items()}

    def finish(self) -> None:
        """This process's cases are done (not interrupted): start no more requests and, with
        an exchange, let the running ones finish, since other workers may be waiting for
        their answers; then :meth:`close`."""
        with self._cond:
            self._draining = True
            while self.exchange is not None and not self._closed and any(
                    g.running for g in self._groups.values()):
                self._cond.wait(0.5)  # interruptible: Ctrl-C lands here
        self.close()

    def close(self) -> None:
        """Stop starting requests and abandon the running ones (their threads are daemons;
        :data:`ABORT` tells them the session is over; with an exchange, the workers waiting
        for their answers are told)."""
        with self._cond:
            self._closed = True
            running = []
            for req in self._requests.values():
                if req.state == _PENDING:
                    req.state = _CANCELLED
                    req.call = _spent
                elif req.state == _RUNNING:
                    req.abandoned = True
                    running.append(req.key)
            self._cond.notify_all()
        if self.exchange is not None:
            for key in running:
                self.exchange.abandon(key)
        self.abort.fire()


def _spent() -> Prediction:  # pragma: no cover - never called: frees the request's closure
    raise RuntimeError("request already made")


def concurrency_of(spec: dict[str, Any] | None, override: int | None = None) -> int:
    """The bound of a source: ``--queryeval-concurrency`` > ``concurrency:`` > the default.
    The spec's value is validated with the suite config (a located per-case error)."""
    if override is not None:
        return override
    value = (spec or {}).get("concurrency", DEFAULT_CONCURRENCY)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        return DEFAULT_CONCURRENCY
    return value


def parse_concurrency(value: object) -> int:
    """``--queryeval-concurrency`` / ``concurrency:``: a positive integer (ValueError else)."""
    if isinstance(value, bool):
        raise ValueError(f"must be a positive integer, not {value!r}")
    try:
        number = int(str(value).strip()) if isinstance(value, str) else value
    except ValueError:
        raise ValueError(f"must be a positive integer, not {value!r}") from None
    if not isinstance(number, int) or number < 1:
        raise ValueError(f"must be a positive integer, not {value!r}")
    if number > MAX_CONCURRENCY:
        raise ValueError(f"must be at most {MAX_CONCURRENCY}, not {number}")
    return number


#: One thread per simultaneous request: a bound well above any model service's rate limit.
MAX_CONCURRENCY = 256
