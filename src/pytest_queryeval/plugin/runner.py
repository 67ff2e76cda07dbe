"""Collection and the run of the cases, in every process: a serial run, an xdist controller
(which collects and runs nothing) and each xdist worker.

Why an object: what collection learns (the suite configs, the case ids, the marks, the
baseline's case states) is what the run needs, in the same process. pytest's own plugins keep
such state on the object whose methods are the hooks (``StepwisePlugin``, ``LogXML``), so the
hooks here are methods of :class:`Runner`, registered by ``plugin.pytest_configure``; the
collection nodes reach it through ``config.stash[RUNNER]``. The end of the run (records,
reports, terminal summary) is :class:`~.controller.Controller`'s, in one process only.

Ordering kept from the module-level hooks this replaces: ``pytest_collection_modifyitems`` and
``pytest_collection_finish`` run last (after ``-k``/``-m``/``--lf`` deselection), and the run
loop is wrapped first (predictions are requested ahead before any case runs).

Why one module of this size: every method of :class:`Runner` is a hook or a helper of one,
and they share the state collection builds for the run (the suite configs, the ids, the
marks, the baseline's case states and, for ``--queryeval-gating=evidence``, the repeat budget
its adaptive repeats draw on); pytest's own plugins keep such a hook object in one module
(``StepwisePlugin``, ``LogXML``). What does not need that state lives beside it (``options``,
``runahead``, ``resume``, ``journal``, ``xdist``).
"""

from __future__ import annotations

import contextlib
import functools
import re
import sys
import warnings
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from .. import kinds as kind_registry
from .._util.gcpolicy import FreezePolicy
from .._util.paths import display
from ..baseline.verdicts import Verdicts
from ..engine import Evaluator, Hooks
from ..errors import QueryEvalError, QueryEvalWarning
from ..report.records import CaseRecord, final_outcome
from ..suite.checks import (
    MetricCatalog,
    check_baseline,
    check_pass_k_gates,
    check_suite,
    usage_message,
)
from ..suite.config import ConfigFinder
from . import unmatched
from .declare import FIXTURE
from .nodes import MORE_RECORDS, RECORD, QueryEvalFileError, QueryEvalItem
from .options import RunOptions
from .terminate import TermHandler, Terminated

if TYPE_CHECKING:
    from ..conclude import Outputs
    from .journal import Journal

#: The ``workeroutput`` key an xdist worker sends why it could not write its journal under.
JOURNAL_PROBLEM = "queryeval_journal_problem"
#: A name pytest takes as a marker (it refuses one starting with ``_``); another gets none.
_MARK = re.compile(r"^[A-Za-z][A-Za-z0-9_.+-]*$")


@contextlib.contextmanager
def shortened_interrupt(session: pytest.Session) -> Iterator[None]:
    """Ctrl-C raised afresh from the hook, its traceback cut there: pytest renders every frame
    (source and arguments) when interrupted, 1.2-1.5 s of the stop on a loaded machine for the
    40-55 frames down to a stuck case or the YAML parser, and shows only the last one unless
    --full-trace (which keeps them all)."""
    try:
        yield
    except KeyboardInterrupt as exc:
        if type(exc) not in (KeyboardInterrupt, Terminated) or session.config.option.fulltrace:
            raise
        raise type(exc)(*exc.args) from None


def custom_metric_names(config: pytest.Config) -> dict[str, set[str]]:
    """The metric names each kind's ``pytest_queryeval_metric_names`` hooks declare."""
    custom: dict[str, set[str]] = {}
    for kind in kind_registry.known_kinds():
        for names in config.hook.pytest_queryeval_metric_names(kind=kind, config=config):
            custom.setdefault(kind, set()).update(names or ())
    return custom


def is_metric(custom_metrics: dict[str, set[str]], kind: str, name: str) -> bool:
    """``name`` is a metric of ``kind`` (recorded by every kind, of the kind, or declared):
    :func:`..kinds.is_metric`, the one home of that question."""
    return kind_registry.is_metric(kind, name, custom_metrics.get(kind, ()))


def metric_catalog(custom_metrics: dict[str, set[str]]) -> MetricCatalog:
    """The metrics of every kind this session knows (checks of suite-wide names)."""
    return MetricCatalog(kind_registry.known_kinds(),
                         lambda kind, name: is_metric(custom_metrics, kind, name), custom_metrics)


def make_evaluator(config: pytest.Config, options: RunOptions) -> Evaluator:
    """The process's evaluator, its extension callbacks wired to the ``pytest_queryeval_*``
    hooks."""
    hooks = Hooks(
        predict=lambda case: config.hook.pytest_queryeval_predict(case=case, config=config),
        predict_active=lambda: bool(config.hook.pytest_queryeval_predict.get_hookimpls()),
        datasource=lambda name, spec: config.hook.pytest_queryeval_datasource(
            name=name, spec=spec, config=config),
        metrics=lambda case, pred, scored: config.hook.pytest_queryeval_metrics(
            case=case, prediction=pred, scored=scored, config=config),
    )
    return Evaluator(cache=getattr(config, "cache", None), no_cache=options.no_cache,
                     override=options.override, override_inline=options.override_inline,
                     hooks=hooks, search_paths=[config.rootpath],
                     concurrency=options.concurrency, repeat=options.repeat,
                     neighbours=options.neighbours, neighbour_base=options.neighbour_base,
                     judge_refresh=options.judge_refresh, gold_cache=options.gold_cache,
                     prediction_cache=options.prediction_cache)


class Runner:
    """The suite and the run of one process (see the module docstring)."""

    def __init__(self, config: pytest.Config, options: RunOptions, evaluator: Evaluator,
                 custom_metrics: dict[str, set[str]], *, worker: bool) -> None:
        self.config = config
        self.options = options
        self.evaluator = evaluator
        #: Metric names declared by ``pytest_queryeval_metric_names``, per kind.
        self.custom_metrics = custom_metrics
        #: This process is an xdist worker (decided once, in ``pytest_configure``).
        self.worker = worker
        self.finder = ConfigFinder(config.rootpath)
        #: Case id: where it was first defined (duplicates are errors of the later case).
        self.ids: dict[str, str] = {}
        self.marks: dict[str, pytest.MarkDecorator | None] = {}
        self.gc = FreezePolicy()
        #: Items deselected in this process (-k, -m, --lf, --deselect, --queryeval-shard).
        self.deselected = 0
        #: The per-case standing under a non-strict gating mode.
        self.verdicts: Verdicts | None = None
        #: Ids of every collected case, deselected ones too (a shard's report records them, so
        #: ``queryeval merge`` can tell a missing case from one that was never in the suite).
        #: An xdist controller, which collects nothing, has them from its workers.
        self.suite_ids: list[str] | None = None
        self.python_ids: list[str] = []
        #: The baseline file, resolved once from the selected case files' suite (see
        #: :meth:`RunOptions.baseline_path`); an xdist controller has it from its workers.
        self.baseline: Path | None = None
        #: Prediction ids that match no case (:mod:`.unmatched`), warned about at the end.
        self.unmatched: unmatched.Found = {}
        #: ``--queryeval-resume``: node id -> the previous attempt's record, reported instead
        #: of running the case (and asked of no predictor).
        self.carried: dict[str, CaseRecord] = {}
        #: SIGTERM as an interrupt while the session runs (:mod:`.terminate`).
        self.term = TermHandler()
        #: ``--queryeval-json``: this process's journal beside it (:mod:`.journal`; the
        #: controller's records, a serial run's answers too, an xdist worker's answers).
        self.journal: Journal | None = None

    @functools.cached_property
    def records_read(self) -> bool:
        """Whether anything reads the cases' records beyond the terminal: a report file
        (``--queryeval-json`` and every other format), the xdist controller a worker sends
        them to, or a ``pytest_queryeval_report`` or ``pytest_queryeval_metrics``
        implementation. Without one, what only a record carries is worked out for nobody
        (issue 53): the resume identity (a ``json.dumps`` of the case) and the golds'
        ``sql_hardness`` labels that need sqlglot (its import). Asked when the first case
        runs, once every conftest is registered; the evaluator is told then."""
        hook = self.config.hook
        read = bool(self.worker or any(self.options.report.files.values())
                    or hook.pytest_queryeval_report.get_hookimpls()
                    or hook.pytest_queryeval_metrics.get_hookimpls())
        self.evaluator.labels_read = read
        return read

    def begin(self) -> None:
        """The plugin woke up: SIGTERM interrupts the session as Ctrl-C does, and the journal
        beside the JSON report is started (:meth:`_start_journal`)."""
        self.term.install()
        self._start_journal()

    def _start_journal(self) -> None:
        """The process that ends the run starts the journal with what ``--queryeval-resume``
        carries (before any xdist worker starts); each worker appends the answers it receives
        to a file of its own."""
        options = self.options
        report = options.report.path("json")
        if report is None or options.audit:  # an audit asks no model, and has no identities
            return
        from .journal import AnswerLog, Journal, journal_path
        from .resume import identity

        main = journal_path(report)
        resume = options.resume
        if self.worker:
            worker_id = str(self.config.workerinput.get("workerid", "gw"))  # type: ignore[attr-defined]
            self.journal = Journal.worker(main.with_name(f"{main.name}.{worker_id}"))
            if self.journal.problem:  # the controller names it (xdist.XdistHooks)
                self.config.workeroutput[JOURNAL_PROBLEM] = self.journal.problem  # type: ignore[attr-defined]
        else:
            self.journal = Journal.start(main, resume.records.values() if resume else (),
                                         resume.answers if resume else None)
        predictions = options.predictions
        self.evaluator.answer_log = AnswerLog(resume.answers if resume else {}, self.journal,
                                              lambda case: identity(case, predictions))

    # -- what the nodes ask ------------------------------------------------------------
    def is_metric(self, kind: str, name: str) -> bool:
        return is_metric(self.custom_metrics, kind, name)

    def catalog(self) -> MetricCatalog:
        return metric_catalog(self.custom_metrics)

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

    # -- collection --------------------------------------------------------------------
    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config: pytest.Config,
                                      items: list[pytest.Item]) -> None:
        """Suite-wide problems of the collected suites' ``queryeval.yaml`` files, and a
        baseline that cannot be read (its path depends on the suite), end the session as one
        usage error before any case runs. An xdist worker cannot raise it (the worker would
        crash): it runs nothing and sends the message in a collect report, which the
        controller turns into the usage error (:class:`~.controller.Controller`)."""
        # the tests that score a case written in Python, by node id (their case ids are
        # known when they run): part of the suite a shard's report says it is a share of
        self.python_ids = [i.nodeid for i in items if FIXTURE in getattr(i, "fixturenames", ())]
        from ..predict.cache import warn_kept_nowhere

        suites = [self.finder.for_directory(d) for d in {Path(i.path).parent for i in items
                  if FIXTURE in getattr(i, "fixturenames", ())}]  # (a case file's: its cases')
        warn_kept_nowhere([*(i.case.prediction_source for i in items if isinstance(
            i, QueryEvalItem)), *(s for c in suites for s in (c.predictions, *c.models.values()))],
            self.evaluator)
        _warn_open_walls(items)
        if self.options.shard is not None:
            self._keep_shard(items)
        if self.options.resume is not None:
            self._carry(items)
        problems = check_suite(self.finder, self.catalog())
        problems += check_pass_k_gates(self.finder, (
            (item.case, self.evaluator.repeats(item.case)) for item in items
            if isinstance(item, QueryEvalItem)))
        problems += _writable_roles(items)
        files = {Path(item.path) for item in items
                 if isinstance(item, QueryEvalItem | QueryEvalFileError)
                 or FIXTURE in getattr(item, "fixturenames", ())}
        if self.options.wants_baseline and files:
            from ..suite.config import suite_dir

            self.baseline = self.options.baseline_path(
                suite_dir(self.finder, {f.parent for f in files}, config.rootpath))
            if self.options.report.baseline:
                problems += check_baseline(self.baseline, self.options.report.update_baseline)
        if not problems:
            _prepare_planting(items)
            return
        message = usage_message(problems)
        if not self.worker:
            raise pytest.UsageError(message)
        items.clear()
        report = pytest.CollectReport("queryeval.yaml", "failed", message, [])
        report.queryeval_usage = message  # type: ignore[attr-defined]
        config.hook.pytest_collectreport(report=report)

    def _keep_shard(self, items: list[pytest.Item]) -> None:
        """``--queryeval-shard I/N``: deselect the items of the other shards (cases by id,
        other items by node id), as pytest's own deselection does. With recorded durations
        (``--queryeval-shard-durations``) the cases are balanced by them instead of hashed."""
        from ..suite.shard import balanced_shards, shard_of

        assert self.options.shard is not None
        index, total = self.options.shard
        durations = self.options.shard_durations
        balanced = None
        if durations is not None:  # every runner collects the same cases: the same partition
            balanced = balanced_shards([i.case.id for i in items if isinstance(i, QueryEvalItem)],
                                       durations, total)
        keep: list[pytest.Item] = []
        drop: list[pytest.Item] = []
        for item in items:
            key = item.case.id if isinstance(item, QueryEvalItem) else item.nodeid
            shard = balanced.get(key) if balanced is not None else None
            if shard is None:
                shard = shard_of(key, total)
            (keep if shard == index else drop).append(item)
        if drop:
            items[:] = keep
            self.config.hook.pytest_deselected(items=drop)

    def _carry(self, items: list[pytest.Item]) -> None:
        """``--queryeval-resume``: the selected cases the previous attempt already scored."""
        from .resume import identity

        resume = self.options.resume
        assert resume is not None
        for item in items:
            if isinstance(item, QueryEvalItem):
                rec = resume.carried(item.case, identity(item.case, self.options.predictions),
                                     item.nodeid)
                if rec is not None:
                    self.carried[item.nodeid] = rec

    def pytest_deselected(self, items: list[pytest.Item]) -> None:
        """Counted so that a baseline is never written from a selection of the suite."""
        self.deselected += len(items)

    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        cases = self.evaluator.cases
        self.gc.after_collection(len(cases))  # items made after the last file
        self._load_verdicts()
        self._adaptive_repeats(session)
        found = unmatched.find(self.config, self.evaluator, self.display)
        if found is not None and not self.worker:
            self.unmatched = found
        if sys.exc_info()[0] is None:  # else collection was cut short: not the whole suite
            self.suite_ids = sorted([case.id for case in cases] + self.python_ids)
        if self.worker:  # the controller collects nothing
            from ..report.records import case_meta

            output = self.config.workeroutput  # type: ignore[attr-defined]
            if found is not None:
                output[unmatched.WORKER_KEY] = unmatched.encode(found)
            output["queryeval_suite"] = self.suite_ids
            output["queryeval_meta"] = {
                item.nodeid: case_meta(item.case, self.config.rootpath)
                for item in session.items if isinstance(item, QueryEvalItem)}
            if self.baseline is not None:
                output["queryeval_baseline"] = str(self.baseline)

    def _load_verdicts(self) -> None:
        """Each process that runs cases (serial, or every xdist worker) reads the baseline's
        case states once its cases are known."""
        mode = self.options.gating
        if self.options.audit:  # an audit judges the golds: no gating mode applies
            return
        if mode == "strict" or not self.options.report.baseline:
            if mode == "gates":
                self.verdicts = Verdicts("gates", None)
            return
        from ..report.baseline import load_baseline

        path = self.baseline
        try:
            base = load_baseline(path) if path is not None and (
                path.exists() or not self.options.report.update_baseline) else None
        except QueryEvalError:  # reported before the run (usage error) and again at the end
            base = None
        models = self.options.report.baseline_models()
        if base is not None and models:
            from ..baseline.retarget import retarget

            try:
                base = retarget(base, models, {c.model for c in self.evaluator.cases})
            except ValueError:  # reported at the end, where the comparison reads it
                base = None
        self.verdicts = Verdicts(mode, base, self.alpha())

    def alpha(self) -> float:
        """The evidence gate's alpha: ``--queryeval-significance``, else ``gates:
        {significance:}`` of the suite configs of this process's cases (the smallest), else ini
        ``queryeval_significance``, else 0.05 (each checked before the run). The same order as
        the baseline comparison's and as ``queryeval merge``'s (which reads what the shards
        recorded), so serial, ``-n 2`` and shards + merge conclude at one alpha."""
        from ..baseline.significance import resolve_significance

        suites = (self.finder.for_directory(d).significance
                  for d in sorted({case.file.parent for case in self.evaluator.cases}))
        try:
            alpha = resolve_significance(self.options.report.significance, suites,
                                         self.options.significance_ini)
        except ValueError:  # a usage error before the run; never reached by a run that runs
            alpha = None
        return 0.05 if alpha is None else alpha

    def evidence_outputs(self, out: Outputs) -> None:
        """``--queryeval-gating=evidence``: what the end of the run needs to conclude it (the
        alpha, the budget, ``--queryeval-inconclusive``); read from the options, since the
        xdist controller collects nothing."""
        if self.options.gating != "evidence" or self.options.audit:
            return
        from ..baseline.evidence import DEFAULT_BUDGET

        # the run's alpha as the comparison resolved it (the controller collects no case)
        out.evidence_alpha = out.significance if out.significance is not None else self.alpha()
        out.repeat_budget = self.options.repeat_budget or DEFAULT_BUDGET
        out.inconclusive = self.options.inconclusive

    def _adaptive_repeats(self, session: pytest.Session) -> None:
        """``--queryeval-gating=evidence``: the budget of the adaptive repeats
        (:class:`..baseline.evidence.Budget`), over the cases this process may run (an xdist
        worker's share of the run's budget is the budget divided by the workers)."""
        verdicts = self.verdicts
        if verdicts is None or verdicts.mode != "evidence" \
                or self.options.report.update_baseline:
            return
        from ..baseline.evidence import DEFAULT_BUDGET, Budget

        cases = sum(isinstance(item, QueryEvalItem) for item in session.items)
        workers = int(getattr(self.config.option, "numprocesses", None) or 0) or 1
        per_case = self.options.repeat_budget or DEFAULT_BUDGET
        self.evaluator.budget = Budget(per_case, cases, verdicts.alpha, verdicts.histories,
                                       share=1 / workers if self.worker else 1.0)

    # -- the run -----------------------------------------------------------------------
    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> Generator[None, Any, Any]:
        """The run starts: request the predictions of the items this process runs, ahead."""
        if not self.options.audit:  # an audit asks no predictor for anything
            from . import runahead

            runahead.start(session, self.evaluator, worker=self.worker)
        with shortened_interrupt(session):
            return (yield)

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_collection(self, session: pytest.Session) -> Generator[None, Any, Any]:
        """Ctrl-C during collection: raised afresh here (see :func:`shortened_interrupt`)."""
        with shortened_interrupt(session):
            return (yield)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None],
                                  ) -> Generator[None, Any, Any]:
        rep = yield
        if call.when == "teardown" or not (isinstance(item, QueryEvalItem | QueryEvalFileError)
                                           or RECORD in item.stash):
            return rep  # (a test that scored a case written in Python holds its record)
        if call.when == "setup" and not rep.skipped:
            return rep
        record = item.stash.get(RECORD, None)
        if record is None:
            record = self._fallback_record(item)
        elif call.when == "call":  # the report's copy is the one kept from here on (pytest
            del item.stash[RECORD]  # keeps every item to the end: one record per case, not two)
        more = item.stash.get(MORE_RECORDS, None)
        if more is not None and call.when == "call":  # a Python case on several sources:
            del item.stash[MORE_RECORDS]  # each record has its own case's outcome
            rep.queryeval_more = more
        record = {**record}
        if more is None or call.when != "call":
            record["outcome"] = final_outcome(record, call.when, rep.passed, rep.skipped,
                                              hasattr(rep, "wasxfail"))
        if record["outcome"] == "failed" and record.get("status") == "passed" \
                and call.excinfo is not None:
            record["reason"] = self._failed_after_check(call.excinfo)
        rep.queryeval = record  # travels to the xdist controller with the report
        pool = self.evaluator.pool
        if pool is not None and self.worker:
            from .runahead import worker_counts

            rep.queryeval_predictions = worker_counts(pool)
        return rep

    def _failed_after_check(self, excinfo: pytest.ExceptionInfo[BaseException]) -> str:
        """Why a test whose case passed its check failed all the same (an assertion after
        ``queryeval.check``, a second check): said, so the case is not listed as failed with
        no reason."""
        first = (str(excinfo.value).strip().splitlines() or [""])[0][:300]
        text = f"the test failed after its check passed: {excinfo.typename}"
        return self.evaluator.scrubber.text(f"{text}: {first}" if first else text)

    def _fallback_record(self, item: pytest.Item) -> CaseRecord:
        from ..report.records import case_record, error_record

        if isinstance(item, QueryEvalItem):
            return case_record(item.case, None, item.nodeid, item.config.rootpath,
                               self.evaluator.scrubber)
        return error_record(item.nodeid, getattr(item, "message", "invalid case file"),
                            file=self.display(item.path), path=str(item.path))

    def finish(self, session: pytest.Session, exitstatus: int) -> None:
        """The run is over in this process: sources closed and the pool ended (a run that
        ends normally lets the predictions other xdist workers wait for finish). A SIGTERM
        from here on does not cut the reports short."""
        self.term.finishing = True
        self.evaluator.close(drain=exitstatus != pytest.ExitCode.INTERRUPTED
                             and not session.shouldfail and not session.shouldstop)
        pool = self.evaluator.pool
        if self.worker and pool is not None:  # the final counts, for the controller's line
            from .runahead import worker_counts

            self.config.workeroutput["queryeval_predictions"] = worker_counts(pool)  # type: ignore[attr-defined]

    def release(self) -> None:
        """The config ends: objects frozen for the session go back to the collector, and
        SIGTERM to the handler it had before."""
        self.gc.release()
        self.term.restore()


def _warn_open_walls(items: list[pytest.Item]) -> None:
    """A warning per datasource of the collected cases and wall its type declares it cannot
    hold (:func:`..sources.walls.open_walls`): a suite on such a type is told, once, at
    collection, where pytest shows it."""
    from ..sources.walls import open_walls

    used = [(item.case.datasource or "default", item.case.source_spec) for item in items
            if isinstance(item, QueryEvalItem) and item.case.source_spec is not None]
    for found in open_walls(used):
        with contextlib.suppress(Warning):  # -W error: a report, not a crash of collection
            if found.file is None:
                warnings.warn(QueryEvalWarning(found.message), stacklevel=2)
            else:  # shown at the queryeval.yaml line that chose the type
                warnings.warn_explicit(QueryEvalWarning(found.message), QueryEvalWarning,
                                       found.file, found.line or 0)


def _prepare_planting(items: list[pytest.Item]) -> None:
    """The planted copies' PostgreSQL templates, made before any case runs (see
    :func:`..agents.copies.prepare`); the agents package is imported only when a collected
    case protects data."""
    cases = [i.case for i in items
             if isinstance(i, QueryEvalItem) and i.case.agent is not None
             and i.case.agent.protected]
    if cases:
        from ..agents.copies import prepare

        prepare(cases)


def _writable_roles(items: list[pytest.Item]) -> list[str]:
    """The roles of the PostgreSQL ``writable: sandbox`` datasources the collected task cases
    use, refused when more than LOGIN CREATEDB (:func:`..tasks.case.writable_role_problems`);
    the tasks package is imported only when a task case was collected."""
    cases = [i.case for i in items if isinstance(i, QueryEvalItem)
             and i.case.options.get("task") is not None]  # tasks.case.is_task, not imported
    if not cases:
        return []
    from ..tasks.case import writable_role_problems

    return writable_role_problems(cases)
