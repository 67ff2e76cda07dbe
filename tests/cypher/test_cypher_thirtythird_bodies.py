"""Issue 58, the thirty-third hostile re-probe of the Cypher kind: what an iteration's body
costs, on a real FalkorDB server with ``rehearse: false``.

Two HIGH findings (33c H1, H2): the cost bounds counted the values a list comprehension
iterates (within a million) but not what its body evaluates for each. A map of 24 keys, or
ten ``toString()`` calls joined with ``+``, built once a value of ``range(1, 1000000)``, kept
the server busy about 8 s and 5 s a call past the client's 3 s timeout, and two of them in a
row made the three honest cases after them error with gold timeouts. Now each token of an
iterated body weighs once an evaluation, and the tokens times the iterations are bounded
(:func:`pytest_queryeval.cypher.bounds._check_bodies`); ``rehearse: false`` also declares
the time limit given up (``tests/walls/test_declarations.py``), since the bound is the text's
estimate, not the server's.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_queryeval.cypher import guard
from pytest_queryeval.cypher.bounds import MAX_BODY_WORK
from pytest_queryeval.errors import QueryRefused
from tests.cypher.test_cypher_twentyseventh import refused_unsent_then_honest_pass
from tests.fixtures.bolt_server import require

_KEYS = ", ".join(f"{k}: x" for k in "abcdefghijklmnopqrstuvwy")
#: The probe's forms (probe33c/c_maps25.py, c_tostr.py): each sent on main d2f275a.
HOSTILE = {
    "h1-map": (f"RETURN size([x IN range(1,1000000) | {{{_KEYS}}}]) AS s", "evaluated"),
    "h2-tostring": ("RETURN size([x IN range(1,1000000) | "
                    + " + ".join(["toString(x)"] * 10) + "]) AS s", "evaluated"),
    "h1-where": ("RETURN size([x IN range(1,1000000) WHERE "
                 + " AND ".join(["x > 0"] * 8) + " | x]) AS s", "evaluated"),
    "h2-nested": ("RETURN size([x IN range(1,1000) | [y IN range(1,1000) | "
                  "toString(x) + toString(y) + toString(x) + toString(y)]]) AS s", "evaluated"),
}

#: Honest iterations that stay within the bound, as the cost bounds read them.
HONEST = [
    "RETURN size([x IN range(1,1000000) | x * 2]) AS s",
    "RETURN size([x IN range(1,1000000) | {a: x}]) AS s",
    "RETURN [x IN range(1,1000000) WHERE x % 2 = 0 | x * 2][0..3] AS s",
    "RETURN reduce(s = 0, x IN range(1, 1000000) | s + x) AS s",
    "MATCH (m:Movie) WITH collect(m.title) AS ts "
    "RETURN [t IN ts WHERE t STARTS WITH 'The' | toUpper(t)] AS s",
    "MATCH (m:Movie) WITH collect(m.title) AS ts RETURN [a IN ts | [b IN ts WHERE a < b | "
    "a + b]] AS s",
]


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_an_iterated_body_weighs_its_tokens(name: str) -> None:
    query, why = HOSTILE[name]
    with pytest.raises(QueryRefused, match=why) as refused:
        guard.check_costs(query)
    assert f"{MAX_BODY_WORK:,} evaluations of a token" in str(refused.value)


@pytest.mark.parametrize("query", HONEST)
def test_honest_iterations_stay_within_the_bound(query: str) -> None:
    guard.check_costs(query)


def test_the_list_iterated_is_evaluated_once() -> None:
    """The list an ``IN`` iterates, and the name before it, are not repeated by its own
    iteration: a body of 15 tokens over a million values is 15,000,000 evaluations, within
    the bound, where the eight tokens of ``x IN range(1, 1000000)`` weighed too would pass
    it."""
    guard.check_costs("RETURN size([x IN range(1, 1000000) | " + " + ".join("x" * 8) + "]) AS s")
    with pytest.raises(QueryRefused, match="evaluations of a token"):
        guard.check_costs("RETURN size([x IN range(1, 1000000) | " + " + ".join("x" * 12)
                          + "]) AS s")


def test_the_honest_cases_after_the_hostile_ones_pass(pytester: pytest.Pytester,
                                                      tmp_path: Path) -> None:
    """33c H1 and H2 end to end with ``rehearse: false``, on a server of its own, as
    predictions and golds: each refused at its text, unsent, the server idle after the suite,
    and the honest cases after them pass."""
    require()
    refused_unsent_then_honest_pass(pytester, tmp_path, HOSTILE, {
        "gold": "RETURN size([x IN range(1, 1000) | x * 2]) AS s",
        "predicted": "RETURN size([y IN range(1, 1000) | y + y]) AS s"})
