"""Issue 58, the twentieth hostile re-probe of the Cypher kind, on a real FalkorDB server.

T1: with ``rehearse: false`` a temporal value returned by a ``CALL { RETURN ... }`` subquery
after a ``WHERE`` was taken as compared (the ``RETURN`` right after the ``{`` read as a map
key), and stopped the server: every later case an ERROR. P1: FalkorDB (4.16) writes a point
over Bolt with one byte too many, and the driver reads every later value of its row one place
late: a wrong prediction passed and an honest one failed, in both modes. A point is now refused
as the temporal values are: lexically with ``rehearse: false``, by the copy's reply with
``rehearse: true`` (a gold too: its case errs rather than scores wrong)."""

from __future__ import annotations

import re
import socket

import pytest

from pytest_queryeval.cypher import unwritable
from pytest_queryeval.cypher.bolt import BoltSource
from pytest_queryeval.errors import QueryRefused, ReadRefused
from tests.cypher.test_bolt import run_on_server
from tests.fixtures.bolt_server import BoltServer

T1_DATE = "MATCH (n:Movie) WHERE n.released > 0 CALL { RETURN date() AS d } RETURN d LIMIT 1"
T1_LDT = ("UNWIND [1] AS x WITH x WHERE x = 1 CALL { RETURN localdatetime('2020-01-01T00:00:00') "
          "AS d } RETURN d")
P = "point({latitude: 1.5, longitude: 2.5})"
#: The re-probe's gold: a point before the titles (each title read where the point's extra
#: byte is, as None).
POINT_GOLD = f"MATCH (n:Movie) RETURN {P} AS p, n.title AS t ORDER BY t"
POINT_WRONG = f"MATCH (n:Movie) RETURN {P} AS p, 'wrong' AS t ORDER BY t"
COUNT = "MATCH (n:Movie) RETURN count(n) AS c"
TITLES = "MATCH (m:Movie) RETURN m.title ORDER BY m.title"
POINT_REFUSED = "a FalkorDB server's Bolt listener writes a point wrong"
READ_POINT = "the query's reply holds a point, which a FalkorDB server's Bolt listener writes wrong"


@pytest.mark.parametrize(("query", "refused"), [
    (T1_DATE, "date() at line 1, column 52"),
    (T1_LDT, "localdatetime() at line 1, column 50"),
    ("MATCH (n:Movie) WHERE n.released > 0 CALL (n) { RETURN date() AS d } RETURN d",
     "date() at line 1, column 56"),
    ("MATCH (n:Movie) WHERE n.released > 0 CALL { WITH 1 AS one RETURN time() AS d } RETURN d",
     "time() at line 1, column 66"),
    ("MATCH (n:Movie) WHERE n.released > 0 CALL { MATCH (m) WHERE m.x < date() RETURN m } "
     "RETURN m", None),
    ("MATCH (n:Movie) WHERE EXISTS { MATCH (m) WHERE m.x < date() } RETURN n.title", None),
    ("RETURN {return: 1} AS m, 2 AS n", None),
    (f"RETURN {P} AS p, 13 AS c", "point() at line 1, column 8: " + POINT_REFUSED),
    (f"RETURN [{P}, 7] AS l", "point() at line 1, column 9"),
    (f"MATCH (n:Movie) WHERE n.released > 0 CALL {{ RETURN {P} AS p }} RETURN p",
     "point() at line 1, column 52"),
    (f"RETURN {P}.latitude AS lat, 13 AS c", None),
    (f"MATCH (n:Movie) WHERE distance({P}, {P}) < 1 RETURN n.title", None),
    ("MATCH (point:Movie) RETURN point.title", None),
])
def test_a_subquery_and_a_point_are_read_for_what_reaches_the_reply(query: str,
                                                                     refused: str | None) -> None:
    """A ``WHERE`` before a subquery compares nothing the subquery returns; a point reaching
    the reply is refused, its fields are not."""
    if refused is None:
        unwritable.check_falkordb(query)
    else:
        with pytest.raises(QueryRefused, match=re.escape(refused)):
            unwritable.check_falkordb(query)


CASES: list[dict[str, object]] = [
    {"id": "a-call-date", "gold": COUNT, "predicted": T1_DATE},
    {"id": "b-call-ldt", "gold": COUNT, "predicted": T1_LDT},
    {"id": "c-point-gold", "gold": POINT_GOLD, "predicted": POINT_WRONG},
    {"id": "d-point-predicted", "gold": "MATCH (n:Movie) RETURN 13 AS c, n.title AS t ORDER BY t",
     "predicted": f"MATCH (n:Movie) RETURN {P} AS c, n.title AS t ORDER BY t"},
    {"id": "e-honest", "gold": TITLES, "predicted": "MATCH (x:Movie) RETURN x.title ORDER BY x.title"},
    {"id": "f-honest-count", "gold": COUNT, "predicted": "MATCH (m:Movie) RETURN count(*) AS c"},
]


@pytest.mark.parametrize("rehearse", [False, True])
def test_no_subquery_stops_the_server_and_no_point_is_misread(pytester: pytest.Pytester,
                                                              server: BoltServer,
                                                              rehearse: bool) -> None:
    """The re-probe's T1 texts are refused (rehearse: true: ``date()`` reads the clock, the
    local date-time is in the copy's reply) and the server answers the cases after them; P1's
    wrong prediction no longer passes: its gold, which reads a point too, is refused (the case
    errs), and a prediction returning a point is refused; honest cases pass as before."""
    report = run_on_server(pytester, server, CASES, rehearse=rehearse)
    assert report.outcomes["c-point-gold"] != "passed"
    assert {k: v for k, v in report.outcomes.items() if k != "c-point-gold"} == {
        "a-call-date": "failed", "b-call-ldt": "failed", "d-point-predicted": "failed",
        "e-honest": "passed", "f-honest-count": "passed"}
    point = POINT_REFUSED if not rehearse else READ_POINT
    assert point in str(report.by_id["c-point-gold"]), report.by_id["c-point-gold"]
    assert point in report.by_id["d-point-predicted"]["reason"]
    if not rehearse:
        for case, name in (("a-call-date", "date()"), ("b-call-ldt", "localdatetime()")):
            assert report.by_id[case]["reason"].startswith(f"refused: {name} at line 1"), \
                report.by_id[case]["reason"]
    assert server.handshake(2.0) and server.count() == (13, 15)


def _graph_query(server: BoltServer, query: str) -> bytes:
    """``query`` sent to the graph over the server's redis port (not Bolt, which cannot
    write a point's reply right), its reply's first bytes."""
    args = [b"GRAPH.QUERY", b"falkordb", query.encode()]
    frame = b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in args)
    with socket.create_connection(("127.0.0.1", server.redis_port), timeout=10) as s:
        s.sendall(frame)
        return s.recv(1 << 16)


def test_a_stored_point_is_refused_on_the_rehearsal(server: BoltServer) -> None:
    """The re-probe's P1b: a node holding a point property, returned before another column,
    was read with the node's element id as the next column (``t = 'node_8'``). With the
    rehearsal its reply on the copy holds the point: refused, gold and prediction alike; the
    point's fields are read."""
    matrix = "MATCH (n:Movie {title: 'The Matrix'}) "
    assert b"error" not in _graph_query(server, matrix + f"SET n.loc = {P}").lower()
    src = BoltSource.from_spec("g", {"type": "bolt", "url": server.url, "timeout": 20})
    try:
        for trusted in (False, True):
            with pytest.raises(ReadRefused, match=re.escape(READ_POINT)):
                src.execute(matrix + "RETURN n, n.title AS t", trusted=trusted)
        rows = src.execute(matrix + "RETURN n.loc.latitude AS lat, n.title AS t").rows
        assert rows == [(1.5, "The Matrix")]
    finally:
        src.close()
        _graph_query(server, matrix + "SET n.loc = NULL")
        server.unstick()
    assert server.count() == (13, 15)
