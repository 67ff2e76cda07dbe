"""What the query kinds (SQL, SPARQL) share: reading the predicted text and the limits."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import ConfigError, PredictionError
from ..model import MISSING, Case


def prediction_text(prediction: Any, case: Case, language: str, keys: tuple[str, ...]) -> str | None:
    """The predicted query: a string, or a mapping holding it under one of ``keys``.

    None when the case scores a recorded ``predicted_result`` instead of a query.
    """
    if prediction is MISSING or prediction is None:
        if case.predicted_result is not None:
            return None
        raise PredictionError(f"no predicted {language}")
    if isinstance(prediction, dict):
        for key in keys:
            if isinstance(prediction.get(key), str):
                return str(prediction[key])
        raise PredictionError(f"a predicted mapping needs a '{keys[0]}' (or '{keys[1]}') string")
    if isinstance(prediction, str):
        return prediction
    raise PredictionError(f"expected predicted {language} text, got {type(prediction).__name__}")


def limits(options: Mapping[str, Any]) -> dict[str, Any]:
    """``timeout`` (seconds) and ``max_rows`` overrides of a case; ConfigError names the key."""
    out: dict[str, Any] = {}
    for key in ("timeout", "max_rows"):
        if key in options:
            v = options[key]
            if isinstance(v, bool) or not isinstance(v, int | float) or v <= 0:
                raise ConfigError("must be a positive number", key=key)
            out[key] = float(v) if key == "timeout" else int(v)
    return out
