"""statgpt's own documentation (epam/statgpt ``learning/administration/07-testing-and-validation.md``
at 8d9359e04bb951ea4d0e49a2f1c8803c1eb6ebdd, MIT) writes test cases as bare turn lists, selects
codes by name only where the ids are not at hand, and asks for acceptable alternative targets
(issue 20 item 6). The exercise below is that document's, verbatim; expected figures are worked
out by hand from the seed's definitions (TP/FP/FN per dimension, macro means)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.support import run_report

#: The document's "Exercise 1" answer (a bare list of turns, INDICATOR values by name only).
BOP_EXERCISE = """\
- role: user
  content: What is the trade balance for Japan?
  target:
    indicator_selection:
      - dataset_id: IMF.STA:BOP
        dimensions:
          - dimension_name: INDICATOR
            values:
              - name: Goods, credit
              - name: Goods, debit
              - name: Services, credit
              - name: Services, debit
          - dimension_name: BOP_ACCOUNTING_ENTRY
            values:
              - name: Balance
          - dimension_name: COUNTRY
            values:
              - id: JP
                name: Japan
"""
#: "'Current Account, Total, Net' is also acceptable" (the same document): as an alternative.
ALTERNATIVE = """\
  alternative_targets:
    - indicator_selection:
        - dataset_id: IMF.STA:BOP
          dimensions:
            - dimension_name: INDICATOR
              values:
                - name: Current Account, Total, Net
            - dimension_name: COUNTRY
              values:
                - id: JP
                  name: Japan
"""


def _selection(indicators: dict[str, str], entry: dict[str, str] | None = None) -> Any:
    sel: dict[str, Any] = {"INDICATOR": indicators, "COUNTRY": {"JP": "Japan"}}
    if entry is not None:
        sel["BOP_ACCOUNTING_ENTRY"] = entry
    return {"IMF.STA:BOP": sel}


def _run(pytester: pytest.Pytester, case_yaml: str, predicted: Any) -> dict[str, Any]:
    pytester.path.joinpath("test_trade_balance_japan.yaml").write_text(case_yaml)
    pytester.path.joinpath("preds.jsonl").write_text(
        json.dumps({"id": "trade_balance_japan", "predicted": predicted}) + "\n")
    pytester.makefile(".yaml", queryeval="predictions: {source: file, path: preds.jsonl}\n"
                                         "thresholds: {macro_f1: 1.0}\n")
    _, report = run_report(pytester, "-p", "no:cacheprovider", name="out.json")
    (case,) = report["cases"]
    assert case["id"] == "trade_balance_japan"  # named by its file, like a one-case file
    assert case["kind"] == "sdmx"
    result: dict[str, Any] = case
    return result


def test_bare_turn_list_with_names_only_is_scored(pytester: pytest.Pytester) -> None:
    # The system answers with ids and names (statgpt's adapter mapping); three of the four
    # expected indicators, matched to the name-only targets by name.
    predicted = _selection({"BGC": "Goods, credit", "BGD": "Goods, debit",
                            "BSC": "Services, credit"}, {"NETCD_T": "Balance"})
    case = _run(pytester, BOP_EXERCISE, predicted)
    m = case["metrics"]
    assert m["recall[INDICATOR]"] == 0.75
    assert m["precision[INDICATOR]"] == 1.0
    assert m["f1[BOP_ACCOUNTING_ENTRY]"] == 1.0
    assert m["macro_recall"] == pytest.approx((0.75 + 1 + 1) / 3, abs=1e-15)
    assert m["macro_f1"] == pytest.approx((2 * 0.75 / 1.75 + 2) / 3, abs=1e-15)
    assert case["outcome"] == "failed"


def test_a_name_only_target_does_not_match_another_name(pytester: pytest.Pytester) -> None:
    predicted = _selection({"BGC": "Goods, credit", "BGD": "Goods, debit",
                            "BSC": "Services, credit", "BSD": "Services, debit (total)"},
                           {"NETCD_T": "Balance"})
    m = _run(pytester, BOP_EXERCISE, predicted)["metrics"]
    assert (m["precision[INDICATOR]"], m["recall[INDICATOR]"]) == (0.75, 0.75)


def test_the_best_matching_alternative_target_wins(pytester: pytest.Pytester) -> None:
    predicted = _selection({"CAB": "Current Account, Total, Net"})
    case = _run(pytester, BOP_EXERCISE + ALTERNATIVE, predicted)
    assert case["outcome"] == "passed"
    assert case["metrics"]["macro_f1"] == 1.0
    (turn,) = case["details"]["turns"]
    assert turn["target_used"] == "alternative_targets[0]"


def test_the_main_target_wins_when_it_matches(pytester: pytest.Pytester) -> None:
    predicted = _selection({"BGC": "Goods, credit", "BGD": "Goods, debit",
                            "BSC": "Services, credit", "BSD": "Services, debit"},
                           {"NETCD_T": "Balance"})
    case = _run(pytester, BOP_EXERCISE + ALTERNATIVE, predicted)
    assert case["outcome"] == "passed"
    assert case["details"]["turns"][0]["target_used"] == "target"


def test_a_malformed_alternative_is_located(pytester: pytest.Pytester) -> None:
    bad = BOP_EXERCISE + "  alternative_targets:\n    - {indicator_selection: [{dimensions: []}]}\n"
    pytester.path.joinpath("test_trade_balance_japan.yaml").write_text(bad)
    pytester.makefile(".yaml", queryeval="thresholds: {macro_f1: 1.0}\n")
    result = pytester.runpytest("-p", "no:cacheprovider", "-rf")
    result.assert_outcomes(failed=1)
    assert ("test_trade_balance_japan.yaml:21: conversation[0].alternative_targets[0]"
            ".indicator_selection[0].dataset_id: is required") in result.stdout.str()
