"""GERBIL QA metrics against FMeasureCalculator (dice-group/gerbil QuestionAnswering @ 794c41a),
compiled and run on tests/data/gerbil/cases.json (oracle.json, exact doubles), and against the
expected values of GERBIL's own fixture QanaryWebServiceFmeasureTest."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from pytest_queryeval.metrics.gerbil_qa import (
    AGGREGATE_LABELS,
    Counts,
    aggregate,
    counts,
    measures,
    measures_qald,
    question_metrics,
)


def _load(shared_data: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    d = shared_data / "gerbil"
    return (json.loads((d / "cases.json").read_text(encoding="utf-8")),
            json.loads((d / "oracle.json").read_text(encoding="utf-8")))


def _same(ours: float | None, hex_ref: str) -> bool:
    ref = float.fromhex(hex_ref)
    return (ours is None and math.isnan(ref)) or ours == ref


@pytest.mark.parametrize("suite", ["qanary_fixture", "mixed", "all_empty_answers", "all_wrong",
                                   "single_perfect"])
def test_agrees_with_fmeasurecalculator(shared_data: Path, suite: str) -> None:
    cases, oracle = _load(shared_data)
    ref = oracle[suite]
    cs = []
    for q, r in zip(cases[suite], ref["questions"], strict=True):
        c = counts(q["gold"], q["answer"])
        assert c == Counts(r["tp"], r["fp"], r["fn"])
        assert [float.fromhex(x) for x in r["qald"]] == list(measures_qald(c))
        assert [float.fromhex(x) for x in r["plain"]] == list(measures(c))
        cs.append(c)
    agg = aggregate(cs)
    for name, label in AGGREGATE_LABELS.items():
        assert _same(agg[name], ref[label]), (name, agg[name], ref[label])


def test_gerbil_fixture_expected_values(shared_data: Path) -> None:
    # QanaryWebServiceFmeasureTest.java:42 (branch QuestionAnswering @ 794c41a):
    # {micro F1, micro P, micro R, macro F1, macro P, macro R}, given to 4 decimals
    expected = [0.0909, 0.2, 0.0588, 0.3333, 0.3333, 0.3333]
    cases, _ = _load(shared_data)
    agg = aggregate(counts(q["gold"], q["answer"]) for q in cases["qanary_fixture"])
    got = [agg["micro_f1"], agg["micro_precision"], agg["micro_recall"], agg["macro_f1"],
           agg["macro_precision"], agg["macro_recall"]]
    assert [round(x, 4) for x in got] == expected


def test_qald_rule_for_an_empty_answer() -> None:
    assert question_metrics(counts(["a", "b"], [])) == {
        "qald_precision": 1.0, "qald_recall": 0.0, "qald_f1": 0.0}
    assert measures(counts(["a", "b"], [])) == (0.0, 0.0, 0.0)
    assert question_metrics(counts([], [])) == {
        "qald_precision": 1.0, "qald_recall": 1.0, "qald_f1": 1.0}
    assert question_metrics(counts([], ["x"]))["qald_f1"] == 0.0
    # harmonic mean of the macro averages, not the mean of the per-question F1
    agg = aggregate([counts(["a"], ["a", "b"]), counts(["a", "b", "c", "d"], ["a"])])
    p, r = (0.5 + 1.0) / 2, (1.0 + 0.25) / 2
    assert agg["macro_f1_qald"] == 2 * p * r / (p + r)
    assert agg["macro_f1_qald"] != (2 / 3 + 0.4) / 2
