"""Issue 58, the fifty-ninth round of the Cypher kind (main dfe840b2).

V1: past a ``CALL { ... }`` subquery the branches' floors were summed but only the least of
their matches kept, so a one-row branch beside ``MATCH (a), (b)`` hid the product
(``UNWIND range(1,20000) AS j CALL { RETURN 0 AS k UNION ALL MATCH (a), (b) ... }`` sorted
3,400,000 rows, taken for 40,000). V2: names bound before a ``CALL {`` were taken as bound
inside it, where the server passes none but by a leading ``WITH``, so ``MATCH (a), (b) CALL
{ MATCH (a), (b) ... }`` was two patterns of four (169^3 rows sorted). Each held a 3 s server
8 to 12 s and the next cases' golds timed out. Each branch now counts its own rows, matches
included, and a subquery's body starts with no name bound. And L1 (LOW): a subquery's
aggregating ``RETURN`` gives one row of each outer row (a collected list was counted twice).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cypher.test_cypher_fortyfourth import hostile_then_honest

_COUNTS = "rows the text counts"
_PAIRS = "MATCH (a), (b) RETURN id(a) * 13 + id(b) AS"
_V1 = (f"UNWIND range(1,20000) AS j CALL {{ RETURN 0 AS k UNION ALL {_PAIRS} k }} "
       "WITH j, k, (k * 7919 + j * 104729) % 1000003 AS z ORDER BY z, k DESC RETURN count(*) AS n")

#: (the query, a word of its refusal)
REFUSED = {
    "v1-one-row-branch-beside-a-product": (_V1, _COUNTS),
    "v1-union": (_V1.replace("UNION ALL", "UNION"), _COUNTS),
    "v2-outer-names-in-a-subquery": (
        f"MATCH (a), (b) CALL {{ {_PAIRS} k }} CALL {{ {_PAIRS} q }} "
        "WITH (id(a) * 169 + id(b) + k * 28561 + q * 104729) % 1000003 AS z ORDER BY z DESC "
        "RETURN count(*) AS n", "a product of 6 patterns"),
    "v1-v2-three-subqueries": (
        f"CALL {{ RETURN 0 AS k UNION ALL {_PAIRS} k }} "
        f"CALL {{ RETURN 0 AS q UNION ALL {_PAIRS} q }} "
        f"CALL {{ RETURN 0 AS r UNION ALL {_PAIRS} r }} "
        "WITH (k * 7919 + q * 104729 + r * 1299709) % 1000003 AS z ORDER BY z DESC "
        "RETURN count(*) AS n", _COUNTS),
}

#: Honest queries beside them: sent.
SENT = [
    "CALL { MATCH (m:Movie) RETURN count(m) AS c } MATCH (p:Person) RETURN p.name AS n, c ORDER BY n",
    "CALL { MATCH (p:Person) RETURN p.name AS name UNION MATCH (m:Movie) RETURN m.title AS name } RETURN name ORDER BY name",
    "MATCH (m:Movie) CALL { WITH m MATCH (m)<-[:ACTED_IN]-(p) RETURN count(p) AS actors } RETURN m.title AS t, actors ORDER BY actors DESC, t",
    "UNWIND ['The Matrix', 'Top Gun'] AS title CALL { WITH title MATCH (m:Movie {title: title}) RETURN m } RETURN m.title AS t ORDER BY t",
    "CALL { MATCH (m:Movie) RETURN m ORDER BY m.released DESC LIMIT 3 } MATCH (m)<-[:ACTED_IN]-(p:Person) RETURN m.title AS t, p.name AS n ORDER BY t, n",
    "MATCH (p:Person) WITH collect(p.name) AS names UNWIND names AS n RETURN n ORDER BY n",
    "CALL { MATCH (p:Person)-[:ACTED_IN]->(m:Movie) RETURN p.name AS name, m.title AS title UNION ALL MATCH (p:Person)-[:DIRECTED]->(m:Movie) RETURN p.name AS name, m.title AS title } RETURN name, count(title) AS c ORDER BY c DESC, name",
    "MATCH (p:Person) CALL { WITH p MATCH (p)-[:ACTED_IN]->(m) RETURN m.title AS title UNION WITH p MATCH (p)-[:DIRECTED]->(m) RETURN m.title AS title } RETURN p.name AS n, collect(title) AS titles ORDER BY n",
    "CALL { UNWIND range(1, 1000) AS k RETURN collect(k) AS xs } UNWIND xs AS x RETURN x ORDER BY x DESC",
]


def test_the_subquery_products_are_refused_and_the_honest_cases_after_them_pass(
        pytester: pytest.Pytester, tmp_path: Path) -> None:
    """V1 and V2 as predictions and as an agent's second ``run_query``: before, the golds of
    the honest cases after them timed out (2 of 2 runs each)."""
    hostile_then_honest(pytester, tmp_path, {name: REFUSED[name][0] for name in REFUSED})
