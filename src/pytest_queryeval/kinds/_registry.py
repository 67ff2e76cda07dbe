"""Which kinds exist and what each declares: a leaf (it imports nothing of the package), so
that the case model and the modules above it ask a kind what it can do without a kind name
of their own and without an import cycle (``model`` imports it lazily; :mod:`.` imports
``model``).

A kind's capabilities are class attributes of its object, all optional (False when a kind,
such as a ``pytest_queryeval_kinds`` one, does not declare them):

``gold_alternatives``
    a list ``gold:`` is several acceptable golds, the best scoring one wins (SQL, SPARQL);
    elsewhere a list is one gold value (a JSON array).
``gold_by_dialect``
    a mapping ``gold:`` is one gold per SQL dialect, the datasource's chosen (SQL).
``conversation``
    a case is a ``conversation:`` whose turns carry the targets and may carry inline
    predictions (SDMX): predictors receive its turns, reports show the turns' targets.
``json_answers``
    a prediction is a JSON value: a text the model returns is parsed when it is JSON (JSON,
    SDMX).
"""

from __future__ import annotations

import importlib
from typing import Literal

#: The capabilities a kind may declare (see the module docstring).
Capability = Literal["gold_alternatives", "gold_by_dialect", "conversation", "json_answers"]

#: Built-in kinds as ``module:Class`` so that heavy imports stay lazy.
KIND_CLASSES: dict[str, str] = {
    "sql": "pytest_queryeval.kinds.sql:SqlKind",
    "sparql": "pytest_queryeval.kinds.sparql:SparqlKind",
    "json": "pytest_queryeval.kinds.json:JsonKind",
    "sdmx": "pytest_queryeval.kinds.sdmx:SdmxKind",
}

_instances: dict[str, object] = {}
#: Kinds registered by plugins or conftests (``pytest_queryeval_kinds``).
_extra: dict[str, object] = {}


def register(name: str, kind: object) -> None:
    """Add a kind (an instance or a class) under ``name``; later registrations win."""
    _extra[name] = kind
    _instances.pop(name, None)


def unregister(name: str) -> None:
    """Forget a registered kind (a session's conftest kinds must not leak into the next)."""
    _extra.pop(name, None)
    _instances.pop(name, None)


def known_kinds() -> list[str]:
    return sorted(set(KIND_CLASSES) | set(_extra))


def kind_object(name: str) -> object:
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
    return inst


def declares(kind: str, capability: Capability) -> bool:
    """Whether the kind named ``kind`` declares ``capability``; False for an unknown or
    unimportable kind (its cases report what is wrong with it)."""
    try:
        return getattr(kind_object(kind), capability, False) is True
    except (KeyError, ImportError):
        return False
