"""Issue 58, the thirty-ninth hostile re-probe of the Cypher kind (``rehearse: false`` on a
FalkorDB server, where the guard's refusal before sending is the only wall).

H1: a list collected over unbounded rows, walked by 8 calls (5 ``toJSON``, 3
``list.sort``), passed the 10,000,000 values a query may build and walk in all, each walk
counted as a range's; a path's ``toJSON`` costs some 20 times a range value's, and the
server held the prediction 57 s past its 3 s timeout, so later honest cases erred. A walk by
such a call counts ten values now.

H2: a list bound to a name (``WITH range(1, 1000000) AS r MATCH ... RETURN [x IN r | x]``)
was not held to the per-row bound a range written in the projection is, nor a range after a
comprehension's ``|`` when a ``WHERE`` came before the bar (``[x IN [1] WHERE true |
range(...)]`` was read as a ``WHERE``'s): the server grew past 3 GB and, under a 4 GB limit,
died. Both are kept with each row now.

H3: ``percentileCont(x, 0.0/0.0)`` (a NaN percentile) and ``percentileDisc(1, 1e18)`` ended
the server by SIGSEGV; the guard sent them. A percentile must be one number literal from 0
to 1 now.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_queryeval.cypher import guard, unwritable
from tests.cypher.test_cypher_twentyseventh import refused_unsent_then_honest_pass
from tests.fixtures.bolt_server import require

#: (the query, a word of its refusal; since the forty-fourth round a list literal or a map
#: copies the list it holds, and some of these pass the query's whole bound first)
REFUSED = {
    "walks": ("MATCH p=(a)-[]->(b),(c),(d),(e),(f),(g) WITH collect(p) AS l RETURN "
              "size(toJSON(l))+size(toJSON(l))+size(toJSON(l))+size(toJSON(l))+"
              "size(toJSON(l))+size(list.sort(l))+size(list.sort(l))+size(list.sort(l)) AS c",
              "walked by a call"),
    "unwinds": ("UNWIND range(1,1000000) AS x UNWIND range(1,1000000) AS y WITH y LIMIT 4000000 "
                "WITH collect({a:y,b:y,c:y,d:y,e:y,f:y}) AS l RETURN size(toJSON(l))+"
                "size(toJSON(l))+size(toJSON(l))+size(toJSON(l))+size(toJSON(l))+"
                "size(list.sort(l)) AS c", "walked by a call|built or walked"),
    "named": ("WITH range(1,1000000) AS r MATCH (a),(b),(c),(d),(e) RETURN [x IN r | x] AS q",
              "built on each row|copied or walked"),
    "named-plain": ("WITH range(1,1000000) AS r MATCH (a),(b),(c),(d),(e) RETURN r AS q",
                    "built on each row"),
    "named-slice": ("WITH range(1,1000000) AS r MATCH (a),(b),(c),(d),(e) "
                    "RETURN r[0..999999] AS q", "built on each row|copied or walked"),
    "named-map": ("WITH {x: range(1,1000000)} AS m MATCH (a),(b),(c),(d),(e) RETURN m AS q",
                  "built on each row|brings the values"),
    "unwound-list": ("UNWIND [range(1,1000000)] AS r MATCH (a),(b),(c),(d),(e) RETURN r AS q",
                     "built on each row|brings the values"),
    "bar": ("MATCH (a),(b),(c),(d),(e) RETURN [x IN [1] WHERE true | range(1,1000000)] AS q",
            "built on each row"),
    "bar-with": ("MATCH (a),(b),(c),(d),(e) WITH a, [x IN [1] WHERE true | range(1,1000000)] "
                 "AS q RETURN q", "built on each row"),
    "nan": ("MATCH (n:Movie) RETURN percentileCont(n.released, 0.0/0.0) AS x", "percentile"),
    "nan-sqrt": ("RETURN percentileCont(1, sqrt(-1)) AS x", "percentile"),
    "huge": ("RETURN percentileDisc(1, 1e18) AS x", "percentile"),
    "huge-int": ("RETURN percentileDisc(1, 9223372036854775807) AS x", "percentile"),
    # the fortieth re-probe's N2: the list bound again under another name, or RETURN *
    "rebound": ("WITH range(1,1000000) AS r WITH r AS s MATCH (a),(b),(c),(d),(e) "
                "RETURN s AS q", "built on each row|copied or walked"),
    "map-key": ("WITH {x: range(1,1000000)} AS m WITH m.x AS r MATCH (a),(b),(c),(d),(e) "
                "RETURN r AS q", "built on each row|copied or walked|brings the values"),
    "unwound-name": ("WITH [range(1,1000000)] AS l UNWIND l AS r MATCH (a),(b),(c),(d),(e) "
                     "RETURN r AS q", "built on each row|brings the values"),
    "coalesce": ("WITH range(1,1000000) AS r WITH coalesce(r, []) AS s "
                 "MATCH (a),(b),(c),(d),(e) RETURN s AS q", "built on each row|copied or walked"),
    "star": ("WITH range(1,1000000) AS r MATCH (a),(b),(c),(d),(e) RETURN *",
             "built on each row"),
    # the fortieth re-probe's N4: an aggregate's list, kept with each row of a later MATCH
    "collected": ("UNWIND range(1,1000000) AS x WITH collect(x) AS r "
                  "MATCH (a),(b),(c),(d),(e) RETURN r AS q", "built on each row"),
    "max-range": ("WITH max(range(1,1000000)) AS r MATCH (a),(b),(c),(d),(e) RETURN r AS q",
                  "built on each row"),
    # the fortieth re-probe's N3: calls that copy the whole list
    "tails": ("UNWIND range(1,1000000) AS x UNWIND range(1,1000000) AS y WITH y LIMIT 4000000 "
              "WITH collect({a:y,b:y,c:y,d:y,e:y,f:y}) AS l RETURN size(tail(l))+size(tail(l))"
              "+size(tail(l))+size(tail(l))+size(tail(l))+size(tail(l)) AS c",
              "walked by a call|built or walked"),
    # the fortieth re-probe's N1: any percentile of DISTINCT values killed it too
    "distinct": ("MATCH (n:Movie) RETURN percentileDisc(DISTINCT n.released, 0.5) AS p",
                 "distinct values"),
    "distinct-cont": ("RETURN percentileCont(DISTINCT 1, 0.5) AS p", "distinct values"),
}
#: Honest queries beside them: sent.
SENT = [
    "MATCH (p:Person) WITH collect(p) AS ps RETURN [a IN ps | [b IN ps WHERE b.born = a.born "
    "| b.name]] AS pairs",
    "MATCH (p:Person) WITH p, collect(p.name) AS n RETURN p.name AS p, n",
    "WITH range(1, 10) AS r MATCH (m:Movie) RETURN *",
    "WITH range(1,1000000) AS r RETURN size(r) AS n",
    "MATCH (m:Movie) WITH collect(m.title) AS titles MATCH (p:Person) "
    "RETURN p.name AS n, size(titles) AS k",
    "MATCH (m:Movie) WITH collect(m.title) AS titles MATCH (p:Person) "
    "WHERE p.name IN titles RETURN p.name AS n",
    "MATCH (m:Movie) WITH collect(m.title) AS titles RETURN titles",
    "MATCH (m:Movie) RETURN toJSON(collect(m.title)) AS j",
    "MATCH (p:Person)-[:ACTED_IN|DIRECTED]->(m:Movie) "
    "RETURN p.name AS n, [x IN collect(m.title) WHERE x STARTS WITH 'T' | x] AS t",
    "MATCH (m:Movie) RETURN percentileCont(m.released, 0.5) AS x",
    "MATCH (m:Movie) RETURN percentileDisc(m.released, 1) AS x",
    "WITH range(1, 10) AS r MATCH (m:Movie) RETURN m.title AS t, [x IN r | x * 2] AS d",
]


def _unrehearsed(query: str) -> None:
    """What ``BoltSource.execute`` checks of a prediction under ``rehearse: false`` on a
    FalkorDB server before it sends it."""
    guard.check_text(query)
    guard.check_server(query, costs=True, linear=True)
    unwritable.check_falkordb(query)


def test_the_server_lives_and_the_honest_cases_pass(pytester: pytest.Pytester,
                                                    tmp_path: Path) -> None:
    """End to end with ``rehearse: false``, on a server of its own: the NaN percentile (it
    killed the server) and a per-row form refused at their text and unsent, as predictions
    and as golds; the honest cases after them pass."""
    require()
    refused_unsent_then_honest_pass(
        pytester, tmp_path, {name: (REFUSED[name][0], REFUSED[name][1])
                             for name in ("nan", "huge", "bar", "distinct")},
        {"gold": "MATCH (m:Movie) RETURN count(m) AS c",
         "predicted": "MATCH (n:Movie) RETURN count(n) AS c"})
