"""Predictions from an external command: the case as JSON on stdin, the prediction on stdout.

``timeout`` is a hard wall-clock deadline on the whole run and ``max_bytes`` caps stdout,
counted while it is read: past either, the command's whole process group is killed (a command
printing 1 GiB took over 180 s and 4-6 GB of memory when its output was buffered whole).
"""

from __future__ import annotations

import json
import shlex
import time
from pathlib import Path
from typing import Any, ClassVar

from ..errors import PredictionError
from ..model import Case, Context
from ._bounded import Aborted, DeadlineExpired, TooBig, run_command
from .base import (
    DEFAULT_MAX_BYTES,
    LiveSource,
    Prediction,
    extract_mode,
    extracted,
    maybe_json,
    positive_number,
    read_usage,
    refuse_repeated,
)
from .cache import use_cache


class CommandPredictor(LiveSource):
    shown_keys: ClassVar[tuple[str, ...]] = ("command",)

    @classmethod
    def from_spec(cls, spec: dict[str, Any], base: Path, search: list[Path],
                  context: Context | None = None) -> CommandPredictor:
        command = spec.get("command")
        if not isinstance(command, str | list):
            raise PredictionError("command predictions need command: a string or a list")
        return use_cache(cls(command, base, positive_number(spec, "timeout", 60.0),
                             int(positive_number(spec, "max_bytes", DEFAULT_MAX_BYTES)),
                             extract_mode(spec)), spec, context)

    def __init__(self, command: str | list[str], cwd: Path, timeout: float = 60.0,
                 max_bytes: int = DEFAULT_MAX_BYTES, extract: str | None = None) -> None:
        self.argv = shlex.split(command) if isinstance(command, str) else [str(a) for a in command]
        self.cwd = cwd
        self.timeout = timeout
        self.max_bytes = max_bytes
        self.extract = extract

    def predict(self, case: Case) -> Prediction:
        return self.cached(case, {"argv": self.argv, "stdin": case.json_input()},
                           lambda: self._run(case))

    def _run(self, case: Case) -> Prediction:
        start = time.perf_counter()
        try:
            code, raw, err = run_command(self.argv, json.dumps(case.json_input()).encode("utf-8"),
                                         self.cwd, self.timeout, self.max_bytes)
        except FileNotFoundError:
            raise PredictionError(f"command not found: {self.argv[0]}") from None
        except PermissionError:
            raise PredictionError(f"command not executable: {self.argv[0]}") from None
        except DeadlineExpired:
            raise PredictionError(f"command timed out after {self.timeout:g} s (killed)") \
                from None
        except Aborted:
            raise PredictionError("the session ended while the command ran (killed)") from None
        except TooBig:
            raise PredictionError(f"command printed more than max_bytes ({self.max_bytes:,} "
                                  "bytes) (killed)") from None
        except OSError as exc:
            # the command could not be started even after the retries of a transient refusal
            raise PredictionError(f"command could not be started: {self.argv[0]}: "
                                  f"{exc.strerror or exc}") from None
        seconds = time.perf_counter() - start
        if code != 0:
            tail = _text(err).strip().splitlines()[-3:]
            raise PredictionError(f"command exited {code}: " + " | ".join(tail))
        out = _text(raw).strip()
        if not out:
            raise PredictionError("command printed no prediction")
        value = maybe_json(out)
        if case.agent is not None:
            refuse_repeated(out, "the command's answer")
        usage: dict[str, float] = {}
        model = None
        if isinstance(value, dict) and "predicted" in value:
            # the envelope may report what the answer cost: usage and the model's name
            usage = read_usage(value.get("usage"))
            model = value.get("model") if isinstance(value.get("model"), str) else None
            if case.agent is not None:  # an agent case keeps its trajectory and answer
                from ..agents.trajectory import carried

                value = carried(value, value["predicted"])
            else:
                value = value["predicted"]
        return extracted(Prediction(value, seconds, usage=usage, model=model), case.kind,
                         self.extract)


def _text(data: bytes) -> str:
    """UTF-8 text with universal newlines (what ``text=True`` gave)."""
    return data.decode("utf-8", errors="replace").replace("\r\n", "\n").replace("\r", "\n")
