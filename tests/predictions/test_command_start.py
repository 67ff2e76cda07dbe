"""Starting a prediction command: a refusal "for now" by the kernel is retried, any other
failure to start is a located prediction error, never an internal error.

The EFAULT is a fault this machine cannot cause on demand (it was seen once in CI, on a loaded
container, from ``execve`` of the venv's interpreter): a stand-in ``Popen`` raises it for the
first attempts and then hands over to the real one, which runs a real command.
"""

from __future__ import annotations

import errno
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_queryeval.errors import PredictionError
from pytest_queryeval.predict import _bounded
from pytest_queryeval.predict.command import CommandPredictor
from tests.support import make_case


class _RefusesFirst:
    """Stand-in for :class:`subprocess.Popen`: raises ``OSError(code)`` ``times`` times."""

    def __init__(self, code: int, times: int) -> None:
        self.code, self.left, self.calls = code, times, 0
        self.real = subprocess.Popen

    def __call__(self, *args: Any, **kwargs: Any) -> subprocess.Popen[bytes]:
        self.calls += 1
        if self.left:
            self.left -= 1
            raise OSError(self.code, "Bad address" if self.code == errno.EFAULT else "no")
        return self.real(*args, **kwargs)


def test_a_transient_efault_is_retried_and_the_command_runs(tmp_path: Path, monkeypatch):
    stand_in = _RefusesFirst(errno.EFAULT, 2)
    monkeypatch.setattr(_bounded.subprocess, "Popen", stand_in)
    code, out, _ = _bounded.run_command([sys.executable, "-c", "print('ok')"], b"", tmp_path,
                                        30.0, 1000)
    assert (code, out.strip(), stand_in.calls) == (0, b"ok", 3)


def test_a_persistent_refusal_is_a_prediction_error(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(_bounded.subprocess, "Popen", _RefusesFirst(errno.EFAULT, 99))
    monkeypatch.setattr(_bounded, "_SPAWN_PAUSES", (0.0, 0.0))
    predictor = CommandPredictor([sys.executable, "-c", "print(1)"], tmp_path)
    with pytest.raises(PredictionError, match=r"command could not be started: .*Bad address"):
        predictor._run(_case())


def test_a_missing_command_is_not_retried(tmp_path: Path, monkeypatch):
    stand_in = _RefusesFirst(errno.ENOENT, 0)
    monkeypatch.setattr(_bounded.subprocess, "Popen", stand_in)
    predictor = CommandPredictor([str(tmp_path / "absent")], tmp_path)
    with pytest.raises(PredictionError, match="command not found"):
        predictor._run(_case())
    assert stand_in.calls == 1


def _case() -> Any:
    return make_case("sql", gold="SELECT 1", question="one?")
