"""Extension hooks, implemented in a conftest.py or a plugin.

All are optional. Call-sites pass keyword arguments only, as pluggy requires.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:  # annotations only: the hook contract imports nothing at run time
    from .model import Case, Kind, Scored
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


def pytest_queryeval_kinds(config: pytest.Config) -> dict[str, type[Kind] | Kind] | None:
    """Register custom kinds: ``{name: KindClassOrInstance}`` following
    :class:`pytest_queryeval.model.Kind`."""


def pytest_queryeval_report(report: dict[str, Any], config: pytest.Config) -> None:
    """Inspect or extend the session's JSON report before any report file is written."""
