"""Threshold resolution order, and the extension hooks used from a conftest."""

from __future__ import annotations

from tests.sdmx_cases import GDP, GDP_PLUS, dump, sdmx_case, selection
from tests.support import read_report


def _thresholds(pytester):
    report = read_report(pytester.path / "r.json")
    return {c["id"]: c["thresholds"] for c in report["cases"]}


def test_resolution_case_over_file_over_suite_over_ini_and_cli_over_all(suite):
    suite.makeini("[pytest]\nqueryeval_files = test_*.yaml\n"
                  "queryeval_thresholds =\n    macro_recall=0.1\n    macro_f1=0.2\n    macro_precision=0.3\n")
    suite.makefile(".yaml", queryeval=dump({"thresholds": {"macro_f1": 0.4, "macro_precision": 0.5}}))
    suite.makefile(".yaml", test_t=dump({
        "kind": "sdmx", "thresholds": {"macro_precision": 0.6},
        "cases": [sdmx_case("inherit", selection(GDP), selection(GDP_PLUS)),
                  sdmx_case("own", selection(GDP), selection(GDP_PLUS),
                            thresholds={"macro_precision": {"min": 0.7, "max": 0.9}})],
    }))
    result = suite.runpytest("--queryeval-json=r.json")
    result.assert_outcomes(passed=1, failed=1)
    th = _thresholds(suite)
    assert th["inherit"] == {"macro_recall": {"min": 0.1}, "macro_f1": {"min": 0.4},
                             "macro_precision": {"min": 0.6}}
    assert th["own"]["macro_precision"] == {"min": 0.7, "max": 0.9}
    result = suite.runpytest("--queryeval-json=r.json", "--queryeval-threshold", "macro_precision=max:0.5")
    result.assert_outcomes(failed=2)
    assert _thresholds(suite)["own"]["macro_precision"] == {"max": 0.5}
    result.stdout.fnmatch_lines(["macro_precision*0.667*<= 0.5*FAIL"])


def test_bad_threshold_values_are_located(suite):
    suite.makefile(".yaml", test_t=dump({"kind": "sdmx", "cases": [
        sdmx_case("a", selection(GDP), selection(GDP), thresholds={"macro_f1": {"minimum": 1}}),
        sdmx_case("b", selection(GDP), selection(GDP), thresholds={"macro_f1": "high"}),
        sdmx_case("c", selection(GDP), selection(GDP))]}))
    result = suite.runpytest()
    result.assert_outcomes(passed=1, failed=2)
    out = result.stdout.str()
    assert "cases[0].thresholds.macro_f1: unknown threshold key(s) ['minimum']; use min and/or max" in out
    assert "cases[1].thresholds.macro_f1: threshold for macro_f1 must be a number or {min: x, max: y}" in out


CONFTEST = '''
from pytest_queryeval import ResultTable, Scored


class MemorySource:
    """A custom data source type: rows kept in memory, 'queries' are table names."""
    name = "memory"
    type = "memory"

    def __init__(self, tables):
        self.tables = tables

    def execute(self, query, *, timeout=30, max_rows=1000, trusted=False):
        rows = [tuple(r) for r in self.tables[query.strip()]]
        return ResultTable(["value"], rows)

    def fingerprint(self):
        return "memory"

    def close(self):
        pass


class TableNameKind:
    """A custom kind: the gold and the prediction name tables; score = row overlap."""
    name = "tables"
    option_keys = frozenset()

    def is_metric(self, name):
        return name == "overlap"

    def validate(self, case):
        return []

    def difficulty(self, case):
        return "easy"

    def evaluate(self, case, prediction, ctx):
        src = ctx.source(case)
        gold = set(src.execute(case.gold).rows)
        pred = set(src.execute(prediction).rows)
        return Scored({"overlap": len(gold & pred) / len(gold | pred)})


def pytest_queryeval_kinds(config):
    return {"tables": TableNameKind}


def pytest_queryeval_datasource(name, spec, config):
    if spec["type"] == "memory":
        return MemorySource(spec["tables"])
    return None


def pytest_queryeval_predict(case, config):
    return {"q1": "fruit", "q2": "veg"}.get(case.id)


def pytest_queryeval_metric_names(kind, config):
    return ["answer_length"] if kind == "tables" else None


def pytest_queryeval_metrics(case, prediction, scored, config):
    return {"answer_length": float(len(prediction))}


def pytest_queryeval_report(report, config):
    report["run"]["team"] = "search"
'''


def test_custom_kind_datasource_predictor_and_metric_from_a_conftest(suite):
    suite.makeconftest(CONFTEST)
    suite.makefile(".yaml", queryeval=dump({"datasources": {"mem": {
        "type": "memory", "tables": {"fruit": [["apple"], ["pear"]], "veg": [["leek"]], "food": [["apple"], ["pear"], ["leek"]]}}}}))
    suite.makefile(".yaml", test_custom=dump({"kind": "tables", "datasource": "mem", "cases": [
        {"id": "q1", "question": "fruit?", "gold": "fruit", "thresholds": {"overlap": 1.0, "answer_length": {"max": 5}}},
        {"id": "q2", "question": "food?", "gold": "food", "thresholds": {"overlap": 0.5}},
        {"id": "q3", "question": "none?", "gold": "veg", "thresholds": {"answer_lenght": 1}},
    ]}))
    result = suite.runpytest("--strict-markers", "-m", "tables", "--queryeval-json=r.json")
    result.assert_outcomes(passed=1, failed=2)
    report = read_report(suite.path / "r.json")
    by_id = {c["id"]: c for c in report["cases"]}
    assert by_id["q1"]["metrics"]["overlap"] == 1.0
    assert by_id["q1"]["metrics"]["answer_length"] == 5.0
    assert by_id["q2"]["metrics"]["overlap"] == 1 / 3
    assert "unknown metric for kind tables (did you mean 'answer_length'?)" in by_id["q3"]["error"]
    assert report["run"]["team"] == "search"


def _latency_suite(suite, *, case_thresholds=None, suite_thresholds=None):
    """One SQLite table and one inline-predicted SQL case; the thresholds as given."""
    import sqlite3

    with sqlite3.connect(suite.path / "db.sqlite") as conn:
        conn.execute("CREATE TABLE t (a INTEGER)")
        conn.execute("INSERT INTO t VALUES (1), (2)")
    config = {"datasources": {"db": {"type": "sqlite", "path": "db.sqlite"}}}
    if suite_thresholds:
        config["thresholds"] = suite_thresholds
    suite.makefile(".yaml", queryeval=dump(config))
    case = {"id": "a", "question": "how many", "gold": "SELECT count(*) FROM t",
            "predicted": "SELECT count(*) FROM t"}
    if case_thresholds:
        case["thresholds"] = case_thresholds
    suite.makefile(".yaml", test_q=dump({"kind": "sql", "datasource": "db", "cases": [case]}))


def test_a_latency_threshold_beside_an_inline_prediction_is_a_located_usage_error(suite):
    """An inline prediction is never requested: a latency bound written beside it can never
    pass, so the case is refused when its file is read, at the threshold's line."""
    from tests.support import read_report

    _latency_suite(suite, case_thresholds={"execution_accuracy": 1,
                                           "prediction_seconds": {"max": 2}})
    result = suite.runpytest("--queryeval-json=r.json")
    result.assert_outcomes(failed=1)
    case = read_report(suite.path / "r.json").by_id["a"]
    assert case["outcome"] == "error"
    line = next(n for n, text in enumerate(
        (suite.path / "test_q.yaml").read_text().splitlines(), 1) if "prediction_seconds" in text)
    assert case["error"].startswith(
        f"test_q.yaml:{line}: cases[0].thresholds.prediction_seconds: an inline prediction "
        "(predicted: in the case file) has no latency to measure")


def test_an_inherited_latency_threshold_on_an_inline_prediction_says_why_it_fails(suite):
    """A suite-wide latency bound also reaches inline cases: the failure names the reason
    instead of a bare ``-`` and FAIL."""
    from tests.support import read_report

    _latency_suite(suite, suite_thresholds={"prediction_seconds": {"max": 2}})
    result = suite.runpytest("--queryeval-json=r.json")
    result.assert_outcomes(failed=1)
    case = read_report(suite.path / "r.json").by_id["a"]
    assert (case["outcome"], case["failed_metrics"]) == ("failed", ["prediction_seconds"])
    assert case["reason"] == ("prediction_seconds not measured: the prediction is inline "
                              "(written in the case file), so it has no latency to bound")
    result.stdout.fnmatch_lines(["reason:    prediction_seconds not measured: the prediction "
                                 "is inline*"])
