"""Near misses for ``kind: sparql`` on the real SODA Brick graph (pyoxigraph in process):
row order and an extra variable are attributed like SQL's, and the verdict stands."""

from __future__ import annotations

from typing import Any

from pytest_queryeval.engine import Evaluator, run_case
from pytest_queryeval.model import Threshold

from .conftest import BRICK
from .test_sparql_kind import DictCache, case, soda_spec  # noqa: F401 (fixture)

EX = {"execution_accuracy": Threshold("execution_accuracy", min=1.0)}
GOLD = BRICK + "SELECT ?ahu WHERE { ?ahu a brick:AHU } ORDER BY ?ahu"


def _run(spec: dict[str, Any], pred: str) -> Any:
    c = case(spec, GOLD, pred, thresholds=EX)
    return run_case(c, Evaluator(cache=DictCache()))


def test_sparql_row_order_and_extra_variable(soda_spec: dict[str, Any]) -> None:  # noqa: F811
    order = _run(soda_spec, BRICK + "SELECT ?ahu WHERE { ?ahu a brick:AHU } ORDER BY DESC(?ahu)")
    assert order.status == "failed" and order.metrics["execution_accuracy"] == 0.0
    assert order.details["near_miss"] == ["row_order"]
    assert order.diff[-1] == "near miss: would pass with ignore row order"
    extra = _run(soda_spec, BRICK + "SELECT ?ahu ?t WHERE { ?ahu a brick:AHU . ?ahu a ?t } "
                                    "ORDER BY ?ahu")
    assert extra.status == "failed"
    assert extra.details["near_miss"] == ["column_subset"]
