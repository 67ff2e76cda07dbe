"""Predictions from a Python callable ``module:function(case) -> prediction``."""

from __future__ import annotations

import importlib
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import PredictionError
from ..model import Case
from .base import Prediction


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
    obj: Any = module
    for part in func_name.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            raise PredictionError(f"{module_name!r} has no attribute {func_name!r}")
    if not callable(obj):
        raise PredictionError(f"{target!r} is not callable")
    return obj  # type: ignore[no-any-return]


class PythonPredictor:
    def __init__(self, target: str, search: list[Path]) -> None:
        self.target = target
        self.search = search
        self._func: Callable[..., Any] | None = None

    def predict(self, case: Case) -> Prediction:
        if self._func is None:
            self._func = load_callable(self.target, self.search)
        start = time.perf_counter()
        try:
            value = self._func(case.json_input())
        except Exception as exc:
            tb = traceback.extract_tb(exc.__traceback__)[-1:]
            where = f" at {tb[0].filename}:{tb[0].lineno}" if tb else ""
            raise PredictionError(f"{self.target} raised {type(exc).__name__}: {exc}{where}") from None
        seconds = time.perf_counter() - start
        if value is None:
            raise PredictionError(f"{self.target} returned None for case {case.id!r}")
        return Prediction(value, seconds)
