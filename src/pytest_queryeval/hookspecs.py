"""Extension hooks, implemented in a conftest.py or a plugin.

All are optional. Call-sites pass keyword arguments only, as pluggy requires.

The four registry hooks (:func:`pytest_queryeval_kinds`, :func:`pytest_queryeval_source_types`,
:func:`pytest_queryeval_prediction_sources`, :func:`pytest_queryeval_report_formats`) return
registry entries ``{name: entry}``. The package's own kinds, datasource types, prediction
sources and report formats are the results of its own implementations
(:mod:`pytest_queryeval.plugin.builtins`), as pytest's built-ins are ordinary plugins: an
installed package (a ``pytest11`` entry point) or a conftest adds entries exactly as the
package does, and they get everything a built-in entry gets. Every implementation is called;
a name a later plugin returns replaces the same name of an earlier one (the built-ins come
first).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:  # annotations only: the hook contract imports nothing at run time
    from collections.abc import Mapping

    from .model import Case, Kind, Scored
    from .predict.base import Predictor
    from .report.formats import ReportFile
    from .sources import SourceType
    from .sources.base import DataSource


@pytest.hookspec(firstresult=True)
def pytest_queryeval_predict(case: Case, config: pytest.Config) -> object:
    """Return the prediction for ``case`` (a :class:`pytest_queryeval.model.Case`), or None
    to let the configured predictions source answer. Not called when the case has an inline
    ``predicted:`` or when ``--queryeval-predictions`` is given."""


@pytest.hookspec(firstresult=True)
def pytest_queryeval_datasource(name: str, spec: dict[str, Any], config: pytest.Config,
                                ) -> DataSource | None:
    """Return a data source (see :class:`pytest_queryeval.sources.base.DataSource`) for a
    ``datasources:`` entry, typically one with a custom ``type``; None for the built-in types.
    It needs ``name``, ``type``, ``execute``, ``fingerprint`` and ``close``; of the
    capabilities ``dialect``, ``executable``, ``timeout`` and ``db_id``, those it does not
    declare get the defaults of :class:`pytest_queryeval.sources.base.SourceDefaults`."""


def pytest_queryeval_metrics(case: Case, prediction: object, scored: Scored,
                             config: pytest.Config) -> dict[str, float] | None:
    """Return extra metrics ``{name: value}`` for a scored case (every implementation is
    called; results are merged). Declare their names with ``pytest_queryeval_metric_names``
    so thresholds on them validate."""


def pytest_queryeval_metric_names(kind: str, config: pytest.Config) -> list[str] | None:
    """Names of custom metrics available for ``kind`` (used to validate ``thresholds``)."""


def pytest_queryeval_kinds(config: pytest.Config,
                           ) -> Mapping[str, type[Kind] | Kind | str] | None:
    """Register kinds: ``{name: KindClassOrInstance}`` following
    :class:`pytest_queryeval.model.Kind` (or a ``"module:Class"`` string, imported when a case
    of the kind is first read). The built-in ``sql``, ``sparql``, ``json`` and ``sdmx`` are this
    hook's default implementation. What a kind can do is what its class declares
    (``pytest_queryeval.kindregistry``): its ``query_rules()`` (the gold audit's text
    rules, ``pytest_queryeval.audit.query``) and ``query_syntax`` (the judge's comment rules)
    say whether its queries are read as SQL or SPARQL; a kind that does not say so is never
    read as SQL."""


def pytest_queryeval_source_types(config: pytest.Config,
                                  ) -> Mapping[str, SourceType | type] | None:
    """Register datasource types: ``{type name: entry}``, an entry being a
    :class:`pytest_queryeval.sources.SourceType` (its class, the keys its spec takes, and the
    capabilities the plugin relies on: dialect, warm-up, ``{schema}``, ``writable:``/``now:``,
    the counterexample search, tasks, its ``walls`` against a hostile query, ...), as the
    built-in types are declared. A bare class
    (or :meth:`SourceType.inherit`) takes the entry of the nearest registered base class with
    its own class: a source derived from ``SqliteSource`` is a SQLite source in every respect
    it does not change. The spec's keys are checked against the entry's ``keys`` (a typo is an
    error naming the file, line and key) even when the class has its own ``from_spec``.
    ``pytest_queryeval_datasource`` still answers first, for any type."""


def pytest_queryeval_prediction_sources(config: pytest.Config,
                                        ) -> Mapping[str, type[Predictor] | str] | None:
    """Register prediction sources: ``{source name: PredictorClass}`` (or
    ``"module:Class"``) following :class:`pytest_queryeval.predict.base.Predictor`, built with
    its ``from_spec(spec, base, search, context)`` when a suite's ``predictions:`` names it,
    as the built-in ``file``, ``python``, ``http``, ``openai`` and ``command`` are."""


@pytest.hookspec(historic=True)
def pytest_queryeval_report_formats() -> Mapping[str, ReportFile] | None:
    """Register report formats: ``{name: ReportFile}``
    (:class:`pytest_queryeval.report.formats.ReportFile`): the option ``--queryeval-<name>``
    naming the file, what the summary calls it, and its writer, called
    ``writer(report, path, comparison)`` with the one typed report
    (:class:`pytest_queryeval.report.document.Report`) whose ``records()`` are the full case
    records, after a run and after ``queryeval merge`` alike. Historic (called as each plugin
    registers, before the command line is parsed, so that the option exists): implement it in
    an installed plugin or a rootdir conftest. ``queryeval merge`` asks the installed plugins
    (``pytest11`` entry points), ``PYTEST_PLUGINS`` and its ``-p MODULE`` options."""


def pytest_queryeval_report(report: dict[str, Any], config: pytest.Config) -> None:
    """Inspect or extend the session's JSON report before any report file is written."""
