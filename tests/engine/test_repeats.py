"""``repeat: N`` against a loopback HTTP server that stands in for a non-deterministic model.

The stand-in (``_StandInModel``) replays a script of answers per case, one per request, so a
case can be right on some requests and wrong on others, as a sampled LLM is; it counts every
request, which is how the tests know each repeat really asked the model.
"""

from __future__ import annotations

import json
import sqlite3

import pytest

from tests.fixtures.model_service import ModelService, Request
from tests.sdmx_cases import GDP, MEX, dump, sdmx_case, selection
from tests.support import run_report, write_suite

RIGHT = {"gdp": selection(GDP), "mex": selection(MEX)}
WRONG = selection(("COUNTRY", [("USA", "United States")]))  # macro_precision 0 against MEX


class _StandInModel(ModelService):
    """Stand-in for a user's model service: answer ``script[case][n % len]`` on request n
    (``"HTTP 500"``: that status)."""

    def __init__(self) -> None:
        super().__init__()
        self.script: dict[str, list[object]] = {
            "gdp": [RIGHT["gdp"]], "mex": [RIGHT["mex"], WRONG, RIGHT["mex"]]}

    def answer(self, request: Request) -> tuple[int, object]:
        answers = self.script[str(request.case_id)]
        answer = answers[request.n % len(answers)]
        if answer == "HTTP 500":
            return 500, b""
        return 200, {"predicted": answer}


@pytest.fixture
def model():
    server = _StandInModel().start()
    yield server
    server.stop()


def _config(url: str, **extra: object) -> str:
    return dump({"predictions": {"source": "http", "url": f"{url}/predict",
                                 "body": {"case": "{case}"}, "response_path": "predicted",
                                 "retries": 0, "timeout": 10,
                                 # one request at a time, in run order: the script answers
                                 # by arrival, so repeat n gets answer n
                                 "concurrency": 1}, **extra})


def _suite(pytester, model, header=None, cases=None, **config):
    pytester.makefile(".yaml", queryeval=_config(model.url, **config))
    pytester.makefile(".yaml", test_cases=dump({
        "kind": "sdmx", "thresholds": {"macro_precision": 1.0}, **(header or {}),
        "cases": cases or [sdmx_case("gdp", selection(GDP)), sdmx_case("mex", selection(MEX))],
    }))


def _run(pytester, *args):
    result, report = run_report(pytester, *args)
    return result, report, report.by_id


def test_each_repeat_asks_the_model_and_the_case_records_mean_min_consistency(suite, model):
    _suite(suite, model, header={"repeat": 3})
    result, report, cases = _run(suite, "--queryeval-markdown=r.md", "--queryeval-html=r.html")
    result.assert_outcomes(passed=1, failed=1)
    assert model.calls == {"gdp": 3, "mex": 3}  # N real requests per case
    gdp, mex = cases["gdp"], cases["mex"]
    assert gdp["outcome"] == "passed"
    assert gdp["metrics"]["consistency"] == 1.0
    assert gdp["metrics"]["pass_at_k"] == gdp["metrics"]["pass_all_k"] == 1.0
    # mex: right, wrong, right -> the mean of precision 1, 0, 1; its minimum 0
    assert mex["outcome"] == "failed"
    assert mex["metrics"]["macro_precision"] == pytest.approx(2 / 3)
    assert mex["details"]["repeat"]["min"]["macro_precision"] == 0.0
    assert mex["details"]["repeat"]["statuses"] == ["passed", "failed", "passed"]
    assert mex["metrics"]["consistency"] == pytest.approx(2 / 3)
    assert mex["metrics"]["pass_at_k"] == 1.0 and mex["metrics"]["pass_all_k"] == 0.0
    assert [r["status"] for r in mex["details"]["repeat"]["runs"]] == ["passed", "failed", "passed"]
    assert mex["failed_metrics"] == ["macro_precision"]
    # the flaky cases in every report
    assert [f["id"] for f in report["flaky"]] == ["mex"]
    result.stdout.fnmatch_lines(["*repeat: 2 of 3 runs passed (repeat_rule: all), "
                                 "consistency 0.67*", "*run 2: failed (macro_precision=0.000*",
                                 "*flaky cases (1: the outcome differs across runs)*",
                                 "*mex (test_cases.yaml:*): 2 of 3 runs passed [[]PFP], "
                                 "consistency 0.67, rule all -> failed*"])
    assert "mex" in (suite.path / "r.md").read_text().split("Flaky cases", 1)[1]
    assert "Flaky cases" in (suite.path / "r.html").read_text()
    assert report["aggregates"]["overall"]["metrics"]["pass_all_k"]["mean"] == 0.5


@pytest.mark.parametrize(("rule", "outcome"), [("all", "failed"), ("majority", "passed"),
                                                  ("any", "passed")])
def test_repeat_rule_decides_the_case(suite, model, rule, outcome):
    _suite(suite, model, cases=[sdmx_case("mex", selection(MEX), repeat_rule=rule)],
           defaults={"repeat": 3})  # repeat from the suite's defaults
    model.script["mex"] = [RIGHT["mex"], WRONG, RIGHT["mex"]]
    _, _, cases = _run(suite)
    assert cases["mex"]["outcome"] == outcome
    assert model.calls["mex"] == 3


def test_majority_needs_more_than_half_and_errors_count_as_not_passing(suite, model):
    _suite(suite, model, header={"repeat": 4, "repeat_rule": "majority"})
    model.script["mex"] = [RIGHT["mex"], "HTTP 500", RIGHT["mex"], WRONG]
    _, _report, cases = _run(suite)
    mex = cases["mex"]
    assert mex["outcome"] == "failed"  # 2 of 4 is not a majority
    assert mex["details"]["repeat"]["statuses"] == ["passed", "error", "passed", "failed"]
    assert mex["metrics"]["macro_precision"] == pytest.approx(2 / 3)  # over the 3 scored runs
    assert mex["metrics"]["consistency"] == 0.5
    assert "run 2: error: " in "\n".join(mex["diff"])


def test_consistency_threshold_and_the_command_line_repeat(suite, model):
    _suite(suite, model, header={"repeat_rule": "any", "thresholds": {"consistency": 0.9}})
    _, _, cases = _run(suite, "--queryeval-repeat", "3")
    assert model.calls == {"gdp": 3, "mex": 3}
    assert cases["gdp"]["outcome"] == "passed"
    assert cases["mex"]["outcome"] == "failed"  # some run passed, but consistency 0.67 < 0.9
    assert cases["mex"]["failed_metrics"] == ["consistency"]


def test_without_repeat_nothing_changes(suite, model):
    _suite(suite, model)
    _, report, cases = _run(suite)
    assert model.calls == {"gdp": 1, "mex": 1}
    assert "consistency" not in cases["gdp"]["metrics"]
    assert "repeat" not in cases["gdp"]["details"]
    assert report["flaky"] == []


def test_inline_prediction_with_its_own_repeat_is_a_located_error(suite, model):
    _suite(suite, model, cases=[sdmx_case("gdp", selection(GDP), RIGHT["gdp"], repeat=3),
                                sdmx_case("mex", selection(MEX), RIGHT["mex"])],
           defaults={"repeat": 5})
    _result, _, cases = _run(suite)
    assert cases["gdp"]["outcome"] == "error"
    assert "test_cases.yaml:" in cases["gdp"]["error"]
    assert "cases[0].repeat: repeat: 3 with an inline prediction scores the same text" \
        in cases["gdp"]["error"]
    # inherited from the suite: scored once, with a note, and no request to the model
    assert cases["mex"]["outcome"] == "passed"
    assert cases["mex"]["details"]["repeat"]["n"] == 1
    assert "scored once" in cases["mex"]["details"]["repeat"]["note"]
    assert model.calls == {}


def test_bad_repeat_values(suite, model):
    _suite(suite, model, cases=[sdmx_case("gdp", selection(GDP), repeat=0),
                                sdmx_case("mex", selection(MEX), repeat_rule="most")])
    _, _, cases = _run(suite)
    assert "cases[0].repeat: must be a positive integer, not 0" in cases["gdp"]["error"]
    assert "cases[1].repeat_rule: must be one of all, majority, any, not 'most'" \
        in cases["mex"]["error"]
    result = suite.runpytest("--queryeval-repeat=0")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--queryeval-repeat=0: must be 1 or more*"])


def test_sql_consistency_compares_results_and_the_gold_cache_does_not_collapse_repeats(
        pytester, model):
    """Two different texts with the same rows are consistent; a warm gold cache still asks
    the model for every repeat."""
    db = pytester.path / "music.sqlite"
    with sqlite3.connect(db) as conn:
        conn.executescript("CREATE TABLE artists(id INTEGER PRIMARY KEY, name TEXT);"
                           "INSERT INTO artists(name) VALUES ('a'), ('b'), ('c');")
    conn.close()
    write_suite(pytester.path)
    pytester.makefile(".yaml", queryeval=_config(
        model.url, datasources={"music": {"type": "sqlite", "path": "music.sqlite"}}))
    pytester.makefile(".yaml", test_sql=dump({
        "kind": "sql", "datasource": "music", "repeat": 3,
        "thresholds": {"execution_accuracy": 1.0},
        "cases": [{"id": "count", "question": "How many artists?",
                   "gold": "SELECT count(*) FROM artists"}]}))
    model.script = {"count": ["SELECT count(*) FROM artists",
                                      "SELECT COUNT(id)  FROM artists",
                                      "SELECT count(*) FROM artists WHERE id > 1"]}
    for session in range(2):
        _, _, cases = _run(pytester)
        assert model.calls["count"] == 3 * (session + 1)
        count = cases["count"]
        assert count["metrics"]["consistency"] == pytest.approx(2 / 3)
        assert count["details"]["repeat"]["distinct"] == 2
        assert count["metrics"]["execution_accuracy"] == pytest.approx(2 / 3)
        assert count["outcome"] == "failed"
        # the failing run shown is the third: its gold came from the cache (it ran once)
        assert count["details"]["gold_cached"] is True


def test_a_predictions_file_is_scored_once_whatever_repeat_says(pytester: pytest.Pytester) -> None:
    """docs/reference.md: a repeat inherited by a case whose prediction comes from a
    ``source: file`` predictions file scores it once, with a note (it was scored N times)."""
    db = pytester.path / "db.sqlite"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE t (a INT)")
        conn.execute("INSERT INTO t VALUES (1)")
    pytester.makefile(".yaml", queryeval="datasources:\n  db: {type: sqlite, path: db.sqlite}\n"
                      "predictions: {source: file, path: preds.jsonl}\ndefaults: {repeat: 3}\n")
    pytester.makefile(".yaml", test_a="kind: sql\ndatasource: db\ncases:\n"
                      "  - {id: c1, question: q, gold: SELECT a FROM t}\n")
    pytester.makefile(".jsonl", preds='{"id": "c1", "predicted": "SELECT a FROM t"}\n')
    pytester.makeini("[pytest]\nqueryeval_files = test_*.yaml\n")
    for extra in ([], ["--queryeval-repeat", "4"]):
        result = pytester.runpytest("--queryeval-json=r.json", "-p", "no:cacheprovider", *extra)
        result.assert_outcomes(passed=1)
        case = json.loads((pytester.path / "r.json").read_text())["cases"][0]
        assert case["details"]["repeat"]["n"] == 1, extra
        assert case["details"]["repeat"]["note"].startswith("scored once")
        assert "consistency" not in case["metrics"]
