"""``kind: cypher`` end to end (pytester runs of real suites on a real ladybug graph): scoring,
located refusals and errors, gates, the baseline, every report format, ``queryeval view``,
shards + ``queryeval merge``, ``-n 2`` and the gold audit."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from pytest_queryeval.conclude.cli import main as queryeval
from tests.support import read_report, run_report, write_suite

pytest.importorskip("ladybug")

GRAPH = Path(__file__).resolve().parents[2] / "example_suite" / "data" / "movies.cypher"
MATRIX = "MATCH (p:Person)-[:ACTED_IN]->(:Movie {title: 'The Matrix'}) RETURN p.name"
BY_RATING = "MATCH (m:Movie) RETURN m.title ORDER BY m.rating DESC"

CASES = [
    {"id": "right", "gold": MATRIX,
     "predicted": "MATCH (m:Movie {title: 'The Matrix'})<-[:ACTED_IN]-(a) RETURN a.name AS n"},
    {"id": "fenced", "gold": BY_RATING, "predicted": f"```cypher\n{BY_RATING}\n```"},
    {"id": "wrong-order", "gold": BY_RATING,
     "predicted": "MATCH (m:Movie) RETURN m.title ORDER BY m.rating"},
    {"id": "wrong-rows", "gold": MATRIX,
     "predicted": "MATCH (p:Person)-[:ACTED_IN]->(:Movie) RETURN DISTINCT p.name"},
    {"id": "writes", "gold": MATRIX,
     "predicted": "MATCH (m:Movie)\nSET m.rating = 10.0 RETURN m.title"},
    {"id": "broken", "gold": MATRIX, "predicted": "MATCH (p:Person) RETURN p.nope"},
]


def _suite(root: Path, cases: list[dict[str, object]] = CASES,
           config: dict[str, object] | None = None) -> Path:
    shutil.copyfile(GRAPH, root / "movies.cypher")
    cfg = {"datasources": {"movies": {"type": "ladybug", "path": "movies.cypher"}}}
    cfg.update(config or {})
    return write_suite(root, cfg, {"test_movies.yaml": {"kind": "cypher", "datasource": "movies",
                                                         "cases": cases}})


def test_cases_are_scored_and_refusals_located(pytester):
    _suite(pytester.path)
    result, report = run_report(pytester)
    assert report.outcomes == {"right": "passed", "fenced": "passed", "wrong-order": "failed",
                               "wrong-rows": "failed", "writes": "failed", "broken": "failed"}
    by_id = report.by_id
    right = by_id["right"]["metrics"]
    assert right["execution_accuracy"] == 1.0 and right["cypherbench_ex"] == 1.0
    assert right["cypherbench_executable"] == 1.0
    # CypherBench orders wherever ORDER BY is written in the gold
    assert by_id["wrong-order"]["metrics"]["cypherbench_ex"] == 0.0
    assert by_id["wrong-rows"]["metrics"]["execution_accuracy"] == 0.0
    writes = by_id["writes"]
    assert writes["reason"].startswith("refused: SET at line 2, column 1: the graph is read-only")
    assert writes["metrics"]["cypherbench_executable"] == 0.0
    assert by_id["broken"]["reason"].startswith("query failed: Binder exception")
    assert by_id["fenced"]["details"]["fence_stripped"] == "```cypher"
    assert result.ret == 1


def test_a_gold_that_writes_is_a_located_error_and_the_rest_runs(pytester):
    _suite(pytester.path, [CASES[0], {"id": "bad-gold", "gold": "MERGE (p:Person {name: 'X'}) "
                                      "RETURN p.name", "predicted": MATRIX}])
    _, report = run_report(pytester)
    assert report.outcomes == {"right": "passed", "bad-gold": "error"}
    error = report.by_id["bad-gold"]["error"]
    assert "test_movies.yaml:" in error and "gold: MERGE at line 1, column 1" in error


def test_an_unknown_key_of_the_source_is_named(pytester):
    _suite(pytester.path, [CASES[0]],
           {"datasources": {"movies": {"type": "ladybug", "path": "movies.cypher",
                                       "time_out": 3}}})
    _, report = run_report(pytester)
    assert "datasources.movies.time_out" in report.by_id["right"]["error"]
    assert "did you mean 'timeout'" in report.by_id["right"]["error"]


def test_gates_and_thresholds_on_cypherbench_metrics(pytester):
    _suite(pytester.path, CASES[:4], {"gates": {"cypherbench_ex": {"mean": 0.75}},
                                      "thresholds": {"cypherbench_ex": 1.0}})
    result, report = run_report(pytester, "--queryeval-gating=gates")
    assert report.by_id["wrong-order"]["failed_metrics"] == ["cypherbench_ex"]
    assert result.ret == 1
    assert "gate FAIL: mean cypherbench_ex = 0.5000" in result.stdout.str()
    _suite(pytester.path, CASES[:2], {"gates": {"cypherbench_ex": {"mean": 0.75}}})
    result, report = run_report(pytester, "--queryeval-gating=gates")
    assert result.ret == 0, result.stdout.str()[-2000:]


def test_the_baseline_flags_a_case_that_regressed(pytester):
    _suite(pytester.path, CASES[:2])
    result = pytester.runpytest("--queryeval-update-baseline")
    assert result.ret == 0
    baseline = read_report(pytester.path / "queryeval-baseline.json")
    assert {c["id"] for c in baseline["cases"]} == {"right", "fenced"}
    regressed = [CASES[0], {**CASES[1], "predicted": "MATCH (m:Movie) RETURN m.title"}]
    _suite(pytester.path, regressed)
    result, report = run_report(pytester, "--queryeval-gating=baseline",
                                "--queryeval-baseline=queryeval-baseline.json")
    assert report.outcomes == {"right": "passed", "fenced": "failed"}
    assert report.by_id["fenced"]["standing"] == "regression"
    assert result.ret == 1


def test_every_report_format_and_the_viewer(pytester, tmp_path):
    _suite(pytester.path, CASES[:4])
    _, report = run_report(pytester, "--junitxml=j.xml", "--queryeval-markdown=r.md",
                                "--queryeval-html=r.html")
    junit = (pytester.path / "j.xml").read_text(encoding="utf-8")
    assert "wrong-order" in junit and "cypherbench_ex" in junit
    markdown = (pytester.path / "r.md").read_text(encoding="utf-8")
    assert "cypher" in markdown and "wrong-rows" in markdown
    html = (pytester.path / "r.html").read_text(encoding="utf-8")
    assert "cypherbench_ex" in html and "wrong-order" in html
    assert report["aggregates"]["by_kind"]["cypher"]["count"] == 4
    page = tmp_path / "view.html"
    assert queryeval(["view", str(pytester.path / "r.json"), "-o", str(page)]) == 0
    text = page.read_text(encoding="utf-8")
    assert "wrong-rows" in text and "MATCH (p:Person)" in text


def test_shards_then_merge_and_xdist_record_what_a_serial_run_does(pytester):
    _suite(pytester.path)
    serial = run_report(pytester, name="serial.json", subprocess=True)[1]
    for i in (1, 2):
        run_report(pytester, f"--queryeval-shard={i}/2", name=f"s{i}.json", subprocess=True)
    merged_run = pytester.run(sys.executable, "-m", "pytest_queryeval.conclude.cli", "merge",
                              "s1.json", "s2.json", "--queryeval-json=merged.json")
    assert merged_run.ret == 1, merged_run.stdout.str()[-2000:]
    merged = read_report(pytester.path / "merged.json")
    xdist = run_report(pytester, "-n", "2", name="x.json", subprocess=True)[1]

    def scores(report: dict[str, object]) -> dict[str, object]:
        return {c["id"]: (c["outcome"], c["reason"], {k: v for k, v in c["metrics"].items()
                                                     if not k.endswith("_seconds")})
                for c in report["cases"]}

    assert scores(merged) == scores(serial) == scores(xdist)
    assert len(serial["cases"]) == len(CASES)


def test_the_gold_audit_runs_its_generic_checks(pytester):
    cases = [CASES[0], {"id": "empty-gold", "predicted": MATRIX,
                        "gold": "MATCH (p:Person {name: 'Nobody'}) RETURN p.name"},
             {"id": "failing-gold", "predicted": MATRIX, "gold": "MATCH (p:Person) RETURN p.x"}]
    _suite(pytester.path, cases)
    result, report = run_report(pytester, "--queryeval-audit-golds")
    codes = {(f["id"], f["code"]) for f in report["audit"]["findings"]}
    assert ("failing-gold", "gold-error") in codes
    assert ("empty-gold", "empty-result") in codes  # the result lints of every query kind
    assert not any(i == "right" for i, _ in codes)
    assert json.dumps(report["audit"]).count("Binder exception") >= 1
    assert result.ret != 0


def test_a_judge_compares_where_execution_disagrees(pytester, openai_standin, monkeypatch):
    """``judge:`` on a cypher case: the prompt calls the language Cypher and shows both
    queries; the judge's verdict decides ``judge_ex``."""
    pytest.importorskip("openai")
    from tests.fixtures.openai_standin import KEY, MODEL

    labelled = "MATCH (p:Person)-[:ACTED_IN]->(:Movie {title: 'The Matrix'}) RETURN p.name, 'actor'"
    openai_standin.containing = {labelled: json.dumps({"category": "equivalent",
                                                       "reason": "a constant label column"})}
    _suite(pytester.path, [{"id": "labelled", "question": "Who acted in The Matrix?",
                            "gold": MATRIX, "predicted": labelled}],
           {"judge": {"model": MODEL, "base_url": openai_standin.base_url,
                      "api_key": "${QE_JUDGE_KEY}", "retries": 0},
            "thresholds": {"execution_accuracy": 0, "judge_ex": 1}})
    monkeypatch.setenv("QE_JUDGE_KEY", KEY)
    result, report = run_report(pytester, "-p", "no:cacheprovider")
    case = report.by_id["labelled"]
    assert case["outcome"] == "passed", result.stdout.str()[-2000:]
    assert case["metrics"]["execution_accuracy"] == 0.0 and case["metrics"]["judge_ex"] == 1.0
    assert case["details"]["judge"]["outcome"] == "rescued"
    prompt = openai_standin.requests[0]["messages"][0]["content"]
    assert "Cypher" in prompt and MATRIX in prompt


def test_cypherbench_values_as_the_reference_reads_them(pytester):
    """Issue 60, end to end: a relationship gold records the reference's TypeError and no
    ``cypherbench_ex`` (main scored it 1.0), a path prediction scores 0 (main: 1.0), equal
    intervals score 1 (main: 0.0), and a ``sum()`` gold scores (main: nothing recorded)."""
    acted = "MATCH (:Person {name: 'Keanu Reeves'})-[r:ACTED_IN]->(:Movie) RETURN r"
    path = "MATCH p = (:Person {name: 'Keanu Reeves'})-[:ACTED_IN]->(:Movie) RETURN p"
    _suite(pytester.path, [
        {"id": "rel", "gold": acted,
         "predicted": "MATCH (:Movie)<-[r:ACTED_IN]-(:Person {name: 'Keanu Reeves'}) RETURN r"},
        {"id": "path", "gold": path,
         "predicted": "MATCH p = (a:Person)-[:ACTED_IN]->(:Movie) WHERE a.name = 'Keanu Reeves' "
                      "RETURN p"},
        {"id": "interval", "gold": "RETURN interval('3 days') AS d",
         "predicted": "RETURN interval('2 days') + interval('1 day') AS d"},
        {"id": "sum", "gold": "MATCH (m:Movie) RETURN sum(m.released) AS s",
         "predicted": "MATCH (m:Movie) WITH sum(m.released) AS s RETURN s"},
    ])
    _, report = run_report(pytester)
    by_id = report.by_id
    assert "cypherbench_ex" not in by_id["rel"]["metrics"]
    assert "TypeError: unhashable type: 'dict'" in by_id["rel"]["details"]["cypherbench"]
    assert by_id["path"]["metrics"]["cypherbench_ex"] == 0.0
    assert by_id["interval"]["metrics"]["cypherbench_ex"] == 1.0
    assert by_id["sum"]["metrics"]["cypherbench_ex"] == 1.0
