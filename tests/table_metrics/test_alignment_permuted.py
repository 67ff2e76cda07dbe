"""The alignment metrics' short cut for large SQL results whose columns are merely permuted:
the same values as the search, bit for bit, or no short cut at all."""

from __future__ import annotations

import random
from typing import Any

import pytest

from pytest_queryeval.metrics import alignment
from pytest_queryeval.metrics._alignment_search import SearchBudgetExhausted
from pytest_queryeval.results import ResultTable

ROWS = 3000  # 2 x 3,000 x 4 cells: over the short cut's threshold


def _table(seed: int, make: Any) -> list[tuple[Any, ...]]:
    rng = random.Random(seed)
    return [make(i, rng) for i in range(ROWS)]


def _shuffled(rows: list[tuple[Any, ...]], order: list[int], seed: int) -> list[tuple[Any, ...]]:
    out = [tuple(r[j] for j in order) for r in rows]
    random.Random(seed).shuffle(out)
    return out


def _both(gold: ResultTable, pred: ResultTable) -> tuple[dict[str, float], dict[str, float]]:
    """(the short cut's metrics, the search's metrics)."""
    return (alignment.alignment_metrics(gold, pred, kind="sql"),
            alignment.alignment_details(gold, pred, kind="sql").metrics)


def plain(i: int, rng: random.Random) -> tuple[Any, ...]:
    return (i, f"Name-{rng.randrange(400)}", rng.random() * 100 + 1, f"city-{i % 37}")


VARIANTS = {
    # name: (row maker, predicted column order, predicted names or None for the gold's)
    "permuted, same names": (plain, [3, 0, 2, 1], None),
    "permuted, other names": (plain, [3, 0, 2, 1], ["a", "b", "c", "d"]),
    "identity order, rows shuffled": (plain, [0, 1, 2, 3], None),
    "two equal columns": (lambda i, r: (i % 50, i % 50, f"x{i}", None if i % 7 else "y"),
                          [1, 0, 3, 2], None),
    "columns equal after lowercasing": (
        lambda i, r: (f"V{i % 9}", f"v{i % 9}", i, f"w{i}"), [1, 0, 2, 3], ["c1", "c0", "c2",
                                                                             "c3"]),
    "int and float that compare equal": (lambda i, r: (i % 11, float(i % 11), f"k{i}", i),
                                         [1, 0, 2, 3], None),
    "float zeros": (lambda i, r: (0.0 if i % 3 else -0.0, i, f"z{i % 5}", r.random()),
                    [1, 0, 3, 2], None),
    "bools and ints": (lambda i, r: (i % 2 == 0, i % 2, f"b{i}", i), [1, 0, 2, 3], None),
    "digits as text": (lambda i, r: (i % 13, str(i % 13), f"t{i}", i), [1, 0, 2, 3], None),
}


#: The variants the short cut decides (the others it leaves to the search: equal or
#: equal-looking columns, numbers of two types that compare equal, float zeros).
SHORT_CUT = {"permuted, same names", "permuted, other names", "identity order, rows shuffled",
             "bools and ints"}


@pytest.mark.parametrize("name", list(VARIANTS))
def test_same_values_as_the_search(name: str) -> None:
    make, order, names = VARIANTS[name]
    rows = _table(1, make)
    cols = ["c0", "c1", "c2", "c3"]
    gold = ResultTable(cols, rows)
    pred = ResultTable(names or [cols[j] for j in order], _shuffled(rows, order, 2))
    fast, search = _both(gold, pred)
    assert fast == search
    assert (alignment._permuted_copy(gold, pred) is not None) == (name in SHORT_CUT)
    assert [type(v) for v in fast.values()] == [float] * 4


def test_a_wrong_prediction_is_left_to_the_search() -> None:
    rows = _table(3, plain)
    gold = ResultTable(["id", "name", "score", "city"], rows)
    wrong = _shuffled(rows, [3, 0, 2, 1], 4)
    wrong[17] = (wrong[17][0], -1, *wrong[17][2:])
    pred = ResultTable(["city", "id", "score", "name"], wrong)
    fast, search = _both(gold, pred)
    assert fast == search
    assert 0.99 < fast["row_match_f1"] < 1.0


def test_exact_match_where_positions_share_values() -> None:
    """The identity mapping can match rows when the swapped columns share normalised values:
    then the search decides it (here: every row matches under both mappings)."""
    rows = [(f"A{i % 4}", f"a{i % 4}", i) for i in range(ROWS)]
    gold = ResultTable(["x", "y", "z"], rows)
    pred = ResultTable(["y", "x", "z"], _shuffled(rows, [1, 0, 2], 5))
    fast, search = _both(gold, pred)
    assert fast == search
    assert fast["exact_match_f1"] == 1.0


def test_too_wide_to_search_still_scores_a_permuted_copy() -> None:
    """280 columns: the search refuses the shape before any work (its first level alone is
    over the budget), but a prediction holding the gold's columns in another order needs no
    search."""
    width, n = 280, 40
    cols = [f"c{k}" for k in range(width)]
    rows = [tuple(i * width + k for k in range(width)) for i in range(n)]
    order = list(range(width))
    random.Random(6).shuffle(order)
    gold = ResultTable(cols, rows)
    pred = ResultTable([cols[j] for j in order], _shuffled(rows, order, 7))
    with pytest.raises(SearchBudgetExhausted):
        alignment.alignment_details(gold, pred, kind="sql")
    assert alignment.alignment_metrics(gold, pred, kind="sql") == {
        "arity_f1": 1.0, "entity_set_f1": 1.0, "row_match_f1": 1.0, "exact_match_f1": 0.0}


def test_forced_columns_cost_no_row_check(monkeypatch: pytest.MonkeyPatch) -> None:
    """Execution accuracy's column assignment charges a check's rows only for the checks it
    makes: a gold column with a single candidate is a forced step (1,000,000 rows x 4 columns
    with one candidate each exhausted the budget before the one check that decides)."""
    from pytest_queryeval.metrics import _table_common

    rows, ncol = 1_000_000, 4
    monkeypatch.setattr(_table_common, "ASSIGNMENT_BUDGET", 2 * (100 + rows * ncol))
    full: list[tuple[int, ...]] = []

    def full_ok(perm: tuple[int, ...]) -> bool:
        full.append(perm)
        return True

    found = _table_common.search_assignment([[3], [0], [2], [1]], lambda _: True, full_ok, rows)
    assert found == (3, 0, 2, 1)
    assert full == [(3, 0, 2, 1)]
