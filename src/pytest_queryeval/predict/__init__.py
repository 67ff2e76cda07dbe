"""Prediction sources: inline, file, python, http, command and openai."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import PredictionError
from .base import DEFAULT_MAX_BYTES, Prediction, Predictor

__all__ = ["Prediction", "Predictor", "make_predictor", "predictor_from_cli"]


def make_predictor(spec: dict[str, Any], base: Path, search: list[Path],
                   context: Any = None) -> Predictor:
    """Build a predictor from a ``predictions:`` mapping; paths are relative to ``base``.

    ``context`` (the session) gives the openai source its datasources (``{schema}``) and the
    suite's other cases (few-shot examples).
    """
    source = spec.get("source")
    if source == "file":
        from .file import FilePredictor

        if not isinstance(spec.get("path"), str):
            raise PredictionError("file predictions need a path")
        return FilePredictor((base / spec["path"]).resolve())
    if source == "python":
        from .python import PythonPredictor

        target = spec.get("function") or spec.get("callable")
        if not isinstance(target, str):
            raise PredictionError("python predictions need function: module:function")
        return PythonPredictor(target, [base, *search])
    if source == "http":
        from .http import HttpPredictor

        return HttpPredictor(spec)
    if source == "openai":
        from .chat import ChatPredictor

        return ChatPredictor(spec, context)
    if source == "command":
        from .command import CommandPredictor

        command = spec.get("command")
        if not isinstance(command, str | list):
            raise PredictionError("command predictions need command: a string or a list")
        from .base import extract_mode, positive_number

        return CommandPredictor(command, base, positive_number(spec, "timeout", 60.0),
                                int(positive_number(spec, "max_bytes", DEFAULT_MAX_BYTES)),
                                extract_mode(spec))
    raise PredictionError(f"unknown predictions source {source!r}")


def predictor_from_cli(value: str, invocation_dir: Path) -> Predictor:
    """``--queryeval-predictions``: an existing file path, else ``module:function``."""
    path = (invocation_dir / value).resolve()
    if path.exists() or ":" not in value or value.endswith((".jsonl", ".json", ".yaml", ".yml")):
        from .file import FilePredictor

        return FilePredictor(path)
    from .python import PythonPredictor

    return PythonPredictor(value, [invocation_dir])
