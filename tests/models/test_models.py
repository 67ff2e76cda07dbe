"""Several models in one run (issue 44 item 2): ``predictions:`` as a mapping of model names to
sources, or ``--queryeval-predictions NAME=PATH`` repeated, fans each case out per model; the
reports gain a models table, the cases the models disagree on and each pair's exact McNemar
test; gates may name a model. Two predictions files on a real SQLite file (conftest)."""

from __future__ import annotations

import sys

import pytest

from tests.models.conftest import RIGHT, two_model_suite
from tests.support import dump, read_report, run_report

MODEL_IDS = [f"{q}[{m}]" for q in RIGHT for m in ("model-a", "model-b")]


def _passed(report):
    return {c["id"] for c in report["cases"] if c["outcome"] == "passed"}


def test_each_case_fans_out_per_model_and_the_report_compares_them(models_suite):
    result, report = run_report(models_suite, "--queryeval-markdown=r.md",
                                "--queryeval-html=r.html")
    assert sorted(report.by_id) == sorted([*MODEL_IDS, "inline"])
    assert {i: report.by_id[i].get("model") for i in ("q1[model-a]", "q1[model-b]", "inline")} \
        == {"q1[model-a]": "model-a", "q1[model-b]": "model-b", "inline": None}
    assert "model" not in report.by_id["inline"]  # an inline prediction is asked of no model
    assert _passed(report) == {"q1[model-a]", "q2[model-a]", "q3[model-a]", "q4[model-a]",
                               "q5[model-a]", "q5[model-b]", "q6[model-b]", "inline"}
    assert report["run"]["predictions"] == "model-a=file:a.jsonl, model-b=file:b.jsonl"
    models = report["aggregates"]["models"]
    assert list(models) == ["model-a", "model-b"]
    assert [(m["count"], m["passed"], m["pass_rate"]) for m in models.values()] == \
        [(6, 5, 5 / 6), (6, 2, 2 / 6)]
    assert models["model-a"]["metrics"]["execution_accuracy"]["mean"] == pytest.approx(5 / 6)
    assert models["model-a"]["metrics"]["prediction_seconds"]["mean"] == 0.5
    assert models["model-b"]["metrics"]["prediction_seconds"]["mean"] == 1.5
    cmp = report["aggregates"]["model_comparison"]
    # 4 cases only model-a passes, 1 only model-b: two-sided exact McNemar 2 * (1 + 5) / 32
    assert cmp["pairs"] == [{"a": "model-a", "b": "model-b", "cases": 6, "a_only": 4,
                             "b_only": 1, "p_value": 0.375, "better": "model-a"}]
    assert cmp["disagreement_count"] == 5
    assert [(d["case"], d["outcomes"]["model-a"], d["outcomes"]["model-b"])
            for d in cmp["disagreements"]] == [
        ("q1", "passed", "failed"), ("q2", "passed", "failed"), ("q3", "passed", "failed"),
        ("q4", "passed", "failed"), ("q6", "failed", "passed")]
    result.stdout.re_match_lines([
        r"model\s+cases\s+pass\s+EX.*latency \(s, mean\)$",
        r"model-a\s+6\s+83\.3%\s+0\.833.*0\.500$",
        r"model-b\s+6\s+33\.3%\s+0\.333.*1\.500$",
        r"model-a vs model-b: 6 cases judged by both, 4 passed by model-a only, 1 by model-b "
        r"only; exact McNemar p = 0\.375; model-a passes more$",
        r"models disagree on 5 cases:$", r"  q6 \(model-a failed, model-b passed\)$"])
    markdown = (models_suite.path / "r.md").read_text(encoding="utf-8")
    assert "## Models" in markdown
    assert "| model-a | 6 | 83.3 % | 0.833 |" in markdown
    assert "| q6 | failed | passed |" in markdown
    html = (models_suite.path / "r.html").read_text(encoding="utf-8")
    assert '<section id="models"><h2>Models</h2>' in html
    assert "<tr><td>model-b</td><td>6</td><td>33.3 %</td>" in html
    assert "<tr><td>q6</td><td>failed</td><td>passed</td></tr>" in html


def test_a_marker_per_model_selects_its_cases(models_suite):
    _, report = run_report(models_suite, "-m", "model_a", "--strict-markers")
    assert sorted(report.by_id) == sorted(i for i in MODEL_IDS if i.endswith("[model-a]"))
    assert list(report["aggregates"]["models"]) == ["model-a"]
    assert report["aggregates"]["model_comparison"]["pairs"] == []


def test_the_command_line_names_the_models(pytester):
    two_model_suite(pytester.path, {"source": "file", "path": "a.jsonl"})
    _, single = run_report(pytester)
    assert "models" not in single["aggregates"] and "inline" in single.by_id
    assert "q1" in single.by_id  # one source: today's ids
    _, report = run_report(pytester, "--queryeval-predictions=model-a=a.jsonl",
                           "--queryeval-predictions", "model-b=b.jsonl", name="cli.json")
    assert sorted(report.by_id) == sorted([*MODEL_IDS, "inline"])
    assert report["aggregates"]["model_comparison"]["pairs"][0]["p_value"] == 0.375
    assert report["run"]["predictions"] == "model-a=file:a.jsonl, model-b=file:b.jsonl"


@pytest.mark.parametrize(("values", "message"), [
    (["a.jsonl", "b.jsonl"], "*given several times must name each source's model: NAME=PATH"),
    (["m=a.jsonl", "b.jsonl"], "*either one source (PATH) or one NAME=PATH per model, not both"),
    (["m=a.jsonl", "m=b.jsonl"], "*model 'm' is named twice"),
])
def test_a_bad_command_line_is_a_usage_error(pytester, values, message):
    two_model_suite(pytester.path)
    result = pytester.runpytest(*[f"--queryeval-predictions={v}" for v in values])
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])


def test_a_model_with_a_bad_source_fails_only_its_own_cases_with_a_located_error(pytester):
    two_model_suite(pytester.path, {"model-a": {"source": "file", "path": "a.jsonl"},
                                    "bad name": {"path": "b.jsonl"}})
    _, report = run_report(pytester)
    assert {c["id"]: c["outcome"] for c in report["cases"] if "bad name" in c["id"]} == \
        {f"{q}[bad name]": "error" for q in RIGHT}
    error = report.by_id["q1[bad name]"]["error"]
    assert "queryeval.yaml:13: predictions.bad name: a model name is letters, digits" in error
    assert "queryeval.yaml:13: predictions.bad name: needs source: one of" in error
    assert all(report.by_id[f"{q}[model-a]"]["outcome"] in ("passed", "failed") for q in RIGHT)


def test_a_gate_may_name_a_model(models_suite):
    (models_suite.path / "queryeval.yaml").write_text(dump({
        "datasources": {"db": {"type": "sqlite", "path": "data.sqlite"}},
        "predictions": {"model-a": {"source": "file", "path": "a.jsonl"},
                        "model-b": {"source": "file", "path": "b.jsonl"}},
        "gates": {"ex_a": {"metric": "execution_accuracy", "mean": 0.8, "model": "model-a"},
                  "ex_b": {"metric": "execution_accuracy", "mean": 0.8, "model": "model-b"},
                  "pass_b": {"metric": "pass_rate", "min": 0.3, "model": "model-b"}}}),
        encoding="utf-8")
    result, report = run_report(models_suite)
    gates = {g["name"]: (g["model"], g["cases"], round(g["value"], 4), g["passed"])
             for g in report["gates"]}
    assert gates == {"ex_a[model=model-a]": ("model-a", 6, 0.8333, True),
                     "ex_b[model=model-b]": ("model-b", 6, 0.3333, False),
                     "pass_b[model=model-b]": ("model-b", 6, 0.3333, True)}
    assert result.ret == 1
    result.stdout.fnmatch_lines([
        "gate FAIL: mean execution_accuracy model=model-b = 0.3333 (required >= 0.8, 6 cases)"])


def _merge(pytester, *args):
    return pytester.run(sys.executable, "-m", "pytest_queryeval.conclude.cli", "merge", *args)


def _models(report):
    """The models table, without the timings each run measures anew (the query's seconds);
    the predictions files' latencies stay."""
    agg = report["aggregates"]
    models = {m: {**s, "metrics": {k: v for k, v in s["metrics"].items()
                                   if k == "prediction_seconds" or not k.endswith("_seconds")}}
              for m, s in agg["models"].items()}
    assert "prediction_seconds" in models["model-a"]["metrics"]
    return models, agg["model_comparison"], sorted(c["id"] for c in report["cases"])


def test_shards_merged_and_two_workers_give_the_serial_models_table(models_suite):
    _, serial = run_report(models_suite, name="serial.json")
    for index in (1, 2, 3):
        models_suite.runpytest(f"--queryeval-shard={index}/3",
                               f"--queryeval-json=shard-{index}.json")
    _merge(models_suite, "shard-1.json", "shard-2.json", "shard-3.json", "-o", "merged.json")
    merged = read_report(models_suite.path / "merged.json")
    assert _models(merged) == _models(serial)
    _, workers = run_report(models_suite, "-n", "2", "-p", "xdist", name="xdist.json")
    assert _models(workers) == _models(serial)
    _, resumed = run_report(models_suite, "--queryeval-resume=serial.json", name="resumed.json")
    assert _models(resumed) == _models(serial)


def test_a_case_on_several_datasources_fans_out_per_source_then_per_model(pytester):
    two_model_suite(pytester.path)
    config = (pytester.path / "queryeval.yaml").read_text(encoding="utf-8").replace(
        '"db": {', '"db2": {"type": "sqlite", "path": "data.sqlite"}, "db": {')
    (pytester.path / "queryeval.yaml").write_text(config, encoding="utf-8")
    pytester.makefile(".yaml", test_cases=dump({
        "kind": "sql", "datasource": ["db", "db2"],
        "cases": [{"id": "q1", "question": "how many", "gold": RIGHT["q1"]}]}))
    _, report = run_report(pytester, "-m", "model_b")
    assert {i: (c["datasource"], c["model"], c["outcome"]) for i, c in report.by_id.items()} == {
        "q1[db][model-b]": ("db", "model-b", "failed"),
        "q1[db2][model-b]": ("db2", "model-b", "failed")}
    assert report["aggregates"]["models"]["model-b"]["count"] == 2


def test_one_predictions_path_on_the_command_line_runs_that_source_alone(models_suite):
    _, report = run_report(models_suite, "--queryeval-predictions=b.jsonl")
    assert sorted(report.by_id) == sorted([*RIGHT, "inline"])
    assert "models" not in report["aggregates"]
    assert report.outcomes["q1"] == "failed" and report.outcomes["q6"] == "passed"


def test_the_excel_report_has_a_sheet_by_model(models_suite):
    openpyxl = pytest.importorskip("openpyxl")
    run_report(models_suite, "--queryeval-xlsx=r.xlsx")
    sheet = openpyxl.load_workbook(models_suite.path / "r.xlsx")["By model"]
    rows = [[cell for cell in row if cell is not None]
            for row in sheet.iter_rows(values_only=True)]
    by_model = {row[0]: tuple(row[1:3]) for row in rows if row and row[0] in ("model-a", "model-b")}
    assert by_model == {"model-a": (6, pytest.approx(5 / 6)),
                        "model-b": (6, pytest.approx(2 / 6))}


def test_live_sources_are_asked_per_model_and_ahead(pytester):
    two_model_suite(pytester.path, {
        "right": {"source": "python", "function": "stand_in:right"},
        "wrong": {"source": "python", "function": "stand_in:wrong"}})
    pytester.makepyfile(stand_in=f"""
RIGHT = {RIGHT!r}
ASKED = []

def right(case):
    ASKED.append(("right", case["id"]))
    return RIGHT[case["id"].split("[")[0]]

def wrong(case):
    ASKED.append(("wrong", case["id"]))
    return "SELECT 42"
""")
    _, report = run_report(pytester, "-p", "no:cacheprovider")
    assert {i for i, o in report.outcomes.items() if o == "passed"} == \
        {f"{q}[right]" for q in RIGHT} | {"inline"}
    assert report["aggregates"]["model_comparison"]["pairs"][0] | {"p_value": None} == {
        "a": "right", "b": "wrong", "cases": 6, "a_only": 6, "b_only": 0, "p_value": None,
        "better": "right"}
    assert report["aggregates"]["model_comparison"]["pairs"][0]["p_value"] == 2 / 2 ** 6


def test_model_names_pytest_cannot_mark_fail_only_their_own_cases(pytester):
    """Issue 49 item 3: a name pytest refuses as a marker (``_x``) or that is no marker at
    all (``..``, ``-x``, ``.x``, ``é``) never ends collection: each model gets a marker pytest
    takes, a bad name is a located error of that model's cases, the other models' run."""
    names = ["..", "_x", "-x", ".x", "é"]
    two_model_suite(pytester.path, {"model-a": {"source": "file", "path": "a.jsonl"},
                                    **{n: {"source": "file", "path": "b.jsonl"} for n in names}})
    result, report = run_report(pytester, "--strict-markers")
    assert result.ret == 1
    assert {i: c["outcome"] for i, c in report.by_id.items() if i.endswith("[model-a]")} == {
        f"{q}[model-a]": "failed" if q == "q6" else "passed" for q in RIGHT}
    assert report.outcomes["q1[_x]"] == "failed"  # a valid name, model-b's answers
    for name in ("..", "-x", ".x", "é"):
        assert report.outcomes[f"q1[{name}]"] == "error"
        assert f"predictions.{name}: a model name is letters" in report.by_id[f"q1[{name}]"][
            "error"]
    _, marked = run_report(pytester, "-m", "model__x", "--strict-markers", name="m.json")
    assert sorted(marked.by_id) == sorted(f"{q}[{n}]" for q in RIGHT for n in ("_x", "-x", ".x"))
