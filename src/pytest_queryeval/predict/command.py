"""Predictions from an external command: the case as JSON on stdin, the prediction on stdout."""

from __future__ import annotations

import json
import shlex
import subprocess
import time
from pathlib import Path
from typing import Any

from ..errors import PredictionError
from ..model import Case
from .base import Prediction, maybe_json


class CommandPredictor:
    def __init__(self, command: str | list[str], cwd: Path, timeout: float = 60.0) -> None:
        self.argv = shlex.split(command) if isinstance(command, str) else [str(a) for a in command]
        self.cwd = cwd
        self.timeout = timeout

    def predict(self, case: Case) -> Prediction:
        start = time.perf_counter()
        try:
            proc = subprocess.run(self.argv, input=json.dumps(case.json_input()), cwd=self.cwd,
                                  capture_output=True, text=True, timeout=self.timeout, check=False)
        except FileNotFoundError:
            raise PredictionError(f"command not found: {self.argv[0]}") from None
        except subprocess.TimeoutExpired:
            raise PredictionError(f"command timed out after {self.timeout:g} s") from None
        seconds = time.perf_counter() - start
        if proc.returncode != 0:
            tail = proc.stderr.strip().splitlines()[-3:]
            raise PredictionError(f"command exited {proc.returncode}: " + " | ".join(tail))
        out = proc.stdout.strip()
        if not out:
            raise PredictionError("command printed no prediction")
        value: Any = maybe_json(out)
        if isinstance(value, dict) and "predicted" in value:
            value = value["predicted"]
        return Prediction(value, seconds)
