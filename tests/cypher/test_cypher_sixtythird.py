"""Issue 58, the sixty-third round of the Cypher kind (main c0d0be5b).

P1 to P3: the work count's table of names (what each list holds) was overwritten by every
binding, wherever it was: a comprehension's variable named like an outer list (``[r IN [1]
| r]``), a name rebound inside ``CALL { }``, a swap in one ``WITH``. The outer
``range(1,20000)`` then held nothing, and ``size([x IN r WHERE any(y IN r WHERE y = x)])``,
400,000,000 comparisons in one expression, was sent: 13 to 17 s on a 3 s server, the next
cases' golds timed out in 2 of 2 runs. What a name holds is now never lowered.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cypher.test_cypher_fortyfourth import hostile_then_honest

_WALK = "size([x IN {n} WHERE any(y IN {n} WHERE y = x)]) AS n"

#: (the query, a word of its refusal)
REFUSED = {
    "p1-a-comprehensions-variable": (
        f"WITH range(1,20000) AS r WITH r, [r IN [1] | r] AS q RETURN {_WALK.format(n='r')}",
        "walked"),
    "p1-in-one-return": (
        f"WITH range(1,20000) AS r RETURN size([r IN [1] | r]) + {_WALK.format(n='r')}",
        "walked"),
    "p2-rebound-in-a-subquery": (
        "WITH range(1,20000) AS r CALL { UNWIND [1] AS r RETURN count(*) AS zz } "
        f"RETURN {_WALK.format(n='r')}", "a list the query made"),
    "p3-swapped-in-one-with": (
        f"WITH range(1,20000) AS r WITH 1 AS r, r AS big RETURN {_WALK.format(n='big')}",
        "walked"),
}

#: Honest queries beside them: sent.
SENT = [
    "WITH [1,2,3] AS r RETURN [r IN [4,5] | r * 2] AS n",
    "WITH range(1,100) AS r RETURN size([x IN r WHERE any(y IN r WHERE y = x)]) AS n",
]


def test_the_shadowed_lists_are_walked_as_they_are_and_the_honest_cases_after_them_pass(
        pytester: pytest.Pytester, tmp_path: Path) -> None:
    """P1, P2 and P3 as predictions and as an agent's second ``run_query``: before, the golds
    of the three honest cases after them timed out (2 of 2 runs each)."""
    hostile_then_honest(pytester, tmp_path, {name: REFUSED[name][0] for name in
                                             ("p1-a-comprehensions-variable",
                                              "p2-rebound-in-a-subquery",
                                              "p3-swapped-in-one-with")})
