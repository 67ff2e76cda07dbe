"""VES / R-VES against the "ves" section of result_metric_oracle.json, plus numpy agreement."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_queryeval.metrics.efficiency import (
    clean_abnormal,
    compute_ves,
    efficiency_metrics,
    mean_time_ratio,
    r_ves_bucket,
    r_ves_reward,
    ves_score,
)


@pytest.fixture(scope="module")
def oracle(shared_data: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(
        (shared_data / "bird_denodo" / "result_metric_oracle.json").read_text()
    )["ves"]
    return data


def test_clean_abnormal_oracle(oracle: dict[str, Any]) -> None:
    assert set(oracle) == {
        "clean_abnormal([1,1,1])",
        "clean_abnormal([1,2,3])",
        "clean_abnormal(10x1.0 + [100])",
        "clean_abnormal(9x1.0 + [100])",
        "compute_ves(rewards=[0,0.25,0.5,0.75,1,1.25])",
        "sqrt(reward)*100 per bucket",
    }
    assert clean_abnormal([1, 1, 1]) == oracle["clean_abnormal([1,1,1])"]
    assert clean_abnormal([1, 2, 3]) == oracle["clean_abnormal([1,2,3])"]
    assert clean_abnormal([1.0] * 10 + [100]) == oracle["clean_abnormal(10x1.0 + [100])"]
    # z = 3 exactly: the strict bound and numpy's rounding remove the outlier.
    assert clean_abnormal([1.0] * 9 + [100]) == oracle["clean_abnormal(9x1.0 + [100])"]


def test_compute_ves_oracle(oracle: dict[str, Any]) -> None:
    rewards = [0, 0.25, 0.5, 0.75, 1, 1.25]
    assert compute_ves(rewards) == oracle["compute_ves(rewards=[0,0.25,0.5,0.75,1,1.25])"]
    for key, value in oracle["sqrt(reward)*100 per bucket"].items():
        assert compute_ves([float(key)]) == value


def test_sigma_zero_removes_everything_and_scores_zero() -> None:
    assert mean_time_ratio([0.2, 0.2, 0.2], [0.1, 0.1, 0.1]) == 0.0
    assert r_ves_reward([0.2, 0.2, 0.2], [0.1, 0.1, 0.1], True) == 0.0
    assert ves_score([0.2, 0.2, 0.2], [0.1, 0.1, 0.1], True) == 0.0
    m = efficiency_metrics([0.2] * 3, [0.1] * 3, True)
    assert m["ves"] == m["r_ves"] == m["r_ves_reward"] == m["ves_time_ratio"] == 0.0


def test_edge_cases_score_zero() -> None:
    assert r_ves_reward([0.1, 0.2], [0.0, 0.1], True) == 0.0  # zero predicted time
    assert r_ves_reward([], [], True) == 0.0  # no successful iteration
    assert r_ves_reward([0.2, 0.3], [0.1, 0.1], False) == 0.0  # results differ
    with pytest.raises(ValueError):
        mean_time_ratio([0.1], [0.1, 0.2])


@pytest.mark.parametrize(
    ("tau", "reward"),
    [(0, 0), (0.1, 0.25), (0.25, 0.5), (0.49, 0.5), (0.5, 0.75), (1, 1), (1.99, 1), (2, 1.25), (50, 1.25)],
)
def test_buckets(tau: float, reward: float) -> None:
    assert r_ves_bucket(tau) == reward


def test_metrics_capped_raw_kept() -> None:
    # ratios 4.0 and 4.5 (std > 0): tau = 4.25, VES raw sqrt(4.25) > 1, reward 1.25.
    m = efficiency_metrics([0.4, 0.45], [0.1, 0.1], True)
    assert m["ves_time_ratio"] == pytest.approx(4.25)
    assert m["ves_raw"] == pytest.approx(math.sqrt(4.25))
    assert m["ves"] == 1.0
    assert m["r_ves_reward"] == 1.25
    assert m["r_ves_raw"] == pytest.approx(math.sqrt(1.25))
    assert m["r_ves"] == 1.0
    slow = efficiency_metrics([0.1, 0.1], [0.3, 0.35], True)
    assert slow["r_ves_reward"] == 0.5
    assert slow["r_ves"] == pytest.approx(math.sqrt(0.5))
    assert 0.0 < slow["ves"] < 1.0


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.floats(0.01, 100, allow_nan=False),
            st.sampled_from([1.0, 1.0, 1.0, 100.0, 0.1]),
        ),
        min_size=1,
        max_size=300,
    )
)
def test_clean_abnormal_rounds_like_numpy(xs: list[float]) -> None:
    np = pytest.importorskip("numpy")
    arr = np.asarray(xs)
    mean, std = np.mean(arr, axis=0), np.std(arr, axis=0)
    expected = [float(x) for x in arr if x < mean + 3 * std and x > mean - 3 * std]
    assert clean_abnormal(xs) == expected
