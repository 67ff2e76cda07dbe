"""TEXT2SPARQL'25: the plugin's per-question set_P / set_recall / set_F, and the session
averages, against the organisers' own published evaluation of the participants' published
answer sets (tests/data/text2sparql25/PROVENANCE.md). Bit for bit, no tolerance."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from pytest_queryeval.metrics.text2sparql import Question, aggregate, question_metrics

DATA = Path(__file__).resolve().parents[1] / "data" / "text2sparql25"
#: docs/benchmark/questions_db25.yaml: the questions with RESULT_ORDER_MATTERS
DB25_ORDERED = {46, 96}
PAIRS = [("ck25", "FRANZ"), ("ck25", "LABIC"), ("db25", "FRANZ"), ("db25", "DBPEDIA-CG"),
         ("db25", "DBPEDIA-CL"), ("db25", "DBPEDIA-SC")]


def _load(path: Path) -> Any:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        return json.load(f)


@pytest.mark.parametrize(("dataset", "team"), PAIRS)
def test_every_published_question(dataset: str, team: str) -> None:
    gold = _load(DATA / f"{dataset}_true_result_set.json.gz")
    pred = _load(DATA / team / f"{dataset}_system_result_set.json.gz")
    published = _load(DATA / team / f"{dataset}_eval.json")
    questions = [q for q in published if q != "average"]
    assert len(questions) == (50 if dataset == "ck25" else 200)
    for q in questions:
        mine = question_metrics(gold.get(q, {}), pred.get(q, {}))
        ref = published[q]
        assert (mine["set_precision"], mine["set_recall"], mine["set_f1"]) == \
            (ref["set_P"], ref["set_recall"], ref["set_F"]), q


@pytest.mark.parametrize("team", [t for d, t in PAIRS if d == "db25"])
def test_the_published_session_average(team: str) -> None:
    gold = _load(DATA / "db25_true_result_set.json.gz")
    pred = _load(DATA / team / "db25_system_result_set.json.gz")
    published = _load(DATA / team / "db25_eval.json")["average"]
    questions = []
    for q in (q for q in _load(DATA / team / "db25_eval.json") if q != "average"):
        ordered = int(q.split(":")[1].split("-")[0]) in DB25_ORDERED
        questions.append(Question(question_metrics(gold.get(q, {}), pred.get(q, {}),
                                                   order_matters=ordered), ordered))
    mine = aggregate(questions)
    assert (mine["set_precision"], mine["set_recall"], mine["set_f1"], mine["ndcg"],
            mine["set_f1_ndcg"]) == (published["set_P"], published["set_recall"],
                                     published["set_F"], published["ndcg"],
                                     published["set_F_ndcg"])
