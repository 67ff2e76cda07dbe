"""The hooks that register ``kind: cypher``, ``type: ladybug`` and ``type: bolt``: the
package's only contact with the plugin, registered by one line (``pytest_plugins`` of
:mod:`pytest_queryeval.plugin.builtins`), as an installed package's ``pytest11`` entry point
would be.

Imported in every run where the plugin is installed, so it imports nothing at module level;
the kind and the source are imported when a case of theirs is read or opened.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pytest

    from ..sources import SourceType


def pytest_queryeval_kinds(config: pytest.Config) -> Mapping[str, str]:
    return {"cypher": "pytest_queryeval.cypher.kind:CypherKind"}


def pytest_queryeval_source_types(config: pytest.Config) -> Mapping[str, SourceType]:
    from ..sources import SourceType
    from . import bolt, source

    return {source.TYPE: SourceType("pytest_queryeval.cypher.source:LadybugSource", source.KEYS,
                                   ddl=True),
            bolt.TYPE: SourceType("pytest_queryeval.cypher.bolt:BoltSource", bolt.KEYS)}
