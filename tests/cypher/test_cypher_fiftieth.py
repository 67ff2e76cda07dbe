"""Issue 58, the fiftieth round of the Cypher kind (main 231287d7).

Past the forty-ninth round's path keys (a name alone, read off the token after it): J1, a
path in brackets (``ORDER BY (p)``, ``WITH (p) AS q``) after ``UNWIND range(1,100000)`` and an
``OPTIONAL MATCH`` of a variable-length path held a 3 s server 15 s and the golds of the three
honest cases after it timed out; J2, a path inside a ``CASE``, the same; J3, a list the query
builds and the text does not size (a name bound to ``range()``, a comprehension), unwound
beside a variable-length match and sorted by nodes, 12 s. A path is a key wherever it is no
function's argument, an ``OPTIONAL MATCH`` counts as a ``MATCH`` beside rows the text counts,
and a sort over an unsized built list unwound beside variable-length relationships is
refused. L1 (an over-refusal of the round before): a path's ``DISTINCT`` after an ``UNWIND`` of
two names is sent again.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cypher.test_cypher_fortyfourth import hostile_then_honest

_PATH = "keyed by the path"
_BUILT = "a list the query builds"
_OPTIONAL = "UNWIND range(1,100000) AS k OPTIONAL MATCH p=(a)-[*]-(b) WITH "

#: (the query, a word of its refusal)
REFUSED = {
    "j1-bracketed": (_OPTIONAL + "p, k ORDER BY (p) RETURN count(*) AS c", _PATH),
    "j1-bracketed-alias": (_OPTIONAL + "(p) AS q, k ORDER BY q RETURN count(*) AS c", _PATH),
    "j1-relationships": ("UNWIND range(1,100000) AS k OPTIONAL MATCH (a)-[r*]-(b) WITH r, k "
                         "ORDER BY (r) RETURN count(*) AS c", _PATH),
    "j1-two-paths": ("MATCH p=(a)-[*]-(b)-[]-(e), q=(c)-[*]-(d)-[]-(f) WITH p, q "
                     "ORDER BY (p), (q) RETURN count(*) AS c", _PATH),
    "j2-case": (_OPTIONAL + "p, k ORDER BY CASE WHEN k > 0 THEN p END RETURN count(*) AS c",
                _PATH),
    "j3-named-range": ("WITH range(1,100000) AS r MATCH (a)-[*]-(b) UNWIND r AS k "
                       "WITH a, b, k ORDER BY b, a RETURN count(*) AS c", _BUILT),
    "j3-comprehension": ("MATCH (a)-[*]-(b) UNWIND [x IN range(1,100000) | x] AS k "
                         "WITH a, b, k ORDER BY b, a RETURN count(*) AS c", _BUILT),
    # the fifty-first re-probe's K1: a [*] pattern beside 10,000 counted rows, taken for 10
    # each (314 there), sorted by nodes, 9 s and a gold timed out: taken for 100 now
    "k1-nodes-beside-a-range": ("UNWIND range(1,10000) AS k OPTIONAL MATCH (a)-[*]-(b) "
                                "WITH a, b ORDER BY b DESC, a RETURN count(*) AS n",
                                "rows the text counts"),
}

#: Honest queries beside them: sent (the round's honest sets, 55 queries, are read as on
#: a460c877 but for one: a path's DISTINCT after a subquery with a LIMIT).
SENT = [
    "UNWIND ['Tom Hanks', 'Meg Ryan'] AS n MATCH p=(a:Person {name: n})-[:ACTED_IN]->(m) "
    "RETURN DISTINCT p",
    "UNWIND ['Tom Hanks', 'Meg Ryan'] AS n MATCH p=(a:Person {name: n})-[:ACTED_IN]->(m) "
    "RETURN p, count(*) AS c",
    "MATCH p=(a:Person {name: 'Tom Hanks'})-[*1..2]-(m:Movie), q=(b:Person {name: 'Meg Ryan'})"
    "-[*1..2]-(m) RETURN DISTINCT p, q LIMIT 10",
    "UNWIND ['Tom Hanks'] AS n MATCH p=(a:Person {name: n})-[:ACTED_IN]->(m) "
    "RETURN p ORDER BY p LIMIT 5",
    "MATCH (m:Movie) UNWIND labels(m) AS l RETURN l, count(*) AS c ORDER BY c DESC",
    # L3 of the fifty-first re-probe: a list literal bound to a name is no built list
    "WITH ['Tom Hanks', 'Meg Ryan'] AS ns UNWIND ns AS n MATCH (a:Person {name: n})-[*1..2]-(b) "
    "RETURN a.name, b.name ORDER BY a.name, b.name",
    "UNWIND range(1900, 2030) AS y MATCH (m:Movie {released: y})<-[:ACTED_IN*1..2]-(p) "
    "RETURN y, count(DISTINCT p) AS n ORDER BY y",
]


def test_the_hidden_path_keys_are_refused_and_the_honest_cases_after_them_pass(
        pytester: pytest.Pytester, tmp_path: Path) -> None:
    """J1 and J3 as predictions and as an agent's second ``run_query``: before, the golds of
    the honest cases after them timed out."""
    hostile_then_honest(pytester, tmp_path, {name: REFUSED[name][0] for name in (
        "j1-bracketed", "j3-named-range")})
