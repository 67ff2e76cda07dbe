"""Suite configuration: the nearest ``queryeval.yaml`` files, merged parent to child.

Every problem is kept as a located message instead of raised. Problems of a data source or of
the predictions source fail only the cases that use them, so the rest of the session runs.
Problems of the suite-wide sections (``thresholds``, ``gates``, ``defaults``, unknown top-level
keys) and the metric names they use are kept per file in a :class:`LayerReport`: they would
change the verdict of every case or of the whole session, so the plugin turns them into one
usage error before any case runs (see :mod:`pytest_queryeval.suite.checks`).

Why one module of this size: every suite-wide section (datasources, predictions, thresholds,
gates, defaults, pricing, judge) is merged layer by layer by the same rules, and their
messages are located the same way; split, each part would re-import the others' helpers.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, cast

from .._util import numeric, safefile
from .._util.paths import display
from .._util.secrets import url_passwords
from .._util.wording import suggest
from .._yaml.yamlload import LocDict, LocList, load_file
from ..errors import ConfigError
from ..metricnames import PASS_HAT_K, PASS_K_GATES, PASS_RATE
from ..model import Threshold
from ..predict import SOURCE_NAMES
from ..predict.pricing import Price, parse_pricing
from ..rules.thresholds import parse_threshold
from ..sources.defined import define
from ..sources.keys import PATH_KEYS, plugin_key_problems, source_problems
from .models import is_models_mapping, parse_models

CONFIG_NAME = "queryeval.yaml"
SUITE_KEYS = frozenset({"datasources", "predictions", "thresholds", "gates", "defaults", "model",
                        "pricing", "neighbours", "judge", "record_only", "abstain_patterns",
                        "clarify_patterns", "abstention"})
PREDICTION_SOURCES = SOURCE_NAMES  # the registered sources and inline, one list
#: ``predictions:`` keys whose ``${VAR}`` values name the model under test rather than hide a
#: credential: they stay readable in the reports.
#: ``predictions: {failures: ...}``: what a prediction that times out or fails after its
#: retries is. ``error`` (infrastructure: never forgiven, blocks a baseline update) or
#: ``model`` (the model's failure: a regression or a known failure like a wrong answer).
PREDICTION_FAILURES = ("error", "model")
PUBLIC_PREDICTION_KEYS = frozenset({"model", "base_url"})
_ENV = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


@dataclass
class Datasource:
    name: str
    spec: dict[str, Any]
    file: str
    line: int
    errors: list[str] = field(default_factory=list)
    secrets: set[str] = field(default_factory=set)


@dataclass
class Gate:
    """A session-level bound over the cases under ``scope`` (the config file's directory)."""

    name: str
    metric: str  # a metric name, or "pass_rate"
    stat: str  # "mean", "total" or "pass_rate"
    limit: float
    scope: Path
    kind: str | None = None
    tag: str | None = None
    #: A gate that scores nothing fails, unless it says ``allow_empty: true``.
    allow_empty: bool = False
    #: ``>=`` (``mean:``, ``min:``: a floor) or ``<=`` (``max:``, ``total_max:``: a ceiling,
    #: for what is better low: latency, tokens, ``cost_usd``).
    op: str = ">="
    #: ``model:``: only the cases of that model (a run fanned out per model, :mod:`.models`)
    model: str | None = None
    #: ``k:`` of a ``pass_at_k`` / ``pass_hat_k`` gate: it bounds pass@k or pass^k of the
    #: repeated cases for that k (:mod:`..metrics.pass_k`); None: any other gate.
    k: int | None = None
    #: ``reviewed_only: true``: the gate leaves out the cases no person has reviewed
    #: (``reviewed: false``, mined by ``queryeval mine``): their golds are what production ran.
    reviewed_only: bool = False


@dataclass(frozen=True)
class MetricRef:
    """A metric name used by a suite file (checked against the kinds once they are known)."""

    metric: str
    where: str  #: ``file:line: key path``
    kind: str | None = None  #: a gate's ``kind:`` filter: the metric must belong to it
    gate: bool = False  #: a gate may also bound the pass rate


@dataclass
class LayerReport:
    """What one ``queryeval.yaml`` file asks that can only be checked once kinds are known,
    and its suite-wide problems (usage errors, reported once at the file's own line)."""

    problems: list[str] = field(default_factory=list)
    metrics: list[MetricRef] = field(default_factory=list)
    #: ``defaults:`` keys with their location (valid keys depend on the kinds' options).
    default_keys: list[tuple[str, str]] = field(default_factory=list)
    #: The gates with a ``k:`` and their location: checked against the runs of the cases
    #: they gate once those are collected (:func:`.checks.check_pass_k_gates`).
    k_gates: list[tuple[Gate, str]] = field(default_factory=list)


@dataclass
class SuiteConfig:
    datasources: dict[str, Datasource] = field(default_factory=dict)
    predictions: dict[str, Any] | None = None
    predictions_base: Path | None = None
    predictions_errors: list[str] = field(default_factory=list)
    #: ``predictions:`` as a mapping of model names to sources (several models in one run:
    #: each case is fanned out per model, :mod:`.models`); empty for a single source.
    models: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: each model's located problems (which fail only that model's cases)
    model_errors: dict[str, list[str]] = field(default_factory=dict)
    thresholds: dict[str, tuple[Threshold, str]] = field(default_factory=dict)
    gates: dict[str, Gate] = field(default_factory=dict)
    #: ``gates: {significance: 0.05}``: the baseline gate's alpha (see baseline.compare)
    significance: float | None = None
    defaults: dict[str, Any] = field(default_factory=dict)
    model: str | None = None  #: ``model:``, the label of the model under test in the reports
    #: ``pricing:``, model by model (a child file's entry replaces its parent's for that model).
    pricing: dict[str, Price] = field(default_factory=dict)
    #: ``neighbours:``: the counterexample search of the cases it governs (a dict of
    #: :class:`..neighbours.check.Settings` fields; None: not asked for here).
    neighbours: dict[str, Any] | None = None
    #: ``record_only: true``: a case no threshold gates records its scores instead of taking
    #: its kind's default threshold (:func:`~..engine.thresholds.apply_default`); a child file may
    #: turn it back off.
    record_only: bool = False
    errors: list[str] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)
    secrets: set[str] = field(default_factory=set)
    #: ``judge:`` merged parent to child, key by key (checked values, see :mod:`..judge.config`);
    #: None when no file asks for a judge (or the nearest says ``judge: false``).
    judge: dict[str, Any] | None = None
    #: ``abstain_patterns:``: regular expressions that make a text prediction a refusal (see
    #: :mod:`..engine.abstain`); a child file's list replaces its parent's.
    abstain_patterns: tuple[str, ...] = ()
    #: ``abstention:``: ``default`` or ``ehrsql`` (:data:`..rules.abstain.ABSTENTION_RULES`);
    #: a child file's value replaces its parent's.
    abstention: str = "default"
    #: ``clarify_patterns:``: the same for a question back (:mod:`..engine.clarify`).
    clarify_patterns: tuple[str, ...] = ()


def expand_env(value: object, where: str, errors: list[str], secrets: set[str]) -> Any:
    """Expand ``${VAR}`` / ``${VAR:-default}`` in strings; record values as secrets."""
    if isinstance(value, str):
        def repl(m: re.Match[str]) -> str:
            name, default = m.group(1), m.group(2)
            got = os.environ.get(name)
            if got is None:
                if default is not None:
                    return default
                errors.append(f"{where}: environment variable {name} is not set")
                return ""
            secrets.add(got)
            return got
        out = _ENV.sub(repl, value)
        secrets.update(url_passwords(out))
        return out
    if isinstance(value, dict):
        return {k: expand_env(v, f"{where}.{k}", errors, secrets) for k, v in value.items()}
    if isinstance(value, list):
        return [expand_env(v, f"{where}[{i}]", errors, secrets) for i, v in enumerate(value)]
    return value


def _resolve_paths(spec: dict[str, Any], base: Path) -> list[tuple[str, int | None, str]]:
    """Make the spec's paths absolute; the paths that can never be read as files (a lone
    surrogate, a FIFO, ``/dev/zero``) are left out and returned as (key, item, problem)."""
    problems: list[tuple[str, int | None, str]] = []

    def resolved(value: str, key: str, item: int | None) -> str | None:
        problem = safefile.path_problem(value)
        full = "" if problem else str((base / value).resolve())
        problem = problem or safefile.unreadable(full)
        if problem:
            problems.append((key, item, f"{value!r}: {problem}"))
            return None
        return full

    for key in PATH_KEYS:
        if isinstance(spec.get(key), str):
            spec[key] = resolved(spec[key], key, None)
    if isinstance(spec.get("paths"), str):
        spec["paths"] = [spec["paths"]]
    if isinstance(spec.get("paths"), list):
        spec["paths"] = [resolved(p, "paths", i) if isinstance(p, str) else p
                         for i, p in enumerate(spec["paths"])]
    return problems


def _line(data: object, key: object, default: int) -> int:
    return data.line_of(key) if isinstance(data, LocDict) else default


def _loc(file: str, data: object, key: object) -> str:
    line = data.line_of(key) if isinstance(data, LocDict) else getattr(data, "line", 0)
    return f"{file}:{line}"


def load_layer(path: Path, display: str) -> tuple[LocDict | None, list[str]]:
    try:
        data = load_file(path, display)
    except ConfigError as exc:
        return None, [exc.located()]
    if data is None:
        return LocDict(), []
    if not isinstance(data, dict):
        return None, [f"{display}:1: the suite config must be a mapping"]
    return cast(LocDict, data), []  # the loader builds LocDicts


def merge_layer(cfg: SuiteConfig, data: LocDict, path: Path, display: str,
                report: LayerReport | None = None) -> None:
    """Apply one config file on top of ``cfg`` (its parents), key by key.

    Suite-wide problems go to ``report`` (one per file, however many directories it governs).
    """
    report = report if report is not None else LayerReport()
    base = path.parent
    for key in data:
        if key not in SUITE_KEYS:
            report.problems.append(f"{_loc(display, data, key)}: {key}: unknown key"
                                   f"{suggest(str(key), SUITE_KEYS)} "
                                   f"(allowed: {', '.join(sorted(SUITE_KEYS))})")
    _merge_datasources(cfg, data, display, base)
    if "predictions" in data:
        _merge_predictions(cfg, data, display, base)
    _merge_answer_rules(cfg, data, display)
    if "judge" in data:
        _merge_judge(cfg, data, display, base, report)
    _merge_run_keys(cfg, data, display, report)
    _merge_thresholds(cfg, data, display, report)
    _merge_gates(cfg, data.get("gates"), data, display, base, report)
    _merge_defaults(cfg, data, display, report)
    cfg.files.append(path)


def _merge_datasources(cfg: SuiteConfig, data: LocDict, display: str, base: Path) -> None:
    """``datasources:``: each one checked and defined where it is written (its own errors stay
    on it: only the cases that use it fail)."""
    sources = data.get("datasources") or {}
    if not isinstance(sources, dict):
        cfg.errors.append(f"{_loc(display, data, 'datasources')}: datasources: must be a mapping")
        sources = {}
    for name, spec in sources.items():
        line = sources.line_of(name) if isinstance(sources, LocDict) else 0
        ds = Datasource(str(name), {}, display, line)
        if not isinstance(spec, dict) or not isinstance(spec.get("type"), str):
            ds.errors.append(f"{display}:{line}: datasources.{name}: needs a mapping with a 'type'")
        else:
            _check_datasource(ds, spec, display, line, base)
        cfg.secrets |= ds.secrets
        cfg.datasources[str(name)] = ds


def _check_datasource(ds: Datasource, spec: dict[Any, Any], display: str, line: int,
                      base: Path) -> None:
    """One datasource's keys: environment variables, paths, the plugin's and the source
    type's own keys, each problem at its line."""
    name = ds.name
    expanded = expand_env(dict(spec), f"{display}:{line}: datasources.{name}",
                          ds.errors, ds.secrets)
    for key, item, problem in _resolve_paths(expanded, base):
        node = spec.get(key)
        at = node.line_of(item) if item is not None and isinstance(node, LocList) \
            else _line(spec, key, line)
        ds.errors.append(f"{display}:{at}: datasources.{name}.{key}"
                         f"{'' if item is None else f'[{item}]'}: {problem}")
    ds.spec = expanded
    ds.errors.extend(f"{display}:{_line(spec, key, line)}: datasources.{name}.{key}: "
                     f"{problem}" for key, problem in plugin_key_problems(expanded))
    for key, problem in source_problems(expanded):
        top, _, sub = key.partition(".")
        at = _line(spec.get(top), sub, _line(spec, top, line)) if sub \
            else _line(spec, top, line)
        ds.errors.append(f"{display}:{at}: datasources.{name}.{key}: {problem}")
    define(ds.name, ds.spec, display, line, {str(k): _line(spec, k, line) for k in spec})


def _merge_predictions(cfg: SuiteConfig, data: LocDict, display: str, base: Path) -> None:
    """``predictions:``: one source, or several models' (replacing the parents')."""
    spec = data["predictions"]
    where = f"{_loc(display, data, 'predictions')}: predictions"
    errors: list[str] = []
    cfg.predictions, cfg.models, cfg.model_errors = None, {}, {}
    if is_models_mapping(spec):
        cfg.models, cfg.model_errors = parse_models(
            spec, lambda key: _loc(display, spec, key),
            lambda one, at: prediction_spec(one, at, display, cfg))
    else:
        cfg.predictions, errors = prediction_spec(spec, where, display, cfg)
    cfg.predictions_base = base
    cfg.predictions_errors = errors


def _merge_answer_rules(cfg: SuiteConfig, data: LocDict, display: str) -> None:
    """``model:``, ``abstain_patterns:``, ``clarify_patterns:`` and ``abstention:``."""
    if "model" in data:
        if isinstance(data["model"], str) and data["model"].strip():
            cfg.model = data["model"].strip()
        else:
            cfg.errors.append(f"{_loc(display, data, 'model')}: model: must be a non-empty "
                              f"string (the label of the model under test)")
    for name in ("abstain_patterns", "clarify_patterns"):
        if name in data:
            from ..rules.abstain import check_patterns

            patterns, bad = check_patterns(data[name])
            if bad:
                cfg.errors.append(f"{_loc(display, data, name)}: {name}: {bad}")
            setattr(cfg, name, patterns)
    if "abstention" in data:
        from ..rules.abstain import check_rule

        bad = check_rule(data["abstention"])
        if bad:
            cfg.errors.append(f"{_loc(display, data, 'abstention')}: abstention: {bad}")
        else:
            cfg.abstention = str(data["abstention"])


def _merge_run_keys(cfg: SuiteConfig, data: LocDict, display: str, report: LayerReport) -> None:
    """``pricing:``, ``neighbours:`` and ``record_only:``: suite-wide problems."""
    if "pricing" in data:
        prices, problems = parse_pricing(data["pricing"], _loc(display, data, "pricing"),
                                         lambda m, k: _loc(display, m, k))
        report.problems.extend(problems)
        cfg.pricing = {**cfg.pricing, **prices}
    if "neighbours" in data:
        from ..neighbours.check import parse_suite

        cfg.neighbours, problems = parse_suite(data["neighbours"],
                                               f"{_loc(display, data, 'neighbours')}: neighbours")
        report.problems.extend(problems)
    if "record_only" in data:
        if isinstance(data["record_only"], bool):
            cfg.record_only = data["record_only"]
        else:
            report.problems.append(f"{_loc(display, data, 'record_only')}: record_only: must be "
                                   f"true or false, not {data['record_only']!r}")


def _merge_thresholds(cfg: SuiteConfig, data: LocDict, display: str,
                      report: LayerReport) -> None:
    """``thresholds:``, each metric named for the suite checks (:class:`MetricRef`)."""
    thresholds = data.get("thresholds") or {}
    if not isinstance(thresholds, dict):
        report.problems.append(f"{_loc(display, data, 'thresholds')}: thresholds: "
                               "must be a mapping of metric: bound")
        thresholds = {}
    for metric, spec in thresholds.items():
        where = f"{_loc(display, thresholds, metric)}: thresholds.{metric}"
        try:
            cfg.thresholds[str(metric)] = (parse_threshold(str(metric), spec),
                                           f"{_loc(display, thresholds, metric)}")
        except ValueError as exc:
            report.problems.append(f"{where}: {exc}")
        report.metrics.append(MetricRef(str(metric), where))


def _merge_defaults(cfg: SuiteConfig, data: LocDict, display: str, report: LayerReport) -> None:
    """``defaults:`` over the parents' (``tags`` added to theirs)."""
    defaults = data.get("defaults") or {}
    if not isinstance(defaults, dict):
        report.problems.append(f"{_loc(display, data, 'defaults')}: defaults: must be a mapping")
        return
    merged = dict(cfg.defaults)
    for key, value in defaults.items():
        where = f"{_loc(display, defaults, key)}: defaults.{key}"
        report.default_keys.append((str(key), where))
        wrong = _default_problem(str(key), value)
        if wrong:  # the cases it governs fail with it; other suites still run
            cfg.errors.append(f"{where}: {wrong}")
        elif key == "tags":
            merged["tags"] = [*merged.get("tags", []), *(value or [])]
        else:
            merged[key] = value
    cfg.defaults = merged


def _merge_judge(cfg: SuiteConfig, data: LocDict, display: str, base: Path,
                 report: LayerReport) -> None:
    """``judge:`` on top of the parents' (key by key). A problem in it is suite-wide: it would
    change the verdict of every judged case, so it is a usage error before any case runs. The
    key's ``${VAR}`` values expand as ``predictions:`` ones do (the model and URL stay readable,
    the rest are secrets); the pin file defaults to one beside the file declaring the judge."""
    from ..judge.config import DEFAULT_PINS, check_layer, merge

    where = _loc(display, data, "judge")
    block = data["judge"]
    errors: list[str] = []
    if isinstance(block, dict):
        named = {k: v for k, v in block.items() if k in PUBLIC_PREDICTION_KEYS}
        expanded = expand_env({k: v for k, v in block.items() if k not in named},
                              f"{where}: judge", errors, cfg.secrets)
        expanded.update(expand_env(named, f"{where}: judge", errors, set()))
        key = expanded.get("api_key")
        if isinstance(key, str) and key:
            cfg.secrets.add(key)
        if isinstance(expanded.get("base_url"), str):
            cfg.secrets.update(url_passwords(expanded["base_url"]))
        if isinstance(block, LocDict):
            located = LocDict(expanded)
            located.line, located.key_lines = block.line, block.key_lines
            block = located
        else:
            block = expanded
    layer, problems = check_layer(block, where, lambda m, k: _loc(display, m, k), base)
    report.problems.extend(errors + problems)
    if layer is not None:
        if not layer.get("__off__") and cfg.judge is None:
            layer["__pins_default__"] = str((base / DEFAULT_PINS).resolve())
        cfg.judge = merge(cfg.judge, layer)


def _default_problem(key: str, value: object) -> str | None:
    """What is wrong with the type of a ``defaults:`` value that no case would locate: a case
    inherits it from here, so here is where its error points."""
    if key == "tags":
        if value is not None and not (isinstance(value, list) and not any(
                isinstance(t, dict | list) for t in value)):  # names: checked per case
            return f"must be a list of tag names, not {numeric.short_repr(value)}"
    elif key in ("timeout", "max_rows"):
        try:
            numeric.option_limit(key, value)
        except ValueError as exc:
            return str(exc)
    return None


#: Keys of one gate; the limit is ``mean`` for a metric and ``min`` for the pass rate.
GATE_KEYS = frozenset({"metric", "mean", "min", "max", "mean_max", "total_max", "kind", "tag",
                       "model", "allow_empty", "k", "reviewed_only"})
#: A metric gate's bound: the key, the statistic it bounds, and how.
#: ``mean_max`` spells out what ``max`` bounds (``tool_calls: {mean_max: 6}``).
METRIC_BOUNDS = {"mean": ("mean", ">="), "max": ("mean", "<="), "mean_max": ("mean", "<="),
                 "total_max": ("total", "<=")}
#: ``gates: {significance: alpha}`` sets the baseline gate's significance level.
SIGNIFICANCE = "significance"


def _merge_gates(cfg: SuiteConfig, gates: object, data: LocDict, display: str, base: Path,
                 report: LayerReport) -> None:
    if gates is None:
        return
    where = _loc(display, data, "gates")
    if not isinstance(gates, dict):
        report.problems.append(f"{where}: gates: must be a mapping of name: gate")
        return
    for name, spec in gates.items():
        loc = f"{_loc(display, gates, name)}: gates.{name}"
        if name == SIGNIFICANCE:  # not a metric gate: the baseline comparison's alpha
            from ..baseline.significance import parse_significance

            try:
                if not _is_number(spec):
                    raise ValueError(f"{loc}: must be a significance level such as 0.05, not "
                                     f"{spec!r}")
                cfg.significance = parse_significance(spec, loc)
            except ValueError as exc:
                report.problems.append(str(exc))
            continue
        gate = _parse_gate(str(name), spec, loc, base, report.problems)
        if gate is None:
            continue
        cfg.gates[f"{base}:{gate.name}"] = gate
        if gate.k is not None:  # pass@k / pass^k: no case metric, the runs of its cases
            report.k_gates.append((gate, loc))
            if gate.kind is not None:
                report.metrics.append(MetricRef(PASS_RATE, loc, gate.kind, gate=True))
        else:
            report.metrics.append(MetricRef(gate.metric, loc, gate.kind, gate=True))


def prediction_spec(spec: object, where: str, display: str, cfg: SuiteConfig,
                    ) -> tuple[dict[str, Any] | None, list[str]]:
    """One prediction source of ``predictions:`` (the suite's, or one model's of a models
    mapping) with its ``${VAR}`` expanded and its problems located; the secrets it holds are
    added to ``cfg``."""
    errors: list[str] = []
    if not isinstance(spec, dict) or spec.get("source") not in PREDICTION_SOURCES:
        errors.append(f"{where}: needs source: one of {', '.join(sorted(PREDICTION_SOURCES))}")
        return None, errors
    # which model a run asks, and where, are what its reports are about: a ${VAR} in
    # them names them (only a password in the URL is a secret); the rest may be keys
    named = {k: v for k, v in spec.items() if k in PUBLIC_PREDICTION_KEYS}
    out = expand_env({k: v for k, v in spec.items() if k not in named}, where, errors, cfg.secrets)
    out.update(expand_env(named, where, errors, set()))
    if isinstance(out.get("base_url"), str):
        cfg.secrets.update(url_passwords(out["base_url"]))
    if "concurrency" in spec:
        from ..predict.pool import parse_concurrency

        try:  # a ${VAR} expands to text: "8" is 8
            out["concurrency"] = parse_concurrency(out["concurrency"])
        except ValueError as exc:
            errors.append(f"{_loc(display, spec, 'concurrency')}: {_key(where)}.concurrency: {exc}")
    if out.get("failures", "error") not in PREDICTION_FAILURES:
        errors.append(f"{_loc(display, spec, 'failures')}: {_key(where)}.failures: must "
                      f"be error (the default: an infrastructure error) or model (the "
                      f"model's failure), not {out['failures']!r}")
    if not isinstance(out.get("cache", False), bool):  # predict/cache.py
        errors.append(f"{_loc(display, spec, 'cache')}: {_key(where)}.cache: must be true "
                      f"or false, not {out['cache']!r}")
    key = out.get("api_key")
    if isinstance(key, str) and key:  # a key written literally is a secret as well
        cfg.secrets.add(key)
    from ..predict.breaker import LocatedSpec

    located = LocatedSpec(out)  # a source's preflight and breaker reasons point here
    located.where = where
    return located, errors


def _key(where: str) -> str:
    """The key path of a ``file:line: key`` location."""
    return where.rsplit(": ", 1)[-1]


def _parse_gate(name: str, spec: object, loc: str, base: Path, problems: list[str]) -> Gate | None:
    """``metric: 0.8`` / ``metric: {mean: 0.8, kind:, tag:, model:, allow_empty:}`` (or ``max:`` on
    the mean, ``total_max:`` on the sum, for metrics that are better low) and
    ``pass_rate: 0.9`` / ``pass_rate: {min: 0.9, kind:, tag:, allow_empty:}``; a gate named
    otherwise says which metric it bounds with ``metric:``."""
    metric = spec.get("metric", name) if isinstance(spec, dict) else name
    if not isinstance(metric, str) or not metric:
        problems.append(f"{loc}.metric: must be a metric name (or pass_rate)")
        return None
    rate = metric == PASS_RATE
    usage = ("use {min: x} (the share of judged cases that pass, between 0 and 1)" if rate
             else "use {mean: x} (a floor on the mean), {max: x} or {mean_max: x} (a ceiling "
                  "on the mean) or {total_max: x} (a ceiling on the sum)")
    if _is_number(spec):
        spec = {"min" if rate else "mean": spec}
    if not isinstance(spec, dict):
        problems.append(f"{loc}: {usage}, optionally with kind:, tag: and allow_empty:")
        return None
    key = _gate_bound(spec, rate, usage, loc, problems)
    if key is None:
        return None
    k = _pass_k(metric, spec, key, loc, problems)
    if k is False:
        return None
    stat, op = ("pass_rate", ">=") if rate else METRIC_BOUNDS[key]
    limit = spec[key]
    if not _gate_limit_ok(limit, rate, f"{loc}.{key}", problems):
        return None
    kind, tag, allow_empty = spec.get("kind"), spec.get("tag"), spec.get("allow_empty", False)
    model = spec.get("model")
    for key, value in (("kind", kind), ("tag", tag), ("model", model)):
        if value is not None and (not isinstance(value, str) or not value):
            problems.append(f"{loc}.{key}: must be a {key} name")
            return None
    reviewed_only = spec.get("reviewed_only", False)
    for key, value in (("allow_empty", allow_empty), ("reviewed_only", reviewed_only)):
        if not isinstance(value, bool):
            problems.append(f"{loc}.{key}: must be true or false")
            return None
    label = name + (f"[kind={kind}]" if kind else "") + (f"[tag={tag}]" if tag else "") + (
        f"[model={model}]" if model else "") + ("[reviewed_only]" if reviewed_only else "")
    return Gate(label, metric, stat, float(limit), base, kind, tag, allow_empty, op, model,
                k if isinstance(k, int) else None, reviewed_only)


def _gate_bound(spec: Mapping[Any, Any], rate: bool, usage: str, loc: str,
                problems: list[str]) -> str | None:
    """The one bound key a gate gives; None (the problem added) for a metric gate's key on a
    pass_rate gate or back, an unknown key, or no or several bounds."""
    bounds = ["min"] if rate else list(METRIC_BOUNDS)
    wrong = [k for k in (["mean", "max", "mean_max", "total_max"] if rate else ["min"])
             if k in spec]
    if wrong:
        problems.append(f"{loc}.{wrong[0]}: {'a pass_rate gate' if rate else 'a metric gate'} "
                        f"bounds its {'rate' if rate else 'mean or total'}: {usage}")
        return None
    unknown = [str(k) for k in spec if k not in GATE_KEYS]
    if unknown:
        allowed = GATE_KEYS - ({"mean", "max", "mean_max", "total_max"} if rate else {"min"})
        problems.append(f"{loc}.{unknown[0]}: unknown key{suggest(unknown[0], GATE_KEYS)} "
                        f"(allowed: {', '.join(sorted(allowed))})")
        return None
    given = [k for k in bounds if k in spec]
    if len(given) != 1:
        problems.append(f"{loc}: {usage}{' (one of them)' if given else ''}, optionally with "
                        "kind:, tag: and allow_empty:")
        return None
    return given[0]


def _gate_limit_ok(limit: Any, rate: bool, where: str, problems: list[str]) -> bool:
    """A bound is a finite number, and a pass rate's a fraction: 90 meant as 90% could never
    be met, so the message says what to write instead."""
    if not numeric.is_finite(limit):
        problems.append(f"{where}: must be a finite number, not {numeric.short_repr(limit)}")
        return False
    if rate and not 0 <= limit <= 1:
        problems.append(f"{where}: a pass rate is a fraction between 0 and 1, not "
                        f"{limit!r}{f' (for {limit:g}%, write {limit / 100:g})' if 1 < limit <= 100 else ''}")
        return False
    return True


def _pass_k(metric: str, spec: Mapping[str, Any], bound: str, loc: str,
            problems: list[str]) -> int | bool | None:
    """A gate's ``k:`` (pass@k / pass^k for that k); None when it has none, False (with the
    problem added) when it is wrong. ``pass_hat_k`` always takes one: its k = N is
    ``pass_all_k``."""
    if "k" not in spec:
        if metric == PASS_HAT_K:
            problems.append(f"{loc}: a {PASS_HAT_K} gate needs k: (pass^k, the chance that k "
                            f"runs of N all pass), e.g. {{k: 2, mean: 0.5}}")
            return False
        return None
    k = spec["k"]
    if metric not in PASS_K_GATES:
        problems.append(f"{loc}.k: only a {' or '.join(PASS_K_GATES)} gate takes k: (pass@k or "
                        f"pass^k of the repeated cases), not a {metric} gate")
        return False
    if not numeric.is_finite(k) or k != int(k) or k < 1:
        problems.append(f"{loc}.k: must be a whole number of runs from 1 to the cases' "
                        f"repeat:, not {numeric.short_repr(k)}")
        return False
    if bound == "total_max":
        problems.append(f"{loc}.total_max: a {metric} gate with k: bounds the mean over the "
                        "cases: use {mean: x} (a floor) or {max: x} (a ceiling)")
        return False
    return int(k)


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


class ConfigFinder:
    """Finds and caches the merged config for each directory (one parse per file)."""

    def __init__(self, rootdir: Path) -> None:
        self.rootdir = rootdir.resolve()
        self._layers: dict[Path, tuple[LocDict | None, list[str]]] = {}
        self._merged: dict[Path, SuiteConfig] = {}
        #: Per config file, in load order: its suite-wide problems and the names it uses.
        self.reports: dict[Path, LayerReport] = {}

    def _display(self, path: Path) -> str:
        return display(path, self.rootdir, resolve=False)

    def for_directory(self, directory: Path) -> SuiteConfig:
        directory = directory.resolve()
        if directory in self._merged:
            return self._merged[directory]
        chain: list[Path] = []
        cur = directory
        while True:
            candidate = cur / CONFIG_NAME
            if candidate.exists():  # a FIFO or directory by that name: a located error
                chain.append(candidate)
            if cur == self.rootdir or cur.parent == cur:
                break
            cur = cur.parent
        cfg = SuiteConfig()
        for path in reversed(chain):
            if path not in self._layers:
                self._layers[path] = load_layer(path, self._display(path))
            data, errors = self._layers[path]
            cfg.errors.extend(errors)
            if data is not None:
                report = LayerReport()
                merge_layer(cfg, data, path, self._display(path), report)
                self.reports.setdefault(path, report)
        self._merged[directory] = cfg
        return cfg


def with_cli_models(suite: SuiteConfig, models: Mapping[str, dict[str, Any]],
                    single: bool = False) -> SuiteConfig:
    """``suite`` with the models of ``--queryeval-predictions NAME=PATH`` in place of its own
    ``predictions:`` (the command line names the models a run compares); ``single``: one
    ``--queryeval-predictions PATH`` replaces every source, so a suite's models fan nothing
    out (the run is of that one source)."""
    if single and suite.models:
        return replace(suite, models={}, model_errors={})
    if not models:
        return suite
    return replace(suite, predictions=None, predictions_errors=[],
                   models={k: dict(v) for k, v in models.items()},
                   model_errors={k: [] for k in models}, predictions_base=Path("/"))


def suite_dir(finder: ConfigFinder, case_dirs: Iterable[Path], rootdir: Path) -> Path:
    """The directory of the outermost ``queryeval.yaml`` governing the run's case files (the
    rootdir when there is none): where a baseline given by a bare file name lives."""
    configs = sorted({p.parent for d in case_dirs for p in finder.for_directory(d).files},
                     key=lambda p: (len(p.parts), str(p)))
    return configs[0] if configs else rootdir
