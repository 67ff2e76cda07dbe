"""Issue 58, the forty-eighth round of the Cypher kind (main c818edad).

H3 (``rehearse: false``): ``MATCH p=(a)-[*]-(b) CALL { UNWIND range(1,100000) AS k RETURN k }
WITH p, k ORDER BY p`` was taken for the 100,000 rows the text counts, not their product with
the paths the ``MATCH`` makes (314 on the test graph: 31,400,000 rows), and held a 3 s server
11.4 s with 1.5 GB; the next case's gold timed out. Beside rows the text counts, each
pattern a ``MATCH`` matches is taken for 2 rows at least, 100 with a variable-length
relationship (an ``OPTIONAL MATCH`` as a ``MATCH``); alone, such a guess refuses no sort.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cypher.test_cypher_fortyfourth import hostile_then_honest

#: the forty-ninth round's path-keyed sort refuses some first
_SORTED = "rows the text counts|keyed by the path"
_SUB = "CALL { UNWIND range(1,%d) AS k RETURN k }"

#: (the query, a word of its refusal)
REFUSED = {
    "h3-path-beside-a-subquery": (
        f"MATCH p=(a)-[*]-(b) {_SUB % 100000} WITH p, k ORDER BY p RETURN count(*) AS c",
        _SORTED),
    "h3-one-hop-beside-a-subquery": (
        f"MATCH p=(a)-[]-(b) {_SUB % 100000} WITH p, k ORDER BY p RETURN count(*) AS c",
        _SORTED),
    "h3-a-thousandth": (
        f"MATCH p=(a)-[*]-(b) {_SUB % 101} WITH p, k ORDER BY p RETURN count(*) AS c", _SORTED),
    "h3-subquery-first": (
        f"{_SUB % 10000} MATCH p=(a)-[*]-(b) WITH p, k ORDER BY p DESC, k DESC "
        "RETURN count(*) AS c", _SORTED),
    "h3-unwound-at-the-top": (
        "MATCH p=(a)-[*]-(b) UNWIND range(1,500) AS k WITH p, k ORDER BY p RETURN count(*) AS c",
        _SORTED),
    "h3-distinct": (f"MATCH p=(a)-[]-(b) {_SUB % 20000} RETURN DISTINCT p, k", _SORTED),
}

#: Honest queries beside them: sent (the round's own honest set, 33 and 12 queries, was
#: read the same before and after).
SENT = [
    f"MATCH p=(a)-[*]-(b) {_SUB % 100} WITH p, k ORDER BY length(p), k RETURN count(*) AS c",
    # (10,000 there until the fifty-third round took a pattern apart from the rows the text
    # counts for 50: test_cypher_fiftythird)
    f"MATCH (a)-[]-(b) {_SUB % 1000} WITH a, k ORDER BY a.name, k RETURN count(*) AS c",
    "MATCH (a:Person {name: 'Keanu Reeves'})-[:ACTED_IN*1..2]-(b), (c:Person {name: "
    "'Lana Wachowski'})-[:DIRECTED*1..2]-(b) OPTIONAL MATCH (b)-[:ACTED_IN]->(m) "
    "RETURN DISTINCT b.name AS n",
    "MATCH (a:Person {name: 'Keanu Reeves'})-[*1..3]-(b:Person) OPTIONAL MATCH "
    "(b)-[:ACTED_IN]->(m) OPTIONAL MATCH (b)-[:DIRECTED]->(n) RETURN b.name AS b, "
    "count(DISTINCT m) AS acted, count(DISTINCT n) AS directed",
    "MATCH (m:Movie) UNWIND range(1, 3) AS k RETURN m.title AS t, k ORDER BY t, k",
    "MATCH (a:Person)-[:ACTED_IN]->(m) OPTIONAL MATCH (m)<-[:DIRECTED]-(d) "
    "UNWIND [1, 2] AS k RETURN a.name AS n, d.name AS dn, k ORDER BY n",
]


def test_the_sorted_products_are_refused_and_the_honest_cases_after_them_pass(
        pytester: pytest.Pytester, tmp_path: Path) -> None:
    """H3 as a prediction and as an agent's second ``run_query``: before, one held the server
    past its timeout and the next honest case's gold timed out."""
    hostile_then_honest(pytester, tmp_path, {name: REFUSED[name][0] for name in (
        "h3-path-beside-a-subquery", "h3-one-hop-beside-a-subquery")})
