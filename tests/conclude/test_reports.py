"""Terminal, JSON and junit reports, gates and exit statuses, serial and under xdist."""

from __future__ import annotations

import json
import os
import stat
import xml.etree.ElementTree as ET

import pytest

from tests.sdmx_cases import GDP, GDP_PLUS, MEX, dump, sdmx_case, selection
from tests.support import read_report


@pytest.fixture
def mixed(suite):
    cases = []
    for i in range(6):
        pred = selection(GDP_PLUS) if i % 3 == 0 else selection(GDP)
        cases.append(sdmx_case(f"c{i}", selection(GDP), pred, difficulty="easy" if i < 3 else "hard",
                               tags=["weo"] if i % 2 else ["cpi"]))
    cases.append(sdmx_case("mex", selection(MEX), selection(MEX), difficulty="easy"))
    suite.makefile(".yaml", test_mixed=dump({"kind": "sdmx", "thresholds": {"macro_precision": 0.9},
                                             "cases": cases}))
    return suite


def _json(pytester, name="r.json"):
    return read_report(pytester.path / name)


def test_json_report_schema_and_aggregates(mixed):
    result = mixed.runpytest("--queryeval-json=out/r.json")
    result.assert_outcomes(passed=5, failed=2)
    report = _json(mixed, "out/r.json")
    assert report["version"] == 1
    assert set(report) >= {"version", "run", "cases", "aggregates", "gates"}
    case = report["cases"][0]
    assert set(case) >= {"id", "nodeid", "file", "kind", "difficulty", "tags", "outcome", "metrics",
                         "thresholds", "predicted", "gold", "error"}
    assert case["thresholds"] == {"macro_precision": {"min": 0.9}}
    overall = report["aggregates"]["overall"]
    assert (overall["count"], overall["passed"], overall["failed"]) == (7, 5, 2)
    # 2 of 7 cases have precision 2/3, the rest 1: compute independently of the plugin
    expected = (5 * 1.0 + 2 * (2 / 3)) / 7
    assert abs(overall["metrics"]["macro_precision"]["mean"] - expected) < 1e-12
    easy = report["aggregates"]["by_kind_difficulty"]["sdmx"]["easy"]
    assert (easy["count"], easy["passed"]) == (4, 3)
    assert report["aggregates"]["by_tag"]["weo"]["count"] == 3
    assert not list((mixed.path / "out").glob(".*tmp"))  # atomic write leaves no temp file
    result.stdout.fnmatch_lines(["*= queryeval =*", "sdmx*difficulty*cases*pass*P*R*F1*",
                                 "*easy*4*75.0%*", "*hard*3*66.7%*",
                                 "overall: 7 cases, 5 passed, 2 failed*"])


def test_failure_shows_question_predicted_gold_and_metric_table(mixed):
    result = mixed.runpytest("-k", "c0")
    # what decides first: the diff, then the case, then only the gated metrics
    result.stdout.fnmatch_lines([
        "*sdmx case 'c0' (test_mixed.yaml:*)",
        "[[]recall: 1.00, precision: 0.67]", "False Positives [[]1]", "  * NGDP_R: GDP constant",
        "question:  question c0", "predicted: *NGDP_R*",
        "gold:      *", "metric*value*threshold*", "macro_precision*0.667*>= 0.9*FAIL",
        "(5 other metrics: -v shows them)",
    ])
    assert "macro_recall" not in result.stdout.str()
    verbose = mixed.runpytest("-k", "c0", "-v")
    verbose.stdout.fnmatch_lines(["metric*value*threshold*", "macro_precision*0.667*>= 0.9*FAIL",
                                  "macro_recall*1.000", "macro_f1*0.800"])


def test_gates_set_exit_status_cleanly(mixed):
    mixed.makefile(".yaml", queryeval=dump({"gates": {"macro_precision": {"mean": 0.99}, "pass_rate": 0.5}}))
    result = mixed.runpytest("--queryeval-threshold", "macro_precision=0.5", "--queryeval-json=r.json")
    result.assert_outcomes(passed=7)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["gate FAIL: mean macro_precision = 0.9048 (required >= 0.99, 7 cases)",
                                 "gate PASS: pass rate = 1.0000 (required >= 0.5, 7 cases)"])
    assert "Traceback" not in result.stdout.str()
    gates = _json(mixed)["gates"]
    assert [(g["name"], g["passed"]) for g in gates] == [("macro_precision", False), ("pass_rate", True)]
    mixed.makefile(".yaml", queryeval=dump({"gates": {"macro_precision": {"mean": 0.9, "kind": "sdmx"}}}))
    result = mixed.runpytest("--queryeval-threshold", "macro_precision=0.5")
    assert result.ret == pytest.ExitCode.OK


def test_gates_never_mask_usage_errors_or_interrupts(mixed):
    mixed.makefile(".yaml", queryeval=dump({"gates": {"macro_precision": {"mean": 0.99}}}))
    result = mixed.runpytest("--no-such-option")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    mixed.makepyfile(conftest="""
        import pytest
        def pytest_runtest_call(item):
            if item.name == "c3":
                raise KeyboardInterrupt
    """)
    result = mixed.runpytest_subprocess("--queryeval-json=r.json")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    report = _json(mixed)
    assert report["run"]["interrupted"] is True
    assert [c["id"] for c in report["cases"]] == ["c0", "c1", "c2"]


def test_junit_properties_per_case_and_aggregates(mixed):
    mixed.runpytest("--junitxml=j.xml")
    root = ET.parse(mixed.path / "j.xml").getroot()
    suite_props = {p.get("name"): p.get("value") for p in root.find("testsuite").find("properties")}
    assert suite_props["queryeval.cases"] == "7"
    assert float(suite_props["queryeval.pass_rate"]) == pytest.approx(5 / 7, abs=1e-6)
    case = next(tc for tc in root.iter("testcase") if tc.get("name") == "c0")
    props = {p.get("name"): p.get("value") for p in case.find("properties")}
    assert float(props["queryeval.macro_precision"]) == pytest.approx(2 / 3)
    assert props["queryeval.kind"] == "sdmx"
    mixed.makeini("[pytest]\nqueryeval_files = test_*.yaml\nqueryeval_junit_properties = false\n")
    mixed.runpytest("--junitxml=j2.xml")
    root = ET.parse(mixed.path / "j2.xml").getroot()
    case = next(tc for tc in root.iter("testcase") if tc.get("name") == "c0")
    assert case.find("properties") is None


def test_xdist_gives_the_same_aggregates_and_junit_as_a_serial_run(mixed):
    serial = mixed.runpytest_subprocess("--queryeval-json=serial.json", "--junitxml=serial.xml")
    serial.assert_outcomes(passed=5, failed=2)
    par = mixed.runpytest_subprocess("-n", "2", "--queryeval-json=par.json", "--junitxml=par.xml")
    par.assert_outcomes(passed=5, failed=2)
    a, b = _json(mixed, "serial.json"), _json(mixed, "par.json")
    strip = ("prediction_seconds",)
    for agg in (a["aggregates"], b["aggregates"]):
        for stats in agg["overall"], *agg["by_kind"].values():
            for m in strip:
                stats["metrics"].pop(m, None)
    assert a["aggregates"] == b["aggregates"]
    assert [c["id"] for c in a["cases"]] == [c["id"] for c in b["cases"]]
    par.stdout.fnmatch_lines(["*= queryeval =*", "overall: 7 cases, 5 passed, 2 failed*"])
    props = {p.get("name"): p.get("value") for p in
             ET.parse(mixed.path / "par.xml").getroot().find("testsuite").find("properties")}
    assert props["queryeval.cases"] == "7"
    cases = {tc.get("name"): tc for tc in ET.parse(mixed.path / "par.xml").getroot().iter("testcase")}
    props_c0 = {p.get("name"): p.get("value") for p in cases["c0"].find("properties")}
    assert float(props_c0["queryeval.macro_precision"]) == pytest.approx(2 / 3)


def test_tag_table_worst_cases_and_github_step_summary(mixed, monkeypatch):
    summary = mixed.path / "step_summary.md"
    summary.write_text("# earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    result = mixed.runpytest("--queryeval-tags", "--queryeval-worst=1")
    result.stdout.fnmatch_lines(["tag*cases*pass*", "cpi*3*66.7%*", "weo*3*66.7%*",
                                 "worst cases (1 of 2 not passing):"])
    text = summary.read_text()
    assert text.startswith("# earlier step\n") and "sdmx" in text and "macro_precision" in text
    result = mixed.runpytest("--queryeval-no-step-summary")
    assert summary.read_text() == text


def test_update_baseline_writes_beside_the_suite_once_under_xdist(mixed):
    sub = mixed.mkdir("suite")
    for name in ("test_mixed.yaml",):
        (sub / name).write_text((mixed.path / name).read_text())
        (mixed.path / name).unlink()
    (mixed.path / "queryeval.yaml").unlink()  # the suite, its config included, moves down
    (sub / "queryeval.yaml").write_text(dump({"thresholds": {"macro_recall": 1.0}}))
    result = mixed.runpytest_subprocess("-n", "2", "--queryeval-update-baseline")
    result.assert_outcomes(passed=5, failed=2)
    baseline = read_report(sub / "queryeval-baseline.json")
    assert len(baseline["cases"]) == 7
    assert "/tmp/" not in json.dumps(baseline)  # no machine paths in a committed file
    assert result.stdout.str().count("baseline updated:") == 1


def _into_subdir(pytester, name="suite"):
    sub = pytester.mkdir(name)
    (sub / "test_mixed.yaml").write_text((pytester.path / "test_mixed.yaml").read_text())
    (pytester.path / "test_mixed.yaml").unlink()
    (pytester.path / "queryeval.yaml").unlink()  # the suite, its config included, moves down
    (sub / "queryeval.yaml").write_text(dump({"thresholds": {"macro_recall": 1.0}}))
    return sub


def test_a_bare_baseline_name_is_read_where_update_writes_it(mixed):
    """Issue 19 item 8: the name written by --queryeval-update-baseline beside the suite is the
    file --queryeval-baseline NAME reads, from whatever directory pytest starts."""
    sub = _into_subdir(mixed)
    mixed.runpytest("--queryeval-update-baseline").assert_outcomes(passed=5, failed=2)
    assert (sub / "queryeval-baseline.json").is_file()
    assert not (mixed.path / "queryeval-baseline.json").exists()
    result = mixed.runpytest("--queryeval-baseline", "queryeval-baseline.json")
    result.stdout.fnmatch_lines(["baseline: 7 cases in both runs"])
    assert "cannot read baseline" not in result.stdout.str()
    # started from inside the suite, with the suite as argument: the same file
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(sub)
        result = mixed.runpytest(str(sub), "--queryeval-baseline", "queryeval-baseline.json")
    result.stdout.fnmatch_lines(["baseline: 7 cases in both runs"])
    # one file for both: --queryeval-update-baseline writes the --queryeval-baseline it compared
    mixed.runpytest("--queryeval-baseline", "other.json", "--queryeval-update-baseline")
    assert read_report(sub / "other.json")["cases"]
    assert not (mixed.path / "other.json").exists()


def test_reports_and_baseline_are_created_with_the_users_umask(mixed):
    """Issue 19 item 8: like junit, not 0600 (mkstemp's mode) for files a CI step publishes."""
    pytest.importorskip("xlsxwriter")
    old = os.umask(0o022)
    try:
        mixed.runpytest("--queryeval-update-baseline", "--queryeval-json=out/r.json",
                        "--queryeval-markdown=out/r.md", "--queryeval-html=out/r.html",
                        "--queryeval-xlsx=out/r.xlsx", "--junitxml=out/j.xml")
    finally:
        os.umask(old)
    modes = {p.name: stat.S_IMODE(p.stat().st_mode)
             for p in [*(mixed.path / "out").iterdir(), mixed.path / "queryeval-baseline.json"]}
    assert modes == {"r.json": 0o644, "r.md": 0o644, "r.html": 0o644, "r.xlsx": 0o644,
                     "j.xml": 0o644, "queryeval-baseline.json": 0o644}


@pytest.mark.parametrize(("args", "why"), [
    (["-k", "c1 or c2"], "the run was filtered (-k 'c1 or c2')"),
    (["-m", "easy"], "the run was filtered (-m 'easy')"),
    (["test_mixed.yaml::c1"], "the run was filtered (explicit node id test_mixed.yaml::c1)"),
    (["--deselect", "test_mixed.yaml::c1"], "the run was filtered (--deselect)"),
    (["-x"], "the run stopped early (*)"),
    (["-n", "2", "-k", "c1"], "the run was filtered (-k 'c1')"),
])
def test_update_baseline_refuses_a_filtered_or_cut_short_run(mixed, args, why):
    """Issue 19 item 3: `-m smoke --queryeval-update-baseline` replaced a 21-case baseline."""
    mixed.runpytest("--queryeval-update-baseline", "-p", "no:randomly")
    baseline = mixed.path / "queryeval-baseline.json"
    before = baseline.read_bytes()
    result = mixed.runpytest_subprocess(*args, "--queryeval-update-baseline", "-p", "no:randomly")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines([f"error: baseline NOT updated (queryeval-baseline.json): *{why}*"
                                 "add --queryeval-force-baseline to write it anyway."])
    assert "baseline updated" not in result.stdout.str()
    assert baseline.read_bytes() == before
    forced = mixed.runpytest_subprocess(*args, "--queryeval-update-baseline",
                                        "--queryeval-force-baseline", "-p", "no:randomly")
    forced.stdout.fnmatch_lines([f"baseline updated: *(forced: *{why}*)"])
    assert baseline.read_bytes() != before


def test_update_baseline_refuses_errors_and_interrupts_unless_forced(mixed):
    mixed.runpytest("--queryeval-update-baseline")
    baseline = mixed.path / "queryeval-baseline.json"
    before = baseline.read_bytes()
    mixed.makefile(".yaml", test_more=dump({"kind": "sdmx", "cases": [sdmx_case("nopred", selection(GDP))]}))
    result = mixed.runpytest("--queryeval-update-baseline")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["error: baseline NOT updated *: 1 case(s) ended in an error (nopred)*"])
    assert baseline.read_bytes() == before
    (mixed.path / "test_more.yaml").unlink()
    mixed.makepyfile(conftest="""
        def pytest_runtest_call(item):
            if item.name == "c3":
                raise KeyboardInterrupt
    """)
    result = mixed.runpytest_subprocess("--queryeval-update-baseline")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["error: baseline NOT updated *: the run was interrupted*"])
    assert baseline.read_bytes() == before


def test_reports_and_the_comparison_name_the_model(mixed):
    """Issue 19 item 3: the report records which model produced it."""
    mixed.makefile(".yaml", queryeval=dump({"model": "gdp-v2"}))
    mixed.runpytest("--queryeval-update-baseline")
    run = read_report(mixed.path / "queryeval-baseline.json")["run"]
    assert (run["model"], run["predictions"]) == ("gdp-v2", None)
    (mixed.path / "preds.jsonl").write_text("")
    result = mixed.runpytest("--queryeval-baseline=queryeval-baseline.json",
                             "--queryeval-model-label=gdp-v3", "--queryeval-json=r.json",
                             "--queryeval-predictions=preds.jsonl")
    result.stdout.fnmatch_lines(["model: gdp-v3 (predictions preds.jsonl) vs baseline gdp-v2"])
    assert _json(mixed)["run"]["model"] == "gdp-v3"
    # model: labels the suite's own predictions, not another model's brought for one run
    mixed.runpytest("--queryeval-json=r.json", "--queryeval-predictions=preds.jsonl")
    assert _json(mixed)["run"]["model"] is None
    mixed.makefile(".yaml", queryeval=dump({"model": "gdp-v2",
                                            "predictions": {"source": "file", "path": "preds.jsonl"}}))
    mixed.runpytest("--queryeval-json=r.json")
    assert _json(mixed)["run"]["predictions"] == "file:preds.jsonl"
    mixed.makefile(".yaml", queryeval=dump({"model": ["not", "a", "label"]}))
    result = mixed.runpytest()
    result.stdout.fnmatch_lines(["*queryeval.yaml:2: model: must be a non-empty string*"])


def test_a_linked_case_file_is_governed_by_the_folder_it_is_found_in(pytester):
    """Issue 49 item 5: a case file symlinked from another folder is a case file of the
    folder it is found in: that folder's queryeval.yaml names the model and the predictions
    source in every report, not the link target's."""
    suite, other = pytester.path / "suite", pytester.path / "other"
    suite.mkdir()
    other.mkdir()
    (suite / "pytest.ini").write_text("[pytest]\nqueryeval_files = test_*.yaml\n")
    for folder, label in ((suite, "suite-model"), (other, "other-model")):
        (folder / "preds.jsonl").write_text("")
        (folder / "queryeval.yaml").write_text(dump({
            "model": label, "predictions": {"source": "file", "path": "preds.jsonl"},
            "gates": {f"{label}-gate": {"metric": "pass_rate", "min": 0.5}}}))
    (other / "test_linked.yaml").write_text(dump({"kind": "sdmx", "cases": [
        sdmx_case("mex", selection(MEX), selection(MEX))]}))
    (suite / "test_linked.yaml").symlink_to(other / "test_linked.yaml")
    result = pytester.runpytest(str(suite), "--rootdir", str(suite), "-c",
                                str(suite / "pytest.ini"), "--queryeval-json=r.json",
                                "--queryeval-markdown=r.md")
    result.assert_outcomes(passed=1)
    report = read_report(pytester.path / "r.json")
    assert (report["run"]["model"], report["run"]["predictions"]) == \
        ("suite-model", "file:preds.jsonl")
    assert [g["name"] for g in report["gates"]] == ["suite-model-gate"]
    assert "other-model" not in (pytester.path / "r.md").read_text()


def test_update_baseline_refuses_a_run_of_part_of_the_suite_directory(mixed):
    sub = _into_subdir(mixed)
    (sub / "a").mkdir()
    (sub / "b").mkdir()
    (sub / "test_mixed.yaml").rename(sub / "a" / "test_mixed.yaml")
    (sub / "b" / "test_other.yaml").write_text(
        dump({"kind": "sdmx", "cases": [sdmx_case("other", selection(MEX), selection(MEX))]}))
    result = mixed.runpytest("suite/a", "--queryeval-update-baseline")
    result.stdout.fnmatch_lines(["error: baseline NOT updated (suite/queryeval-baseline.json): the run "
                                 "was filtered (the suite's case files b/test_other.yaml were not run)*"])
    assert not (sub / "queryeval-baseline.json").exists()
    mixed.runpytest("suite", "--queryeval-update-baseline").assert_outcomes(passed=6, failed=2)
    assert len(read_report(sub / "queryeval-baseline.json")["cases"]) == 8


def test_a_baseline_refresh_whose_only_failures_are_below_threshold_is_green(mixed):
    """Issue 24 item 4: a refresh job on the accepted model (5 of 7 cases pass) writes the
    baseline and exits 0, like syrupy's --snapshot-update; an error still refuses the write
    and fails; a plain run of the same suite stays red."""
    sub = _into_subdir(mixed)
    result = mixed.runpytest_subprocess("--queryeval-update-baseline", "--queryeval-json=r.json")
    result.assert_outcomes(passed=5, failed=2)
    assert result.ret == pytest.ExitCode.OK
    # the report states the status the process ends with (issue 49 item 5)
    run = read_report(mixed.path / "r.json")["run"]
    assert (run["outcome"], run["exitstatus"]) == ("passed", 0)
    assert (sub / "queryeval-baseline.json").is_file()
    result.stdout.fnmatch_lines(["queryeval: PASSED as a baseline refresh: 2 cases below threshold "
                                 "recorded as the accepted state (*); exit status 0"])
    assert mixed.runpytest_subprocess().ret == pytest.ExitCode.TESTS_FAILED
    # an error (a case file that does not parse) refuses the write: red
    (sub / "test_broken.yaml").write_text("kind: sdmx\ncases: [\n")
    refused = mixed.runpytest_subprocess("--queryeval-update-baseline")
    assert refused.ret == pytest.ExitCode.TESTS_FAILED
    refused.stdout.fnmatch_lines(["*baseline NOT updated*"])


def test_junit_property_names_are_shared_across_cases(pytester: pytest.Pytester) -> None:
    """pytest keeps every item's properties to the end of the session: one name string per
    metric, not one per metric and case; and the record is kept once (by the report)."""
    pytester.makefile(".yaml", test_shared=json.dumps({"kind": "sql", "cases": [
        {"id": f"c{i}", "gold_result": {"columns": ["a"], "rows": [[i]]},
         "predicted_result": {"columns": ["a"], "rows": [[i]]}} for i in range(3)]}))
    pytester.makefile(".yaml", queryeval="{}")
    pytester.makeconftest('''
import pytest
from pytest_queryeval.plugin.nodes import RECORD

def pytest_sessionfinish(session):
    items = session.items
    names = [[name for name, _ in item.user_properties] for item in items]
    first = {n: n for n in names[0]}
    shared = all(first[n] is n for ns in names[1:] for n in ns)
    left = sum(RECORD in item.stash for item in items)
    print(f"SHARED={shared} PROPERTIES={len(names[0])} STASHED={left}")
''')
    result = pytester.runpytest("-p", "no:cacheprovider", "-s", "--junitxml=j.xml")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(["*SHARED=True PROPERTIES=* STASHED=0*"])
    assert "PROPERTIES=0 " not in result.stdout.str()
    # without --junitxml nobody reads the properties, so none are added (issue 53)
    bare = pytester.runpytest("-p", "no:cacheprovider", "-s")
    bare.assert_outcomes(passed=3)
    bare.stdout.fnmatch_lines(["*SHARED=True PROPERTIES=0 STASHED=0*"])
