"""The 20 unit cases of BuildingQA's ``metrics_demo.ipynb``, with the notebook's expected values.

The notebook calls the reference functions on SPARQL-JSON binding lists; each case here builds
the same rows as a :class:`ResultTable` and asks our public API for the same number.
"""

from __future__ import annotations

import pytest

from pytest_queryeval.metrics.alignment import (
    alignment_metrics,
    arity_f1,
    arity_from_query,
)
from pytest_queryeval.results import ResultTable

from .helpers import table_from_bindings

GOLD = [
    {"name": {"value": "Alice"}, "age": {"value": "30"}},
    {"name": {"value": "Bob"}, "age": {"value": "25"}},
    {"name": {"value": "Charlie"}, "age": {"value": "35"}},
]


def t(rows: list[dict[str, dict[str, str]]]) -> ResultTable:
    return table_from_bindings(rows)


def width(rows: list[dict[str, dict[str, str]]]) -> int:
    return len(rows[0]) if rows else 0


# (name, gold rows, predicted rows, metric, expected) — the notebook passes (gt, pred).
TABLE_CASES = [
    ("Arity F1: Correct Table", GOLD, GOLD, "arity_f1", 1.0),
    ("Arity F1: Incorrect Table", GOLD, [{"name": {"value": "A"}}], "arity_f1", 2 / 3),
    ("Arity F1: Both Empty", [], [], "arity_f1", 1.0),
    ("Entity Set F1: Perfect Match", GOLD, GOLD, "entity_set_f1", 1.0),
    (
        "Entity Set F1: Perfect Match (Mapped Names)",
        GOLD,
        [{"person": r["name"], "years": r["age"]} for r in GOLD],
        "entity_set_f1",
        1.0,
    ),
    (
        "Entity Set F1: Superset Pred",
        GOLD,
        [*GOLD, {"name": {"value": "David"}, "age": {"value": "40"}}],
        "entity_set_f1",
        0.857142,
    ),
    ("Entity Set F1: Subset Pred", GOLD, GOLD[:2], "entity_set_f1", 0.8),
    (
        "Entity Set F1: No Match",
        GOLD,
        [{"name": {"value": "Z"}, "age": {"value": "99"}}],
        "entity_set_f1",
        0.0,
    ),
    ("Row Match F1: Perfect Match", GOLD, GOLD, "row_match_f1", 1.0),
    (
        "Row Match F1: Perfect Match (Mapped Names)",
        GOLD,
        [{"p": r["name"], "a": r["age"]} for r in GOLD],
        "row_match_f1",
        1.0,
    ),
    (
        "Row Match F1: Shuffled Order (Mapped Names)",
        GOLD,
        [{"a": r["age"], "p": r["name"]} for r in reversed(GOLD)],
        "row_match_f1",
        1.0,
    ),
    ("Row Match F1: Subset Pred", GOLD, GOLD[:1], "row_match_f1", 0.5),
    (
        "Row Match F1: Partial Content Mismatch",
        GOLD,
        [
            {"name": {"value": "Alice"}, "age": {"value": "30"}},
            {"name": {"value": "Bob"}, "age": {"value": "99"}},
        ],
        "row_match_f1",
        0.4,
    ),
    ("Exact Match F1: Perfect Match", GOLD, GOLD, "exact_match_f1", 1.0),
    ("Exact Match F1: Shuffled Order", GOLD, [GOLD[1], GOLD[2], GOLD[0]], "exact_match_f1", 1.0),
    (
        "Exact Match F1: Schema Mismatch",
        GOLD,
        [{"person": {"value": "Alice"}, "years": {"value": "30"}}],
        "exact_match_f1",
        0.5,
    ),
    ("Exact Match F1: Subset Pred", GOLD, GOLD[:2], "exact_match_f1", 0.8),
    ("Exact Match F1: Both Empty", [], [], "exact_match_f1", 1.0),
]


@pytest.mark.parametrize(
    ("gold", "pred", "metric", "expected"),
    [c[1:] for c in TABLE_CASES],
    ids=[c[0] for c in TABLE_CASES],
)
def test_notebook_table_case(gold, pred, metric, expected):
    got = alignment_metrics(t(gold), t(pred), arity_from="result")[metric]
    # the notebook's check is numpy.isclose (rtol 1e-5, atol 1e-8)
    assert got == pytest.approx(expected, rel=1e-5, abs=1e-8)


# The notebook mixes a query string with a result list for arity; our API takes each side's
# width from the query (arity_from_query) or from the result, so the case composes the two.
@pytest.mark.parametrize(
    ("query", "expected"),
    [("SELECT ?n ?a WHERE {}", 1.0), ("SELECT ?n WHERE {}", 2 / 3)],
    ids=["Arity F1: Correct SPARQL", "Arity F1: Incorrect SPARQL"],
)
def test_notebook_arity_query_case(query, expected):
    assert arity_f1(arity_from_query(query), width(GOLD)) == pytest.approx(expected, rel=1e-5)


def test_all_twenty_cases_present():
    assert len(TABLE_CASES) + 2 == 20
