"""The plugin's options, declared once and read once into typed records.

Why one place: the pytest plugin and ``queryeval merge`` take the same report and baseline
options, and a run reads them at several moments (before collection, after it, at the end).
Declaring them here for both (:func:`add_report_options` takes ``parser.addoption`` or
``ArgumentParser.add_argument``, as pytest-benchmark's option groups do) keeps one default and
one help text per option; reading them once (:meth:`RunOptions.from_config`) keeps every check in
one usage error, as before, and leaves no ``getoption`` anywhere else.

API (everything else here is private)::

    add_run_options(group.addoption); add_report_options(group.addoption); add_ini(parser.addini)
    options = RunOptions.from_config(config, catalog)    # pytest.UsageError listing every problem
    path = options.baseline_path(suite)                 # the baseline file of this suite
    outputs = options.report.outputs(baseline_path=..., significance=..., display=...)

    ReportOptions.from_namespace(args, Path.cwd())      # queryeval merge

Importable without pytest: pytest is imported only by :meth:`RunOptions.from_config`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .conclude import WORST, Outputs

if TYPE_CHECKING:
    import pytest

    from .model import Threshold
    from .predict import Predictor
    from .resume import Resume
    from .suitecheck import MetricCatalog

AddOption = Callable[..., object]

VERDICT_MODES = ("strict", "baseline", "gates")
AUDIT_FLAG = "--queryeval-audit-golds"
#: The report files, by option name (``--queryeval-<name>``).
REPORT_FILES = ("json", "xlsx", "html", "markdown")


def add_run_options(add: AddOption) -> None:
    """The options of a pytest run only (what predicts and scores the cases)."""
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
    add("--queryeval-no-cache", action="store_true", help="bypass the gold-result cache")
    add("--queryeval-gold-cache", metavar="DIR", default=None,
        help="also keep gold results in this directory, shared by every runner of a sharded "
             "run (content-addressed entries, atomic writes); ini queryeval_gold_cache")
    add("--queryeval-model-label", metavar="LABEL",
        help="name the model under test in the reports and the baseline (queryeval.yaml model:)")
    add("--queryeval-repeat", type=int, default=None, metavar="N",
        help="ask for N predictions per case (non-deterministic models) and score each; "
             "overrides the cases' repeat:")
    add("--queryeval-shard", metavar="I/N|auto", default=None,
        help="run only shard I of N (1-based; a stable hash of the case id picks each case's "
             "shard); auto: I and N from the scheduler (QUERYEVAL_SHARD_INDEX/_COUNT, GitLab "
             "CI_NODE_INDEX/_TOTAL, CircleCI, Buildkite, SLURM arrays, Kubernetes Indexed "
             "Jobs); the shards' JSON reports are merged with 'queryeval merge'")
    add("--queryeval-shard-durations", metavar="REPORT.json", default=None,
        help="with --queryeval-shard: balance the shards by the case durations this earlier "
             "JSON report recorded (every runner computes the same partition); ini "
             "queryeval_shard_durations")
    add("--queryeval-resume", metavar="REPORT.json", default=None,
        help="a retry: carry the cases this earlier JSON report scored with the same case "
             "and prediction source (passed, failed, xfailed) instead of running them again")
    # No argparse choices: a bare flag followed by a path is rewritten to =error in
    # pytest_load_initial_conftests, after argparse has read the path as its value once.
    add(AUDIT_FLAG, nargs="?", const="error", default=None, metavar="warn",
        help="audit the golds instead of scoring predictions: run every gold as its own "
             "prediction and lint it (empty results, clock and random functions, ties at "
             "LIMIT, drift of recorded results, codes outside their codelist); fails on "
             "error findings, =warn only reports them")


def add_report_options(add: AddOption, *, merge: bool = False) -> None:
    """The report and baseline options, for the plugin and (``merge``) ``queryeval merge``,
    which also takes ``-o``/``--output`` for the JSON report and reads no ini file."""
    json_flags = ("-o", "--output", "--queryeval-json") if merge else ("--queryeval-json",)
    add(*json_flags, dest="queryeval_json", metavar="REPORT.json" if merge else "PATH",
        help="write the merged JSON report here" if merge else
        "write the JSON report here (atomically)")
    add("--queryeval-xlsx", metavar="PATH", help="write the Excel workbook here")
    add("--queryeval-html", metavar="PATH", help="write the self-contained HTML report here")
    add("--queryeval-markdown", metavar="PATH", help="write the Markdown summary here")
    add("--queryeval-no-step-summary", action="store_true",
        help="do not append the Markdown summary to $GITHUB_STEP_SUMMARY")
    add("--queryeval-baseline", metavar="PATH",
        help="compare with this JSON report" + ("" if merge else
                                                " (a bare file name lies beside the suite)"))
    add("--queryeval-update-baseline", action="store_true",
        help="write this run's JSON report to the baseline (--queryeval-baseline" +
             (")" if merge else ", else ini queryeval_baseline)"))
    add("--queryeval-verdict", choices=VERDICT_MODES, default=None,
        help="the mode the shards ran with (checked: it is applied as cases run)" if merge else
        "what fails the session (ini queryeval_verdict, default strict): strict, every "
        "case below its threshold; baseline, only cases that passed in "
        "--queryeval-baseline (known failures are xfailed); gates, only gates and the "
        "baseline comparison (cases below threshold are xfailed)")
    add("--queryeval-force-baseline", action="store_true",
        help="with --queryeval-update-baseline: write the baseline even from a filtered, "
             "interrupted or erroring run")
    add("--queryeval-max-drop", action="append", default=[], metavar="DELTA|METRIC=DELTA",
        help="fail when an aggregate drops more than this versus the baseline (repeatable)")
    add("--queryeval-significance", metavar="ALPHA", default=None,
        help="gate a drop versus the baseline only when it is not noise" if merge else
        "with --queryeval-baseline: a drop fails only when it is significant at ALPHA "
        "(exact McNemar on the pass/fail flips, paired bootstrap interval per metric); "
        "ini queryeval_significance, queryeval.yaml gates: {significance: ALPHA}")
    add("--queryeval-tags", action="store_true", help="add a per-tag table to the summary")
    add("--queryeval-spider-table", action="store_true",
        help="print the official Spider evaluator's full exact/partial matching table")
    add("--queryeval-worst", type=int, default=WORST, metavar="N",
        help=f"list the N worst cases in the summary (default {WORST})")


def add_ini(add: Callable[..., object]) -> None:
    """The ini values (``parser.addini``)."""
    add("queryeval_files", type="args", default=["test_*.yaml", "test_*.yml"],
        help="glob patterns of YAML case files")
    add("queryeval_thresholds", type="linelist", default=[],
        help="default thresholds, one metric=value per line")
    add("queryeval_junit_properties", type="bool", default=True,
        help="write queryeval.<metric> properties on junit testcases")
    add("queryeval_verdict", default="strict",
        help="strict, baseline or gates (see --queryeval-verdict)")
    add("queryeval_significance", default="",
        help="significance level of the baseline gate (see --queryeval-significance)")
    add("queryeval_gold_cache", default="",
        help="directory of gold results shared by the runners (see --queryeval-gold-cache)")
    add("queryeval_shard_durations", default="",
        help="JSON report whose case durations balance --queryeval-shard (see "
             "--queryeval-shard-durations)")
    add("queryeval_baseline", default="queryeval-baseline.json",
        help="baseline file for --queryeval-update-baseline when --queryeval-baseline "
             "is not given (a bare name lies beside the suite, else rootdir-relative)")


@dataclass(frozen=True)
class ReportOptions:
    """What to write and compare once a run's report is built: the options the plugin and
    ``queryeval merge`` share (:func:`add_report_options`)."""

    invocation_dir: Path
    #: ``--queryeval-json`` ... ``--queryeval-markdown`` as given (None: not written).
    files: dict[str, str | None]
    step_summary: bool
    baseline: str | None
    update_baseline: bool
    force_baseline: bool
    max_drop: list[str]
    significance: str | None
    verdict: str | None
    tags: bool
    worst: int
    spider_table: bool

    @classmethod
    def from_namespace(cls, ns: Any, invocation_dir: Path) -> ReportOptions:
        """From pytest's ``config.option`` or ``queryeval merge``'s parsed arguments (both use
        the dests of :func:`add_report_options`)."""
        return cls(
            invocation_dir=invocation_dir,
            files={name: getattr(ns, f"queryeval_{name}") for name in REPORT_FILES},
            step_summary=not ns.queryeval_no_step_summary, baseline=ns.queryeval_baseline,
            update_baseline=bool(ns.queryeval_update_baseline),
            force_baseline=bool(ns.queryeval_force_baseline),
            max_drop=list(ns.queryeval_max_drop), significance=ns.queryeval_significance,
            verdict=ns.queryeval_verdict, tags=bool(ns.queryeval_tags),
            worst=ns.queryeval_worst, spider_table=bool(ns.queryeval_spider_table))

    def path(self, name: str) -> Path | None:
        """A report file's path (``name`` in :data:`REPORT_FILES`), from the invocation dir."""
        value = self.files[name]
        return (self.invocation_dir / value).resolve() if value else None

    def problems(self, catalog: MetricCatalog) -> list[str]:
        """The checks of :func:`suitecheck.check_options` these options take part in."""
        from .suitecheck import check_options

        return check_options(
            catalog=catalog, invocation_dir=self.invocation_dir, max_drop=self.max_drop,
            baseline=self.baseline, xlsx=bool(self.files["xlsx"]), worst=self.worst,
            outputs={f"--queryeval-{name}": value for name, value in self.files.items()})

    def outputs(self, *, baseline_path: Path | None, significance: float | None,
                display: Callable[[Path], str]) -> Outputs:
        """The :class:`~.conclude.Outputs` of a finished run."""
        return Outputs(
            json=self.path("json"), xlsx=self.path("xlsx"), html=self.path("html"),
            markdown=self.path("markdown"), step_summary=self.step_summary,
            compare=bool(self.baseline), baseline_path=baseline_path,
            update_baseline=self.update_baseline, force_baseline=self.force_baseline,
            max_drop=list(self.max_drop), tags=self.tags, worst=self.worst,
            spider_table=self.spider_table, significance=significance, display=display)


@dataclass(frozen=True)
class RunOptions:
    """Every option and ini value of a pytest run, read and checked once in
    ``pytest_configure`` (:meth:`from_config`)."""

    rootdir: Path
    report: ReportOptions
    #: ini ``queryeval_files``: the glob patterns of case files.
    files: list[str]
    ini_thresholds: dict[str, Threshold]
    cli_thresholds: dict[str, Threshold]
    #: ``--queryeval-predictions`` as given, and the predictor it names.
    predictions: str | None
    override: Predictor | None
    override_inline: bool
    concurrency: int | None
    no_cache: bool
    #: ``--queryeval-gold-cache`` (or ini): the shared gold directory; None: pytest's cache only.
    gold_cache: Path | None
    model_label: str | None
    repeat: int | None
    shard: tuple[int, int] | None
    #: ``--queryeval-audit-golds``: "error" or "warn"; None: a normal run.
    audit: str | None
    #: ``--queryeval-resume``: the previous attempt's carriable records (None: run all).
    resume: Resume | None
    #: ``--queryeval-shard-durations`` (or ini): case id -> seconds; None: shards by hash.
    shard_durations: dict[str, float] | None
    verdict_mode: str
    junit_properties: bool
    #: ini ``queryeval_baseline`` (the baseline to update when no --queryeval-baseline).
    baseline_ini: str
    #: ini ``queryeval_significance``, and where it is written (``file:line``).
    significance_ini: str
    significance_where: str

    def baseline_path(self, suite: Path) -> Path:
        """The baseline file of a run whose suite lies in ``suite`` (see
        :func:`verdict.baseline_file`)."""
        from .verdict import baseline_file

        return baseline_file(self.report.baseline, self.baseline_ini, suite=suite,
                             invocation_dir=self.report.invocation_dir, rootdir=self.rootdir)

    @property
    def wants_baseline(self) -> bool:
        """A baseline is compared with or written."""
        return bool(self.report.baseline or self.report.update_baseline)

    @classmethod
    def from_config(cls, config: pytest.Config, catalog: Callable[[], MetricCatalog],
                    check: bool = True) -> RunOptions:
        """Read and check every option (``check``: an xdist worker's were checked by its
        controller). A problem is a ``pytest.UsageError``; those of :meth:`_problems` come all
        in one."""
        import pytest

        from .thresholds import parse_cli

        get = config.getoption
        try:
            ini_thresholds = parse_cli(config.getini("queryeval_thresholds"))
            cli_thresholds = parse_cli(get("queryeval_threshold"))
        except ValueError as exc:
            raise pytest.UsageError(f"queryeval: {exc}") from None
        predictions = get("queryeval_predictions")
        override = None
        if predictions:
            from .predict import predictor_from_cli

            override = predictor_from_cli(predictions, config.invocation_params.dir)
        override_inline = bool(get("queryeval_predictions_override_inline"))
        if override_inline and not predictions:
            raise pytest.UsageError("queryeval: --queryeval-predictions-override-inline needs "
                                    "--queryeval-predictions")
        concurrency = None
        if get("queryeval_concurrency") is not None:
            from .predict.pool import parse_concurrency

            try:
                concurrency = parse_concurrency(get("queryeval_concurrency"))
            except ValueError as exc:
                raise pytest.UsageError(f"queryeval: --queryeval-concurrency {exc}") from None
        from .suitecheck import ini_line

        significance_ini = str(config.getini("queryeval_significance") or "")
        report = ReportOptions.from_namespace(config.option, config.invocation_params.dir)
        options = cls(
            rootdir=config.rootpath, report=report, files=list(config.getini("queryeval_files")),
            ini_thresholds=ini_thresholds, cli_thresholds=cli_thresholds,
            predictions=predictions, override=override, override_inline=override_inline,
            concurrency=concurrency, no_cache=bool(get("queryeval_no_cache")),
            gold_cache=(config.invocation_params.dir / get("queryeval_gold_cache")
                        if get("queryeval_gold_cache") else
                        config.rootpath / str(config.getini("queryeval_gold_cache"))
                        if config.getini("queryeval_gold_cache") else None),
            model_label=get("queryeval_model_label"), repeat=get("queryeval_repeat"),
            shard=None, audit=get("queryeval_audit_golds"), resume=None,
            shard_durations=None,
            verdict_mode="strict",
            junit_properties=bool(config.getini("queryeval_junit_properties")),
            baseline_ini=str(config.getini("queryeval_baseline")),
            significance_ini=significance_ini,
            significance_where=ini_line(config.inipath, "queryeval_significance",
                                        significance_ini))
        if check:
            problems = options._problems(catalog(), config.inipath, get("queryeval_shard"))
            if problems:
                raise pytest.UsageError("\n".join(["queryeval: invalid options:",
                                                   *(f"  {p}" for p in problems)]))
        shard = None
        if get("queryeval_shard"):  # checked above (by the controller, under xdist)
            from .shard import parse_shard

            shard = parse_shard(get("queryeval_shard"))
        from dataclasses import replace

        from .verdict import parse_mode

        resume = None
        if get("queryeval_resume"):
            from .resume import Resume

            given = str(get("queryeval_resume"))
            try:
                resume = Resume.load(config.invocation_params.dir / given, given)
            except ValueError as exc:
                raise pytest.UsageError(f"queryeval: {exc}") from None
            if options.audit:
                raise pytest.UsageError("queryeval: --queryeval-resume cannot be used with "
                                        "--queryeval-audit-golds: an audit scores the golds")

        try:
            mode = parse_mode(report.verdict, str(config.getini("queryeval_verdict")),
                              bool(report.baseline))
        except ValueError as exc:
            raise pytest.UsageError(f"queryeval: {exc}") from None
        durations = None
        given = get("queryeval_shard_durations") or str(
            config.getini("queryeval_shard_durations") or "")
        if given and shard is not None:
            from .shard import load_durations

            base = config.invocation_params.dir if get("queryeval_shard_durations") \
                else config.rootpath
            try:
                durations = load_durations(base / given, given)
            except ValueError as exc:
                raise pytest.UsageError(f"queryeval: {exc}") from None
        return replace(options, shard=shard, verdict_mode=mode, resume=resume,
                       shard_durations=durations)

    def _problems(self, catalog: MetricCatalog, inipath: Path | None,
                  shard: str | None) -> list[str]:
        """Every option and ini value, before collection: a usage error lists all problems."""
        from .suitecheck import check_options, ini_line

        report = self.report
        ini = [(metric, ini_line(inipath, "queryeval_thresholds", metric))
               for metric in self.ini_thresholds]
        problems = check_options(
            catalog=catalog, invocation_dir=report.invocation_dir,
            thresholds=self.cli_thresholds, ini_thresholds=ini, max_drop=report.max_drop,
            baseline=report.baseline, significance=(report.significance, self.significance_ini),
            significance_where=self.significance_where,
            outputs={f"--queryeval-{name}": value for name, value in report.files.items()},
            xlsx=bool(report.files["xlsx"]), worst=report.worst)
        if self.audit not in (None, "error", "warn"):
            problems.append(f"--queryeval-audit-golds={self.audit}: must be error or warn")
        if self.repeat is not None and self.repeat < 1:
            problems.append(f"--queryeval-repeat={self.repeat}: must be 1 or more")
        if shard:
            from .shard import parse_shard

            try:
                parse_shard(shard)
            except ValueError as exc:
                problems.append(str(exc))
        if self.audit and report.update_baseline:
            problems.append("--queryeval-update-baseline cannot be used with "
                            "--queryeval-audit-golds: an audit scores the golds, not a model")
        return problems


__all__ = ["AUDIT_FLAG", "WORST", "ReportOptions", "RunOptions", "add_ini", "add_report_options",
           "add_run_options"]
