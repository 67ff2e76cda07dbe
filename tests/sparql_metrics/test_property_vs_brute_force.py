"""The fast metrics equal the brute-force reference algorithm, mapping choice and ties included.

``brute_force.py`` scores every permutation and matches rows pairwise, as BuildingQA does; the
cases are small random tables built to collide: few distinct values, values that differ only in
the ways ``normalize_value`` erases (case, quotes, ``^^``/``@lang`` tails), unbound cells
(which drop a SPARQL column when in the first row), duplicated rows and duplicated columns.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_queryeval.metrics._alignment_search import np_mean
from pytest_queryeval.metrics.alignment import alignment_details
from pytest_queryeval.results import ResultTable, Term

np = pytest.importorskip("numpy")

from .brute_force import bf_table_metrics  # noqa: E402

RAW = ["a", "A", " a ", '"a"', "a^^x", "a@en", "b", "B@en-US", "", "c", "user@ab", "1"]
SQL_VALUES: list[Any] = ["a", "A", "b", "", 1, "1", 1.0, True, "true", None]

SETTINGS = settings(
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@st.composite
def sparql_cell(draw: st.DrawFn, pool: list[str]) -> Term | None:
    if draw(st.integers(0, 9)) == 0:
        return None
    value = draw(st.sampled_from(pool))
    kind = draw(st.sampled_from(["literal", "literal", "uri"]))
    dt = draw(st.sampled_from([None, None, "http://www.w3.org/2001/XMLSchema#integer"]))
    return Term(kind, value, dt if kind == "literal" else None)


@st.composite
def table(
    draw: st.DrawFn, kind: str, max_cols: int, max_rows: int, min_cols: int = 0, min_rows: int = 0
) -> ResultTable:
    n_cols = draw(st.integers(min_cols, max_cols))
    n_rows = draw(st.integers(min_rows, max_rows))
    if kind == "sparql":
        pool = draw(st.lists(st.sampled_from(RAW), min_size=1, max_size=4, unique=True))
        cell = sparql_cell(pool)
    else:
        cell = st.sampled_from(SQL_VALUES)
    rows = [tuple(draw(cell) for _ in range(n_cols)) for _ in range(n_rows)]
    if n_cols >= 2 and rows and draw(st.booleans()):
        # duplicate a column: exercises the interchangeable-column shortcut and exact ties
        src, dst = draw(st.integers(0, n_cols - 1)), draw(st.integers(0, n_cols - 1))
        rows = [tuple(r[src] if i == dst else v for i, v in enumerate(r)) for r in rows]
    if rows and draw(st.booleans()):
        rows = [*rows, draw(st.sampled_from(rows))]  # a duplicated row
    return ResultTable([f"c{i}" for i in range(n_cols)], rows)


@st.composite
def related_pair(draw: st.DrawFn, kind: str, max_cols: int, max_rows: int):
    """A gold table and a prediction that is often a column-shuffled, edited copy of it."""
    gold = draw(table(kind, max_cols, max_rows))
    if draw(st.booleans()) or not gold.columns:
        return gold, draw(table(kind, max_cols + 1, max_rows))
    n = len(gold.columns)
    extra = draw(st.integers(0, 2))
    order = draw(st.permutations(list(range(n + extra))))
    other = draw(table(kind, extra, len(gold.rows) or 1))
    rows = []
    for k, r in enumerate(gold.rows):
        pad = other.rows[k % len(other.rows)] if other.rows and extra else ()
        full = (*r, *pad, *([None] * (extra - len(pad))))
        rows.append(tuple(full[i] for i in order))
    keep = draw(st.lists(st.booleans(), min_size=len(rows), max_size=len(rows)))
    rows = [r for r, k in zip(rows, keep, strict=True) if k]
    return gold, ResultTable([f"p{i}" for i in range(n + extra)], rows)


def check(gold: ResultTable, pred: ResultTable, kind: str) -> None:
    """Both search paths: the reference loop small tables take, and the branch and bound."""
    from unittest import mock

    from pytest_queryeval.metrics import alignment

    want = bf_table_metrics(gold, pred, kind)
    for small_perms in (alignment._SMALL_PERMS, 0):
        with mock.patch.object(alignment, "_SMALL_PERMS", small_perms):
            d = alignment_details(gold, pred, kind=kind, arity_from="result")
        for name in ("arity_f1", "entity_set_f1", "row_match_f1", "exact_match_f1"):
            assert d.metrics[name] == want[name], (name, small_perms)  # bit-for-bit
        assert d.mapping == want["mapping"], small_perms


@settings(SETTINGS, max_examples=1200)
@given(data=st.data())
def test_sparql_small_tables(data):
    gold, pred = data.draw(related_pair("sparql", 4, 6))
    check(gold, pred, "sparql")


@settings(SETTINGS, max_examples=600)
@given(data=st.data())
def test_sql_small_tables(data):
    gold, pred = data.draw(related_pair("sql", 4, 5))
    check(gold, pred, "sql")


@settings(SETTINGS, max_examples=150)
@given(data=st.data())
def test_wider_tables(data):
    gold, pred = data.draw(related_pair("sparql", 5, 4))
    check(gold, pred, "sparql")


@pytest.mark.slow
@settings(SETTINGS, max_examples=3)
@given(data=st.data())
def test_eight_columns_numpy_summation_order(data):
    # 8+ averaged columns switch numpy.mean to its unrolled pairwise sum: the tie-break floats
    # must still be the reference's.
    gold = data.draw(table("sparql", 8, 3, min_cols=8, min_rows=1))
    pred = data.draw(table("sparql", 8, 2, min_cols=8, min_rows=1))
    check(gold, pred, "sparql")


@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(0, 1), min_size=1, max_size=300))
def test_np_mean_is_numpy_mean(values):
    assert np_mean(values) == float(np.mean(values))


@settings(SETTINGS, max_examples=500)
@given(data=st.data())
def test_chunked_refinement_and_sampled_incumbent(data):
    # Large inputs take two shortcuts: rows are refined in chunks that stop early, and a search
    # on a strided sample of predicted rows supplies the first incumbent. Shrink both thresholds
    # so small tables go through them too.
    from unittest import mock

    from pytest_queryeval.metrics import _alignment_search as search

    gold, pred = data.draw(related_pair("sparql", 4, 7))
    chunk, sample = data.draw(st.integers(1, 3)), data.draw(st.integers(1, 2))
    with mock.patch.object(search, "_CHUNK", chunk), mock.patch.object(search, "_SAMPLE", sample):
        check(gold, pred, "sparql")
