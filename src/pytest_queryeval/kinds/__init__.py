"""The registry of query kinds; each kind's module is imported only when a case needs it."""

from __future__ import annotations

import importlib
from typing import Any

from ..model import Kind

#: Built-in kinds as ``module:Class`` so that heavy imports stay lazy.
KIND_CLASSES: dict[str, str] = {
    "sql": "pytest_queryeval.kinds.sql:SqlKind",
    "sparql": "pytest_queryeval.kinds.sparql:SparqlKind",
    "json": "pytest_queryeval.kinds.json:JsonKind",
    "sdmx": "pytest_queryeval.kinds.sdmx:SdmxKind",
}

#: Informational timing metrics every kind records (thresholds use ``{max: seconds}``).
TIMING_METRICS = frozenset({"gold_seconds", "predicted_seconds", "prediction_seconds"})
#: What a prediction source's usage report records for every kind (lower is better too).
USAGE_METRICS = frozenset({"prompt_tokens", "completion_tokens", "cost_usd"})
#: The metrics every kind may carry beside its own (thresholds use ``{max: x}``).
RECORDED_METRICS = TIMING_METRICS | USAGE_METRICS

_instances: dict[str, Kind] = {}
#: Kinds registered by plugins or conftests (``pytest_queryeval_kinds``).
_extra: dict[str, Any] = {}


def register(name: str, kind: Any) -> None:
    """Add a kind (an instance or a class) under ``name``; later registrations win."""
    _extra[name] = kind
    _instances.pop(name, None)


def unregister(name: str) -> None:
    """Forget a registered kind (a session's conftest kinds must not leak into the next)."""
    _extra.pop(name, None)
    _instances.pop(name, None)


def known_kinds() -> list[str]:
    return sorted(set(KIND_CLASSES) | set(_extra))


def get_kind(name: str) -> Kind:
    """The (cached) kind instance; raises KeyError for an unknown kind name."""
    if name in _instances:
        return _instances[name]
    if name in _extra:
        obj = _extra[name]
        inst = obj() if isinstance(obj, type) else obj
    elif name in KIND_CLASSES:
        module, _, cls = KIND_CLASSES[name].partition(":")
        inst = getattr(importlib.import_module(module), cls)()
    else:
        raise KeyError(name)
    _instances[name] = inst
    return inst  # type: ignore[no-any-return]
