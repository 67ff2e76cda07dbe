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

Requests that are still running when the session ends are abandoned (:meth:`close`): their
threads are daemons, and what they registered with the :class:`Abort` they see (:data:`ABORT`)
is run at once: a command's process group is killed, an HTTP request's socket shut.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
import time
from collections import deque
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from typing import Any

from .base import Prediction

#: ``(case id, repeat index)``: what one request of the pool stands for. Repeat 0 is the
#: case's first (and, without ``repeat:``, only) prediction.
RequestKey = tuple[str, int]

#: Simultaneous requests of one prediction source when its ``concurrency:`` is not given.
DEFAULT_CONCURRENCY = 4



class Abort:
    """The end of the session, as the requests running in the pool see it."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._callbacks: dict[int, Callable[[], None]] = {}
        self._next = 0

    def is_set(self) -> bool:
        return self._event.is_set()

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


@dataclass
class _Request:
    key: Hashable
    group: str
    call: Callable[[], Prediction]
    state: str = _PENDING
    result: Prediction | None = None
    error: BaseException | None = None
    started: float | None = None
    finished: float | None = None


@dataclass
class _Group:
    limit: int
    queue: deque[_Request] = field(default_factory=deque)
    threads: int = 0
    running: int = 0
    max_running: int = 0


@dataclass(frozen=True)
class Progress:
    """Counts of one pool: requests ``done`` of ``total`` submitted, ``running`` now."""

    done: int
    total: int
    running: int
    seconds: float  #: since the first submission


class PredictionPool:
    """Bounded, per-source pools of prediction requests, each key requested at most once."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._groups: dict[str, _Group] = {}
        self._requests: dict[Hashable, _Request] = {}
        self._done = 0
        self._cancelled = 0
        self._closed = False
        self._t0: float | None = None
        self.abort = Abort()

    # -- submitting --------------------------------------------------------------------
    def submit(self, key: Hashable, group: str, limit: int,
               call: Callable[[], Prediction]) -> bool:
        """Queue ``call`` under ``key`` in ``group`` (at most ``limit`` running at once; the
        first submission of a group fixes its limit). False when ``key`` was already
        submitted or the pool is closed: nothing is requested twice."""
        with self._cond:
            if self._closed or key in self._requests:
                return False
            if self._t0 is None:
                self._t0 = time.perf_counter()
            grp = self._groups.get(group)
            if grp is None:
                grp = self._groups[group] = _Group(max(1, int(limit)))
            req = _Request(key, group, call)
            self._requests[key] = req
            grp.queue.append(req)
            if grp.threads < grp.limit and grp.threads < len(grp.queue) + grp.running:
                grp.threads += 1
                threading.Thread(target=self._work, args=(grp,), daemon=True,
                                 name=f"queryeval-predict-{group[:24]}").start()
            return True

    def submit_many(self, requests: Iterable[tuple[Hashable, str, int, Callable[[], Prediction]]],
                    ) -> int:
        """:meth:`submit` each; the number actually queued."""
        return sum(self.submit(*r) for r in requests)

    def _work(self, grp: _Group) -> None:
        while True:
            with self._cond:
                req = None
                while grp.queue:
                    candidate = grp.queue.popleft()
                    if candidate.state == _PENDING:
                        req = candidate
                        break
                if req is None or self._closed:
                    grp.threads -= 1
                    return
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
            with self._cond:
                req.result, req.error = result, error
                req.state = _DONE
                req.finished = time.perf_counter()
                req.call = _spent
                grp.running -= 1
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
        request raised; KeyError when ``key`` was never submitted or was cancelled."""
        with self._cond:
            req = self._requests.get(key)
            if req is None or req.state == _CANCELLED:
                raise KeyError(key)
            while req.state != _DONE:
                if self._closed:
                    raise KeyError(key)
                self._cond.wait(poll)  # interruptible: Ctrl-C lands here
                if on_wait is not None and req.state != _DONE:
                    self._cond.release()
                    try:
                        on_wait()
                    finally:
                        self._cond.acquire()
            result, error = req.result, req.error
            req.result = req.error = None  # the item holds it now; keep the pool small
        if error is not None:
            raise error.with_traceback(error.__traceback__)
        assert result is not None
        return result

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
            running = sum(g.running for g in self._groups.values())
            total = len(self._requests) - self._cancelled
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

    def close(self) -> None:
        """Stop starting requests and abandon the running ones (their threads are daemons;
        :data:`ABORT` tells them the session is over)."""
        with self._cond:
            self._closed = True
            for req in self._requests.values():
                if req.state == _PENDING:
                    req.state = _CANCELLED
                    req.call = _spent
            self._cond.notify_all()
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


def parse_concurrency(value: Any) -> int:
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
