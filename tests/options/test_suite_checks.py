"""Suite-wide names and run options are checked before any case runs (usage error, exit 4).

Each suite here has a real python predictor that leaves a marker file when it is called: a
usage error must end the session before the first prediction, serially and under xdist.
"""

from __future__ import annotations

import json

import pytest

from tests.sdmx_cases import GDP, GDP_PLUS, MEX, dump, sdmx_case, selection
from tests.support import read_report

MODEL = """
import json, pathlib
PREDS = {preds}
def predict(case):
    pathlib.Path("predicted.marker").write_text("called")
    return PREDS[case["id"]]
"""


@pytest.fixture
def guarded(suite):
    """Three SDMX cases (one wrong), predicted by a python model that leaves a marker."""
    preds = {"gdp": selection(GDP), "gdp-wrong": selection(GDP_PLUS), "mex": selection(MEX)}
    suite.makepyfile(my_model=MODEL.format(preds=json.dumps(preds)))
    suite.makefile(".yaml", test_cases=dump({
        "kind": "sdmx", "thresholds": {"macro_precision": 1.0},
        "cases": [sdmx_case("gdp", selection(GDP), tags=["weo"]),
                  sdmx_case("gdp-wrong", selection(GDP), tags=["weo"]),
                  sdmx_case("mex", selection(MEX), tags=["cpi"])],
    }))
    return suite


def _config(pytester, **sections):
    """queryeval.yaml with the python predictor and ``sections``; returns its lines."""
    text = "predictions: {source: python, function: 'my_model:predict'}\n"
    text += "".join(f"{key}:\n" + "".join(f"  {line}\n" for line in lines)
                    for key, lines in sections.items())
    (pytester.path / "queryeval.yaml").write_text(text)
    return text.splitlines()


def _line(lines, needle):
    return next(i for i, line in enumerate(lines, 1) if needle in line)


def _usage_error(result, pytester):
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    assert not (pytester.path / "predicted.marker").exists(), "a case ran before the usage error"
    return result.stderr.str()


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_misspelled_gate_metric_is_a_usage_error_before_any_case_runs(guarded, workers):
    lines = _config(guarded, gates=["execution_acuracy: {mean: 0.9}"])
    result = guarded.runpytest_subprocess(*workers)
    err = _usage_error(result, guarded)
    line = _line(lines, "execution_acuracy")
    assert (f"queryeval.yaml:{line}: gates.execution_acuracy: unknown metric "
            "'execution_acuracy' (did you mean 'execution_accuracy'?)") in err
    assert "no case was run" in err
    assert "error: error:" not in result.stdout.str() + err


def test_every_suite_wide_problem_is_listed_once_at_its_own_line(guarded):
    lines = _config(guarded, thresholds=["macro_precison: 0.9", "macro_recall: .nan"],
                    gates=["pass_rate: 90",
                           "macro_f1: {mean: .inf}",
                           "macro_precision: {mean: 0.5, kind: sdmxx}",
                           "execution_accuracy: {mean: 0.5, kind: sdmx}",
                           "weo_rate: {metric: pass_rate, min: 0.5, tags: weo}"],
                    defaults=["datasourse: x", "thresholds: {macro_f1: 0.5}", "tags: [nightly]"])
    sub = guarded.mkdir("sub")
    (sub / "test_more.yaml").write_text(dump({"kind": "sdmx", "cases": [
        sdmx_case("sub-gdp", selection(GDP))]}))
    result = guarded.runpytest()
    err = _usage_error(result, guarded)
    at = {needle: _line(lines, needle) for needle in (
        "macro_precison", "macro_recall", "pass_rate", ".inf", "sdmxx", "execution_accuracy",
        "weo_rate", "datasourse", "thresholds: {macro_f1")}
    expected = [
        f"queryeval.yaml:{at['macro_precison']}: thresholds.macro_precison: unknown metric "
        "'macro_precison' (did you mean 'macro_precision'?)",
        f"queryeval.yaml:{at['macro_recall']}: thresholds.macro_recall: threshold min for "
        "macro_recall must be a finite number, not nan",
        f"queryeval.yaml:{at['pass_rate']}: gates.pass_rate.min: a pass rate is a fraction "
        "between 0 and 1, not 90 (for 90%, write 0.9)",
        f"queryeval.yaml:{at['.inf']}: gates.macro_f1.mean: must be a finite number, not inf",
        f"queryeval.yaml:{at['sdmxx']}: gates.macro_precision.kind: unknown kind 'sdmxx' "
        "(did you mean 'sdmx'?)",
        f"queryeval.yaml:{at['execution_accuracy']}: gates.execution_accuracy: metric "
        "'execution_accuracy' is not produced by kind sdmx (it is by: cypher, sparql, sql)",
        f"queryeval.yaml:{at['weo_rate']}: gates.weo_rate.tags: unknown key (did you mean 'tag'?)",
        f"queryeval.yaml:{at['datasourse']}: defaults.datasourse: unknown key (did you mean "
        "'datasource'?)",
        f"queryeval.yaml:{at['thresholds: {macro_f1']}: defaults.thresholds: not a case "
        "default: suite thresholds go in the top-level thresholds: of queryeval.yaml",
    ]
    for line in expected:
        assert err.count(line) == 1, (line, err)  # once, though two directories use the file
    listed = [int(line.split(":")[1]) for line in err.splitlines() if "queryeval.yaml:" in line]
    assert listed == sorted(listed)  # in the file's order
    assert "queryeval: 9 problems in the suite configuration or options (no case was run)" in err


def test_unknown_ini_threshold_metric_is_located_in_the_ini_file(guarded):
    guarded.makeini("[pytest]\nqueryeval_files = test_*.yaml\n"
                    "queryeval_thresholds =\n    macro_f1=0.5\n    macro_recal=0.5\n")
    _config(guarded)
    err = _usage_error(guarded.runpytest(), guarded)
    assert ("tox.ini:5: queryeval_thresholds: unknown metric 'macro_recal' "
            "(did you mean 'macro_recall'?)") in err


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_unknown_defaults_key_is_one_usage_error_not_a_failure_per_case(guarded, workers):
    lines = _config(guarded, defaults=["difficulty: easy", "tagz: [nightly]"])
    result = guarded.runpytest_subprocess(*workers)
    err = _usage_error(result, guarded)
    assert (f"queryeval.yaml:{_line(lines, 'tagz')}: defaults.tagz: unknown key "
            "(did you mean 'tags'?)") in err
    assert err.count("defaults.tagz") == 1
    assert "failed" not in result.stdout.str()


def test_a_gate_that_scores_nothing_fails_unless_allow_empty(guarded):
    # execution_accuracy is a real metric, but no SDMX case produces it
    _config(guarded, gates=["execution_accuracy: {mean: 0.9}"])
    result = guarded.runpytest("--queryeval-json=r.json")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines([
        "gate FAIL: mean execution_accuracy = n/a (nothing scored: no case has "
        "execution_accuracy) (required >= 0.9, 0 of 3 cases scored)"])
    gate = read_report(guarded.path / "r.json")["gates"][0]
    assert (gate["passed"], gate["value"], gate["reason"]) == (
        False, None, "nothing scored: no case has execution_accuracy")
    _config(guarded, gates=["execution_accuracy: {mean: 0.9, allow_empty: true}",
                            "pass_rate: {min: 0.5, tag: nightly, allow_empty: true}"])
    guarded.makefile(".yaml", test_cases=dump({"kind": "sdmx", "cases": [
        sdmx_case("gdp", selection(GDP)), sdmx_case("mex", selection(MEX))]}))
    result = guarded.runpytest()
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines([
        "gate PASS: mean execution_accuracy = n/a (nothing scored: no case has "
        "execution_accuracy; allow_empty: true)*",
        "gate PASS: pass rate tag=nightly = n/a (nothing scored: no case matched; "
        "allow_empty: true)*"])


def test_pass_rate_gates_filter_by_kind_and_tag(guarded):
    _config(guarded, gates=["pass_rate: {min: 0.6, kind: sdmx, tag: weo}",
                            "cpi_rate: {metric: pass_rate, min: 1.0, tag: cpi}",
                            "weo_precision: {metric: macro_precision, mean: 0.8, tag: weo}"])
    result = guarded.runpytest("--queryeval-json=r.json")
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # gdp-wrong fails its threshold
    gates = {g["name"]: g for g in read_report(guarded.path / "r.json")["gates"]}
    weo = gates["pass_rate[kind=sdmx][tag=weo]"]
    assert (weo["stat"], weo["kind"], weo["tag"], weo["cases"], weo["value"], weo["passed"]) == (
        "pass_rate", "sdmx", "weo", 2, 0.5, False)
    cpi = gates["cpi_rate[tag=cpi]"]
    assert (cpi["metric"], cpi["cases"], cpi["value"], cpi["passed"]) == ("pass_rate", 1, 1.0, True)
    prec = gates["weo_precision[tag=weo]"]
    assert prec["metric"] == "macro_precision"
    assert prec["value"] == pytest.approx((1 + 2 / 3) / 2)
    assert prec["passed"] is True
    result.stdout.fnmatch_lines(["gate FAIL: pass rate kind=sdmx tag=weo = 0.5000 "
                                 "(required >= 0.6, 2 cases)"])


NAN_CASES = """\
kind: sdmx
cases:
  - id: case-nan
    thresholds: {macro_precision: .nan}
    conversation:
      - role: user
        content: q
        target: %(gold)s
        predicted: %(wrong)s
  - id: fine
    conversation:
      - role: user
        content: q
        target: %(gold)s
        predicted: %(gold)s
"""


def test_a_nan_threshold_never_lets_a_wrong_prediction_pass(suite):
    suite.makefile(".yaml", test_nan=NAN_CASES % {"gold": json.dumps(selection(GDP)),
                                                  "wrong": json.dumps(selection(MEX))})
    result = suite.runpytest("-rf")
    result.assert_outcomes(passed=1, failed=1)
    assert ("test_nan.yaml:4: cases[0].thresholds.macro_precision: threshold min for "
            "macro_precision must be a finite number, not nan") in result.stdout.str()
    result = suite.runpytest("--queryeval-threshold", "macro_precision=nan")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "macro_precision=nan': threshold min for macro_precision must be a finite number" in (
        result.stderr.str())
    suite.makeini("[pytest]\nqueryeval_files = test_*.yaml\n"
                  "queryeval_thresholds =\n    macro_recall=max:inf\n")
    result = suite.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "macro_recall=max:inf': threshold max for macro_recall must be a finite number" in (
        result.stderr.str())
    suite.makeini("[pytest]\nqueryeval_files = test_*.yaml\n")
    suite.makefile(".yaml", test_nan=NAN_CASES.replace(
        "kind: sdmx\n", "kind: sdmx\nthresholds: {macro_precision: {min: .nan}}\n").replace(
        "    thresholds: {macro_precision: .nan}\n", "") % {
        "gold": json.dumps(selection(GDP)), "wrong": json.dumps(selection(MEX))})
    result = suite.runpytest("-rf")
    result.assert_outcomes(failed=2)  # a file-level NaN fails each of its cases, located
    result.stdout.fnmatch_lines(["error: test_nan.yaml:2: thresholds.macro_precision: threshold "
                                 "min for macro_precision must be a finite number, not nan"] * 2)


# ------------------------------------------------------------------------------------------
# options


@pytest.mark.parametrize(("args", "message"), [
    (["--queryeval-baseline=b.json", "--queryeval-max-drop=2%"],
     "--queryeval-max-drop='2%': give an absolute drop in the metric's units (0.02, not 2%)"),
    (["--queryeval-baseline=b.json", "--queryeval-max-drop=macro_f2=0.01"],
     "--queryeval-max-drop: unknown metric 'macro_f2' (did you mean 'macro_f1'?)"),
    (["--queryeval-max-drop=0.02"], "--queryeval-max-drop needs --queryeval-baseline"),
    (["--queryeval-baseline=missing.json"],
     "--queryeval-baseline: missing.json: baseline file not found"),
    (["--queryeval-baseline=notjson.json"],
     "--queryeval-baseline: notjson.json:1: baseline is not valid JSON"),
    (["--queryeval-worst=-1"], "--queryeval-worst=-1: must be 0 or more"),
    (["--queryeval-json=afile/r.json"], "--queryeval-json=afile/r.json: afile is not a directory"),
    (["--queryeval-html=."], "--queryeval-html=.: is a directory"),
    (["--queryeval-threshold", "macro_f11=0.5"],
     "--queryeval-threshold: unknown metric 'macro_f11' (did you mean 'macro_f1'?)"),
], ids=["max-drop-percent", "max-drop-metric", "max-drop-alone", "baseline-missing",
        "baseline-invalid", "worst", "json-parent-file", "html-dir", "threshold-metric"])
def test_bad_options_are_usage_errors_before_any_case_runs(guarded, args, message):
    _config(guarded)
    guarded.runpytest("--queryeval-json=b.json")  # a real baseline
    (guarded.path / "predicted.marker").unlink()
    (guarded.path / "notjson.json").write_text("{nope")
    (guarded.path / "afile").write_text("")
    result = guarded.runpytest(*args)
    err = _usage_error(result, guarded)
    assert message in err.replace(str(guarded.path) + "/", ""), err


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_a_broken_baseline_is_found_before_any_case_runs(guarded, workers):
    _config(guarded)
    (guarded.path / "b.json").write_text(json.dumps({"version": 1}))
    result = guarded.runpytest_subprocess("--queryeval-baseline=b.json", *workers)
    err = _usage_error(result, guarded)
    assert "b.json: baseline is not a queryeval JSON report (no 'cases')" in err
    # the first run of --queryeval-update-baseline creates the file it compares with
    result = guarded.runpytest("--queryeval-baseline=new.json", "--queryeval-update-baseline")
    # gdp-wrong is below its threshold: a refresh records it and exits 0 (issue 24 item 4)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["queryeval: PASSED as a baseline refresh: 1 case below "
                                 "threshold recorded as the accepted state (gdp-wrong)*"])
    assert read_report(guarded.path / "new.json")["cases"]


def test_missing_xlsxwriter_is_a_usage_error_at_session_start(guarded):
    # stand-in for an install without the excel extra: the import system's own "not installed"
    guarded.makeconftest("import sys\nsys.modules['xlsxwriter'] = None\n")
    _config(guarded)
    err = _usage_error(guarded.runpytest("--queryeval-xlsx=r.xlsx"), guarded)
    assert "--queryeval-xlsx needs xlsxwriter: pip install pytest-queryeval[excel]" in err


def test_an_error_at_the_end_of_the_run_has_one_prefix(guarded):
    # stand-in for a failure while writing the reports: a report hook that raises
    guarded.makeconftest(
        "from pytest_queryeval.errors import QueryEvalError\n"
        "def pytest_queryeval_report(report, config):\n"
        "    raise QueryEvalError('disk full')\n")
    _config(guarded)
    result = guarded.runpytest()
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    out = result.stdout.str()
    assert "error: disk full" in out
    assert "error: error:" not in out


def test_a_report_that_fails_to_write_keeps_the_summary(guarded):
    # stand-in for an extra that disappears between the start and the end of the run
    guarded.makeconftest("import sys\n"
                         "def pytest_sessionstart(session):\n"
                         "    sys.modules['xlsxwriter'] = None\n")
    _config(guarded)
    result = guarded.runpytest("--queryeval-xlsx=r.xlsx")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    out = result.stdout.str()
    assert "overall: 3 cases, 2 passed, 1 failed" in out
    result.stdout.fnmatch_lines(["error: missing dependency: the Excel report (--queryeval-xlsx) "
                                 "needs xlsxwriter*"])
    assert "error: error:" not in out


def test_custom_kinds_and_metrics_count_as_known_and_their_typos_do_not(suite):
    from tests.engine.test_thresholds_and_hooks import CONFTEST

    suite.makeconftest(CONFTEST)
    tables = {"fruit": [["apple"], ["pear"]], "veg": [["leek"]],
              "food": [["apple"], ["pear"], ["leek"]]}
    # record_only: the kind declares no default threshold, and only the gates judge here
    config = {"datasources": {"mem": {"type": "memory", "tables": tables}}, "record_only": True,
              "gates": {"overlap": {"mean": 0.5, "kind": "tables"},
                        "answer_length": {"mean": 1, "kind": "tables"}}}
    suite.makefile(".yaml", queryeval=dump(config))
    suite.makefile(".yaml", test_custom=dump({"kind": "tables", "datasource": "mem", "cases": [
        {"id": "q1", "question": "fruit?", "gold": "fruit"},
        {"id": "q2", "question": "food?", "gold": "food"}]}))
    result = suite.runpytest("--queryeval-json=r.json")
    result.assert_outcomes(passed=2)
    gates = read_report(suite.path / "r.json")["gates"]
    assert [(g["name"], g["passed"]) for g in gates] == [
        ("overlap[kind=tables]", True), ("answer_length[kind=tables]", True)]  # means 2/3 and 4
    config["gates"] = {"answer_lenght": {"mean": 1}, "overlap": {"mean": 0.5, "kind": "sql"}}
    suite.makefile(".yaml", queryeval=dump(config))
    result = suite.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert ("gates.answer_lenght: unknown metric 'answer_lenght' (did you mean "
            "'answer_length'?)") in err
    assert "gates.overlap: metric 'overlap' is not produced by kind sql (it is by: tables)" in err


def test_a_suite_without_defaults_imports_no_other_kind(pytester: pytest.Pytester) -> None:
    """The keys a suite's ``defaults:`` may hold are every kind's options, so knowing them
    imports every kind (the JSON kind's embedding support, the SDMX metrics: 15 ms). A suite
    without ``defaults:`` does not pay for that; one with defaults is still checked (above)."""
    import sqlite3

    con = sqlite3.connect(pytester.path / "db.sqlite")
    con.execute("CREATE TABLE t (a)")
    con.commit()
    con.close()
    pytester.makefile(".yaml", queryeval="datasources:\n  db: {type: sqlite, path: db.sqlite}\n")
    pytester.makefile(".yaml", test_sql="kind: sql\ndatasource: db\ncases:\n"
                      "- {id: one, gold: SELECT count(*) FROM t, predicted: SELECT 0}\n")
    pytester.makeconftest(
        "import sys\n"
        "def pytest_unconfigure(config):\n"
        "    names = ('pytest_queryeval.kinds.json', 'pytest_queryeval.kinds.sdmx')\n"
        "    open('imported.txt', 'w').write(' '.join(n for n in names if n in sys.modules))\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert (pytester.path / "imported.txt").read_text() == ""
