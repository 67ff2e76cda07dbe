"""Several models in one run: ``predictions:`` as a mapping of model names to sources, or
``--queryeval-predictions NAME=PATH`` repeated, fans every case that asks a source out into
one case per model (``<id>[<model>]``, a marker per model, ``model`` on its record).

Why a separate module: the fan-out is a layer over the case reader (each model's case is read
exactly as a single-source case is, then given its model's source), so the reader itself
stays as it was for suites with one source.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ..model import Case


class SuiteModels(Protocol):
    """What :func:`describe_models` reads of a suite config (:class:`.config.SuiteConfig`)."""

    models: dict[str, dict[str, Any]]

#: A model name: it becomes part of a pytest id (``q1[model-a]``) and of a marker.
MODEL_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.+-]*$")
_NOT_IDENT = re.compile(r"[^A-Za-z0-9_]")

SpecParser = Callable[[object, str], tuple[dict[str, Any] | None, list[str]]]


def is_models_mapping(spec: object) -> bool:
    """Whether ``predictions:`` maps model names to sources rather than being one source: a
    non-empty mapping with no ``source`` key at its top level whose values are mappings."""
    return isinstance(spec, Mapping) and bool(spec) and "source" not in spec and all(
        isinstance(v, Mapping) for v in spec.values())


def parse_models(spec: Mapping[Any, Any], locate: Callable[[object], str], parse_one: SpecParser,
                 ) -> tuple[dict[str, dict[str, Any]], dict[str, list[str]]]:
    """Each model's source (parsed by ``parse_one`` exactly as a single ``predictions:`` is)
    and each model's located problems (``locate``: the ``file:line`` of a model's key). A bad
    name is a problem of that model's cases."""
    models: dict[str, dict[str, Any]] = {}
    errors: dict[str, list[str]] = {}
    for name, one in spec.items():
        key = str(name)
        where = f"{locate(name)}: predictions.{key}"
        parsed, problems = parse_one(one, where)
        if not MODEL_NAME.match(key):
            problems.insert(0, f"{where}: a model name is letters, digits and _ . + - "
                               "(it becomes part of the case id and a marker)")
        models[key] = parsed or {}
        errors[key] = problems
    return models, errors


def marker_name(model: str) -> str:
    """The pytest marker of a model: its name with every character other than an ASCII
    letter, a digit or ``_`` made ``_`` (``gpt-4o`` → ``gpt_4o``), prefixed ``model_`` when it
    would not start with a letter (``4o`` → ``model_4o``, ``_x`` and ``-x`` → ``model__x``:
    pytest refuses a marker that starts with ``_``, and ``-m`` one that starts with a digit),
    so ``-m gpt_4o`` selects its cases."""
    name = _NOT_IDENT.sub("_", model)
    return name if name[:1].isascii() and name[:1].isalpha() else f"model_{name}"


def cli_models(values: list[str], invocation_dir: Path) -> dict[str, dict[str, Any]] | None:
    """``--queryeval-predictions`` given as ``NAME=PATH`` (or ``NAME=module:function``) each
    time: the models' sources; None when the option names one source (today's meaning).
    Raises ValueError for a mix, a repeated name or a bad name."""
    named = [v for v in values if _named(v, invocation_dir)]
    if not named:
        if len(values) > 1:
            raise ValueError("--queryeval-predictions given several times must name each "
                             "source's model: NAME=PATH")
        return None
    if len(named) != len(values):
        raise ValueError("--queryeval-predictions: either one source (PATH) or one NAME=PATH "
                         "per model, not both")
    out: dict[str, dict[str, Any]] = {}
    for value in values:
        name, _, target = value.partition("=")
        if not MODEL_NAME.match(name):
            raise ValueError(f"--queryeval-predictions {value}: a model name is letters, "
                             "digits and _ . + -")
        if name in out:
            raise ValueError(f"--queryeval-predictions: model {name!r} is named twice")
        path = (invocation_dir / target).resolve()
        if path.exists() or ":" not in target or target.endswith(
                (".jsonl", ".json", ".yaml", ".yml")):
            out[name] = {"source": "file", "path": str(path)}
        else:
            out[name] = {"source": "python", "function": target}
    return out


def _named(value: str, invocation_dir: Path) -> bool:
    """``NAME=...`` with a name before the ``=``, unless the whole value is an existing file."""
    name, eq, _ = value.partition("=")
    return bool(eq and name and "/" not in name and not (invocation_dir / value).exists())


def assign(case: Case, model: str, sources: Mapping[str, dict[str, Any]],
           errors: Mapping[str, list[str]]) -> Case:
    """``case`` as model ``model``'s: its id ``<id>[<model>]``, its source (of ``sources``,
    the suite's models) and its problems."""
    case.fanned_from = case.fanned_from or case.id
    case.id = f"{case.id}[{model}]"
    case.model = model
    case.model_label = model
    case.prediction_source = sources.get(model) or None
    case.prediction_errors = list(errors.get(model) or [])
    return case


def describe_models(configs: Iterable[SuiteModels], cli: Mapping[str, Mapping[str, Any]],
                    rootdir: Path) -> list[str]:
    """The models a run compared, for the report's ``run.predictions``: ``model-a=file:a.jsonl``
    each (the command line's, else each suite config's ``predictions:`` models)."""
    from .._util.paths import display
    from ..predict import describe_predictions

    if cli:
        return [f"{name}={spec['source']}:" + (
            display(Path(str(spec["path"])), rootdir) if "path" in spec
            else str(spec.get("function"))) for name, spec in cli.items()]
    return [f"{name}={describe_predictions(spec) or '?'}"
            for cfg in configs for name, spec in cfg.models.items()]
