"""The judge's agreement figures equal scikit-learn's to the last digit (issue 26 item 6)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import warnings
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_queryeval.judge.agreement import agreement, cohen_kappa, flip_rate

sklearn_metrics = pytest.importorskip("sklearn.metrics")

labels = st.lists(st.tuples(st.booleans(), st.booleans()), min_size=1, max_size=300)


@settings(max_examples=500, deadline=None)
@given(labels)
def test_kappa_precision_recall_equal_scikit_learn(pairs: list[tuple[bool, bool]]) -> None:
    expert = [e for e, _ in pairs]
    judge = [j for _, j in pairs]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reference = sklearn_metrics.cohen_kappa_score(expert, judge)
        precision = sklearn_metrics.precision_score(expert, judge, zero_division=0.0)
        recall = sklearn_metrics.recall_score(expert, judge, zero_division=0.0)
    ours = agreement(expert, judge)
    assert (math.isnan(ours.kappa) and math.isnan(reference)) or ours.kappa == reference
    assert (ours.precision, ours.recall) == (precision, recall)
    assert ours.tp + ours.fp + ours.fn + ours.tn == len(pairs)


def test_the_published_figures_of_execution_match() -> None:
    """ROSE-VEC's BIRD confusion counts for execution match (tp 121, fp 3, fn 95, tn 103, from
    its committed output/rose-vec/rose-vec-bird/decisive/EX/eval_results.json): kappa 0.436, as
    the paper reports; the same counts through scikit-learn give the same value."""
    expert = [True] * 121 + [False] * 3 + [True] * 95 + [False] * 103
    judge = [True] * 121 + [True] * 3 + [False] * 95 + [False] * 103
    assert cohen_kappa(expert, judge) == sklearn_metrics.cohen_kappa_score(expert, judge)
    assert round(cohen_kappa(expert, judge), 3) == 0.436


def test_flip_rate_counts_items_asked_more_than_once() -> None:
    assert flip_rate([[True, True], [True, False, True], [False], [False, False, False]]) == 1 / 3
    assert flip_rate([[True]]) == 0.0


ROSE = os.environ.get("QUERYEVAL_ROSE_REPO")


@pytest.mark.skipif(not ROSE, reason="extra cross-check: set QUERYEVAL_ROSE_REPO to a checkout "
                                     "of CedricPei/ROSE (no licence, so not in the repository)")
@pytest.mark.parametrize("part", ["rose-vec-bird", "rose-vec-spider"])
@pytest.mark.parametrize("method", ["o3/ROSE", "decisive/EX"])
def test_rose_vec_recorded_verdicts(part: str, method: str) -> None:
    text = subprocess.run(["git", "-C", str(ROSE), "show",
                           f"HEAD:output/rose-vec/{part}/{method}/eval_results.json"],
                          capture_output=True, text=True, check=True).stdout
    items = json.loads(text)
    expert = [x["label"] in (True, "true") for x in items]
    judge = [x["score"] == 1.0 for x in items]
    assert agreement(expert, judge).kappa == sklearn_metrics.cohen_kappa_score(expert, judge)
    assert Path(str(ROSE)).is_dir()
