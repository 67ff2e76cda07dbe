"""What the plugin declares to pytest before any case file is found: its options and ini
values, and the rule that says which YAML files are case files.

Why a module of its own: pytest imports the hook module in every run of every project where
the plugin is installed. That module and this one are all such a run imports of the package
until a case file is found (``tests/architecture/test_collection_rule.py``), so a project without a
suite pays nothing for the plugin. Standard library only; importable without pytest
(``queryeval merge`` declares its report options here too).
"""

from __future__ import annotations

import fnmatch
import itertools
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

# the report formats' table and the report options, declared in report/formats.py (the end of
# the run and queryeval merge read them too), re-exported with the plugin's other declarations
from ..report.formats import GATING_MODES as GATING_MODES
from ..report.formats import REPORT_WRITERS as REPORT_WRITERS
from ..report.formats import WORST as WORST
from ..report.formats import AddOption as AddOption
from ..report.formats import ReportFile as ReportFile
from ..report.formats import add_format_option as add_format_option
from ..report.formats import add_report_options as add_report_options
from ..report.formats import register_format as register_format
from ..report.formats import report_formats as report_formats
from ..report.formats import unregister_format as unregister_format

#: The suite configuration file whose presence in a folder or above makes the test_*.yaml files
#: there case files.
CONFIG_NAME = "queryeval.yaml"
#: ini ``queryeval_files`` when the ini does not set it.
DEFAULT_FILES = ("test_*.yaml", "test_*.yml")

AUDIT_FLAG = "--queryeval-audit-golds"
#: The fixture that scores a case written in a test function (:mod:`.pycases`): a run whose
#: tests use it wakes the plugin at collection.
FIXTURE = "queryeval"
NEIGHBOURS_FLAG = "--queryeval-neighbours"
WRITE_TRANSPILED_FLAG = "--queryeval-write-transpiled"


def add_run_options(add: AddOption) -> None:
    """The options of a pytest run only (what predicts and scores the cases), in the order
    ``--help`` lists them."""
    _add_prediction_options(add)
    _add_judge_options(add)
    _add_shard_options(add)
    _add_gold_check_options(add)


def _add_prediction_options(add: AddOption) -> None:
    """Where predictions come from, and the caches and thresholds they are scored with."""
    add("--queryeval-predictions", action="append", metavar="PATH|module:function|NAME=PATH",
        help="take predictions from this file or callable for this run (compare model "
             "versions); NAME=PATH repeated compares several models in one run")
    add("--queryeval-predictions-override-inline", action="store_true",
        help="let --queryeval-predictions replace the cases' inline predicted: too")
    add("--queryeval-concurrency", metavar="N",
        help="simultaneous prediction requests of each live source (python, http, command, "
             "openai) in the whole session, xdist workers included; overrides its "
             "concurrency: (default 4)")
    add("--queryeval-threshold", action="append", default=[], metavar="METRIC=VALUE",
        help="override a threshold for this run: metric=0.8, metric=min:0.8, metric=max:2")
    add("--queryeval-no-cache", action="store_true", help="bypass the gold-result cache")
    add("--queryeval-no-prefetch", action="store_true",
        help="do not send the next SQL cases' golds and predictions to the sandbox worker "
             "while the current case is scored, nor start it during collection")
    add("--queryeval-gold-cache", metavar="DIR", default=None,
        help="also keep gold results in this directory, shared by every runner of a sharded "
             "run (content-addressed entries, atomic writes); ini queryeval_gold_cache")
    add("--queryeval-prediction-cache", metavar="DIR", default=None,
        help="keep the answers of the openai, http and command sources in this directory and "
             "reuse them while the request is unchanged (as cache: true does, there)")
    add("--queryeval-refresh-predictions", action="store_true",
        help="ask every cached source again and rewrite its cache entries")
    add("--queryeval-model-label", metavar="LABEL",
        help="name the model under test in the reports and the baseline (queryeval.yaml model:)")
    add("--queryeval-repeat", type=int, default=None, metavar="N",
        help="ask for N predictions per case (non-deterministic models) and score each; "
             "overrides the cases' repeat:")
    add("--queryeval-repeat-budget", type=float, default=None, metavar="CALLS",
        help="with --queryeval-gating=evidence: model calls per case on average that the "
             "adaptive repeats may spend (default 1.5; 1 asks every case once)")
    add("--queryeval-inconclusive", choices=("status", "fail", "pass"), default=None,
        help="with --queryeval-gating=evidence: an INCONCLUSIVE verdict exits with status 6 "
             "(status, the default), fails the run (fail: exit 1) or passes it (pass: exit 0)")


def _add_judge_options(add: AddOption) -> None:
    """The LLM judge's options: asking it again, and measuring it."""
    add("--queryeval-judge-refresh", action="store_true",
        help="ask the LLM judge again for every judged case, whatever its pin file or the "
             "cache holds (the new verdicts replace the pinned ones; a flip is recorded)")
    add("--queryeval-audit-judge", metavar="LABELS.jsonl", default=None,
        help="measure the judge against expert-labelled pairs (Cohen's kappa, precision, "
             "recall, FP, FN, flip rate), from their recorded verdicts where present")


def _add_shard_options(add: AddOption) -> None:
    """A run split over runners, or retried: which cases this runner takes."""
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


def _add_gold_check_options(add: AddOption) -> None:
    """The checks beyond scoring: the gold audit, and the counterexample search of passing
    cases."""
    # No argparse choices: a bare flag followed by a path is rewritten to =error in
    # pytest_load_initial_conftests, after argparse has read the path as its value once.
    add(AUDIT_FLAG, nargs="?", const="error", default=None, metavar="warn",
        help="audit the golds instead of scoring predictions: run every gold as its own "
             "prediction and lint it (empty results, clock and random functions, ties at "
             "LIMIT, drift of recorded results, codes outside their codelist); fails on "
             "error findings, =warn only reports them")
    add(WRITE_TRANSPILED_FLAG, action="store_true",
        help=f"with {AUDIT_FLAG}: write each transpiled gold whose result matched the gold "
             "it was transpiled from into its case file, as that dialect's explicit gold: "
             "entry (the rest of the file unchanged); the others are listed, never written")
    add(NEIGHBOURS_FLAG, nargs="?", const="default", default=None, metavar="N",
        help="for each SQL case that passes on its database (SQLite, DuckDB), search up to N "
             "small databases of the same schema (default 200) for one on which gold and "
             "prediction differ: metric neighbour_ex, the shrunk counterexample saved beside "
             "the reports (ini queryeval_neighbours)")
    add("--queryeval-neighbours-seconds", metavar="S", default=None,
        help="with --queryeval-neighbours: the seconds budget of one case's search "
             "(default 10; ini queryeval_neighbours_seconds)")


def add_ini(add: Callable[..., object]) -> None:
    """The ini values (``parser.addini``)."""
    # default []: pytest offers no public way to tell a value the ini gave from the default,
    # and an explicit value alone (CaseFiles.explicit) makes matching files case files
    add("queryeval_files", type="args", default=[],
        help="glob patterns of YAML case files; when set, every matching file is a case file "
             f"(default {' '.join(DEFAULT_FILES)}, only where a {CONFIG_NAME} lies in the "
             "file's folder or above it)")
    add("queryeval_thresholds", type="linelist", default=[],
        help="default thresholds, one metric=value per line")
    add("queryeval_junit_properties", type="bool", default=True,
        help="write queryeval.<metric> properties on junit testcases")
    add("queryeval_gating", default="",
        help="strict, baseline or gates (see --queryeval-gating; default strict)")
    add("queryeval_verdict", default="", help="deprecated spelling of queryeval_gating")
    add("queryeval_significance", default="",
        help="significance level of the baseline gate (see --queryeval-significance)")
    add("queryeval_gold_cache", default="",
        help="directory of gold results shared by the runners (see --queryeval-gold-cache)")
    add("queryeval_shard_durations", default="",
        help="JSON report whose case durations balance --queryeval-shard (see "
             "--queryeval-shard-durations)")
    add("queryeval_neighbours", default="",
        help="search every passing SQL case for a counterexample database: a number of "
             "databases, or true for the default 200 (see --queryeval-neighbours)")
    add("queryeval_neighbours_seconds", default="",
        help="the seconds budget of one case's counterexample search (default 10)")
    add("queryeval_neighbours_seed", default="",
        help="the seed of the counterexample search (default 0: same seed, same databases)")
    add("queryeval_max_failure_details", default="100",
        help="failing cases shown in full in pytest's FAILURES section; each further one in "
             "one line (0: every case in full)")
    add("queryeval_baseline", default="queryeval-baseline.json",
        help="baseline file for --queryeval-update-baseline when --queryeval-baseline "
             "is not given (a bare name lies beside the suite, else rootdir-relative)")


def matches_files(path: Path, patterns: Sequence[str]) -> bool:
    """A YAML file whose name matches one of ``patterns`` (the case file patterns)."""
    return path.suffix in (".yaml", ".yml") and any(fnmatch.fnmatch(path.name, p)
                                                     for p in patterns)


class CaseFiles:
    """Which files are case files: a YAML file matching ini ``queryeval_files``, and, unless
    the ini set that value, only where a ``queryeval.yaml`` lies in the file's folder or an
    ancestor up to the rootdir (the folders :class:`~..suite.config.ConfigFinder` reads). Without
    that rule any project's ``tests/test_config.yaml`` data file was collected as a failing
    case."""

    def __init__(self, ini: Sequence[str], rootdir: Path) -> None:
        #: The ini named the patterns: they alone decide.
        self.explicit = bool(ini)
        self.patterns = list(ini) or list(DEFAULT_FILES)
        self.rootdir = rootdir.resolve()
        #: Folder: a queryeval.yaml lies there or above (one look per folder per session).
        self._governed: dict[Path, bool] = {}

    def __call__(self, path: Path) -> bool:
        return matches_files(path, self.patterns) and (
            self.explicit or self.governed(path.parent.resolve()))

    def governed(self, directory: Path) -> bool:
        """A ``queryeval.yaml`` in ``directory`` (resolved) or above it, up to the rootdir
        (outside it: up to the file system's root, as :class:`~..suite.config.ConfigFinder` looks)."""
        known = self._governed.get(directory)
        if known is None:
            known = (directory / CONFIG_NAME).exists() or (
                directory != self.rootdir and directory.parent != directory
                and self.governed(directory.parent))
            self._governed[directory] = known
        return known


def _defaults(declare: Callable[[AddOption], None]) -> dict[str, object]:
    """The default of each option (by its dest) or ini value (by its name) ``declare`` adds."""
    out: dict[str, object] = {}

    def record(*names: str, **kwargs: object) -> None:
        dest = kwargs.get("dest") or max(names, key=len).lstrip("-").replace("-", "_")
        out[str(dest)] = kwargs.get("default", False if kwargs.get("action") == "store_true"
                                    else None)
    declare(record)
    return out


def _takes_value(declare: Callable[[AddOption], None]) -> list[str]:
    """The option strings ``declare`` adds that take one value, which may be the next word."""
    out: list[str] = []

    def record(*names: str, **kwargs: object) -> None:
        if kwargs.get("action", "store") in ("store", "append") and kwargs.get("nargs") is None:
            out.extend(names)
    declare(record)
    return out


#: The plugin's options whose value may be given as the next word (``--opt value``): pytest
#: takes such a value for a test path when it decides its rootdir (:mod:`.rootdir`).
VALUE_OPTIONS = frozenset(_takes_value(add_run_options) + _takes_value(add_report_options))


def separated(args: Sequence[str], options: Iterable[str] = VALUE_OPTIONS) -> list[str]:
    """The ``options`` given with their value as the next word (``--opt value``), in order."""
    names = set(options)
    return [a for a, nxt in itertools.pairwise(args) if a in names and nxt[:1] != "-"]


def rewrite_bare(args: list[str]) -> list[str]:
    """Rewrite, in place, a bare ``--queryeval-audit-golds`` as ``=error`` and a bare
    ``--queryeval-neighbours`` as the default budget: argparse would otherwise take the next
    word (``pytest --queryeval-audit-golds my_suite``) as the option's value and refuse it (a
    value of theirs is only ever attached with ``=``). Returns the other options given as
    ``--opt value`` (:func:`separated`), whose value pytest took for a test path."""
    bare = {AUDIT_FLAG: f"{AUDIT_FLAG}=error", NEIGHBOURS_FLAG: f"{NEIGHBOURS_FLAG}=default"}
    args[:] = [bare.get(a, a) for a in args]
    return separated(args)


def asked_for(option: Callable[[str], object], ini: Callable[[str], object]) -> list[str]:
    """The plugin's options (``option``: by dest) and ini values (``ini``: by name) that a run
    was given, other than their defaults: such a run means to use the plugin, which then reads
    and checks them before collection, as usage errors."""
    asked = [dest for declare in (add_run_options, add_report_options)
             for dest, default in _defaults(declare).items() if option(dest) != default]
    return asked + [name for name, default in _defaults(add_ini).items()
                    if ini(name) != default]
