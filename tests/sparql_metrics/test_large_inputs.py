"""Large tables take the search's big-input paths (sampled incumbent, chunked early stops).

Checked against the exhaustive permutation search of ``brute_force.bf_best_hashed`` on tables of
9,000-12,000 rows, with low-cardinality values that make ties and near-ties common.
"""

from __future__ import annotations

import random

import pytest

from pytest_queryeval.metrics.alignment import alignment_details
from pytest_queryeval.results import ResultTable, Term

pytest.importorskip("numpy")

from .brute_force import bf_best_hashed


def generated(seed: int) -> tuple[ResultTable, ResultTable]:
    rnd = random.Random(seed)
    n = rnd.choice([9000, 12000])
    ng = rnd.choice([3, 4])
    npc = ng + rnd.choice([1, 2])
    vocab = rnd.choice([3, 6, 50, 3000])
    terms = [Term("literal", rnd.choice("Vv") + str(i)) for i in range(vocab)]
    gold = [tuple(rnd.choice(terms) for _ in range(ng)) for _ in range(n)]
    true = rnd.sample(range(npc), ng)
    copied = rnd.random()
    pred = []
    for k in range(n):
        row = [rnd.choice(terms) for _ in range(npc)]
        if rnd.random() < copied:
            for i, j in enumerate(true):
                row[j] = gold[rnd.randrange(n) if rnd.random() < 0.2 else k][i]
        pred.append(tuple(row))
    if rnd.random() < 0.3:  # two identical predicted columns
        a, b = rnd.sample(range(npc), 2)
        pred = [tuple(r[a] if c == b else v for c, v in enumerate(r)) for r in pred]
    return (
        ResultTable([f"g{i}" for i in range(ng)], gold),
        ResultTable([f"p{j}" for j in range(npc)], pred),
    )


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_large_tables_match_exhaustive_search(seed):
    gold, pred = generated(seed)
    d = alignment_details(gold, pred, kind="sparql")
    want = bf_best_hashed(gold, pred)
    assert d.metrics["row_match_f1"] == want["row_match_f1"]
    assert d.metrics["entity_set_f1"] == want["entity_set_f1"]
    assert d.mapping == want["mapping"]
