"""BuildingQA's bldg11 walk-through on real graphs.

On bldg11 (optional extra data: the BuildingQA files have no licence, so they are not in the
repository) against the notebook's published numbers: the notebook ran the queries on GraphDB;
the research notes reproduced the same scores with pyoxigraph (docs: sparql-json-sdmx-anchors.md
§1, "Reproduced on real data"). On Soda Hall (Brick's example, in the repository; its AHU class is
``brick:AHU``) against the brute-force re-implementation (brute_force.py) on the same tables.
"""

from __future__ import annotations

import pytest

from pytest_queryeval.metrics.alignment import alignment_details, alignment_diff, arity_from_query

from .brute_force import bf_table_metrics
from .helpers import run_select

PREFIXES = "PREFIX brick: <https://brickschema.org/schema/Brick#>\n"

GOLD_T = (
    PREFIXES
    + """
    SELECT DISTINCT ?eqp ?sensor WHERE {
        ?eqp    a                       brick:AHU_CLASS .
        ?vav    a                       brick:VAV .
        ?sensor a                       brick:Zone_Air_Temperature_Sensor .
        ?eqp    brick:feeds             ?vav .
        ?vav    brick:hasPoint          ?sensor .
    }
"""
)
PRED_T = {
    "cross": """SELECT DISTINCT ?ahu ?s  WHERE {
        ?ahu    a        brick:AHU_CLASS .
        ?s      a        brick:Zone_Air_Temperature_Sensor .
    }""",
    "cross-swapped": """SELECT DISTINCT ?s ?ahu   WHERE {
        ?ahu    a        brick:AHU_CLASS .
        ?s      a        brick:Zone_Air_Temperature_Sensor .
    }""",
    "extra-column": """SELECT DISTINCT ?eqp ?vav ?sensor WHERE {
        ?eqp    a                       brick:AHU_CLASS .
        ?vav    a                       brick:VAV .
        ?sensor a                       brick:Zone_Air_Temperature_Sensor .
        ?eqp    brick:feeds             ?vav .
        ?vav    brick:hasPoint          ?sensor .
    }""",
    "one-column": """SELECT DISTINCT ?s   WHERE {
        ?ahu    a        brick:AHU_CLASS .
        ?s      a        brick:Zone_Air_Temperature_Sensor .
    }""",
    "renamed": """SELECT DISTINCT ?e ?s WHERE {
        ?e    a                       brick:AHU_CLASS .
        ?vav    a                       brick:VAV .
        ?s a                       brick:Zone_Air_Temperature_Sensor .
        ?e    brick:feeds             ?vav .
        ?vav    brick:hasPoint          ?s .
    }""",
}

#: The graph's AHU class (bldg11: Brick 1.3 names; Soda Hall: Brick 1.0 names).
AHU = {"bldg11": "Air_Handling_Unit", "soda": "AHU"}
GOLD = GOLD_T.replace("AHU_CLASS", AHU["bldg11"])
PRED = {k: v.replace("AHU_CLASS", AHU["bldg11"]) for k, v in PRED_T.items()}

# bldg11: published (notebook output / research table): rows, arity, entity, row, exact.
# soda: the brute-force oracle's values on the same tables (checked live for the cheap shapes).
EXPECTED = {
    "bldg11": {
        "cross": (4268, 1.0, 0.9445, 0.1623, 0.1623),
        "cross-swapped": (4268, 1.0, 0.9445, 0.1623, 0.0),
        "extra-column": (377, 0.8, 1.0, 1.0, 0.0),
        "one-column": (388, 0.6667, 0.0, 0.0, 0.0),
        "renamed": (377, 1.0, 1.0, 1.0, 1.0),
    },
    "soda": {
        "cross": (1160, 1.0, 0.9968, 0.3309, 0.3309),
        "cross-swapped": (1160, 1.0, 0.9968, 0.3309, 0.0),
        "extra-column": (230, 0.8, 1.0, 1.0, 0.0),
        "one-column": (232, 0.6667, 0.0, 0.0, 0.0),
        "renamed": (230, 1.0, 1.0, 1.0, 1.0),
    },
}
GOLD_ROWS = {"bldg11": 377, "soda": 230}


@pytest.fixture(scope="module", params=["soda", "bldg11"])
def graph(request: pytest.FixtureRequest):
    """(name, loaded store): Soda Hall from tests/data; bldg11 from the optional extra data."""
    ox = pytest.importorskip("pyoxigraph")
    if request.param == "soda":
        path = request.getfixturevalue("shared_data") / "brick" / "soda_brick.ttl"
    else:
        path = (request.getfixturevalue("extra_data") / "brick" / "buildingqa" / "eval_buildings"
                / "bldg11.ttl")
    store = ox.Store()
    store.bulk_load(path=str(path), format=ox.RdfFormat.TURTLE)
    return request.param, store


def _queries(name: str) -> tuple[str, dict[str, str]]:
    return (GOLD_T.replace("AHU_CLASS", AHU[name]),
            {k: PREFIXES + v.replace("AHU_CLASS", AHU[name]) for k, v in PRED_T.items()})


@pytest.fixture(scope="module")
def gold_table(graph):
    name, store = graph
    table = run_select(store, _queries(name)[0])
    assert len(table.rows) == GOLD_ROWS[name]
    return table


@pytest.mark.parametrize("shape", list(PRED_T))
def test_walkthrough_matches_published(shape, graph, gold_table):
    name, store = graph
    gold_q, preds = _queries(name)
    n_rows, arity, entity, row, exact = EXPECTED[name][shape]
    pred = run_select(store, preds[shape])
    assert len(pred.rows) == n_rows
    d = alignment_details(gold_table, pred, gold_query=gold_q, pred_query=preds[shape])
    got = d.metrics
    assert round(got["arity_f1"], 4) == arity
    assert round(got["entity_set_f1"], 4) == entity
    assert round(got["row_match_f1"], 4) == row
    assert round(got["exact_match_f1"], 4) == exact
    if name == "soda" and n_rows <= 300:  # the brute force is quadratic: the small tables only
        bf = bf_table_metrics(gold_table, pred, "sparql")
        assert (round(bf["entity_set_f1"], 4), round(bf["row_match_f1"], 4),
                round(bf["exact_match_f1"], 4)) == (entity, row, exact)


def test_walkthrough_query_arities():
    # the notebook prints arity from the two query strings: 1, 0.8, 0.667
    assert arity_from_query(GOLD) == 2
    assert [arity_from_query(PRED[k]) for k in ("cross", "extra-column", "one-column")] == [2, 3, 1]


def test_walkthrough_swapped_mapping_and_diff(graph, gold_table):
    name, store = graph
    pred = run_select(store, _queries(name)[1]["cross-swapped"])
    d = alignment_details(gold_table, pred)
    assert d.mapping == [("ahu", "eqp"), ("s", "sensor")]
    lines = alignment_diff(gold_table, pred, details=d)
    assert lines[0] == "column mapping (predicted -> gold): ahu -> eqp, s -> sensor"
    extra = EXPECTED[name]["cross"][0] - GOLD_ROWS[name]
    assert lines[1].startswith(f"rows: {GOLD_ROWS[name]} matched, 0 gold row(s) missing, "
                               f"{extra} extra")
