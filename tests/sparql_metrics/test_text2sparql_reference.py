"""TEXT2SPARQL metrics against the reference (AKSW/text2sparql-client @ 980e0e1 with pytrec_eval
0.5) run unmodified on tests/data/text2sparql/cases.json: every question, every measure, bit for
bit, and the session ``average`` including ``set_F_ndcg``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_queryeval.metrics.text2sparql import (
    REFERENCE_NAMES,
    Question,
    aggregate,
    answers_from_json,
    answers_from_table,
    ndcg,
    question_metrics,
)
from pytest_queryeval.results import ResultTable

MISSING = {"head": {"link": [], "vars": []},
           "results": {"distinct": False, "ordered": True, "bindings": []}}


def _load(shared_data: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    d = shared_data / "text2sparql"
    return (json.loads((d / "cases.json").read_text(encoding="utf-8")),
            json.loads((d / "oracle.json").read_text(encoding="utf-8")))


@pytest.mark.parametrize("suite", ["mixed", "plain", "own_fixture"])
def test_per_question_and_average_agree_with_the_reference(shared_data: Path, suite: str) -> None:
    cases, oracle = _load(shared_data)
    ref = oracle[suite]
    questions = []
    for q in cases[suite]:
        gold = answers_from_json(q["gold"])
        pred = answers_from_json(q["pred"] if q["pred"] is not None else MISSING)
        assert gold == ref["true_set"][q["qname"]]
        assert pred == ref["pred_set"][q["qname"]]
        ours = question_metrics(gold, pred, order_matters=q["order_matters"])
        expected = {name: ref["results"][q["qname"]][REFERENCE_NAMES[name]]
                    for name in ours}
        assert ours == expected, q["qname"]  # exact floats
        assert ("ndcg" in ours) == ("ndcg" in ref["results"][q["qname"]])
        questions.append(Question(ours, q["order_matters"]))
    agg = aggregate(questions)
    average = ref["results"]["average"]
    for name in ("set_precision", "set_recall", "set_f1", "ndcg", "set_f1_ndcg"):
        assert agg.get(name) == average.get(REFERENCE_NAMES[name]), name


def test_the_reference_quirks_are_kept() -> None:
    # an empty gold answer set scores 0, even against an empty answer
    assert question_metrics({}, {}) == {"set_precision": 0.0, "set_recall": 0.0, "set_f1": 0.0}
    # ASK: a predicted false against a gold true is the document "true" retrieved: 1.0
    gold_true = answers_from_json({"boolean": True})
    pred_false = answers_from_json({"boolean": False})
    assert question_metrics(gold_true, pred_false)["set_f1"] == 1.0
    assert question_metrics(pred_false, pred_false)["set_f1"] == 0.0
    # ndcg ranks by value, descending: the predicted order is never seen
    gold = {"a": 1, "b": 1, "c": 1}
    assert ndcg(gold, {"c": 1, "x": 1, "a": 1}) == ndcg(gold, {"a": 1, "c": 1, "x": 1})
    # trec_eval reads an empty judgement list out of bounds for ndcg (the reference hung on it)
    assert ndcg({}, {"a": 1}) == 0.0


def test_set_f1_ndcg_counts_the_mean_ndcg_once_more() -> None:
    qs = [Question({"set_precision": 1.0, "set_recall": 1.0, "set_f1": 1.0}, False),
          Question({"set_precision": 0.5, "set_recall": 0.5, "set_f1": 0.5, "ndcg": 0.25}, True)]
    # terms: 1.0 (set_f1), 0.25 (ndcg), and the "average" entry's ndcg 0.25
    assert aggregate(qs)["set_f1_ndcg"] == 0.5
    assert aggregate(qs[:1])["set_f1_ndcg"] is None  # no ordered question: none computed


def test_answers_from_a_result_table_match_the_json_transform(shared_data: Path) -> None:
    cases, _ = _load(shared_data)
    for q in cases["mixed"]:
        for result in (q["gold"], q["pred"]):
            if result is None:
                continue
            table = ResultTable.from_recorded(result)
            assert answers_from_table(table) == answers_from_json(result), q["qname"]
