"""Issue 58, the sixty-fifth round of the Cypher kind (main 04e82b58).

R1: a sort key written as ``range(1,50)`` was taken for one value (``range`` is a narrow call
elsewhere), so a sort of a variable-length match's rows (314,000, taken for 100,000) by four
such keys was sent: 29 s on a 3 s server. R2, R3: each key's list was weighed alone, never
their sum over the rows the text counts: six ``range(1,80)`` keys (or six literal lists of 80)
over 100,000 counted rows, 48,000,000 values compared, held the server 7 to 16 s. In both,
the next cases' golds timed out in 2 of 2 runs. A ``range()`` key now holds several values,
and a sort's keys' lists are weighed together (:data:`bounds.MAX_SORTED_VALUES`).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cypher.test_cypher_fortyfourth import hostile_then_honest

_EIGHTY = "[" + ",".join(str(n) for n in range(80)) + "]"
_SIX = "UNWIND range(1,100000) AS k WITH k ORDER BY {key}, {key}, {key}, {key}, {key}, {key}, k " \
       "RETURN count(*)"

#: (the query, a word of its refusal)
REFUSED = {
    "r1-range-keys-over-a-variable-length-match": (
        "MATCH p=(a)-[*]-(b) UNWIND range(1,1000) AS k RETURN k ORDER BY range(1,50), "
        "range(1,50), range(1,50), range(1,50), k", "several values|compares lists"),
    "r1-one-range-key-in-a-with": (
        "MATCH p=(a)-[*]-(b) UNWIND range(1,1000) AS k WITH k ORDER BY range(1,99), k "
        "RETURN count(*)", "several values|compares lists"),
    "r2-six-range-keys-over-counted-rows": (_SIX.format(key="range(1,80)"), "compares lists"),
    "r3-six-literal-lists": (_SIX.format(key=_EIGHTY), "compares lists"),
    "r3-six-comprehensions": (_SIX.format(key="[x IN range(1,80) | x]"), "compares lists"),
}

#: Honest queries beside them (the round's own): sent.
SENT = [
    "MATCH (m:Movie) RETURN m.title AS t ORDER BY [m.released, m.title]",
    "UNWIND range(1,1000) AS k RETURN k ORDER BY k DESC",
    "MATCH (p:Person)-[:ACTED_IN]->(m) WITH p, collect(m.title) AS ts RETURN p.name AS n, ts "
    "ORDER BY size(ts) DESC",
]


def test_the_list_keys_are_weighed_and_the_honest_cases_after_them_pass(
        pytester: pytest.Pytester, tmp_path: Path) -> None:
    """R1 and R2 as predictions and as an agent's second ``run_query``: before, the golds of
    the honest cases after them timed out (2 of 2 runs each)."""
    hostile_then_honest(pytester, tmp_path, {name: REFUSED[name][0] for name in
                                             ("r1-range-keys-over-a-variable-length-match",
                                              "r2-six-range-keys-over-counted-rows")})
