"""Every case and every field of tests/data/bird_denodo/result_metric_oracle.json.

The oracle was produced by calling the upstream functions (mini-dev ``calculate_f1_score`` /
``calculate_ex``, Denodo ``f1_score`` / ``percent_overlapp`` on DataFrames); values are rounded
to 6 decimals there, hence the 5e-7 tolerance.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_queryeval.metrics.table import (
    TABLE_METRIC_NAMES,
    positional_f1,
    soft_f1,
    table_metrics,
)
from pytest_queryeval.results import ResultTable

TOL = 5e-7
FIELDS = {
    "minidev_soft_f1",
    "minidev_ex",
    "denodo_bird_standard_f1",
    "denodo_percent_match(cell precision x100)",
    "denodo_set_precision(Subsetting %)",
    "denodo_percent_overlap(x100)",
    "denodo_f1_on_raw_tuples",
}


def _load(shared_data: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(
        (shared_data / "bird_denodo" / "result_metric_oracle.json").read_text()
    )
    return data


def _cases() -> list[str]:
    from tests.conftest import DATA

    path = DATA / "bird_denodo" / "result_metric_oracle.json"
    return sorted(json.loads(path.read_text())["result_metrics"])


def _table(rows: list[list[Any]]) -> ResultTable:
    width = len(rows[0]) if rows else 0
    return ResultTable([f"c{i}" for i in range(width)], [tuple(r) for r in rows])


def test_oracle_case_list_is_complete(shared_data: Path) -> None:
    cases = _load(shared_data)["result_metrics"]
    assert len(cases) == 17
    for name, case in cases.items():
        assert FIELDS | {"gold", "pred"} == set(case), name


@pytest.mark.parametrize("name", _cases())
def test_every_field(shared_data: Path, name: str) -> None:
    case = _load(shared_data)["result_metrics"][name]
    gold, pred = _table(case["gold"]), _table(case["pred"])
    m = table_metrics(gold, pred, order_matters=False)
    assert set(m) == set(TABLE_METRIC_NAMES)
    assert all(0.0 <= v <= 1.0 for v in m.values())

    assert m["soft_f1"] == pytest.approx(case["minidev_soft_f1"], abs=TOL)
    assert m["bird_ex"] == case["minidev_ex"]
    assert m["cell_f1"] == pytest.approx(case["denodo_bird_standard_f1"], abs=TOL)
    assert m["percent_subset"] * 100 == pytest.approx(
        case["denodo_set_precision(Subsetting %)"], abs=TOL
    )
    assert m["percent_overlap"] * 100 == pytest.approx(case["denodo_percent_overlap(x100)"], abs=TOL)
    assert m["same_row_count"] == float(len(case["gold"]) == len(case["pred"]))

    # Denodo "Percent Match" (cell precision) and its F1 when handed raw tuples (no str cast).
    from pytest_queryeval.metrics.table import compare_tables

    details = compare_tables(gold, pred, order_matters=False).details()
    assert details["cell_precision"] * 100 == pytest.approx(
        case["denodo_percent_match(cell precision x100)"], abs=TOL
    )
    raw = positional_f1(gold.rows, pred.rows)
    assert raw.f1 == pytest.approx(case["denodo_f1_on_raw_tuples"], abs=TOL)
    # mini-dev's only difference from the raw Denodo core is its both-empty shortcut.
    expected_md = 1.0 if not gold.rows and not pred.rows else raw.f1
    assert soft_f1(gold.rows, pred.rows) == expected_md


def test_readme_quirks_are_reproduced_not_fixed(shared_data: Path) -> None:
    """The READMEs claim 0.8 and 0.667; the code (and we) give 0.666667 and 0.615385."""
    cases = _load(shared_data)["result_metrics"]
    m = table_metrics(
        _table(cases["readme_minidev"]["gold"]), _table(cases["readme_minidev"]["pred"]),
        order_matters=False,
    )
    assert m["soft_f1"] == pytest.approx(2 / 3)
    m = table_metrics(
        _table(cases["readme_denodo"]["gold"]), _table(cases["readme_denodo"]["pred"]),
        order_matters=False,
    )
    assert m["cell_f1"] == pytest.approx(0.615385, abs=TOL)
