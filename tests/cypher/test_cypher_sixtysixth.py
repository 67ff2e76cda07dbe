"""Issue 58, the sixty-sixth round of the Cypher kind (main 78b12372).

T1: a sort followed by ``LIMIT n`` (or ``SKIP s LIMIT n``) with n up to 100,000 skipped every
check of a sort, and a top of 100,000 costs about what the whole sort does: ``ORDER BY
range(1,99), range(1,99), k LIMIT 100000`` over a variable-length match held a 3 s server
27 s. M1: a map literal held no values for the sorts' keys: six maps of 80 entries over
100,000 counted rows held it 30 s, one named map sorted by three times 20 s. The golds of the
honest cases after them timed out in 2 of 2 runs. A top keeps the sort's checks past
:data:`bounds.MAX_TOP` rows, and a map holds its entries (times the comprehensions around it).
L1 (LOW): a ``RETURN``'s ``collect()`` sorted by its own ``ORDER BY`` is one list a group.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cypher.test_cypher_fortyfourth import hostile_then_honest

_MAP = "{" + ",".join(f"a{n}:{n}" for n in range(80)) + "}"
_TWENTY = "{" + ",".join(f"a{n}:x" for n in range(20)) + "}"
_ROWS = "UNWIND range(1,100000) AS k WITH k "

#: (the query, a word of its refusal)
REFUSED = {
    "t1-a-top-of-a-variable-length-match": (
        "MATCH p=(a)-[*]-(b) UNWIND range(1,1000) AS k WITH k ORDER BY range(1,99), "
        "range(1,99), k LIMIT 100000 RETURN count(*)", "compares lists|several values"),
    "t1-a-top-after-a-skip": (
        _ROWS + "ORDER BY range(1,80), range(1,80), range(1,80), range(1,80), range(1,80), "
        "range(1,80), k SKIP 50000 LIMIT 50000 RETURN count(*)", "compares lists"),
    "m1-six-map-literals": (
        _ROWS + "ORDER BY " + ", ".join([_MAP] * 6) + ", k RETURN count(*)", "compares lists"),
    "m1-a-named-map": (
        _ROWS.replace("WITH k ", f"WITH k, {_MAP} AS m ") + "ORDER BY m, m, m, k "
        "RETURN count(*)", "compares lists"),
    "m1-a-list-of-maps": (
        _ROWS + f"ORDER BY [x IN range(1,40) | {_TWENTY}], k RETURN count(*)",
        "compares lists"),
}

#: Honest queries beside them (the round's own): sent.
SENT = [
    "MATCH (m:Movie) RETURN m.title AS t ORDER BY {year: m.released, t: m.title}",
    "MATCH (p:Person) RETURN p {.name, .born} AS person ORDER BY person",
    "MATCH (p:Person)-[r:ACTED_IN]->(m:Movie) RETURN {actor: p.name, movie: m.title, "
    "roles: r.roles} AS row ORDER BY row LIMIT 100",
    "UNWIND range(1990, 2020) AS y OPTIONAL MATCH (m:Movie {released: y}) RETURN y, "
    "collect(m.title) AS titles ORDER BY titles, y",
    "MATCH p=(a:Person)-[*1..3]-(b:Movie) RETURN [n IN nodes(p) | coalesce(n.name, n.title)] "
    "AS names ORDER BY names LIMIT 10",
]


def test_the_tops_and_maps_are_weighed_and_the_honest_cases_after_them_pass(
        pytester: pytest.Pytester, tmp_path: Path) -> None:
    """T1 and M1 as predictions and as an agent's second ``run_query``: before, the golds of
    the honest cases after them timed out (2 of 2 runs each)."""
    hostile_then_honest(pytester, tmp_path, {name: REFUSED[name][0] for name in
                                             ("t1-a-top-of-a-variable-length-match",
                                              "m1-six-map-literals")})
