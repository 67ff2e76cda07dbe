"""Baselines fit in git (issue 24, item 7): a refresh writes one line per case with what the
comparison and the gating modes read, under 400 bytes a case; old baselines (whole JSON
reports) still load; the comparison is the same with either."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from tests.support import read_report

from pytest_queryeval.errors import ConfigError
from pytest_queryeval.report.baseline import (
    compact_baseline,
    compare,
    load_baseline,
    write_baseline,
)

HERE = Path(__file__).resolve().parent


def _selection(*codes: str) -> dict[str, Any]:
    return {"indicator_selection": [{"dataset_id": "IMF.RES:WEO", "dimensions": [
        {"dimension_name": "INDICATOR", "values": [{"id": c, "name": c} for c in codes]}]}]}


SQL = [  # (id, gold, v1 prediction, v2 prediction)
    ("count-old", "SELECT count(*) FROM patient WHERE age > 65",
     "SELECT count(*) FROM patient WHERE age > 65", "SELECT count(*) FROM patient WHERE age >= 65"),
    ("names", "SELECT name FROM patient ORDER BY age DESC",
     "SELECT name FROM patient", "SELECT name FROM patient ORDER BY age DESC"),
    ("oldest", "SELECT max(age) FROM patient", "SELECT max(age) FROM patient",
     "SELECT max(age) FROM patient"),
    ("ward-a", "SELECT name FROM patient WHERE ward = 'A'",
     "SELECT name FROM patient WHERE ward = 'A'", "SELECT name FROM patient WHERE ward = 'B'"),
    ("young", "SELECT count(*) FROM patient WHERE age < 40",
     "SELECT count(*) FROM patient WHERE age < 30", "SELECT count(*) FROM patient WHERE age < 30"),
]
SDMX = [("gdp", ("NGDP",), ("NGDP",), ("NGDP", "NGDPPC")),
        ("gdp-pc", ("NGDPPC",), ("NGDP",), ("NGDPPC",))]


@pytest.fixture
def clinic(pytester: pytest.Pytester) -> pytest.Pytester:
    """A suite of two kinds and two model versions: v1 is refreshed as the baseline, v2
    regresses three cases and fixes two."""
    with sqlite3.connect(pytester.path / "clinic.sqlite") as conn:
        conn.execute("CREATE TABLE patient (name TEXT, age INTEGER, ward TEXT)")
        conn.executemany("INSERT INTO patient VALUES (?, ?, ?)", [
            ("ann", 30, "A"), ("bob", 70, "B"), ("cy", 81, "A"), ("dee", 65, "B"),
            ("eve", 25, "A")])
    conn.close()
    pytester.makeini("[pytest]\nqueryeval_files = test_*.yaml\n")
    pytester.makefile(".yaml", queryeval=json.dumps({
        "datasources": {"clinic": {"type": "sqlite", "path": "clinic.sqlite"}},
        "predictions": {"source": "file", "path": "v1.jsonl"},
        "thresholds": {"execution_accuracy": 1.0, "macro_f1": 1.0}}))
    pytester.makefile(".yaml", test_sql=json.dumps({
        "kind": "sql", "datasource": "clinic",
        "cases": [{"id": i, "gold": gold, **({"severity": "critical"} if i == "oldest" else {})}
                  for i, gold, _, _ in SQL]}))
    pytester.makefile(".yaml", test_sdmx=json.dumps({"kind": "sdmx", "cases": [
        {"id": i, "conversation": [{"role": "user", "content": i, "target": _selection(*gold)}]}
        for i, gold, _, _ in SDMX]}))
    for version, column in (("v1", 2), ("v2", 3)):
        lines = [json.dumps({"id": row[0], "predicted": row[column], "latency": 0.5})
                 for row in SQL]
        lines += [json.dumps({"id": row[0], "predicted": _selection(*row[column])})
                  for row in SDMX]
        (pytester.path / f"{version}.jsonl").write_text("\n".join(lines) + "\n")
    return pytester


def _json(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = read_report(path)
    return data


def test_a_refresh_writes_one_short_line_per_case(clinic: pytest.Pytester) -> None:
    result = clinic.runpytest("--queryeval-update-baseline", "--queryeval-json=full.json")
    result.stdout.fnmatch_lines(["*baseline updated:*queryeval-baseline.json*"])
    path = clinic.path / "queryeval-baseline.json"
    text = path.read_text(encoding="utf-8")
    full = _json(clinic.path / "full.json")
    # one line per case, in the report's order: a refresh reads as a diff
    lines = [ln for ln in text.splitlines() if ln.startswith('    {"id":')]
    assert max(len(ln.encode()) for ln in lines) < 400
    # and 11 lines more: braces, version, format, run, one line per kind's metric names
    assert len(text.splitlines()) == len(lines) + 11
    assert [json.loads(ln.rstrip(","))["id"] for ln in lines] == [c["id"] for c in full["cases"]]
    data = _json(path)
    assert data["format"] == "queryeval-baseline/1"
    assert data["run"] == full["run"]
    by_id = {c["id"]: c for c in data["cases"]}
    assert by_id["young"]["outcome"] == by_id["young"]["status"] == "failed"
    assert by_id["oldest"]["severity"] == "critical"
    assert "severity" not in by_id["young"]  # null fields are left out
    sql_names = data["metric_names"]["sql"]
    assert by_id["ward-a"]["metrics"][sql_names.index("execution_accuracy")] == 1
    full_ward = next(c for c in full["cases"] if c["id"] == "ward-a")
    assert len(by_id["ward-a"]["signature"]) == 16
    assert by_id["ward-a"]["signature"] == full_ward["signature"]
    loaded = {c["id"]: c for c in load_baseline(path)["cases"]}
    assert loaded["ward-a"]["metrics"] == full_ward["metrics"]


def test_the_comparison_is_the_same_with_the_compact_baseline(clinic: pytest.Pytester) -> None:
    """Refresh on v1, then compare v2 with the baseline the refresh wrote and with the whole
    report of the same v1 run: regressions, fixes, deltas and significance tests agree."""
    clinic.runpytest("--queryeval-update-baseline", "--queryeval-json=full.json")
    result = clinic.runpytest("--queryeval-predictions=v2.jsonl",
                              "--queryeval-baseline=queryeval-baseline.json",
                              "--queryeval-significance=0.05", "--queryeval-json=cur.json")
    current = _json(clinic.path / "cur.json")
    shown = current.pop("baseline")
    compact = load_baseline(clinic.path / "queryeval-baseline.json")
    whole = load_baseline(clinic.path / "full.json")
    assert "aggregates" in whole and "aggregates" not in compact
    for kwargs in ({"significance": 0.05}, {"max_drop": 0.0},
                   {"max_drop": {"execution_accuracy": 0.1}, "gate_scopes": ("overall", "kind")}):
        with_compact = compare(current, compact, **kwargs)
        assert with_compact.to_dict() == compare(current, whole, **kwargs).to_dict()
    cmp = compare(current, compact, significance=0.05)
    assert json.loads(json.dumps(cmp.to_dict())) == shown  # what the run itself reported
    assert sorted(c.id for c in cmp.regressions) == ["count-old", "gdp", "ward-a"]
    assert sorted(c.id for c in cmp.fixes) == ["gdp-pc", "names"]
    assert cmp.deltas and cmp.bootstrap
    result.stdout.fnmatch_lines(["pass → fail: 3*"])


def test_verdict_baseline_mode_reads_the_compact_baseline(clinic: pytest.Pytester) -> None:
    clinic.runpytest("--queryeval-update-baseline")
    result = clinic.runpytest("--queryeval-predictions=v2.jsonl", "--queryeval-gating=baseline",
                              "--queryeval-baseline=queryeval-baseline.json",
                              "--queryeval-json=cur.json")
    cases = {c["id"]: c for c in _json(clinic.path / "cur.json")["cases"]}
    assert {i: c["baseline_status"] for i, c in cases.items()} == {
        "count-old": "passed", "names": "failed", "oldest": "passed", "ward-a": "passed",
        "young": "failed", "gdp": "passed", "gdp-pc": "failed"}
    assert cases["young"]["outcome"] == "xfailed"  # failing in the baseline too: known
    assert cases["ward-a"]["outcome"] == "failed"  # a regression
    assert result.ret == 1


def test_an_old_baseline_still_loads_and_compares_the_same(tmp_path: Path) -> None:
    """tests/reports/baseline.json is a whole report, as every baseline was before."""
    old = load_baseline(HERE / "baseline.json")
    current = _json(HERE / "current.json")
    assert old == _json(HERE / "baseline.json")
    target = tmp_path / "compact.json"
    write_baseline(compact_baseline(old), target)
    assert len(target.read_bytes()) < len((HERE / "baseline.json").read_bytes()) / 4
    new = load_baseline(target)
    for kwargs in ({"significance": 0.05}, {"max_drop": 0.0}):
        assert compare(current, new, **kwargs).to_dict() == \
            compare(current, old, **kwargs).to_dict()


def test_repeated_ids_keep_their_node_ids(tmp_path: Path) -> None:
    report = {"version": 1, "run": {}, "cases": [
        {"id": "a", "nodeid": "x/test_a.yaml::a", "kind": "sql", "outcome": "passed",
         "status": "passed", "metrics": {"execution_accuracy": 1.0}},
        {"id": "a", "nodeid": "y/test_a.yaml::a", "kind": "sql", "outcome": "failed",
         "status": "failed", "metrics": {"execution_accuracy": 0.0}}]}
    write_baseline(compact_baseline(report), tmp_path / "b.json")
    cases = load_baseline(tmp_path / "b.json")["cases"]
    assert [(c["nodeid"], c["outcome"], c["metrics"]) for c in cases] == [
        ("x/test_a.yaml::a", "passed", {"execution_accuracy": 1.0}),
        ("y/test_a.yaml::a", "failed", {"execution_accuracy": 0.0})]
    one = {**report, "cases": report["cases"][:1]}
    assert "nodeid" not in compact_baseline(one)["cases"][0]


def test_a_malformed_compact_baseline_is_located(tmp_path: Path) -> None:
    bad = tmp_path / "b.json"
    bad.write_text(json.dumps({"version": 1, "format": "queryeval-baseline/1", "run": {},
                               "metric_names": {"sql": ["execution_accuracy"]},
                               "cases": [{"id": "a", "kind": "sql", "metrics": [1]},
                                         {"id": "b", "kind": "sql", "metrics": [1, 0]}]}))
    with pytest.raises(ConfigError, match=r"b\.json: baseline is not a valid "
                       r"queryeval-baseline/1 file: cases\[1\]\.metrics: expected a list of at "
                       r"most 1 values, in the order of metric_names\.sql"):
        load_baseline(bad)
