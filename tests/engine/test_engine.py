"""``engine/__init__.py`` on its own: ``run_case`` scores a loaded case with an ``Evaluator`` and
checks its thresholds, without pytest."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_queryeval.engine import Evaluator, run_case
from pytest_queryeval.model import Case
from pytest_queryeval.suite.cases import load_cases
from pytest_queryeval.suite.config import SuiteConfig
from tests.sdmx_cases import GDP, GDP_PLUS, dump, sdmx_case, selection


def _case(tmp_path: Path, entry: dict[str, object]) -> Case:
    path = tmp_path / "test_q.yaml"
    path.write_text(dump({"kind": "sdmx", "cases": [entry]}))
    (case,) = load_cases(path, "test_q.yaml", SuiteConfig())
    assert case.errors == []
    return case


def test_an_exact_prediction_passes_with_full_scores(tmp_path: Path) -> None:
    out = run_case(_case(tmp_path, sdmx_case("gdp", selection(GDP), selection(GDP))),
                   Evaluator())
    assert out.status == "passed"
    assert out.failed == []
    assert out.metrics == {"precision[INDICATOR]": 1.0, "recall[INDICATOR]": 1.0,
                           "f1[INDICATOR]": 1.0, "macro_precision": 1.0, "macro_recall": 1.0,
                           "macro_f1": 1.0}


def test_a_wider_prediction_fails_the_kind_s_default_threshold(tmp_path: Path) -> None:
    out = run_case(_case(tmp_path, sdmx_case("gdp", selection(GDP), selection(GDP_PLUS))),
                   Evaluator())
    assert out.status == "failed"
    assert out.metrics["macro_precision"] == pytest.approx(2 / 3)
    assert (out.metrics["macro_recall"], out.metrics["macro_f1"]) == (1.0, pytest.approx(0.8))
    assert [(t.metric, t.min, value) for t, value in out.failed] == [
        ("macro_f1", 1.0, pytest.approx(0.8))]
