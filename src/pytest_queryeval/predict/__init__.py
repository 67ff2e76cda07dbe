"""Prediction sources: inline, file, python, http, command and openai."""

from __future__ import annotations

import importlib
from collections import ChainMap
from collections.abc import KeysView, Mapping
from pathlib import Path
from typing import Any, cast

from ..errors import PredictionError
from ..model import Context
from .base import Prediction, Predictor

__all__ = ["INLINE", "PREDICTOR_SOURCES", "SOURCE_NAMES", "Prediction", "Predictor",
           "describe_predictions", "fixed_source", "make_predictor", "predictor_from_cli",
           "register_source", "source_class", "spec_paths", "unregister_source"]


#: ``source:`` value -> ``"module:Class"``, imported only when a suite names it (the ``openai``
#: source pulls in httpx). Each class builds itself with ``from_spec(spec, base, search,
#: context)``, as data sources (``sources.SOURCE_TYPES``) and kinds (``kinds.KIND_CLASSES``) do,
#: and declares what the engine and the reports ask of it (:class:`.base.Predictor`): adding
#: a source is its module and one line here.
PREDICTOR_SOURCES: dict[str, type[Predictor] | str] = {
    "file": "pytest_queryeval.predict.file:FilePredictor",
    "python": "pytest_queryeval.predict.python:PythonPredictor",
    "http": "pytest_queryeval.predict.http:HttpPredictor",
    "openai": "pytest_queryeval.predict.chat:ChatPredictor",
    "command": "pytest_queryeval.predict.command:CommandPredictor",
}
#: ``source: inline``: every case carries its own ``predicted:``; no source is built.
INLINE = "inline"
#: Sources registered by plugins and conftests (``pytest_queryeval_prediction_sources``, whose
#: default implementation returns :data:`PREDICTOR_SOURCES`).
_registered: dict[str, type[Predictor] | str] = {}
_SOURCES: ChainMap[str, type[Predictor] | str] = ChainMap(_registered, PREDICTOR_SOURCES)
#: Every ``source:`` a suite may name (``config`` checks it): the registered ones and
#: :data:`INLINE`. A view of the registries, so a source added to them is accepted with no
#: second list to keep in step.
SOURCE_NAMES: KeysView[str] = ChainMap[str, type[Predictor] | str](_SOURCES, {INLINE: ""}).keys()


def register_source(name: str, source: type[Predictor] | str) -> None:
    """Add prediction source ``name`` (its class or ``module:Class``); the built-in entry
    registered again changes nothing."""
    if PREDICTOR_SOURCES.get(name) != source:
        _registered[name] = source


def unregister_source(name: str) -> None:
    """Forget a registered source (a session's conftest sources must not leak into the next)."""
    _registered.pop(name, None)


def source_class(source: object) -> type[Predictor] | None:
    """The class registered for a ``source:`` value (its module imported now); None for
    ``inline``, a missing or an unknown name (the case says so when it runs)."""
    if not isinstance(source, str) or source not in _SOURCES:
        return None
    entry = _SOURCES[source]
    if not isinstance(entry, str):
        return entry
    module, _, cls_name = entry.partition(":")
    return cast("type[Predictor]", getattr(importlib.import_module(module), cls_name))


def fixed_source(spec: Mapping[str, object] | None) -> bool:
    """Whether a ``predictions:`` mapping names a fixed source (:attr:`.Predictor.fixed`),
    asked before its predictor is built."""
    cls = source_class(spec.get("source")) if spec else None
    return cls is not None and cls.fixed


def spec_paths(spec: Mapping[str, object] | None, base: Path) -> list[Path]:
    """The files a ``predictions:`` mapping names (its source's ``path_keys``), joined to
    ``base`` as written (not resolved), without building the source."""
    cls = source_class(spec.get("source")) if spec else None
    if spec is None or cls is None:
        return []
    return [base / value for key in cls.path_keys
            if isinstance(value := spec.get(key), str)]


def make_predictor(spec: dict[str, Any], base: Path, search: list[Path],
                   context: Context | None = None) -> Predictor:
    """Build a predictor from a ``predictions:`` mapping; paths are relative to ``base``.

    ``context`` (the evaluator) gives the openai source its datasources (``{schema}``) and the
    suite's other cases (few-shot examples).
    """
    cls = source_class(spec.get("source"))
    if cls is None:
        raise PredictionError(f"unknown predictions source {spec.get('source')!r}")
    return cls.from_spec(spec, base, search, context)


def predictor_from_cli(value: str, invocation_dir: Path) -> Predictor:
    """``--queryeval-predictions``: an existing file path, else ``module:function``."""
    path = (invocation_dir / value).resolve()
    if path.exists() or ":" not in value or value.endswith((".jsonl", ".json", ".yaml", ".yml")):
        from .file import FilePredictor

        return FilePredictor(path)
    from .python import PythonPredictor

    return PythonPredictor(value, [invocation_dir])


def describe_predictions(spec: Mapping[str, Any] | None) -> str | None:
    """A suite's ``predictions:`` as one short line for the report (``file:preds.jsonl``).

    The source's class says which keys name it (:attr:`.base.Predictor.shown_keys`, then
    :attr:`.base.Predictor.path_keys`): a source a plugin registers is described as a
    built-in one is, with no list of keys here to keep in step. A URL's query string may carry
    tokens: never shown, and a password in it is masked."""
    if not spec:
        return None
    source = str(spec.get("source"))
    try:
        cls = source_class(spec.get("source"))
    except (ImportError, AttributeError):  # the case says so when it runs
        cls = None
    if cls is None:
        return source
    for key in (*getattr(cls, "shown_keys", ()), *cls.path_keys):
        value = spec.get(key)
        if isinstance(value, str):
            if "://" in value:
                from .._util.secrets import mask_url

                value = mask_url(value.split("?", 1)[0])
            return f"{source}:{value}"
        if isinstance(value, list):
            return f"{source}:{' '.join(map(str, value))}"
    return source
