"""kind: json through the real plugin (YAML case file -> pytest items -> JSON report)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.support import read_report

pytestmark = pytest.mark.slow

CASES = """
kind: json
cases:
  - id: seed-top
    gold: {query: {"<python/Juling>": {"<property/HDOP>": {value: [Bound]}}}}
    predicted: '{"query": {"<python/Juling>": {"<property/PDOP>": {"value": ["Not Bound"]}}}}'
    thresholds: {json_similarity: 0.95}
  - id: seed-paths
    keys: paths
    gold: {query: {"<python/Juling>": {"<property/HDOP>": {value: [Bound]}}}}
    predicted: '{"query": {"<python/Juling>": {"<property/PDOP>": {"value": ["Not Bound"]}}}}'
  - id: invalid
    gold: {a: 1}
    predicted: '{"a": 1'
  - id: bad-alpha
    alpha: 3
    gold: {a: 1}
    predicted: {a: 1}
"""


def test_yaml_suite(pytester: pytest.Pytester, monkeypatch: Any, seed: Any) -> None:
    monkeypatch.setenv("QUERYEVAL_EMBEDDINGS_CACHE", str(pytester.path / "embeddings"))
    pytester.makefile(".yaml", test_forest=CASES)
    pytester.makefile(".yaml", queryeval="{}")  # a suite: its test_*.yaml are case files
    result = pytester.runpytest_inprocess("-p", "no:randomly", "--queryeval-json=report.json")
    report = read_report(pytester.path / "report.json")
    cases = {c["id"]: c for c in report["cases"]}

    top = cases["seed-top"]["metrics"]
    assert top["structural_similarity"] == 1.0
    assert top["semantic_similarity"] == pytest.approx(0.8606, abs=5e-5)
    assert top["json_similarity"] == pytest.approx(0.9303, abs=5e-5)
    assert cases["seed-top"]["outcome"] == "failed"  # 0.9303 < 0.95

    paths = cases["seed-paths"]["metrics"]
    assert paths == {
        "structural_similarity": 0.0,
        "semantic_similarity": 0.0,
        "json_similarity": 0.0,
    }
    assert cases["invalid"]["metrics"]["json_similarity"] == 0.0
    assert "invalid JSON" in json.dumps(cases["invalid"])
    assert "alpha" in (cases["bad-alpha"]["error"] or "")
    result.stdout.fnmatch_lines(["*lowest-similarity shared keys*", "*.query: 0.8606*"])
