"""``kind: cypher`` and ``type: ladybug``: text-to-Cypher on an embedded graph database.

A package that extends the plugin only through its public hooks (:mod:`.plugin`), as an
installed third-party package would: the kind (:mod:`.kind`), the read-only graph source
(:mod:`.source`, :mod:`.guard`) and CypherBench's execution metrics (:mod:`.cypherbench`).
Importing it imports nothing else; ``ladybug`` is imported when a graph is first opened.
"""
