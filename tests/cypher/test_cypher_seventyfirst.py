"""Issue 58, the seventy-first round of the Cypher kind (main 31d67af5).

H1: a map's entries were weighed one value each, whatever their keys, and two maps are
compared key by key: ``ORDER BY {kkk...k00: 1, ..., kkk...k47: 1, z: a}``, 48 keys of 99
characters sharing a 97-character prefix, was weighed at 4,900,000 values over 100,000 rows
(under :data:`bounds.MAX_SORTED_VALUES`) and held a 3 s server 4.9 to 6.5 s; four such calls
in one agent's turn made the golds of the honest cases after them time out (2 of 2 runs). A
key now weighs one value more for each :data:`bounds.MAP_KEY_CHARS` characters. M1
(MEDIUM): a ``collect()`` over rows the text counts was weighed by its rows only, and
``collect(range(1,99))`` over ``range(1,1000000)`` grew the server to 2 GB against its 256 MB
cap; each row's lists and maps now count, :data:`bounds.MAX_RANGE` values in all.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cypher.test_cypher_fortyfourth import hostile_then_honest

_PREFIX = "k" * 97
_LONG_KEYS = ("UNWIND range(1,100000) AS a RETURN a ORDER BY {"
              + ", ".join(f"{_PREFIX}{i:02d}: 1" for i in range(48)) + ", z: a} DESC")

#: (the query, a word of its refusal)
REFUSED = {
    "h1-a-map-of-long-keys-as-a-sort-key": (_LONG_KEYS, "compares lists"),
    "h1-a-named-map-of-long-keys": (
        "UNWIND range(1,100000) AS a WITH a, {"
        + ", ".join(f"{_PREFIX}{i:02d}: 1" for i in range(48)) + ", z: a} AS m "
        "RETURN a ORDER BY m", "compares lists"),
    "m1-two-collects-of-ranges": (
        "UNWIND range(1,1000000) AS a RETURN size(collect(range(1,99))) AS n, "
        "size(collect(range(1,99))) AS m", "rows the text counts"),
    "m1-a-collect-of-lists": (
        "UNWIND range(1,1000000) AS a RETURN size(collect([" + ", ".join(["a"] * 64)
        + "])) AS n", "rows the text counts"),
    "m1-a-collect-of-maps": (
        "UNWIND range(1,1000000) AS a RETURN size(collect({"
        + ", ".join(f"k{i}: a" for i in range(100)) + "})) AS n", "rows the text counts"),
    "m1-four-million-maps-collected": (
        "UNWIND range(1,1000000) AS x UNWIND range(1,1000000) AS y WITH y LIMIT 4000000 "
        "WITH collect({a:y,b:y,c:y,d:y,e:y,f:y}) AS l RETURN size(l) AS c",
        "rows the text counts"),
}

#: Honest maps and collections beside them: sent.
SENT = [
    "MATCH (m:Movie) RETURN m.title AS t, {title: m.title, released: m.released} AS k "
    "ORDER BY k",
    "UNWIND range(1, 1000) AS k RETURN collect([k, k * 2]) AS l",
    "UNWIND range(1, 200000) AS k RETURN size(collect(k)) AS n",
    "MATCH (p:Person)-[:ACTED_IN]->(m:Movie) RETURN p.name AS n, "
    "collect({title: m.title, year: m.released}) AS films ORDER BY n",
]


def test_the_long_keys_are_refused_and_the_honest_cases_after_them_pass(
        pytester: pytest.Pytester, tmp_path: Path) -> None:
    """H1 as a prediction and as an agent's second ``run_query``: before, four such calls in
    one turn made the golds of the honest cases after them time out (2 of 2 runs)."""
    hostile_then_honest(pytester, tmp_path, {
        "h1-a-map-of-long-keys-as-a-sort-key": REFUSED["h1-a-map-of-long-keys-as-a-sort-key"][0]})
