"""pytest-queryeval: the pytest hooks. Everything else is importable without pytest."""

from __future__ import annotations

import fnmatch
import time
from pathlib import Path
from typing import Any

import pytest

from . import hookspecs, unmatched
from . import kinds as kind_registry
from .collect import RECORD, STATE, QueryEvalFile, QueryEvalFileError, QueryEvalItem, State
from .config import ConfigFinder
from .engine import Evaluator, Hooks
from .errors import QueryEvalError
from .report.records import final_outcome
from .suitecheck import check_baseline, check_options, check_suite, ini_line, usage_message
from .thresholds import parse_cli

_T0 = pytest.StashKey[float]()
_CUSTOM_KINDS = pytest.StashKey[list[str]]()


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("queryeval", "natural-language-to-query evaluation")
    add = group.addoption
    add("--queryeval-predictions", metavar="PATH|module:function",
        help="take predictions from this file or callable for this run (compare model versions)")
    add("--queryeval-predictions-override-inline", action="store_true",
        help="let --queryeval-predictions replace the cases' inline predicted: too")
    add("--queryeval-concurrency", metavar="N",
        help="simultaneous prediction requests of each live source (python, http, command, "
             "openai) in the whole session, xdist workers included; overrides its "
             "concurrency: (default 4)")
    add("--queryeval-threshold", action="append", default=[], metavar="METRIC=VALUE",
        help="override a threshold for this run: metric=0.8, metric=min:0.8, metric=max:2")
    add("--queryeval-json", metavar="PATH", help="write the JSON report here (atomically)")
    add("--queryeval-xlsx", metavar="PATH", help="write the Excel workbook here")
    add("--queryeval-html", metavar="PATH", help="write the self-contained HTML report here")
    add("--queryeval-markdown", metavar="PATH", help="write the Markdown summary here")
    add("--queryeval-no-step-summary", action="store_true",
        help="do not append the Markdown summary to $GITHUB_STEP_SUMMARY")
    add("--queryeval-no-cache", action="store_true", help="bypass the gold-result cache")
    add("--queryeval-baseline", metavar="PATH",
        help="compare with this JSON report (a bare file name lies beside the suite)")
    add("--queryeval-update-baseline", action="store_true",
        help="write this run's JSON report to the baseline (--queryeval-baseline, else ini "
             "queryeval_baseline)")
    add("--queryeval-verdict", choices=("strict", "baseline", "gates"), default=None,
        help="what fails the session (ini queryeval_verdict, default strict): strict, every "
             "case below its threshold; baseline, only cases that passed in "
             "--queryeval-baseline (known failures are xfailed); gates, only gates and the "
             "baseline comparison (cases below threshold are xfailed)")
    add("--queryeval-force-baseline", action="store_true",
        help="with --queryeval-update-baseline: write the baseline even from a filtered, "
             "interrupted or erroring run")
    add("--queryeval-model-label", metavar="LABEL",
        help="name the model under test in the reports and the baseline (queryeval.yaml model:)")
    add("--queryeval-max-drop", action="append", default=[], metavar="DELTA|METRIC=DELTA",
        help="fail when an aggregate drops more than this versus the baseline (repeatable)")
    add("--queryeval-repeat", type=int, default=None, metavar="N",
        help="ask for N predictions per case (non-deterministic models) and score each; "
             "overrides the cases' repeat:")
    add("--queryeval-shard", metavar="I/N", default=None,
        help="run only shard I of N (1-based; a stable hash of the case id picks each case's "
             "shard); the shards' JSON reports are merged with 'queryeval merge'")
    add("--queryeval-significance", metavar="ALPHA", default=None,
        help="with --queryeval-baseline: a drop fails only when it is significant at ALPHA "
             "(exact McNemar on the pass/fail flips, paired bootstrap interval per metric); "
             "ini queryeval_significance, queryeval.yaml gates: {significance: ALPHA}")
    # No argparse choices: a bare flag followed by a path is rewritten to =error in
    # pytest_load_initial_conftests, after argparse has read the path as its value once.
    add("--queryeval-audit-golds", nargs="?", const="error", default=None, metavar="warn",
        help="audit the golds instead of scoring predictions: run every gold as its own "
             "prediction and lint it (docs/auditing.md); fails on error findings, =warn "
             "only reports them")
    add("--queryeval-tags", action="store_true", help="add a per-tag table to the summary")
    add("--queryeval-spider-table", action="store_true",
        help="print the official Spider evaluator's full exact/partial matching table")
    add("--queryeval-worst", type=int, default=5, metavar="N",
        help="list the N worst cases in the summary (default 5)")
    parser.addini("queryeval_files", type="args", default=["test_*.yaml", "test_*.yml"],
                  help="glob patterns of YAML case files")
    parser.addini("queryeval_thresholds", type="linelist", default=[],
                  help="default thresholds, one metric=value per line")
    parser.addini("queryeval_junit_properties", type="bool", default=True,
                  help="write queryeval.<metric> properties on junit testcases")
    parser.addini("queryeval_verdict", default="strict",
                  help="strict, baseline or gates (see --queryeval-verdict)")
    parser.addini("queryeval_significance", default="",
                  help="significance level of the baseline gate (see --queryeval-significance)")
    parser.addini("queryeval_baseline", default="queryeval-baseline.json",
                  help="baseline file for --queryeval-update-baseline when --queryeval-baseline "
                       "is not given (a bare name lies beside the suite, else rootdir-relative)")


AUDIT_FLAG = "--queryeval-audit-golds"


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config, parser: pytest.Parser,
                                  args: list[str]) -> None:
    """A bare ``--queryeval-audit-golds`` means ``=error``: argparse would otherwise take the
    next word (``pytest --queryeval-audit-golds my_suite``) as the option's value and refuse
    it. A value is only ever attached with ``=``."""
    args[:] = [f"{AUDIT_FLAG}=error" if a == AUDIT_FLAG else a for a in args]


def pytest_configure(config: pytest.Config) -> None:
    # Every mark the plugin puts on items is registered here, whatever is installed: with
    # --strict-markers or -W error an unregistered mark aborts collection. pytest-xdist registers
    # ``xdist_group`` too, but only when it is installed and enabled.
    config.addinivalue_line(
        "markers", "xdist_group(name): queryeval datasource group (pytest-xdist --dist loadgroup)")
    for name in kind_registry.KIND_CLASSES:
        config.addinivalue_line("markers", f"{name}: queryeval kind")
    for name in ("easy", "medium", "hard", "extra"):
        config.addinivalue_line("markers", f"{name}: queryeval difficulty (Spider hardness)")
    custom_kinds: list[str] = []
    for result in config.hook.pytest_queryeval_kinds(config=config):
        for name, kind in (result or {}).items():
            kind_registry.register(name, kind)
            custom_kinds.append(name)
            config.addinivalue_line("markers", f"{name}: queryeval kind")
    config.stash[_CUSTOM_KINDS] = custom_kinds
    try:
        ini_thresholds = parse_cli(config.getini("queryeval_thresholds"))
        cli_thresholds = parse_cli(config.getoption("queryeval_threshold"))
    except ValueError as exc:
        raise pytest.UsageError(f"queryeval: {exc}") from None
    override = None
    value = config.getoption("queryeval_predictions")
    if value:
        from .predict import predictor_from_cli

        override = predictor_from_cli(value, config.invocation_params.dir)
    override_inline = bool(config.getoption("queryeval_predictions_override_inline"))
    if override_inline and not value:
        raise pytest.UsageError("queryeval: --queryeval-predictions-override-inline needs "
                                "--queryeval-predictions")
    concurrency = None
    if config.getoption("queryeval_concurrency") is not None:
        from .predict.pool import parse_concurrency

        try:
            concurrency = parse_concurrency(config.getoption("queryeval_concurrency"))
        except ValueError as exc:
            raise pytest.UsageError(f"queryeval: --queryeval-concurrency {exc}") from None
    hooks = Hooks(
        predict=lambda case: config.hook.pytest_queryeval_predict(case=case, config=config),
        datasource=lambda name, spec: config.hook.pytest_queryeval_datasource(
            name=name, spec=spec, config=config),
        metrics=lambda case, pred, scored: config.hook.pytest_queryeval_metrics(
            case=case, prediction=pred, scored=scored, config=config),
    )
    session = Evaluator(cache=getattr(config, "cache", None),
                        no_cache=config.getoption("queryeval_no_cache"), override=override,
                        override_inline=override_inline, hooks=hooks,
                        search_paths=[config.rootpath], concurrency=concurrency,
                        repeat=config.getoption("queryeval_repeat"))
    state = State(config, ConfigFinder(config.rootpath), session, ini_thresholds, cli_thresholds,
                  bool(config.getini("queryeval_junit_properties")))
    for kind in kind_registry.known_kinds():
        for names in config.hook.pytest_queryeval_metric_names(kind=kind, config=config):
            state.custom_metrics.setdefault(kind, set()).update(names or ())
    if not hasattr(config, "workerinput"):  # the controller has checked them for the workers
        _check_options(config, state)
    try:
        from .verdict import parse_mode

        state.verdict_mode = parse_mode(config.getoption("queryeval_verdict"),
                                        str(config.getini("queryeval_verdict")),
                                        bool(config.getoption("queryeval_baseline")))
    except ValueError as exc:
        raise pytest.UsageError(f"queryeval: {exc}") from None
    state.audit = config.getoption("queryeval_audit_golds")
    config.stash[STATE] = state
    config.stash[_T0] = time.time()
    if not hasattr(config, "workerinput"):
        from .runahead import ProgressLine

        state.progress = ProgressLine(config)  # an xdist controller's: its workers' counts
        config.pluginmanager.register(_RecordCollector(state, config), "queryeval-records")


def _check_options(config: pytest.Config, state: State) -> None:
    """Every option and ini value, before collection: a usage error lists all problems."""
    get = config.getoption
    ini = [(metric, ini_line(config.inipath, "queryeval_thresholds", metric))
           for metric in state.ini_thresholds]
    problems = check_options(
        catalog=state.catalog(), invocation_dir=config.invocation_params.dir,
        thresholds=state.cli_thresholds, ini_thresholds=ini,
        max_drop=get("queryeval_max_drop"), baseline=get("queryeval_baseline"),
        significance=(get("queryeval_significance"),
                      str(config.getini("queryeval_significance") or "")),
        significance_where=ini_line(config.inipath, "queryeval_significance",
                                    str(config.getini("queryeval_significance") or "")),
        outputs={f"--queryeval-{name}": get(f"queryeval_{name}")
                 for name in ("json", "xlsx", "html", "markdown")},
        xlsx=bool(get("queryeval_xlsx")), worst=get("queryeval_worst"))
    audit = get("queryeval_audit_golds")
    if audit not in (None, "error", "warn"):
        problems.append(f"--queryeval-audit-golds={audit}: must be error or warn")
    repeat = get("queryeval_repeat")
    if repeat is not None and repeat < 1:
        problems.append(f"--queryeval-repeat={repeat}: must be 1 or more")
    if get("queryeval_shard"):
        from .shard import parse_shard

        try:
            parse_shard(get("queryeval_shard"))
        except ValueError as exc:
            problems.append(str(exc))
    if get("queryeval_audit_golds") and get("queryeval_update_baseline"):
        problems.append("--queryeval-update-baseline cannot be used with "
                        "--queryeval-audit-golds: an audit scores the golds, not a model")
    if problems:
        raise pytest.UsageError("\n".join(["queryeval: invalid options:",
                                           *(f"  {p}" for p in problems)]))


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> QueryEvalFile | None:
    if _is_case_file(file_path, parent.config):
        return QueryEvalFile.from_parent(parent, path=file_path)
    return None


def _is_case_file(path: Path, config: pytest.Config) -> bool:
    """A YAML file whose name matches ini ``queryeval_files``."""
    return path.suffix in (".yaml", ".yml") and any(
        fnmatch.fnmatch(path.name, p) for p in config.getini("queryeval_files"))


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config,
                                  items: list[pytest.Item]) -> None:
    """Suite-wide problems of the collected suites' ``queryeval.yaml`` files, and a baseline
    that cannot be read (its path depends on the suite), end the session as one usage error
    before any case runs. An xdist worker cannot raise it (the worker
    would crash): it runs nothing and sends the message in a collect report, which the
    controller turns into the usage error (``_RecordCollector``)."""
    state = config.stash.get(STATE, None)
    if state is None:
        return
    if config.getoption("queryeval_shard"):
        _keep_shard(config, items)
    problems = check_suite(state.finder, state.catalog())
    baseline = config.getoption("queryeval_baseline")
    files = {Path(item.path) for item in items
             if isinstance(item, QueryEvalItem | QueryEvalFileError)}
    if baseline and files:
        from .verdict import baseline_file, suite_dir

        path = baseline_file(baseline, str(config.getini("queryeval_baseline")),
                             suite=suite_dir(state.finder, {f.parent for f in files},
                                             config.rootpath),
                             invocation_dir=config.invocation_params.dir,
                             rootdir=config.rootpath)
        problems += check_baseline(path, bool(config.getoption("queryeval_update_baseline")))
    if not problems:
        return
    message = usage_message(problems)
    if not hasattr(config, "workerinput"):
        raise pytest.UsageError(message)
    items.clear()
    report = pytest.CollectReport("queryeval.yaml", "failed", message, [])
    report.queryeval_usage = message  # type: ignore[attr-defined]
    config.hook.pytest_collectreport(report=report)


def _keep_shard(config: pytest.Config, items: list[pytest.Item]) -> None:
    """``--queryeval-shard I/N``: deselect the items of the other shards (cases by id, other
    items by node id), as pytest's own deselection does."""
    from .shard import parse_shard, shard_of

    index, total = parse_shard(config.getoption("queryeval_shard"))
    keep: list[pytest.Item] = []
    drop: list[pytest.Item] = []
    for item in items:
        key = item.case.id if isinstance(item, QueryEvalItem) else item.nodeid
        (keep if shard_of(key, total) == index else drop).append(item)
    if drop:
        items[:] = keep
        config.hook.pytest_deselected(items=drop)


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    state = session.config.stash.get(STATE, None)
    if state is not None:
        state.gc.after_collection(len(state.session.cases))  # items made after the last file
        _load_verdicts(session.config, state)
        unmatched.after_collection(session.config, state)
        state.suite_ids = sorted(case.id for case in state.session.cases)
        if hasattr(session.config, "workerinput"):  # the controller collects nothing
            from .report.records import case_meta

            output = session.config.workeroutput  # type: ignore[attr-defined]
            output["queryeval_suite"] = state.suite_ids
            output["queryeval_meta"] = {
                item.nodeid: case_meta(item.case, session.config.rootpath)
                for item in session.items if isinstance(item, QueryEvalItem)}


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtestloop(session: pytest.Session) -> Any:
    """The run starts: request the predictions of the items this process runs, ahead."""
    state = session.config.stash.get(STATE, None)
    if state is not None and not state.audit:  # an audit asks no predictor for anything
        from . import runahead

        runahead.start(session, state)
    return (yield)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """xdist controller: a worker on this machine shares the session's predictions with the
    others (:mod:`.predict.exchange`); one elsewhere requests each case as it is sent."""
    state = node.config.stash.get(STATE, None)
    spec = getattr(getattr(node, "gateway", None), "spec", None)
    if state is None or state.audit or not getattr(spec, "popen", False) or \
            getattr(spec, "via", None):
        return
    from .predict import exchange

    if not exchange.available():
        return
    if state.exchange_root is None:
        state.exchange_root = exchange.create_root()
    node.workerinput["queryeval_exchange"] = str(state.exchange_root)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """xdist controller: what a worker found after its collection (prediction ids)."""
    output = getattr(node, "workeroutput", None)
    if not isinstance(output, dict):
        return
    unmatched.from_worker(node.config, output)
    state = node.config.stash.get(STATE, None)
    if state is None:
        return
    if state.suite_ids is None and "queryeval_suite" in output:
        state.suite_ids = [str(i) for i in output["queryeval_suite"]]
    if isinstance(output.get("queryeval_meta"), dict):
        state.case_meta.update(output["queryeval_meta"])
    if state.progress is not None:
        state.progress.from_worker(str(getattr(getattr(node, "gateway", None), "id", "?")),
                                   output.get("queryeval_predictions"))


def _load_verdicts(config: pytest.Config, state: State) -> None:
    """Each process that runs cases (serial, or every xdist worker) reads the baseline's case
    states once its cases are known (a bare baseline name lies beside their suite)."""
    if state.audit:  # an audit judges the golds: no baseline verdict applies
        return
    if state.verdict_mode == "strict" or not config.getoption("queryeval_baseline"):
        if state.verdict_mode == "gates":
            from .verdict import Verdicts

            state.verdicts = Verdicts("gates", None)
        return
    from .report.baseline import load_baseline
    from .verdict import Verdicts, baseline_file, suite_dir

    path = baseline_file(config.getoption("queryeval_baseline"),
                         str(config.getini("queryeval_baseline")),
                         suite=suite_dir(state.finder, {c.file.parent for c in state.session.cases},
                                         config.rootpath),
                         invocation_dir=config.invocation_params.dir, rootdir=config.rootpath)
    try:
        base = load_baseline(path) if path.exists() or not config.getoption(
            "queryeval_update_baseline") else None
    except QueryEvalError:  # reported before the run (usage error) and again at the end
        base = None
    state.verdicts = Verdicts(state.verdict_mode, base)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    rep = yield
    if call.when == "teardown" or not isinstance(item, QueryEvalItem | QueryEvalFileError):
        return rep
    if call.when == "setup" and not rep.skipped:
        return rep
    record = item.stash.get(RECORD, None)
    if record is None:
        record = _fallback_record(item)
    record = {**record}
    record["outcome"] = final_outcome(record, call.when, rep.passed, rep.skipped,
                                      hasattr(rep, "wasxfail"))
    rep.queryeval = record  # travels to the xdist controller with the report
    pool = item.config.stash[STATE].session.pool
    if pool is not None and hasattr(item.config, "workerinput"):
        from .runahead import worker_counts

        rep.queryeval_predictions = worker_counts(pool)
    return rep


def _fallback_record(item: pytest.Item) -> dict[str, Any]:
    from .report.records import case_record, error_record

    state = item.config.stash[STATE]
    if isinstance(item, QueryEvalItem):
        return case_record(item.case, None, item.nodeid, item.config.rootpath,
                           state.session.scrubber)
    return error_record(item.nodeid, getattr(item, "message", "invalid case file"),
                        file=state.display(item.path), path=str(item.path))


def pytest_deselected(items: list[pytest.Item]) -> None:
    """Counted so that a baseline is never written from a selection of the suite."""
    if items:
        state = items[0].config.stash.get(STATE, None)
        if state is not None:
            state.deselected += len(items)


#: The ``when`` of the report xdist makes for a case whose worker crashed while running it.
XDIST_CRASH = "???"


class _RecordCollector:
    """Receives every case record on the controller (or in a serial run), and the usage
    error an xdist worker found in the suite configuration."""

    def __init__(self, state: State, config: pytest.Config) -> None:
        self.state = state
        self.config = config

    @pytest.hookimpl(tryfirst=True)
    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        message = getattr(report, "queryeval_usage", None)
        if message:  # before any worker is given a case: the session ends with exit status 4
            raise pytest.UsageError(message)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        record = getattr(report, "queryeval", None)
        if record is not None:
            self.state.records[report.nodeid] = record
            if self.state.progress is not None:
                self.state.progress.from_report(report)
        elif str(report.when) == XDIST_CRASH and report.failed and _is_case_file(
                Path(report.nodeid.split("::", 1)[0]), self.config):
            # xdist: the worker running this case crashed, and sent no record (its record is
            # made when the session ends, with what the other workers sent of the case)
            self.state.crashed[report.nodeid] = (
                f"{report.longrepr}: the worker process died (a crash in native code, "
                "os._exit, the out-of-memory killer); the case has no result")

    @pytest.hookimpl(trylast=True)  # after the terminal wrote the case's result
    def pytest_runtest_logfinish(self) -> None:
        if self.state.progress is not None:
            self.state.progress.update()  # the predictions progress line, when one is due


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Aggregate, gate, compare and write reports (controller only), before junit is written."""
    config = session.config
    state = config.stash.get(STATE, None)
    if state is None:
        return
    # a run that ends normally lets the predictions other xdist workers wait for finish
    state.session.close(drain=exitstatus != pytest.ExitCode.INTERRUPTED
                        and not session.shouldfail and not session.shouldstop)
    if hasattr(config, "workerinput"):
        pool = state.session.pool
        if pool is not None:  # the final counts, for the controller's closing line
            from .runahead import worker_counts

            config.workeroutput["queryeval_predictions"] = worker_counts(pool)  # type: ignore[attr-defined]
        return
    from .finish import finish_session

    started = config.stash.get(_T0, time.time())
    notes, errors = unmatched.warn(config)
    config.stash[_NOTES] = notes
    if errors:
        config.stash[_ERRORS] = [*config.stash.get(_ERRORS, []), *errors]
        if session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
    try:
        state.gc.before_finish()
        finish_session(session, state, started, int(exitstatus))
    except QueryEvalError as exc:
        config.stash[_ERRORS] = [*config.stash.get(_ERRORS, []), exc.reason()]
        if session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED


_ERRORS = pytest.StashKey[list[str]]()
_NOTES = pytest.StashKey[list[str]]()


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    if hasattr(config, "workerinput"):
        return
    from .finish import SUMMARY

    state = config.stash.get(STATE, None)
    if state is not None and state.progress is not None:
        state.progress.close()
    lines = config.stash.get(SUMMARY, None)
    errors = config.stash.get(_ERRORS, [])
    notes = config.stash.get(_NOTES, [])
    if not lines and not errors and not notes:
        return
    terminalreporter.write_sep("=", "queryeval")
    for line in notes:
        terminalreporter.write_line(line, yellow=True)
    for line in lines or []:
        red = line.startswith(("gate FAIL", "REGRESSION", "error:"))
        green = line.startswith(("gate PASS", "OK:"))
        terminalreporter.write_line(line, red=red, green=green and not red)
    for line in errors:  # already prefixed: "error: ...", "missing dependency: ..."
        terminalreporter.write_line(line, red=True)


@pytest.hookimpl(trylast=True)  # after pytest's own end-of-run gc.collect(), which is then cheap
def pytest_unconfigure(config: pytest.Config) -> None:
    state = config.stash.get(STATE, None)
    if state is not None:
        state.gc.release()
        if state.exchange_root is not None:
            from .predict.exchange import remove_root

            remove_root(state.exchange_root)
    for name in config.stash.get(_CUSTOM_KINDS, []):
        kind_registry.unregister(name)


def pytest_report_header(config: pytest.Config) -> str | None:
    value = config.getoption("queryeval_predictions")
    return f"queryeval: predictions from {value}" if value else None
