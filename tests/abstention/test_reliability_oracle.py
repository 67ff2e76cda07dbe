"""metrics/reliability.py against the EHRSQL 2024 scoring program's own outputs.

``tests/data/ehrsql/oracle.json`` was produced by ``make_oracle.py`` with the reference
(glee4810/ehrsql-2024 @46597893, ``scoring_utils.py`` imported and ``scoring_v2.py`` run as a
process, both unmodified); see that folder's PROVENANCE.md.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from pytest_queryeval.metrics import reliability as rel


@pytest.fixture(scope="module")
def oracle(shared_data: Path) -> dict[str, object]:
    data = json.loads((shared_data / "ehrsql" / "oracle.json").read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def _entries(oracle: dict[str, object], name: str) -> list[dict[str, object]]:
    entries = oracle[name]
    assert isinstance(entries, list)
    return entries


def test_process_item_equals_reference(oracle: dict[str, object]) -> None:
    for entry in _entries(oracle, "process_item"):
        assert rel.process_item(entry["input"]) == entry["output"], entry["input"]


def test_process_answer_equals_reference_and_crashes_where_it_does(oracle: dict[str, object]) -> None:
    crashes = 0
    for entry in _entries(oracle, "process_answer"):
        if "crash" in entry:
            crashes += 1
            assert entry["crash"] == "TypeError"
            with pytest.raises(rel.ReferenceCrash, match="process_answer raises TypeError"):
                rel.process_answer(entry["input"])
        else:
            assert rel.process_answer(entry["input"]) == entry["output"], entry["input"]
    assert crashes == 9  # "5", "None", "[1, 2]", "1.5", "True", [1, 2], 5, None, [[1], 2]


def test_suites_equal_scoring_v2_run_unmodified(oracle: dict[str, object]) -> None:
    suites = oracle["suites"]
    assert isinstance(suites, dict)
    for name, suite in suites.items():
        pairs = [(real, pred) for real, pred in suite["pairs"]]
        keys = [f"q{i}" for i in range(len(pairs))]
        if "crash" in suite:
            with pytest.raises(rel.ReferenceCrash):
                _process_all(pairs)
            continue
        real = {k: rel.process_answer(r) for k, (r, _) in zip(keys, pairs, strict=True)}
        pred = {k: rel.process_answer(p) for k, (_, p) in zip(keys, pairs, strict=True)}
        scores = rel.reliability_score(real, pred)
        assert scores == suite["scores"], name
        for penalty, value in suite["penalize"].items():
            ours = rel.penalize(scores, int(penalty))
            if isinstance(value, float) and math.isnan(value):
                assert ours is None, name  # NumPy's mean of nothing; None here
            else:
                assert ours == value, (name, penalty)
        ours_rs = rel.reliability_scores(scores)
        for penalty, key in (("0", "accuracy0"), ("5", "accuracy5"), ("10", "accuracy10"), ("N", "accuracyN")):
            expected = suite["scores_json"][key]
            value = ours_rs[penalty]
            if math.isnan(expected):
                assert value is None
            else:
                assert value is not None and value * 100 == expected, (name, key)


def _process_all(pairs: list[tuple[object, object]]) -> None:
    for real, pred in pairs:
        rel.process_answer(real)
        rel.process_answer(pred)


def test_every_branch_is_covered(oracle: dict[str, object]) -> None:
    """The fixture reaches each of the reference's five score branches and each crash."""
    suites = oracle["suites"]
    assert isinstance(suites, dict)
    every = suites["every_branch"]
    assert sorted(set(every["scores"])) == [-1, 0, 1]
    assert {name for name, suite in suites.items() if "crash" in suite} == {
        "crash_label", "crash_prediction", "crash_json_null"}


def test_missing_prediction_is_a_crash_not_a_keyerror() -> None:
    with pytest.raises(rel.ReferenceCrash, match="no prediction for q2"):
        rel.reliability_score({"q1": "null", "q2": "null"}, {"q1": "null"})
