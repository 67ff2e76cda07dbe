"""What a collected case keeps for the whole session (issue 30 item 4: at most twice plain
pytest's memory per case, about 5.4 KB per test here).

Every case lives to the end of the session: its :class:`~pytest_queryeval.model.Case` is
slotted, and an inline recorded result is kept once, as its table (the case mapping keeps its
JSON text for the resume identity, which must not change)."""

from __future__ import annotations

import gc
import hashlib
import json
import tracemalloc
from pathlib import Path

import pytest
import yaml

from pytest_queryeval.model import Threshold
from pytest_queryeval.plugin.resume import identity
from pytest_queryeval.suite.cases import load_cases
from pytest_queryeval.suite.config import SuiteConfig

from ..support import dump


def _sql_cases(n: int) -> list[dict[str, object]]:
    return [{"id": f"c{i:05d}", "question": f"question {i}",
             "gold_result": {"columns": ["n", "name"],
                             "rows": [[i % 100, f"name-{i % 50}"], [3, "x"], [4, "y"]]},
             "predicted_result": {"columns": ["n", "name"],
                                  "rows": [[3, "x"], [i % 100, f"name-{i % 50}"], [4, "y"]]},
             "tags": ["bench"]} for i in range(n)]


def test_a_collected_case_with_recorded_results_keeps_under_3_5_kb(tmp_path: Path) -> None:
    n = 2000
    path = tmp_path / "test_cases.yaml"
    path.write_text(dump({"kind": "sql", "thresholds": {"execution_accuracy": 1.0},
                          "cases": _sql_cases(n)}))
    load_cases(path, path.name, SuiteConfig())  # imports and caches, outside the measure
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        cases = load_cases(path, path.name, SuiteConfig())
        gc.collect()
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert len(cases) == n and all(not c.errors for c in cases)
    assert cases[7].gold_result is not None and cases[7].gold_result.rows[0] == (7, "name-7")
    # 5.9 KB per case before (an instance dict, and each table twice: lists and tuples),
    # 2.8 KB after (quoted YAML strings once per text, too)
    assert kept / n < 3500, f"{kept / n:.0f} bytes per case"  # margin for other Pythons


def _old_identity(raw: dict[str, object], case, predictions: str | None) -> str:
    """resume.identity as it was written before the tables left ``Case.raw``."""
    data = {"id": case.id, "kind": case.kind, "case": raw, "datasource": case.datasource,
            "options": case.options,
            "thresholds": {m: t.to_json() for m, t in sorted(case.thresholds.items())},
            "prediction_source": case.prediction_source, "predictions": predictions,
            "model": case.model_label}
    text = json.dumps(data, sort_keys=True, default=str, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def test_the_resume_identity_is_the_digest_of_the_case_as_written(tmp_path: Path) -> None:
    sparql = {"head": {"vars": ["x", "l"]}, "results": {"bindings": [
        {"x": {"type": "uri", "value": "http://e/é"},
         "l": {"type": "literal", "value": "Zoë \"q\"", "xml:lang": "fr"}}]}}
    cases = [
        {"id": "sql", "question": "Wie viele? ü", "gold": "SELECT 1",
         "gold_result": {"columns": ["a", "b"], "rows": [[1, "ä"], [2.5, None], [True, "\u2028"]]},
         "predicted_result": {"rows": [[1, "ä"]]}, "tags": ["t"], "comments": "zz",
         "thresholds": {"execution_accuracy": 0.5}},
        {"id": "only-gold", "gold_result": {"columns": ["a"], "rows": [[1], [2]]},
         "predicted": "SELECT 1", "arity_from": "gold"},
        {"id": "plain", "gold": "SELECT 2", "predicted": "SELECT 2"},
    ]
    path = tmp_path / "test_ids.yaml"
    path.write_text(dump({"kind": "sql", "cases": cases}))
    sparql_path = tmp_path / "test_sparql.yaml"
    sparql_path.write_text(dump({"kind": "sparql", "cases": [
        {"id": "s", "gold_result": sparql, "predicted_result": sparql, "a_key": {"z": 1, "b": 2}},
    ]}))
    ini = {"execution_accuracy": Threshold("execution_accuracy", 1.0)}
    for file in (path, sparql_path):
        written = yaml.safe_load(file.read_text())["cases"]
        loaded = load_cases(file, file.name, SuiteConfig(), ini_thresholds=ini)
        for raw, case in zip(written, loaded, strict=True):
            assert "gold_result" not in case.raw  # kept once: as its table
            for predictions in (None, "preds.jsonl"):
                assert identity(case, predictions) == _old_identity(raw, case, predictions)


class _Probe:
    """Traced memory when collection ends and when the session finishes (before the reports
    are written): what running the cases left behind, records and pytest's reports."""

    def __init__(self) -> None:
        self.collected = self.finished = 0

    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self) -> None:
        gc.collect()
        self.collected = tracemalloc.get_traced_memory()[0]

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self) -> None:
        gc.collect()
        self.finished = tracemalloc.get_traced_memory()[0]


def _run_phase(pytester, n: int, *args: str) -> float:
    """Bytes per test that running ``n`` tests left traced when the session finishes."""
    probe = _Probe()
    tracemalloc.start()
    try:
        result = pytester.inline_run("-p", "no:cacheprovider", *args, plugins=[probe])
    finally:
        tracemalloc.stop()
    result.assertoutcome(passed=n)
    return (probe.finished - probe.collected) / n


def test_a_case_that_ran_keeps_little_more_than_a_plain_test(suite) -> None:
    """What a case keeps once it ran, beyond what pytest keeps of any test (its reports, and
    here pytester's record of every hook call): its record (a dozen scores, most of them 0
    or 1) and its JUnit properties: 6.7 KB more than a plain test before, when every score and
    property was an object of its own, 5.1 KB after."""
    n = 400
    suite.makefile(".yaml", test_cases=dump({
        "kind": "sql", "thresholds": {"execution_accuracy": 1.0}, "cases": _sql_cases(n)}))
    suite.makepyfile(test_plain=f"""
        import pytest

        @pytest.mark.parametrize("i", range({n}))
        def test_trivial(i):
            assert i >= 0
    """)
    plain = _run_phase(suite, n, "test_plain.py")
    ours = _run_phase(suite, n, "test_cases.yaml")
    assert ours - plain < 5800, f"{ours:.0f} bytes per case, {plain:.0f} per plain test"
