"""Shared helpers for the SPARQL source tests: real Brick buildings (tests/data) and BuildingQA.

The in-repo building is Soda Hall (Brick's example, BSD-3) with a BuildingQA-format benchmark
written for these tests; the real BuildingQA files (no licence, so not in the repository) are
extra cross-checks when ``../shared/data`` is beside the clone.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

BRICK = "PREFIX brick: <https://brickschema.org/schema/Brick#>\n"
#: The research notes' reference join (BuildingQA's walk-through), on Soda Hall: 230 rows.
AHU_VAV_SENSOR = BRICK + """
SELECT DISTINCT ?eqp ?sensor WHERE {
    ?eqp    a                       brick:AHU .
    ?vav    a                       brick:VAV .
    ?sensor a                       brick:Zone_Air_Temperature_Sensor .
    ?eqp    brick:feeds             ?vav .
    ?vav    brick:hasPoint          ?sensor .
}"""


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def ttl_prefixes(ttl: Path) -> str:
    """PREFIX lines for every prefix the graph file declares (parsed, not grepped)."""
    import pyoxigraph as ox

    parser = ox.parse(path=str(ttl))
    for _ in parser:
        pass
    return "".join(f"PREFIX {k}: <{v}>\n" for k, v in parser.prefixes.items())


#: The in-repo BuildingQA-format building; the others are the real benchmark's (extra data).
IN_REPO_BUILDING = "soda"
REAL_BUILDINGS = ["TUC_building", "dflexlibs_multizone", "b59", "bldg11"]


def buildingqa_root(request: pytest.FixtureRequest, building: str) -> Path:
    """The folder holding ``Benchmark_QA_pairs/`` and ``eval_buildings/`` for ``building``.

    Soda Hall is in the repository; a real BuildingQA building needs the optional extra data
    (the test is skipped without it).
    """
    if building == IN_REPO_BUILDING:
        return Path(request.getfixturevalue("shared_data")) / "buildingqa"
    return Path(request.getfixturevalue("extra_data")) / "brick" / "buildingqa"


def gold_queries(base: Path, building: str) -> list[tuple[str, str]]:
    """(query_id, full query) for one building under ``base``, with the TTL's prefixes prepended."""
    data: list[dict[str, Any]] = json.loads(
        (base / "Benchmark_QA_pairs" / f"{building}_combined.json").read_text())
    head = ttl_prefixes(base / "eval_buildings" / f"{building}.ttl")
    return [(q["query_id"], head + q["sparql_query"]) for b in data for q in b["queries"]]


@pytest.fixture(scope="session")
def soda(shared_data: Path) -> Path:
    """Soda Hall, UC Berkeley (Brick's example building): 3,774 triples, 5 AHUs, 243 VAVs."""
    return shared_data / "brick" / "soda_brick.ttl"


@pytest.fixture(scope="session")
def brick_examples(shared_data: Path) -> Path:
    return shared_data / "brick"
