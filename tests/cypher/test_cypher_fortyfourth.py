"""Issue 58, the forty-third hostile re-probe of the Cypher kind (``rehearse: false`` on a
FalkorDB server, where the guard's refusal before sending is the only wall); fixed in the
forty-fourth round.

S1, S3: a slice (``[1..]``) or a list concatenation (``+ []``) was weighed as a copy only when
applied to a name bound to a list; applied in place to the list a ``collect()``, a
``range()`` or a comprehension made, it cost nothing, so ``WITH collect({...})[1..] x6 AS l``
after ``LIMIT 4000000`` held a 3 s server 27 s, ``size([x IN range(1,1000000) | {a:x,b:x}]
[1..] x60)`` 20 s, and the honest golds after two such cases timed out (also through an
agent's ``run_query``). Each slice and each ``+`` now copies what it applies to, whatever made
it (:mod:`pytest_queryeval.cypher.operands`).

One step past the probe: a chain of ``m`` list concatenations copies about ``m² / 2``
operands, the growing list at each ``+`` (3,000 ``l + l + ...`` of a one-map list held a 3 s
server 11 s); past 1,000,000 such copies it is refused.

A sort (``ORDER BY`` without a ``LIMIT``), a ``DISTINCT`` or a grouping of all the rows is
one step the server does not time: 1,000,000 six-key maps sorted held a 3 s server 26 s. Past
100,000 rows the text counts, over a product of patterns by a map or list key, or over a
product of three independent patterns or more by any key (six, sorted by a number: 10 s), it
is refused.

S2: only a number right after ``LIMIT`` was read (``LIMIT 2000000*2`` counted 2,000,000
rows, ``LIMIT (8000000)``, ``toInteger(...)``, ``4000000.0`` none), and rows the text counts
(ranges unwound) were capped at 1,000,000 however many an ``UNWIND`` multiplied them by. A
``LIMIT`` is read as arithmetic now (one the guard cannot read after unbounded rows is
refused), and counted rows are multiplied whole.

M2: ``WITH ms, size(ms) AS n`` bound ``n`` to the list it measured (refused as a list kept on
each row); a name bound to a call whose value is no list holds no list.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cypher.test_bolt import run_on_server
from tests.fixtures.bolt_server import require, running_server

_PRODUCT = "UNWIND range(1,1000000) AS x UNWIND range(1,1000000) AS y WITH y LIMIT "
_MAPS = "{a:y,b:y,c:y,d:y,e:y,f:y}"
_COPIED = "copied or walked"


def _chain(base: str, op: str, times: int) -> str:
    return base + op * times


#: (the query, a word of its refusal)
REFUSED = {
    "s1-slices": (_PRODUCT + "4000000 WITH " + _chain(f"collect({_MAPS})", "[1..]", 6)
                  + " AS l RETURN size(l) AS s", _COPIED),
    "s1-plus": (_PRODUCT + "4000000 WITH " + _chain(f"collect({_MAPS})", " + []", 6)
                + " AS l RETURN size(l) AS s", _COPIED),
    "s1-one-slice": (_PRODUCT + "4000000 WITH collect(" + _MAPS + ")[1..] AS l "
                     "RETURN size(l) AS s", _COPIED),
    "s1-from-zero": (_PRODUCT + "4000000 WITH " + _chain(f"collect({_MAPS})", "[0..]", 8)
                     + " AS l RETURN size(l) AS s", _COPIED),
    "s1-upper": (_PRODUCT + "4000000 WITH " + _chain(f"collect({_MAPS})", "[..4000000]", 6)
                 + " AS l RETURN size(l) AS s", _COPIED),
    "s1-distinct": (_PRODUCT + "4000000 WITH DISTINCT " + _chain(f"collect({_MAPS})", "[1..]", 6)
                    + " AS l RETURN size(l) AS s", _COPIED),
    "s1-grouped": (_PRODUCT + "4000000 WITH y % 2 AS k, "
                   + _chain(f"collect({_MAPS})", "[1..]", 6) + " AS l RETURN size(l) AS s",
                   _COPIED),
    "s1-both-sides": (_PRODUCT + "4000000 WITH [] + collect(" + _MAPS + ") + [] AS l "
                      "RETURN size(l) AS s", _COPIED),
    "s1-return": (_PRODUCT + "1000000 RETURN size("
                  + _chain(f"collect({_MAPS})", "[1..]", 20) + ") AS s", _COPIED),
    "s1-no-limit": ("UNWIND range(1,1000000) AS y RETURN size("
                    + _chain("collect({a:y,b:y})", "[1..]", 60) + ") AS s", _COPIED),
    "s3-comprehension": ("RETURN size(" + _chain("[x IN range(1,1000000) | {a:x,b:x}]",
                                                 "[1..]", 60) + ") AS s", _COPIED),
    "s3-held": ("WITH " + _chain("[x IN range(1,1000000) | {a:x,b:x}]", "[1..]", 60)
                + " AS l RETURN size(l) AS s", _COPIED),
    "s3-range": ("RETURN size(" + _chain("range(1,1000000)", "[1..]", 3000) + ") AS s", _COPIED),
    "s3-lists": ("RETURN size(" + _chain("[x IN range(1,1000000) | [x]]", "[1..]", 200)
                 + ") AS s", _COPIED),
    # one step past the probe: the same copies through CASE, a call that returns its
    # argument, brackets, an element of a list of lists, a map's value, concatenation
    "case": ("RETURN size(" + _chain("CASE WHEN true THEN [x IN range(1,1000000) | {a:x}] END",
                                     "[1..]", 60) + ") AS s", _COPIED),
    "coalesce": ("RETURN size(" + _chain("coalesce([x IN range(1,1000000) | {a:x}])",
                                         "[1..]", 60) + ") AS s", _COPIED),
    "brackets": ("RETURN size(" + _chain("([x IN range(1,1000000) | {a:x}])", "[1..]", 60)
                 + ") AS s", _COPIED),
    "element": ("WITH [[x IN range(1,1000000) | {a:x}]] AS l RETURN size("
                + _chain("l[0]", "[1..]", 60) + ") AS s", _COPIED + "|brings the values"),
    "map-value": ("RETURN size(" + _chain("{a: [x IN range(1,1000000) | {a:x}]}.a", "[1..]", 60)
                  + ") AS s", _COPIED),
    "concatenated": ("RETURN size(" + _chain("[x IN range(1,1000000) | {a:x}]", " + []", 60)
                     + ") AS s", _COPIED),
    "in-a-list": (_PRODUCT + "1000000 RETURN " + "+".join(
        [f"size([collect({_MAPS})][0])"] * 6) + " AS s", _COPIED),
    "in-a-map": (_PRODUCT + "1000000 RETURN " + "+".join(
        [f"size({{a: collect({_MAPS})}}.a)"] * 6) + " AS s", _COPIED),
    # a call copies a made list passed to it, as it does a named one (8.5 s before)
    "call-argument": (_PRODUCT + "1000000 RETURN " + "+".join(
        [f"size(coalesce(collect({_MAPS})))"] * 6) + " AS s", _COPIED),
    # a long chain of + copies the growing list at each step (11 s on a 3 s server, before)
    "chain-names": ("WITH [{a:1,b:2,c:3,d:4,e:5,f:6}] AS l RETURN size("
                    + " + ".join(["l"] * 3000) + ") AS s", "list concatenations"),
    "chain-literals": ("WITH {a:1,b:2,c:3,d:4,e:5,f:6} AS m RETURN size("
                       + " + ".join(["[m]"] * 3000) + ") AS s", "list concatenations"),
    # a group's list kept on the rows a later clause makes is still a list a row
    "group-then-match": ("MATCH (p:Person) MATCH (q:Person) WITH p, collect(q.name) AS ms "
                         "MATCH (m:Movie) RETURN p.name, ms", "built on each row"),
    "group-too-big": (_PRODUCT + "4000000 WITH y % 2 AS k, collect({a:y,b:y}) AS l "
                      "RETURN k, l", "built or walked"),
    # a sort, DISTINCT or grouping of all rows is one step the server does not time (26 s)
    "sorted-maps": ("UNWIND range(1,1000000) AS y WITH {a:y,b:y,c:y,d:y,e:y,f:y} AS m "
                    "ORDER BY m RETURN count(*) AS c", "ORDER BY at line 1"),
    "sorted-by-map": ("UNWIND range(1,1000000) AS y WITH y ORDER BY {a:y,b:y,c:y} "
                      "RETURN count(*) AS c", "ORDER BY at line 1"),
    "distinct-maps": ("UNWIND range(1,1000000) AS y WITH DISTINCT {a:y,b:y,c:y,d:y,e:y,f:y} "
                      "AS m RETURN count(*) AS c", "DISTINCT at line 1"),
    "grouped-by-map": ("UNWIND range(1,1000000) AS y WITH {a:y,b:y,c:y,d:y,e:y,f:y} AS k, "
                       "count(*) AS c RETURN count(*) AS n", "the grouping at line 1"),
    "sorted-in-a-subquery": ("CALL { UNWIND range(1,1000000) AS y WITH {a:y,b:y,c:y,d:y,e:y,f:y} "
                             "AS m ORDER BY m RETURN count(*) AS c } RETURN c", "ORDER BY at"),
    "product-sorted-by-number": ("MATCH (a),(b),(c),(d),(e),(f) WITH id(a)*1000000+id(b)*10000"
                                 "+id(c)*100+id(d) AS s ORDER BY s RETURN count(*) AS c",
                                 "product of 6 patterns"),
    "product-grouped": ("MATCH (a),(b),(c) WITH a.name AS x, b.name AS y, c.name AS z, "
                        "count(*) AS k RETURN count(*) AS c", "product of 3 patterns"),
    "product-sorted-by-map": ("MATCH (a),(b) WITH {a: id(a), b: id(b), c: 1, d: 1} "
                              "AS m ORDER BY m RETURN count(*) AS c", "by a key that may hold"),
    # S2: a LIMIT's arithmetic, and counted rows multiplied whole
    "limit-brackets": (_PRODUCT + "(8000000) WITH collect(" + _MAPS + ") AS l RETURN l AS a",
                       "built or walked"),
    "limit-call": (_PRODUCT + "toInteger(4000000) WITH collect(" + _MAPS + ") AS l "
                   "RETURN l AS a", "built or walked"),
    "limit-float": (_PRODUCT + "4000000.0 WITH collect(" + _MAPS + ") AS l RETURN l AS a",
                    "built or walked"),
    "limit-exponent": (_PRODUCT + "4e6 WITH collect(" + _MAPS + ") AS l RETURN l AS a",
                       "built or walked"),
    "limit-product": (_PRODUCT + "2000000*2 WITH collect(" + _MAPS + ") AS l "
                      "RETURN {a:0} IN l AS a", "built or walked"),
    "limit-unreadable": ("MATCH (a),(b) WITH a LIMIT size(keys(a)) * 1000000 "
                         "WITH collect(a) AS l RETURN l AS a", "LIMIT at line 1"),
    "unwound-after-limit": (_PRODUCT + "1000000 UNWIND [1,2,3,4,5,6,7,8] AS z WITH collect("
                            + _MAPS + ") AS l RETURN l AS a", "brings the values|built or"),
    "unwound-ranges": ("UNWIND range(1,1000) AS x UNWIND range(1,1000) AS y UNWIND range(1,8) "
                       "AS z WITH collect(" + _MAPS + ") AS l RETURN l AS a", "built or walked"),
}

#: Honest queries beside them: sent (the M1, M2 and M3 forms were refused before).
SENT = [
    "MATCH (m:Movie) WITH collect(m.title)[0..5] AS top RETURN top",
    "MATCH (m:Movie) WITH collect(m.title) + ['x'] AS ts RETURN ts",
    "MATCH (p:Person)-[:ACTED_IN]->(m:Movie) WITH p, collect(m.title) AS titles "
    "RETURN p.name, titles[0..3] AS first3",
    "MATCH (p:Person)-[:ACTED_IN]->(m:Movie) RETURN p.name, collect(m.title)[0..3] AS first3",
    "MATCH (n:Person) WITH collect(n.name) AS names RETURN names[0] + ', ' + names[1] AS two",
    "MATCH (n:Person) RETURN 'people: ' + toString(count(n)) AS s",
    "MATCH (m:Movie) RETURN m.title + ' (' + toString(m.released) + ')' AS t",
    "MATCH (m:Movie) RETURN [x IN collect(m.released) | x + 1][1..] AS ys",
    "RETURN [x IN range(1, 100) | x * 2][1..10] AS l",
    "RETURN range(1, 10) + range(11, 20) AS l",
    "MATCH (m:Movie) RETURN m.title LIMIT (3)",
    "MATCH (a:Person), (b:Person) RETURN a.name, b.name LIMIT toInteger(10)",
    "MATCH (a:Person), (b:Person) RETURN a.name, b.name LIMIT 10^2",
    "MATCH (m:Movie) RETURN m.title ORDER BY m.title SKIP 1 LIMIT 5",
    "UNWIND range(1, 10) AS x UNWIND range(1, 10) AS y RETURN x * y AS p LIMIT 3",
    "MATCH (m:Movie) WITH collect(m) AS ms WITH ms, size(ms) AS n UNWIND ms AS m "
    "RETURN m.title AS t, n",
    "MATCH (m:Movie) WITH collect(m.title) AS ts WITH ts, size(ts) + 1 AS n UNWIND ts AS t "
    "RETURN t, n",
    # M1, M3: a group's list is kept once a group, an element of collect([...]) is the list
    "MATCH (p:Person) OPTIONAL MATCH (p)-[:ACTED_IN]->(m:Movie) WITH p, collect(m.title) AS ms "
    "RETURN p.name AS name, ms",
    "MATCH (p:Person) OPTIONAL MATCH (p)-[:ACTED_IN]->(m:Movie) WITH p, collect(m.title) AS ms "
    "RETURN p.name AS name, ms, size(ms) AS n ORDER BY n DESC LIMIT 5",
    "MATCH (p:Person) MATCH (p)-[:ACTED_IN]->(m:Movie) WITH p, collect(m.title) AS ms "
    "RETURN p.name AS name, ms",
    "MATCH (m:Movie)<-[:ACTED_IN]-(p:Person) WITH m, collect([p.name, p.born]) AS cast "
    "RETURN m.title AS title, [c IN cast | c[0]] AS names",
    "MATCH (p:Person)-[:ACTED_IN]->(m:Movie) RETURN {name: p.name, titles: collect(m.title)} "
    "AS actor",
    "MATCH (p:Person)-[:ACTED_IN]->(m:Movie) RETURN [p.name, count(m)] AS pair",
    "MATCH (m:Movie) WHERE EXISTS { MATCH (m)<-[:ACTED_IN]-(p:Person) } RETURN m.title AS t",
    "CALL { MATCH (m:Movie) RETURN collect(m.title) AS ts } RETURN size(ts) AS n",
    "MATCH (m:Movie) RETURN string.join(collect(m.title), ', ') AS titles",
    "MATCH (m:Movie) RETURN coalesce(m.tagline, 'none') AS t, head(collect(m.title)) AS h",
    "MATCH (m:Movie) WITH collect(m.released) AS ys RETURN reduce(s = 0, y IN ys | s + y) AS t",
    "UNWIND range(1, 1000000) AS y WITH y ORDER BY y DESC LIMIT 10 RETURN collect(y) AS top",
    "UNWIND range(1, 1000) AS y RETURN y % 7 AS k, count(*) AS c ORDER BY k",
    "MATCH (a:Person), (b:Person) WHERE a.born = b.born AND a.name < b.name "
    "RETURN a.name, b.name ORDER BY a.name, b.name",
    "MATCH (a:Person), (m:Movie) RETURN DISTINCT a.born AS born ORDER BY born",
    "MATCH (p:Person) MATCH (p)-[:ACTED_IN]->(m:Movie) MATCH (m)<-[:DIRECTED]-(d:Person) "
    "RETURN p.name, d.name ORDER BY p.name",
    "MATCH (a)-->(b), (b)-->(c) RETURN a.name, c.name ORDER BY a.name",
    "MATCH (a),(b),(c) RETURN a.name, b.name, c.name ORDER BY a.name LIMIT 10",
    "MATCH (p:Person)-[:ACTED_IN]->(m:Movie) RETURN m.title AS t, collect(p.name) AS cast "
    "ORDER BY size(cast) DESC",
]

_COUNT = "MATCH (m:Movie) RETURN count(m) AS c"


def _call(cid: str, query: str) -> list[dict[str, object]]:
    return [{"role": "assistant", "content": None, "tool_calls": [{
        "id": cid, "type": "function",
        "function": {"name": "run_query", "arguments": json.dumps({"query": query})}}]},
        {"role": "tool", "tool_call_id": cid, "content": "38"}]


def hostile_then_honest(pytester: pytest.Pytester, tmp_path: Path,
                        hostile: dict[str, str], said: str = "refused") -> dict[str, str]:
    """Each ``hostile`` text as a prediction (``p-<name>``) and as an agent's second
    ``run_query`` (``a-<name>``), between honest cases (``h0`` to ``h3``), end to end with
    ``rehearse: false`` and a 3 s timeout on a server of its own: asserts the honest cases
    pass, each prediction fails, both reports of each text hold ``said``, and the server
    runs nothing after the suite; every case's report, by id."""
    require()
    runs = {"h0": {"predicted": _COUNT, "trajectory": _call("a", _COUNT)}}
    for name, query in hostile.items():
        runs[f"p-{name}"] = {"predicted": query, "trajectory": _call("a", _COUNT)}
        runs[f"a-{name}"] = {"predicted": _COUNT,
                             "trajectory": _call("a", _COUNT) + _call("b", query)}
    runs.update({f"h{k}": runs["h0"] for k in (1, 2, 3)})
    pytester.path.joinpath("runs.jsonl").write_text("".join(
        json.dumps({"id": cid, **run}) + "\n" for cid, run in runs.items()))
    cases = [{"id": cid, "question": "How many movies?", "gold": _COUNT,
              **({"agent": True, "thresholds": {"write_attempts": {"max": 0}}}
                 if cid.startswith("a-") else {})} for cid in runs]
    with running_server(tmp_path) as own:
        report = run_on_server(pytester, own, cases, rehearse=False, timeout=3, config={
            "predictions": {"source": "file", "path": "runs.jsonl"}})
        assert own.running() == 0
    reasons = {cid: str(report.by_id[cid]) for cid in report.outcomes}
    for name in hostile:
        assert report.outcomes[f"p-{name}"] == "failed", reasons[f"p-{name}"]
        assert said in reasons[f"p-{name}"], reasons[f"p-{name}"]
        assert said in reasons[f"a-{name}"], reasons[f"a-{name}"]
    for cid in ("h0", "h1", "h2", "h3"):
        assert report.outcomes[cid] == "passed", reasons[cid]
    return reasons


def test_the_hostile_cases_and_calls_are_refused_and_the_honest_ones_after_pass(
        pytester: pytest.Pytester, tmp_path: Path) -> None:
    """The probe's S1 and S3 texts (each held the server 20 to 27 s, and the honest golds
    after two of them timed out; the agent case passed while the server was held) are
    refused unsent (:func:`hostile_then_honest`)."""
    hostile = {name: REFUSED[name][0] for name in ("s1-slices", "s3-comprehension")}
    hostile_then_honest(pytester, tmp_path, hostile, _COPIED)
