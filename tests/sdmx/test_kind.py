"""SdmxKind: validation, prediction shapes (source and inline), multi-turn, codelist checks."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_queryeval.errors import GoldError, PredictionError
from pytest_queryeval.kinds.sdmx import SdmxKind
from pytest_queryeval.model import MISSING, Case
from tests import support

from .seed import GDP, GDP_CONST, GDPPC, LP, MEX, MEXICO_YAML, selection

KIND = SdmxKind()
WEO = "IMF.RES:WEO"


class FakeCtx:
    """The parts of the Context protocol the sdmx kind uses."""

    def __init__(self) -> None:
        self.objects: dict[str, Any] = {}
        self.builds = 0

    def shared(self, key: str, factory: Any) -> Any:
        if key not in self.objects:
            self.builds += 1
            self.objects[key] = factory()
        return self.objects[key]

    def source(self, case: Case) -> Any:
        raise AssertionError("sdmx never opens a generic data source")


def make_case(raw: dict[str, Any], **options: Any) -> Case:
    return support.make_case("sdmx", id=str(raw.get("id", "c")), raw=raw,
                             tags=list(raw.get("tags", [])), options=options)


def mexico() -> dict[str, Any]:
    return yaml.safe_load(MEXICO_YAML)


def multi_turn() -> dict[str, Any]:
    return {"id": "mt", "conversation": [
        {"role": "user", "content": "GDP of Mexico?", "target": selection(
            WEO, INDICATOR=[GDP], COUNTRY=[MEX])},
        {"role": "assistant", "content": "Here is GDP for Mexico."},
        {"role": "user", "content": "And per capita?", "target": selection(
            WEO, INDICATOR=[GDPPC], COUNTRY=[MEX])},
    ]}


# ------------------------------------------------------------------ contract


@pytest.mark.parametrize("name", ["macro_precision", "macro_recall", "macro_f1",
                                  "valid_term_rate", "precision[INDICATOR]", "recall[COUNTRY]",
                                  "f1[IMF.RES:WEO/INDICATOR]", "precision[ANY]"])
def test_is_metric(name: str):
    assert KIND.is_metric(name)


@pytest.mark.parametrize("name", ["precision", "precision[]", "micro_f1", "execution_accuracy",
                                  "recall[A][B]", "f1 [X]"])
def test_is_not_metric(name: str):
    assert not KIND.is_metric(name)


def test_kind_attributes():
    assert KIND.name == "sdmx"
    assert KIND.option_keys == {"match_on", "case_insensitive_names"}
    assert KIND.difficulty(make_case(mexico())) is None


# ------------------------------------------------------------------ validation


def test_seed_case_is_valid():
    assert list(KIND.validate(make_case(mexico()))) == []
    assert list(KIND.validate(make_case(multi_turn()))) == []


def _problems(raw: dict[str, Any], **options: Any) -> list[tuple[str, str]]:
    return list(KIND.validate(make_case(raw, **options)))


def test_validate_missing_conversation():
    assert _problems({"id": "x"}) == [("conversation", "missing: an sdmx case needs a "
                                                      "conversation")]


def test_validate_no_target():
    assert _problems({"conversation": [{"role": "user", "content": "hi"}]}) == [
        ("conversation", "no user turn has a target")]


def test_validate_located_value_problem():
    raw = mexico()
    del raw["conversation"][0]["target"]["indicator_selection"][0]["dimensions"][1][
        "values"][0]["id"]
    # Without match_on, a target value without an id is matched on its name (issue 20 item 6);
    # an explicit match_on: [id, name] asks for both.
    assert _problems(raw) == []
    assert _problems(raw, match_on=["id", "name"]) == [(
        "conversation[0].target.indicator_selection[0].dimensions[1].values[0]",
        "needs 'id' (match_on: ['id', 'name'])")]
    assert _problems(raw, match_on=["name"]) == []
    value = raw["conversation"][0]["target"]["indicator_selection"][0]["dimensions"][1][
        "values"][0]
    value["id"] = value.pop("name")
    assert _problems(raw) == [(
        "conversation[0].target.indicator_selection[0].dimensions[1].values[0]",
        "needs 'name' (match_on: ['id', 'name'])")]


def test_validate_norway_problem():
    raw = yaml.safe_load(MEXICO_YAML.replace("id: MEX", "id: NO"))
    (path, message), = _problems(raw)
    assert path.endswith("dimensions[1].values[0].id")
    assert "quote it" in message


def test_validate_turn_problems():
    raw = mexico()
    raw["conversation"].append({"role": "assistant", "content": "ok", "target": {
        "indicator_selection": []}, "extra": 1})
    raw["conversation"].append({"role": "robot", "content": "?", "predicted": {}})
    got = dict(_problems(raw))
    assert got["conversation[1].extra"].startswith("unknown key")
    assert got["conversation[1].target"] == "only user turns carry a target"
    assert got["conversation[2].role"].startswith("must be one of")
    assert got["conversation[2].predicted"] == "only a turn with a target takes a prediction"


def test_validate_ignores_statgpt_extra_target_keys_but_not_typos():
    raw = mexico()
    raw["conversation"][0]["target"]["is_out_of_scope"] = False
    assert _problems(raw) == []
    raw["conversation"][0]["target"]["indicator_selections"] = []
    assert _problems(raw) == [("conversation[0].target.indicator_selections",
                               "unknown key (expected indicator_selection)")]


def test_validate_options_and_inline_prediction():
    raw = mexico()
    raw["conversation"][0]["predicted"] = {"dataset_id": WEO}
    got = dict(_problems(raw, match_on=["code"], case_insensitive_names="yes"))
    assert got["match_on"] == "must be [id, name], [id] or [name]"
    assert got["case_insensitive_names"] == "must be true or false"
    assert "indicator_selection" in got["conversation[0].predicted.dataset_id"]


def test_validate_datasource_type():
    case = make_case(mexico())
    case.source_spec = {"type": "sqlite", "path": "/x.sqlite"}
    assert [p for p, _ in KIND.validate(case)] == ["datasource"]


# ------------------------------------------------------------------ evaluation


def test_mexico_perfect_from_source():
    scored = KIND.evaluate(make_case(mexico()), {WEO: {"INDICATOR": {"LP": LP["name"]},
                                                       "COUNTRY": {"MEX": "Mexico"}}}, FakeCtx())
    assert scored.reason is None
    assert scored.metrics["macro_precision"] == 1.0
    assert scored.metrics["macro_recall"] == 1.0
    assert scored.metrics["f1[INDICATOR]"] == 1.0
    assert scored.details["sdmx_details"].startswith(
        "INDICATOR\n[recall: 1.00, precision: 1.00]\nTrue Positives [1]\n"
        "  * LP: Population, Persons for countries / Index for country groups\n")
    assert scored.diff == scored.details["sdmx_details"].splitlines()


def test_seed_worked_example_through_the_kind():
    raw = {"id": "gdp", "conversation": [{"role": "user", "content": "GDP?", "target":
                                          selection(WEO, INDICATOR=[GDP, GDPPC])}]}
    scored = KIND.evaluate(make_case(raw), selection(WEO, INDICATOR=[GDP, GDPPC, GDP_CONST]),
                           FakeCtx())
    assert round(scored.metrics["precision[INDICATOR]"], 2) == 0.67
    assert scored.metrics["recall[INDICATOR]"] == 1.0
    assert scored.diff[:7] == [
        "INDICATOR",
        "[recall: 1.00, precision: 0.67]",
        "True Positives [2]",
        "  * GDP: gross domestic product",
        "  * GDPPC: GDP per capita",
        "False Negatives [0]",
        "False Positives [1]",
    ]


def test_inline_predictions():
    raw = mexico()
    raw["conversation"][0]["predicted"] = selection(WEO, INDICATOR=[LP], COUNTRY=[
        MEX, {"id": "USA", "name": "United States"}])
    scored = KIND.evaluate(make_case(raw), MISSING, FakeCtx())
    assert scored.metrics["precision[COUNTRY]"] == 0.5
    assert scored.metrics["macro_precision"] == 0.75
    assert scored.metrics["macro_recall"] == 1.0


def test_inline_missing_prediction():
    with pytest.raises(PredictionError, match="no prediction"):
        KIND.evaluate(make_case(mexico()), MISSING, FakeCtx())
    raw = multi_turn()
    raw["conversation"][0]["predicted"] = None
    with pytest.raises(PredictionError, match=r"turn\(s\) 2"):
        KIND.evaluate(make_case(raw), MISSING, FakeCtx())


def test_multi_turn_list_prediction():
    got = [selection(WEO, INDICATOR=[GDP], COUNTRY=[MEX]),
           {WEO: {"INDICATOR": {"GDP": GDP["name"]}, "COUNTRY": {"MEX": "Mexico"}}}]
    scored = KIND.evaluate(make_case(multi_turn()), got, FakeCtx())
    m = scored.metrics
    assert m["recall[INDICATOR]"] == 0.5  # mean of 1.0 and 0.0
    assert m["recall[COUNTRY]"] == 1.0
    assert m["macro_recall"] == 0.75  # mean of turn macros 1.0 and 0.5
    assert m["macro_precision"] == 0.75
    assert [t["turn"] for t in scored.details["turns"]] == [0, 2]
    assert scored.diff[0] == "turn 1: GDP of Mexico?"
    assert "turn 2: And per capita?" in scored.diff


def test_multi_turn_inline():
    raw = multi_turn()
    raw["conversation"][0]["predicted"] = selection(WEO, INDICATOR=[GDP], COUNTRY=[MEX])
    raw["conversation"][2]["predicted"] = selection(WEO, INDICATOR=[GDPPC], COUNTRY=[MEX])
    assert KIND.evaluate(make_case(raw), MISSING, FakeCtx()).metrics["macro_f1"] == 1.0


@pytest.mark.parametrize(("prediction", "message"), [
    (selection(WEO, INDICATOR=[GDP]), "one turn selection for 2"),
    ([selection(WEO, INDICATOR=[GDP])], "1 turn selections for 2"),
    ([1, 2], "[0]: a turn selection is"),
    (["x", "y"], "[0]: not valid JSON"),
])
def test_invalid_prediction_scores_zero(prediction: Any, message: str):
    scored = KIND.evaluate(make_case(multi_turn()), prediction, FakeCtx())
    assert scored.reason is not None
    assert scored.reason.startswith("invalid prediction: ")
    assert message in scored.reason
    assert scored.metrics["macro_f1"] == 0.0
    assert scored.metrics["recall[INDICATOR]"] == 0.0


def test_json_text_prediction():
    text = json.dumps({WEO: {"INDICATOR": {"LP": LP["name"]}, "COUNTRY": {"MEX": "Mexico"}}})
    assert KIND.evaluate(make_case(mexico()), text, FakeCtx()).metrics["macro_f1"] == 1.0
    assert KIND.evaluate(make_case(mexico()), [text], FakeCtx()).metrics["macro_f1"] == 1.0
    scored = KIND.evaluate(make_case(mexico()), "LP, MEX", FakeCtx())
    assert scored.reason is not None
    assert scored.reason.startswith("invalid prediction: not valid JSON")
    assert scored.metrics["macro_f1"] == 0.0


def test_fenced_json_text_prediction():
    text = json.dumps({WEO: {"INDICATOR": {"LP": LP["name"]}, "COUNTRY": {"MEX": "Mexico"}}})
    scored = KIND.evaluate(make_case(mexico()), f"```json\n{text}\n```", FakeCtx())
    assert scored.reason is None
    assert scored.metrics["macro_f1"] == 1.0
    assert scored.details["fence_stripped"] == "```json"
    scored = KIND.evaluate(make_case(mexico()), [f"~~~\n{text}\n~~~"], FakeCtx())
    assert scored.metrics["macro_f1"] == 1.0
    assert scored.details["fence_stripped"] == "~~~"
    assert "fence_stripped" not in KIND.evaluate(make_case(mexico()), text, FakeCtx()).details


def test_none_prediction_is_empty_selection():
    scored = KIND.evaluate(make_case(mexico()), None, FakeCtx())
    assert scored.reason is None
    assert (scored.metrics["macro_precision"], scored.metrics["macro_recall"]) == (1.0, 0.0)


def test_match_options_from_case_options():
    got = {WEO: {"INDICATOR": {"LP": "Population"}, "COUNTRY": {"MEX": "MEXICO"}}}
    assert KIND.evaluate(make_case(mexico()), got, FakeCtx()).metrics["macro_f1"] == 0.0
    by_id = KIND.evaluate(make_case(mexico(), match_on=["id"]), got, FakeCtx())
    assert by_id.metrics["macro_f1"] == 1.0
    assert by_id.details["match_on"] == ["id"]
    ci = KIND.evaluate(make_case(mexico(), case_insensitive_names=True), got, FakeCtx())
    assert ci.metrics["f1[COUNTRY]"] == 1.0
    assert ci.metrics["f1[INDICATOR]"] == 0.0


def test_dimensions_not_in_target_in_details():
    got = {WEO: {"INDICATOR": {"LP": LP["name"]}, "COUNTRY": {"MEX": "Mexico"},
                 "FREQUENCY": {"A": "Annual"}}}
    scored = KIND.evaluate(make_case(mexico()), got, FakeCtx())
    assert scored.details["dimensions_not_in_target"] == ["FREQUENCY"]
    assert "dimensions not in target" in scored.diff
    assert scored.metrics["macro_precision"] == pytest.approx(2 / 3)


def test_original_raw_not_mutated():
    raw = mexico()
    before = copy.deepcopy(raw)
    KIND.evaluate(make_case(raw), None, FakeCtx())
    assert raw == before


# ------------------------------------------------------------------ codelist validation


def test_codelist_validation_with_real_imf_files(shared_data: Path):
    spec = {"type": "sdmx-structure", "paths": [str(shared_data / "sdmx" / "imf")]}
    ctx = FakeCtx()
    raw = mexico()
    got = {WEO: {"INDICATOR": {"LP": LP["name"]},
                 "COUNTRY": {"MEX": "Mexico", "MEXX": "Mexico City"}}}
    case = make_case(raw)
    case.datasource = "imf"
    case.source_spec = spec
    assert list(KIND.validate(case)) == []
    scored = KIND.evaluate(case, got, ctx)
    # INDICATOR has no codelist in these files (WEO is not among them): unchecked
    assert scored.metrics["valid_term_rate"] == 0.5
    assert scored.details["invalid_terms"] == [{
        "turn": 0, "dataset_id": WEO, "dimension": "COUNTRY", "id": "MEXX",
        "name": "Mexico City", "reason": "code not in codelist"}]
    assert scored.details["turns"][0]["unchecked_dimensions"] == [f"{WEO}/INDICATOR"]
    assert "Invalid Terms [1]" in scored.diff
    # parsed once per session
    KIND.evaluate(case, got, ctx)
    assert ctx.builds == 1
    assert KIND.evaluate(make_case(mexico()), got, ctx).details.get("invalid_terms") is None


def test_cpi_index_type_codes(shared_data: Path):
    raw = {"id": "cpi", "conversation": [{"role": "user", "content": "Ecuador food CPI",
                                          "target": selection(
        "IMF.STA:CPI", INDEX_TYPE=[{"id": "CPI", "name": "Consumer price index (CPI)"}],
        COICOP_1999=[{"id": "CP01", "name": "Food and non-alcoholic beverages"}],
        COUNTRY=[{"id": "ECU", "name": "Ecuador"}])}]}
    case = make_case(raw)
    case.source_spec = {"type": "sdmx-structure", "paths": [str(shared_data / "sdmx" / "imf")]}
    got = {"IMF.STA:CPI": {"INDEX_TYPE": {"CPI": "Consumer price index (CPI)",
                                          "HICP_X": "Harmonised index"},
                           "COICOP_1999": {"CP01": "Food and non-alcoholic beverages"},
                           "COUNTRY": {"ECU": "Ecuador"}}}
    scored = KIND.evaluate(case, got, FakeCtx())
    assert scored.metrics["valid_term_rate"] == 0.75
    assert [i["id"] for i in scored.details["invalid_terms"]] == ["HICP_X"]
    assert scored.metrics["precision[INDEX_TYPE]"] == 0.5
    assert scored.metrics["macro_recall"] == 1.0


def test_unvalidated_broken_target_is_gold_error():
    raw = mexico()
    raw["conversation"][0]["target"]["indicator_selection"] = {"dataset_id": WEO}
    with pytest.raises(GoldError, match="indicator_selection"):
        KIND.evaluate(make_case(raw), None, FakeCtx())
    with pytest.raises(GoldError, match="no user turn"):
        KIND.evaluate(make_case({"conversation": []}), None, FakeCtx())
