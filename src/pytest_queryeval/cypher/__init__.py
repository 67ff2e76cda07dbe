"""``kind: cypher``, ``type: ladybug`` and ``type: bolt``: text-to-Cypher on an embedded graph
database or a Bolt server (Neo4j).

A package that extends the plugin only through its public hooks (:mod:`.plugin`), as an
installed third-party package would: the kind (:mod:`.kind`), the read-only graph sources
(:mod:`.source`, :mod:`.bolt`, both guarded by :mod:`.guard`) and CypherBench's execution
metrics (:mod:`.cypherbench`). Importing it imports nothing else; ``ladybug`` is imported when
a graph is first opened, the ``neo4j`` driver when a server is first connected.
"""
