"""CypherBench's execution metrics against its functions run unmodified (tests/data/cypherbench):
every generated pair digit for digit, its quirks one by one, and the same on results that a
real ladybug graph returned."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from pytest_queryeval.cypher import cypherbench
from pytest_queryeval.cypher.cypherbench import execution_accuracy, neo4j_view
from pytest_queryeval.results import GraphNode, GraphRelationship


def _decode(v: object) -> object:
    """The oracle's tagged values as ladybug returns them (a date, a datetime)."""
    if isinstance(v, dict) and "$date" in v:
        return dt.date.fromisoformat(str(v["$date"]))
    if isinstance(v, dict) and "$datetime" in v:
        return dt.datetime.fromisoformat(str(v["$datetime"]))
    if isinstance(v, dict):
        return {k: _decode(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_decode(x) for x in v]
    return v


def _records(rows: object) -> list[dict[str, object]] | None:
    if isinstance(rows, dict) and "error" in rows:
        return None
    assert isinstance(rows, list)
    return [{k: _decode(v) for k, v in r.items()} for r in rows]


@pytest.fixture(scope="module")
def oracle(shared_data: Path) -> dict[str, object]:
    data: dict[str, object] = json.loads((shared_data / "cypherbench" / "oracle.json")
                                         .read_text(encoding="utf-8"))
    return data


def test_every_generated_pair_scores_as_the_reference(oracle):
    pairs = oracle["pairs"]
    assert len(pairs) == 400
    wrong = []
    for pair in pairs:
        gold, pred = _records(pair["gold"]), _records(pair["pred"])
        assert gold is not None
        ours = execution_accuracy(pair["pred_text"], pair["gold_text"], gold, pred)
        expected = pair["execution_accuracy"]
        if isinstance(expected, dict):  # the reference raised: no score here
            expected = None
            assert pair["execution_accuracy"] == {"raises": "TypeError"}
        if ours != expected:
            wrong.append((pair["id"], ours, expected))
        ran = pred is not None or pair["pred_text"] == pair["gold_text"]
        assert cypherbench.executable(not ran) == pair["executable"], pair["id"]
    assert wrong == []


def test_the_oracle_covers_every_branch(oracle):
    """Scores of 1 and 0, crashes of the reference, failed and identical predictions."""
    pairs = oracle["pairs"]
    values = [json.dumps(p["execution_accuracy"]) for p in pairs]
    assert values.count("1.0") >= 100 and values.count("0.0") >= 100
    assert values.count('{"raises": "TypeError"}') >= 10
    assert sum(p["pred_text"] == p["gold_text"] for p in pairs) >= 10
    assert sum(isinstance(p["pred"], dict) for p in pairs) >= 10


# -- the quirks, one by one (each also in the oracle's pairs) --------------------------------

ROWS = [{"a": 1, "b": "x"}, {"a": 2, "b": "y"}]


def test_the_same_text_scores_one_without_comparing():
    assert execution_accuracy("RETURN 1", "RETURN 1", [{"t": dt.datetime(2020, 1, 1)}],
                              None) == 1.0


def test_order_matters_wherever_order_by_is_written():
    reversed_rows = list(reversed(ROWS))
    assert execution_accuracy("p", "MATCH (n) RETURN n", ROWS, reversed_rows) == 1.0
    assert execution_accuracy("p", "MATCH (n) RETURN n ORDER BY n", ROWS, reversed_rows) == 0.0
    # inside a WITH, a string literal: still ordered; written over two lines: not
    assert execution_accuracy("p", "MATCH (n {s: 'order by'}) RETURN n", ROWS,
                              reversed_rows) == 0.0
    assert execution_accuracy("p", "RETURN n ORDER\nBY n", ROWS, reversed_rows) == 1.0


def test_columns_are_matched_by_value_not_name_and_lists_are_sorted():
    pred = [{"y": "x", "z": 1.0}, {"y": "y", "z": True + 1}]
    assert execution_accuracy("p", "g", ROWS, pred) == 1.0
    assert execution_accuracy("p", "g", [{"l": [1, 2]}], [{"m": [2, 1]}]) == 1.0
    assert execution_accuracy("p", "g", [{"d": dt.date(2020, 1, 2)}], [{"s": "2020-01-02"}]) == 1.0


def test_an_unhashable_value_scores_zero_in_the_prediction_and_none_in_the_gold():
    mixed = [{"l": [1, None]}]
    assert execution_accuracy("p", "g", mixed, [{"l": [1]}]) is None  # the reference raises
    # the prediction is hashed first: the same value scores 0, the gold is never hashed
    assert execution_accuracy("p", "g", mixed, mixed) == 0.0
    assert execution_accuracy("p", "g", [{"l": [1]}], mixed) == 0.0


def test_the_neo4j_view_of_ladybug_values():
    node = GraphNode({"_ID": {"offset": 0, "table": 0}, "_LABEL": "Person", "name": "Ann",
                      "age": None})
    rel = GraphRelationship({"_SRC": {"offset": 0, "table": 0},
                             "_DST": {"offset": 1, "table": 0}, "_ID": {},
                             "_LABEL": "KNOWS", "since": 2020})
    # the driver's Result.data(): a relationship is (start, TYPE, end), an end known only
    # once a record held it (here the start, in the same row)
    assert neo4j_view(["n", "r"], [(node, rel)]) == [{"n": {"name": "Ann"},
                                                      "r": ({"name": "Ann"}, "KNOWS", {})}]
    assert neo4j_view(["a", "a"], [(1, 2)]) == [{"a": 2}]


# -- pairs executed on the example graph (graph_oracle.json) ---------------------------------

def test_pairs_executed_on_the_graph_score_as_the_reference(shared_data):
    """The records are executed again (the engine must still return them), then scored: the
    kind's path from ladybug rows to ``cypherbench_ex``, digit for digit."""
    pytest.importorskip("ladybug")
    from pytest_queryeval.cypher.source import LadybugSource
    from tests.data.cypherbench.graph_pairs import GRAPH, PAIRS, records

    oracle = json.loads((shared_data / "cypherbench" / "graph_oracle.json")
                        .read_text(encoding="utf-8"))["pairs"]
    assert [(p["gold_text"], p["pred_text"]) for p in oracle] == PAIRS
    src = LadybugSource.from_spec("movies", {"type": "ladybug", "path": str(GRAPH)})
    try:
        for pair in oracle:
            assert records(src, pair["gold_text"]) == pair["gold"], pair["id"]
            assert records(src, pair["pred_text"]) == pair["pred"], pair["id"]
    finally:
        src.close()
    scores = {}
    for pair in oracle:
        gold, pred = _records(pair["gold"]), _records(pair["pred"])
        expected = pair["execution_accuracy"]
        ours = execution_accuracy(pair["pred_text"], pair["gold_text"], gold, pred)
        assert ours == (None if isinstance(expected, dict) else expected), pair["id"]
        assert cypherbench.executable(pred is None and pair["pred_text"] != pair["gold_text"]) \
            == pair["executable"], pair["id"]
        scores[pair["id"]] = ours
    # what the pairs show: a refused write and a failing query score 0, a list with null in
    # the gold has no score, ORDER BY inside WITH still orders
    assert scores["g28"] == 0.0 and scores["g08"] == 0.0 and scores["g27"] is None
    assert list(scores.values()).count(1.0) == 12
