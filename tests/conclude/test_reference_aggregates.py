"""TEXT2SPARQL / GERBIL session figures in the reports, and the order keys' file:line errors."""

from __future__ import annotations

import pytest

from tests.sdmx_cases import dump
from tests.support import read_report


def _res(*values: str) -> dict:
    return {"head": {"vars": ["a"]}, "results": {"bindings": [
        {"a": {"type": "uri", "value": "http://e/" + v}} for v in values]}}


def _case(cid: str, gold: list[str], pred: list[str], **extra: object) -> dict:
    return {"id": cid, "gold": "SELECT ?a WHERE { ?a ?p ?o }", "predicted": "SELECT ?a WHERE {}",
            "gold_result": _res(*gold), "predicted_result": _res(*pred), **extra}


def test_session_figures_follow_the_references(suite) -> None:
    suite.makefile(".yaml", queryeval="record_only: true\n")  # the figures, not a gate
    suite.makefile(".yaml", test_t2s=dump({"kind": "sparql", "cases": [
        _case("q1", ["1"], ["1", "2"]),
        _case("q2", ["1", "2", "3", "4"], ["1"]),
        _case("q3", ["1", "2"], [], features=["RESULT_ORDER_MATTERS"]),
    ]}))
    result = suite.runpytest("--queryeval-json=r.json", "--queryeval-markdown=r.md",
                             "--queryeval-html=r.html", "--queryeval-xlsx=r.xlsx")
    result.assert_outcomes(passed=3)
    agg = read_report(suite.path / "r.json")["aggregates"]
    g = agg["gerbil"]
    # QALD rule: q3's empty answer is P = 1, R = 0; Macro F1 QALD = F1 of the macro P and R
    p, r = (0.5 + 1.0 + 1.0) / 3, (1.0 + 0.25 + 0.0) / 3
    assert g["macro_f1_qald"] == 2 * p * r / (p + r)
    assert g["macro_precision"] == (0.5 + 1.0 + 0.0) / 3  # the plain rule: empty answer P = 0
    assert (g["tp"], g["fp"], g["fn"]) == (2, 1, 5)
    assert g["micro_f1"] == 2 * (2 / 3) * (2 / 7) / (2 / 3 + 2 / 7)
    t = agg["text2sparql"]
    f1s = [2 * 0.5 * 1.0 / 1.5, 2 * 1.0 * 0.25 / 1.25]
    assert t["set_f1"] == (f1s[0] + f1s[1] + 0.0) / 3
    assert t["ndcg"] == 0.0
    assert t["set_f1_ndcg"] == (f1s[0] + f1s[1] + 0.0 + 0.0) / 4  # + the mean ndcg, once more
    out = result.stdout.str()
    assert "GERBIL QA (FMeasureCalculator), 3 questions: macro_f1_qald=" in out
    assert f"set_f1_ndcg={t['set_f1_ndcg']:.3f}" in out
    md = (suite.path / "r.md").read_text()
    assert f"| `macro_f1_qald` | Macro F1 QALD | {g['macro_f1_qald']:.4f} |" in md
    assert "Reference aggregates" in (suite.path / "r.html").read_text()
    openpyxl = pytest.importorskip("openpyxl")
    sheet = openpyxl.load_workbook(suite.path / "r.xlsx")["Reference aggregates"]
    cells = {row[2]: row[4] for row in sheet.iter_rows(min_row=2, values_only=True)}
    # xlsx keeps 15 significant digits
    assert cells["macro_f1_qald"] == pytest.approx(g["macro_f1_qald"], rel=1e-14)
    assert cells["set_f1_ndcg"] == pytest.approx(t["set_f1_ndcg"], rel=1e-14)


def test_bad_features_are_reported_with_file_and_line_and_the_rest_runs(suite) -> None:
    suite.makefile(".yaml", test_bad=dump({"kind": "sparql", "cases": [
        _case("ok", ["1"], ["1"]),
        _case("bad", ["1"], ["1"], features=["RESULT_ORDER_MATTERS", 7]),
    ]}))
    result = suite.runpytest("-rf")
    result.assert_outcomes(passed=1, failed=1)
    lines = (suite.path / "test_bad.yaml").read_text().splitlines()
    line = next(i for i, text in enumerate(lines, 1) if text.strip() == "7")
    assert f"error: test_bad.yaml:{line}: cases[1].features[1]: must be a feature name" in (
        result.stdout.str())


def test_a_null_measure_read_back_counts_zero_as_in_the_reference(suite) -> None:
    """Issue 48 item 5: a report read back (merge, resume) can hold a measure as null (a NaN
    written to JSON). The TEXT2SPARQL totals count it 0, as the reference scores a question it
    has no answer for, instead of crashing on it."""
    import json

    from pytest_queryeval.conclude.cli import main as queryeval

    suite.makefile(".yaml", queryeval="record_only: true\n")
    suite.makefile(".yaml", test_t2s=dump({"kind": "sparql", "cases": [
        _case("q1", ["1"], ["1", "2"]),
        _case("q2", ["1", "2", "3", "4"], ["1"]),
        _case("q3", ["1", "2"], ["1", "2"], features=["RESULT_ORDER_MATTERS"]),
    ]}))
    suite.runpytest("--queryeval-json=r.json").assert_outcomes(passed=3)
    data = json.loads((suite.path / "r.json").read_text())
    by_id = {rec["id"]: rec for rec in data["cases"]}
    assert by_id["q3"]["metrics"]["ndcg"] == 1.0
    by_id["q2"]["metrics"]["set_f1"] = None
    by_id["q3"]["metrics"]["ndcg"] = None
    (suite.path / "r.json").write_text(json.dumps(data))
    assert queryeval(["merge", str(suite.path / "r.json"),
                      f"--queryeval-json={suite.path / 'm.json'}"]) == 0
    t = read_report(suite.path / "m.json")["aggregates"]["text2sparql"]
    f1 = 2 * 0.5 * 1.0 / 1.5
    assert t["set_f1"] == (f1 + 0.0 + 1.0) / 3  # q2's null set_f1 is 0
    assert t["ndcg"] == 0.0  # q3's null ndcg is 0
    assert t["set_f1_ndcg"] == (f1 + 0.0 + 0.0 + 0.0) / 4
