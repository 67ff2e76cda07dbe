"""Issue 58, the fifty-third round of the Cypher kind (main 1f089dd7).

The sort floor took each pattern a ``MATCH`` matches for 2 rows at least, wherever it stood.
M1: two patterns apart from the rows before them (``MATCH (a), (b)``, or two ``OPTIONAL
MATCH`` clauses) beside ``UNWIND range(1,18000)``, sorted by their nodes, were 72,000 rows
to the floor and 3,042,000 on the 13-node graph: the server was held 17 s past a 3 s timeout
and the next cases' golds timed out. M2: nodes collected and unwound twice added nothing to
the floor (the same 3,042,000 rows, the same gold timeouts). M3: a ``LIMIT`` over graph rows
set the floor to one row. A pattern that shares no variable with the rows before it, and is
not matched by equality to the values the query's one counted ``UNWIND`` binds, is taken for
50 rows; a list the text does not count, unwound, for 50; a ``LIMIT`` keeps the rows it lets
through; a list a literal ``range()`` makes, named or in a comprehension, counts its values.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cypher.test_cypher_fortyfourth import hostile_then_honest

_COUNTS = "rows the text counts"
_SORT_NODES = " WITH a, b ORDER BY b DESC, a RETURN count(*) AS n"

#: (the query, a word of its refusal)
REFUSED = {
    "m1-two-patterns": ("UNWIND range(1,18000) AS k MATCH (a), (b)" + _SORT_NODES, _COUNTS),
    "m1-two-matches": ("UNWIND range(1,18000) AS k MATCH (a) MATCH (b)" + _SORT_NODES, _COUNTS),
    "m1-optional": ("UNWIND range(1,18000) AS k OPTIONAL MATCH (a) OPTIONAL MATCH (b)"
                    + _SORT_NODES, _COUNTS),
    "m1-small-range": ("UNWIND range(1,1000) AS k MATCH (a), (b)" + _SORT_NODES, _COUNTS),
    "m1-equality-beside-a-second-unwind": (
        "UNWIND range(1,18000) AS j UNWIND [1999] AS k MATCH (a {released: k}), "
        "(b {released: k})" + _SORT_NODES, _COUNTS),
    "m1-equality-inside-or": ("UNWIND range(1,18000) AS k MATCH (a), (b) WHERE a.released = k "
                              "OR true" + _SORT_NODES, _COUNTS),
    "m1-equality-rebound": ("UNWIND range(1,18000) AS j WITH j, 1999 AS k MATCH "
                            "(a {released: k}), (b {released: k})" + _SORT_NODES, _COUNTS),
    "m2-collected-unwound": ("MATCH (a) WITH collect(a) AS xs UNWIND range(1,18000) AS k "
                             "UNWIND xs AS a UNWIND xs AS b" + _SORT_NODES, _COUNTS),
    "m2-collected-then-match": ("MATCH (a) WITH collect(a) AS xs UNWIND xs AS a UNWIND "
                                "range(1,12000) AS k MATCH (b)" + _SORT_NODES, _COUNTS),
    # a list a range makes, which the text states but did not count, unwound beside a pattern
    "m2-named-range": ("WITH range(1,100000) AS r UNWIND r AS k MATCH (a) WITH a, k "
                       "ORDER BY a RETURN count(*) AS n", _COUNTS),
    "m2-filtered-comprehension": ("UNWIND [x IN range(1,100000) WHERE x > 0 | x] AS k "
                                  "MATCH (a) WITH a, k ORDER BY a RETURN count(*) AS n",
                                  _COUNTS),
    "m3-limited": ("MATCH (a) WITH a LIMIT 13 UNWIND range(1,18000) AS k MATCH (b)"
                   + _SORT_NODES, _COUNTS),
    "m3-subquery": ("UNWIND range(1,12000) AS k CALL { MATCH (a) RETURN a } MATCH (b)"
                    + _SORT_NODES, _COUNTS),
}

#: Honest queries beside them: sent (the honest sets of rounds 48 to 51, 71 queries, are
#: read as on 0f5d16c9).
SENT = [
    "UNWIND range(0, 20000) AS i MATCH (m:Movie) WHERE m.released = i "
    "RETURN DISTINCT m.title ORDER BY m.title",
    "UNWIND range(1900, 2025) AS y MATCH (p:Person)-[:ACTED_IN]->(m:Movie), "
    "(d:Person)-[:DIRECTED]->(m) WHERE m.released = y RETURN y, p.name, d.name ORDER BY y",
    "UNWIND range(1990, 2020) AS y MATCH (a:Person)-[:ACTED_IN]->(m:Movie {released: y})"
    "<-[:ACTED_IN]-(b:Person) WHERE a.name < b.name RETURN y, a.name, b.name "
    "ORDER BY y, a.name, b.name",
    "UNWIND range(0, 20000) AS i MATCH (a:Movie {released: i}), (b:Movie {released: i}) "
    "RETURN a.title, b.title ORDER BY a.title, b.title",
    "UNWIND [1980, 1990, 2000] AS decade MATCH (m:Movie) WHERE m.released >= decade AND "
    "m.released < decade + 10 MATCH (m)<-[:ACTED_IN]-(p)-[:ACTED_IN*2]-(q) "
    "RETURN decade, count(DISTINCT q) AS n ORDER BY decade",
    "MATCH (m:Movie) WITH collect(m) AS ms UNWIND range(1, 3) AS k UNWIND ms AS m "
    "RETURN k, m.title ORDER BY k, m.title",
    "WITH range(1, 3) AS r UNWIND r AS k MATCH (m:Movie) RETURN k, m.title ORDER BY k",
    "MATCH (m:Movie) WITH m ORDER BY m.released LIMIT 5 UNWIND range(1, 3) AS k "
    "RETURN k, m.title ORDER BY k, m.title",
]


def test_the_products_apart_are_refused_and_the_honest_cases_after_them_pass(
        pytester: pytest.Pytester, tmp_path: Path) -> None:
    """M1 and M2 as predictions and as an agent's second ``run_query``: before, the golds of
    the honest cases after them timed out (2 of 2 runs each)."""
    hostile_then_honest(pytester, tmp_path, {name: REFUSED[name][0] for name in (
        "m1-two-patterns", "m2-collected-unwound")})
