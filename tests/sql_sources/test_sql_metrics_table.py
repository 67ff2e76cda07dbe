"""The SQL kind's metrics are one table (``kinds.sql._SQL_METRICS``): what a case scores,
which thresholds are valid and what a failed case scores at 0 all read it, so a metric added
by one entry is scored, accepted as a threshold and kept (at 0) in failed cases."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from pytest_queryeval import kinds
from pytest_queryeval.engine import Evaluator
from pytest_queryeval.kinds import sql
from pytest_queryeval.metricnames import QUERY_TIMING_METRICS
from pytest_queryeval.metrics.alignment import ALIGNMENT_METRIC_NAMES
from pytest_queryeval.metrics.soft_ex import SOFT_EX_METRIC_NAMES
from pytest_queryeval.metrics.spider import METRICS as STRUCTURE_METRICS
from pytest_queryeval.metrics.spider2 import SPIDER2_METRIC_NAMES
from pytest_queryeval.metrics.table import TABLE_METRIC_NAMES
from pytest_queryeval.results import ResultTable

from .conftest import make_case

KIND = sql.SqlKind()


NAMES = ("row_count_ratio",)


def row_count_ratio(gold: ResultTable, pred: ResultTable) -> Mapping[str, float]:
    """A home-grown metric as docs/metrics-sql.md shows it: a pure function of both tables."""
    most = max(len(gold.rows), len(pred.rows))
    return {"row_count_ratio": min(len(gold.rows), len(pred.rows)) / most if most else 1.0}


@pytest.fixture
def spec(chinook_sqlite: Path) -> dict[str, Any]:
    return {"type": "sqlite", "path": str(chinook_sqlite)}


@pytest.fixture
def with_row_count(monkeypatch: pytest.MonkeyPatch) -> None:
    """The table plus one line, the only change a new metric needs (written as
    docs/metrics-sql.md shows it, with this module in the place of metrics/row_count.py)."""
    entry = sql.SqlMetric(sql._names(__name__, "NAMES"), "tables",
                          sql._on_tables(__name__, "row_count_ratio"))
    monkeypatch.setattr(sql, "_SQL_METRICS", (*sql._SQL_METRICS, entry))


def test_a_metric_is_unknown_before_its_entry() -> None:
    assert not KIND.is_metric("row_count_ratio")
    assert not kinds.is_metric("sql", "row_count_ratio")


@pytest.mark.usefixtures("with_row_count")
def test_one_entry_scores_names_and_plans_the_metric(spec: dict[str, Any],
                                                     session: Evaluator) -> None:
    # scored: 3 gold rows, 2 predicted
    case = make_case("SELECT name FROM genre WHERE genreid <= 3", spec=spec)
    scored = KIND.evaluate(case, "SELECT name FROM genre WHERE genreid <= 2", session)
    assert scored.reason is None
    assert scored.metrics["row_count_ratio"] == pytest.approx(2 / 3)
    assert list(scored.metrics)[-1] == "row_count_ratio"  # after the structure's, as listed
    # a valid threshold name (what cases.py asks when it reads ``thresholds:``)
    assert KIND.is_metric("row_count_ratio")
    assert kinds.is_metric("sql", "row_count_ratio")
    assert "row_count_ratio" in KIND.metric_names()
    # refused before it runs: scored 0, not dropped
    refused = KIND.evaluate(case, "DELETE FROM genre", session)
    assert refused.reason is not None and refused.reason.startswith("refused")
    assert refused.metrics["row_count_ratio"] == 0.0
    # failed when it runs: 0 too
    failed = KIND.evaluate(case, "SELECT nosuchcolumn FROM genre", session)
    assert failed.reason is not None
    assert failed.metrics["row_count_ratio"] == 0.0


def test_a_failed_case_scores_what_a_scored_one_does(spec: dict[str, Any],
                                                     session: Evaluator) -> None:
    """Every opt-in on: the zeros of a refused prediction are the metrics a scored one has
    (timings aside, which a failure records as measured), in the order reports have kept."""
    case = make_case("SELECT name FROM genre WHERE genreid <= 3", spec=spec,
                     options={"efficiency": {"iterations": 1}, "conditions": {"order": False},
                              "ignore_order": True})
    scored = KIND.evaluate(case, "SELECT name FROM genre WHERE genreid <= 3", session)
    refused = KIND.evaluate(case, "DROP TABLE genre", session)
    assert refused.reason is not None
    timings = set(QUERY_TIMING_METRICS)
    assert set(refused.metrics) - timings == set(scored.metrics) - timings
    assert {"ves", "soft_ex", "spider2_ex", "exact_set_match"} <= set(refused.metrics)
    order = [name for name in refused.metrics if name not in timings]
    assert order == [*TABLE_METRIC_NAMES, *ALIGNMENT_METRIC_NAMES, *SPIDER2_METRIC_NAMES,
                     "ves", "r_ves", *SOFT_EX_METRIC_NAMES, *STRUCTURE_METRICS]

def test_every_name_the_kind_scores_is_a_threshold_name(spec: dict[str, Any],
                                                        session: Evaluator) -> None:
    case = make_case("SELECT name FROM genre WHERE genreid <= 3", spec=spec,
                     options={"efficiency": {"iterations": 1}, "conditions": {"order": False},
                              "ignore_order": True, "hallucination": True})
    scored = KIND.evaluate(case, "SELECT name FROM genre WHERE genreid <= 2", session)
    assert "schema_hallucination" in scored.metrics
    assert [name for name in scored.metrics if not KIND.is_metric(name)] == []
