"""Issue 58, the sixty-eighth round of the Cypher kind (main cc454a9a).

TK: a sort with a ``LIMIT`` of at most 1,000 after it skipped every check of a sort, round
67's cap on its keys and the weighing of their lists too, and a top's cost is its kept rows'
keys: ``ORDER BY r, r, ... (3,000 times), k DESC LIMIT 1000``, ``r`` a ``range(1,90)``, over
300 rows held a 3 s server 13 s, and the golds of the honest cases after it timed out in 2 of
2 runs (4 of 4 with 30,000 keys of a ``range(1,9)``). A top now keeps the key cap and the
weighing, over the rows it keeps.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cypher.test_cypher_fortyfourth import hostile_then_honest

#: (the query, a word of its refusal)
REFUSED = {
    "tk-three-thousand-range-keys-in-a-top": (
        "UNWIND range(1,300) AS k WITH k, range(1,90) AS r RETURN k ORDER BY "
        + ", ".join(["r"] * 3000) + ", k DESC LIMIT 1000", "keys, more than"),
    "tk-wide-keys-under-the-cap-in-a-top": (
        "UNWIND range(1,300) AS k WITH k, range(1,3000) AS r RETURN k ORDER BY r, r, r, r, r, r, "
        "k DESC "
        "LIMIT 1000", "compares lists"),
}

#: Honest tops beside them: sent.
SENT = [
    "MATCH (p:Person)-[:ACTED_IN]->(m:Movie) RETURN p.name AS a, m.title AS t, m.released AS y "
    "ORDER BY y DESC, t, a LIMIT 1000",
    "MATCH (m:Movie) RETURN m.title AS t, [m.released, m.title] AS k ORDER BY k LIMIT 10",
]


def test_the_tops_keys_are_weighed_and_the_honest_cases_after_them_pass(
        pytester: pytest.Pytester, tmp_path: Path) -> None:
    """TK as a prediction and as an agent's second ``run_query``: before, the golds of the
    honest cases after it timed out (2 of 2 runs)."""
    hostile_then_honest(pytester, tmp_path, {
        "tk-three-thousand-range-keys-in-a-top":
            REFUSED["tk-three-thousand-range-keys-in-a-top"][0]})
