"""Prediction sources: inline, file, python, http, command and openai."""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import PredictionError
from .base import Prediction, Predictor

__all__ = ["Prediction", "Predictor", "describe_predictions", "make_predictor",
           "predictor_from_cli"]


#: ``source:`` value -> ``"module:Class"``, imported only when a suite names it (the ``openai``
#: source pulls in httpx). Each class builds itself with ``from_spec(spec, base, search,
#: context)``, as data sources (``sources.SOURCE_TYPES``) and kinds (``kinds.KIND_CLASSES``) do.
PREDICTOR_SOURCES: dict[str, str] = {
    "file": "pytest_queryeval.predict.file:FilePredictor",
    "python": "pytest_queryeval.predict.python:PythonPredictor",
    "http": "pytest_queryeval.predict.http:HttpPredictor",
    "openai": "pytest_queryeval.predict.chat:ChatPredictor",
    "command": "pytest_queryeval.predict.command:CommandPredictor",
}


def make_predictor(spec: dict[str, Any], base: Path, search: list[Path],
                   context: Any = None) -> Predictor:
    """Build a predictor from a ``predictions:`` mapping; paths are relative to ``base``.

    ``context`` (the evaluator) gives the openai source its datasources (``{schema}``) and the
    suite's other cases (few-shot examples).
    """
    source = spec.get("source")
    if not isinstance(source, str) or source not in PREDICTOR_SOURCES:
        raise PredictionError(f"unknown predictions source {source!r}")
    module, _, cls_name = PREDICTOR_SOURCES[source].partition(":")
    cls = getattr(importlib.import_module(module), cls_name)
    return cls.from_spec(spec, base, search, context)  # type: ignore[no-any-return]


def predictor_from_cli(value: str, invocation_dir: Path) -> Predictor:
    """``--queryeval-predictions``: an existing file path, else ``module:function``."""
    path = (invocation_dir / value).resolve()
    if path.exists() or ":" not in value or value.endswith((".jsonl", ".json", ".yaml", ".yml")):
        from .file import FilePredictor

        return FilePredictor(path)
    from .python import PythonPredictor

    return PythonPredictor(value, [invocation_dir])


def describe_predictions(spec: Mapping[str, Any] | None) -> str | None:
    """A suite's ``predictions:`` as one short line for the report (``file:preds.jsonl``)."""
    if not spec:
        return None
    source = str(spec.get("source"))
    for key in ("path", "function", "callable", "url", "command", "model"):
        value = spec.get(key)
        if isinstance(value, str):
            if key == "url":  # its query string may carry tokens: never shown
                from ..secrets import mask_url

                value = mask_url(value.split("?", 1)[0])
            return f"{source}:{value}"
        if isinstance(value, list):
            return f"{source}:{' '.join(map(str, value))}"
    return source
