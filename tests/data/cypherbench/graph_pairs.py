"""Gold and predicted Cypher on the example film graph, executed on ladybug: the pairs of
``graph_oracle.json`` (see PROVENANCE.md).

``python graph_pairs.py > graph_pairs.json`` (with the project's ``src`` importable and the
``cypher`` extra installed) writes each pair with the records both queries returned, in the
form CypherBench reads (:func:`pytest_queryeval.cypher.cypherbench.neo4j_view`; a date as
``{"$date": ...}``), or ``{"error": ...}`` for a predicted query the engine refused or failed.
The test re-executes the same pairs and checks the records are still these.
"""

from __future__ import annotations

import datetime as dt
import json
import sys
from pathlib import Path

GRAPH = Path(__file__).resolve().parents[3] / "example_suite" / "data" / "movies.cypher"

MATRIX = "MATCH (p:Person)-[:ACTED_IN]->(:Movie {title: 'The Matrix'}) RETURN p.name"
RATED = "MATCH (m:Movie) RETURN m.title, m.rating ORDER BY m.rating DESC"
PER_DIRECTOR = "MATCH (d:Person)-[:DIRECTED]->(m:Movie) RETURN d.name, count(m) AS films"

#: (gold, prediction): right and wrong answers of the forms a model writes.
PAIRS: list[tuple[str, str]] = [
    (MATRIX, MATRIX),
    (MATRIX, "MATCH (m:Movie {title: 'The Matrix'})<-[:ACTED_IN]-(a:Person) RETURN a.name"),
    (MATRIX, "MATCH (p:Person)-[:ACTED_IN]->(m:Movie) WHERE m.title = 'The Matrix' "
             "RETURN p.name ORDER BY p.name"),
    (MATRIX, "MATCH (p:Person)-[:ACTED_IN]->(:Movie) RETURN p.name"),
    (MATRIX, "MATCH (p:Person)-[:ACTED_IN]->(:Movie) RETURN DISTINCT p.name"),
    (MATRIX, "MATCH (p:Person)-[:ACTED_IN]->(:Movie {title: 'The Matrix'}) RETURN p.name, p.born"),
    (MATRIX, "MATCH (p:Person)-[:ACTED_IN]->(:Movie {title: 'The Matrix'}) RETURN p"),
    (MATRIX, "MATCH (p:Person)-[:ACTED_IN]->(:Movie {title: 'Matrix'}) RETURN p.name"),
    (MATRIX, "MATCH (p:Person) RETURN p.nope"),
    (RATED, RATED),
    (RATED, "MATCH (m:Movie) RETURN m.rating, m.title ORDER BY m.rating DESC"),
    (RATED, "MATCH (m:Movie) RETURN m.title, m.rating ORDER BY m.rating"),
    (RATED, "MATCH (m:Movie) RETURN m.title, m.rating"),
    (RATED, "MATCH (m:Movie) RETURN m.title, m.rating ORDER BY m.rating DESC LIMIT 3"),
    (PER_DIRECTOR, "MATCH (d:Person)-[:DIRECTED]->(m) WITH d, count(*) AS n RETURN n, d.name"),
    (PER_DIRECTOR, "MATCH (d:Person)-[:DIRECTED]->(m:Movie) RETURN d.name, collect(m.title)"),
    (PER_DIRECTOR, "MATCH (d:Person)-[:DIRECTED]->(m:Movie) "
                   "RETURN d.name, count(m) AS films ORDER BY films DESC"),
    ("MATCH (d:Person)-[:DIRECTED]->(m:Movie) RETURN d.name, collect(m.title) AS films",
     "MATCH (d:Person)-[:DIRECTED]->(m:Movie) WITH d, m ORDER BY m.title DESC "
     "RETURN d.name, collect(m.title) AS films"),
    ("MATCH (d:Person)-[:DIRECTED]->(m:Movie) WITH d, m ORDER BY m.released LIMIT 2 "
     "RETURN d.name",
     "MATCH (d:Person)-[:DIRECTED]->(m:Movie) WITH d, m ORDER BY m.released LIMIT 2 "
     "RETURN d.name ORDER BY d.name DESC"),
    ("MATCH (m:Movie) RETURN avg(m.rating), min(m.released), max(m.released)",
     "MATCH (m:Movie) RETURN max(m.released), min(m.released), avg(m.rating)"),
    ("MATCH (m:Movie) RETURN count(m)", "MATCH (m:Movie) RETURN count(*) AS n"),
    ("MATCH (m:Movie) RETURN count(m)", "MATCH (m:Movie) RETURN toFloat(count(m))"),
    ("MATCH (p:Person) WHERE p.name STARTS WITH 'Zz' RETURN p.name",
     "MATCH (p:Person) WHERE p.name STARTS WITH 'Yy' RETURN p.name, p.born"),
    ("MATCH (p:Person) WHERE p.name STARTS WITH 'Zz' RETURN p.name",
     "MATCH (p:Person) WHERE p.name STARTS WITH 'T' RETURN p.name"),
    ("OPTIONAL MATCH (p:Person {name: 'Nobody'}) RETURN p.name",
     "MATCH (p:Person {name: 'Nobody'}) RETURN p.name"),
    ("MATCH (a:Person {name: 'Tom Hanks'})-[:ACTED_IN*1..2]-(b:Person) RETURN DISTINCT b.name",
     "MATCH (:Person {name: 'Tom Hanks'})-[:ACTED_IN]->(:Movie)<-[:ACTED_IN]-(c:Person) "
     "RETURN c.name"),
    ("MATCH (m:Movie {title: 'Cast Away'}) RETURN date('2000-12-22') AS premiere",
     "MATCH (m:Movie {title: 'Cast Away'}) RETURN '2000-12-22' AS premiere"),
    ("RETURN [1, null] AS l", "RETURN [1] AS l"),
    ("MATCH (m:Movie) RETURN m.title", "MATCH (m:Movie) SET m.rating = 0.0 RETURN m.title"),
    ("MATCH (m:Movie {title: 'The Matrix'}) RETURN m.released",
     "MATCH (m:Movie {title: 'The Matrix'}) RETURN m.released = 1999"),
]


def _encode(v: object) -> object:
    if isinstance(v, dt.date) and not isinstance(v, dt.datetime):
        return {"$date": v.isoformat()}
    if isinstance(v, dict):
        return {k: _encode(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_encode(x) for x in v]
    return v


def records(src: object, query: str) -> object:
    """What CypherBench reads for ``query``: its records, or ``{"error": reason}``."""
    from pytest_queryeval.cypher.cypherbench import neo4j_view
    from pytest_queryeval.errors import QueryEvalError

    try:
        table = src.execute(query)  # type: ignore[attr-defined]
    except QueryEvalError as exc:
        return {"error": exc.reason()}
    return [{k: _encode(v) for k, v in r.items()} for r in neo4j_view(table.columns, table.rows)]


def main() -> None:
    from pytest_queryeval.cypher.source import LadybugSource

    src = LadybugSource.from_spec("movies", {"type": "ladybug", "path": str(GRAPH)})
    out = [{"id": f"g{i:02d}", "gold_text": gold, "pred_text": pred,
            "gold": records(src, gold), "pred": records(src, pred)}
           for i, (gold, pred) in enumerate(PAIRS)]
    src.close()
    json.dump(out, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
