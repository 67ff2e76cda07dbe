"""The movies graph as a ladybug source, shared by the Cypher tests.

Why one fixture here and not one per file: five test files opened the same graph the same
way, and a change of how a graph is opened (a spec key, a bound) had to be made five times.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pytest_queryeval.cypher.source import LadybugSource
from tests.fixtures.bolt_server import GRAPH


@pytest.fixture
def ladybug(request: pytest.FixtureRequest) -> Iterator[LadybugSource]:
    """The movies graph (``max_values`` from a ``ladybug_max_values`` marker, else the
    default), closed after the test."""
    pytest.importorskip("ladybug")
    marker = request.node.get_closest_marker("ladybug_max_values")
    spec: dict[str, object] = {"type": "ladybug", "path": str(GRAPH)}
    if marker is not None:
        spec["max_values"] = marker.args[0]
    src = LadybugSource.from_spec("movies", spec)
    yield src
    src.close()
