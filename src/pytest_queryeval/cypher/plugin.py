"""The hooks that register ``kind: cypher`` and ``type: ladybug``: the package's only
contact with the plugin (registered by one line, ``pytest_plugins`` of
:mod:`pytest_queryeval.plugin`, as an installed package's ``pytest11`` entry point would be).

Imported in every run where the plugin is installed, so it imports nothing at module level;
the kind and the source are imported when the plugin wakes and when a case opens a graph.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pytest

    from ..model import Kind
    from ..sources.base import DataSource


def pytest_queryeval_kinds(config: pytest.Config) -> dict[str, type[Kind] | Kind]:
    from .kind import CypherKind

    return {"cypher": CypherKind}


def pytest_queryeval_datasource(name: str, spec: dict[str, Any], config: pytest.Config,
                                ) -> DataSource | None:
    from .source import TYPE, LadybugSource

    if spec.get("type") != TYPE:
        return None
    return LadybugSource.from_spec(name, spec)
