"""The pytest collection nodes: one File per case file, one Item per case.

The nodes hold no state of their own: what they share (the suite configs, the ids seen, the
evaluator) is the process's :class:`~.runner.Runner`, reached through ``config.stash[RUNNER]``.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

import pytest

from .. import kinds as kind_registry
from .._util.gcpolicy import gc_paused
from ..engine import run_case
from ..errors import ConfigError
from ..model import Case
from ..report.records import CaseRecord, case_record
from ..report.terminal import failure_text
from ..suite.cases import load_cases
from ..suite.config import with_cli_models
from ..suite.models import marker_name

if TYPE_CHECKING:
    from _pytest._code.code import TerminalRepr, TracebackStyle

    from .._util.gcpolicy import FreezePolicy
    from ..baseline.verdicts import Verdicts
    from ..engine import Evaluator
    from ..suite.config import ConfigFinder
    from .options import RunOptions
    from .terminate import TermHandler


class Runner(Protocol):
    """What the collection nodes (and the hook module) use of the process's
    :class:`~.runner.Runner`, which imports this module: a protocol keeps the two from
    importing each other."""

    options: RunOptions
    evaluator: Evaluator
    finder: ConfigFinder
    gc: FreezePolicy
    ids: dict[str, str]
    custom_metrics: dict[str, set[str]]
    verdicts: Verdicts | None
    carried: dict[str, CaseRecord]
    term: TermHandler

    @property
    def records_read(self) -> bool: ...
    def display(self, path: Path) -> str: ...
    def is_metric(self, kind: str, name: str) -> bool: ...
    def mark(self, name: str, help_text: str) -> pytest.MarkDecorator | None: ...
    def finish(self, session: pytest.Session, exitstatus: int) -> None: ...
    def release(self) -> None: ...

#: A case item's record, made when it runs (read by ``pytest_runtest_makereport``).
RECORD = pytest.StashKey[CaseRecord]()
#: A Python case on a list of datasources: the records of its other sources (plugin/pycases.py).
MORE_RECORDS = pytest.StashKey[list[CaseRecord]]()

@functools.cache
def _property_name(metric: str) -> str:
    """The ``queryeval.<metric>`` JUnit property name, one string per metric for the session:
    pytest keeps every item's properties to the end, and a new string per metric and case was
    2 KB of each case's memory at 27 metrics."""
    return f"queryeval.{metric}"


#: Shared ``(name, value)`` JUnit properties, by metric and value (see :func:`_property`).
_PROPERTIES: dict[tuple[str, float], tuple[str, float]] = {}
_MAX_PROPERTIES = 4096


def _property(metric: str, value: float | None) -> tuple[str, float | None]:
    """The ``(queryeval.<metric>, value)`` property of a case, one tuple for every case with
    the same score: most scores are 0, 1 or a few fractions, and a tuple per metric and case
    was a kilobyte of each case's memory. A float only (1 and 1.0 are written apart), never
    -0.0 or NaN (equal to another float, or to none)."""
    if type(value) is not float or value != value or (value == 0.0 and str(value) != "0.0"):
        return (_property_name(metric), value)
    key = (metric, value)
    shared = _PROPERTIES.get(key)
    if shared is None:
        shared = (_property_name(metric), value)
        if len(_PROPERTIES) < _MAX_PROPERTIES:
            _PROPERTIES[key] = shared
    return shared


#: The process's :class:`~.runner.Runner`, which the nodes read their suite and run from.
RUNNER = pytest.StashKey[Runner]()
#: The items pytest runs after a case item: ``pytest_runtest_protocol``'s ``nextitem`` (the
#: only place pytest names it) and, where the session runs its items in their collected order,
#: the one after it (:func:`upcoming`). The case sends their first queries ahead.
NEXT_ITEMS = pytest.StashKey[tuple[pytest.Item, ...]]()
#: Set on an item whose first queries were sent ahead (or found not to be sendable).
_PREFETCHED = pytest.StashKey[bool]()
#: The session's items by node id, their positions in ``session.items`` (:func:`upcoming`).
_ORDER = pytest.StashKey[dict[str, int]]()


def upcoming(item: pytest.Item, nextitem: pytest.Item) -> tuple[pytest.Item, ...]:
    """``nextitem`` and, when it follows ``item`` in ``session.items`` (the order a serial run
    and a contiguous xdist chunk keep), the item after it: the worker then always has the next
    case's queries queued while one of the two runs long (a pair took up to a millisecond on
    Chinook, as long as pytest's own time for an item). Under a scheduler that runs items in
    another order, only ``nextitem`` (a guess sent and not asked for costs only the worker's
    time)."""
    session = item.session
    order = session.stash.get(_ORDER, None)
    if order is None or len(order) != len(session.items):
        order = session.stash[_ORDER] = {it.nodeid: i for i, it in enumerate(session.items)}
    here = order.get(item.nodeid)
    if here is None or here + 2 >= len(session.items) \
            or session.items[here + 1] is not nextitem:
        return (nextitem,)
    return nextitem, session.items[here + 2]


class CaseFailure(Exception):
    """Raised by an item whose case failed or errored; rendered by ``repr_failure``."""

    def __init__(self, record: CaseRecord) -> None:
        super().__init__(record.get("id"))
        self.record = record


if TYPE_CHECKING:
    from _pytest.outcomes import XFailed
else:
    XFailed = pytest.xfail.Exception  # the public name of what pytest.xfail() raises


class CaseXfail(XFailed):
    """Raised by an item the gating mode reports as xfailed (``baseline``, ``gates``): what
    ``pytest.xfail(reason)`` raises, so pytest's skipping plugin reports it as xfailed with the
    reason, and the plugin's own type, so ``repr_failure`` renders it without the traceback
    pytest would build (issue 43: ~60 ms a case, the source of every frame re-parsed, for a
    text only ``--xfail-tb`` ever shows)."""

    def __init__(self, record: CaseRecord, reason: str) -> None:
        super().__init__(reason, pytrace=False)
        self.record = record


class QueryEvalFile(pytest.File):
    def collect(self) -> Any:
        runner = self.config.stash[RUNNER]
        with gc_paused():  # parsing allocates objects that stay alive, and no cycles
            items = list(self._collect(runner))
        runner.gc.after_collection(len(runner.evaluator.cases))
        return items

    def _collect(self, runner: Runner) -> Iterator[pytest.Item]:
        display = runner.display(self.path)
        suite = with_cli_models(runner.finder.for_directory(self.path.parent),
                                runner.options.cli_models, runner.options.fans_out_no_model)
        try:
            cases = load_cases(self.path, display, suite, runner.is_metric,
                               runner.options.ini_thresholds,
                               lambda kind: runner.custom_metrics.get(kind, ()),
                               runner.options.cli_thresholds)
        except ConfigError as exc:
            yield QueryEvalFileError.from_parent(self, name="<file>", message=exc.located())
            return
        if cases and not runner.options.no_prefetch and not self.config.option.collectonly:
            runner.evaluator.warm(cases[0], hook_active=bool(
                self.config.hook.pytest_queryeval_datasource.get_hookimpls()))
        for case in cases:
            yield self._item(runner, case, display)

    def _item(self, runner: Runner, case: Case, display: str) -> QueryEvalItem:
        name = case.id
        first = runner.ids.get(case.id)
        if first is not None:
            case.errors.append(f"{display}:{case.line}: id: duplicate id {case.id!r} "
                               f"(first defined at {first})")
            name = f"{case.id}@{case.line}"
        else:
            runner.ids[case.id] = f"{display}:{case.line}"
        if case.difficulty is None and not case.errors:
            # a broken gold is reported when the case runs, not at collection
            with contextlib.suppress(Exception):
                case.difficulty = kind_registry.get_kind(case.kind).difficulty(case)
        item = QueryEvalItem.from_parent(self, name=name, case=case)
        marks = [runner.mark(case.kind, "queryeval kind")]
        if case.difficulty:
            marks.append(runner.mark(case.difficulty, "queryeval difficulty"))
        marks.extend(runner.mark(t, "queryeval tag") for t in case.tags)
        if not case.reviewed:  # -m "not unreviewed" leaves mined, unconfirmed cases out
            marks.append(runner.mark("unreviewed", "queryeval: reviewed: false (queryeval mine)"))
        if case.dialect:
            marks.append(runner.mark(case.dialect, "queryeval SQL dialect"))
        if case.model:
            marks.append(runner.mark(marker_name(case.model), "queryeval model"))
        for mark in marks:
            if mark is not None:
                item.add_marker(mark)
        if case.datasource:
            item.add_marker(pytest.mark.xdist_group(name=f"queryeval-{case.datasource}"))
        if case.skip:
            item.add_marker(pytest.mark.skip(reason=case.skip))
        if case.xfail and not runner.options.audit:  # about the model, never the gold
            item.add_marker(pytest.mark.xfail(reason=case.xfail))
        runner.evaluator.cases.append(case)
        return item


#: Record fields that say where a case is in this checkout (a carried record takes them anew).
_WHERE = ("nodeid", "file", "path", "line")


class QueryEvalItem(pytest.Item):
    def __init__(self, *, case: Case, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.case = case

    def runtest(self) -> None:
        runner = self.config.stash[RUNNER]
        audit = runner.options.audit
        carried = runner.carried.get(self.nodeid)
        runner.records_read  # noqa: B018 (decided before the first case is scored)
        if carried is not None:  # --queryeval-resume: scored by an earlier attempt
            record = cast(CaseRecord, {**carried, **{k: v for k, v in case_record(
                self.case, None, self.nodeid, self.config.rootpath, runner.evaluator.scrubber,
            ).items() if k in _WHERE}})  # the carried record, where the case is now
            status = str(record.get("status"))
        else:
            interrupts = runner.term.interrupts
            self._skip_if_drifted(runner)  # an audit too judges no gold on moved data
            if audit:
                from ..audit import audit_outcome

                outcome = audit_outcome(self.case, runner.evaluator, audit)
            else:
                outcome = run_case(self.case, runner.evaluator)
                # After the case's own queries (a tie analysis of this case would otherwise
                # wait behind the next case's), for the items not yet sent.
                for following in self.stash.get(NEXT_ITEMS, ()):
                    _prefetch(runner, following)
            if runner.term.interrupts != interrupts:  # a library swallowed the Ctrl-C
                raise KeyboardInterrupt
            record = case_record(self.case, outcome, self.nodeid, self.config.rootpath,
                                 runner.evaluator.scrubber)
            status = outcome.status
            if not audit and runner.records_read:
                from .resume import identity

                record["identity"] = identity(self.case, runner.options.predictions)
        xfail = None
        if runner.verdicts is not None and not audit \
                and self.get_closest_marker("xfail") is None:
            record["baseline_status"], record["standing"], xfail = runner.verdicts.decide(record)
        self.stash[RECORD] = record
        runner.gc.after_case()
        if runner.options.junit_properties:
            self.user_properties.append(("queryeval.kind", self.case.kind))
            if self.case.difficulty:
                self.user_properties.append(("queryeval.difficulty", self.case.difficulty))
            for metric, value in sorted(record["metrics"].items()):
                self.user_properties.append(_property(metric, value))
        if xfail and not self.config.option.runxfail:  # (pytest.xfail() is a no-op then)
            raise CaseXfail(record, xfail)  # reported as xfailed, with the reason, by pytest
        if status != "passed":
            raise CaseFailure(record)

    def _skip_if_drifted(self, runner: Runner) -> None:
        """A pinned case whose data changed is reported ``drifted`` (a skip with the tables
        that changed, ``drifted`` in its record) and not scored: a pass or fail on moved data
        would be about the data, not the model (docs/mining.md)."""
        if not self.case.pin:
            return
        from ..engine.drift import drift_reason, drifted

        tables = drifted(self.case, runner.evaluator)
        if not tables:
            return
        record = case_record(self.case, None, self.nodeid, self.config.rootpath,
                             runner.evaluator.scrubber)
        reason = drift_reason(tables)
        record["drifted"] = tables
        record["status"], record["reason"] = "skipped", reason
        self.stash[RECORD] = record
        if runner.options.junit_properties:
            self.user_properties.append(("queryeval.drifted", ", ".join(tables)))
        pytest.skip(reason)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException],
                     style: TracebackStyle | None = None) -> str | TerminalRepr:
        value = excinfo.value
        if isinstance(value, CaseXfail) and not getattr(self.config.option, "xfail_tb", False):
            # shown by no summary (-rx prints the reason): the reason, for report plugins;
            # pytest's XFAILURES section (--xfail-tb) shows the whole text
            return f"{self.case.kind} case {self.case.id!r}: {value.msg}"
        if isinstance(value, CaseFailure | CaseXfail):
            return failure_text(value.record, spider_components=self.config.stash[
                RUNNER].options.report.spider_table, verbose=self.config.get_verbosity() > 0)
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, self.case.line - 1, f"{self.case.kind} case {self.case.id}"


def _prefetch(runner: Runner, item: pytest.Item) -> None:
    """Send the next case's first queries to its source's worker now (issue 30): the worker
    runs them while this case is scored and pytest reports it, on the machine's other core.
    Only for a prediction the suite holds (never one asked of a model or a hook) and where
    the kind says the queries are exactly those the case will run; anything unsure sends
    nothing, and a pair sent and not used costs only the worker's time."""
    if runner.options.no_prefetch or not isinstance(item, QueryEvalItem) \
            or item.stash.get(_PREFETCHED, False) or item.nodeid in runner.carried \
            or item.get_closest_marker("skip") is not None:
        return
    item.stash[_PREFETCHED] = True
    case = item.case
    with contextlib.suppress(Exception):  # the case reports its own problems when it runs
        kind = kind_registry.get_kind(case.kind)
        prefetch = getattr(kind, "prefetch", None)
        sends_ahead = getattr(kind, "sends_ahead", None)
        # before the prediction is looked up: a schema-only source sends nothing ahead
        if prefetch is None or (sends_ahead is not None
                                and not sends_ahead(case, runner.evaluator)):
            return
        hook = bool(item.config.hook.pytest_queryeval_predict.get_hookimpls())
        prediction = runner.evaluator.fixed_prediction(case, hook_active=hook)
        if prediction is not None:
            prefetch(case, prediction.value, runner.evaluator)


class QueryEvalFileError(pytest.Item):
    """Stands for a case file that could not be read as YAML, so the session goes on."""

    def __init__(self, *, message: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.message = message

    def runtest(self) -> None:
        raise ConfigError(self.message)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException],
                     style: TracebackStyle | None = None) -> str | TerminalRepr:
        if isinstance(excinfo.value, ConfigError):
            return self.message
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, 0, f"case file {self.name}"


def register_marks(config: pytest.Config) -> list[str]:
    """Register every mark the plugin puts on items, and the custom kinds of the
    ``pytest_queryeval_kinds`` hook (returned, to be unregistered when the config ends).

    Whatever is installed: with --strict-markers or -W error an unregistered mark aborts
    collection. pytest-xdist registers ``xdist_group`` too, but only when it is installed and
    enabled."""
    config.addinivalue_line(
        "markers", "xdist_group(name): queryeval datasource group (pytest-xdist --dist loadgroup)")
    for name in kind_registry.KIND_CLASSES:
        config.addinivalue_line("markers", f"{name}: queryeval kind")
    for name in ("easy", "medium", "hard", "extra"):
        config.addinivalue_line("markers", f"{name}: queryeval difficulty (given, or the gold's "
                                            "SQL hardness)")
    custom_kinds: list[str] = []
    # pluggy calls the latest registered first and the built-ins (trylast) last: applied in
    # reverse, a later plugin's name replaces an earlier one's
    for result in reversed(config.hook.pytest_queryeval_kinds(config=config)):
        for name, kind in (result or {}).items():
            if kind_registry.KIND_CLASSES.get(name) == kind:
                continue  # the built-in default implementation's own entry
            kind_registry.register(name, kind)
            custom_kinds.append(name)
            config.addinivalue_line("markers", f"{name}: queryeval kind")
    return custom_kinds


def register_entries(config: pytest.Config) -> Callable[[], None]:
    """Register the marks and kinds (:func:`register_marks`), and the datasource types and
    prediction sources of the ``pytest_queryeval_source_types`` and
    ``pytest_queryeval_prediction_sources`` hooks (the built-in tables are their default
    implementation); returns what forgets them when the config ends."""
    from .. import predict, sources

    kinds = register_marks(config)
    types: list[str] = []
    for result in reversed(config.hook.pytest_queryeval_source_types(config=config)):
        for name, entry in (result or {}).items():
            sources.register_type(name, entry)
            types.append(name)
    predictors: list[str] = []
    for result in reversed(config.hook.pytest_queryeval_prediction_sources(config=config)):
        for name, cls in (result or {}).items():
            predict.register_source(name, cls)
            predictors.append(name)

    def forget() -> None:
        for name in kinds:
            kind_registry.unregister(name)
        for name in types:
            sources.unregister_type(name)
        for name in predictors:
            predict.unregister_source(name)
    return forget
