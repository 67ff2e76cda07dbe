"""Issue 58, the forty-fifth round of the Cypher kind under ``rehearse: false`` (the guard's
refusal before sending is the only wall on a FalkorDB server).

Over-refusals the forty-third re-probe left (M3's second and third forms): ``properties()``
counted as a list of 1,000 values, so a collected list of nodes' property maps iterated was
refused as 2,000,000 values; a group's list kept over a second ``MATCH`` that expands each
group (``WITH p, collect(m.title) AS directed MATCH (p)-[:ACTED_IN]->(m2)``) was refused as
1,000 values on each of 100,001 rows. A node's property map counts as the node does now, and
a group's list after a ``MATCH`` whose every pattern shares a bound variable is kept on that
group's own matches (counted as one pattern's). The same shapes over lists the text builds
from ranges stay refused.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cypher.test_cypher_fortyfourth import hostile_then_honest

_BUILT = "built on each row"
_SORTED = "takes up to"
_EVALUATED = "evaluated 1,000,000 times"
_MAPS = "{a:y,b:y,c:y,d:y,e:y,f:y}"
_ZEROS = ",".join(["0"] * 1000)

#: (the query, a word of its refusal)
REFUSED = {
    "group-then-apart": ("UNWIND range(1,1000000) AS y WITH y % 10 AS k, collect(y) AS l "
                         "MATCH (n) RETURN k, l", _BUILT),
    "group-then-expand": ("MATCH (p:Person) UNWIND range(1,1000000) AS y WITH p, collect(y) "
                          "AS l MATCH (p)--(q) RETURN l", _BUILT),
    "group-then-optional": ("MATCH (p:Person) UNWIND range(1,1000000) AS y WITH p, collect(y) "
                            "AS l OPTIONAL MATCH (p)--(q) RETURN l", _BUILT),
    "group-then-two-steps": ("MATCH (p:Person) UNWIND range(1,10000) AS y WITH p, "
                             "collect({a:y,b:y}) AS l MATCH (p)--(q) MATCH (q)--(r) RETURN l",
                             _BUILT),
    "properties-of-a-made-map": ("WITH {a: range(1,1000000)} AS m "
                                 "RETURN [x IN range(1,100) | properties(m)] AS z",
                                 "brings the values"),
    "properties-three-deep": ("MATCH (n) WITH collect(properties(n)) AS l "
                              "RETURN size([x IN l | [y IN l | [z IN l | x]]]) AS s",
                              "built or walked"),
    "t1-skip": ("UNWIND range(1,1000000) AS y WITH " + _MAPS + " AS m ORDER BY m "
                "SKIP 999990 LIMIT 10 RETURN m.a AS s", _SORTED),
    "t1-skip-arithmetic": ("UNWIND range(1,1000000) AS y WITH y ORDER BY {a:y,b:y,c:y} "
                           "SKIP 999989 + 1 LIMIT 10 RETURN y AS s", _SORTED),
    "t1-in-subquery": ("CALL { UNWIND range(1,1000000) AS y WITH " + _MAPS + " AS m ORDER BY m "
                       "SKIP 999990 LIMIT 10 RETURN m } RETURN count(*) AS s", _SORTED),
    "t2-unwound-names": ("UNWIND range(1,3000) AS y WITH collect(y) AS r UNWIND r AS a "
                         "UNWIND r AS b RETURN a AS s ORDER BY b", _SORTED),
    "t2-grouped": ("UNWIND range(1,3000) AS y WITH collect(y) AS r UNWIND r AS a UNWIND r AS b "
                   "RETURN a + b * 3000 AS s, count(*) AS c", _SORTED),
    "t2-three-graph-lists": ("MATCH (n) WITH collect(n) AS r UNWIND r AS a UNWIND r AS b "
                             "UNWIND r AS c RETURN a.name AS s ORDER BY b.name", _SORTED),
    "t3-match-then-range": ("MATCH (a) UNWIND range(1,1000000) AS y RETURN y AS s ORDER BY y",
                            _SORTED),
    "t4-wide-key": ("UNWIND range(1,100000) AS y WITH y ORDER BY [" + _ZEROS + ",-y] "
                    "RETURN count(*) AS s", _BUILT),
    "f1-case-calls": ("RETURN size([x IN range(1,1000000) | toLower(toUpper(toLower(toUpper("
                      "toLower(toUpper('" + "abcdefghijklmnopqrstuvwxyz" * 3 + "'))))))]) AS s",
                      _EVALUATED),
    "f1-uuids": ("RETURN size([x IN range(1,1000000) | randomUUID() + randomUUID()]) AS s",
                 _EVALUATED),
    "f1-map-text": ("RETURN size([x IN range(1,1000000) | toString({a:x,b:x,c:x})]) AS s",
                    _EVALUATED),
    "f2-dedup-maps": ("RETURN size(list.dedup([x IN range(1,1000000) | {a:x,b:x,c:x,d:x}])) "
                      "AS s", "copied or walked"),
    "f2-dedup-nested": ("RETURN size(list.dedup([x IN range(1,1000000) | [[[x]]]])) AS s",
                        "copied or walked"),
    "t5-grouping-limit": ("UNWIND range(1,1000000) AS y WITH y % 500000 AS k, "
                          "collect({a:y,b:y,c:y}) AS c LIMIT 10 RETURN count(*) AS n", _SORTED),
    "t6-wrapped-accumulator": ("RETURN size(reduce(a = [], x IN range(1,10000) | [[a]])) AS d",
                               "copies its accumulator"),
    "t7-limit-as-name": ("UNWIND range(1,1000) AS x UNWIND range(1,4000) AS y WITH y, 0 AS limit "
                         "WHERE y > limit + 0 WITH collect(" + "{a:y,b:y,c:y,d:y,e:y,f:y}" + ") AS l "
                         "RETURN l[1..][1..][1..][1..][1..][1..] AS s", "clause word"),
    "t7-backquoted": ("UNWIND range(1,1000000) AS y WITH {a:y,b:y,c:y,d:y,e:y,f:y} AS m, [] AS "
                      "`limit` ORDER BY [m] + limit + 10 RETURN count(*) AS s", "clause word"),
    "l2-property-keys-bound": ("MATCH (z) WITH z, z.a AS q, z.b AS r, z.c AS s, z.d AS t, "
                               "z.e AS u MATCH (a), (b), (c), (d), (e) WITH id(a) + id(b) AS i "
                               "ORDER BY i RETURN count(*) AS s", "product of"),
    "f3b-split-of-a-key": ("RETURN size([x IN split(toJSON({" + "abcdefghijklmnopqrstuvwxyz" * 40
                           + ": 1}), '') | size([y IN range(1,1000) | {a:y}])]) AS n",
                           "characters"),
    "f3-long-key": ("RETURN size([x IN range(1,1000000) | size(toJSON({"
                    + "abcdefghijklmnopqrstuvwxyz" * 40 + ": x}))]) AS s", "characters"),
    "f3-keys-in-a-body": ("RETURN size([x IN range(1,1000000) | size(toJSON({"
                          + ", ".join(f"k{n}abcdefghijklmnopqrstuvwxyz{'x' * 60}: x"
                                      for n in range(9)) + "}))]) AS s", _EVALUATED),
}

#: Honest queries beside them: sent (each was refused before).
SENT = [
    "MATCH (m:Movie) WITH collect(properties(m)) AS ms RETURN [x IN ms | x.title] AS t",
    "MATCH (m:Movie) WITH collect(properties(m)) AS ms UNWIND ms AS x RETURN x.title AS t",
    "MATCH (p:Person)-[:DIRECTED]->(m:Movie) WITH p, collect(m.title) AS directed "
    "MATCH (p)-[:ACTED_IN]->(m2:Movie) RETURN p.name, directed, collect(m2.title) AS acted",
    "MATCH (p:Person)-[:DIRECTED]->(m:Movie) WITH p, collect(m.title) AS directed "
    "OPTIONAL MATCH (p)-[:ACTED_IN]->(m2:Movie) RETURN p.name, directed, count(m2) AS n",
    "MATCH (n) UNWIND labels(n) AS l RETURN l, count(*) AS c",
    "MATCH (n) UNWIND labels(n) AS l RETURN l AS label, count(*) AS c ORDER BY c DESC",
    "MATCH (n) UNWIND keys(n) AS k RETURN DISTINCT k AS key",
    "MATCH (m:Movie) UNWIND split(m.tagline, ' ') AS w RETURN w, count(*) AS c "
    "ORDER BY c DESC LIMIT 10",
    "MATCH (m:Movie) WITH collect(m) AS ms UNWIND ms AS m RETURN m.title AS t ORDER BY t",
    "MATCH (m:Movie) RETURN m.title AS t ORDER BY m.released SKIP 2 LIMIT 3",
    "UNWIND range(1, 1000) AS y RETURN y ORDER BY y DESC SKIP 10 LIMIT 10",
    "MATCH (m:Movie) RETURN [x IN range(1, 10) | toUpper(m.title) + toString(x)] AS t",
    "RETURN [x IN range(1, 1000) | {a: x, b: toString(x)}] AS l",
    "MATCH (p:Person) RETURN toUpper(p.name) AS n, [w IN split(p.name, ' ') | toLower(w)] AS ws",
    "MATCH (m:Movie) OPTIONAL MATCH (m)<-[r:ACTED_IN]-(p) RETURN m.title AS t, "
    "collect({name: p.name, roles: r.roles}) AS cast",
    "MATCH (p:Person) OPTIONAL MATCH (p)-[:DIRECTED]->(m:Movie) "
    "RETURN p {.name, .born} AS person, count(m) AS c",
    "MATCH (n) OPTIONAL MATCH (n)-[r]->() RETURN labels(n) AS l, count(r) AS c",
    "RETURN reduce(acc = [], x IN range(1, 1000) | acc + [[x, x * 2]]) AS l",
    "MATCH (c:Person)-[:ACTED_IN]->(order:Movie) RETURN order.title AS t LIMIT 3",
    "MATCH (p:Person) WITH p, p.born AS b MATCH (p)-[:ACTED_IN]->(m:Movie) "
    "RETURN p.name, m.title ORDER BY b",
]

def test_the_sorts_are_refused_and_the_honest_cases_after_them_pass(
        pytester: pytest.Pytester, tmp_path: Path) -> None:
    """The T1 to T7 and F1, F2 texts as predictions and as an agent's second ``run_query``
    (each held the server past its timeout, and the honest golds after them timed out) are
    refused unsent (:func:`.test_cypher_fortyfourth.hostile_then_honest`)."""
    hostile = {name: REFUSED[name][0] for name in (
        "t1-skip", "t2-unwound-names", "t3-match-then-range", "t4-wide-key",
        "f1-case-calls", "f2-dedup-maps", "t5-grouping-limit", "t6-wrapped-accumulator",
        "t7-limit-as-name")}
    hostile_then_honest(pytester, tmp_path, hostile)
