"""The movies graph as a ladybug source, and the FalkorDB server with its driver, shared by
the Cypher tests.

Why one fixture here and not one per file: five test files opened the same graph the same
way, and a change of how a graph is opened (a spec key, a bound) had to be made five times;
three files asked for the server the same way (skip without the driver, reset its listener).
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator

import pytest

from pytest_queryeval.cypher.source import LadybugSource
from tests.fixtures.bolt_server import GRAPH, BoltServer


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


@pytest.fixture
def server(bolt_server: BoltServer) -> BoltServer:
    """The session's FalkorDB server, its listener reset (a run before closed its driver);
    skipped without the neo4j driver unless the run requires Bolt. tests/cypher/test_bolt.py
    keeps its own, which never skips."""
    if importlib.util.find_spec("neo4j") is None and not os.environ.get("QUERYEVAL_REQUIRE_BOLT"):
        pytest.skip("no neo4j driver: pip install neo4j (the dev extra)")
    bolt_server.unstick()
    return bolt_server
