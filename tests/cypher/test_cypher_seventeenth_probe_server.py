"""Issue 58, the seventeenth hostile re-probe of the Cypher kind, on a real FalkorDB server.

K1: a comment touching the dot of a dotted name (``CALL db./**/labels()``) passed the guard,
which reads names without their comments, and FalkorDB's parser aborted the whole server on
it: with ``rehearse: false`` every later case ended as an ERROR of the datasource. B2: a
reply nested past what the driver reads (a ``reduce`` that wraps a list 900 deep) was read
as "cannot connect", the datasource's error, so the case left every mean; it is the
prediction's failure."""

from __future__ import annotations

import pytest

from pytest_queryeval.cypher.guard import check_server
from pytest_queryeval.errors import QueryRefused
from tests.cypher.test_bolt import MATRIX, _suite
from tests.fixtures.bolt_server import BoltServer
from tests.support import run_report

COMMENTED_DOTS = ["CALL db./**/labels()", "CALL db/**/.labels()",
                  "RETURN string//c\n.join(['a'], ',') AS s",
                  "MATCH (n:Person) RETURN n./* x */name AS n"]


@pytest.mark.parametrize("query", COMMENTED_DOTS)
def test_a_comment_touching_a_dot_is_not_sent(query: str) -> None:
    with pytest.raises(QueryRefused, match="touches a dot"):
        check_server(query)


@pytest.mark.parametrize("query", [
    "MATCH (n:Person) /* who */ RETURN n.name AS n", "CALL db.labels() // all of them",
    "MATCH (n:Person) RETURN n . name AS n"])
def test_a_comment_elsewhere_is_sent(query: str) -> None:
    check_server(query)


def test_hostile_server_texts_end_as_their_cases_failures(pytester: pytest.Pytester,
                                                         server: BoltServer) -> None:
    honest = "MATCH (m:Movie {title: 'The Matrix'})<-[:ACTED_IN]-(a) RETURN a.name AS n"
    cases: list[dict[str, object]] = [
        {"id": f"dot-{i}", "gold": MATRIX, "predicted": q} for i, q in enumerate(COMMENTED_DOTS)]
    cases.append({"id": "deep-reply", "gold": MATRIX,
                  "predicted": "RETURN reduce(a = [], x IN range(1, 900) | [a]) AS n"})
    cases.append({"id": "honest", "gold": MATRIX, "predicted": honest})
    _suite(pytester.path, {"type": "bolt", "url": server.url, "timeout": 10,
                           "rehearse": False}, cases)
    _, report = run_report(pytester, "-p", "no:cacheprovider")
    server.unstick()
    for i in range(len(COMMENTED_DOTS)):
        case = report.by_id[f"dot-{i}"]
        assert case["outcome"] == "failed", case
        assert "touches a dot" in case["reason"], case["reason"]
    deep = report.by_id["deep-reply"]
    assert deep["outcome"] == "failed", deep
    assert "could not be read" in deep["reason"], deep["reason"]
    assert report.by_id["honest"]["outcome"] == "passed"
    assert server.count() == (13, 15)


def test_a_reply_the_driver_misreads_is_the_predictions_failure() -> None:
    """The eighteenth re-probe's B3: FalkorDB cuts a reply over 64 KB and the driver reads the
    rest as chunks sized by the prediction's own strings, failing with ``struct.error``; with
    ``rehearse: false`` that was "cannot connect", the datasource's error. The error mapping is
    called with the driver's real exception type (the cut reply needs a server graph of
    megabyte values, which the shared test server does not hold)."""
    import struct

    from pytest_queryeval.cypher.bolt import BoltSource
    from pytest_queryeval.cypher.bolterrors import query_error as _query_error
    from pytest_queryeval.errors import QueryFailed

    src = BoltSource.from_spec("g", {"type": "bolt", "url": "bolt://127.0.0.1:1", "timeout": 5})
    try:
        struct.unpack(">q", b"\x00")
    except struct.error as exc:
        got = _query_error(src, exc, "RETURN 1", 5.0, 0.1, False)
    assert isinstance(got, QueryFailed), got
    assert "could not be read" in got.reason()
