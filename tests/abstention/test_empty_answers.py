"""An empty answer is an answer (issue 48 item 1): every reference evaluator scores it as a wrong
one, so it stays in every denominator; an abstention is only what the suite declares as one,
and a case that abstained still records every reference metric (0 where its reference gives 0).
"""

from __future__ import annotations

import gzip
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tests.support import run_report, write_suite

GOLD = "SELECT x FROM t ORDER BY x"
SQL_CONFIG = {"datasources": {"db": {"type": "sqlite", "path": "db.sqlite"}}}
T2S = Path(__file__).resolve().parents[1] / "data" / "text2sparql25"


def _sql_suite(pytester: pytest.Pytester, empty: object) -> None:
    write_suite(pytester.path, SQL_CONFIG, {"test_q.yaml": {
        "kind": "sql", "datasource": "db", "cases": [
            {"id": "right", "question": "q", "gold": GOLD, "predicted": GOLD},
            {"id": "empty", "question": "q", "gold": GOLD, "predicted": empty},
            {"id": "wrong", "question": "q", "gold": GOLD,
             "predicted": "SELECT x FROM t WHERE x > 1"}]}})
    with sqlite3.connect(pytester.path / "db.sqlite") as con:
        con.execute("CREATE TABLE t (x INTEGER)")
        con.executemany("INSERT INTO t VALUES (?)", [(1,), (2,), (3,)])
    con.close()


@pytest.mark.parametrize("empty", ["", "   \n"])
def test_an_empty_sql_answer_is_a_wrong_answer_in_every_denominator(
        pytester: pytest.Pytester, empty: str) -> None:
    """Right, empty, wrong: BIRD's evaluator executes the empty text, fails, scores 0 and
    divides by 3; Spider's evaluation.py scores the text it cannot parse as the empty query
    (exact 0) and counts it in the gold's hardness."""
    _sql_suite(pytester, empty)
    result, report = run_report(pytester, "--queryeval-markdown=r.md")
    metrics = report["aggregates"]["overall"]["metrics"]
    assert (metrics["bird_ex"]["mean"], metrics["bird_ex"]["n"]) == (1 / 3, 3)
    assert (metrics["execution_accuracy"]["mean"], metrics["execution_accuracy"]["n"]) == (1 / 3, 3)
    assert (metrics["exact_set_match"]["mean"], metrics["exact_set_match"]["n"]) == (1 / 3, 3)
    spider = report["aggregates"]["spider"]["all"]
    assert (spider["count"], spider["exact"]) == (3, 1 / 3)
    case = report.by_id["empty"]
    assert case["reason"] == "refused: empty statement"
    assert "abstained" not in case["metrics"] and "abstention" not in case["details"]
    # nothing abstained and no case expects it: no Abstention section anywhere
    assert "abstention" not in report["aggregates"]
    assert "Abstention" not in result.stdout.str()
    assert "Abstention" not in (pytester.path / "r.md").read_text(encoding="utf-8")


def test_a_null_answer_abstains_and_still_counts_in_every_reference_aggregate(
        pytester: pytest.Pytester) -> None:
    """``null`` is an abstention; the case records every reference metric at 0, so BIRD EX
    and Spider's exact match are still over the 3 questions."""
    _sql_suite(pytester, None)
    _, report = run_report(pytester)
    metrics = report["aggregates"]["overall"]["metrics"]
    assert (metrics["bird_ex"]["mean"], metrics["bird_ex"]["n"]) == (1 / 3, 3)
    assert (metrics["soft_f1"]["mean"], metrics["soft_f1"]["n"]) == (1 / 3, 3)
    assert report["aggregates"]["spider"]["all"]["count"] == 3
    assert report.by_id["empty"]["reason"] == \
        "abstained (null) on a question that expects an answer"
    assert report["aggregates"]["abstention"]["abstained"] == 1


def _load(path: Path) -> Any:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        return json.load(f)


def _sparql_json(answers: dict[str, int]) -> dict[str, Any]:
    """A flattened answer set as a recorded SPARQL result: one variable, each value a literal;
    an ASK answer (``{"true": 0|1}``) as the boolean result it was flattened from."""
    if set(answers) == {"true"}:
        return {"head": {}, "boolean": bool(answers["true"])}
    return {"head": {"vars": ["v"]}, "results": {"bindings": [
        {"v": {"type": "literal", "value": value}} for value in answers]}}


@pytest.mark.parametrize("no_answer", ["", None])
@pytest.mark.parametrize(("team", "empty"), [("LABIC", 34), ("FRANZ", 1)])
def test_text2sparql25_empty_answers_score_0_in_set_f(pytester: pytest.Pytester, team: str,
                                                      empty: int, no_answer: object) -> None:
    """The published corporate-KG answers (LABIC: 34 of 50 empty): the organisers average set_F
    over all 50 questions (LABIC 0.02; dropping the empty ones gave 1/16). An empty text is a
    wrong answer; a null one abstains but still scores what the reference scores (0)."""
    gold = _load(T2S / "ck25_true_result_set.json.gz")
    pred = _load(T2S / team / "ck25_system_result_set.json.gz")
    published = _load(T2S / team / "ck25_eval.json")
    cases = []
    for qid in (q for q in published if q != "average"):
        case: dict[str, Any] = {"id": qid.split(":")[1], "question": qid,
                                "gold_result": _sparql_json(gold[qid])}
        if pred.get(qid):
            case["predicted_result"] = _sparql_json(pred[qid])
        else:
            case["predicted"] = no_answer
        cases.append(case)
    assert sum("predicted" in c for c in cases) == empty
    (pytester.path / "graph.ttl").write_text("", encoding="utf-8")
    write_suite(pytester.path, {"datasources": {"kg": {"type": "rdf", "path": "graph.ttl"}},
                                "thresholds": {"set_f1": 1.0}},
                {"test_ck25.yaml": {"kind": "sparql", "datasource": "kg", "cases": cases}})
    _, report = run_report(pytester)
    t2s = report["aggregates"]["text2sparql"]
    average = published["average"]
    assert t2s["questions"] == 50
    assert (t2s["set_precision"], t2s["set_recall"], t2s["set_f1"]) == \
        (average["set_P"], average["set_recall"], average["set_F"])
    for qid in (q for q in published if q != "average"):
        metrics = report.by_id[qid.split(":")[1]]["metrics"]
        assert (metrics["set_precision"], metrics["set_recall"], metrics["set_f1"]) == \
            (published[qid]["set_P"], published[qid]["set_recall"], published[qid]["set_F"]), qid
    assert ("abstention" in report["aggregates"]) is (no_answer is None)
