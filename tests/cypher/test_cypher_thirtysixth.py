"""Issue 58, the thirty-sixth hostile re-probe of the Cypher kind: the brackets a check of
the server's walls reads.

H (found while reading the walls of ``rehearse: false``): the nearest clause word "outside the
brackets around" an expression (``bounds.nearest_outside``, now ``outside_each``) counted
its level down at the bracket around the expression and then took the words of an earlier bracket group of the
outer level as the expression's own clause. ``RETURN [x IN range(1,2) WHERE x > 0] AS a,
[date()] AS d`` read the date as compared in a ``WHERE``: sent, the date in the reply killed
the FalkorDB server (4.16.3: its Bolt listener cannot write one) and every later case erred;
``... RETURN [x IN r WHERE x > 0] AS a, (range(1, 1000000)) AS b`` over five matched nodes
read the range as a ``WHERE``'s, not kept with each row, and passed the per-row bound. Now a
group closed before the expression is passed over whole.

M1 (36c): ``unwritable.check_falkordb`` scanned the whole query two or three times for each
``date()``: a 64 KiB prediction of 7,220 ``date()=1`` comparisons held the pytest process
44 s, and ``bounds._check_per_row`` walked back from each ``range()`` of a projection to its
clause (5,908 ``range(1,2)`` in one ``RETURN``: 20 s). Both read a query's brackets once now
(``bounds.outside_each``, ``unwritable._Shape``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_queryeval.cypher import bounds, unwritable
from pytest_queryeval.cypher.bounds import check_evaluation
from pytest_queryeval.cypher.guard import Token, _code, tokens
from pytest_queryeval.errors import QueryRefused
from tests.cypher.test_cypher_twentyseventh import refused_unsent_then_honest_pass
from tests.fixtures.bolt_server import require

#: A date after an earlier group of its clause that holds a ``WHERE``.
DATES = {
    "list": "RETURN [x IN range(1,2) WHERE x > 0] AS a, [date('2020-01-01')] AS d",
    "parens": "RETURN [x IN range(1,2) WHERE x > 0] AS a, (date('2020-01-01')) AS d",
    "map": "MATCH (n:Person) WHERE n.born > 0 RETURN {a: [y IN range(1,2) WHERE y > 1], "
           "b: [date('2020-01-01')]} AS m LIMIT 1",
    "pattern": "MATCH (p:Person) RETURN [(p)-->(m) WHERE m.released > 0 | m.title] AS t, "
               "[duration('P1D')] AS d LIMIT 1",
}
#: Dates a ``WHERE`` only compares: no date reaches the reply.
COMPARED = [
    "MATCH (n:Person) WHERE n.born < date('2020-01-01').year RETURN n.name AS n LIMIT 1",
    "MATCH (n:Person) WHERE [x IN range(1,2) WHERE x > 0] <> [] AND (date('2020-01-01')) "
    "> date('2019-01-01') RETURN n.name AS n LIMIT 1",
    "RETURN [x IN range(1,2) WHERE x > 0] AS a, toString(date('2020-01-01')) AS d",
]
#: A range kept with each of many rows after an earlier group holding a ``WHERE``.
PER_ROW = [
    "MATCH (a),(b),(c),(d),(e) RETURN [x IN range(1,2) WHERE x > 0] AS a, "
    "(range(1, 1000000)) AS b",
    "MATCH (a),(b),(c),(d),(e) RETURN [x IN range(1,2) WHERE x > 0] AS a, "
    "[range(1, 1000000)] AS b",
]


@pytest.mark.parametrize("name", sorted(DATES))
def test_a_date_after_a_group_with_a_where_is_refused(name: str) -> None:
    with pytest.raises(QueryRefused, match=r"stops on a (date|duration) value"):
        unwritable.check_falkordb(DATES[name])


@pytest.mark.parametrize("query", COMPARED)
def test_a_compared_date_still_passes(query: str) -> None:
    unwritable.check_falkordb(query)


@pytest.mark.parametrize("query", PER_ROW)
def test_a_range_after_a_group_with_a_where_is_kept_with_each_row(query: str) -> None:
    # (since the forty-fourth round a list literal copies the range it holds, which may pass
    # the query's whole bound first)
    with pytest.raises(QueryRefused, match=r"is built on each row|copied or walked"):
        check_evaluation(_code(tokens(query)))


def test_the_brackets_are_read_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """36c M1: the clause words are read once a token, not once a token a call (7,220
    calls of ``date()`` in 64 KiB read some 10^8 tokens)."""
    calls = 0
    feeds = unwritable._feeds

    def counted(code: list[Token], k: int) -> str | None:
        nonlocal calls
        calls += 1
        return feeds(code, k)

    monkeypatch.setattr(unwritable, "_feeds", counted)
    query = "RETURN " + "date()=1," * 7220 + "1 AS x"
    unwritable.check_falkordb(query)  # each compared: passes
    assert len(query) > 64_000
    assert calls < 3 * len(_code(tokens(query))), calls


def test_a_projections_ranges_read_their_clause_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """36c M1, its second cause: the clause of each ``range()`` is read in one pass of the
    query, not one walk back a range."""
    walks = 0
    each = bounds.outside_each

    def counted(code: list[Token], found: object) -> list[int | None]:
        nonlocal walks
        walks += 1
        return each(code, found)  # type: ignore[arg-type]

    monkeypatch.setattr(bounds, "outside_each", counted)
    query = "RETURN " + "range(1,2)," * 5908 + "1 AS x"
    check_evaluation(_code(tokens(query)))  # 11,816 values in all: passes
    assert len(query) > 64_000 and walks == 1


def test_the_server_lives_and_the_honest_cases_pass(pytester: pytest.Pytester,
                                                    tmp_path: Path) -> None:
    """End to end with ``rehearse: false``, on a server of its own: each date refused at its
    text and unsent, as a prediction and as a gold; the honest cases after them pass (the
    server was dead after the first)."""
    require()
    refused_unsent_then_honest_pass(
        pytester, tmp_path, {name: (query, "Bolt listener cannot write")
                             for name, query in DATES.items()},
        {"gold": "MATCH (m:Movie) RETURN count(m) AS c",
         "predicted": "MATCH (n:Movie) RETURN count(n) AS c"})
