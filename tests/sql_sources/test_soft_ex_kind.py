"""``soft_ex`` through the SQL kind on real databases, against mini_dev's SQLite reference.

tests/data/livesqlbench/oracle_chinook.json holds, per gold/pred pair, what mini_dev's
``live_sql_bench_sqlite`` ``test_case_default`` (run unmodified, real sqlite3 execution on
Chinook) scored; the kind must give the same 1/0 on every pair.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_queryeval.engine import Evaluator
from pytest_queryeval.kinds.sql import SqlKind
from pytest_queryeval.model import Threshold
from pytest_queryeval.results import ResultTable

from .conftest import make_case

KIND = SqlKind()
SOFT_EX = {"soft_ex": Threshold("soft_ex", min=1.0)}


@pytest.fixture
def spec(chinook_sqlite: Path) -> dict[str, Any]:
    return {"type": "sqlite", "path": str(chinook_sqlite)}


def _pairs(shared_data: Path) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    folder = shared_data / "livesqlbench"
    pairs = json.loads((folder / "chinook_pairs.json").read_text(encoding="utf-8"))
    oracle = json.loads((folder / "oracle_chinook.json").read_text(encoding="utf-8"))
    assert [p["id"] for p in pairs] == [o["id"] for o in oracle]
    return list(zip(pairs, oracle, strict=True))


def _case(pair: dict[str, Any], spec: dict[str, Any]) -> Any:
    if pair["conditions"] is None:  # no conditions: a threshold on soft_ex asks for it
        return make_case(pair["gold"], spec=spec, id=pair["id"], thresholds=dict(SOFT_EX))
    return make_case(pair["gold"], spec=spec, id=pair["id"],
                     options={"conditions": pair["conditions"]})


def test_chinook_pairs_agree_with_the_reference(shared_data: Path, spec: dict[str, Any],
                                                session: Evaluator) -> None:
    pairs = _pairs(shared_data)
    assert len(pairs) == 41
    assert 10 < sum(o["soft_ex"] for _, o in pairs) < 41  # both outcomes are exercised
    got = {}
    for pair, _ in pairs:
        got[pair["id"]] = KIND.evaluate(_case(pair, spec), pair["pred"], session).metrics["soft_ex"]
    assert got == {p["id"]: float(o["soft_ex"]) for p, o in pairs}


def test_reasons_for_a_zero(spec: dict[str, Any], session: Evaluator) -> None:
    rewritten_gold_fails = make_case("SELECT Name FROM Genre WHERE Name <> '--'\nORDER BY 1",
                                     spec=spec, options={"conditions": {"order": True}})
    s = KIND.evaluate(rewritten_gold_fails, "SELECT Name FROM Genre ORDER BY 1", session)
    assert s.reason is None  # the gold as written is fine: only soft_ex is 0
    assert s.metrics["execution_accuracy"] == 1.0
    assert s.metrics["soft_ex"] == 0.0
    assert s.details["soft_ex"]["gold_sql"] == "SELECT Name FROM Genre WHERE Name <> '\nORDER BY 1"
    assert s.details["soft_ex"]["reason"].startswith("the rewritten gold: ")
    assert any(line.startswith("soft_ex: 0: the rewritten gold") for line in s.diff)

    empty = make_case("SELECT Name FROM Genre WHERE 0", spec=spec, options={"conditions": {}})
    s = KIND.evaluate(empty, "SELECT Name FROM Genre WHERE 0", session)
    assert s.metrics["execution_accuracy"] == 1.0  # TSSE: two empty tables are equal
    assert s.metrics["soft_ex"] == 0.0  # LiveSQLBench: an empty gold never passes
    assert s.details["soft_ex"]["reason"] == "empty gold and predicted results"


def test_rewritten_texts_are_what_runs(spec: dict[str, Any], session: Evaluator) -> None:
    case = make_case("SELECT DISTINCT BillingCountry FROM Invoice", spec=spec,
                     options={"conditions": {"order": False}})
    s = KIND.evaluate(case, "SELECT ROUND(COUNT(*), 0) FROM Invoice", session)
    assert s.metrics["soft_ex"] == 0.0
    assert s.details["soft_ex"]["gold_sql"] == "SELECT BillingCountry FROM Invoice"
    assert s.details["soft_ex"]["predicted_sql"] == "SELECT COUNT(*) FROM Invoice"
    assert s.details["soft_ex"]["on"] == "rewritten texts"
    assert s.details["soft_ex"]["reference"].startswith("bird-bench/livesqlbench@59d7bd0")


def test_opt_in(spec: dict[str, Any], session: Evaluator) -> None:
    s = KIND.evaluate(make_case("SELECT 1", spec=spec), "SELECT 1", session)
    assert "soft_ex" not in s.metrics
    assert KIND.is_metric("soft_ex")
    failing = make_case("SELECT 1", spec=spec, options={"conditions": {"order": True}})
    s = KIND.evaluate(failing, "SELECT nope FROM nowhere", session)
    assert s.reason is not None
    assert s.metrics["soft_ex"] == 0.0  # planned, so present at 0 on a failure


def test_recorded_results_are_compared_as_recorded(session: Evaluator) -> None:
    gold = ResultTable(["x"], [(2.675,), (1,)])
    pred = ResultTable(["y"], [(1.0,), (2.67,)])
    case = make_case("SELECT DISTINCT x FROM t", gold_result=gold, predicted_result=pred,
                     options={"conditions": {"order": False}})
    s = KIND.evaluate(case, None, session)
    assert s.metrics["soft_ex"] == 1.0  # round(2.675, 2) == 2.67; set equality; 1 == 1.0
    assert s.details["soft_ex"]["on"] == "recorded results (no SQL rewrite)"
    ordered = make_case("SELECT x FROM t", gold_result=gold, predicted_result=pred,
                        options={"conditions": {"order": True}})
    assert KIND.evaluate(ordered, None, session).metrics["soft_ex"] == 0.0


@pytest.mark.parametrize(("conditions", "where", "message"), [
    ("yes", "conditions", "must be a mapping"),
    ({"order": "true"}, "conditions.order", "must be true or false"),
    ({"ordre": True}, "conditions.ordre", "did you mean 'order'"),
    ({"decimal": 2.5}, "conditions.decimal", "must be an integer"),
    ({"distinct": 1}, "conditions.distinct", "must be true or false"),
])
def test_conditions_are_validated(spec: dict[str, Any], conditions: Any, where: str,
                                  message: str) -> None:
    problems = list(KIND.validate(make_case("SELECT 1", spec=spec,
                                            options={"conditions": conditions})))
    assert len(problems) == 1
    assert problems[0][0] == where
    assert message in problems[0][1]


def test_livesqlbench_conditions_are_accepted(spec: dict[str, Any]) -> None:
    case = make_case("SELECT 1", spec=spec,
                     options={"conditions": {"decimal": -1, "distinct": False, "order": True}})
    assert list(KIND.validate(case)) == []


@pytest.mark.postgres
def test_postgres_decimals_and_timestamps(postgres_url: str, session: Evaluator) -> None:
    """numeric -> Decimal quantized HALF_UP, timestamp -> its date, as psycopg2 gives them."""
    pg = {"type": "sqlalchemy", "url": postgres_url}
    case = make_case("SELECT invoice_date, total FROM invoice WHERE invoice_id = 1", spec=pg,
                     options={"conditions": {"order": True}})
    s = KIND.evaluate(case, "SELECT CAST('2021-01-01' AS date) + 0, 1.98 + 0.004", session)
    assert s.metrics["execution_accuracy"] == 0.0
    assert s.metrics["soft_ex"] == 1.0  # 2021-01-01 00:00 == 2021-01-01; 1.984 -> 1.98
    s = KIND.evaluate(case, "SELECT CAST('2021-01-01' AS date) + 0, 1.975 + 0.01", session)
    assert s.metrics["soft_ex"] == 0.0  # 1.985 -> 1.99 (HALF_UP), not 1.98
