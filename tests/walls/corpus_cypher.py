"""Hostile Cypher, by category (:mod:`.corpus` says what each category expects)."""

from __future__ import annotations

from .corpus import DEEP

_CSV = "(file_format='csv', header=false)"

CYPHER: dict[str, list[str]] = {
    "writes": [
        "CREATE (n:Person {name: 'pwned'})",
        "MATCH (n) DETACH DELETE n",
        "MATCH (n:Person) SET n.born = 0",
        "MERGE (n:Person {name: 'pwned'})",
        "MATCH (n:Person) REMOVE n.born",
        "DROP TABLE Person",
        "MATCH (n) RETURN n; MATCH (n) DETACH DELETE n",
        "CALL { CREATE (n:Person {name: 'pwned'}) } RETURN 1",
        "FOREACH (x IN [1] | CREATE (:Person {name: 'pwned'}))",
        # issue 58, the tenth re-probe: heads an agent's statement reader once passed as reads
        "WITH 1 AS x MATCH (n:Person) DETACH DELETE n",
        "PROFILE MATCH (n:Person) DETACH DELETE n",
        "BEGIN TRANSACTION; MATCH (n:Person) DETACH DELETE n; COMMIT;",
        "RETURN 1 AS x UNION ALL MATCH (n:Person) DETACH DELETE n RETURN 1 AS x",
        # the eleventh: ladybug's DDL (it runs both), and a head behind a format character
        "CREATE NODE TABLE IF NOT EXISTS Pwned(id INT64, PRIMARY KEY(id))",
        "CREATE REL TABLE PwnedRel(FROM Person TO Person)",
        "\ufeffCREATE (n:Person {name: 'pwned'})",
        "/**/;MATCH (n:Person) DETACH DELETE n",
    ],
    "config": [
        "CALL threads=7",
        "CALL timeout=100000",
        # the eleventh: settings ladybug 0.22 changes, backquoted or behind a format character
        "CALL `var_length_extend_max_depth`=2",
        "CALL enable_zone_map=false",
        "\u200bCALL threads=7",
        "CALL dbms.setConfigValue('db.transaction.timeout', '0')",
    ],
    "engine_writes": [
        "CREATE (n:Person {name: 'pwned'})",
        "MATCH (n) DETACH DELETE n",
        "MATCH (n:Person) SET n.born = 0",
    ],
    "files": [
        f"LOAD FROM '{{file}}' {_CSV} RETURN *",
        f"UNWIND [1] AS x WITH * LOAD FROM '{{file}}' {_CSV} RETURN *",
        "LOAD CSV FROM 'file://{file}' AS line RETURN line",
        "UNWIND [1] AS x WITH * LOAD CSV FROM 'file://{file}' AS line RETURN line",
        "COPY Person TO '{out}'",
        "EXPORT DATABASE '{out}'",
    ],
    "deep": [
        "RETURN " + "(" * DEEP + "1" + ")" * DEEP,
        "RETURN " + "1+" * DEEP + "1",
        "RETURN " + "[" * 3_000 + "1" + "]" * 3_000,
    ],
    "huge_range": [
        "UNWIND range(1, 1000000000) AS x RETURN count(x)",
        "MATCH (a), (b), (c), (d), (e), (f), (g), (h) RETURN count(*)",
    ],
    "huge_value": [
        "RETURN size(range(1, 2000000000))",
        # ten nested replace() calls, each ten times longer (the third re-probe: aborted a
        # 4 GB FalkorDB)
        "RETURN size(" + "replace(" * 10 + "'aaaaaaaaaa'" + ", 'a', 'aaaaaaaaaa')" * 10 + ")",
    ],
    "crash": [
        "RETURN " + "[" * 3_000 + "1" + "]" * 3_000,
        "CALL READ_CSV_SERIAL('{file}') RETURN *",
    ],
    # writes an engine may never get to refuse (it crashes parsing the literal first): the
    # agent's tools count each as a write attempt all the same (test_agent_tools; the ninth
    # re-probe's H1)
    "unfinished_writes": [
        "MATCH (n:Person) DETACH DELETE n RETURN " + "[" * 3_000 + "1" + "]" * 3_000,
        "CREATE (:Person {name: " + "[" * 3_000 + "'x'" + "]" * 3_000 + "})",
    ],
}
