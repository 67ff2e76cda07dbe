"""Issue 58, the twenty-second hostile re-probe of the Cypher kind, on a real FalkorDB server.

H1: with ``rehearse: false`` (golds too) a name spelled like a keyword right before ``RETURN``
/ ``WITH`` / ``UNWIND`` (``n.order``, ``n:Union``) hid that clause from
:func:`.unwritable.check_falkordb`, and a variable named ``where`` after ``CONTAINS`` was
taken for the ``WHERE`` clause: a date in the reply was read as compared, sent, and FalkorDB
4.16 stopped (every later case an error). H2: the same trick sent a point, and a wrong
prediction scored 1.0. M1: the ``WITH`` of ``STARTS WITH`` / ``ENDS WITH`` was read as the
clause, and an honest date compared in a ``WHERE`` after it was refused.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_queryeval.cypher import guard, unwritable
from pytest_queryeval.cypher.bolt import BoltSource
from pytest_queryeval.errors import QueryRefused
from tests.cypher.test_bolt import run_on_server
from tests.fixtures.bolt_server import BoltServer, require, running_server

W = "MATCH (n:Movie) WHERE n.released > 0 OR"
P = "point({latitude: 1.5, longitude: 2.5})"
#: The re-probe's crash forms (c22/crash_forms.txt, goldcrash_suite.py, forms2.txt) and the
#: neighbours this fix was tried against: each passed as "compared" before.
HIDDEN_CLAUSE = [
    f"{W} n.order RETURN date() AS d LIMIT 1",
    f"{W} n:Union RETURN n.title AS t, date() AS d LIMIT 1",
    "MATCH (n:Movie) WITH n.title AS t, 'a' AS where RETURN t CONTAINS where AS b, date() AS d "
    "LIMIT 1",
    "MATCH (n:Movie) WITH n.title AS t, 'a' AS where RETURN CASE WHEN t CONTAINS where THEN "
    "date() END AS d",
    f"{W} n.distinct RETURN localtime() AS d LIMIT 1",
    f"{W} n.when RETURN toString(n.title) AS t, duration('P1D') AS d LIMIT 1",
    f"{W} n.order WITH date('2020-01-01') AS d RETURN d LIMIT 1",
    f"{W} n.order UNWIND [date()] AS d RETURN d",
    f"{W} n.in RETURN date() AS d",
    f"{W} n.not RETURN date() AS d",
    f"{W} n.return RETURN date() AS d",
    f"{W} n.with RETURN date() AS d",
    f"{W} n:When RETURN date() AS d",
    "MATCH (n:Movie)-[:ACTED_IN]-(p) WHERE p.name = 'x' OR p:Case RETURN date() AS d",
    "MATCH (n:Movie) WHERE n.released > 0 WITH n.title AS t, n.skip AS s WHERE s IS NULL OR "
    "n.case RETURN t, date() AS d",
    f"{W} n.order RETURN {P} AS p, n.title AS t ORDER BY t",
    # what M1's operator WITH must not open: STARTS a variable or a property, not the operator
    f"UNWIND [1] AS starts {W} starts WITH date() AS d RETURN d",
    f"{W} n.starts WITH date() AS d RETURN d",
    f"{W} n.title ENDS WITH 'x' WITH date() AS d RETURN d",
    "UNWIND ['a'] AS where MATCH (n:Movie) WHERE n.released > 0 RETURN n.title CONTAINS where, "
    "date() AS d",
]


def _checked(query: str) -> None:
    """What a FalkorDB server is sent with ``rehearse: false``, a gold too."""
    guard.check_server(query)
    unwritable.check_falkordb(query)


@pytest.mark.parametrize("query", HIDDEN_CLAUSE)
def test_a_clause_behind_a_keyword_spelled_name_is_not_taken_for_a_where(query: str) -> None:
    """H1, H2: each is refused before a FalkorDB server is sent it."""
    with pytest.raises(QueryRefused):
        _checked(query)


def test_the_crash_form_is_refused_and_the_server_answers_after_it(tmp_path: Path) -> None:
    """H1 end to end, gold and prediction, on a server of its own (before, it stopped)."""
    require()
    with running_server(tmp_path) as own:
        src = BoltSource.from_spec("g", {"type": "bolt", "url": own.url, "timeout": 20,
                                         "rehearse": False})
        try:
            for query, trusted in ((HIDDEN_CLAUSE[0], False), (HIDDEN_CLAUSE[6], True)):
                with pytest.raises(QueryRefused, match="stops on a"):
                    src.execute(query, trusted=trusted)
                assert src.execute("MATCH (n:Movie) RETURN count(n) AS c").rows == [(5,)]
        finally:
            src.close()
        assert own.handshake(1.0)


def test_a_point_behind_a_keyword_spelled_name_does_not_pass_a_wrong_prediction(
        pytester: pytest.Pytester, server: BoltServer) -> None:
    """H2 (the re-probe's c22/p22_suite.py): a prediction returning 'wrong' scored 1.0."""
    gold = f"{W} n.order RETURN {P} AS p, n.title AS t ORDER BY t"
    cases: list[dict[str, object]] = [
        {"id": "p1-wrong-after-point", "gold": gold,
         "predicted": f"{W} n.order RETURN {P} AS p, 'wrong' AS t ORDER BY t"},
        {"id": "p2-wrong-no-point-gold",
         "gold": "MATCH (n:Movie) RETURN [2.5, 1.5] AS p, n.nope AS t",
         "predicted": f"{W} n.order RETURN {P} AS p, 'wrong' AS t"},
        {"id": "p4-honest-after", "gold": "MATCH (n:Movie) RETURN n.title AS t ORDER BY t",
         "predicted": "MATCH (m:Movie) RETURN m.title AS t ORDER BY t"},
    ]
    report = run_on_server(pytester, server, cases, rehearse=False)
    assert report.outcomes["p1-wrong-after-point"] != "passed", report.by_id["p1-wrong-after-point"]
    assert report.outcomes["p2-wrong-no-point-gold"] == "failed"
    assert "point()" in str(report.by_id["p2-wrong-no-point-gold"])
    assert report.outcomes["p4-honest-after"] == "passed"


#: M1 (c22/medium.py): a date compared in a ``WHERE`` after ``STARTS WITH`` / ``ENDS WITH``;
#: the same predicates swapped were sent already. And a property spelled like a keyword in a
#: ``WHERE`` with nothing temporal in the reply (H1's honest neighbour).
AFTER_OPERATOR_WITH = [
    "MATCH (n:Movie) WHERE n.title STARTS WITH 'T' AND date('2020-01-01') + duration('P1D') > "
    "date('2000-01-01') RETURN n.title AS t ORDER BY t",
    "MATCH (n:Movie) WHERE n.title ENDS WITH 'x' OR date({year: n.released}) + duration('P1Y') < "
    "date('2000-01-01') RETURN n.title AS t ORDER BY t",
    "MATCH (n:Movie) WHERE n.order STARTS WITH 'T' OR date({year: n.released}) + duration('P1Y') "
    "< date('2000-01-01') RETURN n.title AS t ORDER BY t",
    f"{W} n.order RETURN n.title AS t ORDER BY t",
]


@pytest.mark.parametrize("query", AFTER_OPERATOR_WITH)
def test_a_date_compared_after_starts_with_is_sent(server: BoltServer, query: str) -> None:
    """M1: sent with ``rehearse: false`` (gold and prediction) and answered with the rows
    ``rehearse: true`` gives; the server answers after it."""
    _checked(query)
    rows = {}
    for rehearse in (False, True):
        src = BoltSource.from_spec("g", {"type": "bolt", "url": server.url, "timeout": 20,
                                         "rehearse": rehearse})
        try:
            rows[rehearse] = src.execute(query, trusted=True).rows
            if not rehearse:
                assert src.execute(query, trusted=False).rows == rows[rehearse]
        finally:
            src.close()
            server.unstick()
    assert rows[False] == rows[True] and rows[False], rows
    assert server.count() == (13, 15)
