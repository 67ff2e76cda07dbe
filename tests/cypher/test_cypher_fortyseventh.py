"""Issue 58, the forty-seventh round of the Cypher kind (main 2594d6e3).

F1, F5 (``rehearse: false``): the 8 relationships a path pattern could chain were counted
chain by chain, so the same traversal split into patterns that share a node was sent: two
chains of 6 hops joined by a comma, a second ``MATCH`` or a ``WITH`` held a 3 s server past
43 s and the honest golds after it timed out, and 600 one-hop pattern comprehensions as
columns (node patterns outside ``MATCH``) 32 s. The relationships of all the query's path
patterns count together now.

F4: four fixed hops after two variable-length ones, sorted, held the server 6.6 s; a
variable-length relationship weighs three hops of the eight.

F2 (``type: ladybug``): ``CALL read_csv_serial('/etc/passwd') RETURN *`` reached the file
reader that ``LOAD FROM`` binds to (the worker crashed on it); every file-reading table
function is refused by name. F7: ``CALL project_graph_cypher('G', '<a query>')`` ran a Cypher
text the guard never read (its ``LOAD FROM`` stopped only by the worker's file sandbox); the
procedures that take a query as text or keep a projected graph are refused too.

G1 (the round's second re-probe): a hop with alternative types is traversed type by type, so
six ``-[:ACTED_IN|DIRECTED]-`` hops held a 3 s server past 23 s: each type past a hop's first
weighs one more. G3: a ``UNION``'s branches are weighed apart.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_queryeval.errors import QueryRefused
from tests.cypher.test_cypher_fortyfourth import hostile_then_honest

_HOPS = "relationships in all.*more than 8"


def _chain(name: str, hops: int, start: str = "a") -> str:
    return f"({start})" + "".join(f"-[]-({name}{i})" for i in range(hops))


#: (the query, a word of its refusal)
REFUSED = {
    "f1-comma-6x2": (f"MATCH {_chain('x', 6)}, {_chain('y', 6, 'x5')} RETURN count(*) AS c",
                     _HOPS),
    "f1-match-6x2": (f"MATCH {_chain('x', 6)} MATCH {_chain('y', 6, 'x5')} "
                     "RETURN count(*) AS c", _HOPS),
    "f1-with-6x2": (f"MATCH {_chain('x', 6)} WITH x5 MATCH {_chain('y', 6, 'x5')} "
                    "RETURN count(*) AS c", _HOPS),
    "f1-star-6x2": (f"MATCH {_chain('x', 6)}, {_chain('y', 6)} RETURN count(*) AS c", _HOPS),
    "f1-comma-4x3": (f"MATCH {_chain('x', 4)}, {_chain('y', 4, 'x3')}, {_chain('z', 4, 'y3')} "
                     "RETURN count(*) AS c", _HOPS),
    "f1-typed-5x2": ("MATCH (a)" + "".join(f"-[:ACTED_IN]-(x{i})" for i in range(5)) + ", (x4)"
                     + "".join(f"-[:ACTED_IN]-(y{i})" for i in range(5))
                     + " RETURN count(*) AS c", _HOPS),
    "f1-optional-6x2": (f"MATCH {_chain('x', 6)} OPTIONAL MATCH {_chain('y', 6, 'x5')} "
                        "RETURN count(*) AS c", _HOPS),
    "f5-comprehension-columns": ("MATCH (a:Movie) RETURN " + ", ".join(
        f"[(a)-[:R{i}]-(n{i}:Nope) | 1] AS c{i}" for i in range(600)), _HOPS),
    "f5-path-sizes": ("MATCH (a:Movie) RETURN " + ", ".join(
        f"size((a)-[:R{i}]-()) AS c{i}" for i in range(900)), _HOPS),
    "f5-where-not": ("MATCH (a:Movie) WHERE " + " AND ".join(
        f"NOT (a)-[:R{i}]-()" for i in range(450)) + " RETURN count(*) AS c", _HOPS),
    "f4-two-ranges-four-hops": ("MATCH p=(a)-[*]-(b)-[*]-(c)-[]-(x0)-[]-(x1)-[]-(x2)-[]-(x3) "
                                "WITH p ORDER BY p RETURN count(*) AS c", _HOPS),
    "f4-one-range-seven-hops": ("MATCH p=(a)-[*]-(b)" + "".join(f"-[]-(x{i})" for i in range(6))
                                + " WITH p ORDER BY p RETURN count(*) AS c", _HOPS),
    # the second re-probe of the round (main 2b32a1f3): G1, hops with alternative types
    "g1-six-alternations": ("MATCH (a)" + "".join(f"-[:ACTED_IN|DIRECTED]-(x{i})" for i in range(6))
                            + " RETURN count(*) AS c", _HOPS),
    "g1-unknown-pairs": ("MATCH (a)" + "".join(f"-[:T0|T1]-(x{i})" for i in range(6))
                         + " RETURN count(*) AS c", _HOPS),
    "g1-split-by-a-comma": ("MATCH (a)" + "".join(f"-[:ACTED_IN|DIRECTED]-(x{i})" for i in range(3))
                            + ", (x2)" + "".join(f"-[:ACTED_IN|DIRECTED]-(y{i})" for i in range(3))
                            + " RETURN count(*) AS c", _HOPS),
    "g1-many-types": ("MATCH (a)-[:ACTED_IN|" + "|".join(f"T{i}" for i in range(100))
                      + "]-(b) RETURN count(*) AS c", _HOPS),
}

#: Honest queries beside them: sent.
SENT = [
    f"MATCH {_chain('x', 4)}, {_chain('y', 4, 'x3')} RETURN count(*) AS c",
    "MATCH (a:Person)-[:ACTED_IN]->(m:Movie)<-[:ACTED_IN]-(b:Person)-[:ACTED_IN]->(n:Movie) "
    "RETURN count(*) AS c",
    "MATCH p=(a)-[*]-(b)-[*]-(c)-[]-(x0)-[]-(x1) WITH p ORDER BY p RETURN count(*) AS c",
    "MATCH (a:Person {name: 'Keanu Reeves'})-[:ACTED_IN*1..4]-(b) RETURN count(DISTINCT b) AS c",
    "MATCH (m:Movie) RETURN m.title AS t, [(m)<-[:ACTED_IN]-(p) | p.name] AS cast, "
    "[(m)<-[:DIRECTED]-(d) | d.name] AS directors",
    "MATCH (p:Person) WHERE NOT (p)-[:DIRECTED]->() AND (p)-[:ACTED_IN]->() "
    "RETURN count(p) AS c",
    "MATCH (a)" + "".join(f"-[:ACTED_IN|DIRECTED]-(x{i})" for i in range(4)) + " RETURN count(*) AS c",
    # G3: a UNION's branches are apart (five branches of 1-2 hops)
    " UNION ".join(f"MATCH (p:Person)-[:{a}]->(m)<-[:{b}]-(q) RETURN p.name AS n" for a, b in (
        ("ACTED_IN", "ACTED_IN"), ("DIRECTED", "ACTED_IN"), ("ACTED_IN", "DIRECTED"),
        ("DIRECTED", "DIRECTED"))) + " UNION MATCH (p:Person)-[:ACTED_IN]->(m) RETURN p.name AS n",
]

#: ladybug's file readers, each a ``CALL`` of the table function ``LOAD FROM`` binds to.
FILE_CALLS = [
    "CALL READ_CSV_SERIAL('/etc/passwd') RETURN *",
    "CALL read_csv_parallel('/etc/passwd') RETURN *",
    "CALL read_parquet('/etc/passwd') RETURN *",
    "CALL read_npy('/etc/passwd') RETURN *",
    "CALL `file_info`('/etc/passwd') RETURN *",
    "MATCH (n) CALL read_csv_serial('/etc/hostname') RETURN count(*) AS c",
    # F7: a Cypher text as a string, which the guard never read
    "CALL project_graph_cypher('G', 'MATCH (n) LOAD FROM ''/etc/passwd'' RETURN *')",
    "CALL project_graph('G', ['Person'], ['ACTED_IN'])",
    "CALL _cache_array_column_locally('Movie', 'title') RETURN *",  # G5: state of the connection
]


@pytest.mark.parametrize("query", FILE_CALLS)
def test_a_file_reading_table_function_is_refused(query: str) -> None:
    """Before: sent to the engine, whose reader crashed the worker (SIGSEGV)."""
    from pytest_queryeval.cypher import guard

    with pytest.raises(QueryRefused, match=r"reads the host's files|runs a query given as text"):
        guard.check(query)


def test_a_file_reading_table_function_reads_nothing_on_the_engine() -> None:
    """Through ``type: ladybug``: refused, and the next query answered by the same worker."""
    pytest.importorskip("ladybug")
    from pytest_queryeval.cypher.source import LadybugSource
    from tests.cypher.test_walls import GRAPH, _leaked

    source = LadybugSource.from_spec("movies", {"type": "ladybug", "path": str(GRAPH)})
    try:
        for query in FILE_CALLS:
            with pytest.raises(QueryRefused) as caught:
                source.execute(query)
            assert not _leaked(str(caught.value))
        assert source.execute("MATCH (n) RETURN count(n)").rows == [(13,)]
    finally:
        source.close()


def test_the_split_chains_are_refused_and_the_honest_cases_after_them_pass(
        pytester: pytest.Pytester, tmp_path: Path) -> None:
    """F1 and F5 as predictions and as an agent's second ``run_query``: before, each held the
    server past its timeout and the honest golds after it timed out."""
    hostile_then_honest(pytester, tmp_path, {name: REFUSED[name][0] for name in (
        "f1-comma-6x2", "f1-match-6x2", "f5-comprehension-columns")})
