"""The report formats: one table, :data:`REPORT_WRITERS`, that the plugin's options, the end of
a run (:mod:`pytest_queryeval.conclude`) and ``queryeval merge`` all loop over; and the report
and baseline options that the plugin and ``queryeval merge`` both declare
(:func:`add_report_options`).

Why a module of its own, below the plugin and the end of the run: both read the table, and the
end of the run is below the pytest surface (docs/architecture.md, floors), so the table cannot
live in ``plugin/declare.py`` without the end of the run importing the plugin. Standard library
only: the hook module's sleeping run imports it (``tests/architecture/test_collection_rule.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

#: ``parser.addoption`` or ``ArgumentParser.add_argument``: the options are declared once for both.
AddOption = Callable[..., object]

GATING_MODES = ("strict", "baseline", "gates", "evidence")

#: ``--queryeval-worst``'s default: the worst cases listed in the summary.
WORST = 5


@dataclass(frozen=True)
class ReportFile:
    """One report format, everything the package knows of it: its option, what the summary
    calls the file, and its writer. A new format is one writer module and one line of
    :data:`REPORT_WRITERS`; the options, the end of a run and ``queryeval merge`` loop over it.
    """

    #: Names the file in the summary: ``"JSON report"`` gives ``JSON report: PATH``.
    label: str
    #: The option's help (``--queryeval-<name>``, whose value is the file's path).
    help: str
    #: ``module:function``, imported only when the file is written (this module is loaded by
    #: every pytest process), or the function: called ``function(report, path, comparison)``,
    #: ``report`` being the one typed report (:class:`.document.Report`) and ``comparison``
    #: the baseline comparison or None.
    writer: str | Callable[..., object]
    #: ``queryeval merge``'s help, when it differs.
    merge_help: str | None = None
    #: Further spellings of the option in ``queryeval merge`` (before ``--queryeval-<name>``).
    merge_flags: tuple[str, ...] = ()
    merge_metavar: str = "PATH"
    #: (module, pip extra): an optional dependency, checked with the options before the run.
    needs: tuple[str, str] | None = None


#: The report formats, by name (option ``--queryeval-<name>``, dest ``queryeval_<name>``), in
#: the order they are written and named in the summary: the JSON report first (the one CI
#: keeps). ``$GITHUB_STEP_SUMMARY`` gets the Markdown summary once every file is written.
REPORT_WRITERS: dict[str, ReportFile] = {
    "json": ReportFile("JSON report", "write the JSON report here (atomically)",
                       "pytest_queryeval.report.json_report:write_report",
                       merge_help="write the merged JSON report here",
                       merge_flags=("-o", "--output"), merge_metavar="REPORT.json"),
    "xlsx": ReportFile("Excel report", "write the Excel workbook here",
                       "pytest_queryeval.report.excel:write_xlsx", needs=("xlsxwriter", "excel")),
    "html": ReportFile("HTML report", "write the self-contained HTML report here",
                       "pytest_queryeval.report.html:write_html"),
    "markdown": ReportFile("Markdown summary", "write the Markdown summary here",
                           "pytest_queryeval.report.markdown:write_markdown"),
}


#: Formats registered by plugins and conftests (``pytest_queryeval_report_formats``, whose
#: default implementation returns :data:`REPORT_WRITERS`), after the built-in ones.
_registered: dict[str, ReportFile] = {}


def report_formats() -> dict[str, ReportFile]:
    """Every report format, built-in first, in the order they are written."""
    return {**REPORT_WRITERS, **_registered}


def register_format(name: str, entry: ReportFile) -> bool:
    """Add report format ``name``; False for a built-in entry registered again (the hook's
    default implementation), whose option exists already."""
    if REPORT_WRITERS.get(name) is entry:
        return False
    _registered[name] = entry
    return True


def unregister_format(name: str) -> None:
    """Forget a registered format (a session's conftest formats must not leak into the next)."""
    _registered.pop(name, None)


def add_format_option(add: AddOption, name: str, entry: ReportFile, *, merge: bool = False,
                      ) -> None:
    """The option ``--queryeval-<name>`` that names a report format's file."""
    option = f"--queryeval-{name}"
    flags = (*entry.merge_flags, option) if merge else (option,)
    add(*flags, dest=f"queryeval_{name}", metavar=entry.merge_metavar if merge else "PATH",
        help=(entry.merge_help or entry.help) if merge else entry.help)


def add_report_options(add: AddOption, *, merge: bool = False) -> None:
    """The report and baseline options, for the plugin and (``merge``) ``queryeval merge``,
    which also takes ``-o``/``--output`` for the JSON report and reads no ini file."""
    # a run's plugins add their formats' options as they register (plugin.builtins); a merge
    # has registered them before it declares its options (conclude.formats)
    for name, entry in (report_formats() if merge else REPORT_WRITERS).items():
        add_format_option(add, name, entry, merge=merge)
    add("--queryeval-no-step-summary", action="store_true",
        help="do not append the Markdown summary to $GITHUB_STEP_SUMMARY")
    add("--queryeval-baseline", metavar="PATH",
        help="compare with this JSON report" + ("" if merge else
                                                " (a bare file name lies beside the suite)"))
    add("--queryeval-update-baseline", action="store_true",
        help="write this run's JSON report to the baseline (--queryeval-baseline" +
             (")" if merge else ", else ini queryeval_baseline)"))
    add("--queryeval-gating", choices=GATING_MODES, default=None,
        help="the gating mode the shards ran with (checked: it is applied as cases run)"
        if merge else
        "what fails the session (ini queryeval_gating, default strict): strict, every "
        "case below its threshold; baseline, only cases that passed in "
        "--queryeval-baseline (known failures are xfailed); gates, only gates and the "
        "baseline comparison (cases below threshold are xfailed); evidence, the evidence "
        "gate: PASS, FAIL or INCONCLUSIVE from each case's baseline history, with adaptive "
        "repeats (the way to gate a sampled model)")
    add("--queryeval-verdict", choices=GATING_MODES, default=None,
        help="deprecated spelling of --queryeval-gating")
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
    add("--queryeval-baseline-model", action="append", default=[],
        metavar="MODEL|CURRENT=MODEL",
        help="compare with the baseline's records of MODEL instead of each model's own: "
             "CURRENT=MODEL for one model of the run (a candidate against production), "
             "MODEL alone for every model (repeatable)")
    add("--queryeval-tags", action="store_true", help="add a per-tag table to the summary")
    add("--queryeval-spider-table", action="store_true",
        help="print the official Spider evaluator's full exact/partial matching table")
    add("--queryeval-worst", type=int, default=WORST, metavar="N",
        help=f"list the N worst cases in the summary (default {WORST})")
