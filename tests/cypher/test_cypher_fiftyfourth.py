"""Issue 58, the fifty-fourth round of the Cypher kind (main bbfde31e).

A list a ``collect()`` made was taken for 50 values when unwound, however many rows it
gathered, and an aggregating ``WITH`` set the floor back to one row: N1, 13,000 nodes
collected after ``UNWIND range(1,1000)`` and unwound beside ``range(1,250)``, was 12,500 rows
to the floor and 3,250,000 sorted; N2, 1,820 nodes collected and unwound twice (3,312,400
rows), one row; N3, 234,000 collected and unwound beside a pattern (3,042,000), one row. Each
held a 3 s server 6.5 to 12.6 s and the next cases' golds timed out. A name bound to a whole
``collect()`` now holds, unwound, the rows before it. O1 (an over-refusal of bbfde31e): a
``UNION`` starts the floor again.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cypher.test_cypher_fortyfourth import hostile_then_honest

_COUNTS = "rows the text counts"

#: (the query, a word of its refusal)
REFUSED = {
    "n1-collected-beside-a-range": (
        "UNWIND range(1,1000) AS j MATCH (a) WITH collect(a) AS xs UNWIND xs AS x "
        "UNWIND range(1,250) AS k WITH x, k ORDER BY x DESC, k RETURN count(*) AS n", _COUNTS),
    "n2-collected-twice": (
        "UNWIND range(1,140) AS j MATCH (a) WITH collect(a) AS xs UNWIND xs AS x "
        "UNWIND xs AS y WITH x, y ORDER BY y DESC, x RETURN count(*) AS n", _COUNTS),
    "n2-collected-product": (
        "MATCH (a), (b), (c) WITH collect(a) AS xs UNWIND xs AS x UNWIND xs AS y "
        "WITH x, y ORDER BY y DESC, x RETURN count(*) AS n", _COUNTS),
    "n3-collected-beside-a-pattern": (
        "UNWIND range(1,18000) AS j MATCH (a) WITH collect(a) AS xs UNWIND xs AS x "
        "MATCH (b) WITH x, b ORDER BY b DESC, x RETURN count(*) AS n", _COUNTS),
    # a collected name renamed, or walked in a comprehension, holds what it held
    "n2-renamed": (
        "UNWIND range(1,100) AS j MATCH (a) WITH collect(a) AS zs WITH zs AS xs UNWIND xs AS x "
        "UNWIND xs AS y WITH x, y ORDER BY y, x RETURN count(*) AS n", _COUNTS),
    "n3-rebound-to-a-range": (
        "MATCH (a) WITH collect(a) AS xs WITH range(1,100000) AS xs UNWIND xs AS k "
        "MATCH (b) WITH b, k ORDER BY b, k RETURN count(*) AS n", _COUNTS),
}

#: Honest queries beside them: sent.
SENT = [
    "UNWIND range(1, 2500) AS y RETURN toString(y) AS v UNION MATCH (m:Movie) "
    "RETURN m.title AS v ORDER BY v",
    "MATCH (m:Movie) WITH collect(m) AS ms UNWIND ms AS m RETURN m.title ORDER BY m.title",
    "MATCH (p:Person)-[:ACTED_IN]->(m:Movie) WITH collect(p) AS ps UNWIND ps AS p "
    "RETURN p.name, count(*) AS c ORDER BY c DESC",
]


def test_the_collected_lists_are_refused_and_the_honest_cases_after_them_pass(
        pytester: pytest.Pytester, tmp_path: Path) -> None:
    """N2 and N3 as predictions and as an agent's second ``run_query``: before, the golds of
    the honest cases after them timed out (2 of 2 runs each)."""
    hostile_then_honest(pytester, tmp_path, {name: REFUSED[name][0] for name in (
        "n2-collected-twice", "n3-collected-beside-a-pattern")})
