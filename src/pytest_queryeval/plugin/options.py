"""The plugin's options, declared once and read once into typed records.

Why one place: the pytest plugin and ``queryeval merge`` take the same report and baseline
options, and a run reads them at several moments (before collection, after it, at the end).
Declaring them once for both (:mod:`.declare`, re-exported here: :func:`add_report_options`
takes ``parser.addoption`` or ``ArgumentParser.add_argument``, as pytest-benchmark's option
groups do) keeps one default and one help text per option; reading them once
(:meth:`RunOptions.from_config`) keeps every check in one usage error, as before, and leaves
no ``getoption`` anywhere else.

API (everything else here is private)::

    add_run_options(group.addoption); add_report_options(group.addoption); add_ini(parser.addini)
    options = RunOptions.from_config(config, catalog)    # pytest.UsageError listing every problem
    path = options.baseline_path(suite)                 # the baseline file of this suite
    outputs = options.report.outputs(baseline_path=..., significance=..., display=...)

    ReportOptions.from_namespace(args, Path.cwd())      # queryeval merge

Importable without pytest: pytest is imported only by :meth:`RunOptions.from_config`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .declare import (
    AUDIT_FLAG,
    DEFAULT_FILES,
    GATING_MODES,
    NEIGHBOURS_FLAG,
    REPORT_WRITERS,
    WORST,
    WRITE_TRANSPILED_FLAG,
    AddOption,
    add_ini,
    add_report_options,
    add_run_options,
    report_formats,
)

if TYPE_CHECKING:

    import pytest

    from ..conclude.options import ReportOptions
    from ..model import Threshold
    from ..neighbours.check import Settings
    from ..predict import Predictor
    from ..predict.cache import CacheSettings
    from ..suite.checks import MetricCatalog
    from .resume import Resume


@dataclass(frozen=True)
class RunOptions:
    """Every option and ini value of a pytest run, read and checked once in
    ``pytest_configure`` (:meth:`from_config`)."""

    rootdir: Path
    report: ReportOptions
    #: ini ``queryeval_files``, else its default: the glob patterns of case files (which of the
    #: matching files are case files: :class:`~.declare.CaseFiles`).
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
    #: ``--queryeval-judge-refresh``: ask the judge again instead of reading pinned verdicts.
    judge_refresh: bool
    #: ``--queryeval-audit-judge``: the expert-labelled pairs the judge is measured on.
    audit_judge: str | None
    shard: tuple[int, int] | None
    #: ``--queryeval-audit-golds``: "error" or "warn"; None: a normal run.
    audit: str | None
    #: ``--queryeval-write-transpiled``: the audit writes checked transpiled golds into the
    #: case files (:mod:`..audit.writeback`).
    write_transpiled: bool
    #: ``--queryeval-resume``: the previous attempt's carriable records (None: run all).
    resume: Resume | None
    #: ``--queryeval-shard-durations`` (or ini): case id -> seconds; None: shards by hash.
    shard_durations: dict[str, float] | None
    #: ``--queryeval-gating``: what fails the session (strict, baseline, gates).
    gating: str
    junit_properties: bool
    #: ini ``queryeval_baseline`` (the baseline to update when no --queryeval-baseline).
    baseline_ini: str
    #: ini ``queryeval_significance``, and where it is written (``file:line``).
    significance_ini: str
    significance_where: str
    #: ``--queryeval-neighbours`` or ini ``queryeval_neighbours`` (None: each suite's
    #: ``neighbours:`` decides, see :func:`..neighbours.check.settings_for`).
    neighbours: Settings | None = None
    #: What a suite's ``neighbours:`` starts from (the ini seconds and seed, the report dir).
    neighbour_base: Settings | None = None
    #: ``--queryeval-no-prefetch``: a case does not send the next case's queries ahead.
    no_prefetch: bool = False
    #: ini ``queryeval_max_failure_details`` (:mod:`.failure_section`; 0: no limit).
    max_failure_details: int = 100
    #: ``--queryeval-prediction-cache``, ``--queryeval-refresh-predictions`` (:mod:`..predict.cache`).
    prediction_cache: CacheSettings | None = None
    #: ``--queryeval-predictions NAME=PATH`` repeated: the models a run compares (name ->
    #: predictions source, :func:`~..suite.models.cli_models`); empty otherwise.
    cli_models: Mapping[str, dict[str, Any]] = field(default_factory=dict)
    #: ``--queryeval-repeat-budget``: calls per case the evidence gate's repeats may spend.
    repeat_budget: float | None = None
    #: ``--queryeval-inconclusive``: what an INCONCLUSIVE evidence gate does to the run.
    inconclusive: str = "status"

    def baseline_path(self, suite: Path) -> Path:
        """The baseline file of a run whose suite lies in ``suite`` (see
        :func:`baseline.location.baseline_file`)."""
        from ..baseline.location import baseline_file

        return baseline_file(self.report.baseline, self.baseline_ini, suite=suite,
                             invocation_dir=self.report.invocation_dir, rootdir=self.rootdir)

    @property
    def fans_out_no_model(self) -> bool:
        """A suite's models fan nothing out: one ``--queryeval-predictions PATH`` replaces
        every source, and the gold audit asks no model (each model's copy of a case would
        audit the same gold again and list each finding once per model)."""
        return self.predictions is not None or self.audit is not None

    @property
    def wants_baseline(self) -> bool:
        """A baseline is compared with or written."""
        return bool(self.report.baseline or self.report.update_baseline)

    @classmethod
    def from_config(cls, config: pytest.Config, catalog: Callable[[], MetricCatalog],
                    check: bool = True) -> RunOptions:
        """Read and check every option (``check``: an xdist worker's were checked by its
        controller). A problem is a ``pytest.UsageError``; those of :meth:`_problems`, an
        unusable ``--queryeval-resume`` or ``--queryeval-shard-durations`` report come all in
        one."""
        import pytest

        from ..suite.checks import ini_line

        get = config.getoption
        ini_thresholds, cli_thresholds = _thresholds(config)
        models, predictions, override, override_inline, concurrency = _prediction_options(config)
        max_failure_details = _max_failure_details(config)
        significance_ini = str(config.getini("queryeval_significance") or "")
        from ..conclude.options import ReportOptions

        report = ReportOptions.from_namespace(config.option, config.invocation_params.dir)
        options = cls(
            rootdir=config.rootpath, report=report,
            files=list(config.getini("queryeval_files")) or list(DEFAULT_FILES),
            ini_thresholds=ini_thresholds, cli_thresholds=cli_thresholds,
            predictions=predictions, override=override, override_inline=override_inline,
            concurrency=concurrency, no_cache=bool(get("queryeval_no_cache")),
            no_prefetch=bool(get("queryeval_no_prefetch")),
            max_failure_details=max_failure_details, cli_models=models,
            gold_cache=_path_value(config, "queryeval_gold_cache")[0],
            model_label=get("queryeval_model_label"), repeat=get("queryeval_repeat"),
            judge_refresh=bool(get("queryeval_judge_refresh")),
            audit_judge=get("queryeval_audit_judge"),
            shard=None, audit=get("queryeval_audit_golds"),
            write_transpiled=bool(get("queryeval_write_transpiled")), resume=None,
            shard_durations=None, gating="strict",
            junit_properties=bool(config.getini("queryeval_junit_properties"))
            and _properties_read(config),
            baseline_ini=str(config.getini("queryeval_baseline")),
            significance_ini=significance_ini,
            significance_where=ini_line(config.inipath, "queryeval_significance",
                                        significance_ini))
        (neighbours, base), neighbour_problems = _neighbour_settings(config, report)
        options = replace(options, neighbours=neighbours, neighbour_base=base,
                          prediction_cache=_cache_settings(config),
                          repeat_budget=get("queryeval_repeat_budget"),
                          inconclusive=get("queryeval_inconclusive") or "status")
        problems: list[str] = []
        if check:
            problems = neighbour_problems + options._problems(catalog(), config.inipath,
                                                              get("queryeval_shard"))
        shard, resume, durations = _shard_and_resume(config, options, check, problems)
        if problems:
            raise pytest.UsageError("\n".join(["queryeval: invalid options:",
                                               *(f"  {p}" for p in problems)]))
        mode = _gating_mode(config, report)
        return replace(options, shard=shard, gating=mode, resume=resume,
                       shard_durations=durations)

    def _problems(self, catalog: MetricCatalog, inipath: Path | None,
                  shard: str | None) -> list[str]:
        """Every option and ini value, before collection: a usage error lists all problems."""
        from ..suite.checks import check_options, ini_line

        report = self.report
        ini = [(metric, ini_line(inipath, "queryeval_thresholds", metric))
               for metric in self.ini_thresholds]
        problems = check_options(
            catalog=catalog, invocation_dir=report.invocation_dir,
            thresholds=self.cli_thresholds, ini_thresholds=ini, max_drop=report.max_drop,
            baseline=report.baseline, significance=(report.significance, self.significance_ini),
            significance_where=self.significance_where,
            outputs={f"--queryeval-{name}": value for name, value in report.files.items()},
            needs=report.needs(), worst=report.worst)
        problems.extend(report.baseline_model_problems())
        if self.audit not in (None, "error", "warn"):
            problems.append(f"--queryeval-audit-golds={self.audit}: must be error or warn")
        if self.repeat is not None and self.repeat < 1:
            problems.append(f"--queryeval-repeat={self.repeat}: must be 1 or more")
        if self.repeat_budget is not None and not 1 <= self.repeat_budget <= 100:
            problems.append(f"--queryeval-repeat-budget={self.repeat_budget:g}: must be "
                            "between 1 and 100 model calls per case")
        if shard:
            from ..suite.shard import parse_shard

            try:
                parse_shard(shard)
            except ValueError as exc:
                problems.append(str(exc))
        if self.write_transpiled and not self.audit:
            problems.append(f"{WRITE_TRANSPILED_FLAG} needs {AUDIT_FLAG}: only the audit "
                            "checks a transpiled gold before it is written")
        if self.audit and report.update_baseline:
            problems.append("--queryeval-update-baseline cannot be used with "
                            "--queryeval-audit-golds: an audit scores the golds, not a model")
        return problems


def _usage(exc: Exception, prefix: str = "") -> pytest.UsageError:
    import pytest

    return pytest.UsageError(f"queryeval: {prefix}{exc}")


def _thresholds(config: pytest.Config) -> tuple[dict[str, Threshold], dict[str, Threshold]]:
    """``queryeval_thresholds`` (ini) and ``--queryeval-threshold`` (command line)."""
    from ..rules.thresholds import parse_cli

    try:
        return (parse_cli(config.getini("queryeval_thresholds")),
                parse_cli(config.getoption("queryeval_threshold")))
    except ValueError as exc:
        raise _usage(exc) from None


def _prediction_options(config: pytest.Config) -> tuple[
        Mapping[str, dict[str, Any]], str | None, Predictor | None, bool, int | None]:
    """The models of ``--queryeval-predictions NAME=PATH``, else its one source (built), the
    override of inline predictions, and ``--queryeval-concurrency``."""
    import pytest

    from ..suite.models import cli_models

    get = config.getoption
    given = get("queryeval_predictions") or []
    try:
        models = cli_models(list(given), config.invocation_params.dir) or {}
    except ValueError as exc:
        raise _usage(exc) from None
    predictions = None if models or not given else str(given[0])
    override = None
    if predictions:
        from ..predict import predictor_from_cli

        override = predictor_from_cli(predictions, config.invocation_params.dir)
    override_inline = bool(get("queryeval_predictions_override_inline"))
    if override_inline and not predictions:
        raise pytest.UsageError("queryeval: --queryeval-predictions-override-inline needs "
                                "--queryeval-predictions")
    concurrency = None
    if get("queryeval_concurrency") is not None:
        from ..predict.pool import parse_concurrency

        try:
            concurrency = parse_concurrency(get("queryeval_concurrency"))
        except ValueError as exc:
            raise _usage(exc, "--queryeval-concurrency ") from None
    return models, predictions, override, override_inline, concurrency


def _max_failure_details(config: pytest.Config) -> int:
    from .failure_section import parse_max_details

    try:
        return parse_max_details(config.getini("queryeval_max_failure_details"))
    except ValueError as exc:
        raise _usage(exc) from None


def _shard_and_resume(config: pytest.Config, options: RunOptions, check: bool,
                      problems: list[str]
                      ) -> tuple[tuple[int, int] | None, Resume | None, dict[str, float] | None]:
    """``--queryeval-shard``, ``--queryeval-resume`` and ``--queryeval-shard-durations``; their
    problems are added to ``problems`` (reported with the others, in one usage error)."""
    get = config.getoption
    shard = None
    if get("queryeval_shard"):  # checked above (by the controller, under xdist)
        from ..suite.shard import parse_shard

        try:
            shard = parse_shard(get("queryeval_shard"))
        except ValueError:
            if not check:
                raise
    resume = None
    if get("queryeval_resume"):
        from .resume import Resume

        given = str(get("queryeval_resume"))
        try:
            resume = Resume.load(config.invocation_params.dir / given, given)
        except ValueError as exc:
            problems.append(str(exc))
        if options.audit:
            problems.append("--queryeval-resume cannot be used with "
                            "--queryeval-audit-golds: an audit scores the golds")
    durations = None
    path, given = _path_value(config, "queryeval_shard_durations")
    if path is not None and shard is not None:
        from ..suite.shard import load_durations

        try:
            durations = load_durations(path, given)
        except ValueError as exc:
            problems.append(str(exc))
    return shard, resume, durations


def _gating_mode(config: pytest.Config, report: ReportOptions) -> str:
    """The gating mode (``--queryeval-gating``, ini ``queryeval_gating``), after warning of
    every deprecated spelling given."""
    from ..baseline.verdicts import parse_mode
    from ..suite.deprecated import QueryevalDeprecationWarning, deprecated_spellings

    for old, new in deprecated_spellings(config.option, config.getini):
        config.issue_config_time_warning(QueryevalDeprecationWarning(
            f"queryeval: {old} is deprecated, use {new} (same values)"), stacklevel=2)
    try:
        return parse_mode(report.gating, str(config.getini("queryeval_gating") or "")
                          or str(config.getini("queryeval_verdict") or ""),
                          bool(report.baseline), ini_name=(
                              "queryeval_gating" if config.getini("queryeval_gating")
                              else "queryeval_verdict"))
    except ValueError as exc:
        raise _usage(exc) from None


def _path_value(config: pytest.Config, name: str) -> tuple[Path | None, str]:
    """(the path, as given) of an option naming a file or folder, else of its ini value
    (None: neither is set). A path on the command line is taken from the current directory,
    one in the ini file from the rootdir, as pytest's own path options are."""
    cli = config.getoption(name)
    if cli:
        return config.invocation_params.dir / str(cli), str(cli)
    ini = str(config.getini(name) or "")
    return (config.rootpath / ini if ini else None), ini


def _cache_settings(config: pytest.Config) -> CacheSettings | None:
    """The prediction cache's options (None: neither is given; ``cache:`` keys decide)."""
    directory = config.getoption("queryeval_prediction_cache")
    refresh = bool(config.getoption("queryeval_refresh_predictions"))
    repeat = config.getoption("queryeval_repeat")
    if not directory and not refresh and not repeat:
        return None
    from ..predict.cache import CacheSettings

    return CacheSettings(config.invocation_params.dir / str(directory) if directory else None,
                         refresh, repeat)


def _neighbour_settings(config: pytest.Config, report: ReportOptions
                        ) -> tuple[tuple[Settings | None, Settings], list[str]]:
    """((the run's counterexample search, the settings a suite's ``neighbours:`` starts
    from), problems): :class:`..neighbours.check.Settings` from the option or the ini values;
    the first is None when neither asks for the search."""
    from ..neighbours.check import (
        Settings,
        parse_databases,
        parse_seconds,
        parse_seed,
    )

    problems: list[str] = []
    cli = config.getoption("queryeval_neighbours")
    ini = str(config.getini("queryeval_neighbours") or "")
    try:
        databases = parse_databases(cli, f"{NEIGHBOURS_FLAG}={cli}") if cli is not None \
            else parse_databases(ini, "ini queryeval_neighbours")
    except ValueError as exc:
        problems.append(str(exc))
        databases = None
    settings = Settings()
    seconds = config.getoption("queryeval_neighbours_seconds")
    seconds_ini = str(config.getini("queryeval_neighbours_seconds") or "")
    seed_ini = str(config.getini("queryeval_neighbours_seed") or "")
    try:
        if seconds is not None:
            settings = replace(settings, seconds=parse_seconds(
                seconds, "--queryeval-neighbours-seconds"))
        elif seconds_ini:
            settings = replace(settings, seconds=parse_seconds(
                seconds_ini, "ini queryeval_neighbours_seconds"))
    except ValueError as exc:
        problems.append(str(exc))
    try:
        if seed_ini:
            settings = replace(settings, seed=parse_seed(seed_ini, "ini queryeval_neighbours_seed"))
    except ValueError as exc:
        problems.append(str(exc))
    # counterexamples are saved beside the first report file asked for
    report_dir = next((p.parent for p in map(report.path, report_formats()) if p is not None), None)
    base = replace(settings, report_dir=report_dir, rootdir=config.rootpath)
    if databases is None:
        return (None, base), problems
    return (replace(base, databases=databases), base), problems


def __getattr__(name: str) -> Any:
    """:class:`ReportOptions`, re-exported from :mod:`..conclude.options` when asked for: a
    worker that wakes the plugin does not import the end of the run for it."""
    if name == "ReportOptions":
        from ..conclude.options import ReportOptions

        return ReportOptions
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "AUDIT_FLAG",
    "GATING_MODES",
    "NEIGHBOURS_FLAG",
    "REPORT_WRITERS",
    "WORST",
    "AddOption",
    "ReportOptions",
    "RunOptions",
    "add_ini",
    "add_report_options",
    "add_run_options",
]


def _properties_read(config: Any) -> bool:
    """Whether anything writes the items' ``user_properties`` out: ``--junitxml``, or
    pytest-reportlog's ``--report-log`` (each line carries them). Without either, a property
    per metric per case (20,750 for 1,000 BIRD cases) was built for nobody (issue 53)."""
    return bool(getattr(config.option, "xmlpath", None)
                or getattr(config.option, "report_log", None))

