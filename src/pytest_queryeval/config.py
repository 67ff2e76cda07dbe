"""Suite configuration: the nearest ``queryeval.yaml`` files, merged parent to child.

Every problem is kept as a located message instead of raised, so a broken config fails only
the cases it governs and the rest of the session runs.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import ConfigError
from .model import Threshold
from .secrets import url_passwords
from .thresholds import parse_threshold
from .yamlload import LocDict, LocList, load_file

CONFIG_NAME = "queryeval.yaml"
SUITE_KEYS = frozenset({"datasources", "predictions", "thresholds", "gates", "defaults", "model"})
#: Datasource keys holding paths, resolved against the directory of the file defining them.
PATH_KEYS = ("path", "tables", "file", "directory")
PREDICTION_SOURCES = frozenset({"inline", "file", "python", "http", "command"})
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
    stat: str  # "mean" or "pass_rate"
    limit: float
    scope: Path
    kind: str | None = None
    tag: str | None = None


@dataclass
class SuiteConfig:
    datasources: dict[str, Datasource] = field(default_factory=dict)
    predictions: dict[str, Any] | None = None
    predictions_base: Path | None = None
    predictions_errors: list[str] = field(default_factory=list)
    thresholds: dict[str, tuple[Threshold, str]] = field(default_factory=dict)
    gates: dict[str, Gate] = field(default_factory=dict)
    defaults: dict[str, Any] = field(default_factory=dict)
    model: str | None = None  #: ``model:``, the label of the model under test in the reports
    errors: list[str] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)
    secrets: set[str] = field(default_factory=set)


def expand_env(value: Any, where: str, errors: list[str], secrets: set[str]) -> Any:
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


def _resolve_paths(spec: dict[str, Any], base: Path) -> None:
    for key in PATH_KEYS:
        if isinstance(spec.get(key), str):
            spec[key] = str((base / spec[key]).resolve())
    if isinstance(spec.get("paths"), str):
        spec["paths"] = [spec["paths"]]
    if isinstance(spec.get("paths"), list):
        spec["paths"] = [str((base / p).resolve()) if isinstance(p, str) else p
                         for p in spec["paths"]]


def _loc(file: str, data: Any, key: Any) -> str:
    line = data.line_of(key) if isinstance(data, LocDict) else getattr(data, "line", 0)
    return f"{file}:{line}"


def load_layer(path: Path, display: str) -> tuple[Any, list[str]]:
    try:
        data = load_file(path, display)
    except ConfigError as exc:
        return None, [exc.located()]
    if data is None:
        return LocDict(), []
    if not isinstance(data, dict):
        return None, [f"{display}:1: the suite config must be a mapping"]
    return data, []


def merge_layer(cfg: SuiteConfig, data: LocDict, path: Path, display: str) -> None:
    """Apply one config file on top of ``cfg`` (its parents), key by key."""
    base = path.parent
    for key in data:
        if key not in SUITE_KEYS:
            cfg.errors.append(f"{_loc(display, data, key)}: {key}: unknown key "
                              f"(allowed: {', '.join(sorted(SUITE_KEYS))})")
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
            expanded = expand_env(dict(spec), f"{display}:{line}: datasources.{name}",
                                  ds.errors, ds.secrets)
            _resolve_paths(expanded, base)
            ds.spec = expanded
        cfg.secrets |= ds.secrets
        cfg.datasources[str(name)] = ds
    if "predictions" in data:
        spec = data["predictions"]
        where = f"{_loc(display, data, 'predictions')}: predictions"
        errors: list[str] = []
        if not isinstance(spec, dict) or spec.get("source") not in PREDICTION_SOURCES:
            errors.append(f"{where}: needs source: one of {', '.join(sorted(PREDICTION_SOURCES))}")
            cfg.predictions = None
        else:
            cfg.predictions = expand_env(dict(spec), where, errors, cfg.secrets)
        cfg.predictions_base = base
        cfg.predictions_errors = errors
    if "model" in data:
        if isinstance(data["model"], str) and data["model"].strip():
            cfg.model = data["model"].strip()
        else:
            cfg.errors.append(f"{_loc(display, data, 'model')}: model: must be a non-empty "
                              f"string (the label of the model under test)")
    thresholds = data.get("thresholds") or {}
    if not isinstance(thresholds, dict):
        cfg.errors.append(f"{_loc(display, data, 'thresholds')}: thresholds: must be a mapping")
        thresholds = {}
    for metric, spec in thresholds.items():
        try:
            cfg.thresholds[str(metric)] = (parse_threshold(str(metric), spec),
                                           f"{_loc(display, thresholds, metric)}")
        except ValueError as exc:
            cfg.errors.append(f"{_loc(display, thresholds, metric)}: thresholds.{metric}: {exc}")
    _merge_gates(cfg, data.get("gates"), data, display, base)
    defaults = data.get("defaults") or {}
    if isinstance(defaults, dict):
        merged = dict(cfg.defaults)
        for key, value in defaults.items():
            if key == "tags":
                merged["tags"] = [*merged.get("tags", []), *(value or [])]
            else:
                merged[key] = value
        cfg.defaults = merged
    else:
        cfg.errors.append(f"{_loc(display, data, 'defaults')}: defaults: must be a mapping")
    cfg.files.append(path)


def _merge_gates(cfg: SuiteConfig, gates: Any, data: LocDict, display: str, base: Path) -> None:
    if gates is None:
        return
    where = _loc(display, data, "gates")
    if not isinstance(gates, dict):
        cfg.errors.append(f"{where}: gates: must be a mapping")
        return
    for name, spec in gates.items():
        loc = f"{_loc(display, gates, name)}: gates.{name}"
        if name == "pass_rate":
            if isinstance(spec, bool) or not isinstance(spec, int | float):
                cfg.errors.append(f"{loc}: must be a number between 0 and 1")
                continue
            cfg.gates[f"{base}:pass_rate"] = Gate("pass_rate", "pass_rate", "pass_rate",
                                                  float(spec), base)
            continue
        if isinstance(spec, int | float) and not isinstance(spec, bool):
            spec = {"mean": spec}
        if not isinstance(spec, dict) or not isinstance(spec.get("mean"), int | float):
            cfg.errors.append(f"{loc}: use {{mean: x}} (optionally with kind: and tag:)")
            continue
        unknown = set(spec) - {"mean", "kind", "tag"}
        if unknown:
            cfg.errors.append(f"{loc}: unknown key(s) {sorted(unknown)}")
            continue
        kind, tag = spec.get("kind"), spec.get("tag")
        label = str(name) + (f"[kind={kind}]" if kind else "") + (f"[tag={tag}]" if tag else "")
        cfg.gates[f"{base}:{label}"] = Gate(label, str(name), "mean", float(spec["mean"]), base,
                                            kind, tag)


class ConfigFinder:
    """Finds and caches the merged config for each directory (one parse per file)."""

    def __init__(self, rootdir: Path) -> None:
        self.rootdir = rootdir.resolve()
        self._layers: dict[Path, tuple[Any, list[str]]] = {}
        self._merged: dict[Path, SuiteConfig] = {}

    def _display(self, path: Path) -> str:
        try:
            return str(path.relative_to(self.rootdir))
        except ValueError:
            return str(path)

    def for_directory(self, directory: Path) -> SuiteConfig:
        directory = directory.resolve()
        if directory in self._merged:
            return self._merged[directory]
        chain: list[Path] = []
        cur = directory
        while True:
            candidate = cur / CONFIG_NAME
            if candidate.is_file():
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
                merge_layer(cfg, data, path, self._display(path))
        self._merged[directory] = cfg
        return cfg

    def all_configs(self) -> list[SuiteConfig]:
        return list(self._merged.values())


def is_list(value: Any) -> bool:
    return isinstance(value, list | LocList)
