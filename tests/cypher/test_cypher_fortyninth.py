"""Issue 58, the forty-ninth round of the Cypher kind (main 5122dbe2).

Past the forty-eighth round's floor (each ``MATCH`` beside rows the text counts taken for a
few rows at least), a sort keyed by a path still compared millions of paths with
``rehearse: false``: I1, ``UNWIND range(1,100000) AS k OPTIONAL MATCH p=(a)-[*]-(b) WITH p,
k ORDER BY p`` (an ``OPTIONAL MATCH`` taken for one row) held a 3 s server about 17 s and the
golds of the three honest cases after it timed out; I2, the same over a list the text does
not size (``[x IN range(1,100000) | x]``, a ``collect(p)`` unwound) 11 s; I3, an 8-hop path
(21,126 walks on the 13-node test graph, taken for 2) beside ``CALL { UNWIND
range(1,10000) ... }`` 9.6 s. A sort, ``DISTINCT`` or grouping keyed by a path alone over
rows an ``UNWIND`` or a subquery multiplied, or over two patterns with variable-length
relationships (H1 of the round before, 9.6 s), is refused.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cypher.test_cypher_fortyfourth import hostile_then_honest

_PATH = "keyed by the path"
_HOPS8 = "".join(f"-[]-(a{i})" for i in range(1, 9))

#: (the query, a word of its refusal)
REFUSED = {
    "i1-optional-path": ("UNWIND range(1,100000) AS k OPTIONAL MATCH p=(a)-[*]-(b) "
                         "WITH p, k ORDER BY p RETURN count(*) AS c", _PATH),
    "i1-relationship-list": ("UNWIND range(1,100000) AS k OPTIONAL MATCH (a)-[r*]-(b) "
                             "WITH r, k ORDER BY r RETURN count(*) AS c", _PATH),
    "i2-comprehension": ("MATCH p=(a)-[*]-(b) UNWIND [x IN range(1,100000) | x] AS k "
                         "WITH p, k ORDER BY p RETURN count(*) AS c", _PATH),
    "i2-named-range": ("WITH range(1,100000) AS l MATCH p=(a)-[*]-(b) UNWIND l AS k "
                       "WITH p, k ORDER BY p DESC RETURN count(*) AS c", _PATH),
    "i2-collected-paths": ("MATCH p=(a)-[*]-(b) WITH collect(p) AS ps UNWIND ps AS x "
                           "UNWIND ps AS y WITH x ORDER BY x RETURN count(*) AS c", _PATH),
    "i3-eight-hops": (f"MATCH p=(a0){_HOPS8} CALL {{ UNWIND range(1,10000) AS k RETURN k }} "
                      "WITH p, k ORDER BY p RETURN count(*) AS c", _PATH),
    "i3-alias": ("MATCH p=(a)-[*]-(b) UNWIND range(1,1000) AS k WITH p AS q, k ORDER BY q "
                 "RETURN count(*) AS c", _PATH),
    "i3-distinct": ("MATCH p=(a)-[*]-(b) UNWIND range(1,1000) AS k RETURN DISTINCT p, k", _PATH),
    "h1-two-variable-paths": ("MATCH p=(a)-[*]-(b)-[]-(e), q=(c)-[*]-(d)-[]-(f) WITH p, q "
                              "ORDER BY p, q RETURN count(*) AS c", _PATH),
}

#: Honest queries beside them: sent (the round's honest sets, 43 queries, are read as before).
SENT = [
    "UNWIND ['Keanu Reeves', 'Tom Hanks'] AS n MATCH p=(a:Person {name: n})-[*1..2]-(b) "
    "RETURN n, length(p) AS l ORDER BY l",
    "MATCH p=(a)-[*]-(b)-[*]-(c)-[]-(x0)-[]-(x1) WITH p ORDER BY p RETURN count(*) AS c",
    "MATCH p=(a:Person)-[:ACTED_IN]->(m) MATCH (m)<-[:DIRECTED]-(d) RETURN DISTINCT p",
    "UNWIND range(1900, 2030) AS y MATCH (m:Movie {released: y})<-[:ACTED_IN*1..2]-(p) "
    "RETURN y, count(DISTINCT p) AS n ORDER BY y",
    "UNWIND range(0, 20000) AS i MATCH (m:Movie) WHERE m.released = i "
    "RETURN DISTINCT m.title ORDER BY m.title",
    "UNWIND range(1,100) AS k MATCH p=(a)-[*]-(b) RETURN p ORDER BY p LIMIT 10",
    "MATCH p=shortestPath((a:Person {name: 'Keanu Reeves'})-[*]-(b:Person {name: 'Tom Hanks'})) "
    "RETURN p",
]


def test_the_path_sorts_are_refused_and_the_honest_cases_after_them_pass(
        pytester: pytest.Pytester, tmp_path: Path) -> None:
    """I1 and I3 as predictions and as an agent's second ``run_query``: before, the golds of
    the honest cases after them timed out."""
    hostile_then_honest(pytester, tmp_path, {name: REFUSED[name][0] for name in (
        "i1-optional-path", "i3-eight-hops")})
