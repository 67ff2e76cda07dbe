"""What to write and compare once a run's report is built: the report and baseline options that
the plugin and ``queryeval merge`` share, read into :class:`ReportOptions`.

Why here and not with the plugin's other options (:mod:`..plugin.options`): ``queryeval merge``
reads them too, and the end of the run is on a floor below the pytest surface
(docs/architecture.md, floors); the plugin's :class:`~..plugin.options.RunOptions` holds one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..report.formats import report_formats

if TYPE_CHECKING:
    import argparse

    from ..suite.checks import MetricCatalog
    from . import Outputs


@dataclass(frozen=True)
class ReportOptions:
    """What to write and compare once a run's report is built: the options the plugin and
    ``queryeval merge`` share (:func:`add_report_options`)."""

    invocation_dir: Path
    #: ``--queryeval-<name>`` of each :data:`REPORT_WRITERS` entry as given (None: not written).
    files: dict[str, str | None]
    step_summary: bool
    baseline: str | None
    update_baseline: bool
    force_baseline: bool
    max_drop: list[str]
    significance: str | None
    #: ``--queryeval-baseline-model`` as given (``B`` or ``A=B``, repeatable).
    baseline_model: list[str]
    #: ``--queryeval-gating`` (or its deprecated spelling ``--queryeval-verdict``).
    gating: str | None
    tags: bool
    worst: int
    spider_table: bool

    @classmethod
    def from_namespace(cls, ns: argparse.Namespace, invocation_dir: Path) -> ReportOptions:
        """From pytest's ``config.option`` or ``queryeval merge``'s parsed arguments (both use
        the dests of :func:`add_report_options`)."""
        return cls(
            invocation_dir=invocation_dir,
            files={name: getattr(ns, f"queryeval_{name}", None) for name in report_formats()},
            step_summary=not ns.queryeval_no_step_summary, baseline=ns.queryeval_baseline,
            update_baseline=bool(ns.queryeval_update_baseline),
            force_baseline=bool(ns.queryeval_force_baseline),
            max_drop=list(ns.queryeval_max_drop), significance=ns.queryeval_significance,
            baseline_model=list(getattr(ns, "queryeval_baseline_model", None) or []),
            gating=ns.queryeval_gating or ns.queryeval_verdict, tags=bool(ns.queryeval_tags),
            worst=ns.queryeval_worst, spider_table=bool(ns.queryeval_spider_table))

    def path(self, name: str) -> Path | None:
        """A report file's path (``name`` in :data:`REPORT_WRITERS`), from the invocation
        dir."""
        from .._util.safefile import output_path

        value = self.files.get(name)
        return output_path(self.invocation_dir / value) if value else None

    def problems(self, catalog: MetricCatalog) -> list[str]:
        """The checks of :func:`suitecheck.check_options` these options take part in."""
        from ..suite.checks import check_options

        return check_options(
            catalog=catalog, invocation_dir=self.invocation_dir, max_drop=self.max_drop,
            baseline=self.baseline, needs=self.needs(), worst=self.worst,
            outputs={f"--queryeval-{name}": value for name, value in self.files.items()},
        ) + self.baseline_model_problems()

    def baseline_model_problems(self) -> list[str]:
        """``--queryeval-baseline-model``'s problems (it needs a baseline to read)."""
        if not self.baseline_model:
            return []
        try:
            self.baseline_models()
        except ValueError as exc:
            return [str(exc)]
        if not self.baseline:
            return ["--queryeval-baseline-model needs --queryeval-baseline (the report whose "
                    "model's records are compared with)"]
        return []

    def needs(self) -> list[tuple[str, str, str]]:
        """(option, module, pip extra): the optional dependency of each report file asked for
        that has one (:attr:`..report.formats.ReportFile.needs`)."""
        return [(f"--queryeval-{name}", *entry.needs) for name, entry in report_formats().items()
                if entry.needs is not None and self.files.get(name)]

    def outputs(self, *, baseline_path: Path | None, significance: float | None,
                display: Callable[[Path], str]) -> Outputs:
        """The :class:`~.Outputs` of a finished run."""
        from . import Outputs

        return Outputs(
            files={name: path for name in report_formats()
                   if (path := self.path(name)) is not None},
            step_summary=self.step_summary,
            compare=bool(self.baseline), baseline_path=baseline_path,
            update_baseline=self.update_baseline, force_baseline=self.force_baseline,
            max_drop=list(self.max_drop), tags=self.tags, worst=self.worst,
            spider_table=self.spider_table, significance=significance, display=display,
            baseline_models=self.baseline_models())

    def baseline_models(self) -> dict[str, str]:
        """``--queryeval-baseline-model`` read (checked before the run: a ValueError then)."""
        from ..baseline.retarget import parse_baseline_models

        return parse_baseline_models(self.baseline_model)
