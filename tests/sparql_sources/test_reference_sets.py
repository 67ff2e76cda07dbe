"""The TEXT2SPARQL and GERBIL metrics through ``kind: sparql`` (real Oxigraph store, recorded
results), and BuildingQA's first-row key order on recorded results (issue 20, items 3 and 6)."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_queryeval.kinds.sparql import SparqlKind
from pytest_queryeval.results import ResultTable

from .conftest import BRICK
from .test_sparql_kind import case, evaluate


def _uri(v: str) -> dict[str, str]:
    return {"type": "uri", "value": "http://e/" + v}


def _recorded(vars_: list[str], rows: list[dict[str, Any]]) -> ResultTable:
    return ResultTable.from_recorded({"head": {"vars": vars_}, "results": {"bindings": rows}})


def _scored(gold: ResultTable, pred: ResultTable, **options: Any) -> Any:
    return evaluate(case(None, "SELECT ?a WHERE { ?a ?p ?o }", "SELECT ?a WHERE { ?a ?p ?o }",
                         gold_result=gold, predicted_result=pred, options=options))


def test_empty_gold_scores_as_the_references_do() -> None:
    empty = _recorded(["a"], [])
    s = _scored(empty, _recorded(["a"], []))
    assert s.metrics["entity_set_f1"] == 1.0  # the plugin's (BuildingQA) set metric: both empty
    assert s.metrics["set_f1"] == 0.0  # pytrec_eval: no relevant document
    assert s.metrics["set_precision"] == s.metrics["set_recall"] == 0.0
    assert s.metrics["qald_f1"] == 1.0  # GERBIL: nothing to find, nothing found
    some = _scored(empty, _recorded(["a"], [{"a": _uri("x")}]))
    assert some.metrics["qald_f1"] == some.metrics["set_f1"] == 0.0


def test_answer_set_is_every_projected_value(soda: Any) -> None:
    gold = _recorded(["a", "b"], [{"a": _uri("1"), "b": _uri("2")}, {"a": _uri("3")}])
    pred = _recorded(["x"], [{"x": _uri("1")}, {"x": _uri("2")}, {"x": _uri("9")}])
    s = _scored(gold, pred)
    assert s.metrics["set_precision"] == 2 / 3 and s.metrics["set_recall"] == 2 / 3
    assert s.metrics["qald_precision"] == 2 / 3 and s.metrics["qald_recall"] == 2 / 3
    assert s.details["gerbil"] == {"tp": 2, "fp": 1, "fn": 1}
    assert "ndcg" not in s.metrics


def test_ask_quirks_on_the_real_graph(soda: Any) -> None:
    spec = {"type": "rdf", "path": str(soda)}
    gold = BRICK + "ASK { ?x a brick:AHU }"  # true on Soda Hall
    wrong = evaluate(case(spec, gold, BRICK + "ASK { ?x a brick:Air_Handling_Unit }"))  # false
    assert wrong.metrics["execution_accuracy"] == 0.0
    assert wrong.metrics["set_f1"] == 1.0  # TEXT2SPARQL: the document "true" is retrieved
    assert wrong.metrics["qald_f1"] == 0.0  # QALD: {"false"} against {"true"}
    assert wrong.details["text2sparql"] == {"order_matters": False}


def test_ndcg_only_where_the_result_order_matters(soda: Any) -> None:
    spec = {"type": "rdf", "path": str(soda)}
    q = BRICK + "SELECT ?s WHERE { ?s a brick:AHU } ORDER BY "
    asc, desc = q + "?s", q + "DESC(?s)"
    for options in ({"features": ["RESULT_ORDER_MATTERS"]}, {"result_order_matters": True}):
        s = evaluate(case(spec, asc, desc, options=options))
        assert s.metrics["execution_accuracy"] == 0.0  # the plugin's EX sees the order
        assert s.metrics["ndcg"] == 1.0  # the reference's ndcg never does
        assert s.details["text2sparql"] == {"order_matters": True}
    plain = evaluate(case(spec, asc, desc, options={"features": ["OTHER"]}))
    assert "ndcg" not in plain.metrics


def test_a_failed_prediction_is_an_empty_answer(soda: Any) -> None:
    spec = {"type": "rdf", "path": str(soda)}
    s = evaluate(case(spec, BRICK + "SELECT ?s WHERE { ?s a brick:AHU }", "SELECT ?x WHERE {",
                      options={"features": ["RESULT_ORDER_MATTERS"]}))
    assert s.reason.startswith("cannot parse")
    assert s.metrics["qald_precision"] == 1.0 and s.metrics["qald_recall"] == 0.0
    assert s.metrics["set_f1"] == 0.0 and s.metrics["ndcg"] == 0.0
    assert s.details["gerbil"]["tp"] == 0 and s.details["gerbil"]["fp"] == 0


@pytest.mark.parametrize(("options", "key"), [
    ({"features": "RESULT_ORDER_MATTERS"}, "features"),
    ({"features": ["RESULT_ORDER_MATTERS", 3]}, "features[1]"),
    ({"result_order_matters": "yes"}, "result_order_matters"),
])
def test_bad_order_keys_are_named(options: dict[str, Any], key: str) -> None:
    c = case(None, "SELECT ?a WHERE { ?a ?p ?o }", "x", options=options,
             gold_result=_recorded(["a"], []), predicted_result=_recorded(["a"], []))
    assert [k for k, _ in SparqlKind().validate(c)] == [key]


def test_an_ndcg_threshold_needs_the_order_feature() -> None:
    from pytest_queryeval.rules.thresholds import parse_threshold

    def problems(**options: Any) -> list[str]:
        c = case(None, "SELECT ?a WHERE { ?a ?p ?o }", "x", options=options,
                 gold_result=_recorded(["a"], []), predicted_result=_recorded(["a"], []))
        c.thresholds = {"ndcg": parse_threshold("ndcg", 0.5)}
        return [k for k, _ in SparqlKind().validate(c)]

    assert problems() == ["thresholds.ndcg"]
    assert problems(features=["RESULT_ORDER_MATTERS"]) == []


def test_buildingqa_exact_match_pairs_columns_in_first_binding_key_order() -> None:
    """A recorded result whose first binding lists its keys in another order than head.vars:
    the reference's exact match pairs columns by that key order (``list(rows[0].keys())``) and
    scores 0.0; the other two metrics search every mapping and still find 1.0."""
    gold = _recorded(["a", "b"], [{"a": _uri("1"), "b": _uri("2")}])
    swapped = _recorded(["a", "b"], [{"b": _uri("2"), "a": _uri("1")}])
    assert swapped.meta["first_row_keys"] == ["b", "a"]
    s = _scored(gold, swapped)
    assert s.metrics["exact_match_f1"] == 0.0
    assert s.metrics["row_match_f1"] == s.metrics["entity_set_f1"] == 1.0
    assert s.metrics["execution_accuracy"] == 1.0  # the plugin's own EX reads head.vars
    in_order = _scored(gold, _recorded(["a", "b"], [{"a": _uri("1"), "b": _uri("2")}]))
    assert in_order.metrics["exact_match_f1"] == 1.0
    assert "first_row_keys" not in gold.meta
