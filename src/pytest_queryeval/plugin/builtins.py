"""The package's own registry entries as an ordinary plugin: the default implementation of the
registry hooks (:mod:`..hookspecs`), as pytest's built-ins are plugins of their own (its
``config/__init__.py`` ``default_plugins``). An installed package or a conftest implements the
same hooks and its entries are used exactly as these are.

``trylast``: the built-ins are applied first, so a plugin may replace one of their names. Each
table is imported only when the hook is called, once the plugin wakes (a project without a
suite imports this module and nothing of the tables).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import pytest

from .declare import (
    REPORT_WRITERS,
    ReportFile,
    add_format_option,
    register_format,
    unregister_format,
)

if TYPE_CHECKING:
    from ..model import Kind
    from ..predict.base import Predictor
    from ..sources import SourceType

#: Packages of the project built on these hooks only, registered as an installed one would be.
pytest_plugins = ["pytest_queryeval.cypher.plugin"]

#: The report formats plugins registered while the options were declared.
_FORMATS: list[str] = []


def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    """The option of each report format a plugin registers (the built-ins' are declared with
    the plugin's other options). ``pytest_queryeval_report_formats`` is historic: a plugin or
    a rootdir conftest registered later is asked as it registers, before the command line is
    parsed, so its format's option exists as its own ``pytest_addoption`` would add it."""
    group = parser.getgroup("queryeval", "natural-language-to-query evaluation")

    def add_formats(result: Mapping[str, ReportFile] | None) -> None:
        for name, entry in (result or {}).items():
            if register_format(name, entry):
                _FORMATS.append(name)
                add_format_option(group.addoption, name, entry)

    pluginmanager.hook.pytest_queryeval_report_formats.call_historic(
        result_callback=add_formats, kwargs={})


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    """A session's formats must not leak into the next one in the same process."""
    while _FORMATS:
        unregister_format(_FORMATS.pop())


@pytest.hookimpl(trylast=True)
def pytest_queryeval_kinds(config: pytest.Config) -> Mapping[str, type[Kind] | Kind | str]:
    """The built-in kinds (imported when a case of theirs is read)."""
    from ..kindregistry import KIND_CLASSES

    return KIND_CLASSES


@pytest.hookimpl(trylast=True)
def pytest_queryeval_source_types(config: pytest.Config) -> Mapping[str, SourceType | type]:
    """The built-in datasource types."""
    from ..sources import SOURCE_TYPES

    return SOURCE_TYPES


@pytest.hookimpl(trylast=True)
def pytest_queryeval_prediction_sources(config: pytest.Config,
                                        ) -> Mapping[str, type[Predictor] | str]:
    """The built-in prediction sources."""
    from ..predict import PREDICTOR_SOURCES

    return PREDICTOR_SOURCES


@pytest.hookimpl(trylast=True)
def pytest_queryeval_report_formats() -> Mapping[str, ReportFile]:
    """The built-in report formats (their options are declared with the others)."""
    return REPORT_WRITERS
