"""``compare:`` options, the Denodo str-cast emulation and the failure diff."""

from __future__ import annotations

import datetime as dt
import math
from decimal import Decimal
from typing import Any, ClassVar

import pytest

from pytest_queryeval.metrics.table import (
    CompareOptions,
    compare_tables,
    str_cast_rows,
    table_diff,
    table_metrics,
)
from pytest_queryeval.results import ResultTable


def T(rows: list[tuple[Any, ...]], cols: list[str] | None = None) -> ResultTable:
    width = len(rows[0]) if rows else 0
    return ResultTable(cols or [f"c{i}" for i in range(width)], list(rows))


class TestCompareOptions:
    def test_defaults_change_nothing(self) -> None:
        opts = CompareOptions.from_config(None)
        assert opts == CompareOptions()
        assert opts.is_default
        assert CompareOptions.from_config({}) == opts
        for v in (1, 1.0, Decimal("0.1"), "a ", None, True):
            assert opts.normalise(v) is v

    def test_unknown_key_is_a_clear_error(self) -> None:
        with pytest.raises(ValueError, match=r"unknown option.*float_tol.*known: float_digits"):
            CompareOptions.from_config({"float_tol": 0.1})

    @pytest.mark.parametrize(
        "bad",
        [
            {"float_digits": -1},
            {"float_digits": 1.5},
            {"float_digits": True},
            {"float_tolerance": 0},
            {"float_tolerance": "x"},
            {"strip_whitespace": "yes"},
            {"float_digits": 2, "float_tolerance": 0.01},
            ["strip_whitespace"],
        ],
    )
    def test_invalid_values(self, bad: Any) -> None:
        with pytest.raises(ValueError, match="compare"):
            CompareOptions.from_config(bad)

    def test_decimal_vs_float(self) -> None:
        gold, pred = T([(Decimal("0.1"), "x")]), T([(0.1, "x")])
        assert table_metrics(gold, pred, order_matters=False)["execution_accuracy"] == 0.0
        opts = CompareOptions.from_config({"numbers_as_float": True})
        m = table_metrics(gold, pred, order_matters=False, compare=opts)
        assert m["execution_accuracy"] == m["bird_ex"] == m["cell_f1"] == 1.0

    def test_int_vs_float_str_cast(self) -> None:
        gold, pred = T([(1,)]), T([(1.0,)])
        assert table_metrics(gold, pred, order_matters=False)["cell_f1"] == 0.0  # '1' vs '1.0'
        opts = CompareOptions(numbers_as_float=True)
        assert table_metrics(gold, pred, order_matters=False, compare=opts)["cell_f1"] == 1.0

    def test_float_digits_and_tolerance(self) -> None:
        gold, pred = T([(1 / 3,)]), T([(0.3333,)])
        assert table_metrics(gold, pred, order_matters=False)["execution_accuracy"] == 0.0
        for cfg in ({"float_digits": 3}, {"float_tolerance": 0.001}):
            opts = CompareOptions.from_config(cfg)
            assert table_metrics(gold, pred, order_matters=False, compare=opts)["execution_accuracy"] == 1.0
        assert CompareOptions(float_digits=2).normalise(-0.001) == 0.0
        assert math.copysign(1, CompareOptions(float_digits=2).normalise(-0.001)) == 1.0
        assert CompareOptions(float_digits=2).normalise(True) is True

    def test_whitespace_and_case(self) -> None:
        gold, pred = T([("Paris  ",)]), T([("paris",)])
        assert table_metrics(gold, pred, order_matters=False)["bird_ex"] == 0.0
        opts = CompareOptions.from_config({"strip_whitespace": True, "case_insensitive": True})
        assert table_metrics(gold, pred, order_matters=False, compare=opts)["bird_ex"] == 1.0
        assert opts.to_config() == {"strip_whitespace": True, "case_insensitive": True}


class TestStrCast:
    """Denodo casts DataFrames with ``astype(str)``: dtype inference decides the strings."""

    ROWS: ClassVar[list[list[tuple[Any, ...]]]] = [
        [(1,), (None,)],
        [(1,), (2,)],
        [(1,), (2.5,)],
        [(0.1,), (1e20,), (1e16,), (123456789.125,), (float("nan"),)],
        [("a",), (None,)],
        [(True,), (False,)],
        [(True,), (None,)],
        [(True,), (1,)],
        [(None,), (None,)],
        [(Decimal("1.50"),), (None,)],
        [("x",), (1,), (1.5,)],
        [(dt.datetime(2020, 1, 1),), (dt.datetime(2021, 5, 3),)],
        [(dt.datetime(2020, 1, 1),), (dt.datetime(2021, 5, 3, 4, 5, 6),), (None,)],
        [(dt.date(2020, 1, 1),), (None,)],
        [(2**63,), (1,)],
    ]

    @pytest.mark.parametrize("rows", ROWS)
    def test_matches_pandas(self, rows: list[tuple[Any, ...]]) -> None:
        pd = pytest.importorskip("pandas")
        frame = pd.DataFrame(rows, columns=["g0"]).astype(str)
        expected = [
            tuple("<missing>" if isinstance(v, float) and v != v else v for v in r)
            for r in frame.itertuples(index=False, name=None)
        ]
        ours = [tuple("<missing>" if str(v) == "nan" and not isinstance(v, str) else v for v in r)
                for r in str_cast_rows(rows)]
        assert ours == expected


class TestDiff:
    def test_no_diff_when_ex_passes(self) -> None:
        assert table_diff(T([(1, "a")]), T([("a", 1)]), order_matters=False) == []

    def test_missing_and_extra_capped(self) -> None:
        gold = T([(i, f"n{i}") for i in range(10)], ["id", "name"])
        pred = T([(f"n{i}", i) for i in range(3, 13)], ["nm", "ident"])
        lines = table_diff(gold, pred, order_matters=False, limit=5)
        text = "\n".join(lines)
        assert lines[0] == "rows: gold 10, predicted 10"
        assert "column mapping: id <- ident, name <- nm" in text
        assert "missing rows (3 in gold, not in predicted; first 3):" in text
        assert "  - (0, 'n0')" in text
        assert "extra rows (3 in predicted, not in gold; first 3):" in text
        assert "  + (12, 'n12')" in text
        many = table_diff(T([(i,) for i in range(20)]), T([]), order_matters=False)
        assert sum(line.startswith("  - ") for line in many) == 5
        assert "missing rows (20 in gold, not in predicted; first 5):" in many

    def test_widths_differ(self) -> None:
        lines = table_diff(T([(1, 2)], ["a", "b"]), T([(1,)], ["a"]), order_matters=False)
        assert "columns: gold 2, predicted 1" in lines
        assert "column mapping: none (different widths, ragged rows or an empty side)" in lines

    def test_order_difference(self) -> None:
        lines = table_diff(T([(1,), (2,)]), T([(2,), (1,)]), order_matters=True)
        assert any("different order" in line and "row 0" in line for line in lines)

    def test_type_quirk_is_explained(self) -> None:
        lines = table_diff(T([(1, 1.5)]), T([(1.0, 1.5)]), order_matters=False)
        assert any("str(value)+str(type)" in line for line in lines)

    def test_details(self) -> None:
        c = compare_tables(T([(1, "a")], ["x", "y"]), T([("a", 1)], ["p", "q"]), order_matters=False)
        d = c.details()
        assert d["column_mapping"] == "x <- q, y <- p"
        assert d["gold_rows"] == d["predicted_rows"] == 1
        assert 0.0 <= d["cell_precision"] <= 1.0


def test_overlap_ignores_null_and_nan() -> None:
    nan = float("nan")
    m = table_metrics(T([(nan, 1, None)]), T([(float("nan"), 1, None)]), order_matters=False)
    assert m["percent_overlap"] == 1.0  # only the 1 counts on the gold side
    m = table_metrics(T([(None,), (None,)]), T([(None,)]), order_matters=False)
    assert m["percent_overlap"] == 0.0  # no non-null gold cell
    m = table_metrics(T([(1,), (1,), (2,)]), T([(1.0,), (3,)]), order_matters=False)
    assert m["percent_overlap"] == pytest.approx(1 / 3)


def test_ragged_recorded_rows_never_match_and_do_not_crash() -> None:
    gold = ResultTable(["a", "b"], [(1, 2), (3,)])
    for ordered in (False, True):
        m = table_metrics(gold, T([(1, 2), (3, 4)]), order_matters=ordered)
        assert m["execution_accuracy"] == 0.0
        assert m["percent_overlap"] == 1.0  # 3 non-null gold cells, all found
