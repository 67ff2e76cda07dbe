"""Names and options checked before any case runs, so that a typo cannot pass silently.

A metric name that no kind produces matches nothing: a suite threshold on it is dropped for
every case, a gate on it scores nothing, a max-drop on it compares nothing. Each such name, the
keys of ``defaults:`` and the run's report and baseline options are therefore checked once,
before the first case, and reported together as one usage error with ``file:line`` and a
did-you-mean. "The metrics the kinds can produce" are those of every kind the session knows
(built-in and registered with ``pytest_queryeval_kinds``), the timing metrics and the custom
metrics declared with ``pytest_queryeval_metric_names``: a parent ``queryeval.yaml`` serves
several sub-suites, and running one of them must not turn the others' metrics into errors. A
metric that exists but is never scored by the cases a gate selects fails that gate at the end
("nothing scored") unless the gate says ``allow_empty: true``.

Importable without pytest: the plugin turns the returned messages into ``pytest.UsageError``.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from .. import kinds as kind_registry
from .._util.wording import suggest
from ..errors import QueryEvalError
from ..metricnames import PASS_RATE, RECORDED_METRICS, REPEAT_METRICS
from ..model import Case
from .cases import FILE_KEYS, OPTION_KEYS_COMMON
from .config import ConfigFinder

#: Keys of ``defaults:`` that are not case keys, with what to write instead.
_DEFAULTS_INSTEAD = {
    "thresholds": "suite thresholds go in the top-level thresholds: of queryeval.yaml",
    "cases": "cases are written in case files, not in queryeval.yaml",
}


_LINE = re.compile(r"^[^\n]*?:(\d+): ")


class MetricCatalog:
    """The metrics each kind of the session can produce, for checks and did-you-mean hints."""

    def __init__(self, kinds: Iterable[str], is_metric: Callable[[str, str], bool] | None = None,
                 custom: Mapping[str, Iterable[str]] | None = None) -> None:
        self.kinds = sorted(kinds)
        self._custom = {k: list(v) for k, v in (custom or {}).items()}
        self._is_metric = is_metric or self.is_metric
        self._names: dict[str, list[str]] = {}

    def is_metric(self, kind: str, name: str) -> bool:
        """Whether ``kind`` produces ``name`` (:func:`..kinds.is_metric` with the custom names)."""
        return kind_registry.is_metric(kind, name, self._custom.get(kind, ()))

    def names(self, kind: str) -> list[str]:
        """Names ``kind`` declares (its ``metric_names()``, timing and custom metrics)."""
        if kind not in self._names:
            names = set(RECORDED_METRICS) | set(self._custom.get(kind, ())) | REPEAT_METRICS
            names.update(kind_registry.declared_metrics(kind))
            self._names[kind] = sorted(map(str, names))
        return self._names[kind]

    def kinds_of(self, metric: str) -> list[str]:
        return [k for k in self.kinds if self._is_metric(k, metric)]

    def produced(self, metric: str) -> bool:
        """Whether some kind produces ``metric``: the kinds already imported asked first, and
        no further than the first that does. A suite-wide ``bird_ex`` threshold imported
        every kind and its metrics (SPARQL's, SDMX's, JSON's, the graph kind's) to list the kinds
        that produce it, in a run of SQL cases only (issue 61 item 4)."""
        loaded = kind_registry.loaded_kinds()
        ordered = sorted(self.kinds, key=lambda k: k not in loaded)  # stable: loaded first
        return any(self._is_metric(k, metric) for k in ordered)

    def check(self, metric: str, where: str, kind: str | None = None,
              pass_rate: bool = False) -> str | None:
        """The problem with ``metric`` (optionally restricted to ``kind``), or None.

        ``pass_rate`` allows the pass rate, which gates and max-drops bound like a metric.
        """
        if kind is not None and kind not in self.kinds:
            return (f"{where}.kind: unknown kind {kind!r}{suggest(kind, self.kinds)} "
                    f"(known: {', '.join(self.kinds)})")
        if pass_rate and metric == PASS_RATE:
            return None
        extra = [PASS_RATE] if pass_rate else []
        if kind is not None:
            if self._is_metric(kind, metric):
                return None
            others = self.kinds_of(metric)
            if others:
                return (f"{where}: metric {metric!r} is not produced by kind {kind} "
                        f"(it is by: {', '.join(others)})")
            return (f"{where}: unknown metric {metric!r} for kind {kind}"
                    f"{suggest(metric, [*self.names(kind), *extra])}")
        if self.produced(metric):
            return None
        every = {n for k in self.kinds for n in self.names(k)} | set(extra)
        return f"{where}: unknown metric {metric!r}{suggest(metric, every)}"


def check_suite(finder: ConfigFinder, catalog: MetricCatalog) -> list[str]:
    """Every suite-wide problem of the ``queryeval.yaml`` files loaded so far, once per file."""
    problems: list[str] = []
    allowed: frozenset[str] | None = None  # made for the first suite that has defaults
    for report in finder.reports.values():
        found = list(report.problems)
        for ref in report.metrics:
            problem = catalog.check(ref.metric, ref.where, ref.kind, pass_rate=ref.gate)
            if problem:
                found.append(problem)
        for key, where in report.default_keys:
            if key in _DEFAULTS_INSTEAD:
                found.append(f"{where}: not a case default: {_DEFAULTS_INSTEAD[key]}")
                continue
            if allowed is None:
                allowed = _default_keys_allowed(catalog)
            if key not in allowed:
                found.append(f"{where}: unknown key{suggest(key, allowed)} (defaults: "
                             "takes the keys of a case file's header)")
        problems.extend(sorted(found, key=_line_number))
    return problems


def check_pass_k_gates(finder: ConfigFinder, cases: Iterable[tuple[Case, int]]) -> list[str]:
    """A pass@k / pass^k gate's ``k:`` against the runs of the selected cases it gates
    (``cases``: each with how many times it will run): k beyond the fewest runs of a repeated
    case would gate nothing at the end, so it is an error before the first case runs. A gate
    whose selected cases run once each is left to the end ("nothing scored"): a shard may hold
    none of the repeated ones."""
    problems: list[str] = []
    gated = [(gate, where) for report in finder.reports.values() for gate, where in report.k_gates]
    if not gated:
        return problems
    runs = [(case, n, case.file.resolve()) for case, n in cases if n > 1]
    for gate, where in gated:
        assert gate.k is not None
        counts = [n for case, n, path in runs
                  if (path == gate.scope or gate.scope in path.parents)
                  and (gate.kind is None or case.kind == gate.kind)
                  and (gate.tag is None or gate.tag in case.tags)
                  and (gate.model is None or case.model == gate.model)]
        if counts and gate.k > min(counts):
            fewest = min(counts)
            which = "its cases run" if fewest == max(counts) else "the case it gates that runs " \
                "fewest times runs"
            problems.append(f"{where}.k: {gate.k} is out of 1..{fewest}: {which} {fewest} "
                            f"times (repeat: {fewest}); {gate.metric} with k: {gate.k} needs "
                            f"{gate.k} runs of every case")
    return problems


def _default_keys_allowed(catalog: MetricCatalog) -> frozenset[str]:
    """The keys a suite's ``defaults:`` may hold: every kind's options. Only for a suite that
    has defaults: the kinds are imported to know them (the JSON and SDMX kinds and their
    metric modules, 15 ms a SQL-only run paid for nothing)."""
    option_keys = set(OPTION_KEYS_COMMON)
    for kind in catalog.kinds:
        with contextlib.suppress(Exception):  # a broken custom kind: its cases report it
            option_keys |= set(kind_registry.get_kind(kind).option_keys)
    return (FILE_KEYS - set(_DEFAULTS_INSTEAD)) | option_keys


def _line_number(problem: str) -> int:
    """The line of a ``file:line: ...`` message of one file (messages keep their order)."""
    match = _LINE.match(problem)
    return int(match.group(1)) if match else 0


def usage_message(problems: list[str]) -> str:
    count = f"{len(problems)} problems" if len(problems) > 1 else "a problem"
    return "\n".join([f"queryeval: {count} in the suite configuration or options "
                      "(no case was run):", *(f"  {p}" for p in problems)])


# --------------------------------------------------------------------------------------------
# command-line options and ini values


def ini_line(inipath: Path | None, key: str, value: str) -> str:
    """``file:line`` of ``value`` under the ini option ``key`` (pytest keeps no line numbers)."""
    if inipath is None:
        return "ini"
    name = inipath.name
    try:
        lines = inipath.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return name
    start = next((i for i, line in enumerate(lines) if line.strip().startswith(key)), None)
    if start is None:
        return name
    for i in range(start, len(lines)):
        if value in lines[i]:
            return f"{name}:{i + 1}"
    return f"{name}:{start + 1}"


def check_options(*, catalog: MetricCatalog, invocation_dir: Path,
                  thresholds: Iterable[str] = (), ini_thresholds: Iterable[tuple[str, str]] = (),
                  max_drop: Iterable[str] = (), baseline: str | None = None,
                  outputs: Mapping[str, str | None] | None = None,
                  needs: Iterable[tuple[str, str, str]] = (),
                  worst: int = 0, significance: tuple[str | None, str] = (None, ""),
                  significance_where: str = "ini") -> list[str]:
    """Problems of the run's options (each message names its option)."""
    problems: list[str] = []
    cli_alpha, ini_alpha = significance
    if cli_alpha is not None or ini_alpha:
        from ..baseline.significance import parse_significance

        for value, where in ((cli_alpha, "--queryeval-significance"),
                             (ini_alpha, f"{significance_where}: queryeval_significance")):
            try:
                parse_significance(value, where)
            except ValueError as exc:
                problems.append(str(exc))
        if cli_alpha is not None and not baseline:
            problems.append("--queryeval-significance needs --queryeval-baseline (the report "
                            "to compare with)")
    for metric in thresholds:
        problem = catalog.check(metric, "--queryeval-threshold")
        if problem:
            problems.append(problem)
    for metric, where in ini_thresholds:
        problem = catalog.check(metric, f"{where}: queryeval_thresholds")
        if problem:
            problems.append(problem)
    max_drop = list(max_drop)
    if max_drop:
        from ..baseline.compare import GLOBAL, parse_max_drop

        try:
            drops = parse_max_drop(max_drop)
        except ValueError as exc:
            problems.append(str(exc))
            drops = {}
        for metric in drops:
            problem = None if metric == GLOBAL else catalog.check(
                metric, "--queryeval-max-drop", pass_rate=True)
            if problem:
                problems.append(problem)
        if not baseline:
            problems.append("--queryeval-max-drop needs --queryeval-baseline (the report to "
                            "compare with)")
    for option, value in (outputs or {}).items():
        if value:
            problem = _unwritable(invocation_dir / value)
            if problem:
                problems.append(f"{option}={value}: {problem}")
    for option, module, extra in needs:  # a report's optional dependency
        if importlib.util.find_spec(module) is None:
            problems.append(f"{option} needs {module}: pip install pytest-queryeval[{extra}]")
    if worst < 0:
        problems.append(f"--queryeval-worst={worst}: must be 0 or more")
    return problems


def check_baseline(path: Path, update: bool) -> list[str]:
    """The baseline to compare with must exist and be a report, unless this run creates it
    (``--queryeval-update-baseline``). Its path depends on the suite, so this runs after
    collection."""
    if update and not path.exists():
        return []
    from ..baseline.store import load_baseline

    try:
        load_baseline(path)
    except QueryEvalError as exc:
        return [f"--queryeval-baseline: {exc.reason()}"]
    return []


def _unwritable(path: Path) -> str | None:
    """Why a report cannot be written at ``path`` (its missing parents are created), or None.
    A FIFO or a character device is written as a stream (``_util.safefile.atomic_output``);
    another special file is refused, never replaced."""
    from .._util.safefile import output_path, special_output, streamable

    path = output_path(path)
    kind = special_output(path)
    if kind is not None:
        return None if streamable(path) else f"{kind}: a report is never written over it"
    if streamable(path):  # a descriptor of this process (/dev/stdout)
        return None
    if path.is_dir():
        return "is a directory"
    parent = path.parent
    while not parent.exists():
        if parent.parent == parent:
            return "no existing parent directory"
        parent = parent.parent
    if not parent.is_dir():
        return f"{parent.name} is not a directory"
    if not os.access(parent, os.W_OK | os.X_OK):
        return f"directory {parent} is not writable"
    return None
