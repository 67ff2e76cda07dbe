"""Issue 58, the sixtieth round of the Cypher kind (main e6dc587b).

W1 to W3b: an ``UNWIND`` of a list made from a list the query made was counted from a guess,
or not at all. ``tail(range(1,100000))`` and ``split()`` of a text joined from 100,000
values were taken for 1,000 values counted (the guess for a call of a list function), and
``r[1..]``, ``(r)``, ``r + []``, ``coalesce(r, [])``, ``list.remove(r, 0, 1)`` of a name
bound to ``range(1,100000)`` for a list of unknown size, which alone refuses no sort. Beside
``UNWIND range(1,50)`` each sorted 5,000,000 rows, held a 3 s server 14 to 33 s, and the next
three cases' golds timed out in 2 of 2 runs. Such a list now holds, at least, what the
ranges and the names bound to them in it hold (a slice errs high), and a list function's
guess is no count when it has them. And L1 (LOW): ``UNWIND reverse([3, 1, 2]) AS x ... ORDER
BY x`` took each ``x`` for a list.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cypher.test_cypher_fortyfourth import hostile_then_honest

_COUNTS = "rows the text counts"
_SORT = " UNWIND range(1,50) AS j WITH rand() AS z ORDER BY z DESC RETURN count(*) AS n"
_JOINED = "string.join([x IN range(1,100000) | 'a'], ',')"
_R = "WITH range(1,100000) AS r UNWIND "

#: (the query, a word of its refusal)
REFUSED = {
    "w1-split-of-a-joined-text": (f"UNWIND split({_JOINED}, ',') AS s{_SORT}", _COUNTS),
    "w1-split-sorted-by-a-range": (
        f"UNWIND split({_JOINED}, ',') AS s UNWIND range(1,50) AS j WITH j ORDER BY j DESC "
        "RETURN count(*) AS n", _COUNTS),
    "w1b-split-of-a-named-text": (
        f"WITH {_JOINED} AS t UNWIND split(t, ',') AS s{_SORT}", _COUNTS),
    "w1b-split-bound-then-unwound": (
        f"WITH {_JOINED} AS t WITH split(t, ',') AS q UNWIND q AS s{_SORT}", _COUNTS),
    "w2-tail-of-a-range": (f"UNWIND tail(range(1,100000)) AS k{_SORT}", _COUNTS),
    "w2-reverse-of-a-range": (
        "UNWIND reverse(range(1,100000)) AS k UNWIND range(1,50) AS j WITH j ORDER BY j "
        "RETURN count(*) AS n", _COUNTS),
    "w2-after-the-range": (
        "UNWIND range(1,50) AS j UNWIND tail(range(1,100000)) AS k WITH rand() AS z "
        "ORDER BY z DESC RETURN count(*) AS n", _COUNTS),
    "w3-slice-of-a-name": (f"{_R}r[1..] AS k{_SORT}", _COUNTS),
    "w3-list-remove": (f"{_R}list.remove(r, 0, 1) AS k{_SORT}", _COUNTS),
    "w3-tail-of-a-name": (f"{_R}tail(r) AS k{_SORT}", _COUNTS),
    "w3-slice-bound-then-unwound": (
        f"WITH range(1,100000) AS r WITH r[1..] AS q UNWIND q AS k{_SORT}", _COUNTS),
    "w3b-bracketed-name": (f"{_R}(r) AS k{_SORT}", _COUNTS),
    "w3b-concatenated": (f"{_R}r + [] AS k{_SORT}", _COUNTS),
    "w3b-coalesce": (f"{_R}coalesce(r, []) AS k{_SORT}", _COUNTS),
    "w3b-case": (f"{_R}CASE WHEN true THEN r END AS k{_SORT}", _COUNTS),
}

#: Honest queries beside them: sent (the last was refused before, 60c L1).
SENT = [
    "MATCH (m:Movie) UNWIND split(m.title, ' ') AS w RETURN w, count(*) AS n ORDER BY n DESC, w",
    "MATCH (n) UNWIND keys(n) AS k RETURN DISTINCT k ORDER BY k",
    "MATCH (n) UNWIND labels(n) AS l RETURN l, count(*) AS c ORDER BY c DESC",
    "MATCH (p:Person) WITH collect(p) AS people WITH people AS ps UNWIND ps AS a UNWIND ps AS b "
    "RETURN a.name AS x, b.name AS y ORDER BY x, y",
    "WITH range(1, 100) AS r UNWIND tail(r) AS k UNWIND range(1, 50) AS j RETURN k, j ORDER BY k, j",
    "UNWIND reverse([3, 1, 2]) AS x RETURN x ORDER BY x",
]


def test_the_lists_made_of_ranges_are_refused_and_the_honest_cases_after_them_pass(
        pytester: pytest.Pytester, tmp_path: Path) -> None:
    """W1 to W3b as predictions and as an agent's second ``run_query``: before, the golds of
    the three honest cases after them timed out (2 of 2 runs each)."""
    hostile_then_honest(pytester, tmp_path, {name: REFUSED[name][0] for name in REFUSED
                                             if name.startswith(("w1-split-of", "w1b-split-of",
                                                                 "w2-tail", "w3-slice-of",
                                                                 "w3b-bracketed"))})
