"""Issue 58, the sixty-ninth round of the Cypher kind (main ac181247).

H1 to H5: a percentile aggregate (``percentileDisc``, ``percentileCont``) gathers every value
of its rows and sorts them in one step without checking its timeout, and the guard weighed
sorts, ``DISTINCT``s and groupings but not it: ``percentileDisc(rand(), 0.5)`` over a product
of two ``range(1,1000000)`` held a 3 s server 10 s (eight of them 15 s), over seven node
patterns 8 to 10 s, and the golds of the honest cases after it timed out (4 of 4 runs after
an agent's call). A percentile now takes the bounds of a sort over its rows. M1 (MEDIUM):
``collect()`` over a product of seven node patterns grew the server to 2 GB past its 256 MB
cap on a query's memory; a ``collect()`` over a product of :data:`bounds.MAX_PRODUCT`
patterns or more, or of wide values over more than :data:`bounds.MAX_SORTED` rows at least,
is refused.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cypher.test_cypher_fortyfourth import hostile_then_honest

_TWO_RANGES = "UNWIND range(1,1000000) AS a UNWIND range(1,1000000) AS b "
_SEVEN = "MATCH (a), (b), (c), (d), (e), (f), (g) "

#: (the query, a word of its refusal)
REFUSED = {
    "h1-a-percentile-of-a-product-of-ranges": (
        _TWO_RANGES + "RETURN percentileDisc(rand(), 0.5)", "percentileDisc.. at"),
    "h2-a-percentile-of-seven-patterns": (
        _SEVEN + "RETURN percentileDisc(rand(), 0.5)", "product of 7 patterns"),
    "h3-a-percentile-beside-a-variable-length-match": (
        "MATCH (a)-[*]-(b) UNWIND range(1,1000000) AS k RETURN percentileCont(rand(), 0.5)",
        "percentileCont.. at"),
    "h4-a-percentile-in-a-with": (
        _TWO_RANGES + "WITH percentileDisc(rand(), 0.5) AS p RETURN p", "percentileDisc.. at"),
    "h5-eight-percentiles": (
        _TWO_RANGES + "RETURN " + ", ".join(f"percentileDisc(rand(), 0.{i})" for i in range(1, 9)),
        "percentileDisc.. at"),
    "h-a-percentile-beside-a-grouping-key": (
        _SEVEN + "RETURN a.name AS n, percentileCont(rand(), 0.5) AS p", "product of 7"),
    "m1-a-collect-of-lists-over-seven-patterns": (
        _SEVEN + "RETURN size(collect([" + ", ".join(["a", "b", "c", "d", "e", "f", "g"] * 4)
        + "]))", "collect.. at"),
    "m1-a-collect-of-maps-over-seven-patterns": (
        _SEVEN + "RETURN size(collect({a: id(a), b: id(b), c: id(c), d: id(d), e: id(e), "
        "f: id(f), g: id(g)}))", "collect.. at"),
    "m1-a-collect-of-numbers-over-seven-patterns": (
        _SEVEN + "RETURN size(collect(id(a)))", "in memory"),
    "m1-a-collect-of-lists-over-a-range-and-two-patterns": (
        "UNWIND range(1,1000000) AS x MATCH (a), (b) RETURN size(collect([x, a, b]))",
        "which no count bounds"),
}

#: Honest percentiles and collections beside them: sent.
SENT = [
    "MATCH (m:Movie) RETURN percentileDisc(m.rating, 0.5) AS median",
    "MATCH (p:Person)-[:ACTED_IN]->(m:Movie) RETURN m.title AS t, "
    "percentileCont(p.born, 0.5) AS born ORDER BY t",
    "UNWIND range(1,1000) AS k RETURN percentileCont(k, 0.9) AS p",
    "MATCH (m:Movie) OPTIONAL MATCH (m)<-[r:ACTED_IN]-(p) RETURN m.title AS t, "
    "collect({name: p.name, roles: r.roles}) AS cast",
    "MATCH (p:Person), (m:Movie) RETURN collect(p.name) AS names",
    "UNWIND range(1,200000) AS x RETURN size(collect(x)) AS n",
]


def test_the_percentiles_are_refused_and_the_honest_cases_after_them_pass(
        pytester: pytest.Pytester, tmp_path: Path) -> None:
    """H1, H2 and H5 as predictions and as an agent's second ``run_query``: before, the golds
    of the honest cases after them timed out (H1: 4 of 4 runs, H5: 2 of 2)."""
    hostile_then_honest(pytester, tmp_path, {name: REFUSED[name][0] for name in (
        "h1-a-percentile-of-a-product-of-ranges", "h2-a-percentile-of-seven-patterns",
        "h5-eight-percentiles")})
