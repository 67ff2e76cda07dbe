"""CypherBench's input as the reference gets it (issue 60): the records its own
``Neo4jConnector.run_query`` read through the neo4j driver from a real Bolt server
(``tests/data/cypherbench/values_oracle.json``, made by ``make_values_oracle.py``) are what the
plugin's CypherBench view makes of ladybug's rows for the same texts (a relationship, a path, a
node, an integer ``sum()``, a duration), and the plugin scores them as the reference scored
them, its ``TypeError`` included."""

from __future__ import annotations

import json
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from pytest_queryeval.cypher import cypherbench
from pytest_queryeval.cypher.cypherbench import neo4j_view
from tests.data.cypherbench.value_pairs import BOLT_GRAPH, GRAPH, PAIRS, TABLES, decode, encode

#: One xdist worker runs the whole module: its module-scoped runs are made once, not
#: once per worker (``tests/together.py``).
pytestmark = pytest.mark.xdist_group("tests.cypher.test_cypherbench_values")

pytest.importorskip("ladybug")
pytest.importorskip("neo4j")


@pytest.fixture(scope="module")
def oracle(shared_data: Path) -> list[dict[str, Any]]:
    data = json.loads((shared_data / "cypherbench" / "values_oracle.json")
                      .read_text(encoding="utf-8"))
    return list(data["pairs"])


@pytest.fixture(scope="module")
def graph(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from pytest_queryeval.cypher.source import LadybugSource

    script = tmp_path_factory.mktemp("values") / "publishing.cypher"
    script.write_text(";\n".join(TABLES + GRAPH) + ";\n", encoding="utf-8")
    src = LadybugSource.from_spec("publishing", {"type": "ladybug", "path": str(script)})
    yield src
    src.close()


def _view(src: Any, text: str) -> list[dict[str, Any]]:
    table = src.execute(text, trusted=True)
    return neo4j_view(table.columns, table.rows)


def _bag(records: list[dict[str, Any]], text: str) -> list[Any]:
    """Rows in their order when the text orders them, else as a bag (two engines need not
    return an unordered result in one order); FalkorDB's ``sum()`` is a float where Neo4j's
    and the plugin's is an integer (equal under ``==``, which is how the reference compares)."""
    rows = [json.dumps(_integral(encode(r)), sort_keys=True) for r in records]
    return rows if "order by" in text.lower() else sorted(rows)


def _integral(v: Any) -> Any:
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, list):
        return [_integral(x) for x in v]
    if isinstance(v, dict):
        return {k: _integral(x) for k, x in v.items()}
    return v


def test_the_oracle_holds_each_value_form(oracle):
    by_id = {p["id"]: p for p in oracle}
    assert by_id["rel-same"]["gold"][0]["e"] == {"$tuple": [{}, "PUBLISHED", {}]}
    assert by_id["rel-same"]["execution_accuracy"] == {"raises": "TypeError",
                                                       "message": "unhashable type: 'dict'"}
    assert by_id["path-equivalent"]["execution_accuracy"] == 0.0
    assert by_id["duration-sum"]["execution_accuracy"] == 1.0
    assert [p["id"] for p in oracle if not p.get("stand_in")] == [p[0] for p in PAIRS]


def test_the_view_of_ladybug_rows_is_the_drivers_records(oracle, graph):
    """Fails on main: there a relationship was its property map, a path the list of its
    nodes then its relationships, an interval a timedelta, a sum() a Decimal."""
    for pair in oracle:
        for side in ("gold", "pred"):
            text = pair[f"{side}_text"]
            ours = _view(graph, text)
            assert _bag(ours, text) == _bag(decode(pair[side]), text), (pair["id"], side)


def test_a_sum_of_integers_is_an_integer(graph):
    """Fails on main (``Decimal('6009')``): ladybug's INT128 as Neo4j's integer; a DECIMAL
    stays a Decimal, an INT128 property of a node an int."""
    table = graph.execute("MATCH (b:Book) RETURN sum(b.year) AS s, [sum(b.year)] AS l, "
                          "{t: sum(b.year)} AS m, CAST(1.50 AS DECIMAL(5, 2)) AS d, "
                          "CAST(7 AS INT128) AS i, "
                          "{x: CAST(2 AS INT128), y: CAST(1.5 AS DECIMAL(4, 1))} AS st",
                          trusted=True)
    assert table.rows == [(6009, [6009], {"t": 6009}, Decimal("1.50"), 7,
                           {"x": 2, "y": Decimal("1.5")})]
    assert [type(v) for v in table.rows[0]] == [int, list, dict, Decimal, int, dict]
    assert type(table.rows[0][5]["x"]) is int and type(table.rows[0][5]["y"]) is Decimal


def test_the_plugin_scores_as_the_reference(oracle, graph):
    """Fails on main: the relationship pairs scored 1.0 where the reference raises, the path
    scored 1.0 where it gives 0.0, the durations 0.0 where it gives 1.0."""
    wrong = []
    for pair in oracle:
        gold = _view(graph, pair["gold_text"])
        pred = _view(graph, pair["pred_text"])
        expected = pair["execution_accuracy"]
        ours = cypherbench.execution_accuracy(pair["pred_text"], pair["gold_text"], gold, pred)
        if ours != (None if isinstance(expected, dict) else expected):
            wrong.append((pair["id"], ours, expected))
        assert cypherbench.executable(False) == pair["executable"]
    assert wrong == []


def test_the_reference_error_is_recorded(oracle, graph):
    """Where the reference raises, :func:`score` gives its error, by type and message."""
    crashes = {}
    for pair in oracle:
        gold = _view(graph, pair["gold_text"])
        pred = _view(graph, pair["pred_text"])
        value, crash = cypherbench.score(pair["pred_text"], pair["gold_text"], gold, pred)
        expected = pair["execution_accuracy"]
        if isinstance(expected, dict):
            assert value is None
            crashes[pair["id"]] = crash
            assert crash == f"{expected['raises']}: {expected['message']}", pair["id"]
        else:
            assert crash is None and value == expected, pair["id"]
    assert crashes["rel-same"] == "TypeError: unhashable type: 'dict'"
    assert len(crashes) == 4


def test_the_server_still_returns_these_records(oracle, bolt_server):
    """The records of the oracle are what the driver reads from the Bolt server today (the
    graph written into a graph of its own there, as ``make_values_oracle.py`` does)."""
    import neo4j

    bolt_server.unstick()
    driver = neo4j.GraphDatabase.driver(bolt_server.url, auth=None, connection_timeout=10)
    try:
        with driver.session(database=BOLT_GRAPH) as session:
            session.run("MATCH (n) DETACH DELETE n").consume()
            for statement in GRAPH:
                session.run(statement).consume()
            for pair in oracle:
                if pair.get("stand_in"):
                    continue
                for side in ("gold", "pred"):
                    got = encode(session.run(pair[f"{side}_text"]).data())
                    assert got == pair[side], (pair["id"], side)
    finally:
        driver.close()
        bolt_server.unstick()


def test_the_film_graph_records_are_the_servers(shared_data, bolt_server):
    """``graph_oracle_bolt.json`` (the conformance entry ``cypherbench-graph``) holds what the
    reference's ``run_query`` reads from the fixture's server today."""
    import neo4j

    pairs = json.loads((shared_data / "cypherbench" / "graph_oracle_bolt.json")
                       .read_text(encoding="utf-8"))["pairs"]
    assert len(pairs) == 28
    bolt_server.unstick()
    driver = neo4j.GraphDatabase.driver(bolt_server.url, auth=None, connection_timeout=10)
    try:
        with driver.session() as session:  # the graph the fixture loaded
            for pair in pairs:
                for side in ("gold", "pred"):
                    got = encode(session.run(pair[f"{side}_text"]).data())
                    assert got == pair[side], (pair["id"], side)
    finally:
        driver.close()
        bolt_server.unstick()


def test_a_bolt_duration_stays_the_drivers():
    """Fails on main (``'P1M2D'`` text, and ``PT24H`` became ``timedelta(days=1)``): a
    ``type: bolt`` source keeps the driver's ``Duration`` (FalkorDB's listener cannot send
    one, so the driver's class is given directly), the CypherBench view passes it on, and the
    gold cache keeps its class."""
    from neo4j.time import Duration

    from pytest_queryeval.cypher.boltvalues import graph_types as _graph_types
    from pytest_queryeval.cypher.boltvalues import value as _value
    from pytest_queryeval.sources.codec import decode_value, encode_value

    for d in (Duration(months=1, days=2), Duration(hours=24), Duration(days=1)):
        got = _value([d], _graph_types())[0]
        assert type(got) is Duration and tuple(got) == tuple(d)
        assert neo4j_view(["d"], [(got,)]) == [{"d": d}]
        back = decode_value(encode_value(got))
        assert type(back) is Duration and back == d
    assert cypherbench.execution_accuracy("p", "g", [{"d": Duration(hours=24)}],
                                          [{"d": Duration(days=1)}]) == 0.0  # as Neo4j's


def test_a_gold_cached_in_the_old_value_forms_is_not_read_back(tmp_path):
    """Fails on main: the gold cache's key (the source's fingerprint) was the same, so a gold
    cached with a ``Decimal`` sum or a ``timedelta`` duration kept scoring as before."""
    import hashlib

    from pytest_queryeval.cypher.bolt import BoltSource
    from pytest_queryeval.cypher.source import LadybugSource

    script = tmp_path / "g.cypher"
    script.write_text("CREATE NODE TABLE A(x INT64 PRIMARY KEY);\n", encoding="utf-8")
    old = f"ladybug:{hashlib.sha256(script.read_bytes()).hexdigest()}"
    assert LadybugSource("g", str(script)).fingerprint() not in (old, "")
    bolt = BoltSource.from_spec("g", {"type": "bolt", "url": "bolt://127.0.0.1:1"})
    assert bolt.fingerprint().startswith("bolt:2:")
