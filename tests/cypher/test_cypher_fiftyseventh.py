"""Issue 58, the fifty-seventh round of the Cypher kind (main ea88bb92).

The floor and the product restarted inside a ``CALL { ... }`` subquery as if the query ended
there: R1, a ``UNION`` in one (``CALL { UNWIND range(1,100000) AS k RETURN k UNION ALL
RETURN 0 AS k } UNWIND range(1,30) ...``) left 30 rows to the floor, and 3,000,030 were
sorted; R2, an aggregating ``WITH`` in one (``MATCH (a), (b), (c), (d) CALL { MATCH (x) WITH
count(x) AS c RETURN c } MATCH (e), (f)``) left two patterns of six. Each held a 3 s server 5
to 8 s and the next cases' golds timed out. A subquery's branch now starts from its outer
rows, and past it the rows are its branches' summed (or its largest branch's). And L1 (LOW): a name bound to
``type(r)`` was a key that may hold several values (refused beside a ``LIMIT``; the
fifty-sixth's L3 too).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cypher.test_cypher_fiftysixth import _IDS
from tests.cypher.test_cypher_fortyfourth import hostile_then_honest

_COUNTS = "rows the text counts"
_PRODUCT = "a product of 6 patterns"
_SCRAMBLED = "(k * 7919 + j * 104729) % 1000003 AS z ORDER BY z, k DESC RETURN count(*) AS n"

#: (the query, a word of its refusal)
REFUSED = {
    "r1-union-in-a-subquery-first": (
        "CALL { UNWIND range(1,100000) AS k RETURN k UNION ALL RETURN 0 AS k } "
        f"UNWIND range(1,30) AS j WITH k, {_SCRAMBLED}", _COUNTS),
    "r1-union-in-a-subquery-after": (
        "UNWIND range(1,100000) AS k UNWIND range(1,30) AS j "
        f"CALL {{ RETURN 1 AS x UNION RETURN 2 AS x }} WITH k, {_SCRAMBLED}", _COUNTS),
    "r1-union-of-patterns-in-a-subquery": (
        "CALL { MATCH (a), (b), (c), (d), (e), (f) WHERE id(f) < 8 "
        f"RETURN {_IDS} AS z UNION ALL RETURN 0 AS z }} "
        "WITH z, (z * 7919) % 1000003 AS y ORDER BY y, z DESC RETURN count(*) AS n", _PRODUCT),
    "r1-many-branches-summed": (
        "CALL { " + " UNION ALL ".join(f"UNWIND range(1,99999) AS k RETURN k + {n} AS k"
                                       for n in range(10))
        + " } WITH k, (k * 7919) % 1000003 AS z ORDER BY z RETURN count(*) AS n", _COUNTS),
    "r2-aggregating-in-a-subquery": (
        "MATCH (a), (b), (c), (d) CALL { MATCH (x) WITH count(x) AS cnt RETURN cnt } "
        f"MATCH (e), (f) WHERE id(f) < 11 WITH {_IDS} AS z "
        "WITH z, (z * 7919) % 1000003 AS y ORDER BY y, z DESC RETURN count(*) AS n", _PRODUCT),
}

#: Honest queries beside them: sent.
SENT = [
    "MATCH (p:Person) CALL { WITH p MATCH (p)-[:ACTED_IN]->(m) RETURN count(m) AS c } "
    "RETURN p.name AS n, c ORDER BY c DESC",
    "CALL { MATCH (m:Movie) RETURN m.title AS t UNION MATCH (p:Person) RETURN p.name AS t } "
    "RETURN t ORDER BY t",
    "UNWIND range(1,1000) AS k CALL { RETURN 1 AS x UNION RETURN 2 AS x } RETURN k, x ORDER BY k",
    "UNWIND range(1,1000) AS k CALL { RETURN 1 AS x UNION ALL RETURN 2 AS x UNION ALL "
    "RETURN 3 AS x } RETURN k, x ORDER BY k",
    "CALL { MATCH (m:Movie) RETURN m.title AS t UNION ALL MATCH (p:Person) RETURN p.name AS t } "
    "RETURN t ORDER BY t",
    "MATCH (m:Movie) CALL { WITH m MATCH (m)<-[:ACTED_IN]-(p) RETURN p.name AS who UNION "
    "WITH m MATCH (m)<-[:DIRECTED]-(p) RETURN p.name AS who } RETURN m.title AS t, who "
    "ORDER BY t, who",
    "MATCH (a:Person) CALL { MATCH (x) RETURN count(x) AS total } RETURN a.name AS n, total "
    "ORDER BY n",
    "MATCH (m:Movie) WITH m ORDER BY m.released LIMIT 3 MATCH (m)<-[r]-(p) "
    "RETURN m.title AS t, type(r) AS rt, p.name AS n ORDER BY t, rt, n",
    "MATCH (a:Person)-[r*1..2]-(b:Movie) UNWIND r AS rel RETURN type(rel) AS t, count(*) AS c "
    "ORDER BY t",
]


def test_the_subquery_forms_are_refused_and_the_honest_cases_after_them_pass(
        pytester: pytest.Pytester, tmp_path: Path) -> None:
    """R1 and R2 as predictions and as an agent's second ``run_query``: before, the golds of
    the honest cases after them timed out (2 of 2 runs each)."""
    hostile_then_honest(pytester, tmp_path, {name: REFUSED[name][0] for name in REFUSED})
