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

_BUILT = "built on each row"

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
}

#: Honest queries beside them: sent (each was refused before).
SENT = [
    "MATCH (m:Movie) WITH collect(properties(m)) AS ms RETURN [x IN ms | x.title] AS t",
    "MATCH (m:Movie) WITH collect(properties(m)) AS ms UNWIND ms AS x RETURN x.title AS t",
    "MATCH (p:Person)-[:DIRECTED]->(m:Movie) WITH p, collect(m.title) AS directed "
    "MATCH (p)-[:ACTED_IN]->(m2:Movie) RETURN p.name, directed, collect(m2.title) AS acted",
    "MATCH (p:Person)-[:DIRECTED]->(m:Movie) WITH p, collect(m.title) AS directed "
    "OPTIONAL MATCH (p)-[:ACTED_IN]->(m2:Movie) RETURN p.name, directed, count(m2) AS n",
]
