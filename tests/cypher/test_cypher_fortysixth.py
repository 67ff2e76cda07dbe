"""Issue 58, the forty-sixth round of the Cypher kind under ``rehearse: false`` (the guard's
refusal before sending is the only wall on a FalkorDB server).

C4: ``collect(DISTINCT {name: p.name})`` was refused as a node named ``DISTINCT``.
"""

from __future__ import annotations

#: (the query, a word of its refusal)
REFUSED: dict[str, tuple[str, str]] = {}

#: Honest queries beside them: sent (the C4 forms were refused before).
SENT = [
    "MATCH (p:Person)-[:ACTED_IN]->(m:Movie) RETURN m.title AS t, "
    "collect(DISTINCT {name: p.name}) AS c",
    "MATCH (p:Person)-[:ACTED_IN]->(m:Movie) RETURN count(DISTINCT {n: p.name}) AS c",
    "MATCH (p:Person)-[:ACTED_IN]->(m:Movie) RETURN m.title AS t, collect(DISTINCT p.name) AS c",
]


