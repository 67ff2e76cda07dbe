"""Per-model baselines (issue 59 item 2): a run with several models kept one pooled comparison,
so model "medium" losing 2 of its 42 cases (-4.8 points) showed as -0.008 among six models and
passed a max-drop of 0.02. The baseline keeps each model's records, and the deltas, the
max-drop, McNemar and the critical cases are judged per model; one model may be compared with
another model's baseline records (a candidate against production)."""

from __future__ import annotations

import json

import pytest

from pytest_queryeval.baseline.compare import compare
from pytest_queryeval.baseline.retarget import parse_baseline_models, retarget
from pytest_queryeval.baseline.store import compact_baseline, expand_baseline
from tests.models.conftest import RIGHT, WRONG, two_model_suite
from tests.support import run_report

MODELS = ("tiny", "small", "medium", "large", "xl", "xxl")


def _report(lost: dict[str, int]) -> dict[str, object]:
    """Six models, 42 cases each, every case passed except the first ``lost[model]``."""
    cases = []
    for model in MODELS:
        for i in range(42):
            ok = i >= lost.get(model, 0)
            cases.append({"id": f"c{i}[{model}]", "model": model, "kind": "sql",
                          "outcome": "passed" if ok else "failed",
                          "status": "passed" if ok else "failed",
                          "metrics": {"execution_accuracy": 1.0 if ok else 0.0}})
    return {"version": 1, "run": {}, "cases": cases}


def test_one_model_losing_two_of_42_fails_a_max_drop_the_pooled_figure_hides():
    baseline, current = _report({}), _report({"medium": 2})
    cmp = compare(current, baseline, {"*": 0.02})
    overall = next(d for d in cmp.deltas if d.scope == "overall" and d.metric == "pass_rate")
    assert overall.delta == pytest.approx(-2 / 252)  # -0.008: within the max-drop
    assert not overall.failed
    medium = next(d for d in cmp.deltas if d.scope == "model" and d.group == "medium"
                  and d.metric == "pass_rate")
    assert medium.delta == pytest.approx(-2 / 42)  # -4.8 points
    assert medium.failed and medium.n == 42
    assert not cmp.passed
    assert "pass_rate -0.048 > max drop 0.02 (model medium)" in cmp.summary()
    # every model's pass rate is a row of the reports, failed or not
    assert [(d.group, d.failed) for d in cmp.extra_rows() if d.metric == "pass_rate"] == [
        (m, m == "medium") for m in sorted(MODELS)]


def test_mcnemar_is_per_model():
    """Seven of medium's 42 cases flip pass -> fail: significant for medium alone (p = 1/64),
    while the pooled test would see the same seven flips among 252 cases, and a flip the
    other way in another model cancels nothing of medium's."""
    baseline = _report({"small": 0})
    current = _report({"medium": 7})
    for case in current["cases"]:  # small fixes nothing, but xl lost one too
        if case["id"] == "c0[xl]":
            case["outcome"] = case["status"] = "failed"
    cmp = compare(current, baseline, significance=0.05)
    medium = next(d for d in cmp.deltas if (d.scope, d.group, d.metric)
                  == ("model", "medium", "pass_rate"))
    assert medium.p_value == pytest.approx(2 / 2 ** 7) and medium.significant and medium.failed
    xl = next(d for d in cmp.deltas if (d.scope, d.group, d.metric) == ("model", "xl",
                                                                          "pass_rate"))
    assert xl.p_value == 1.0 and not xl.failed


def test_a_single_model_run_has_no_model_rows():
    one = {"version": 1, "run": {}, "cases": [
        {"id": "a", "kind": "sql", "outcome": "passed", "status": "passed", "metrics": {}}]}
    cmp = compare(one, one, {"*": 0.0})
    assert [d for d in cmp.deltas if d.scope == "model"] == []


def test_the_compact_baseline_keeps_each_models_records():
    compact = compact_baseline(_report({"medium": 2}))
    rows = compact["cases"]
    assert rows[0]["model"] == "tiny" and rows[-1]["model"] == "xxl"
    back = expand_baseline(json.loads(json.dumps(compact)))
    assert {c["model"] for c in back["cases"]} == set(MODELS)


def test_a_candidate_against_productions_baseline():
    baseline = _report({"large": 3})  # production: "large" failed 3 cases
    mapping = parse_baseline_models(["medium=large"])
    assert mapping == {"medium": "large"}
    moved = retarget(baseline, mapping, set(MODELS))
    medium = [c for c in moved["cases"] if c.get("model") == "medium"]
    assert len(medium) == 42 and sum(c["outcome"] == "failed" for c in medium) == 3
    cmp = compare(_report({"medium": 1}), moved, {"*": 0.0})
    row = next(d for d in cmp.deltas if (d.scope, d.group, d.metric)
               == ("model", "medium", "pass_rate"))
    assert row.delta == pytest.approx(2 / 42)  # the candidate beats production's baseline
    with pytest.raises(ValueError, match="no record of model 'huge'"):
        retarget(baseline, {"": "huge"}, set(MODELS))
    with pytest.raises(ValueError, match="CURRENT_MODEL=BASELINE_MODEL"):
        parse_baseline_models(["=large"])


def test_a_run_gates_each_model_against_its_own_baseline_records(pytester):
    """End to end: two models' baseline written, then model-b loses q5 (1 of its 6 cases,
    1 of the 12 pooled). A max-drop of 0.1 passes the pooled -0.083 and fails model-b's
    -0.167; the terminal, Markdown and the JSON report name model-b's row."""
    two_model_suite(pytester.path)
    result, _ = run_report(pytester, "--queryeval-baseline=base.json",
                           "--queryeval-update-baseline", "-p", "no:cacheprovider")
    base = json.loads((pytester.path / "base.json").read_text())
    assert {c.get("model") for c in base["cases"]} == {"model-a", "model-b", None}
    b = {**RIGHT, **dict.fromkeys(("q1", "q2", "q3", "q4", "q5"), WRONG)}
    (pytester.path / "b.jsonl").write_text("".join(
        json.dumps({"id": i, "predicted": q}) + "\n" for i, q in b.items()))
    result, report = run_report(pytester, "--queryeval-baseline=base.json",
                                "--queryeval-max-drop=0.1", "--queryeval-markdown=r.md",
                                "-p", "no:cacheprovider")
    assert result.ret == 1
    rows = {(d["scope"], d["group"]): d for d in report["baseline"]["deltas"]
            if d["metric"] == "pass_rate"}
    assert rows[("overall", "")]["failed"] is False
    assert rows[("model", "model-b")]["delta"] == pytest.approx(-1 / 6)
    assert rows[("model", "model-b")]["failed"] is True
    assert rows[("model", "model-a")]["failed"] is False
    result.stdout.fnmatch_lines(["*pass_rate (model model-b)*FAIL*"])
    assert "pass\\_rate (model model-b)" in (pytester.path / "r.md").read_text()
    # model-b against model-a's records: model-a's 5 of 6 against model-b's 1 of 6
    result, report = run_report(pytester, "--queryeval-baseline=base.json",
                                "--queryeval-baseline-model=model-b=model-a",
                                "-p", "no:cacheprovider")
    rows = {(d["scope"], d["group"]): d for d in report["baseline"]["deltas"]
            if d["metric"] == "pass_rate"}
    assert rows[("model", "model-b")]["baseline"] == pytest.approx(5 / 6)
    assert rows[("model", "model-b")]["current"] == pytest.approx(1 / 6)
