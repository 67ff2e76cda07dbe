"""spider2_ex and spider2_ex_aligned on hand-made tables: the quirks kept, the corrected variant."""

from __future__ import annotations

import pytest

from pytest_queryeval.errors import SearchBudgetExhausted
from pytest_queryeval.metrics import spider2
from pytest_queryeval.metrics.spider2 import (
    check_condition_cols,
    read_csv_text,
    spider2_scores,
)
from pytest_queryeval.results import ResultTable


def _gold(text: str) -> ResultTable:
    return spider2.frame_table(read_csv_text(text))


def _score(pred_rows: list[tuple[object, ...]], gold: str, **kw: object) -> dict[str, float]:
    width = len(pred_rows[0]) if pred_rows else 2
    pred = ResultTable([f"c{i}" for i in range(width)], pred_rows)
    kw.setdefault("multi", False)
    return spider2_scores(pred, [_gold(gold)], **kw).metrics  # type: ignore[arg-type]


def test_misaligned_rows_pass_the_reference_but_not_the_aligned_variant() -> None:
    gold = "name,n\na,1\nb,2\n"
    swapped = [("a", 2), ("b", 1)]  # each column right on its own, rows wrong
    assert _score(swapped, gold, ignore_order=True) == {"spider2_ex": 1.0,
                                                        "spider2_ex_aligned": 0.0}
    shuffled = [("b", 2), ("a", 1)]
    assert _score(shuffled, gold, ignore_order=True) == {"spider2_ex": 1.0,
                                                         "spider2_ex_aligned": 1.0}
    # in order, both need the same row positions
    assert _score(shuffled, gold, ignore_order=False) == {"spider2_ex": 0.0,
                                                          "spider2_ex_aligned": 0.0}


def test_aligned_variant_tries_every_matching_column() -> None:
    # two identical-as-multisets predicted columns; only the second lines up with the names
    gold = "name,n\na,1\nb,2\n"
    pred = [("a", 2, 1), ("b", 1, 2)]
    assert _score(pred, gold, ignore_order=True, condition_cols=None) == {
        "spider2_ex": 1.0, "spider2_ex_aligned": 1.0}


def test_null_is_zero_and_numbers_are_close_within_a_hundredth() -> None:
    gold = "k,v\nx,\ny,3\n"
    assert _score([("x", 0.0099), ("y", 3.0)], gold)["spider2_ex"] == 1.0
    assert _score([("x", 0.011), ("y", 3.0)], gold)["spider2_ex"] == 0.0
    assert _score([("x", None), ("y", 2.995)], gold)["spider2_ex"] == 1.0


def test_names_ignored_extra_columns_free_condition_cols_select_gold_columns() -> None:
    gold = "a,b\n1,x\n2,y\n"
    assert _score([("x", 1, "extra"), ("y", 2, "more")], gold)["spider2_ex"] == 1.0
    assert _score([("x",), ("y",)], gold, condition_cols=[1])["spider2_ex"] == 1.0
    assert _score([("x",), ("y",)], gold)["spider2_ex"] == 0.0


def test_empty_prediction_scores_zero_unless_the_reference_compares_it() -> None:
    gold = "a,b\n"  # a header-only gold
    assert _score([], gold) == {"spider2_ex": 0.0, "spider2_ex_aligned": 0.0}
    assert _score([], gold, empty_scores_zero=False) == {"spider2_ex": 1.0,
                                                         "spider2_ex_aligned": 1.0}


def test_csv_round_trip_types() -> None:
    # '007' written by the database as text is read back as the number 7 by pandas
    assert _score([("007",)], "v\n7\n")["spider2_ex"] == 1.0
    # 'NA' text is NaN, hence 0
    assert _score([("NA",)], "v\n0\n")["spider2_ex"] == 1.0
    # a column mixing numbers and text is all text: '1' is not 1.0
    assert _score([(1,), ("x",)], "v\n1.0\nx\n")["spider2_ex"] == 0.0


def test_aligned_search_has_a_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(spider2, "ALIGNED_BUDGET", 3)
    gold = "a,b\n1,1\n2,3\n3,2\n"
    # six predicted columns, every permutation of 1..3; only the last lines up with column b
    # beside the first, so the search needs six assignments
    pred = [(1, 2, 3, 2, 3, 1), (2, 1, 2, 3, 1, 3), (3, 3, 1, 1, 2, 2)]
    frames = spider2.round_trip(ResultTable(list("abcdef"), pred)), read_csv_text(gold)
    assert spider2.compare_table(*frames, ignore_order=True) == 1  # the reference: no search
    with pytest.raises(SearchBudgetExhausted):
        spider2_scores(ResultTable(list("abcdef"), pred), [_gold(gold)], multi=False,
                       ignore_order=True)
    monkeypatch.setattr(spider2, "ALIGNED_BUDGET", 6)
    assert _score(pred, gold, ignore_order=True)["spider2_ex_aligned"] == 1.0


@pytest.mark.parametrize(("value", "ok"), [
    (None, True), ([], True), ([0, 2], True), ([[0], [1, 2]], True), (3, True), ([None], True),
    ("0", False), ([0, [1]], False), ([True], False), ([0.5], False), ({"a": 1}, False),
])
def test_condition_cols_shapes(value: object, ok: bool) -> None:
    assert (check_condition_cols(value) is None) == ok


def test_text_sort_misplaces_values_within_tolerance() -> None:
    """The documented #225 example: value by value within 1e-2, yet 0 under ignore_order."""
    assert _score([(9.995,), (2.0,)], "v\n10.0\n2.0\n", ignore_order=True)["spider2_ex"] == 0.0
    assert _score([(9.995,), (2.0,)], "v\n10.0\n2.0\n")["spider2_ex"] == 1.0
