"""End to end through pytest: the seed's YAML file, unchanged, collected and scored."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support import read_report

from .seed import GDP, GDP_CONST, GDPPC, LP, MEX, MEXICO_YAML

CASE_ID = "c48d7624-d376-48ca-b2d8-386999befb45"
MEXICO_PRED = {"IMF.RES:WEO": {"INDICATOR": {"LP": LP["name"]}, "COUNTRY": {"MEX": "Mexico"}}}


def _write_predictions(pytester: pytest.Pytester, preds: dict[str, Any]) -> None:
    lines = [json.dumps({"id": k, "predicted": v}) for k, v in preds.items()]
    pytester.path.joinpath("preds.jsonl").write_text("\n".join(lines) + "\n")


def _cases(pytester: pytest.Pytester) -> dict[str, dict[str, Any]]:
    return read_report(pytester.path / "out.json").by_id


def test_seed_yaml_unchanged_passes(pytester: pytest.Pytester):
    pytester.path.joinpath("test_mexico_population.yaml").write_text(MEXICO_YAML)
    pytester.makefile(".yaml", queryeval="predictions: {source: file, path: preds.jsonl}\n"
                                         "thresholds: {macro_f1: 1.0}\n")
    _write_predictions(pytester, {CASE_ID: MEXICO_PRED})
    result = pytester.runpytest("--queryeval-json=out.json", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    case = _cases(pytester)[CASE_ID]
    assert case["kind"] == "sdmx"
    assert case["tags"] == ["imf", "weo"]
    assert case["metrics"]["macro_precision"] == 1.0
    assert case["metrics"]["macro_recall"] == 1.0
    assert case["metrics"]["precision[COUNTRY]"] == 1.0
    assert case["details"]["sdmx_details"].startswith("INDICATOR\n[recall: 1.00, precision: 1.00]")


def test_seed_tags_are_markers(pytester: pytest.Pytester):
    pytester.path.joinpath("test_mexico_population.yaml").write_text(MEXICO_YAML)
    pytester.makefile(".yaml", queryeval="predictions: {source: file, path: preds.jsonl}\n")
    _write_predictions(pytester, {CASE_ID: MEXICO_PRED})
    pytester.runpytest("-m", "weo", "-p", "no:cacheprovider").assert_outcomes(passed=1)
    result = pytester.runpytest("-m", "not imf", "-p", "no:cacheprovider")
    result.assert_outcomes()
    assert "1 deselected" in result.stdout.str()


def test_seed_worked_example_failure_message(pytester: pytest.Pytester):
    """The seed's numbers (P 0.67, R 1.0) and its cell format in the failure report."""
    pytester.path.joinpath("test_mexico_population.yaml").write_text(MEXICO_YAML)
    pytester.makefile(".yaml", test_gdp="""\
        id: gdp-worked-example
        name: seed_worked_example
        tags: [imf]
        comments: ''
        conversation:
        - role: user
          content: GDP and GDP per capita
          target:
            indicator_selection:
            - dataset_id: IMF.RES:WEO
              dimensions:
              - dimension_name: INDICATOR
                values:
                - {id: GDP, name: gross domestic product}
                - {id: GDPPC, name: GDP per capita}
        """)
    pytester.makefile(".yaml", queryeval="predictions: {source: file, path: preds.jsonl}\n"
                                         "thresholds: {macro_precision: 0.9}\n")
    gdp = {"indicator_selection": [{"dataset_id": "IMF.RES:WEO", "dimensions": [
        {"dimension_name": "INDICATOR", "values": [GDP, GDPPC, GDP_CONST]}]}]}
    _write_predictions(pytester, {CASE_ID: MEXICO_PRED, "gdp-worked-example": gdp})
    result = pytester.runpytest("--queryeval-json=out.json", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([  # the diff first, then the metric that failed (issue 24)
        "INDICATOR",
        "[[]recall: 1.00, precision: 0.67]",
        "True Positives [[]2]",
        "  [*] GDP: gross domestic product",
        "  [*] GDPPC: GDP per capita",
        "False Negatives [[]0]",
        "False Positives [[]1]",
        "  [*] GDP_CONST: gross domestic product constant prices",
        "*macro_precision*0.667*>= 0.9*FAIL*",
    ])
    m = _cases(pytester)["gdp-worked-example"]["metrics"]
    assert round(m["precision[INDICATOR]"], 2) == 0.67
    assert m["recall[INDICATOR]"] == 1.0


def test_excel_indicator_selection_details_cell(pytester: pytest.Pytester):
    openpyxl = pytest.importorskip("openpyxl")
    pytest.importorskip("xlsxwriter")
    pytester.path.joinpath("test_mexico_population.yaml").write_text(MEXICO_YAML)
    pytester.makefile(".yaml", queryeval="predictions: {source: file, path: preds.jsonl}\n")
    _write_predictions(pytester, {CASE_ID: {"IMF.RES:WEO": {
        "INDICATOR": {"LP": LP["name"]}, "COUNTRY": {"MEX": "Mexico", "USA": "United States"},
        "FREQUENCY": {"A": "Annual"}}}})
    pytester.runpytest("--queryeval-xlsx=out.xlsx", "-p", "no:cacheprovider")
    ws = openpyxl.load_workbook(pytester.path / "out.xlsx")["SDMX overview"]
    header = [c.value for c in ws[1]]
    row = {h: c.value for h, c in zip(header, ws[2], strict=False)}
    cell = next(v for v in row.values() if isinstance(v, str) and "True Positives" in v)
    assert cell == (
        "INDICATOR\n[recall: 1.00, precision: 1.00]\nTrue Positives [1]\n"
        "  * LP: Population, Persons for countries / Index for country groups\n"
        "False Negatives [0]\nFalse Positives [0]\n\n"
        "COUNTRY\n[recall: 1.00, precision: 0.50]\nTrue Positives [1]\n  * MEX: Mexico\n"
        "False Negatives [0]\nFalse Positives [1]\n  * USA: United States\n\n"
        "dimensions not in target\nFREQUENCY\n[recall: 1.00, precision: 0.00]\n"
        "True Positives [0]\nFalse Negatives [0]\nFalse Positives [1]\n  * A: Annual")
    assert row["macro precision"] == pytest.approx(0.5)  # (1 + 0.5 + 0) / 3
    assert row["macro recall"] == 1.0


def test_multi_case_file_with_inline_multi_turn(pytester: pytest.Pytester):
    pytester.makefile(".yaml", test_suite="""\
        kind: sdmx
        tags: [weo]
        match_on: [id]
        cases:
        - id: mexico-then-usa
          name: two_turns
          comments: ''
          conversation:
          - role: user
            content: Population of Mexico?
            target:
              indicator_selection:
              - dataset_id: IMF.RES:WEO
                dimensions:
                - dimension_name: COUNTRY
                  values: [{id: MEX, name: Mexico}]
            predicted:
              IMF.RES:WEO: {COUNTRY: {MEX: Mexico (label drift)}}
          - role: assistant
            content: Here it is.
          - role: user
            content: And the United States?
            target:
              indicator_selection:
              - dataset_id: IMF.RES:WEO
                dimensions:
                - dimension_name: COUNTRY
                  values: [{id: USA, name: United States}]
            predicted:
              IMF.RES:WEO: {COUNTRY: {USA: United States, CAN: Canada}}
          thresholds:
            recall[COUNTRY]: 1.0
            precision[COUNTRY]: 0.7
            "f1[COUNTRY]": {min: 0.8}
        - id: strict-names
          match_on: [id, name]
          conversation:
          - role: user
            content: Mexico
            target:
              indicator_selection:
              - dataset_id: IMF.RES:WEO
                dimensions:
                - dimension_name: COUNTRY
                  values: [{id: MEX, name: Mexico}]
            predicted:
              indicator_selection:
              - dataset_id: IMF.RES:WEO
                dimensions:
                - dimension_name: COUNTRY
                  values: [{id: MEX, name: mexico}]
          thresholds: {macro_recall: 1.0}
        """)
    pytester.makefile(".yaml", queryeval="{}")  # a suite: its test_*.yaml are case files
    result = pytester.runpytest("--queryeval-json=out.json", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    cases = _cases(pytester)
    m = cases["mexico-then-usa"]["metrics"]
    assert m["recall[COUNTRY]"] == 1.0
    assert m["precision[COUNTRY]"] == 0.75  # mean of 1.0 and 0.5
    assert cases["strict-names"]["metrics"]["macro_recall"] == 0.0


def test_codelist_validation_end_to_end(pytester: pytest.Pytester, shared_data: Path):
    imf = shared_data / "sdmx" / "imf"
    pytester.makefile(".yaml", queryeval=f"""\
        datasources:
          imf: {{type: sdmx-structure, paths: ["{imf}"]}}
        thresholds: {{valid_term_rate: 1.0}}
        """)
    pytester.makefile(".yaml", test_cpi="""\
        id: cpi-ecuador-food
        datasource: imf
        conversation:
        - role: user
          content: Food CPI in Ecuador
          target:
            indicator_selection:
            - dataset_id: IMF.STA:CPI
              dimensions:
              - dimension_name: INDEX_TYPE
                values: [{id: CPI, name: Consumer price index (CPI)}]
              - dimension_name: COICOP_1999
                values: [{id: CP01, name: Food and non-alcoholic beverages}]
              - dimension_name: COUNTRY
                values: [{id: ECU, name: Ecuador}]
          predicted:
            IMF.STA:CPI:
              INDEX_TYPE: {CPI: Consumer price index (CPI)}
              COICOP_1999: {CP01: Food and non-alcoholic beverages, CP99: Made-up division}
              COUNTRY: {ECU: Ecuador}
        """)
    # a subprocess: an in-process run would unload numpy (imported by sdmx1) afterwards, and
    # numpy cannot be imported twice in one process
    result = pytester.runpytest_subprocess("--queryeval-json=out.json", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["Invalid Terms [[]1]",  # the diff first (issue 24 item 5)
                                 "  [*] COICOP_1999: CP99: Made-up division (code not in codelist)",
                                 "*valid_term_rate*0.75*FAIL*"])
    case = _cases(pytester)["cpi-ecuador-food"]
    assert case["metrics"]["valid_term_rate"] == 0.75
    assert case["metrics"]["macro_recall"] == 1.0
    assert [i["id"] for i in case["details"]["invalid_terms"]] == ["CP99"]


def test_invalid_case_is_located(pytester: pytest.Pytester):
    pytester.path.joinpath("test_bad.yaml").write_text(
        MEXICO_YAML.replace("        - id: MEX\n", "        - ident: MEX\n"))
    pytester.makefile(".yaml", queryeval="{}")  # a suite: its test_*.yaml are case files
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["error: test_bad.yaml:20: conversation[[]0].target."
                                 "indicator_selection[[]0].dimensions[[]1].values[[]0].ident: "
                                 "unknown key (expected id, name)"])


def test_mexico_target_matches_seed_constants():
    import yaml

    raw = yaml.safe_load(MEXICO_YAML)
    dims = raw["conversation"][0]["target"]["indicator_selection"][0]["dimensions"]
    assert dims[0]["values"] == [LP]
    assert dims[1]["values"] == [MEX]


def test_no_machine_path_in_the_report_for_codelists_outside_the_rootdir(
        pytester: pytest.Pytester, shared_data: Path, tmp_path_factory: pytest.TempPathFactory):
    """Issue 19: a codelist folder outside the rootdir must not put machine paths in reports."""
    import shutil

    outside = tmp_path_factory.mktemp("codelists")  # a sibling of the suite, not inside it
    shutil.copytree(shared_data / "sdmx" / "imf", outside / "imf")
    pytester.makefile(".yaml", queryeval=f"""\
        datasources:
          imf: {{type: sdmx-structure, paths: ["{outside / 'imf'}"]}}
          gone: {{type: sdmx-structure, paths: ["{outside / 'missing'}"]}}
        record_only: true
        """)
    text = """\
        id: {id}
        datasource: {ds}
        conversation:
        - role: user
          content: Food CPI in Ecuador
          target:
            indicator_selection:
            - dataset_id: IMF.STA:CPI
              dimensions:
              - dimension_name: COUNTRY
                values: [{{id: ECU, name: Ecuador}}]
          predicted:
            IMF.STA:CPI:
              COUNTRY: {{ECU: Ecuador, XXX: Nowhere}}
        """
    pytester.makefile(".yaml", test_cpi=text.format(id="cpi", ds="imf"),
                      test_gone=text.format(id="gone", ds="gone"))
    result = pytester.runpytest_subprocess("--queryeval-json=out.json", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    report = (pytester.path / "out.json").read_text()
    cases = _cases(pytester)
    assert cases["cpi"]["details"]["structure_files"][0].startswith("../")
    assert "missing" in cases["gone"]["error"]
    for machine in (str(outside), str(outside.parent), str(pytester.path)):
        assert machine not in report, machine
