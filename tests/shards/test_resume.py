"""``--queryeval-resume REPORT``: a retried shard carries what its earlier attempt scored
(issue 30 item 6) and asks the model only for the rest."""

from __future__ import annotations

import json

from tests.sdmx_cases import GDP, MEX, dump, sdmx_case, selection
from tests.support import read_report

IDS = [f"c{i}" for i in range(6)]


def _suite(pytester, question_of_c4="question c4"):
    cases = []
    for i, cid in enumerate(IDS):
        case = sdmx_case(cid, selection(GDP))
        if cid == "c4":
            case["conversation"][0]["content"] = question_of_c4
        cases.append(case)
        del i
    pytester.makefile(".yaml", test_cases=dump({"kind": "sdmx",
                                                "thresholds": {"macro_precision": 1.0},
                                                "cases": cases}))
    pytester.makefile(".yaml", queryeval=dump({
        "predictions": {"source": "python", "function": "my_model:predict"},
        "gates": {"macro_f1": {"mean": 0.5}}}))
    pytester.makepyfile(my_model=f"""
        import os
        GOOD = {json.dumps(selection(GDP))!s}
        BAD = {json.dumps(selection(MEX))!s}
        def predict(case):
            with open("calls.log", "a") as fh:
                fh.write(case["id"] + "\\n")
            if case["id"] == "c3" and os.path.exists("c3-down"):
                raise RuntimeError("model unreachable")
            return BAD if case["id"] == "c1" else GOOD
    """)


def _calls(pytester):
    log = pytester.path / "calls.log"
    calls = sorted(log.read_text().split()) if log.exists() else []
    log.unlink(missing_ok=True)
    return calls


def test_a_retry_asks_only_for_what_the_first_attempt_did_not_score(suite):
    _suite(suite)
    (suite.path / "c3-down").write_text("")
    first = suite.runpytest("--queryeval-json=attempt-1.json")
    first.assert_outcomes(passed=4, failed=2)
    assert _calls(suite) == IDS
    (suite.path / "c3-down").unlink()

    retry = suite.runpytest("--queryeval-resume=attempt-1.json", "--queryeval-json=attempt-2.json")
    # c1's failure is carried and still fails the run; c3 (a prediction error) is asked again
    retry.assert_outcomes(passed=5, failed=1)
    assert _calls(suite) == ["c3"]
    retry.stdout.fnmatch_lines(["carried: 5 cases scored by an earlier attempt, not run again "
                                "(5 from attempt-1.json; --queryeval-resume)"])
    report = read_report(suite.path / "attempt-2.json")
    by_id = {c["id"]: c for c in report["cases"]}
    assert [c["id"] for c in report["cases"]] == IDS
    assert {i for i, c in by_id.items() if c.get("carried")} == {"c0", "c1", "c2", "c4", "c5"}
    assert by_id["c1"]["outcome"] == "failed" and by_id["c3"]["outcome"] == "passed"
    overall = report["aggregates"]["overall"]
    assert (overall["count"], overall["passed"], overall["failed"]) == (6, 5, 1)
    assert overall["metrics"]["macro_f1"]["n"] == 6
    assert report["gates"][0]["cases"] == 6

    # the same case asked differently is scored again; another prediction source, everything
    _suite(suite, question_of_c4="question c4, reworded")
    suite.runpytest("--queryeval-resume=attempt-2.json").assert_outcomes(passed=5, failed=1)
    assert _calls(suite) == ["c4"]
    other = suite.runpytest("--queryeval-resume=attempt-2.json",
                            "--queryeval-predictions=my_model:predict")
    other.assert_outcomes(passed=5, failed=1)
    assert _calls(suite) == IDS
    assert "carried:" not in other.stdout.str()


def test_an_unusable_resume_report_is_a_usage_error(suite):
    _suite(suite)
    (suite.path / "bad.json").write_text('{"run": {}, "cases": [{"id": 3}]}')
    result = suite.runpytest("--queryeval-resume=bad.json")
    assert result.ret == 4
    result.stderr.fnmatch_lines(["*--queryeval-resume: bad.json: cases?0?.id: expected a string*"])


def test_a_retry_under_xdist_carries_the_same_cases(suite):
    _suite(suite)
    (suite.path / "c3-down").write_text("")
    suite.runpytest("--queryeval-json=attempt-1.json").assert_outcomes(passed=4, failed=2)
    (suite.path / "c3-down").unlink()
    _calls(suite)
    retry = suite.runpytest("-n", "2", "--queryeval-resume=attempt-1.json",
                            "--queryeval-json=attempt-2.json")
    retry.assert_outcomes(passed=5, failed=1)
    assert _calls(suite) == ["c3"]
    retry.stdout.fnmatch_lines(["carried: 5 cases scored by an earlier attempt, not run again "
                                "(5 from attempt-1.json; --queryeval-resume)"])
