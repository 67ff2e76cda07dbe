"""``kind: sparql`` driven through the engine's real Evaluator (the Context) on real graphs."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from pytest_queryeval.engine import Evaluator, run_case
from pytest_queryeval.errors import GoldError, SourceUnavailable
from pytest_queryeval.kinds import get_kind
from pytest_queryeval.kinds.sparql import SparqlKind
from pytest_queryeval.model import Case
from pytest_queryeval.results import ResultTable
from tests.support import make_case

from .conftest import AHU_VAV_SENSOR, BRICK, sha256


class DictCache:
    """pytest's cache interface over a dict (what ``config.cache`` offers)."""

    def __init__(self) -> None:
        self.data: dict[str, Any] = {}

    def get(self, key: str, default: Any) -> Any:
        return self.data.get(key, default)

    def set(self, key: str, value: Any) -> None:
        self.data[key] = value


def case(spec: dict[str, Any] | None, gold: Any, predicted: Any = None, **kw: Any) -> Case:
    c = make_case("sparql", gold=gold, datasource="b" if spec else None, source_spec=spec, **kw)
    if predicted is not None:
        c.predicted = predicted
    return c


@pytest.fixture
def soda_spec(soda: Path) -> dict[str, Any]:
    return {"type": "rdf", "path": str(soda)}


def evaluate(c: Case, session: Evaluator | None = None) -> Any:
    kind = SparqlKind()
    assert not list(kind.validate(c))
    return kind.evaluate(c, c.predicted, session or Evaluator(cache=DictCache()))


def _pred(select: str, where: str) -> str:
    return BRICK + f"SELECT DISTINCT {select} WHERE {{ {where} }}"


CROSS = "?ahu a brick:AHU . ?s a brick:Zone_Air_Temperature_Sensor ."
JOIN = ("?e a brick:AHU . ?vav a brick:VAV . ?s a brick:Zone_Air_Temperature_Sensor ."
        " ?e brick:feeds ?vav . ?vav brick:hasPoint ?s .")


@pytest.mark.parametrize(("pred", "expected"), [
    # The BuildingQA notebook's walk-through (research notes, section 1), on Soda Hall: the
    # values of the brute-force re-implementation (tests/sparql_metrics/brute_force.py) on the
    # same result tables (bldg11's published ones: tests/sparql_metrics/test_bldg11_walkthrough.py).
    (_pred("?ahu ?s", CROSS), (1.0, 0.9968, 0.3309, 0.3309, 0.0)),
    (_pred("?s ?ahu", CROSS), (1.0, 0.9968, 0.3309, 0.0, 0.0)),
    (_pred("?e ?vav ?s", JOIN), (0.8, 1.0, 1.0, 0.0, 0.0)),
    (_pred("?s", CROSS), (0.6667, 0.0, 0.0, 0.0, 0.0)),
    (_pred("?e ?s", JOIN), (1.0, 1.0, 1.0, 1.0, 1.0)),
    (_pred("?s ?e", JOIN), (1.0, 1.0, 1.0, 0.0, 1.0)),  # EX: any column permutation
])
def test_buildingqa_walkthrough(soda_spec: dict[str, Any], pred: str,
                                expected: tuple[float, ...]) -> None:
    s = evaluate(case(soda_spec, AHU_VAV_SENSOR, pred))
    got = tuple(s.metrics[m] for m in ("arity_f1", "entity_set_f1", "row_match_f1",
                                       "exact_match_f1", "execution_accuracy"))
    assert got == pytest.approx(expected, abs=1e-4)
    assert s.reason is None
    assert s.metrics["gold_seconds"] >= 0
    assert s.metrics["predicted_seconds"] >= 0
    assert all(SparqlKind().is_metric(m) for m in s.metrics)
    if expected[2] < 1.0:
        assert any(line.startswith("alignment: ") for line in s.diff)


def test_a_fenced_prediction_is_executed_and_the_fence_recorded(brick_examples: Path) -> None:
    """LLM output in a Markdown code fence: one fence is stripped (issue 19), not refused."""
    spec = {"type": "rdf", "path": str(brick_examples / "g36-combined-ahu-vav.ttl")}
    gold = BRICK + "SELECT ?v WHERE { ?v a brick:VAV }"
    query = BRICK + "SELECT ?x WHERE { ?x a brick:VAV . }"
    s = evaluate(case(spec, gold, f"```sparql\n{query}\n```"))
    assert s.reason is None
    assert s.metrics["execution_accuracy"] == 1.0
    assert s.details["gold_rows"] > 0
    assert s.details["fence_stripped"] == "```sparql"
    assert "fence_stripped" not in evaluate(case(spec, gold, query)).details


@pytest.mark.parametrize(("pred", "reason"), [
    ("INSERT DATA { <http://x/a> <http://x/p> 1 }", "refused: SPARQL Update"),
    ("PREFIX ex: <http://e/>\n# look, a read\ndrop all", "refused: SPARQL Update"),
    ("CONSTRUCT WHERE { ?s ?p ?o }", "refused: CONSTRUCT returns a graph"),
    ("SELECT * WHERE { SERVICE <http://127.0.0.1:9/q> { ?s ?p ?o } }", "refused: SERVICE"),
    ("SELECT ?x WHERE { ?x a brick:AHU ", "cannot parse: syntax error at line 1"),
    ({"sparql": "SELECT ?x WHERE { ?x ?p }"}, "cannot parse: syntax error at line 1"),
])
def test_failures_score_zero_with_reason(soda_spec: dict[str, Any], soda: Path, pred: Any,
                                         reason: str) -> None:
    before = sha256(soda)
    s = evaluate(case(soda_spec, AHU_VAV_SENSOR, pred))
    assert s.reason.startswith(reason)
    assert s.diff == []  # the reason says it: printed once (issue 43)
    scored = {k: v for k, v in s.metrics.items() if not k.endswith("_seconds")}
    assert scored
    # GERBIL's QALD rule scores the failed prediction as an empty answer: precision 1
    assert scored.pop("qald_precision") == 1.0
    assert set(scored.values()) == {0.0}
    assert "execution_accuracy" in scored
    assert "row_match_f1" in scored
    assert "set_f1" in scored
    assert sha256(soda) == before


def test_timeout_scores_zero(brick_examples: Path) -> None:
    spec = {"type": "rdf", "path": str(brick_examples / "rice_brick.ttl")}
    slow = "SELECT ?a WHERE { ?a ?b ?c . ?d ?e ?f FILTER(STRLEN(STR(?c)) + STRLEN(STR(?f)) < 0) }"
    s = evaluate(case(spec, "SELECT ?s WHERE { ?s ?p ?o } LIMIT 1", slow,
                      options={"timeout": 0.3}))
    assert s.reason.startswith("timeout: no result within 0.3 s")
    assert s.metrics["execution_accuracy"] == 0.0
    assert "predicted_seconds" in s.metrics


def test_truncated_prediction_is_never_scored(soda_spec: dict[str, Any]) -> None:
    s = evaluate(case(soda_spec, BRICK + "SELECT ?a WHERE { ?a a brick:AHU }",
                      _pred("?ahu ?s", CROSS), options={"max_rows": 1000}))
    assert s.reason.startswith("truncated: the predicted result has more than 1000 rows")
    assert s.metrics["execution_accuracy"] == 0.0


def test_broken_gold_is_an_error_of_the_suite(soda_spec: dict[str, Any]) -> None:
    kind = SparqlKind()
    with pytest.raises(GoldError, match="gold query: cannot parse: syntax error"):
        kind.evaluate(case(soda_spec, "SELECT ?x WHERE {", "ASK {}"), "ASK {}",
                      Evaluator(cache=DictCache()))
    bad = case(soda_spec, "DELETE WHERE { ?s ?p ?o }", "ASK {}")
    assert [k for k, _ in kind.validate(bad)] == ["gold"]
    with pytest.raises(GoldError, match="refused"):
        kind.evaluate(bad, "ASK {}", Evaluator(cache=DictCache()))


def test_unreachable_endpoint_raises() -> None:
    from tests.fixtures.oxigraph import free_port

    spec = {"type": "sparql", "endpoint": f"http://127.0.0.1:{free_port()}/query",
            "retries": 0}
    with pytest.raises(SourceUnavailable, match="cannot reach"):
        evaluate(case(spec, "ASK { ?s ?p ?o }", "ASK { ?s ?p ?o }"))


def test_gold_cache_across_sessions(soda_spec: dict[str, Any]) -> None:
    cache = DictCache()
    c = case(soda_spec, AHU_VAV_SENSOR, _pred("?e ?s", JOIN))
    first = evaluate(c, Evaluator(cache=cache))
    assert first.details["gold_cached"] is False
    assert len(cache.data) == 1
    second = evaluate(c, Evaluator(cache=cache))
    assert second.details["gold_cached"] is True
    first.metrics.pop("predicted_seconds")
    second.metrics.pop("predicted_seconds")
    assert second.metrics == first.metrics  # gold_seconds comes from the cached table too
    third = evaluate(c, Evaluator(cache=cache, no_cache=True))
    assert third.details["gold_cached"] is False


def test_results_with_blank_nodes_are_not_cached(tmp_path: Path) -> None:
    g = tmp_path / "b.ttl"
    g.write_text("<http://e/a> <http://e/p> _:x . _:x <http://e/q> 1 .\n")
    cache = DictCache()
    c = case({"type": "rdf", "path": str(g)}, "SELECT ?o WHERE { <http://e/a> ?p ?o }",
             "SELECT ?n WHERE { ?n <http://e/q> 1 }")
    s = evaluate(c, Evaluator(cache=cache))
    assert s.metrics["execution_accuracy"] == 1.0
    assert cache.data == {}


def test_ask(soda_spec: dict[str, Any]) -> None:
    gold = BRICK + "ASK { ?x a brick:AHU }"
    ok = evaluate(case(soda_spec, gold, BRICK + "ask { ?y a brick:Air_Handling_Unit }"))
    assert ok.metrics["execution_accuracy"] == 0.0  # Soda Hall uses brick:AHU only: false
    same = evaluate(case(soda_spec, gold, BRICK + "ASK { ?y brick:feeds ?z }"))
    assert same.metrics["execution_accuracy"] == 1.0
    assert same.metrics["exact_match_f1"] == 1.0
    assert ok.metrics["row_match_f1"] == 0.0


def test_order_matters_only_with_outer_order_by(soda_spec: dict[str, Any]) -> None:
    q = "SELECT ?s WHERE { ?s a brick:AHU } ORDER BY "
    asc, desc = BRICK + q + "?s", BRICK + q + "DESC(?s)"
    assert evaluate(case(soda_spec, asc, desc)).metrics["execution_accuracy"] == 0.0
    unordered = BRICK + "SELECT ?s WHERE { ?s a brick:AHU }"
    assert evaluate(case(soda_spec, unordered, desc)).metrics["execution_accuracy"] == 1.0


def test_best_gold_alternative_wins(soda_spec: dict[str, Any]) -> None:
    other = BRICK + "SELECT ?v WHERE { ?v a brick:VAV }"
    s = evaluate(case(soda_spec, [other, AHU_VAV_SENSOR], _pred("?e ?s", JOIN)))
    assert s.metrics["execution_accuracy"] == 1.0
    assert s.details["gold_index"] == 1
    assert s.details["gold_alternatives"] == 2


def test_recorded_results_without_datasource() -> None:
    def binding(v: str) -> dict[str, str]:
        return {"type": "uri", "value": v}

    gold = ResultTable.from_recorded({"head": {"vars": ["a"]}, "results": {"bindings": [
        {"a": binding("http://e/1")}, {"a": binding("http://e/2")}]}})
    pred = ResultTable.from_recorded({"head": {"vars": ["b"]}, "results": {"bindings": [
        {"b": binding("http://e/2")}]}})
    c = case(None, "SELECT ?a WHERE { ?a ?p ?o }", "SELECT ?b WHERE { ?b ?p ?o }",
             gold_result=gold, predicted_result=pred)
    s = evaluate(c)
    assert s.metrics["execution_accuracy"] == 0.0
    assert s.metrics["row_match_f1"] == pytest.approx(2 / 3)


def test_recorded_result_compares_like_an_executed_one(tmp_path: Path) -> None:
    g = tmp_path / "l.ttl"
    g.write_text('<http://e/a> <http://e/p> "x", "Hi"@en, "2"^^<http://www.w3.org/2001/XMLSchema#int> .\n')
    xsd = "http://www.w3.org/2001/XMLSchema#"
    recorded = {"head": {"vars": ["o"]}, "results": {"bindings": [
        {"o": {"type": "literal", "value": "x", "datatype": xsd + "string"}},
        {"o": {"type": "literal", "value": "Hi", "xml:lang": "EN"}},
        {"o": {"type": "typed-literal", "value": "02", "datatype": xsd + "int"}}]}}
    c = case({"type": "rdf", "path": str(g)}, "SELECT ?o WHERE { ?s ?p ?o }",
             "SELECT ?o WHERE { ?s ?p ?o }", gold_result=ResultTable.from_recorded(recorded))
    assert evaluate(c).metrics["execution_accuracy"] == 1.0


def test_registry_and_validation(soda_spec: dict[str, Any]) -> None:
    kind = get_kind("sparql")
    assert isinstance(kind, SparqlKind)
    assert kind.is_metric("entity_set_f1")
    assert kind.is_metric("execution_accuracy")
    assert kind.is_metric("gold_seconds")
    assert not kind.is_metric("exact_set_match")
    problems = dict(kind.validate(case(soda_spec, AHU_VAV_SENSOR, options={"arity_from": "x",
                                                                     "timeout": -1})))
    assert set(problems) == {"arity_from"} or set(problems) <= {"arity_from", "timeout"}
    assert dict(kind.validate(case(None, AHU_VAV_SENSOR)))["datasource"]
    assert dict(kind.validate(case(soda_spec, None)))["gold"]


def test_run_case_through_the_engine(soda_spec: dict[str, Any], tmp_path: Path,
                                     brick_examples: Path) -> None:
    g = tmp_path / "soda.ttl"
    shutil.copyfile(brick_examples / "soda_brick.ttl", g)
    spec = {"type": "rdf", "path": str(g)}
    c = case(spec, BRICK + "SELECT ?a WHERE { ?a a brick:AHU }",
             BRICK + "SELECT ?x WHERE { ?x a brick:AHU }")
    out = run_case(c, Evaluator(cache=DictCache()))
    assert out.status == "passed"
    assert out.metrics["execution_accuracy"] == 1.0


def test_iri_hallucination_and_relaxed_ex_through_the_engine(soda_spec: dict[str, Any]) -> None:
    """Issue 30 item 7: the IRIs the graph does not hold, asked only when the case opts in,
    also for a prediction that scores; ``relaxed_ex`` beside a strict score that stays 0."""
    from pytest_queryeval.model import Threshold

    gold = _pred("?ahu", "?ahu a brick:AHU .")
    pred = _pred("?ahu ?z", "?ahu a brick:AHU . OPTIONAL { ?ahu brick:feedz ?z }")
    ex = {"execution_accuracy": Threshold("execution_accuracy", min=1.0)}
    session = Evaluator(cache=DictCache())
    c = case(soda_spec, gold, pred, thresholds=ex,
             options={"hallucination": True, "relaxed_ex": ["column_subset"]})
    out = run_case(c, session)
    assert out.metrics["iri_hallucination"] == 0.5  # brick:AHU held, brick:feedz invented
    assert out.details["iri_hallucination"]["unknown"] == [
        "https://brickschema.org/schema/Brick#feedz"]
    assert out.metrics["execution_accuracy"] == 0.0 and out.status == "failed"
    assert out.metrics["relaxed_ex"] == 1.0 and out.details["relaxed_ex"] == "column_subset"
    plain = run_case(case(soda_spec, gold, pred, thresholds=ex), session)
    assert "iri_hallucination" not in plain.metrics and "relaxed_ex" not in plain.metrics
    session.close()


def test_a_refused_update_prints_its_reason_once(suite: pytest.Pytester) -> None:
    """The refusal was the reason and again the only diff line: printed twice (issue 43)."""
    from tests.support import dump, run_report

    (suite.path / "g.ttl").write_text('<http://x/a> <http://x/p> "v" .\n', encoding="utf-8")
    suite.makefile(".yaml", queryeval=dump({"datasources": {"g": {"type": "rdf",
                                                                   "path": "g.ttl"}}}))
    suite.makefile(".yaml", test_q=dump({"kind": "sparql", "datasource": "g", "cases": [
        {"id": "up", "gold": "SELECT ?o WHERE { ?s ?p ?o }",
         "predicted": 'INSERT DATA { <http://x/a> <http://x/p> "w" }'}]}))
    result, report = run_report(suite)
    reason = "refused: SPARQL Update is not allowed (read-only source): INSERT DATA"
    assert (report.by_id["up"]["reason"], report.by_id["up"]["diff"]) == (reason, [])
    section = result.stdout.str().split("sparql case 'up'", 1)[1].split("=" * 20, 1)[0]
    assert section.count(reason) == 1, section
