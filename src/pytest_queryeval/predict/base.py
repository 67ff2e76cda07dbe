"""The predictor contract and helpers shared by the prediction sources."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..errors import PredictionError
from ..kinds._registry import declares
from ..model import Case

#: Default ``max_bytes`` of the http and command sources: the most one answer (body, stdout)
#: may hold, counted while it is read. A prediction is a query or a small JSON object.
DEFAULT_MAX_BYTES = 16 * 1024 * 1024


def positive_number(spec: dict[str, Any], key: str, default: float) -> float:
    """``spec[key]`` as a positive number (PredictionError naming the key otherwise)."""
    from ..numeric import option_limit

    try:
        return float(option_limit(key, spec.get(key, default)))
    except ValueError as exc:
        raise PredictionError(f"predictions {key} {exc}") from None


@dataclass
class Prediction:
    value: Any
    #: Wall time of obtaining the prediction (HTTP round trip, callable, command), if measured.
    seconds: float | None = None
    #: Extra timing or metadata the source reported (recorded, never gated).
    details: dict[str, Any] = field(default_factory=dict)
    #: What the request cost, as the source reported it: ``prompt_tokens``,
    #: ``completion_tokens``, ``cost_usd`` (numbers; empty when the source reports none).
    #: Recorded as metrics; ``cost_usd`` is otherwise priced with the suite's ``pricing:``.
    usage: dict[str, float] = field(default_factory=dict)
    #: The model that answered, the key of its price in ``pricing:`` (None: the suite's
    #: ``model:`` label is used).
    model: str | None = None
    #: A note for the case's failure reason, should the query fail (see :func:`extracted`).
    hint: str | None = None


class Predictor(Protocol):
    """A prediction source. Live sources (python, http, command) are called from the
    prediction pool's threads, several cases at once (``concurrency:``): ``predict`` must be
    safe to call concurrently, and each call makes one request."""

    def predict(self, case: Case) -> Prediction:
        """Raise :class:`~pytest_queryeval.errors.PredictionError` when none can be had."""
        ...


def get_path(data: Any, path: str | None) -> Any:
    """Follow ``a.b.0.c`` into nested JSON; raises KeyError naming the missing step."""
    if not path:
        return data
    node = data
    for step in path.split("."):
        if isinstance(node, list):
            try:
                node = node[int(step)]
            except (ValueError, IndexError):
                raise KeyError(f"no item {step!r} in a list of {len(node)}") from None
        elif isinstance(node, dict):
            if step not in node:
                raise KeyError(f"no key {step!r} (keys: {', '.join(map(str, list(node)[:10]))})")
            node = node[step]
        else:
            raise KeyError(f"cannot take {step!r} of a {type(node).__name__}")
    return node


def maybe_json(text: str) -> Any:
    """Structured predictions (JSON objects, SDMX selections) may arrive as JSON text."""
    stripped = text.strip()
    if stripped[:1] in ("{", "["):
        try:
            return json.loads(stripped)
        except ValueError:
            return text
    return text


#: The token counts a source may report, under the names of the OpenAI API's ``usage``.
USAGE_KEYS = ("prompt_tokens", "completion_tokens")


def read_usage(data: Any) -> dict[str, float]:
    """``{prompt_tokens, completion_tokens, cost_usd}`` from a ``usage`` mapping (an
    OpenAI-shaped reply, a command's or a file's record). Token counts that are not whole
    non-negative numbers, and a cost that is not a non-negative number, are left out rather
    than guessed."""
    if not isinstance(data, dict):
        return {}
    out: dict[str, float] = {}
    for key in (*USAGE_KEYS, "cost_usd"):
        value = data.get(key)
        if isinstance(value, bool) or not isinstance(value, int | float):
            continue
        if value >= 0 and math.isfinite(value) and (key == "cost_usd" or float(value).is_integer()):
            out[key] = float(value)
    return out


#: ``extract:`` of the http and command sources: ``fenced`` takes the query out of the
#: answer's fenced code block, as the openai source does (:func:`.prompt.extract_query`).
EXTRACT_MODES = ("fenced",)
#: Added to the failure reason of an answer that holds a fenced block nobody took out.
FENCE_HINT = ("the answer contains a fenced code block; set extract: fenced in predictions: "
              "to score the query inside it")


def extract_mode(spec: dict[str, Any]) -> str | None:
    """``spec["extract"]``, checked (PredictionError naming the key), or None."""
    value = spec.get("extract")
    if value is None or value in EXTRACT_MODES:
        return value
    raise PredictionError(f"predictions.extract: must be {' or '.join(EXTRACT_MODES)} (the "
                          f"query in the answer's fenced code block), not {value!r}")


def extracted(prediction: Prediction, kind: str, mode: str | None) -> Prediction:
    """The answer of a chat-style service behind ``http`` or ``command``: with ``extract:
    fenced``, the query of its fenced block (how it was found in ``details.extraction``);
    without, an answer holding a fenced block gets :data:`FENCE_HINT`, since "'Here' does not
    start an SQL statement" alone does not say what to change."""
    value = prediction.value
    if not isinstance(value, str):
        return prediction
    from .prompt import extract_query, has_fenced_block

    if mode == "fenced":
        query, how = extract_query(value, kind)
        prediction.details["extraction"] = how
        prediction.value = maybe_json(query) if declares(kind, "json_answers") else query
    elif has_fenced_block(value):
        prediction.hint = FENCE_HINT
    return prediction
