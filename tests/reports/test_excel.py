"""The Excel report, read back with openpyxl; expected values derived from the cases here."""

from __future__ import annotations

import statistics
import sys
import zipfile

import pytest

from pytest_queryeval.errors import MissingDependency
from pytest_queryeval.report.excel import write_xlsx

openpyxl = pytest.importorskip("openpyxl")


@pytest.fixture
def book(tmp_path, current):
    path = write_xlsx(current, tmp_path / "out" / "report.xlsx")
    return path, openpyxl.load_workbook(path)


def _table(ws):
    """Rows as dicts keyed by the header row."""
    rows = list(ws.iter_rows(values_only=True))
    header = rows[0]
    return [dict(zip(header, r, strict=True)) for r in rows[1:] if any(v is not None for v in r)]


def _members(current, kind, difficulty):
    return [c for c in current["cases"] if c["kind"] == kind and c["difficulty"] == difficulty]


def test_sheets(book):
    _, wb = book
    assert wb.sheetnames == ["Outcome", "Summary", "All metrics", "Details", "SDMX overview", "Denominators",
                             "Run"]


def test_summary_values(book, current):
    _, wb = book
    rows = {(r["Kind"], r["Difficulty"]): r for r in _table(wb["Summary"])}
    easy = _members(current, "sql", "easy")
    judged = [c for c in easy if c["outcome"] in ("passed", "failed", "error", "xpassed")]
    passed = [c for c in judged if c["outcome"] in ("passed", "xpassed")]
    row = rows[("sql", "easy")]
    assert row["Number of samples"] == len(easy) == 3
    assert row["Percent correct"] == pytest.approx(len(passed) / len(judged)) == 2 / 3
    assert row["execution_accuracy"] == pytest.approx(2 / 3)
    # soft_f1 is neither gated nor a threshold: on the All metrics sheet, not the Summary
    assert "soft_f1" not in row
    every = {(r["Kind"], r["Difficulty"]): r for r in _table(wb["All metrics"])}
    assert every[("sql", "easy")]["soft_f1"] == pytest.approx((1.0 + 1.0 + 0.5) / 3)
    assert every[("sql", "easy")]["execution_accuracy"] == pytest.approx(2 / 3)
    secs = [c["metrics"]["prediction_seconds"] for c in easy]
    assert row["Mean latency (s)"] == pytest.approx(statistics.fmean(secs))
    assert row["Latency std (s)"] == pytest.approx(statistics.pstdev(secs))
    assert "prediction_seconds" not in row  # shown as the latency columns instead
    # The hard sql case errored without metrics: 0% correct, no latency.
    hard = rows[("sql", "hard")]
    assert hard["Number of samples"] == 1
    assert hard["Percent correct"] == 0
    assert hard["Mean latency (s)"] is None
    # Metrics of other kinds are blank, not 0.
    assert rows[("json", "easy")]["execution_accuracy"] is None
    assert rows[("json", "easy")]["json_similarity"] == pytest.approx((0.99 + 0.91) / 2)
    # json/medium: nested-sort failed, date-range xfailed (not judged) -> 0 %
    assert rows[("json", "medium")]["Percent correct"] == 0
    assert rows[("sdmx", "unknown")]["Number of samples"] == 1
    # totals after the kind x difficulty rows
    assert rows[("sql", "all")]["Number of samples"] == 7
    overall = rows[("all", "all")]
    assert overall["Number of samples"] == 20
    judged_all = [c for c in current["cases"] if c["outcome"] in ("passed", "failed", "error")]
    assert overall["Percent correct"] == pytest.approx(
        sum(c["outcome"] == "passed" for c in judged_all) / len(judged_all))
    keys = list(rows)
    assert keys.index(("sql", "easy")) < keys.index(("sql", "medium")) < keys.index(
        ("sql", "hard")) < keys.index(("sql", "extra"))
    assert keys[-1] == ("all", "all")


def test_summary_leads_with_what_decides(tmp_path, current, baseline):
    """Gated metrics, pass rate, regressions and fixed, latency, tokens and cost come first;
    the Summary has no other metric column (issue 24 item 5)."""
    from pytest_queryeval.report.baseline import compare

    for case in current["cases"]:
        if case.get("metrics"):
            case["metrics"].update({"prompt_tokens": 900, "completion_tokens": 40,
                                    "cost_usd": 0.002})
    from pytest_queryeval.conclude import aggregates_of

    current["aggregates"] = aggregates_of(current["cases"])
    cmp = compare(current, baseline, 0.1)
    current["baseline"] = cmp.to_dict()
    wb = openpyxl.load_workbook(write_xlsx(current, tmp_path / "r.xlsx"))
    header = [c.value for c in wb["Summary"][1]]
    assert header == ["Kind", "Difficulty", "Number of samples", "Percent correct",
                      "Regressions", "Fixed", "execution_accuracy", "json_similarity",
                      "macro_f1", "Mean latency (s)", "Latency std (s)", "Prompt tokens",
                      "Completion tokens", "Cost (USD)"]
    rows = {(r["Kind"], r["Difficulty"]): r for r in _table(wb["Summary"])}
    assert rows[("all", "all")]["Regressions"] == len(cmp.regressions) == 2
    assert rows[("all", "all")]["Fixed"] == len(cmp.fixes)
    assert sum(rows[k]["Regressions"] for k in rows if "all" not in k) == 2
    every = [c.value for c in wb["All metrics"][1]]
    assert {"soft_f1", "exact_set_match", "macro_precision"} <= set(every)
    details = [c.value for c in wb["Details"][1]]
    first = details.index("Failed metrics") + 1
    assert details[first:first + 7] == [
        "execution_accuracy", "json_similarity", "macro_f1", "completion_tokens", "cost_usd",
        "prediction_seconds", "prompt_tokens"]


def test_summary_number_formats(book):
    _, wb = book
    ws = wb["Summary"]
    header = [c.value for c in ws[1]]
    col = header.index("Percent correct") + 1
    assert ws.cell(row=2, column=col).number_format == "0.0%"


def test_charts_exist(book):
    path, wb = book
    charts = wb["Summary"]._charts
    # percent correct, samples, latency, and one per kind (4 kinds)
    assert len(charts) == 7
    with zipfile.ZipFile(path) as zf:
        xml = [zf.read(n).decode() for n in zf.namelist() if n.startswith("xl/charts/chart")]
    assert len(xml) == 7
    text = "\n".join(xml)
    for title in ("Percent correct by kind and difficulty", "Number of samples",
                  "Mean prediction latency", "sql: mean metrics by difficulty",
                  "sdmx: mean metrics by difficulty"):
        assert title in text
    assert "c:errBars" in text  # latency std as error bars
    assert "Summary!$D$2:$D$" in text  # percent correct column


def test_details(book, current):
    _, wb = book
    rows = _table(wb["Details"])
    assert [r["ID"] for r in rows] == [c["id"] for c in current["cases"]]
    by_id = {r["ID"]: r for r in rows}
    genre = by_id["genre-top"]
    assert genre["Outcome"] == "failed"
    assert genre["Failed metrics"] == "execution_accuracy"
    assert genre["soft_f1"] == pytest.approx(0.8)
    assert genre["Tags"] == "aggregation"
    assert genre["Predicted"].startswith("SELECT GenreId")
    err = by_id["customer-countries"]
    assert err["Error"] == "prediction error: HTTP 503 from predictor"
    assert err["execution_accuracy"] is None
    assert by_id["filter-year"]["Gold"] == '{"filter": {"year": 2023}, "measure": "sales"}'
    assert by_id["meter-points"]["Reason"] == "no meter in this model"
    # every metric in the report has a column
    names = {m for c in current["cases"] for m in c["metrics"]}
    assert names <= set(rows[0])


def test_no_formula_injection(book):
    path, wb = book
    cell = next(r for r in _table(wb["Details"]) if r["ID"] == "tracks-long")["Predicted"]
    assert cell.startswith('=HYPERLINK(')
    with zipfile.ZipFile(path) as zf:
        sheet = zf.read("xl/worksheets/sheet2.xml").decode()
    assert "<f>" not in sheet  # stored as a string, not a formula


def test_sdmx_overview(book, current):
    _, wb = book
    rows = _table(wb["SDMX overview"])
    sdmx = [c for c in current["cases"] if c["kind"] == "sdmx"]
    assert [r["ID"] for r in rows] == [c["id"] for c in sdmx] + ["mean"]
    gdp = rows[1]
    assert gdp["macro recall"] == pytest.approx(0.75)
    assert gdp["macro precision"] == pytest.approx(0.835)
    details = gdp["indicator selection details"]
    assert details == sdmx[1]["details"]["sdmx_details"]
    assert "False Positives [1]\n  * GDP_CONST: gross domestic product constant prices" in details
    assert rows[2]["indicator selection details"] is None  # no details recorded
    assert rows[-1]["macro recall"] == pytest.approx(
        statistics.fmean(c["metrics"]["macro_recall"] for c in sdmx))


def test_no_sdmx_sheet_without_sdmx_cases(tmp_path, current):
    current["cases"] = [c for c in current["cases"] if c["kind"] != "sdmx"]
    wb = openpyxl.load_workbook(write_xlsx(current, tmp_path / "r.xlsx"))
    assert "SDMX overview" not in wb.sheetnames


def test_run_sheet(book, current):
    _, wb = book
    values = {r[0]: r[1] for r in wb["Run"].iter_rows(values_only=True) if r[0]}
    assert values["predictions"] == "predictions/model-v2.jsonl"
    assert values["settings: json"] == '{"alpha": 0.5, "beta": 0.5, "model": "all-MiniLM-L6-v2"}'
    gates = [r for r in wb["Run"].iter_rows(values_only=True) if r[0] == "pass_rate"]
    assert gates[0][6] == "FAILED"


def test_empty_report(tmp_path):
    report = {"version": 1, "run": {}, "cases": [], "aggregates": {}, "gates": []}
    wb = openpyxl.load_workbook(write_xlsx(report, tmp_path / "empty.xlsx"))
    assert wb.sheetnames == ["Outcome", "Summary", "All metrics", "Details", "Run"]


def test_missing_xlsxwriter(tmp_path, current, monkeypatch):
    monkeypatch.setitem(sys.modules, "xlsxwriter", None)
    with pytest.raises(MissingDependency, match=r"pip install pytest-queryeval\[excel\]"):
        write_xlsx(current, tmp_path / "r.xlsx")
    assert not (tmp_path / "r.xlsx").exists()


def test_awkward_strings_round_trip(tmp_path, current):
    case = current["cases"][0]
    case["question"] = "ctl\x01\x0bchars, =1+1, @SUM(A1), http://x.example, +1, -2 émoji 🙂"
    case["predicted"] = "x" * 40000
    wb = openpyxl.load_workbook(write_xlsx(current, tmp_path / "r.xlsx"))
    row = _table(wb["Details"])[0]
    assert row["Question"].startswith("ctl")
    assert "=1+1, @SUM(A1), http://x.example, +1, -2 émoji 🙂" in row["Question"]
    assert len(row["Predicted"]) == 32767
    assert row["Predicted"].endswith("… [truncated]")


def test_sdmx_overview_mean_skips_a_null_metric(tmp_path, current):
    """A report read back (merge, --queryeval-resume) may hold a metric as null: the mean is
    over the numbers, not a TypeError that loses the workbook."""
    sdmx = [c for c in current["cases"] if c["kind"] == "sdmx"]
    sdmx[0]["metrics"]["macro_recall"] = None
    wb = openpyxl.load_workbook(write_xlsx(current, tmp_path / "r.xlsx"))
    rows = _table(wb["SDMX overview"])
    assert rows[-1]["macro recall"] == pytest.approx(
        statistics.fmean(c["metrics"]["macro_recall"] for c in sdmx[1:]))
