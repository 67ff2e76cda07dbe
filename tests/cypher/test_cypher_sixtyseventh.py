"""Issue 58, the sixty-seventh round of the Cypher kind (main 4ebf57b1).

N1: a name bound to ``range()`` was no key that may hold several values (only ``range()``
written in the key was, round 65's R1), and over a variable-length match (7,610 rows, weighed
by its floor of 100) ``ORDER BY r, r, ...`` 2,000 times held a 3 s server 20 to 24 s. K1:
nothing bounded an ``ORDER BY``'s keys, and a plain key weighed nothing: 2,000 equal keys
over 100,000 counted rows held it 27 s. The golds of the honest cases after them timed out in
2 of 2 runs. A name bound to a ``range()`` is such a key now (an element unwound from it still
a number), an ``ORDER BY`` has :data:`bounds.MAX_SORT_KEYS` keys at most, and each weighs one
value at least.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cypher.test_cypher_fortyfourth import hostile_then_honest

_R = ", ".join(["r"] * 2000)

#: (the query, a word of its refusal)
REFUSED = {
    "n1-a-named-range-as-keys-over-a-variable-length-match": (
        f"MATCH (a)-[*]-(b)-[*]-(c) WITH a, b, c, range(1,9) AS r ORDER BY {_R}, a "
        "RETURN count(*)", "several values"),
    "n1-bound-before-the-match": (
        f"WITH range(1,9) AS r MATCH (a)-[*]-(b)-[*]-(c) WITH a, r ORDER BY {_R}, a "
        "RETURN count(*)", "several values"),
    "n1-an-optional-match": (
        f"MATCH (a)-[*]-(b) OPTIONAL MATCH (b)-[*]-(c) WITH a, c, range(1,9) AS r ORDER BY {_R}, "
        "a RETURN count(*)", "several values"),
    "k1-two-thousand-equal-keys": (
        "UNWIND range(1,100000) AS k WITH k, 1 AS s ORDER BY " + ", ".join(["s"] * 2000)
        + ", k RETURN count(*)", "keys, more than"),
    "k1-a-thousand-computed-keys": (
        "UNWIND range(1,100000) AS k WITH k ORDER BY " + ", ".join(["k % 1"] * 1000)
        + ", k RETURN count(*)", "keys, more than"),
}

#: Honest queries beside them (the round's own and the earlier rounds' ranges): sent.
SENT = [
    "WITH range(1,1000) AS r UNWIND r[0..10] AS k RETURN k ORDER BY k DESC",
    "WITH range(1,10) AS r CALL { UNWIND [1] AS q RETURN count(*) AS zz } UNWIND r AS k "
    "RETURN k ORDER BY k",
    "WITH range(1,5) AS r RETURN r ORDER BY r",
    "MATCH (p:Person)-[:ACTED_IN]->(m:Movie) RETURN p.name AS a, m.title AS t "
    "ORDER BY a, t LIMIT 5000",
]


def test_the_named_ranges_and_many_keys_are_refused_and_the_honest_cases_after_them_pass(
        pytester: pytest.Pytester, tmp_path: Path) -> None:
    """N1 and K1 as predictions and as an agent's second ``run_query``: before, the golds of
    the honest cases after them timed out (2 of 2 runs each)."""
    hostile_then_honest(pytester, tmp_path, {name: REFUSED[name][0] for name in
                                             ("n1-a-named-range-as-keys-over-a-variable-"
                                              "length-match", "k1-two-thousand-equal-keys")})
