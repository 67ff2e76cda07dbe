"""Issue 58, the seventieth round of the Cypher kind (main 73d6fcc9).

H1: a ``CALL { }`` subquery whose ``RETURN`` aggregates only gives one row of each outer row,
and the rows were taken back to the outer ones at the ``RETURN`` itself, before its items:
round 69's percentile, checked as a sort of its rows, was weighed over one row there.
``CALL { UNWIND range(1,1000000) AS a UNWIND range(1,1000000) AS b RETURN
percentileDisc(rand(), 0.5) AS p } RETURN p`` held a 3 s server 10.5 s, eight percentiles
13.9 s, and the golds of the two honest cases after it timed out (2 of 2 runs); the same in a
``UNION`` branch or an importing subquery. The items now take the subquery's rows. M1
(MEDIUM): a ``collect()`` there over rows no count bounds grew the server to 2.2 GB against
its 256 MB cap; a ``collect()`` over more than :data:`bounds.MAX_RANGE` rows at least is
refused.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cypher.test_cypher_fortyfourth import hostile_then_honest

_R = "UNWIND range(1,1000000) AS a UNWIND range(1,1000000) AS b"

#: (the query, a word of its refusal)
REFUSED = {
    "h1-a-percentile-in-a-call": (
        f"CALL {{ {_R} RETURN percentileDisc(rand(), 0.5) AS p }} RETURN p", "percentileDisc"),
    "h1-eight-percentiles-in-a-call": (
        f"CALL {{ {_R} RETURN " + ", ".join(f"percentileDisc(rand(), 0.{i}) AS p{i}"
                                           for i in range(1, 9)) + " } RETURN p1",
        "percentileDisc"),
    "h1-an-importing-call": (
        f"MATCH (x) CALL {{ WITH x {_R} RETURN percentileCont(rand(), 0.5) AS p }} RETURN p",
        "percentileCont"),
    "h1-a-union-branch-in-a-call": (
        f"CALL {{ RETURN 1 AS p UNION {_R} RETURN percentileDisc(rand(), 0.5) AS p }} RETURN p",
        "percentileDisc"),
    "h1-the-first-union-branch-in-a-call": (
        f"CALL {{ {_R} RETURN percentileDisc(rand(), 0.5) AS p UNION RETURN 1 AS p }} RETURN p",
        "percentileDisc"),
    "h1-a-call-in-a-call": (
        f"CALL {{ CALL {{ {_R} RETURN percentileDisc(rand(), 0.5) AS p }} RETURN p }} RETURN p",
        "percentileDisc"),
    "m1-a-collect-of-lists-in-a-call": (
        f"CALL {{ {_R} RETURN size(collect([" + ", ".join(["a", "b"] * 14) + "])) AS c } "
        "RETURN c", "rows at least"),
    "m1-a-collect-of-numbers-in-a-call": (
        f"CALL {{ {_R} RETURN size(collect(rand())) AS c }} RETURN c", "rows at least"),
}

#: Honest subqueries that aggregate: sent.
SENT = [
    "MATCH (m:Movie) CALL { WITH m MATCH (m)<-[:ACTED_IN]-(p:Person) "
    "RETURN percentileDisc(p.born, 0.5) AS b } RETURN m.title, b",
    "CALL { UNWIND range(1,1000) AS k RETURN percentileCont(k, 0.9) AS p } RETURN p",
    "MATCH (m:Movie) CALL { WITH m MATCH (m)<-[:ACTED_IN]-(p:Person) "
    "RETURN collect(p.name) AS names } RETURN m.title, size(names) AS n",
    "MATCH (m:Movie) CALL { WITH m MATCH (m)<-[:ACTED_IN]-(p:Person) RETURN count(p) AS n } "
    "RETURN m.title AS t, n ORDER BY n DESC",
]


def test_the_subqueries_percentiles_are_refused_and_the_honest_cases_after_them_pass(
        pytester: pytest.Pytester, tmp_path: Path) -> None:
    """H1 as predictions and as an agent's second ``run_query``: before, the golds of the
    honest cases after them timed out (2 of 2 runs)."""
    hostile_then_honest(pytester, tmp_path, {name: REFUSED[name][0] for name in (
        "h1-eight-percentiles-in-a-call", "h1-a-union-branch-in-a-call")})
