"""The registry of query kinds; each kind's module is imported only when a case needs it.
What a kind declares (:data:`Capability`) is asked with :func:`declares`, never by its name
outside kinds/ (:mod:`..kindregistry`)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import cast

from ..kindregistry import (
    KIND_CLASSES,
    Capability,
    declared_names,
    declared_text,
    declares,
    declaring,
    kind_object,
    known_kinds,
    loaded_kinds,
    register,
    unregister,
)
from ..metricnames import (
    ABSTENTION_METRICS,
    AGENT_METRICS,
    CONVERSATION_METRICS,
    RECORDED_METRICS,
    REPEAT_METRICS,
)
from ..model import Kind

__all__ = ["KIND_CLASSES", "Capability", "declared_metrics", "declared_names", "declared_text",
           "declares", "declaring", "get_kind", "is_metric", "known_kinds", "loaded_kinds", "register",
           "unregister"]


def get_kind(name: str) -> Kind:
    """The (cached) kind instance; raises KeyError for an unknown kind name."""
    return cast(Kind, kind_object(name))


def is_metric(kind: str, name: str, custom: Iterable[str] = ()) -> bool:
    """Whether ``name`` is a metric of ``kind``: one every kind records (timing, usage,
    repeat statistics), one of ``custom`` (``pytest_queryeval_metric_names``) or one the kind
    itself says it scores. An unknown or unimportable kind has none."""
    if name in RECORDED_METRICS or name in REPEAT_METRICS or name in ABSTENTION_METRICS \
            or name in AGENT_METRICS or name in custom:
        return True
    try:
        if name in CONVERSATION_METRICS and declares(kind, "conversation_turns"):
            return True
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
