"""SDMX indicator-selection metrics: the seed's rules, the 0/0 conventions, matching options."""

from __future__ import annotations

import pytest

from pytest_queryeval.metrics.sdmx import (
    DimensionScore,
    MatchOptions,
    SdmxTerm,
    SelectionError,
    TurnScore,
    check_terms,
    combine_turns,
    format_case_details,
    format_details,
    format_turn_details,
    parse_adapter_mapping,
    parse_indicator_selection,
    parse_turn_selection,
    primary_dataset,
    score_dimension,
    score_turn,
)

from .seed import GDP, GDP_CONST, GDPPC, LP, MEX, selection


def T(d: dict[str, str]) -> SdmxTerm:
    return SdmxTerm(d.get("id"), d.get("name"))


def sel(dataset: str, **dims: list[dict[str, str]]):
    return parse_turn_selection(selection(dataset, **dims))


# ------------------------------------------------------------------ the seed's worked example


def test_seed_worked_example():
    d = score_dimension([T(GDP), T(GDPPC)], [T(GDP), T(GDPPC), T(GDP_CONST)],
                        dimension="INDICATOR")
    assert [t.id for t in d.tp] == ["GDP", "GDPPC"]
    assert [t.id for t in d.fp] == ["GDP_CONST"]
    assert d.fn == []
    assert round(d.precision, 2) == 0.67
    assert d.recall == 1.0
    assert d.f1 == pytest.approx(0.8)


def test_seed_worked_example_turn_metrics():
    target = sel("IMF.RES:WEO", INDICATOR=[GDP, GDPPC])
    got = sel("IMF.RES:WEO", INDICATOR=[GDP, GDPPC, GDP_CONST])
    m = score_turn(target, got, primary="IMF.RES:WEO").metrics()
    assert m["precision[INDICATOR]"] == pytest.approx(2 / 3)
    assert m["recall[INDICATOR]"] == 1.0
    assert m["macro_precision"] == pytest.approx(2 / 3)
    assert m["macro_recall"] == 1.0
    assert m["macro_f1"] == pytest.approx(0.8)


def test_seed_excel_cell_format():
    d = score_dimension([T(GDP), T(GDPPC)], [T(GDP), T(GDPPC), T(GDP_CONST)])
    assert format_details(d) == (
        "[recall: 1.00, precision: 0.67]\n"
        "True Positives [2]\n"
        "  * GDP: gross domestic product\n"
        "  * GDPPC: GDP per capita\n"
        "False Negatives [0]\n"
        "False Positives [1]\n"
        "  * GDP_CONST: gross domestic product constant prices"
    )


def test_seed_cell_header_numbers():
    # the seed's cell header "[recall: 0.75, precision: 0.80]": 12 TP, 4 FN, 3 FP
    tp = [SdmxTerm(f"T{i}", f"t{i}") for i in range(12)]
    fn = [SdmxTerm(f"N{i}", f"n{i}") for i in range(4)]
    fp = [SdmxTerm(f"P{i}", f"p{i}") for i in range(3)]
    d = score_dimension([*tp, *fn], [*tp, *fp])
    assert format_details(d).splitlines()[0] == "[recall: 0.75, precision: 0.80]"
    assert "True Positives [12]" in format_details(d)


# ------------------------------------------------------------------ the Mexico case


def test_mexico_exact():
    target = sel("IMF.RES:WEO", INDICATOR=[LP], COUNTRY=[MEX])
    m = score_turn(target, target, primary="IMF.RES:WEO").metrics()
    assert m == {
        "precision[INDICATOR]": 1.0, "recall[INDICATOR]": 1.0, "f1[INDICATOR]": 1.0,
        "precision[COUNTRY]": 1.0, "recall[COUNTRY]": 1.0, "f1[COUNTRY]": 1.0,
        "macro_precision": 1.0, "macro_recall": 1.0, "macro_f1": 1.0,
    }


def test_mexico_wrong_indicator_and_extra_dimension():
    target = sel("IMF.RES:WEO", INDICATOR=[LP], COUNTRY=[MEX])
    got = sel("IMF.RES:WEO", INDICATOR=[{"id": "NGDP", "name": "GDP"}], COUNTRY=[MEX],
              FREQUENCY=[{"id": "A", "name": "Annual"}])
    turn = score_turn(target, got, primary="IMF.RES:WEO")
    m = turn.metrics()
    assert (m["precision[INDICATOR]"], m["recall[INDICATOR]"]) == (0.0, 0.0)
    assert m["precision[COUNTRY]"] == 1.0
    # a dimension not in the target: all its terms are FP, recall is 0/0 = 1
    assert (m["precision[FREQUENCY]"], m["recall[FREQUENCY]"]) == (0.0, 1.0)
    assert m["f1[FREQUENCY]"] == 0.0
    assert m["macro_precision"] == pytest.approx(1 / 3)
    assert m["macro_recall"] == pytest.approx(2 / 3)
    assert [d.key for d in turn.not_in_target] == ["FREQUENCY"]
    text = format_turn_details(turn)
    assert "dimensions not in target\nFREQUENCY\n[recall: 1.00, precision: 0.00]" in text
    assert "  * A: Annual" in text
    assert text.startswith("INDICATOR\n[recall: 0.00, precision: 0.00]\nTrue Positives [0]\n"
                           "False Negatives [1]\n  * LP: Population, Persons for countries")


def test_label_drift_is_a_miss_by_default():
    target = sel("IMF.RES:WEO", COUNTRY=[MEX])
    got = sel("IMF.RES:WEO", COUNTRY=[{"id": "MEX", "name": "mexico"}])
    d = score_turn(target, got, primary="IMF.RES:WEO").dimensions[0]
    assert (len(d.tp), len(d.fp), len(d.fn)) == (0, 1, 1)


# ------------------------------------------------------------------ 0/0 conventions


def test_nothing_selected_precision_is_one():
    d = score_dimension([T(MEX)], [])
    assert (d.precision, d.recall, d.f1) == (1.0, 0.0, 0.0)


def test_nothing_expected_recall_is_one():
    d = score_dimension([], [T(MEX)])
    assert (d.precision, d.recall, d.f1) == (0.0, 1.0, 0.0)


def test_nothing_expected_nothing_selected():
    d = score_dimension([], [])
    assert (d.precision, d.recall, d.f1) == (1.0, 1.0, 1.0)


def test_all_wrong_f1_zero():
    d = score_dimension([T(MEX)], [T(GDP)])
    assert (d.precision, d.recall, d.f1) == (0.0, 0.0, 0.0)


def test_empty_turn_scores_one():
    m = score_turn({}, {}).metrics()
    assert m == {"macro_precision": 1.0, "macro_recall": 1.0, "macro_f1": 1.0}


def test_empty_target_dimension_is_like_absent():
    target = parse_indicator_selection([{"dataset_id": "D", "dimensions": [
        {"dimension_name": "COUNTRY", "values": [MEX]},
        {"dimension_name": "FREQ", "values": []}]}])
    # nothing selected for the empty dimension: it does not take part
    m = score_turn(target, sel("D", COUNTRY=[MEX]), primary="D").metrics()
    assert "precision[FREQ]" not in m
    assert m["macro_f1"] == 1.0
    # something selected for it: all FP, listed as not in target
    turn = score_turn(target, sel("D", COUNTRY=[MEX], FREQ=[{"id": "A", "name": "Annual"}]),
                      primary="D")
    assert turn.metrics()["precision[FREQ]"] == 0.0
    assert [d.key for d in turn.not_in_target] == ["FREQ"]


def test_empty_selection_against_target():
    m = score_turn(sel("D", COUNTRY=[MEX], INDICATOR=[LP]), {}, primary="D").metrics()
    assert (m["macro_precision"], m["macro_recall"], m["macro_f1"]) == (1.0, 0.0, 0.0)


def test_selection_against_empty_target():
    m = score_turn({}, sel("D", COUNTRY=[MEX])).metrics()
    assert (m["macro_precision"], m["macro_recall"], m["macro_f1"]) == (0.0, 1.0, 0.0)
    assert "precision[D/COUNTRY]" in m  # no target dataset: qualified key


def test_duplicates_count_once():
    d = score_dimension([T(MEX), T(MEX)], [T(MEX), T(MEX), T(GDP), T(GDP)])
    assert (len(d.tp), len(d.fp), len(d.fn)) == (1, 1, 0)


# ------------------------------------------------------------------ matching options


def test_match_on_id_ignores_label_drift():
    opts = MatchOptions(match_on=("id",))
    d = score_dimension([T(MEX)], [SdmxTerm("MEX", "United Mexican States")], opts)
    assert d.precision == d.recall == 1.0
    assert d.tp == [T(MEX)]  # the target's term is reported


def test_match_on_name_ignores_wrong_codes():
    opts = MatchOptions(match_on=("name",))
    d = score_dimension([T(MEX)], [SdmxTerm("MX", "Mexico")], opts)
    assert d.precision == d.recall == 1.0
    d = score_dimension([T(MEX)], [SdmxTerm("MEX", "Mexiko")], opts)
    assert d.precision == d.recall == 0.0


def test_case_insensitive_names():
    got = [SdmxTerm("MEX", "  MEXICO ")]
    assert score_dimension([T(MEX)], got).recall == 0.0
    assert score_dimension([T(MEX)], got, MatchOptions(case_insensitive_names=True)).recall == 1.0
    opts = MatchOptions(match_on=("name",), case_insensitive_names=True)
    assert score_dimension([T(MEX)], [SdmxTerm(None, "mexico")], opts).recall == 1.0


def test_missing_matched_field_never_matches():
    d = score_dimension([T(MEX)], [SdmxTerm(None, "Mexico")])  # id missing, match on id+name
    assert (len(d.tp), len(d.fp), len(d.fn)) == (0, 1, 1)
    d = score_dimension([T(MEX)], [SdmxTerm("MEX", None)], MatchOptions(match_on=("id",)))
    assert d.recall == 1.0


# ------------------------------------------------------------------ shapes


def test_adapter_shape_equals_target_shape():
    adapter = {"IMF.RES:WEO": {"INDICATOR": {"LP": LP["name"]}, "COUNTRY": {"MEX": "Mexico"}}}
    assert parse_turn_selection(adapter) == sel("IMF.RES:WEO", INDICATOR=[LP], COUNTRY=[MEX])
    assert parse_adapter_mapping(adapter) == parse_turn_selection(adapter)


def test_adapter_numeric_ids_become_strings():
    got = parse_turn_selection({"3": {"COUNTRY": {111: "United States"}}})
    assert got == {("3", "COUNTRY"): [SdmxTerm("111", "United States")]}


def test_none_is_an_empty_selection():
    assert parse_turn_selection(None) == {}
    assert parse_turn_selection({"indicator_selection": []}) == {}
    assert parse_turn_selection({}) == {}


@pytest.mark.parametrize(("data", "where"), [
    ("IMF.RES:WEO", ""),
    ([1, 2], ""),
    ({"dataset_id": "IMF.RES:WEO", "dimensions": []}, "dataset_id"),
    ({"indicator_selection": {"dataset_id": "X"}}, "indicator_selection"),
    ({"indicator_selection": [{"dimensions": []}]}, "indicator_selection[0].dataset_id"),
    ({"D": {"COUNTRY": ["MEX"]}}, "D.COUNTRY"),
    ({"indicator_selection": [{"dataset_id": "D", "dimensions": [
        {"dimension_name": "C", "values": [{"id": True}]}]}]},
     "indicator_selection[0].dimensions[0].values[0].id"),
])
def test_bad_shapes_are_located(data, where):
    with pytest.raises(SelectionError) as exc:
        parse_turn_selection(data)
    assert exc.value.path == where


def test_target_shape_hint_for_bare_entry():
    with pytest.raises(SelectionError, match="indicator_selection"):
        parse_turn_selection({"dataset_id": "IMF.RES:WEO", "dimensions": []})


def test_strict_target_refuses_repeats_and_unknown_keys():
    rep = [{"dataset_id": "D", "dimensions": [{"dimension_name": "C", "values": [MEX]},
                                              {"dimension_name": "C", "values": []}]}]
    with pytest.raises(SelectionError, match="repeated"):
        parse_indicator_selection(rep, strict=True)
    assert parse_indicator_selection(rep) == {("D", "C"): [T(MEX)]}  # predictions merge
    with pytest.raises(SelectionError, match="unknown key"):
        parse_indicator_selection([{"dataset_id": "D", "dims": []}], strict=True)


# ------------------------------------------------------------------ several datasets and turns


def test_multi_dataset_keys():
    target = parse_indicator_selection([
        {"dataset_id": "IMF.RES:WEO", "dimensions": [{"dimension_name": "COUNTRY",
                                                      "values": [MEX]}]},
        {"dataset_id": "IMF.STA:CPI", "dimensions": [{"dimension_name": "COUNTRY",
                                                      "values": [MEX]}]},
    ])
    assert primary_dataset([target]) is None
    got = sel("IMF.STA:CPI", COUNTRY=[MEX])
    m = score_turn(target, got, primary=primary_dataset([target])).metrics()
    assert m["recall[IMF.RES:WEO/COUNTRY]"] == 0.0
    assert m["recall[IMF.STA:CPI/COUNTRY]"] == 1.0
    assert m["macro_recall"] == 0.5


def test_primary_dataset_from_empty_target_dimensions():
    empty = parse_indicator_selection([{"dataset_id": "D", "dimensions": [
        {"dimension_name": "C", "values": []}]}])
    assert primary_dataset(iter([empty])) == "D"
    assert primary_dataset([]) is None


def test_other_dataset_than_target_is_qualified():
    target = sel("IMF.RES:WEO", COUNTRY=[MEX])
    got = sel("IMF.STA:CPI", COUNTRY=[MEX])
    turn = score_turn(target, got, primary=primary_dataset([target]))
    m = turn.metrics()
    assert m["recall[COUNTRY]"] == 0.0
    assert m["precision[IMF.STA:CPI/COUNTRY]"] == 0.0
    assert [d.key for d in turn.not_in_target] == ["IMF.STA:CPI/COUNTRY"]


def test_turns_combine_by_mean():
    t1 = score_turn(sel("D", COUNTRY=[MEX]), sel("D", COUNTRY=[MEX]), primary="D")
    t2 = score_turn(sel("D", COUNTRY=[MEX], INDICATOR=[LP]),
                    sel("D", COUNTRY=[MEX, {"id": "USA", "name": "United States"}]),
                    primary="D")
    m = combine_turns([t1, t2])
    assert m["precision[COUNTRY]"] == pytest.approx((1.0 + 0.5) / 2)
    assert m["recall[INDICATOR]"] == 0.0  # only defined in turn 2
    assert m["macro_recall"] == pytest.approx((1.0 + 0.5) / 2)
    text = format_case_details([t1, t2])
    assert text.startswith("turn 1\nCOUNTRY\n[recall: 1.00, precision: 1.00]")
    assert "\n\nturn 2\nCOUNTRY\n[recall: 1.00, precision: 0.50]" in text


def test_case_details_single_turn_has_no_header():
    t = score_turn(sel("D", COUNTRY=[MEX]), {}, primary="D", content="Mexico?")
    assert format_case_details([t]).startswith("COUNTRY\n[recall: 0.00, precision: 1.00]")


# ------------------------------------------------------------------ codelist checks (no library)


class FakeLookup:
    def codes(self, dataset_id: str, dimension: str):
        if dimension == "COUNTRY":
            return {"MEX": "Mexico"}
        if dimension == "BOGUS":
            return {}
        return None


def test_check_terms_rates():
    got = sel("D", COUNTRY=[MEX, {"id": "MEX", "name": "Mexiko"}, {"id": "XXX", "name": "X"}],
              BOGUS=[{"id": "A", "name": "a"}], INDICATOR=[LP])
    turn: TurnScore = score_turn(sel("D", COUNTRY=[MEX]), got, primary="D")
    check_terms(turn, got, FakeLookup())
    assert turn.checked_terms == 4
    assert {(i["id"], i["reason"]) for i in turn.invalid_terms} == {
        ("XXX", "code not in codelist"), ("A", "dimension not in the data structure")}
    assert [m["name"] for m in turn.name_mismatches] == ["Mexiko"]
    assert turn.unchecked_dimensions == ["D/INDICATOR"]
    assert turn.metrics()["valid_term_rate"] == 0.5
    assert "Invalid Terms [2]\n  * COUNTRY: XXX: X (code not in codelist)" in format_turn_details(
        turn)


def test_check_terms_nothing_checked_is_one():
    turn = score_turn(sel("D", INDICATOR=[LP]), {}, primary="D")
    check_terms(turn, {}, FakeLookup())
    assert turn.metrics()["valid_term_rate"] == 1.0


def test_dimension_score_json_roundtrip_safe():
    import json

    d = DimensionScore("D", "C", "C", True, [T(MEX)], [], [])
    assert json.loads(json.dumps(d.to_json()))["tp"] == [MEX]
