"""Cases written in Python in a run of several models (issue 49 item 1): a test using the
``queryeval`` fixture fans out per model as a case file's case does, with the same ids,
markers, records and gates. One run holds a YAML case and its Python twin (the two-model
suite of the conftest, predictions for the twin's id appended to each model's file)."""

from __future__ import annotations

import json
import sys

import pytest

from tests.models.conftest import MODEL_A, MODEL_B, RIGHT, two_model_suite
from tests.support import dump, read_report, run_report

TEST_PY = f'''
def test_twin(queryeval):
    queryeval.check(kind="sql", id="py6", question="question q6", datasource="db",
                    gold={RIGHT["q6"]!r})


def test_inline(queryeval):
    queryeval.check(kind="sql", id="py-inline", question="count", datasource="db",
                    gold={RIGHT["q1"]!r}, predicted={RIGHT["q1"]!r})
'''

TEST_SOURCES = f'''
def test_sources(queryeval):
    queryeval.check(kind="sql", id="py6", question="question q6", datasource=["db", "db2"],
                    gold={RIGHT["q6"]!r})
'''

#: What says where a case is, or digests the record's text (which holds its id): the rest of
#: the two records must match.
_WHERE = {"id", "nodeid", "file", "path", "line", "identity", "digest"}


def _twin_suite(pytester: pytest.Pytester) -> pytest.Pytester:
    two_model_suite(pytester.path)
    for name, answers in (("a.jsonl", MODEL_A), ("b.jsonl", MODEL_B)):
        with (pytester.path / name).open("a", encoding="utf-8") as out:
            out.write(json.dumps({"id": "py6", "predicted": answers["q6"],
                                  "latency": 0.5 if name == "a.jsonl" else 1.5}) + "\n")
    pytester.makepyfile(test_py_cases=TEST_PY)
    return pytester


def _comparable(record: dict[str, object]) -> dict[str, object]:
    metrics = {k: v for k, v in dict(record["metrics"]).items()  # type: ignore[call-overload]
               if k == "prediction_seconds" or not k.endswith("_seconds")}
    return {**{k: v for k, v in record.items() if k not in _WHERE}, "metrics": metrics}


def test_a_python_case_fans_out_per_model_as_its_yaml_twin(pytester: pytest.Pytester) -> None:
    suite = _twin_suite(pytester)
    (suite.path / "queryeval.yaml").write_text(dump({
        "datasources": {"db": {"type": "sqlite", "path": "data.sqlite"}},
        "predictions": {"model-a": {"source": "file", "path": "a.jsonl"},
                        "model-b": {"source": "file", "path": "b.jsonl"}},
        "gates": {"ex_b": {"metric": "execution_accuracy", "mean": 0.3, "model": "model-b"}}}),
        encoding="utf-8")
    result, report = run_report(suite, "-p", "no:cacheprovider")
    assert "no prediction for case" not in result.stdout.str()
    assert {i: report.by_id[i]["outcome"] for i in report.by_id if i.startswith("py")} == {
        "py6[model-a]": "failed", "py6[model-b]": "passed", "py-inline": "passed"}
    for model in ("model-a", "model-b"):
        yaml_case, py_case = report.by_id[f"q6[{model}]"], report.by_id[f"py6[{model}]"]
        assert py_case["nodeid"] == f"test_py_cases.py::test_twin[{model}]"
        assert py_case["model"] == model
        assert _comparable(py_case) == _comparable(yaml_case)
    # an inline prediction is asked of no model: scored once, without a model
    assert "model" not in report.by_id["py-inline"]
    result.assert_outcomes(passed=10, failed=6, skipped=1)
    # the models table and a gate by model count the Python case as one more case
    models = report["aggregates"]["models"]
    assert [(m["count"], m["passed"]) for m in models.values()] == [(7, 5), (7, 3)]
    assert [(g["name"], g["cases"], round(g["value"], 4)) for g in report["gates"]] == [
        ("ex_b[model=model-b]", 7, round(3 / 7, 4))]


def test_a_marker_per_model_selects_the_python_case_too(pytester: pytest.Pytester) -> None:
    suite = _twin_suite(pytester)
    _, report = run_report(suite, "-m", "model_b", "--strict-markers", "-p", "no:cacheprovider")
    assert sorted(report.by_id) == sorted([f"{q}[model-b]" for q in RIGHT] + ["py6[model-b]"])


def test_the_command_line_models_fan_the_python_case_out(pytester: pytest.Pytester) -> None:
    suite = _twin_suite(pytester)
    (suite.path / "queryeval.yaml").write_text(dump({
        "datasources": {"db": {"type": "sqlite", "path": "data.sqlite"}}}), encoding="utf-8")
    _, report = run_report(suite, "--queryeval-predictions=x=a.jsonl",
                           "--queryeval-predictions=y=b.jsonl", "-k", "twin")
    assert report.outcomes == {"py6[x]": "failed", "py6[y]": "passed"}


@pytest.mark.parametrize("sources", [False, True], ids=["one-source", "two-sources"])
def test_three_shards_merged_give_the_serial_run_of_python_cases(
        pytester: pytest.Pytester, sources: bool) -> None:
    """A Python case with its own prediction is scored by one model's item and skipped by the
    others: the merge of the shards counts it as present, not missing (issue 49 item 1); so
    are the records of a Python case on two datasources."""
    from tests.e2e.support import assert_same

    suite = _twin_suite(pytester)
    if sources:
        suite.makepyfile(test_py_sources=TEST_SOURCES)
        config = (suite.path / "queryeval.yaml").read_text(encoding="utf-8").replace(
            '"db": {', '"db2": {"type": "sqlite", "path": "data.sqlite"}, "db": {')
        (suite.path / "queryeval.yaml").write_text(config, encoding="utf-8")
    serial_result, serial = run_report(suite, "-p", "no:cacheprovider", name="serial.json")
    for index in (1, 2, 3):
        suite.runpytest("-p", "no:cacheprovider", f"--queryeval-shard={index}/3",
                        f"--queryeval-json=shard-{index}.json")
    merge = suite.run(sys.executable, "-m", "pytest_queryeval.conclude.cli", "merge",
                      "shard-1.json", "shard-2.json", "shard-3.json", "-o", "merged.json")
    assert "incomplete" not in merge.stdout.str() + merge.stderr.str()
    merged = read_report(suite.path / "merged.json")
    assert "py-inline" in merged.by_id
    assert merge.ret == serial_result.ret == 1
    assert merged["run"]["outcome"] == serial["run"]["outcome"]
    assert_same(merged, serial, "3 shards merged")




def test_a_python_case_on_two_datasources_fans_out_as_its_yaml_twin(
        pytester: pytest.Pytester) -> None:
    """``datasource=[a, b]`` in ``check`` is the YAML case's fan-out: a record per source and
    model (``<id>[<source>][<model>]``), each equal to the YAML twin's, in one test item."""
    suite = _twin_suite(pytester)
    (suite.path / "test_py_cases.py").write_text(TEST_SOURCES, encoding="utf-8")
    config = (suite.path / "queryeval.yaml").read_text(encoding="utf-8").replace(
        '"db": {', '"db2": {"type": "sqlite", "path": "data.sqlite"}, "db": {')
    (suite.path / "queryeval.yaml").write_text(config, encoding="utf-8")
    suite.makefile(".yaml", test_twin=dump({
        "kind": "sql", "datasource": ["db", "db2"],
        "cases": [{"id": "tw", "question": "question q6", "gold": RIGHT["q6"]}]}))
    for name, answers in (("a.jsonl", MODEL_A), ("b.jsonl", MODEL_B)):
        with (suite.path / name).open("a", encoding="utf-8") as out:
            out.write(json.dumps({"id": "tw", "predicted": answers["q6"],
                                  "latency": 0.5 if name == "a.jsonl" else 1.5}) + "\n")
    _, report = run_report(suite, "-p", "no:cacheprovider")
    ids = [(s, m) for s in ("db", "db2") for m in ("model-a", "model-b")]
    assert {i: c["outcome"] for i, c in report.by_id.items() if i.startswith("py")} == {
        f"py6[{s}][{m}]": "failed" if m == "model-a" else "passed" for s, m in ids}
    for source, model in ids:
        yaml_case, py_case = report.by_id[f"tw[{source}][{model}]"], \
            report.by_id[f"py6[{source}][{model}]"]
        assert py_case["nodeid"] == f"test_py_cases.py::test_sources[{model}][{source}]"
        assert (py_case["datasource"], py_case["model"]) == (source, model)
        assert _comparable(py_case) == _comparable(yaml_case)
    models = report["aggregates"]["models"]
    assert [m["count"] for m in models.values()] == [10, 10]
    # under xdist the other sources' records travel on the worker's report as well
    _, workers = run_report(suite, "-n", "2", "-p", "xdist", "-p", "no:cacheprovider",
                            name="xdist.json")
    assert {i: _comparable(c) for i, c in workers.by_id.items()} == {
        i: _comparable(c) for i, c in report.by_id.items()}
