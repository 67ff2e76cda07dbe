"""The sixteenth Cypher re-probe's S1 (HIGH): two distinct nodes of identical properties (one
in table A, one in B, rels both ways) and a prediction returning ``collect([r1, r2])`` of R
rows made the reference's sorts (``hashable``) compare two end mappings of equal content value
by value, R * P work in the pytest process after every deadline (P = 100,000, R = 20,000: 61 s
against a 30 s timeout). Nodes of one content are one end object now, and ends equal in value
but not in form are charged for each comparison, under the case's deadline and a budget:
past either, the score is not decided (with its reason), never a guess and never an internal
error. On a real ladybug graph; work is counted, never timed."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_queryeval._isolation.comparison_deadline import comparison_deadline
from pytest_queryeval.cypher import cypherbench
from pytest_queryeval.cypher.source import LadybugSource
from pytest_queryeval.errors import ComparisonTimeout

P, R = 2_000, 500
PRED = (f"MATCH (a:A)-[r1:T]->(b:B)-[r2:T]->(a) UNWIND range(1, {R}) AS x "
        "RETURN a, b, collect([r1, r2]) AS l")
GOLD = "MATCH (a:A) RETURN a.id"


def _graph(path: Path, b_type: str) -> LadybugSource:
    """The re-probe's graph: A and B hold one node each, ``xs = range(1, P)`` and ``id: 1``
    (B's list of ``b_type``: equal in value to A's, in form too when INT64)."""
    path.write_text(
        "CREATE NODE TABLE A(xs INT64[], id INT64, PRIMARY KEY(id));\n"
        f"CREATE NODE TABLE B(xs {b_type}[], id INT64, PRIMARY KEY(id));\n"
        "CREATE REL TABLE T(FROM A TO B, FROM B TO A);\n"
        f"CREATE (:A {{id: 1, xs: range(1, {P})}}), "
        f"(:B {{id: 1, xs: CAST(range(1, {P}) AS {b_type}[])}});\n"
        "MATCH (a:A), (b:B) CREATE (a)-[:T]->(b), (b)-[:T]->(a);\n")
    return LadybugSource.from_spec("g", {"type": "ladybug", "path": str(path)})


@pytest.fixture
def graph(tmp_path: Path) -> Iterator[Callable[[str], LadybugSource]]:
    """The re-probe's graph of B's list type: ``"INT64"`` (ends of one form) or ``"DOUBLE"``
    (equal in value, not in form); closed after the test."""
    pytest.importorskip("ladybug")
    opened: list[LadybugSource] = []

    def make(b_type: str) -> LadybugSource:
        opened.append(_graph(tmp_path / f"{b_type}.cypher", b_type))
        return opened[-1]

    yield make
    for src in opened:
        src.close()


def _views(src: LadybugSource) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    pred, gold = src.execute(PRED), src.execute(GOLD)
    assert not pred.truncated
    return (cypherbench.neo4j_view(gold.columns, gold.rows),
            cypherbench.neo4j_view(pred.columns, pred.rows))


def test_nodes_of_one_content_are_one_end_object(graph):
    """The reproducer's shape: r1 = (A, T, B), r2 = (B, T, A), A and B of equal content: one
    object, so every comparison of the reference's sorts stops at identity (none is charged:
    a budget of one value decides)."""
    g_view, p_view = _views(graph("INT64"))
    (r1, r2), *rest = p_view[0]["l"]
    assert len(rest) == R - 1
    assert r1[0] is r1[2] is r2[0] is r2[2], "ends of equal content are one object"
    assert len(r1[0]["xs"]) == P
    assert p_view[0]["a"] == p_view[0]["b"]
    from pytest_queryeval.cypher import sharedends

    budget = sharedends.MAX_END_WORK
    try:
        sharedends.MAX_END_WORK = 1
        assert cypherbench.score(PRED, GOLD, g_view, p_view) == (0.0, None)
    finally:
        sharedends.MAX_END_WORK = budget


def test_the_gold_and_the_prediction_share_their_ends(graph):
    """Views given one ``contents`` (the kind's gold and prediction) share the end objects
    too, so their comparisons across the two stop at identity."""
    contents: dict[Any, Any] = {}
    table = graph("INT64").execute(PRED)
    one = cypherbench.neo4j_view(table.columns, table.rows, contents)
    two = cypherbench.neo4j_view(table.columns, table.rows, contents)
    assert one[0]["l"][0][0][0] is two[0]["l"][0][1][2]


def test_ends_equal_in_value_not_form_are_charged_and_stop_at_the_budget(graph, monkeypatch):
    """B's list of doubles equals A's ints (the reference compares them, value by value): two
    objects, each comparison charged; past the budget the score is not decided."""
    g_view, p_view = _views(graph("DOUBLE"))
    (r1, _), *_ = p_view[0]["l"]
    from pytest_queryeval.cypher import sharedends

    assert r1[0] == r1[2] and r1[0] is not r1[2]
    monkeypatch.setattr(sharedends, "MAX_END_WORK", 50 * P)
    ex, why = cypherbench.score(PRED, GOLD, g_view, p_view)
    assert ex is None
    assert "comparing relationships' end nodes read more than 100,000 values" in str(why)


def test_ends_compared_past_the_cases_deadline_stop_with_its_reason(graph):
    """The sorts of ``hashable`` and the end comparisons check the case's deadline: a
    comparison begun past it stops with ComparisonTimeout (the kind's ``_best`` fails the case
    with it), not after R * P more work."""
    g_view, p_view = _views(graph("DOUBLE"))
    with comparison_deadline(-1.0), pytest.raises(ComparisonTimeout) as caught:
        cypherbench.score(PRED, GOLD, g_view, p_view)
    assert "cypherbench_ex" in str(caught.value)


def test_a_case_past_its_budget_fails_with_the_reason(graph, monkeypatch):
    """Through the kind: an undecided cypherbench_ex is no pass and no internal error."""
    from pytest_queryeval.cypher import kind, sharedends
    from pytest_queryeval.metrics.table import CompareOptions

    monkeypatch.setattr(sharedends, "MAX_END_WORK", 50 * P)
    other_form = graph("DOUBLE")
    golds = [kind._Gold(GOLD, other_form.execute(GOLD))]
    scored = kind._best(golds, PRED, other_form.execute(PRED),
                        kind._Options(CompareOptions()), None, executed=True, seconds=600.0)
    assert "cypherbench_ex" not in scored.metrics
    assert "not decided" in scored.details["cypherbench"]
    assert scored.metrics["execution_accuracy"] == 0.0


def test_only_indistinguishable_contents_share_one_object():
    """The same text is the same values of the same types in the same order; a NaN (which
    prints alike and equals nothing) never shares."""
    from pytest_queryeval.cypher.sharedends import shared

    contents: dict[Any, Any] = {}
    one = shared({"xs": [1, 2], "d": {"k": "v"}}, contents)
    assert shared({"xs": [1, 2], "d": {"k": "v"}}, contents) is one
    for other in ({"xs": [1.0, 2.0], "d": {"k": "v"}}, {"xs": [True, 2], "d": {"k": "v"}},
                  {"d": {"k": "v"}, "xs": [1, 2]}):
        twin = shared(other, contents)
        assert twin is not one and twin == one  # equal in value: compared, charged
    nan = float("nan")
    assert shared({"x": nan}, contents) is not shared({"x": nan}, contents)
    assert shared({"x": 0.0}, contents) is not shared({"x": -0.0}, contents)
