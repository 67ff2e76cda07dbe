"""The registry of query kinds; each kind's module is imported only when a case needs it."""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from typing import Any

from ..metricnames import RECORDED_METRICS, REPEAT_METRICS
from ..model import Kind

#: Built-in kinds as ``module:Class`` so that heavy imports stay lazy.
KIND_CLASSES: dict[str, str] = {
    "sql": "pytest_queryeval.kinds.sql:SqlKind",
    "sparql": "pytest_queryeval.kinds.sparql:SparqlKind",
    "json": "pytest_queryeval.kinds.json:JsonKind",
    "sdmx": "pytest_queryeval.kinds.sdmx:SdmxKind",
}

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


def is_metric(kind: str, name: str, custom: Iterable[str] = ()) -> bool:
    """Whether ``name`` is a metric of ``kind``: one every kind records (timing, usage,
    repeat statistics), one of ``custom`` (``pytest_queryeval_metric_names``) or one the kind
    itself says it scores. An unknown or unimportable kind has none."""
    if name in RECORDED_METRICS or name in REPEAT_METRICS or name in custom:
        return True
    try:
        return bool(get_kind(kind).is_metric(name))
    except (KeyError, ImportError):
        return False


def declared_metrics(kind: str) -> list[str]:
    """The metric names ``kind`` lists (its ``metric_names``), for did-you-mean hints; none
    for an unknown or broken kind (its cases report what is wrong with it)."""
    try:
        declared = getattr(get_kind(kind), "metric_names", None)
        names = declared() if callable(declared) else declared
        return list(names) if isinstance(names, Iterable) else []
    except Exception:
        return []
