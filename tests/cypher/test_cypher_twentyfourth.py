"""Issue 58, the twenty-fourth hostile re-probe of the Cypher kind, on a real FalkorDB server.

FalkorDB 4.16 reads a query only up to its first NUL; the guard read the whole text, and a NUL
inside a ``//`` comment went with the comment. So the guard's checks of what follows a value
held for text the server never read: H1, a gold ``RETURN date(...) //`` NUL ``= 1`` was sent as
compared with ``rehearse: false`` and the server stopped; H2, a prediction whose ``ORDER BY
... LIMIT 1`` stood after a NUL scored 1.0 against a gold of five rows, with ``rehearse:
false`` and ``true`` (the rehearsal copy is FalkorDB too); H3, a ``point()`` "compared" after a
NUL reached the reply. Now a query holding a control character (C0 but tab and line ends) is
refused unsent.
"""

from __future__ import annotations

import pytest

from pytest_queryeval.cypher import guard
from pytest_queryeval.errors import QueryRefused
from tests.cypher.test_bolt import run_on_server
from tests.fixtures.bolt_server import BoltServer

NUL = {
    "n1-order-after": "MATCH (n:Movie) RETURN n.title AS t //\x00\n ORDER BY t DESC LIMIT 1",
    "n3-point": "MATCH (n:Movie) RETURN 'wrong' AS t, point({latitude: 1.5, longitude: 2.5}) "
                "//\x00\n = 1 AS p",
    "n5-date": "MATCH (n:Movie) RETURN date('2020-01-01') //\x00\n = 1 AS d LIMIT 1",
    "bare": "MATCH (n:Movie) RETURN n.title AS t\x00 ORDER BY t DESC LIMIT 1",
    "soh": "MATCH (n:Movie) RETURN n.title AS t //\x01\n ORDER BY t",
}


@pytest.mark.parametrize("query", list(NUL.values()), ids=list(NUL))
def test_a_query_holding_a_control_character_is_refused(query: str) -> None:
    with pytest.raises(QueryRefused, match="control character"):
        guard.check_server(query)


@pytest.mark.parametrize("rehearse", [False, True])
def test_a_wrong_prediction_cut_at_a_nul_does_not_pass(pytester: pytest.Pytester,
                                                       server: BoltServer, rehearse: bool) -> None:
    """H2 (c24/n24_suite.py n1), both modes. (H1's gold, which stopped the server before,
    is refused by the check above; it is not sent to this shared server.)"""
    cases: list[dict[str, object]] = [
        {"id": "n1-cut", "gold": "MATCH (n:Movie) RETURN n.title AS t",
         "predicted": NUL["n1-order-after"]},
        {"id": "honest-after", "gold": "MATCH (n:Movie) RETURN n.title AS t ORDER BY t",
         "predicted": "MATCH (m:Movie) RETURN m.title AS t ORDER BY t"},
    ]
    report = run_on_server(pytester, server, cases, rehearse=rehearse)
    assert report.outcomes["n1-cut"] == "failed", report.by_id["n1-cut"]
    assert "control character" in str(report.by_id["n1-cut"])
    assert report.outcomes["honest-after"] == "passed"
    assert server.count() == (13, 15)
