"""TEXT2SPARQL's answer dict, read column by column in C for term columns, equals the
reference's cell-by-cell reading, order included (ndcg ranks by it)."""

from __future__ import annotations

import random

from pytest_queryeval.metrics.text2sparql import _value, answers_from_table
from pytest_queryeval.results import ResultTable, Term


def _reference(table: ResultTable) -> list[str]:
    out: dict[str, int] = {}
    for index in range(len(table.columns)):
        for row in table.rows:
            if row[index] is not None:
                out[_value(row[index])] = 1
    return list(out)


def test_column_reading_keeps_the_reference_order() -> None:
    rng = random.Random(3)
    pool = [None, Term("uri", "a"), Term("literal", "a"), Term("literal", "b", None, "en"),
            Term("literal", "1", "http://www.w3.org/2001/XMLSchema#integer"), Term("uri", "c")]
    mixed = [*pool, "a", 1, 2.5]
    for trial in range(500):
        cells = pool if trial % 2 else mixed
        width = rng.randrange(1, 4)
        rows = [tuple(rng.choice(cells) for _ in range(width)) for _ in range(rng.randrange(6))]
        table = ResultTable([f"c{i}" for i in range(width)], rows)
        assert list(answers_from_table(table)) == _reference(table)
