"""Through the plugin: the report options produce files these writers made, and the baseline
gate fails the session on a regression (a run, an update of the baseline, a worse run)."""

from __future__ import annotations

import json

import pytest
from tests.support import read_report

openpyxl = pytest.importorskip("openpyxl")


def _selection(*values):
    return {"indicator_selection": [{"dataset_id": "IMF.RES:WEO", "dimensions": [
        {"dimension_name": "INDICATOR", "values": [{"id": i, "name": n} for i, n in values]}]}]}


GDP = [("NGDP", "GDP"), ("NGDPPC", "GDP per capita")]
EXTRA = [*GDP, ("NGDP_R", "GDP constant")]


def _suite(pytester, worse):
    cases = []
    for i in range(4):
        predicted = EXTRA if i == 0 or (worse and i == 1) else GDP
        cases.append({"id": f"c{i}", "difficulty": "easy" if i < 2 else "hard",
                      "conversation": [{"role": "user", "content": f"question <b>{i}</b> | x",
                                        "target": _selection(*GDP),
                                        "predicted": _selection(*predicted)}]})
    pytester.makefile(".yaml", test_gdp=json.dumps(
        {"kind": "sdmx", "thresholds": {"macro_precision": 0.9}, "cases": cases}))


def test_reports_and_baseline_gate(suite):
    _suite(suite, worse=False)
    first = suite.runpytest("--queryeval-update-baseline", "-p", "no:cacheprovider")
    first.assert_outcomes(passed=3, failed=1)
    baseline = read_report(suite.path / "queryeval-baseline.json")
    assert [c["outcome"] for c in baseline["cases"]] == ["failed", "passed", "passed", "passed"]

    _suite(suite, worse=True)
    result = suite.runpytest("--queryeval-baseline=queryeval-baseline.json",
                             "--queryeval-max-drop=macro_precision=0.05",
                             "--queryeval-xlsx=out/r.xlsx", "--queryeval-html=out/r.html",
                             "--queryeval-markdown=out/r.md", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, failed=2)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines([
        "baseline: 4 cases in both runs",
        "*macro_precision*0.917*0.833*▼*-0.083*0.05*FAIL",
        "pass → fail: 1",
        "  c1 [[]sdmx/easy] passed → failed  (macro_precision)",
        "baseline comparison: FAILED: macro_precision -0.083 > max drop 0.05 (overall)",
    ])
    assert "Traceback" not in result.stdout.str()

    wb = openpyxl.load_workbook(suite.path / "out" / "r.xlsx")
    assert wb.sheetnames == ["Outcome", "Summary", "All metrics", "Details", "SDMX overview", "Denominators",
                             "Run"]
    rows = list(wb["Summary"].iter_rows(values_only=True))
    easy = dict(zip(rows[0], next(r for r in rows if r[:2] == ("sdmx", "easy")), strict=True))
    assert easy["Number of samples"] == 2
    assert easy["Percent correct"] == 0
    sdmx = list(wb["SDMX overview"].iter_rows(values_only=True))
    assert "False Positives [1]\n  * NGDP_R: GDP constant" in sdmx[1][8]

    page = (suite.path / "out" / "r.html").read_text()
    assert "question &lt;b&gt;1&lt;/b&gt; | x" in page
    assert '<ul id="regressions"><li><code>c1</code>' in page

    md = (suite.path / "out" / "r.md").read_text()
    # every report heads with the summary's last line (issue 43 item 3)
    line = ("queryeval: FAILED: 1 regression (c1); 1 failed case (c0); baseline drop: "
            "macro_precision -0.083 > max drop 0.05 (overall)")
    assert result.stdout.lines[result.stdout.lines.index(line) + 1].startswith("=")
    assert md.startswith("## ❌ " + line.replace("_", r"\_").replace(">", "&gt;") + "\n\n"
                         "2 of 4 judged cases passed (50.0 %) · baseline comparison: FAILED: "
                         r"macro\_precision -0.083 &gt; max drop 0.05 (overall)")
    assert f'data-outcome="failed">{line.replace(">", "&gt;")}</p>' in page
    assert r"**Question:** question &lt;b&gt;1&lt;/b&gt; \| x" in md
