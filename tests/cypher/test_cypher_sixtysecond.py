"""Issue 58, the sixty-second round of the Cypher kind (main ef9e3cfc).

K1 to K5: the sizes stated for names (a range bound to ``r``) and the texts the query builds
(``txt``) were kept in one table that each ``AS`` overwrote at once, wherever it was. A name
rebound inside ``CALL { }`` (``UNWIND [1] AS r``, ``YIELD label AS r``) is the outer one
again past the subquery, and ``WITH 1 AS r, r AS big`` gives ``big`` the old ``r``: each lost
the range's or the split text's size, and 5,000,000 to 9,000,000 rows were sorted, 15 to 30 s
on a 3 s server, the next cases' golds timed out in 2 of 2 runs. A name's stated size is now
never lowered, nor a built text forgotten (an over-count at worst).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cypher.test_cypher_fortyfourth import hostile_then_honest

_COUNTS = "rows the text counts"
_SORT = " UNWIND range(1,50) AS j WITH rand() AS z ORDER BY z DESC RETURN count(*) AS n"
_TXT = "toJSON([x IN range(1,2000) | [x,x,x,x,x,x,x,x,x,x]])"

#: (the query, a word of its refusal)
REFUSED = {
    "k1-text-shadowed-in-a-subquery": (
        f"WITH {_TXT} AS txt CALL {{ UNWIND ['a'] AS txt RETURN count(*) AS zz }} "
        f"UNWIND split(txt, '') AS c{_SORT}", _COUNTS),
    "k2-range-shadowed-in-a-subquery": (
        "WITH range(1,100000) AS r CALL { UNWIND [1] AS r RETURN count(*) AS zz } "
        f"UNWIND r AS k{_SORT}", _COUNTS),
    "k2-yield": (
        "WITH range(1,100000) AS r CALL { CALL db.labels() YIELD label AS r RETURN count(*) "
        f"AS zz }} UNWIND r AS k{_SORT}", _COUNTS),
    "k3-unwound-twice": (
        "WITH range(1,3000) AS r CALL { UNWIND [1] AS r RETURN count(*) AS zz } UNWIND r AS a "
        "UNWIND r AS b WITH rand() AS z ORDER BY z DESC RETURN count(*) AS n", _COUNTS),
    "k4-text-swapped-in-one-with": (
        f"WITH {_TXT} AS txt WITH 'a' AS txt, txt AS t2 UNWIND split(t2, '') AS c{_SORT}",
        _COUNTS),
    "k5-range-swapped-in-one-with": (
        f"WITH range(1,100000) AS r WITH 1 AS r, r AS big UNWIND big AS k{_SORT}", _COUNTS),
}

#: Honest queries beside them: sent.
SENT = [
    "WITH range(1,10) AS r CALL { UNWIND [1] AS q RETURN count(*) AS zz } UNWIND r AS k "
    "RETURN k ORDER BY k",
    "WITH [3,1,2] AS r WITH 1 AS r, r AS big UNWIND big AS k RETURN k ORDER BY k",
    "MATCH (m:Movie) UNWIND split(toLower(m.title), ' ') AS w RETURN DISTINCT w ORDER BY w",
]


def test_the_shadowed_names_keep_their_sizes_and_the_honest_cases_after_them_pass(
        pytester: pytest.Pytester, tmp_path: Path) -> None:
    """K1, K3 and K4 as predictions and as an agent's second ``run_query``: before, the golds
    of the three honest cases after them timed out (2 of 2 runs each)."""
    hostile_then_honest(pytester, tmp_path, {name: REFUSED[name][0] for name in
                                             ("k1-text-shadowed-in-a-subquery",
                                              "k3-unwound-twice",
                                              "k4-text-swapped-in-one-with")})
