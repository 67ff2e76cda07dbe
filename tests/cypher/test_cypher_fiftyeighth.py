"""Issue 58, the fifty-eighth round of the Cypher kind (main c3b847e0).

Past a ``CALL { ... }`` subquery the floor was its largest ``UNION`` branch, while the server
returns every branch's rows: U1, thirty ``UNION ALL`` branches of ``UNWIND range(...99,999)``
were taken for 99,999 rows and 2,999,970 were sorted (16.9 s past a 3 s server's cut); U2,
three subqueries of ten constant branches each before ``UNWIND range(1,3000)`` were taken for
3,000 and 3,000,000 were sorted (15.1 s), with ``UNION`` as with ``UNION ALL``. The next
cases' golds timed out. The branches' floors are now summed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cypher.test_cypher_fortyfourth import hostile_then_honest

_COUNTS = "rows the text counts"
_TEN = " UNION ALL ".join(f"RETURN {n} AS x" for n in range(10))
_THREE = (f"CALL {{ {_TEN} }} CALL {{ {_TEN.replace(' AS x', ' AS y')} }} "
          f"CALL {{ {_TEN.replace(' AS x', ' AS w')} }} UNWIND range(1,3000) AS k WITH "
          "(k * 7919 + x * 104729 + y * 1299709 + w * 15485863) % 1000003 AS z "
          "ORDER BY z DESC RETURN count(*) AS n")

#: (the query, a word of its refusal)
REFUSED = {
    "u1-thirty-branches": (
        "CALL { " + " UNION ALL ".join(
            f"UNWIND range({i * 100000 + 1},{i * 100000 + 99999}) AS k RETURN k"
            for i in range(30))
        + " } WITH k, (k * 7919) % 1000003 AS z ORDER BY z, k DESC RETURN count(*) AS n",
        _COUNTS),
    "u1-branches-beside-outer-rows": (
        "UNWIND range(1,30) AS j CALL { " + " UNION ALL ".join(
            "UNWIND range(1,3333) AS k RETURN k" for _ in range(30))
        + " } WITH k, (k * 7919 + j * 104729) % 1000003 AS z ORDER BY z, k DESC "
        "RETURN count(*) AS n", _COUNTS),
    "u2-constant-branches": (_THREE, _COUNTS),
    "u2-constant-branches-union": (_THREE.replace("UNION ALL", "UNION"), _COUNTS),
}

#: Honest queries beside them: sent.
SENT = [
    "CALL { MATCH (m:Movie) RETURN m.title AS t UNION ALL MATCH (p:Person) RETURN p.name AS t "
    "UNION ALL MATCH (m:Movie) RETURN toString(m.released) AS t } RETURN t, count(*) AS c "
    "ORDER BY t",
    "MATCH (p:Person) CALL { WITH p MATCH (p)-[r]->(m) RETURN type(r) AS rt, m.title AS t } "
    "RETURN p.name AS n, rt, t ORDER BY n, rt, t",
    "MATCH (a:Person), (m:Movie) RETURN a.name AS n, m.title AS t ORDER BY n, t",
    "UNWIND range(1,100) AS k CALL { " + " UNION ALL ".join(
        f"RETURN {n} AS x" for n in range(10)) + " } RETURN k, x ORDER BY k, x",
]


def test_the_summed_branches_are_refused_and_the_honest_cases_after_them_pass(
        pytester: pytest.Pytester, tmp_path: Path) -> None:
    """U1 and U2 as predictions and as an agent's second ``run_query``: before, the golds of
    the honest cases after them timed out (2 of 2 runs each)."""
    hostile_then_honest(pytester, tmp_path, {name: REFUSED[name][0] for name in REFUSED})
