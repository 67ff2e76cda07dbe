"""The pytest collection nodes: one File per case file, one Item per case."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from . import kinds as kind_registry
from .cases import load_cases
from .config import ConfigFinder
from .engine import Session, run_case
from .errors import ConfigError
from .gcpolicy import FreezePolicy, gc_paused
from .model import Case, Threshold
from .paths import display
from .report.records import case_record
from .report.terminal import failure_text
from .suitecheck import MetricCatalog
from .verdict import Verdicts

_MARK = re.compile(r"^[A-Za-z_][A-Za-z0-9_.+-]*$")
RECORD = pytest.StashKey[dict[str, Any]]()


@dataclass
class State:
    """Per-process plugin state (controller or xdist worker), kept in ``config.stash``."""

    config: pytest.Config
    finder: ConfigFinder
    session: Session
    ini_thresholds: dict[str, Threshold]
    cli_thresholds: dict[str, Threshold]
    junit_properties: bool
    ids: dict[str, str] = field(default_factory=dict)
    records: dict[str, dict[str, Any]] = field(default_factory=dict)
    custom_metrics: dict[str, set[str]] = field(default_factory=dict)
    marks: dict[str, pytest.MarkDecorator | None] = field(default_factory=dict)
    gc: FreezePolicy = field(default_factory=FreezePolicy)
    deselected: int = 0  #: items deselected in this process (-k, -m, --lf, --deselect)
    verdict_mode: str = "strict"  #: --queryeval-verdict
    verdicts: Verdicts | None = None  #: the per-case verdict of a non-strict mode
    progress: Any = None  #: the predictions progress line (:class:`~.runahead.ProgressLine`)
    audit: str | None = None  #: --queryeval-audit-golds: "error" or "warn"; None: a normal run
    #: Ids of every collected case, deselected ones too (a shard's report records them, so
    #: ``queryeval merge`` can tell a missing case from one that was never in the suite).
    suite_ids: list[str] | None = None
    #: xdist controller: each case's :func:`~.report.records.case_meta`, by node id, from the
    #: workers (the record of a case whose worker crashed is completed from it).
    case_meta: dict[str, Any] = field(default_factory=dict)
    #: xdist controller: the cases whose worker crashed while running them (node id: what
    #: xdist said); their records are made when the session ends.
    crashed: dict[str, str] = field(default_factory=dict)
    #: xdist controller: the directory its workers on this machine share predictions through
    #: (:mod:`.predict.exchange`), made when the first worker starts.
    exchange_root: Any = None

    def is_metric(self, kind: str, name: str) -> bool:
        return kind_registry.is_metric(kind, name, self.custom_metrics.get(kind, ()))

    def catalog(self) -> MetricCatalog:
        """The metrics of every kind this session knows (checks of suite-wide names)."""
        return MetricCatalog(kind_registry.known_kinds(), self.is_metric, self.custom_metrics)

    def display(self, path: Path) -> str:
        return display(path, self.config.rootpath)

    def mark(self, name: str, help_text: str) -> pytest.MarkDecorator | None:
        """A marker for a YAML name, registered on the fly so ``--strict-markers`` holds."""
        mark = self.marks.get(name)
        if mark is not None or name in self.marks:
            return mark
        if _MARK.match(name):  # first sight of the name: register it
            self.config.addinivalue_line("markers", f"{name}: {help_text}")
            mark = getattr(pytest.mark, name)
        self.marks[name] = mark
        return mark


STATE = pytest.StashKey[State]()


class CaseFailure(Exception):
    """Raised by an item whose case failed or errored; rendered by ``repr_failure``."""

    def __init__(self, record: dict[str, Any]) -> None:
        super().__init__(record.get("id"))
        self.record = record


class QueryEvalFile(pytest.File):
    def collect(self) -> Any:
        state = self.config.stash[STATE]
        with gc_paused():  # parsing allocates objects that stay alive, and no cycles
            items = list(self._collect(state))
        state.gc.after_collection(len(state.session.cases))
        return items

    def _collect(self, state: State) -> Iterator[pytest.Item]:
        display = state.display(self.path)
        suite = state.finder.for_directory(self.path.parent)
        try:
            cases = load_cases(self.path, display, suite, state.is_metric, state.ini_thresholds,
                               lambda kind: state.custom_metrics.get(kind, ()))
        except ConfigError as exc:
            yield QueryEvalFileError.from_parent(self, name="<file>", message=exc.located())
            return
        for case in cases:
            yield self._item(state, case, display)

    def _item(self, state: State, case: Case, display: str) -> QueryEvalItem:
        name = case.id
        first = state.ids.get(case.id)
        if first is not None:
            case.errors.append(f"{display}:{case.line}: id: duplicate id {case.id!r} "
                               f"(first defined at {first})")
            name = f"{case.id}@{case.line}"
        else:
            state.ids[case.id] = f"{display}:{case.line}"
        for metric, bound in state.cli_thresholds.items():
            if state.is_metric(case.kind, metric):
                case.thresholds[metric] = bound
        if case.difficulty is None and not case.errors:
            # a broken gold is reported when the case runs, not at collection
            with contextlib.suppress(Exception):
                case.difficulty = kind_registry.get_kind(case.kind).difficulty(case)
        item = QueryEvalItem.from_parent(self, name=name, case=case)
        marks = [state.mark(case.kind, "queryeval kind")]
        if case.difficulty:
            marks.append(state.mark(case.difficulty, "queryeval difficulty"))
        marks.extend(state.mark(t, "queryeval tag") for t in case.tags)
        for mark in marks:
            if mark is not None:
                item.add_marker(mark)
        if case.datasource:
            item.add_marker(pytest.mark.xdist_group(name=f"queryeval-{case.datasource}"))
        if case.skip:
            item.add_marker(pytest.mark.skip(reason=case.skip))
        if case.xfail and not state.audit:  # an xfail is about the model, never the gold
            item.add_marker(pytest.mark.xfail(reason=case.xfail))
        state.session.cases.append(case)
        return item


class QueryEvalItem(pytest.Item):
    def __init__(self, *, case: Case, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.case = case

    def runtest(self) -> None:
        state = self.config.stash[STATE]
        if state.audit:
            from .audit import audit_outcome

            outcome = audit_outcome(self.case, state.session, state.audit)
        else:
            outcome = run_case(self.case, state.session)
        record = case_record(self.case, outcome, self.nodeid, self.config.rootpath,
                             state.session.scrubber)
        xfail = None
        if state.verdicts is not None and not state.audit \
                and self.get_closest_marker("xfail") is None:
            record["baseline_status"], record["verdict"], xfail = state.verdicts.decide(record)
        self.stash[RECORD] = record
        state.gc.after_case()
        if state.junit_properties:
            self.user_properties.append(("queryeval.kind", self.case.kind))
            if self.case.difficulty:
                self.user_properties.append(("queryeval.difficulty", self.case.difficulty))
            for metric, value in sorted(record["metrics"].items()):
                self.user_properties.append((f"queryeval.{metric}", value))
        if xfail:
            pytest.xfail(xfail)  # reported as xfailed, with the reason, by pytest itself
        if outcome.status != "passed":
            raise CaseFailure(record)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException],
                     style: Any = None) -> Any:
        if isinstance(excinfo.value, CaseFailure):
            return failure_text(excinfo.value.record, spider_components=bool(
                self.config.getoption("queryeval_spider_table")),
                verbose=self.config.get_verbosity() > 0)
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, self.case.line - 1, f"{self.case.kind} case {self.case.id}"


class QueryEvalFileError(pytest.Item):
    """Stands for a case file that could not be read as YAML, so the session goes on."""

    def __init__(self, *, message: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.message = message

    def runtest(self) -> None:
        raise ConfigError(self.message)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException],
                     style: Any = None) -> Any:
        if isinstance(excinfo.value, ConfigError):
            return self.message
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, 0, f"case file {self.name}"
