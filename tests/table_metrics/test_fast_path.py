"""The numpy fast path returns exactly the pure-Python path's metrics, or declines."""

from __future__ import annotations

import subprocess
import sys
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("numpy")

from pytest_queryeval.metrics import _table_fast
from pytest_queryeval.metrics import table as tm
from pytest_queryeval.results import ResultTable

INTS = [0, 1, 2, -1, 7]
FLOATS = [0.0, -0.0, 1.0, 0.5, 2.5, 7.0]
STRS = ["a", "b", "1", "1.0", "0.5", "nan", ""]
ODD = [True, False, 2**60, float("nan"), Decimal("1.0"), Decimal(1), b"a"]

#: Value pools of one column; the plain ones must never make the fast path decline (it does
#: when EX matches an int column with a float one: test-suite EX then sorts cells by type).
PLAIN_FAMILIES = [INTS, [0.5, 2.5, 7.25, 1e20], ["a", "b", "c", "ab"]]
ANY_FAMILIES = [
    *PLAIN_FAMILIES,
    FLOATS,
    STRS,
    INTS + FLOATS,
    INTS + FLOATS[2:],
    INTS + STRS,
    ODD + INTS,
    [None],
]


def _retype(v: Any) -> Any:
    """An equal value of another type or sign: 1 / 1.0, 0.0 / -0.0 (EX and the str cast differ)."""
    if type(v) is int and abs(v) < 2**53:
        return float(v)
    if type(v) is float and v == 0.0:
        return -v
    if type(v) is float and v.is_integer():
        return int(v)
    return v


@st.composite
def table_pairs(
    draw: Any, families: list[list[Any]], nulls: bool, retype: bool = True, empty: bool = True
) -> tuple[list[Any], list[Any]]:
    """A gold table and a prediction derived from it (shuffled, permuted, edited, duplicated);
    ``empty``: either side may have no rows (the fast path declines those)."""
    w = draw(st.integers(1, 4))
    pools = [draw(st.sampled_from(families)) for _ in range(w)]
    if nulls:
        pools = [[*pool, None] if draw(st.booleans()) else pool for pool in pools]
    n = draw(st.integers(0 if empty else 1, 40))
    gold = [tuple(draw(st.sampled_from(pool)) for pool in pools) for _ in range(n)]
    pred = list(gold)
    if pred and draw(st.booleans()):
        pred = draw(st.permutations(pred))
    for _ in range(draw(st.integers(0, 3))):
        if pred:
            i, j = draw(st.integers(0, len(pred) - 1)), draw(st.integers(0, w - 1))
            row = list(pred[i])
            row[j] = draw(st.sampled_from(pools[j]))
            pred[i] = tuple(row)
    for _ in range(draw(st.integers(0, 2)) if retype else 0):  # equal, other type: 1 / 1.0
        if pred:
            i, j = draw(st.integers(0, len(pred) - 1)), draw(st.integers(0, w - 1))
            row = list(pred[i])
            row[j] = _retype(row[j])
            pred[i] = tuple(row)
    if w > 1 and draw(st.booleans()):
        perm = draw(st.permutations(range(w)))
        pred = [tuple(r[j] for j in perm) for r in pred]
    if pred and draw(st.booleans()):
        pred = pred + pred[: draw(st.integers(1, len(pred)))]
    if draw(st.booleans()):
        pred = pred[: draw(st.integers(0 if empty else 1, len(pred)))]
    return gold, pred


def pure(gold: list[Any], pred: list[Any], ordered: bool) -> tm.TableComparison:
    return tm.TableComparison(
        ResultTable(["c"] * len(gold[0]) if gold else [], gold),
        ResultTable(["c"] * len(pred[0]) if pred else [], pred),
        order_matters=ordered,
    )


def assert_same(fast: Any, ref: tm.TableComparison) -> None:
    ex, perm, bird, soft, cell, overlap = fast
    assert (ex, perm, bird) == (ref.ex, ref.perm, ref.bird_ex)
    # repr: bit-for-bit floats (== would accept -0.0 for 0.0)
    assert repr((soft, cell, overlap)) == repr((float(ref.soft), ref.cell, float(ref.overlap)))


def _compare_in_chunks(
    monkeypatch: pytest.MonkeyPatch, chunk: int, gold: list[Any], pred: list[Any], ordered: bool
) -> Any:
    """The fast path with its columns built over chunks of ``chunk`` rows."""
    monkeypatch.setattr(_table_fast, "_CHUNK", chunk)
    return _table_fast.compare(gold, pred, ordered)


@pytest.fixture
def pure_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tm, "FAST_MIN_CELLS", 10**18)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    pair=table_pairs(ANY_FAMILIES, nulls=True),
    ordered=st.booleans(),
    chunk=st.sampled_from([1, 2, 3, 7, 512]),
)
def test_fast_path_is_exact_or_declines(
    pair: tuple[list[Any], list[Any]],
    ordered: bool,
    chunk: int,
    pure_only: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    gold, pred = pair
    fast = _compare_in_chunks(monkeypatch, chunk, gold, pred, ordered)
    if fast is not None:
        assert_same(fast, pure(gold, pred, ordered))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    pair=table_pairs(PLAIN_FAMILIES, nulls=True, retype=False, empty=False),
    ordered=st.booleans(),
    chunk=st.sampled_from([1, 3, 512]),
)
def test_fast_path_accepts_plain_values(
    pair: tuple[list[Any], list[Any]],
    ordered: bool,
    chunk: int,
    pure_only: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    gold, pred = pair
    fast = _compare_in_chunks(monkeypatch, chunk, gold, pred, ordered)
    assert fast is not None
    assert_same(fast, pure(gold, pred, ordered))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pair=table_pairs(ANY_FAMILIES, nulls=True), ordered=st.booleans())
def test_table_comparison_same_with_fast_path_on(
    pair: tuple[list[Any], list[Any]], ordered: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    gold, pred = pair
    monkeypatch.setattr(tm, "FAST_MIN_CELLS", 10**18)
    ref = pure(gold, pred, ordered)
    monkeypatch.setattr(tm, "FAST_MIN_CELLS", 0)
    got = pure(gold, pred, ordered)
    assert repr(got.metrics()) == repr(ref.metrics())
    assert got.details() == ref.details()
    assert got.diff() == ref.diff()


TRICKY = [
    ([(1,), (2,)], [(1.0,), (2,)]),  # EX: equal values, test-suite's quick reject sees types
    ([(0.0, "a")], [(-0.0, "a")]),
    ([(1, 1.5)], [(1.0, 1.5)]),  # sorted by str+type: (1.5, 1) vs (1.0, 1.5): EX fails
    ([(0.0, -1)], [(-0.0, -1)]),  # (-1, 0.0) vs (-0.0, -1)
    ([(1, "a"), (2, "b")], [("b", 2.0), ("a", 1)]),
    ([(1, "1"), (2, "2")], [(1, "1"), (2, "2")]),  # "1" is str(1): the cast could collide
    ([(1, None), (None, "x")], [(None, "x"), (1, None)]),
    ([(None,), (None,)], [(None,)]),
    ([(True,), (1,)], [(1,), (True,)]),
    ([(2**60,)], [(2**60,)]),
    ([(float("nan"),)], [(float("nan"),)]),
    ([(1, 2), (1, 2)], [(2, 1), (1, 2), (1, 2)]),
]


@pytest.mark.parametrize("ordered", [False, True])
@pytest.mark.parametrize(("gold", "pred"), TRICKY)
def test_tricky_pairs(gold: list[Any], pred: list[Any], ordered: bool, pure_only: None) -> None:
    fast = _table_fast.compare(gold, pred, ordered)
    if fast is not None:
        assert_same(fast, pure(gold, pred, ordered))


@pytest.mark.parametrize("rows", [
    [{"a": 1, "b": 2}, {"a": 1, "b": 2}],  # dict rows would transpose to their keys
    ["ab", "cd"],  # str rows to their characters
    [(1, 2), (3,)],  # ragged
    [(1, 2), [3, 4], (5, 6, 7)],
])
def test_rows_that_are_not_rectangular_tuples_decline(rows: list[Any]) -> None:
    assert _table_fast.compare(rows, rows, False) is None


def _bench_tables(n: int) -> dict[str, tuple[ResultTable, ResultTable, bool]]:
    import random

    def row(i: int) -> tuple[Any, ...]:
        return (i, f"name{i % 5_000}", (i % 1000) / 8)

    order = list(range(n))
    random.Random(1).shuffle(order)
    gold = ResultTable(["id", "name", "score"], [row(i) for i in range(n)])
    return {
        "identical": (gold, ResultTable(gold.columns, [row(i) for i in range(n)]), True),
        "permuted": (
            gold,
            ResultTable(["score", "id", "name"], [(r[2], r[0], r[1]) for r in map(row, order)]),
            False,
        ),
        "one_differs": (
            gold,
            ResultTable(gold.columns, [row(i) if i != order[0] else (-1, "x", 0.5) for i in order]),
            False,
        ),
    }


@pytest.mark.parametrize("scenario", ["identical", "permuted", "one_differs"])
def test_benchmark_scenarios_same_results(scenario: str, monkeypatch: pytest.MonkeyPatch) -> None:
    gold, pred, ordered = _bench_tables(50_000)[scenario]
    assert _table_fast.compare(gold.rows, pred.rows, ordered) is not None  # not declined
    monkeypatch.setattr(tm, "FAST_MIN_CELLS", 10**18)
    ref = tm.compare_tables(gold, pred, order_matters=ordered)
    monkeypatch.setattr(tm, "FAST_MIN_CELLS", 0)
    got = tm.compare_tables(gold, pred, order_matters=ordered)
    assert repr(got.metrics()) == repr(ref.metrics())
    assert got.details() == ref.details()
    assert got.perm == ref.perm


def test_duplicates_and_nulls_at_scale(monkeypatch: pytest.MonkeyPatch) -> None:
    """Lexsort grouping (no unique column): duplicate rows, NULLs, int + float mixes."""
    gold = [(i % 97, None if i % 13 == 0 else f"s{i % 7}", float(i % 5)) for i in range(20_000)]
    pred = [(float(r[0]), r[1], r[2]) if i % 3 else r for i, r in enumerate(reversed(gold))]
    pred[5] = (1000, "zz", 9.0)  # EX fails (a match of int with float cells would decline)
    for ordered in (False, True):
        fast = _table_fast.compare(gold, pred, ordered)
        assert fast is not None
        monkeypatch.setattr(tm, "FAST_MIN_CELLS", 10**18)
        assert_same(fast, pure(gold, pred, ordered))


def test_small_tables_do_not_import_numpy() -> None:
    code = (
        "import sys\n"
        "from pytest_queryeval.metrics.table import table_metrics\n"
        "from pytest_queryeval.results import ResultTable\n"
        "g = ResultTable(['a', 'b'], [(1, 'x'), (2, 'y'), (3, None)])\n"
        "p = ResultTable(['b', 'a'], [('y', 2), ('x', 1), (None, 3)])\n"
        "m = table_metrics(g, p, order_matters=False)\n"
        "assert m['execution_accuracy'] == 1.0, m\n"
        "print('numpy' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_without_numpy_the_pure_path_runs() -> None:
    code = (
        "import sys\n"
        "sys.modules['numpy'] = None  # import numpy now fails\n"
        "from pytest_queryeval.metrics import table as tm\n"
        "from pytest_queryeval.results import ResultTable\n"
        "tm.FAST_MIN_CELLS = 0\n"
        "g = ResultTable(['a'], [(1,), (2,)])\n"
        "m = tm.table_metrics(g, ResultTable(['a'], [(2,), (1,)]), order_matters=False)\n"
        "assert m['execution_accuracy'] == 1.0 and tm._fast_module is False, m\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
