"""Issue 58, the sixty-first round of the Cypher kind (main 02255869).

J1 to J7: a ``split()`` of a text the query builds was counted as the values it was built
from, but it yields a part per character at most: ``split(toJSON([x IN range(1,2000) | [x,
x, ...]]), '')`` is 112,930 values, taken for 2,000. Beside ``UNWIND range(1,50)`` (or
unwound twice), 5,600,000 to 7,400,000 rows sorted held a 3 s server 14 to 30 s, and the next
three cases' golds timed out in 2 of 2 runs. Such a split now counts as many values as the
guard's most (:data:`~pytest_queryeval.cypher.bounds.UNBOUNDED_ROWS`), so a sort of its rows
is refused. And L2, L3 (LOW): a slice ``r[0..10]`` is no list value, and a split's parts are
texts.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cypher.test_cypher_fortyfourth import hostile_then_honest

_COUNTS = "rows the text counts"
_SORT = " UNWIND range(1,50) AS j WITH rand() AS z ORDER BY z DESC RETURN count(*) AS n"
_TENS = "[x IN range(1,2000) | [x,x,x,x,x,x,x,x,x,x]]"

#: (the query, a word of its refusal)
REFUSED = {
    "j1-split-of-json": (f"WITH split(toJSON({_TENS}), '') AS s UNWIND s AS t{_SORT}", _COUNTS),
    "j1-inline": (f"UNWIND split(toJSON({_TENS}), '') AS t{_SORT}", _COUNTS),
    "j1-sorted-by-the-range": (
        f"WITH split(toJSON({_TENS}), '') AS s UNWIND s AS t UNWIND range(1,50) AS j "
        "WITH j ORDER BY j DESC RETURN count(*) AS n", _COUNTS),
    "j2-maps": (
        "WITH split(toJSON([x IN range(1,2000) | {a: rand(), b: rand(), c: rand()}]), '') AS s "
        f"UNWIND s AS t{_SORT}", _COUNTS),
    "j4-collected": (
        "UNWIND range(1,2000) AS x WITH collect([x,x,x,x,x,x,x,x,x,x]) AS l "
        f"UNWIND split(toJSON(l), '') AS t{_SORT}", _COUNTS),
    "j5-joined-texts": (
        "WITH split(string.join([x IN range(1,2000) | toString(rand()) + toString(rand()) + "
        f"toString(rand()) + toString(rand())], ''), '') AS s UNWIND s AS t{_SORT}", _COUNTS),
    "j5-named-text-and-delimiter": (
        f"WITH '' AS d, toJSON({_TENS}) AS txt UNWIND split(txt, d) AS t{_SORT}", _COUNTS),
    "j6-distinct": (
        f"WITH split(toJSON({_TENS}), '') AS s UNWIND s AS t UNWIND range(1,50) AS j "
        "WITH DISTINCT rand() AS z RETURN count(*) AS n", _COUNTS),
    "j7-unwound-twice": (
        "WITH split(toJSON([x IN range(1,60) | [x,x,x,x,x,x,x,x,x,x]]), '') AS s "
        "UNWIND s AS a UNWIND s AS b WITH rand() AS z ORDER BY z DESC RETURN count(*) AS n",
        _COUNTS),
}

#: Honest queries beside them: sent (the last two were refused before, 61c L2, L3).
SENT = [
    "MATCH (m:Movie) UNWIND split(m.title, ' ') AS w RETURN w, count(*) AS n ORDER BY n DESC, w",
    "MATCH (m:Movie) UNWIND split(coalesce(m.tagline, ''), ' ') AS w RETURN DISTINCT w ORDER BY w",
    "WITH split('Action,Drama,Comedy', ',') AS gs UNWIND gs AS g RETURN g ORDER BY g",
    "WITH split(toJSON(range(1,2000)), '') AS s UNWIND s AS t RETURN t ORDER BY t LIMIT 5",
    "WITH range(1,1000) AS r UNWIND r[0..10] AS k RETURN k ORDER BY k DESC",
    "UNWIND split('a,b,c', ',') AS c RETURN c ORDER BY c",
]


def test_the_splits_of_built_texts_are_refused_and_the_honest_cases_after_them_pass(
        pytester: pytest.Pytester, tmp_path: Path) -> None:
    """J1, J4 and J7 as predictions and as an agent's second ``run_query``: before, the golds
    of the three honest cases after them timed out (2 of 2 runs each)."""
    hostile_then_honest(pytester, tmp_path, {name: REFUSED[name][0] for name in
                                             ("j1-split-of-json", "j4-collected",
                                              "j7-unwound-twice")})
