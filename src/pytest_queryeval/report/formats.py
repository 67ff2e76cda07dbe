"""The report formats: one table, :data:`REPORT_WRITERS`, that the plugin's options, the end of
a run (:mod:`pytest_queryeval.conclude`) and ``queryeval merge`` all loop over.

Why a module of its own, below the plugin and the end of the run: both read the table, and the
end of the run is below the pytest surface (docs/architecture.md, floors), so the table cannot
live in ``plugin/declare.py`` without the end of the run importing the plugin. Standard library
only: the hook module's sleeping run imports it (``tests/architecture/test_collection_rule.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

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
