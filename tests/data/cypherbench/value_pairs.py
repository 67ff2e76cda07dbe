"""The graph values the neo4j driver hands CypherBench's harness (issue 60): a relationship, a
path, a variable-length relationship, a node, an integer ``sum()`` and a duration, as gold and
predicted Cypher pairs on a small publishing graph that both ladybug and a Bolt server build.

``make_values_oracle.py`` runs each pair through the reference's own ``Neo4jConnector.run_query``
(``Result.data()``) against a real Bolt server (FalkorDB's listener) and records the records
and the reference's scores; the tests run the same texts through the plugin's ladybug source
and check that its CypherBench view is those records, and its scores the reference's.

This file is this project's (MIT)."""

from __future__ import annotations

from typing import Any

#: The node and relationship tables ladybug needs first (a Bolt server needs none); their
#: columns in the order the properties are written below, so a node's mapping has one order.
TABLES = [
    "CREATE NODE TABLE Publisher(pname STRING PRIMARY KEY, founded INT64)",
    "CREATE NODE TABLE Book(title STRING PRIMARY KEY, year INT64)",
    "CREATE REL TABLE PUBLISHED(FROM Publisher TO Book, since INT64)",
]
GRAPH = [
    "CREATE (:Publisher {pname: 'Kestrel', founded: 1950})",
    "CREATE (:Publisher {pname: 'Heron', founded: 1971})",
    "CREATE (:Book {title: 'Aster', year: 2001})",
    "CREATE (:Book {title: 'Birch', year: 2003})",
    "CREATE (:Book {title: 'Cedar', year: 2005})",
    "MATCH (p:Publisher {pname: 'Kestrel'}), (b:Book) WHERE b.title IN ['Aster', 'Birch'] "
    "CREATE (p)-[:PUBLISHED {since: b.year}]->(b)",
    "MATCH (p:Publisher {pname: 'Heron'}), (b:Book {title: 'Cedar'}) "
    "CREATE (p)-[:PUBLISHED {since: 2006}]->(b)",
]
#: The graph's name on the Bolt server (not its default graph, which the film tests read).
BOLT_GRAPH = "cypherbench_values"

_K = "MATCH (:Publisher {pname: 'Kestrel'})-[e:PUBLISHED]->(b:Book)"
_PATH = "MATCH p = (:Publisher {pname: 'Kestrel'})-[:PUBLISHED]->(:Book {title: 'Aster'}) RETURN p"

#: (id, gold, prediction), executed on both engines.
PAIRS: list[tuple[str, str, str]] = [
    ("rel-same", f"{_K} RETURN e",
     "MATCH (b:Book)<-[e:PUBLISHED]-(:Publisher {pname: 'Kestrel'}) RETURN e"),
    ("rel-pred-only", f"{_K} RETURN e.since", f"{_K} RETURN e"),
    ("rel-ordered", f"{_K} RETURN e ORDER BY b.year", f"{_K} WITH e, b ORDER BY b.year LIMIT 10 RETURN e"),
    ("rel-start-known", "MATCH (p:Publisher)-[e:PUBLISHED]->(b:Book) RETURN p.pname, e "
     "ORDER BY e.since", "MATCH (p:Publisher)-[e:PUBLISHED]->(b:Book) RETURN p, e "
     "ORDER BY e.since"),
    ("rel-other-length", "MATCH (b:Book) RETURN b.title", f"{_K} RETURN e"),
    ("path-equivalent", _PATH,
     "MATCH p = (:Publisher)-[:PUBLISHED]->(:Book {title: 'Aster'}) RETURN p"),
    ("path-gold", _PATH, "MATCH (b:Book {title: 'Aster'}) RETURN b.title"),
    ("path-same-text", _PATH, _PATH),
    ("node", "MATCH (b:Book {title: 'Aster'}) RETURN b", "MATCH (b:Book) WHERE b.year = 2001 "
     "RETURN b"),
    ("sum-gold", "MATCH (b:Book) RETURN sum(b.year) AS s", "RETURN 6009 AS s"),
    ("sum-pred", "RETURN 6009 AS s", "MATCH (b:Book) RETURN sum(b.year) AS total"),
    ("sum-grouped", "MATCH (p:Publisher)-[e:PUBLISHED]->() RETURN p.pname AS n, "
     "sum(e.since) AS total",
     "MATCH (p:Publisher)-[e:PUBLISHED]->() WITH p.pname AS n, sum(e.since) AS t "
     "RETURN t, n"),
]

#: (id, gold, prediction, gold records, predicted records): durations. FalkorDB's listener
#: cannot return one (its server process dies on ``RETURN duration({days: 3})``), and no Neo4j
#: server runs here: the records are the driver's ``neo4j.time.Duration`` made directly (a
#: stand-in for a server, named as such), the texts ladybug's (``interval``).
DURATIONS: list[tuple[str, str, str, list[dict[str, Any]], list[dict[str, Any]]]] = [
    ("duration-sum", "RETURN interval('3 days') AS d",
     "RETURN interval('2 days') + interval('1 day') AS d",
     [{"d": {"$duration": [0, 3, 0, 0]}}], [{"d": {"$duration": [0, 3, 0, 0]}}]),
    ("duration-other", "RETURN interval('3 days') AS d", "RETURN interval('4 days') AS d",
     [{"d": {"$duration": [0, 3, 0, 0]}}], [{"d": {"$duration": [0, 4, 0, 0]}}]),
    ("duration-hours", "RETURN interval('90 minutes') AS d",
     "RETURN interval('1 hour') + interval('30 minutes') AS d",
     [{"d": {"$duration": [0, 0, 5400, 0]}}], [{"d": {"$duration": [0, 0, 5400, 0]}}]),
]


def encode(v: Any) -> Any:
    """A ``Result.data()`` value as JSON: a tuple (a relationship) and a duration tagged."""
    import neo4j.time

    if isinstance(v, neo4j.time.Duration):
        return {"$duration": [v.months, v.days, v.seconds, v.nanoseconds]}
    if isinstance(v, neo4j.time.Date):
        return {"$date": v.iso_format()}
    if isinstance(v, tuple):
        return {"$tuple": [encode(x) for x in v]}
    if isinstance(v, list):
        return [encode(x) for x in v]
    if isinstance(v, dict):
        return {k: encode(x) for k, x in v.items()}
    return v


def decode(v: Any) -> Any:
    """:func:`encode`'s JSON as the driver's values again."""
    if isinstance(v, dict) and "$duration" in v:
        import neo4j.time

        months, days, seconds, nanoseconds = v["$duration"]
        return neo4j.time.Duration(months=months, days=days, seconds=seconds,
                                   nanoseconds=nanoseconds)
    if isinstance(v, dict) and "$date" in v:
        import neo4j.time

        return neo4j.time.Date.from_iso_format(v["$date"])
    if isinstance(v, dict) and "$tuple" in v:
        return tuple(decode(x) for x in v["$tuple"])
    if isinstance(v, dict):
        return {k: decode(x) for k, x in v.items()}
    if isinstance(v, list):
        return [decode(x) for x in v]
    return v
