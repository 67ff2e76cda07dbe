"""Tokens, cost and latency: usage reported by every kind of prediction source, priced with
``pricing:``, bounded by thresholds and gates, summed in the aggregates and shown next to
accuracy in every report."""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET

import pytest

from tests.fixtures.openai_standin import KEY, MODEL
from tests.sdmx_cases import GDP, MEX, dump, sdmx_case, selection
from tests.support import run_report, write_suite

PERFECT = {"gdp": selection(GDP), "mex": selection(MEX)}
PRICES = {"big": {"input_per_mtok": 3, "output_per_mtok": 15},
          "small": {"input_per_mtok": 0.5, "output_per_mtok": 1.5}}


@pytest.fixture
def sdmx_suite(pytester):
    write_suite(pytester.path)
    pytester.makefile(".yaml", test_cases=dump({
        "kind": "sdmx", "thresholds": {"macro_precision": 1.0},
        "cases": [sdmx_case("gdp", selection(GDP)), sdmx_case("mex", selection(MEX))]}))
    return pytester


def _run(pytester, *args):
    result, report = run_report(pytester, *args)
    return result, report, report.by_id


def cost(usage, price):
    return (usage["prompt_tokens"] * price["input_per_mtok"]
            + usage["completion_tokens"] * price["output_per_mtok"]) / 1e6


def test_file_rows_report_usage_priced_per_model_and_every_report_shows_it(sdmx_suite):
    rows = [
        {"id": "gdp", "predicted": PERFECT["gdp"], "latency": 1.5, "model": "big",
         "usage": {"prompt_tokens": 1200, "completion_tokens": 80}},
        {"id": "mex", "predicted": PERFECT["mex"], "latency": 0.5,
         "prompt_tokens": 1000, "completion_tokens": 20},  # no model: the suite's label
    ]
    (sdmx_suite.path / "preds.jsonl").write_text("\n".join(map(json.dumps, rows)) + "\n")
    sdmx_suite.makefile(".yaml", queryeval=dump({
        "predictions": {"source": "file", "path": "preds.jsonl"}, "model": "small",
        "pricing": PRICES}))
    result, report, cases = _run(sdmx_suite, "--junitxml=j.xml", "--queryeval-markdown=r.md",
                                 "--queryeval-html=r.html", "--queryeval-xlsx=r.xlsx")
    result.assert_outcomes(passed=2)
    gdp_cost = cost({"prompt_tokens": 1200, "completion_tokens": 80}, PRICES["big"])
    mex_cost = cost({"prompt_tokens": 1000, "completion_tokens": 20}, PRICES["small"])
    assert cases["gdp"]["metrics"]["cost_usd"] == pytest.approx(gdp_cost)
    assert cases["mex"]["metrics"]["cost_usd"] == pytest.approx(mex_cost)
    assert cases["gdp"]["details"]["priced_as"] == "big"
    assert cases["mex"]["details"]["priced_as"] == "small"
    overall = report["aggregates"]["overall"]["metrics"]
    assert overall["cost_usd"]["total"] == pytest.approx(gdp_cost + mex_cost)
    assert overall["cost_usd"]["mean"] == pytest.approx((gdp_cost + mex_cost) / 2)
    assert overall["prompt_tokens"]["total"] == 2200
    assert overall["prediction_seconds"]["total"] == 2.0
    total = f"${gdp_cost + mex_cost:.6f}"
    # terminal: latency and spend beside the pass rate, per kind and difficulty, and in total
    result.stdout.fnmatch_lines([
        "sdmx*difficulty*cases*pass*P*R*F1*latency*tokens out*cost",
        f"*unknown*2*100.0%*1.000*1.000*1.000*1.00s*100*{total}",
        f"spent: 2,200 prompt + 100 completion tokens, {total} (mean *); latency mean 1.00s, "
        "total 2.00s"])
    md = (sdmx_suite.path / "r.md").read_text()
    assert "| latency (s) | prompt tokens | completion tokens | cost (USD) |" in md
    assert f"| 2,200 | 100 | {total} |" in md
    html = (sdmx_suite.path / "r.html").read_text()
    assert '<th class="n spend">cost (USD)</th>' in html and f"<td class=n>{total}</td>" in html
    props = {p.get("name"): p.get("value") for p in ET.parse(sdmx_suite.path / "j.xml").iter("property")}
    assert float(props["queryeval.total.cost_usd"]) == pytest.approx(gdp_cost + mex_cost)
    assert props["queryeval.sdmx.unknown.pass_rate"] == "1.0"
    assert props["queryeval.sdmx.unknown.mean.prediction_seconds"] == "1.0"
    assert float(props["queryeval.sdmx.unknown.total.cost_usd"]) == pytest.approx(
        gdp_cost + mex_cost, rel=1e-5)
    openpyxl = pytest.importorskip("openpyxl")
    ws = openpyxl.load_workbook(sdmx_suite.path / "r.xlsx")["Summary"]
    header = [c.value for c in ws[1]]
    assert header[-5:] == ["Mean latency (s)", "Latency std (s)", "Prompt tokens",
                           "Completion tokens", "Cost (USD)"]
    assert "cost_usd" not in header  # not a mean among the accuracy metrics
    assert ws.cell(2, len(header)).value == pytest.approx(gdp_cost + mex_cost)


def test_command_python_and_http_sources_report_usage(sdmx_suite, openai_standin,
                                                      monkeypatch):
    sdmx_suite.makepyfile(cmd_model=f"""
        import json, sys
        case = json.load(sys.stdin)
        print(json.dumps({{"predicted": {json.dumps(PERFECT)!s}[case["id"]], "model": "big",
                           "usage": {{"prompt_tokens": 10, "completion_tokens": 4}}}}))
    """)
    sdmx_suite.makefile(".yaml", queryeval=dump({
        "predictions": {"source": "command", "command": [sys.executable, "cmd_model.py"]},
        "pricing": PRICES}))
    _, _, cases = _run(sdmx_suite)
    assert cases["gdp"]["metrics"]["completion_tokens"] == 4
    assert cases["gdp"]["metrics"]["cost_usd"] == pytest.approx(cost(
        {"prompt_tokens": 10, "completion_tokens": 4}, PRICES["big"]))

    sdmx_suite.makepyfile(py_model=f"""
        from pytest_queryeval.predict import Prediction
        def predict(case):
            return Prediction({json.dumps(PERFECT)!s}[case["id"]], model="small",
                              usage={{"prompt_tokens": 7, "completion_tokens": 3, "cost_usd": 0.25}})
    """)
    sdmx_suite.makefile(".yaml", queryeval=dump({
        "predictions": {"source": "python", "function": "py_model:predict"}, "pricing": PRICES}))
    result, _, cases = _run(sdmx_suite)
    result.assert_outcomes(passed=2)
    # a cost the source reports is the bill: pricing: does not replace it
    assert cases["mex"]["metrics"]["cost_usd"] == 0.25
    assert cases["mex"]["metrics"]["prompt_tokens"] == 7

    # an OpenAI-shaped HTTP response: usage at the top level, read without configuration
    monkeypatch.setenv("QE_TEST_KEY", KEY)
    openai_standin.answers = {f"question {k}": json.dumps(v) for k, v in PERFECT.items()}
    sdmx_suite.makefile(".yaml", queryeval=dump({
        "predictions": {"source": "http", "url": openai_standin.base_url + "/chat/completions",
                        "headers": {"Authorization": "Bearer ${QE_TEST_KEY}"},
                        "body": {"model": MODEL, "messages": [
                            {"role": "user", "content": "Question: {question}"}]},
                        "response_path": "choices.0.message.content"},
        "pricing": {MODEL: PRICES["small"]}}))
    result, _, cases = _run(sdmx_suite)
    result.assert_outcomes(passed=2)
    sent = openai_standin.requests[0]["messages"][0]["content"]
    reply = json.dumps(PERFECT[sent.rsplit(" ", 1)[-1]])
    case = cases[sent.rsplit(" ", 1)[-1]]
    assert case["metrics"]["completion_tokens"] == len(reply) // 4
    assert case["metrics"]["prompt_tokens"] == len(sent) // 4
    assert case["details"]["priced_as"] == MODEL


def test_thresholds_and_gates_bound_cost_latency_and_tokens(sdmx_suite):
    rows = [{"id": "gdp", "predicted": PERFECT["gdp"], "latency": 2.0,
             "usage": {"prompt_tokens": 100_000, "completion_tokens": 1000}},
            {"id": "mex", "predicted": PERFECT["mex"], "latency": 1.0,
             "usage": {"prompt_tokens": 1000, "completion_tokens": 10}}]
    (sdmx_suite.path / "preds.jsonl").write_text("\n".join(map(json.dumps, rows)) + "\n")
    sdmx_suite.makefile(".yaml", queryeval=dump({
        "predictions": {"source": "file", "path": "preds.jsonl"}, "model": "big",
        "pricing": PRICES,
        "thresholds": {"cost_usd": {"max": 0.1}, "completion_tokens": {"max": 500}},
        "gates": {"budget": {"metric": "cost_usd", "total_max": 0.25},
                  "prediction_seconds": {"max": 1.2},
                  "prompt_tokens": {"max": 1_000_000}}}))
    result, report, cases = _run(sdmx_suite)
    # gdp costs 0.3 + 0.015 = $0.315 and answers with 1,000 tokens: over both bounds
    assert {i: c["outcome"] for i, c in cases.items()} == {"gdp": "failed", "mex": "passed"}
    assert sorted(cases["gdp"]["failed_metrics"]) == ["completion_tokens", "cost_usd"]
    result.stdout.fnmatch_lines(["cost_usd *$0.3150*<= 0.1*FAIL",
                                 "*gdp ?sdmx/unknown? failed: cost_usd=$0.3150, completion_tokens=1,000"])
    gates = {g["name"]: g for g in report["gates"]}
    assert (gates["budget"]["stat"], gates["budget"]["op"], gates["budget"]["passed"]) == \
        ("total", "<=", False)
    assert gates["budget"]["value"] == pytest.approx(0.315 + 0.00315)
    assert (gates["prediction_seconds"]["value"], gates["prediction_seconds"]["passed"]) == \
        (1.5, False)
    assert gates["prompt_tokens"]["passed"] is True
    result.stdout.fnmatch_lines([
        "gate FAIL: total cost_usd = 0.318* (required <= 0.25, 2 cases)",
        "gate FAIL: mean prediction_seconds = 1.5000 (required <= 1.2, 2 cases)"])
    assert result.ret == 1


@pytest.mark.parametrize(("config", "message"), [
    ({"pricing": {"big": {"input_per_mtok": -1, "output_per_mtok": 2}}},
     "queryeval.yaml:*: pricing.big.input_per_mtok: must be a non-negative number of USD per "
     "million tokens, not -1"),
    ({"pricing": {"big": {"input_per_mtok": 1}}},
     "queryeval.yaml:*: pricing.big.output_per_mtok: missing*"),
    ({"pricing": {"big": {"input": 1, "output_per_mtok": 1}}},
     "queryeval.yaml:*: pricing.big.input: unknown key (allowed: input_per_mtok, output_per_mtok)"),
    ({"gates": {"cost_usd": {"max": 1, "total_max": 2}}},
     "queryeval.yaml:*: gates.cost_usd: use {mean: x}*(one of them)*"),
    ({"gates": {"cost_usd": {"min": 1}}},
     "queryeval.yaml:*: gates.cost_usd.min: a metric gate bounds its mean or total*"),
])
def test_bad_pricing_and_gates_are_usage_errors(sdmx_suite, config, message):
    sdmx_suite.makefile(".yaml", queryeval=dump({
        "predictions": {"source": "file", "path": "preds.jsonl"}, **config}))
    result = sdmx_suite.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{message}*"])


def test_repeats_sum_what_every_run_cost(sdmx_suite):
    sdmx_suite.makepyfile(py_model=f"""
        from pytest_queryeval.predict import Prediction
        def predict(case):
            return Prediction({json.dumps(PERFECT)!s}[case["id"]],
                              usage={{"prompt_tokens": 100, "completion_tokens": 10}})
    """)
    sdmx_suite.makefile(".yaml", queryeval=dump({
        "predictions": {"source": "python", "function": "py_model:predict"}, "model": "small",
        "pricing": PRICES}))
    _, _, cases = _run(sdmx_suite, "--queryeval-repeat=3")
    metrics = cases["gdp"]["metrics"]
    assert (metrics["prompt_tokens"], metrics["completion_tokens"]) == (300, 30)
    assert metrics["cost_usd"] == pytest.approx(3 * cost(
        {"prompt_tokens": 100, "completion_tokens": 10}, PRICES["small"]))


def test_worse_is_higher_for_cost_in_the_baseline(sdmx_suite):
    from pytest_queryeval.report.baseline import MetricDelta

    assert MetricDelta("cost_usd", "overall", "", 0.10, 0.30, 2, None).worsening == \
        pytest.approx(0.20)
    assert MetricDelta("macro_f1", "overall", "", 0.9, 0.7, 2, None).worsening == \
        pytest.approx(0.20)
