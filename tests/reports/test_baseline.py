"""Baseline comparison against hand-computed expectations on the fixture reports.

Paired cases: the 19 ids in both runs (``employee-chain`` is new, ``albums-count`` removed).
Outcome flips: genre-top passed→failed, customer-countries passed→error (unscored now, so it
counts 0), filter-region failed→passed. meter-points is skipped and date-range xfailed.
"""

from __future__ import annotations

import json
import math
import os

import pytest

from pytest_queryeval.errors import ConfigError
from pytest_queryeval.report.baseline import (
    compare,
    format_comparison,
    load_baseline,
    parse_max_drop,
    write_baseline,
)


def _delta(cmp, metric, scope="overall", group=""):
    (d,) = [d for d in cmp.deltas if (d.metric, d.scope, d.group) == (metric, scope, group)]
    return d


def test_case_sets_and_flips(current, baseline):
    cmp = compare(current, baseline, None)
    assert cmp.comparable
    assert cmp.reason is None
    assert cmp.common == 19
    assert cmp.new_cases == ["employee-chain"]
    assert cmp.removed_cases == ["albums-count"]
    assert [(c.id, c.before, c.after) for c in cmp.regressions] == [
        ("genre-top", "passed", "failed"), ("customer-countries", "passed", "error")]
    assert [(c.id, c.before, c.after) for c in cmp.fixes] == [
        ("filter-region", "failed", "passed")]
    assert cmp.other_changes == []
    # The removed case failed in the baseline: it is not a fix; the new case is not compared.
    assert "albums-count" not in {c.id for c in cmp.fixes}
    assert cmp.passed  # no max-drop: report only


def test_overall_deltas_over_paired_cases(current, baseline):
    cmp = compare(current, baseline, None)
    # 17 rated pairs (19 minus skipped meter-points and xfailed date-range): 11 vs 12 passed.
    pr = _delta(cmp, "pass_rate")
    assert pr.n == 17
    assert math.isclose(pr.baseline, 12 / 17)
    assert math.isclose(pr.current, 11 / 17)
    # execution_accuracy on 6 sql + 4 sparql pairs; the errored case counts 0 now.
    ex = _delta(cmp, "execution_accuracy")
    assert ex.n == 10
    assert math.isclose(ex.baseline, 0.8)
    assert math.isclose(ex.current, 0.6)
    assert math.isclose(ex.delta, -0.2)
    # soft_f1: 5.5/6 -> 4.3/6; json_similarity improved by (0.91 - 0.65) / 4
    assert math.isclose(_delta(cmp, "soft_f1").delta, (4.3 - 5.5) / 6)
    assert math.isclose(_delta(cmp, "json_similarity").delta, 0.26 / 4)
    assert math.isclose(_delta(cmp, "macro_f1").delta, 0.24 / 4)
    # timing is not zero-filled for the unscored error: 17 pairs, 1.0 s faster in total.
    ps = _delta(cmp, "prediction_seconds")
    assert ps.n == 17
    assert math.isclose(ps.delta, -1.0 / 17)


def test_group_deltas(current, baseline):
    cmp = compare(current, baseline, None)
    sql_ex = _delta(cmp, "execution_accuracy", "kind", "sql")
    assert (sql_ex.n, sql_ex.baseline, sql_ex.current) == (6, 5 / 6, 3 / 6)
    medium = _delta(cmp, "execution_accuracy", "difficulty", "medium")
    # genre-top 1->0, invoices-total 1->1, vav-feeds 1->1
    assert medium.n == 3
    assert math.isclose(medium.delta, -1 / 3)
    agg = _delta(cmp, "pass_rate", "tag", "aggregation")
    assert (agg.n, agg.baseline, agg.current) == (3, 1.0, 1 / 3)
    assert _delta(cmp, "macro_f1", "difficulty", "unknown").delta == 0.0


def test_global_max_drop_fails_overall_only(current, baseline):
    cmp = compare(current, baseline, 0.1)
    failed = {(d.metric, d.scope) for d in cmp.failures}
    # -0.2, -0.2 and -1/6 exceed 0.1; pass_rate drops 1/17 < 0.1; timing is never gated.
    assert failed == {("execution_accuracy", "overall"), ("soft_f1", "overall"),
                      ("exact_set_match", "overall")}
    assert not cmp.passed
    assert cmp.summary() == (
        "baseline FAILED: execution_accuracy -0.200 > max drop 0.1 (overall), "
        "soft_f1 -0.200 > max drop 0.1 (overall), exact_set_match -0.167 > max drop 0.1 (overall)")
    strict = compare(current, baseline, 0.0, gate_scopes=("overall", "kind"))
    assert strict.summary().endswith(f" and {len(strict.failures) - 3} more")


def test_per_metric_max_drop(current, baseline):
    limits = parse_max_drop(["execution_accuracy=0.25,soft_f1=0.05"])
    cmp = compare(current, baseline, limits)
    assert [d.metric for d in cmp.failures] == ["soft_f1"]
    assert _delta(cmp, "execution_accuracy").limit == 0.25
    assert _delta(cmp, "json_similarity").limit is None


def test_metric_entry_overrides_global(current, baseline):
    cmp = compare(current, baseline, {"*": 0.0, "execution_accuracy": 0.3, "soft_f1": 0.3,
                                      "exact_set_match": 0.3, "pass_rate": 0.1})
    assert cmp.passed, cmp.failures


def test_gate_scopes(current, baseline):
    cmp = compare(current, baseline, {"pass_rate": 0.5}, gate_scopes=("overall", "tag"))
    # aggregation tag: 1.0 -> 1/3 is a 2/3 drop
    assert [(d.scope, d.group) for d in cmp.failures] == [("tag", "aggregation")]


def test_timing_is_lower_is_better(current, baseline):
    # Reversed: "current" is the slower baseline run.
    slower = compare(baseline, current, {"prediction_seconds": 0.01})
    assert [d.metric for d in slower.failures] == ["prediction_seconds"]
    faster = compare(current, baseline, {"prediction_seconds": 0.0})
    assert faster.passed
    assert compare(baseline, current, 1.0).passed  # global never gates timing


def test_identical_runs_have_no_deltas(current):
    cmp = compare(current, current, 0.0)
    assert cmp.passed
    assert not cmp.regressions
    assert not cmp.fixes
    assert all(d.delta == 0.0 for d in cmp.deltas)


def test_different_settings_are_refused(current, baseline):
    current["run"]["settings"]["json"]["alpha"] = 0.7
    current["run"]["settings"]["sql"]["compare"] = {"float_tolerance": 0.01}
    cmp = compare(current, baseline, 0.02)
    assert not cmp.comparable
    assert not cmp.passed
    assert "json.alpha: 0.5 (baseline) vs 0.7 (current)" in cmp.reason
    assert "sql.compare: <unset> (baseline)" in cmp.reason
    assert cmp.deltas == []
    assert cmp.regressions == []
    lines = format_comparison(cmp)
    assert "not comparable" in lines[0]
    assert lines[-1].startswith("baseline comparison: not comparable:")


def test_kind_only_in_one_run_is_comparable(current, baseline):
    del baseline["run"]["settings"]["sdmx"]
    current["run"]["settings"]["sparql"] = {"engine": "rdflib"}
    del baseline["run"]["settings"]["sparql"]
    assert compare(current, baseline).comparable


def test_version_mismatch_is_refused(current, baseline):
    baseline["version"] = 2
    cmp = compare(current, baseline)
    assert not cmp.comparable
    assert "version" in cmp.reason


def test_unknown_max_drop_metric_warns(current, baseline):
    cmp = compare(current, baseline, {"bird_ex": 0.1})
    assert cmp.warnings == ["max-drop for 'bird_ex': no paired case has this metric"]


@pytest.mark.parametrize(("values", "expected"), [
    (["0.02"], {"*": 0.02}),
    (["execution_accuracy=0.0,soft_f1=0.05"], {"execution_accuracy": 0.0, "soft_f1": 0.05}),
    (["0.02", "precision[COUNTRY]=0.1", " macro_f1 = 0 "],
     {"*": 0.02, "precision[COUNTRY]": 0.1, "macro_f1": 0.0}),
    ([], {}),
])
def test_parse_max_drop(values, expected):
    assert parse_max_drop(values) == expected


@pytest.mark.parametrize(("values", "message"), [
    (["abc"], "'abc' is not a number"),
    (["soft_f1=x"], "'x' is not a number"),
    (["=0.1"], "missing metric name"),
    (["2%"], "absolute drop"),
    (["-0.1"], ">= 0"),
    (["nan"], "finite"),
    (["0.1", "0.2"], "global max-drop is given more than once"),
    (["soft_f1=0.1,soft_f1=0.2"], "metric 'soft_f1' is given more than once"),
    (["soft_f1=0.1,"], "empty entry"),
])
def test_parse_max_drop_errors(values, message):
    with pytest.raises(ValueError, match="--queryeval-max-drop=") as info:
        parse_max_drop(values)
    assert message in str(info.value)


def test_format_comparison(current, baseline):
    lines = format_comparison(compare(current, baseline, {"execution_accuracy": 0.1}))
    text = "\n".join(lines)
    assert lines[0] == "baseline: 19 cases in both runs, 1 new, 1 removed (not compared)"
    (ex,) = [ln for ln in lines if ln.strip().startswith("execution_accuracy ")]
    assert "0.800" in ex
    assert "0.600" in ex
    assert "▼  -0.200" in ex
    assert ex.endswith("FAIL")
    (js,) = [ln for ln in lines if ln.strip().startswith("json_similarity ")]
    assert "▲" in js
    assert "FAIL" not in js
    (same,) = [ln for ln in lines if ln.strip().startswith("row_match_f1 ")]
    assert "=   0.000" in same
    # the unchanged per-dimension metrics collapse into one line; macro ones stay
    assert "  (6 per-dimension/component metrics unchanged)" in lines
    assert not any(ln.strip().startswith("precision[INDICATOR]") for ln in lines)
    assert "pass → fail: 2" in text
    assert "genre-top [sql/medium] passed → failed" in text
    assert "(execution_accuracy)" in text  # why genre-top failed
    assert "fail → pass: 1" in text
    assert "filter-region" in text
    assert lines[-1].startswith("baseline comparison: FAILED: execution_accuracy -0.200")


def test_format_comparison_ok(current):
    lines = format_comparison(compare(current, current, 0.0))
    assert lines[-1] == "baseline comparison: OK: no drop beyond the max-drop"
    assert not any("FAIL" in ln for ln in lines)


def test_to_dict_is_json(current, baseline):
    data = compare(current, baseline, 0.1).to_dict()
    again = json.loads(json.dumps(data))
    assert again["passed"] is False
    assert again["comparable"] is True
    assert again["regressions"][0]["id"] == "genre-top"


def test_write_and_load_baseline(tmp_path, current):
    target = tmp_path / "sub" / "baseline.json"
    write_baseline(current, target)
    assert load_baseline(target) == current
    assert os.listdir(target.parent) == ["baseline.json"]  # no temp file left behind
    current["cases"] = current["cases"][:1]
    write_baseline(current, target)  # replaces
    assert len(load_baseline(target)["cases"]) == 1


def test_write_baseline_failure_leaves_old_file(tmp_path, current):
    target = tmp_path / "baseline.json"
    write_baseline(current, target)
    with pytest.raises(ValueError, match="Out of range float"):
        write_baseline({"cases": [], "x": float("nan")}, target)
    assert load_baseline(target) == current
    assert os.listdir(tmp_path) == ["baseline.json"]


def test_load_baseline_errors(tmp_path):
    with pytest.raises(ConfigError, match="baseline file not found"):
        load_baseline(tmp_path / "nope.json")
    bad = tmp_path / "bad.json"
    bad.write_text('{"cases": [\n  1,\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"bad\.json:3: baseline is not valid JSON"):
        load_baseline(bad)
    bad.write_text("[]", encoding="utf-8")
    with pytest.raises(ConfigError, match="not a queryeval JSON report"):
        load_baseline(bad)


def test_no_common_cases_warns(current, baseline):
    for c in baseline["cases"]:
        c["id"] = "old-" + c["id"]
    cmp = compare(current, baseline, 0.0)
    assert cmp.common == 0
    assert cmp.deltas == []
    assert "no case is in both runs: nothing to compare" in cmp.warnings
    assert cmp.passed  # nothing dropped; the warning is printed


def _with_where_f1(report, drop_on):
    """Spider's where_f1 on the SQL cases that have a Spider-parsable gold (a few only)."""
    sql = [c for c in report["cases"] if c["kind"] == "sql"][:3]
    for case in sql:
        case["metrics"]["where_f1"] = 0.0 if case["id"] in drop_on else 1.0
    return {c["id"] for c in sql}


def test_spider_components_need_a_named_max_drop_and_the_spider_table(current, baseline):
    """Issue 19: the 30 component metrics flooded the table and failed a global max-drop."""
    ids = _with_where_f1(baseline, drop_on=set())
    _with_where_f1(current, drop_on=ids)
    assert _delta(compare(current, baseline), "where_f1").delta == pytest.approx(-1.0)
    cmp = compare(current, baseline, 0.5)
    assert "where_f1" not in {d.metric for d in cmp.failures}
    assert _delta(cmp, "where_f1").limit is None
    lines = format_comparison(cmp)
    assert not any(line.split()[:1] == ["where_f1"] for line in lines)
    assert "  (1 Spider component metric: --queryeval-spider-table)" in lines
    assert any(line.split()[:1] == ["where_f1"]
               for line in format_comparison(cmp, spider_components=True))
    named = compare(current, baseline, {"*": 0.5, "where_f1": 0.1})
    assert ("where_f1", "overall") in {(d.metric, d.scope) for d in named.failures}
    assert any(line.split()[:1] == ["where_f1"] for line in format_comparison(named))
