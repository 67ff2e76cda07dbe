"""The ``judge:`` block: which model judges, how, and how often (issue 26 item 1).

Written in ``queryeval.yaml`` and overridable key by key in a case file's header and in a case
(suite < file < case, as thresholds are); ``judge: false`` in a file or case turns it off
there. Every key is checked here, once per layer, so a wrong key or value is one message
naming the file, line and key before any case runs (the suite's) or as the case's own error
(a file's or case's), never a failure of the model call in the middle of a run.

The model is named the way ``predictions: {source: openai}`` names one (``model``,
``base_url``, ``api_key`` from the environment, ``temperature``, ``seed``, ``timeout``,
``retries``, ``concurrency``), so a team points both at the same server.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeGuard

from ..predict.pricing import PRICE_KEYS, Price

#: Keys of ``judge:``.
JUDGE_KEYS = frozenset({
    "model", "base_url", "api_key", "temperature", "seed", "timeout", "retries", "backoff",
    "max_tokens", "concurrency", "pricing", "prompt", "when", "votes", "max_calls", "pins",
    "min_kappa", "labels", "response_format", "blind_check",
})
#: ``when:``: ``failures`` asks only where execution failed and both queries executed (the
#: measured best design); ``always`` also challenges passes (coincidental matches).
WHEN = ("failures", "always")
#: ``response_format:``: how the server is told the answer's structure. ``json_object`` sends
#: the schema the way llama.cpp's server and vLLM take it; ``json_schema`` the way OpenAI's
#: API takes it; ``none`` sends nothing (the reply is still parsed strictly).
RESPONSE_FORMATS = ("json_object", "json_schema", "none")
#: The default pin file, beside the ``queryeval.yaml`` that declares the judge.
DEFAULT_PINS = "queryeval-judge-pins.jsonl"
#: Keys holding paths, resolved against the directory of the file that writes them.
PATH_KEYS = ("pins", "labels")


@dataclass(frozen=True)
class JudgeSpec:
    """One case's judge, resolved (every layer merged, every value checked)."""

    model: str
    base_url: str | None = None
    api_key: str | None = None
    temperature: float = 0.0
    seed: int | None = None
    timeout: float = 120.0
    retries: int = 2
    backoff: float = 1.0
    max_tokens: int = 300
    concurrency: int = 4
    price: Price | None = None
    #: A replacement template (the built-in SQL/SPARQL one when None).
    prompt: str | None = None
    when: str = "failures"
    votes: int = 1
    max_calls: int | None = None
    pins: Path | None = None
    min_kappa: float | None = None
    labels: Path | None = None
    response_format: str = "json_object"
    #: ``blind_check: true``: a would-be rescue is judged a second time, blinded (the
    #: prediction's text withheld, its column names and unknown text cells masked), and is
    #: taken only when both accept (issue 50 item 6: a paraphrase planted in the prediction
    #: cannot reach the second judgement).
    blind_check: bool = False
    #: Where the block was written (``file:line``), for messages about it.
    where: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def chat_spec(self) -> dict[str, Any]:
        """The ``openai`` source's spec for the same model (its client, retries and limits)."""
        spec: dict[str, Any] = {"source": "openai", "model": self.model,
                                "temperature": self.temperature, "timeout": self.timeout,
                                "retries": self.retries, "backoff": self.backoff,
                                "max_tokens": self.max_tokens, "concurrency": self.concurrency,
                                "api_key": self.api_key or os.environ.get("OPENAI_API_KEY")
                                or "none"}
        if self.base_url is not None:
            spec["base_url"] = self.base_url
        if self.seed is not None:
            spec["seed"] = self.seed
        return spec


Locate = Callable[[Any, Any], str]


def check_layer(block: object, where: str, locate: Locate, base: Path,
                ) -> tuple[dict[str, Any] | None, list[str]]:
    """One layer's ``judge:`` (a mapping, or ``false``/``off`` to turn the judge off there):
    its values with paths made absolute against ``base``, and located problems. ``where`` is
    ``file:line`` of the ``judge`` key; ``locate(mapping, key)`` is ``file:line`` of a key."""
    if block is False or block == "off":
        return {"__off__": True}, []
    if not isinstance(block, Mapping):
        return None, [f"{where}: judge: must be a mapping (model:, base_url:, when:, ...) or "
                      f"false, not {type(block).__name__}"]
    problems: list[str] = []
    out: dict[str, Any] = {}
    for key, value in block.items():
        loc = f"{locate(block, key)}: judge.{key}"
        if key not in JUDGE_KEYS:
            import difflib

            close = difflib.get_close_matches(str(key), sorted(JUDGE_KEYS), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            problems.append(f"{loc}: unknown key{hint} "
                            f"(allowed: {', '.join(sorted(JUDGE_KEYS))})")
            continue
        problem = _value_problem(str(key), value)
        if problem:
            problems.append(f"{loc}: {problem}")
            continue
        if key in PATH_KEYS:
            problem = _file_problem(base / str(value))
            if problem:
                problems.append(f"{loc}: {value!r}: {problem}")
                continue
            value = str((base / str(value)).resolve())
        if key == "pricing":
            value = Price(float(value["input_per_mtok"]), float(value["output_per_mtok"]))
        out[str(key)] = value
    return out, problems


def _file_problem(path: Path) -> str | None:
    """Why ``pins:`` or ``labels:`` can never be read or written as a file (a FIFO, a device,
    a socket, a directory, a name the system refuses), or None; a file not there yet is fine
    (a pin file is created by the first run). Found here, before any case runs, where the
    datasources' paths are: the file itself is read later through :mod:`.._util.safefile`."""
    from .._util import safefile

    problem = safefile.unreadable(path)
    if problem is None and safefile.path_problem(path) is None and os.path.isdir(path):
        problem = "a directory, not a regular file (JSON Lines, one verdict a line)"
    return problem


def _number(value: object) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool) \
        and math.isfinite(value)


def _whole(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _value_problem(key: str, value: object) -> str | None:
    """What is wrong with one value, or None."""
    if key in ("model", "prompt", "pins", "labels", "api_key"):
        if not isinstance(value, str) or not value.strip():
            return f"must be a non-empty string, not {value!r}"
        if key == "prompt":
            missing = [f for f in ("{question}", "{gold}", "{predicted}") if f not in value]
            if missing:
                return (f"a judge prompt must show the question and both queries: it lacks "
                        f"{', '.join(missing)}")
        return None
    if key == "base_url":
        return None if isinstance(value, str) and "://" in value else \
            "must be the URL of an OpenAI-compatible API (http(s)://host/v1)"
    if key in ("temperature", "backoff"):
        return None if _number(value) and value >= 0 else f"must be a number >= 0, not {value!r}"
    if key == "timeout":
        return None if _number(value) and value > 0 else f"must be a number > 0, not {value!r}"
    if key == "seed":
        return None if _whole(value) else f"must be a whole number, not {value!r}"
    if key in ("retries",):
        return None if _whole(value) and value >= 0 else \
            f"must be a whole number >= 0, not {value!r}"
    if key in ("votes", "concurrency", "max_tokens"):
        return None if _whole(value) and value >= 1 else \
            f"must be a whole number >= 1, not {value!r}"
    if key == "max_calls":
        return None if _whole(value) and value >= 0 else \
            f"must be a whole number >= 0 (the model calls one run may make), not {value!r}"
    if key == "when":
        return None if value in WHEN else f"must be one of {', '.join(WHEN)}, not {value!r}"
    if key == "blind_check":
        return None if isinstance(value, bool) else f"must be true or false, not {value!r}"
    if key == "response_format":
        return None if value in RESPONSE_FORMATS else \
            f"must be one of {', '.join(RESPONSE_FORMATS)}, not {value!r}"
    if key == "min_kappa":
        return None if _number(value) and -1 <= value <= 1 else \
            f"must be a Cohen's kappa between -1 and 1, not {value!r}"
    if key == "pricing" and (not isinstance(value, Mapping) or set(map(str, value)) != set(
            PRICE_KEYS) or not all(_number(v) and v >= 0 for v in value.values())):
        return ("must be {input_per_mtok: x, output_per_mtok: y} (USD per million tokens "
                    "of the judge model)")
    return None


def merge(*layers: dict[str, Any] | None) -> dict[str, Any] | None:
    """Layers merged key by key, later ones winning; None when the judge is off at the end
    (a layer's ``false``) or no layer asks for it."""
    out: dict[str, Any] | None = None
    for layer in layers:
        if layer is None:
            continue
        if layer.get("__off__"):
            out = None
            continue
        out = {**(out or {}), **layer}
    return out


def resolve(merged: dict[str, Any], where: str) -> tuple[JudgeSpec | None, str | None]:
    """The spec of merged layers, or the problem that keeps it from being one."""
    if "model" not in merged:
        return None, f"{where}: judge.model: missing: the judge needs the model it asks"
    values = {k: v for k, v in merged.items() if k in JUDGE_KEYS and k != "pricing"}
    for key in PATH_KEYS:
        if key in values:
            values[key] = Path(values[key])
    values["price"] = merged.get("pricing")
    values["where"] = where
    if "pins" not in values and merged.get("__pins_default__"):
        values["pins"] = Path(merged["__pins_default__"])
    if values.get("min_kappa") is not None and "labels" not in values:
        return None, (f"{where}: judge.min_kappa: needs labels: (the expert-labelled pairs the "
                      "judge's kappa is measured on)")
    return JudgeSpec(**values), None
