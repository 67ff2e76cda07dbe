"""Issue 58, the fifty-sixth round of the Cypher kind (main 1c315e2f).

A pattern was one factor of the floor whatever its length: Q2, ``(a)--(b)--(c)--(d)--(e)--
(f)--(g)`` (3,254 rows on the 13-node graph) beside ``UNWIND range(1,1300)`` was 65,000 rows
to the floor and 4,230,200 sorted; Q1, ``(a)-[*]-(b)--(c)--(d)--(e)--(f)`` (12,822 rows)
beside ``range(1,250)``, 25,000 and 3,205,500. Each held a 3 s server 8 to 10 s and the next
cases' golds timed out. Each fixed hop now multiplies the pattern's first node by 2, each
variable-length one by 100.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cypher.test_cypher_fortyfourth import hostile_then_honest

_COUNTS = "rows the text counts"
_IDS = ("id(a) + 13 * id(b) + 169 * id(c) + 2197 * id(d) + 28561 * id(e) + 371293 * id(f)")

#: (the query, a word of its refusal)
REFUSED = {
    "q1-variable-then-fixed": (
        f"MATCH (a)-[*]-(b)--(c)--(d)--(e)--(f) UNWIND range(1,250) AS k WITH {_IDS} AS z, k "
        "ORDER BY k DESC, z RETURN count(*) AS n", _COUNTS),
    "q2-fixed-chain": (
        f"MATCH (a)--(b)--(c)--(d)--(e)--(f)--(g) UNWIND range(1,1300) AS k WITH {_IDS} "
        "+ 4826809 * id(g) AS z, k ORDER BY k DESC, z RETURN count(*) AS n", _COUNTS),
}

#: Honest queries beside them: sent.
SENT = [
    "UNWIND range(1950, 2025) AS y MATCH (m:Movie {released: y})<-[:ACTED_IN]-(p:Person)"
    "-[:ACTED_IN]->(o:Movie) RETURN y, p.name, collect(o.title) AS others ORDER BY y, p.name",
    "UNWIND range(1900, 2030) AS y MATCH (m:Movie {released: y})<-[:ACTED_IN*1..2]-(p) "
    "RETURN y, count(DISTINCT p) AS n ORDER BY y",
    "UNWIND range(1, 3) AS k MATCH p=(a:Person)-[*1..2]-(m:Movie) WHERE length(p) = k "
    "RETURN k, count(p) AS c ORDER BY k",
]


def test_the_long_patterns_are_refused_and_the_honest_cases_after_them_pass(
        pytester: pytest.Pytester, tmp_path: Path) -> None:
    """Q1 and Q2 as predictions and as an agent's second ``run_query``: before, the golds of
    the honest cases after them timed out (2 of 2 runs each)."""
    hostile_then_honest(pytester, tmp_path, {name: REFUSED[name][0] for name in REFUSED})
