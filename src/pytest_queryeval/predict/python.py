"""Predictions from a Python callable ``module:function(case) -> prediction``.

The callable may be ``async def``: its coroutines run on one event loop of the predictor's
own (a daemon thread), so clients the module creates once (``httpx.AsyncClient``...) stay on
the loop they were made on, and the prediction pool awaits several at once.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import sys
import threading
import time
import traceback
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, ClassVar

from ..errors import PredictionError
from ..model import Case, Context
from .base import LiveSource, Prediction, read_usage


def load_callable(target: str, search: list[Path]) -> Callable[..., Any]:
    module_name, sep, func_name = target.partition(":")
    if not sep or not module_name or not func_name:
        raise PredictionError(f"python predictor must be 'module:function', got {target!r}")
    for p in search:
        if str(p) not in sys.path:
            sys.path.insert(0, str(p))
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:
        raise PredictionError(f"cannot import {module_name!r}: {type(exc).__name__}: {exc}") from None
    obj: object = module
    for part in func_name.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            raise PredictionError(f"{module_name!r} has no attribute {func_name!r}")
    if not callable(obj):
        raise PredictionError(f"{target!r} is not callable")
    return obj


class PythonPredictor(LiveSource):
    shown_keys: ClassVar[tuple[str, ...]] = ("function", "callable")

    @classmethod
    def from_spec(cls, spec: dict[str, Any], base: Path, search: list[Path],
                  context: Context | None = None) -> PythonPredictor:
        target = spec.get("function") or spec.get("callable")
        if not isinstance(target, str):
            raise PredictionError("python predictions need function: module:function")
        return cls(target, [base, *search])

    def __init__(self, target: str, search: list[Path]) -> None:
        self.target = target
        self.search = search
        self._func: Callable[..., Any] | None = None
        self._lock = threading.Lock()  # one import, from whichever pool thread is first
        self._loop: asyncio.AbstractEventLoop | None = None

    def _callable(self) -> Callable[..., Any]:
        with self._lock:
            if self._func is None:
                self._func = load_callable(self.target, self.search)
            return self._func

    def _event_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                threading.Thread(target=loop.run_forever, daemon=True,
                                 name="queryeval-python-predictor-loop").start()
                self._loop = loop
            return self._loop

    def predict(self, case: Case) -> Prediction:
        func = self._callable()
        start = time.perf_counter()
        try:
            value = func(case.json_input())
            if inspect.isawaitable(value):
                value = asyncio.run_coroutine_threadsafe(_awaited(value),
                                                         self._event_loop()).result()
        except Exception as exc:
            tb = traceback.extract_tb(exc.__traceback__)[-1:]
            where = f" at {tb[0].filename}:{tb[0].lineno}" if tb else ""
            raise PredictionError(f"{self.target} raised {type(exc).__name__}: {exc}{where}") from None
        seconds = time.perf_counter() - start
        # None is an answer: the model abstains (engine/abstain.py), as null does in a file
        if isinstance(value, Prediction):  # the callable reports usage, model or details
            return Prediction(value.value, seconds if value.seconds is None else value.seconds,
                              dict(value.details), read_usage(value.usage), value.model)
        return Prediction(value, seconds)


async def _awaited(value: Awaitable[object]) -> object:
    return await value
