"""Every prediction source, against real files, a real HTTP server and a real command."""

from __future__ import annotations

import json
import sys

import pytest

from tests.fixtures.model_service import ModelService, Request
from tests.sdmx_cases import GDP, GDP_PLUS, MEX, dump, outcomes_by_id, sdmx_case, selection
from tests.support import make_case, run_report

PERFECT = {"gdp": selection(GDP), "mex": selection(MEX)}
WORSE = {"gdp": selection(GDP_PLUS), "mex": selection(MEX)}


@pytest.fixture
def two_cases(suite):
    suite.makefile(".yaml", test_cases=dump({
        "kind": "sdmx", "thresholds": {"macro_precision": 1.0},
        "cases": [sdmx_case("gdp", selection(GDP)), sdmx_case("mex", selection(MEX))],
    }))
    return suite


def _run(pytester, *args):
    return run_report(pytester, *args)


def test_jsonl_file_with_latency(two_cases):
    lines = [json.dumps({"id": k, "predicted": v, "latency": 0.25}) for k, v in WORSE.items()]
    (two_cases.path / "preds.jsonl").write_text("\n".join(lines) + "\n")
    two_cases.makefile(".yaml", queryeval=dump({"predictions": {"source": "file", "path": "preds.jsonl"}}))
    result, report = _run(two_cases)
    result.assert_outcomes(passed=1, failed=1)
    assert outcomes_by_id(report) == {"gdp": "failed", "mex": "passed"}
    gdp = next(c for c in report["cases"] if c["id"] == "gdp")
    assert gdp["metrics"]["prediction_seconds"] == 0.25
    assert abs(gdp["metrics"]["macro_precision"] - 2 / 3) < 1e-12


@pytest.mark.parametrize("suffix", [".json", ".yaml"])
def test_mapping_files_and_the_command_line_override(two_cases, suffix):
    (two_cases.path / f"v1{suffix}").write_text(json.dumps(WORSE))
    (two_cases.path / f"v2{suffix}").write_text(json.dumps(PERFECT))
    two_cases.makefile(".yaml", queryeval=dump({"predictions": {"source": "file", "path": f"v1{suffix}"}}))
    result, _ = _run(two_cases)
    result.assert_outcomes(passed=1, failed=1)
    result, report = _run(two_cases, f"--queryeval-predictions=v2{suffix}")
    result.assert_outcomes(passed=2)
    assert report["run"]["predictions"] == f"v2{suffix}"


def test_missing_prediction_and_missing_file_fail_the_case_not_the_session(two_cases):
    (two_cases.path / "partial.jsonl").write_text(json.dumps({"id": "mex", "predicted": PERFECT["mex"]}) + "\n")
    result, report = _run(two_cases, "--queryeval-predictions=partial.jsonl")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*prediction error: no prediction for case 'gdp' in *partial.jsonl*"])
    assert outcomes_by_id(report) == {"gdp": "error", "mex": "passed"}
    result, report = _run(two_cases, "--queryeval-predictions=nowhere.jsonl")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(["*prediction error: predictions file not found: *nowhere.jsonl*"])


def test_no_prediction_source_at_all(two_cases):
    result, _ = _run(two_cases)
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(["*no prediction for case 'gdp': give it 'predicted:'*"])


def test_python_callable(two_cases):
    two_cases.makepyfile(my_model=f"""
        PREDS = {json.dumps(PERFECT)!s}
        def predict(case):
            assert case["kind"] == "sdmx" and case["conversation"][0]["role"] == "user"
            if case["id"] == "mex":
                raise RuntimeError("model crashed")
            return PREDS[case["id"]]
    """)
    two_cases.makefile(".yaml", queryeval=dump({"predictions": {"source": "python", "function": "my_model:predict"}}))
    result, report = _run(two_cases)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*prediction error: my_model:predict raised RuntimeError: model crashed*"])
    assert report["cases"][0]["metrics"]["prediction_seconds"] >= 0
    # the same callable through the command-line override
    result, _ = _run(two_cases, "--queryeval-predictions=my_model:predict")
    result.assert_outcomes(passed=1, failed=1)


def test_command_reads_case_json_on_stdin(two_cases):
    two_cases.makepyfile(cmd_model=f"""
        import json, sys
        case = json.load(sys.stdin)
        print(json.dumps({{"predicted": {json.dumps(PERFECT)!s}[case["id"]]}}))
    """)
    two_cases.makefile(".yaml", queryeval=dump({"predictions": {
        "source": "command", "command": [sys.executable, "cmd_model.py"]}}))
    result, _ = _run(two_cases)
    result.assert_outcomes(passed=2)


class _Service(ModelService):
    """Stand-in for a model service: 503 on the first ``fail_first[id]`` requests of a case,
    always 500 for ``mex`` (a body that explains, echoing the credential), else the answer
    under ``result.selection`` with a server timing."""

    def __init__(self) -> None:
        super().__init__()
        self.fail_first = {"gdp": 1}

    def answer(self, request: Request) -> tuple[int, object]:
        case_id = str(request.case_id)
        with self.lock:
            if self.fail_first.get(case_id, 0) > 0:
                self.fail_first[case_id] -= 1
                return 503, b""
        if case_id == "mex":
            return 500, f"model overloaded; request by {request.headers.get('Authorization')}" \
                .encode()
        return 200, {"result": {"selection": PERFECT[case_id]}, "meta": {"ms": 12}}


@pytest.fixture
def http_server():
    server = _Service().start()
    yield server
    server.stop()


def test_http_endpoint_with_retries_headers_and_response_path(two_cases, http_server, monkeypatch):
    monkeypatch.setenv("QE_TOKEN", "s3cr3t-token-value")
    two_cases.makefile(".yaml", queryeval=dump({"predictions": {
        "source": "http", "url": f"{http_server.url}/predict", "headers": {"Authorization": "Bearer ${QE_TOKEN}"},
        "body": {"q": "{question}", "case": "{case}"}, "response_path": "result.selection",
        "timing_fields": {"server_ms": "meta.ms"}, "retries": 2, "backoff": 0.01, "timeout": 5,
    }}))
    result, report = _run(two_cases)
    result.assert_outcomes(passed=1, failed=1)
    calls = http_server.requests
    assert {c.headers.get("Authorization") for c in calls} == {"Bearer s3cr3t-token-value"}
    # gdp: one 503 then success; mex: 500 on every attempt (1 + 2 retries)
    ids = [c.case_id for c in calls]
    assert ids.count("gdp") == 2 and ids.count("mex") == 3
    # requested concurrently: the calls arrive in any order
    assert {c.body["q"] for c in calls} == {"question gdp", "question mex"}
    gdp = next(c for c in report["cases"] if c["id"] == "gdp")
    assert gdp["details"]["prediction"] == {"server_ms": 12}
    assert gdp["metrics"]["prediction_seconds"] > 0
    result.stdout.fnmatch_lines(["*prediction error: POST http://127.0.0.1:*/predict failed: HTTP 500 "
                                 "Internal Server Error: model overloaded; request by ***"
                                 " after 3 attempt(s)*"])
    assert "s3cr3t-token-value" not in result.stdout.str()
    assert "s3cr3t-token-value" not in (two_cases.path / "r.json").read_text()


def test_http_endpoint_unreachable(two_cases):
    two_cases.makefile(".yaml", queryeval=dump({"predictions": {
        "source": "http", "url": "http://127.0.0.1:9/none", "retries": 1, "backoff": 0.01, "timeout": 2}}))
    result, report = _run(two_cases)
    result.assert_outcomes(failed=2)
    assert set(outcomes_by_id(report).values()) == {"error"}
    # found by the preflight when the run starts (issue 59 item 4): no case is asked
    result.stdout.fnmatch_lines(["*prediction error: queryeval.yaml:*: predictions: POST "
                                 "http://127.0.0.1:9/none did not answer the preflight check: "
                                 "cannot connect to 127.0.0.1:9:*refused*"])


def test_http_endpoint_unreachable_without_the_preflight(two_cases):
    """``preflight: false``: each case is asked, and fails with its own attempts' reason."""
    two_cases.makefile(".yaml", queryeval=dump({"predictions": {
        "source": "http", "url": "http://127.0.0.1:9/none", "retries": 1, "backoff": 0.01,
        "timeout": 2, "preflight": False, "stop_after": 0}}))
    result, report = _run(two_cases)
    result.assert_outcomes(failed=2)
    assert set(outcomes_by_id(report).values()) == {"error"}
    result.stdout.fnmatch_lines(["*prediction error: POST http://127.0.0.1:9/none failed:*refused*"])


@pytest.fixture
def inline_and_sourced(suite):
    """gdp and a SQL case carry inline predictions; mex takes its prediction from a source."""
    import sqlite3

    conn = sqlite3.connect(suite.path / "shop.sqlite")
    conn.execute("CREATE TABLE sales (id INTEGER PRIMARY KEY, store_id INTEGER)")
    conn.executemany("INSERT INTO sales (store_id) VALUES (?)", [(1,), (2,), (2,)])
    conn.commit()
    conn.close()
    suite.makefile(".yaml", test_sdmx=dump({
        "kind": "sdmx", "thresholds": {"macro_precision": 1.0},
        "cases": [sdmx_case("gdp", selection(GDP), selection(GDP)), sdmx_case("mex", selection(MEX))],
    }))
    suite.makefile(".yaml", test_sql=dump({
        "kind": "sql", "datasource": "shop",
        "thresholds": {"execution_accuracy": 1.0},
        "cases": [{"id": "stores", "gold": "SELECT count(DISTINCT store_id) FROM sales",
                   "predicted": "SELECT count(*) FROM (SELECT DISTINCT store_id FROM sales)"}],
    }))
    suite.makefile(".yaml", queryeval=dump({
        "datasources": {"shop": {"type": "sqlite", "path": "shop.sqlite"}}}))
    (suite.path / "v2.jsonl").write_text(
        "\n".join(json.dumps({"id": k, "predicted": v}) for k, v in
                  [("mex", PERFECT["mex"]), ("stores", "SELECT count(store_id) FROM sales")]) + "\n")
    return suite


def test_command_line_predictions_keep_inline_ones(inline_and_sourced):
    """Issue 19 item 7: --queryeval-predictions replaces the source, not inline predictions."""
    result, report = _run(inline_and_sourced, "--queryeval-predictions=v2.jsonl")
    assert outcomes_by_id(report) == {"gdp": "passed", "mex": "passed", "stores": "passed"}
    result.assert_outcomes(passed=3)


def test_override_inline_replaces_inline_predictions_too(inline_and_sourced):
    result, report = _run(inline_and_sourced, "--queryeval-predictions=v2.jsonl",
                          "--queryeval-predictions-override-inline")
    assert outcomes_by_id(report) == {"gdp": "error", "mex": "passed", "stores": "failed"}
    result.stdout.fnmatch_lines(["*no prediction for case 'gdp' in *v2.jsonl*"])
    stores = next(c for c in report["cases"] if c["id"] == "stores")
    assert stores["predicted"] == "SELECT count(store_id) FROM sales"


def test_override_inline_needs_a_predictions_override(inline_and_sourced):
    result = inline_and_sourced.runpytest("--queryeval-predictions-override-inline")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--queryeval-predictions-override-inline needs --queryeval-predictions*"])


class _ErrorBody(ModelService):
    """A model service that explains its 4xx/5xx in the body and echoes the key it got."""

    def answer(self, request: Request) -> tuple[int, object]:
        key = request.headers.get("X-Api-Key", "")
        if request.path.startswith("/short"):
            return 401, f'{{"error": {{"message": "Incorrect API key provided: {key}"}}}}' \
                .encode()
        return 400, ("context length exceeded:\n" + "x" * 600 + key).encode()


def test_http_error_keeps_the_start_of_the_body_without_the_key():
    from pytest_queryeval.errors import PredictionError
    from pytest_queryeval.predict.http import HttpPredictor

    server = _ErrorBody().start()
    base = server.url
    key = "sk-literal-key-0123456789"
    case = make_case(id="q1", question="how many?")
    try:
        short = HttpPredictor({"source": "http", "url": f"{base}/short",
                               "headers": {"X-Api-Key": key}, "retries": 0})
        with pytest.raises(PredictionError) as info:
            short.predict(case)
        message = info.value.reason()
        assert 'HTTP 401 Unauthorized: {"error": {"message": "Incorrect API key provided: ***"}}' \
            in message
        assert key not in message
        long = HttpPredictor({"source": "http", "url": f"{base}/long?api_key={key}",
                              "retries": 0})
        with pytest.raises(PredictionError) as info:
            long.predict(case)
        message = info.value.reason()
        body = message.split("HTTP 400 Bad Request: ", 1)[1].split(" after 1 attempt(s)")[0]
        assert body == "context length exceeded: " + "x" * (500 - 25) + "..."
        assert key not in message
    finally:
        server.stop()


def _with_stray_ids(suite):
    """A predictions file for the two cases plus a typo and 12 ids of no case."""
    stray = ["gpd", *[f"old-{i:02d}" for i in range(12)]]
    rows = [{"id": k, "predicted": v} for k, v in PERFECT.items()]
    rows += [{"id": i, "predicted": PERFECT["gdp"]} for i in stray]
    (suite.path / "v3.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return stray


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_prediction_ids_matching_no_case_are_warned_once(two_cases, workers):
    stray = _with_stray_ids(two_cases)
    listed = ", ".join(repr(i) for i in stray[:10])
    message = f"13 prediction id(s) in v3.jsonl match no collected case: {listed} and 3 more"
    result = two_cases.runpytest_subprocess("--queryeval-predictions=v3.jsonl", *workers)
    result.assert_outcomes(passed=2)
    out = result.stdout.str()
    assert out.count(f"QueryEvalWarning: {message}") == 1
    assert out.count(f"warning: {message}") == 1  # the queryeval summary says it too
    assert "old-10" not in out


def test_prediction_ids_of_a_suite_file_and_minus_w_error(two_cases):
    _with_stray_ids(two_cases)
    two_cases.makefile(".yaml", queryeval=dump({"predictions": {"source": "file", "path": "v3.jsonl"}}))
    result = two_cases.runpytest()
    result.assert_outcomes(passed=2, warnings=1)
    result.stdout.fnmatch_lines(["*13 prediction id(s) in v3.jsonl match no collected case: 'gpd', *"])
    # -W error turns it into an error of the run, reported without a traceback. In a child
    # process: in-process, -W error also turns an earlier test's socket that the garbage
    # collector closes during this run into an error of this run (CI on fe2392f).
    result = two_cases.runpytest_subprocess("-W", "error")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["error: 13 prediction id(s) in v3.jsonl match no collected case*"])
    assert "Traceback" not in result.stdout.str()
    # a run of named files is a part of the suite: the other ids are not unmatched
    result = two_cases.runpytest("test_cases.yaml")
    result.assert_outcomes(passed=2)
    assert "match no collected case" not in result.stdout.str()


def test_ids_of_cases_another_source_answers_are_not_unmatched(suite):
    """A folder whose ``predictions:`` is another source (example_suite/agents: a live agent
    loop) while the suite's file also holds its cases' answers (for ``--queryeval-predictions``
    runs): those ids name collected cases, so they are no typo and no warning; a stray id
    still is."""
    suite.makefile(".yaml", queryeval=dump({"predictions": {"source": "file",
                                                            "path": "preds.jsonl"}}))
    (suite.path / "other").mkdir()
    (suite.path / "other" / "queryeval.yaml").write_text(dump({"predictions": {
        "source": "file", "path": "mine.jsonl"}}))
    for folder, case_id, sel in ((suite.path, "gdp", GDP), (suite.path / "other", "mex", MEX)):
        (folder / "test_cases.yaml").write_text(dump({
            "kind": "sdmx", "thresholds": {"macro_precision": 1.0},
            "cases": [sdmx_case(case_id, selection(sel))]}))
    (suite.path / "other" / "mine.jsonl").write_text(json.dumps(
        {"id": "mex", "predicted": PERFECT["mex"]}) + "\n")
    (suite.path / "preds.jsonl").write_text("".join(
        json.dumps({"id": k, "predicted": v}) + "\n" for k, v in PERFECT.items()))
    result = suite.runpytest_subprocess("-W", "error")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()[-2000:]
    assert "match no collected case" not in result.stdout.str()
    with (suite.path / "preds.jsonl").open("a") as fh:
        fh.write(json.dumps({"id": "gpd", "predicted": PERFECT["gdp"]}) + "\n")
    assert "1 prediction id(s) in preds.jsonl match no collected case: 'gpd'" in \
        suite.runpytest_subprocess().stdout.str()


def test_a_sub_directory_run_is_partial_and_does_not_cry_wolf(suite):
    """Issue 24 item 9: ``pytest my_suite/sql`` collects a part of the suite, like -k: the
    prediction ids of sibling folders are not unmatched, also with -W error and under
    --collect-only."""
    suite.makefile(".yaml", queryeval=dump({"predictions": {"source": "file",
                                                            "path": "preds.jsonl"}}))
    for folder, case_id, sel in (("a", "gdp", GDP), ("b", "mex", MEX)):
        (suite.path / folder).mkdir()
        (suite.path / folder / "test_cases.yaml").write_text(dump({
            "kind": "sdmx", "thresholds": {"macro_precision": 1.0},
            "cases": [sdmx_case(case_id, selection(sel))]}))
    (suite.path / "preds.jsonl").write_text("".join(
        json.dumps({"id": k, "predicted": v}) + "\n" for k, v in PERFECT.items()))
    # in a process of its own: -W error in-process also fails on another test's leaked socket
    whole = suite.runpytest_subprocess("-W", "error")
    whole.assert_outcomes(passed=2)
    for args in (["a"], ["a", "--collect-only"]):
        result = suite.runpytest_subprocess("-W", "error", *args)
        assert result.ret == pytest.ExitCode.OK, result.stdout.str()[-2000:]
        assert "match no collected case" not in result.stdout.str()
    # a stray id is still named when the whole suite runs
    with (suite.path / "preds.jsonl").open("a") as fh:
        fh.write(json.dumps({"id": "gpd", "predicted": PERFECT["gdp"]}) + "\n")
    assert "1 prediction id(s) in preds.jsonl match no collected case: 'gpd'" in \
        suite.runpytest().stdout.str()
