"""Issue 58, the sixty-fourth round of the Cypher kind (main 8854bcaa).

W1, W2: the sort's table of names bound to values that may hold several (a map, a list) was
emptied of a name at every binding of it, wherever it was: a swap in one ``WITH`` (``WITH k,
1 AS key, key AS kk``), a name rebound inside ``CALL { }`` (by ``UNWIND`` or ``YIELD``). A sort
of the rows of a variable-length match by a list of maps (314,000 rows, taken for 100,000)
was sent: 6 to 8 s on a 3 s server, the next case's gold timed out in 2 of 2 runs. N1: the
steps' copies table the same way (a map doubled at each of 20 swaps, taken for two copies);
N2: a renamed built list (``WITH c0 AS c``) unwound beside variable-length matches. A name is
now never forgotten nor lowered in those tables either.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cypher.test_cypher_fortyfourth import hostile_then_honest

_PATHS = ("MATCH p=(a)-[*]-(b) UNWIND range(1,1000) AS k WITH k, "
          "[x IN nodes(p) | properties(x)] AS key ")
_DOUBLED = "WITH {a: 1} AS l0 " + " ".join(
    f"WITH 1 AS l{n}, {{a: l{n}, b: l{n}}} AS l{n + 1}" for n in range(20)) \
    + " RETURN size(keys(l20)) AS n"

#: (the query, a word of its refusal)
REFUSED = {
    "w1-swapped-in-one-with": (
        _PATHS + "WITH k, 1 AS key, key AS kk RETURN k ORDER BY kk, kk, kk, kk, kk, kk, kk, "
        "kk, k", "several values|compares lists"),
    "w2-rebound-in-a-subquery": (
        _PATHS + "CALL { UNWIND [1] AS key RETURN count(*) AS zz } RETURN k ORDER BY key, key, "
        "key, key, key, key, key, key, k", "several values|compares lists"),
    "w2-yielded-in-a-subquery": (
        _PATHS + "CALL { CALL db.labels() YIELD label AS key RETURN count(*) AS zz } RETURN k "
        "ORDER BY key, key, key, key, k", "several values|compares lists"),
    "n1-doubled-at-each-swap": (_DOUBLED, "copies of one value"),
    "n2-a-renamed-built-list": (
        "MATCH p=(a)-[*]-(b) WITH collect(b) AS c0 WITH c0 AS c UNWIND c AS x UNWIND c AS y "
        "WITH x, y UNWIND range(1,10) AS k RETURN k ORDER BY x.title, y.title, k",
        "a list the query builds"),
}

#: Honest queries beside them (the round's own): sent.
SENT = [
    "MATCH (p:Person) WITH p.name AS name, 1 AS one, p AS person RETURN name ORDER BY name",
    "WITH [1,2,3] AS r CALL { UNWIND [4,5] AS r RETURN count(*) AS c } RETURN r, c",
    "MATCH (p:Person) WITH p.name AS name, p.born AS born WITH born AS name, name AS label "
    "RETURN label, name ORDER BY label",
    "MATCH (m:Movie) WITH m, properties(m) AS props RETURN m.title AS t ORDER BY props",
]


def test_the_rebound_keys_are_sorted_as_they_are_and_the_honest_cases_after_them_pass(
        pytester: pytest.Pytester, tmp_path: Path) -> None:
    """W1 and W2 as predictions and as an agent's second ``run_query``: before, the gold of
    the honest case after them timed out (2 of 2 runs each)."""
    hostile_then_honest(pytester, tmp_path, {name: REFUSED[name][0] for name in
                                             ("w1-swapped-in-one-with",
                                              "w2-rebound-in-a-subquery")})
