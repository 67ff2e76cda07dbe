"""Shared helpers for the SPARQL source tests: real BuildingQA and Brick files from shared data."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

BRICK = "PREFIX brick: <https://brickschema.org/schema/Brick#>\n"
#: The research notes' reference join on bldg11 (377 rows on GraphDB, pyoxigraph and rdflib).
AHU_VAV_SENSOR = BRICK + """
SELECT DISTINCT ?eqp ?sensor WHERE {
    ?eqp    a                       brick:Air_Handling_Unit .
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


def gold_queries(shared: Path, building: str) -> list[tuple[str, str]]:
    """(query_id, full query) for one BuildingQA building, with the TTL's prefixes prepended."""
    base = shared / "brick" / "buildingqa"
    data: list[dict[str, Any]] = json.loads(
        (base / "Benchmark_QA_pairs" / f"{building}_combined.json").read_text())
    head = ttl_prefixes(base / "eval_buildings" / f"{building}.ttl")
    return [(q["query_id"], head + q["sparql_query"]) for b in data for q in b["queries"]]


@pytest.fixture(scope="session")
def bldg11(extra_data: Path) -> Path:
    return extra_data / "brick" / "buildingqa" / "eval_buildings" / "bldg11.ttl"


@pytest.fixture(scope="session")
def brick_examples(shared_data: Path) -> Path:
    return shared_data / "brick"
