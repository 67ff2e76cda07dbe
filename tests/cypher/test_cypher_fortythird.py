"""Issue 58, the forty-second hostile re-probe of the Cypher kind (``rehearse: false`` on a
FalkorDB server, where the guard's refusal before sending is the only wall); fixed in the
forty-third round.

Q1, Q2: after ``WITH y LIMIT 4000000``, a ``collect()`` of six-key maps was counted as
1,000,000 values (:data:`.bounds.UNBOUNDED_ROWS` capped the literal ``LIMIT`` down), and a
comprehension over the held list (``[x IN l | [x]]``, ``[x IN l | x]``, ``[x IN l WHERE
true]``) or the list projected as it is several times (``RETURN l AS a, ..., l AS f``,
``WITH l AS a, ...``, ``RETURN DISTINCT l AS a, ...``) was one value a walk; each held a 3 s
server 12 to 29 s, and later honest golds timed out. Unbounded rows are now as many as a
literal ``LIMIT`` lets through, and such a comprehension (over a collected list of maps,
lists or computed values) or repeated (or ``DISTINCT``) projection is a copy of the whole
list. With ``LIMIT 1000000`` the same forms were measured at 11 to 23 s (six-key maps) here.

L2: the maximum's idiom ``reduce(mx = 0, y IN ys | CASE WHEN y > mx THEN y ELSE mx END)`` over
a collected list was refused as a copy of a growing accumulator: it only chooses between the
accumulator and the element, so its steps are linear, and it is sent now.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_queryeval.errors import QueryRefused
from tests.cypher.test_bolt import _suite
from tests.cypher.test_cypher_thirtyninth import _unrehearsed
from tests.fixtures.bolt_server import require, running_server
from tests.support import run_report

_PRODUCT = "UNWIND range(1,1000000) AS x UNWIND range(1,1000000) AS y WITH y LIMIT "
_MAPS = " WITH collect({a:y,b:y,c:y,d:y,e:y,f:y}) AS l "
BIG = _PRODUCT + "4000000" + _MAPS  # the probe's B
MILLION = _PRODUCT + "1000000" + _MAPS
SCALARS = _PRODUCT + "1000000 WITH collect(y) AS l "


def _sizes(base: str, use: str, times: int) -> str:
    return base + "RETURN " + "+".join([f"size({use})"] * times) + " AS c"


_SIX = ", ".join(f"l AS c{k}" for k in range(6))

#: (the query, a word of its refusal)
REFUSED = {
    "q1-wrap": (_sizes(BIG, "[x IN l | [x]]", 5), "built or walked"),
    "q1-same": (_sizes(BIG, "[x IN l | x]", 6), "built or walked"),
    "q1-where": (_sizes(BIG, "[x IN l WHERE true]", 6), "built or walked"),
    "q1-wrap-million": (_sizes(MILLION, "[x IN l | [x]]", 5), "copied or walked"),
    "q1-same-million": (_sizes(MILLION, "[x IN l | x]", 6), "copied or walked"),
    "q1-where-million": (_sizes(MILLION, "[x IN l WHERE true]", 6), "copied or walked"),
    "q1-once-million": (_sizes(MILLION, "[x IN l | x]", 1), "copied or walked"),
    "q2-return": (BIG + "RETURN " + _SIX, "built or walked"),
    "q2-with": (BIG + "WITH " + _SIX + " RETURN size(c0) AS s", "built or walked"),
    "q2-distinct": (BIG + "RETURN DISTINCT " + _SIX, "built or walked"),
    "q2-return-million": (MILLION + "RETURN " + _SIX, "copied or walked"),
    "q2-with-million": (MILLION + "WITH l, l AS l2 RETURN size(l2) AS s", "copied or walked"),
    "q2-distinct-million": (MILLION + "RETURN DISTINCT l AS a", "copied or walked"),
    "q2-scalars-million": (SCALARS + "RETURN " + _SIX, "copied or walked"),
    "returned": (_PRODUCT + "4000000 RETURN collect({a:y,b:y,c:y,d:y,e:y,f:y}) AS l",
                 "built or walked"),
    # one step past the probe: the list projected once a step, and a map bound to a name
    # collected (measured here at 12 s each on a 3 s server)
    "steps-million": (MILLION + "WITH l AS a WITH a AS b WITH b AS c WITH c AS d "
                      "WITH d AS e WITH e AS f RETURN size(f) AS s", "copied or walked"),
    "kept-million": (MILLION + " ".join(f"WITH l, {k} AS k{k}" for k in range(6))
                     + " RETURN size(l) AS s", "copied or walked"),
    "star-million": (MILLION + "WITH *, 1 AS k1 WITH *, 2 AS k2 WITH *, 3 AS k3 "
                     "RETURN size(l) AS s", "copied or walked"),
    "named-map-million": ("WITH {a:1,b:2,c:3,d:4,e:5,f:6} AS m " + _PRODUCT
                          + "1000000 WITH m, y LIMIT 1000000 WITH collect(m) AS l RETURN "
                          + "+".join(["size([x IN l | x])"] * 6) + " AS c", "copied or walked"),
}

#: Honest queries beside them, over small lists a graph's rows make: sent. The last two (L2)
#: were refused before.
SENT = [
    # BIG's 4,000,000 maps collected: refused since the seventy-first round (memory)
    _PRODUCT + "100000" + _MAPS + "RETURN size(l) AS c",
    SCALARS + "RETURN size([x IN l | x + 1]) AS c",
    "MATCH (a),(b),(c),(d) WITH collect(1) AS l RETURN size(l), [x IN l | x + 1]",
    "MATCH (n:Person) WITH collect(n.name) AS names RETURN names AS a, size(names) AS k",
    "MATCH (n:Person) WITH collect(n.name) AS names RETURN names ORDER BY size(names)",
    "MATCH (n:Person) WITH collect(n.name) AS names RETURN names[0] AS first",
    "MATCH (n:Person) WITH collect(n.name) AS names RETURN [x IN names | toUpper(x)] AS up",
    "MATCH (n:Person) WITH collect({name: n.name, born: n.born}) AS ps "
    "RETURN [p IN ps | p.name] AS names",
    "MATCH (n:Person) WITH collect(DISTINCT n.born) AS bs RETURN DISTINCT bs AS b",
    "MATCH (n:Person) WITH n.born AS b, collect(n.name) AS names RETURN b, names ORDER BY b",
    "MATCH (m:Movie) WITH collect(m.title) AS ts RETURN [a IN ts | [b IN ts WHERE a < b | "
    "a + b]] AS s",
    "MATCH (p:Person)-[:ACTED_IN]->(m:Movie) WITH p, collect(m.title) AS ts "
    "WITH p, ts WHERE size(ts) > 1 RETURN p.name, ts",
    "MATCH (p:Person)-[:ACTED_IN]->(m:Movie) WITH p, collect({t: m.title, y: m.released}) "
    "AS ms RETURN p.name, [x IN ms | x.t] AS t",
    "MATCH (n:Person) WITH collect(n.name) AS names, collect(n.born) AS borns "
    "RETURN names, borns",
    "MATCH (n:Person) WITH collect(n) AS ps UNWIND ps AS p RETURN p.name",
    "MATCH (n:Person) WITH collect(n) AS ps RETURN ps, size(ps) AS k",
    "MATCH (m:Movie) WITH collect(m.released) AS ys "
    "RETURN reduce(s = 0, y IN ys | s + CASE WHEN y > 2000 THEN 1 ELSE 0 END) AS b",
    "MATCH (m:Movie) WITH collect(m.released) AS ys "
    "RETURN reduce(mx = 0, y IN ys | CASE WHEN y > mx THEN y ELSE mx END) AS b",
    "MATCH (m:Movie) WITH collect(m) AS ms RETURN reduce(best = null, m IN ms | CASE WHEN "
    "best IS NULL OR m.released > best.released THEN m ELSE best END).title AS t",
]

#: A ``reduce()`` whose ``CASE`` builds a value from the accumulator is still a copy.
STILL_REFUSED = [
    "MATCH (m:Movie) WITH collect(m.released) AS ys "
    "RETURN reduce(mx = 0, y IN ys | CASE WHEN y > mx THEN [y] ELSE mx END) AS b",
    "MATCH (m:Movie) WITH collect(m.released) AS ys "
    "RETURN reduce(mx = 0, y IN ys | CASE WHEN y > mx THEN y ELSE mx + [y] END) AS b",
    "MATCH (m:Movie) WITH collect(m.released) AS ys "
    "RETURN reduce(mx = [], y IN ys | CASE WHEN y > 0 THEN y ELSE mx END) AS b",
]


@pytest.mark.parametrize("query", STILL_REFUSED)
def test_a_reduce_that_builds_from_its_accumulator_is_still_refused(query: str) -> None:
    with pytest.raises(QueryRefused, match="copies its accumulator"):
        _unrehearsed(query)


def test_the_hostile_cases_are_refused_and_the_honest_ones_after_pass(
        pytester: pytest.Pytester, tmp_path: Path) -> None:
    """End to end with ``rehearse: false`` and a 3 s timeout, on a server of its own: the
    probe's two cases (each sent held the server 12 to 29 s, and the honest golds after them
    timed out) fail with the refusal, unsent; the honest cases after them pass."""
    require()
    honest = {"gold": "MATCH (n:Movie) RETURN count(n) AS c",
              "predicted": "MATCH (m:Movie) RETURN count(m) AS c"}
    hostile = {name: REFUSED[name] for name in ("q1-wrap", "q2-return-million")}
    cases: list[dict[str, object]] = [dict(honest, id="h0")]
    cases += [{"id": name, "gold": "RETURN 0 AS c", "predicted": query}
              for name, (query, _) in hostile.items()]
    cases += [dict(honest, id=f"h{k}") for k in (1, 2, 3)]
    with running_server(tmp_path) as own:
        _suite(pytester.path, {"type": "bolt", "url": own.url, "timeout": 3,
                               "rehearse": False}, cases)
        try:
            report = run_report(pytester, "-p", "no:cacheprovider", "--queryeval-no-cache")[1]
        finally:
            own.unstick()
        assert own.running() == 0
    reasons = {cid: str(report.by_id[cid]) for cid in report.outcomes}
    for name, (_, why) in hostile.items():
        assert report.outcomes[name] == "failed", reasons[name]
        assert why in reasons[name], reasons[name]
    for cid in ("h0", "h1", "h2", "h3"):
        assert report.outcomes[cid] == "passed", reasons[cid]
