"""Issue 58, the twenty-sixth hostile re-probe of the Cypher kind, on a real FalkorDB server.

The cost bound counted values (lists built and walked, literal characters grown), not the
work one value costs, and FalkorDB checks no timeout inside one expression. With ``rehearse:
false`` two forms kept the server busy about 90 s past the plugin's 3 s timeout and later
honest cases, golds too, timed out. H1: a backtracking regular expression in a loop
(``[i IN range(1, 20) | string.matchRegEx('<40 runs of 21 a and a !>', '(a+)+b')]``, about
2 s a call in oniguruma). H2: a ``reduce()`` adding a name bound to a long string or a list
(``reduce(s = 0, i IN range(1, 10000) | s + t)``), copied at each step, as any name counted
as a number. Now a regular expression must be one literal that does not backtrack
exponentially, of at most two repeated parts, matched against a literal or a matched node's
property, outside any iteration (:mod:`pytest_queryeval.cypher.regexes`); and a reduce body
holding another name is copied at each step, the name weighed as a long string or its list.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_queryeval.cypher import guard, unwritable
from pytest_queryeval.cypher.bolt import BoltSource
from pytest_queryeval.cypher.regexes import degree
from pytest_queryeval.errors import QueryRefused
from tests.cypher.test_bolt import _suite
from tests.fixtures.bolt_server import require, running_server
from tests.support import run_report

RUNS = ("a" * 21 + "!") * 40  # 880 characters: about 2 s a call against '(a+)+b'
T = "x" * 990
L = "[" + ", ".join(str(i) for i in range(100)) + "]"

#: H1 and its neighbours (c26/rx1.txt): refused, each at its regular expression.
REGEXES = {
    "h1-comprehension": (f"RETURN size([i IN range(1, 20) | string.matchRegEx('{RUNS}', "
                         "'(a+)+b')]) AS s", "inside an iteration"),
    "h1-any": (f"RETURN any(i IN range(1, 20) WHERE size(string.matchRegEx('{RUNS}', "
               "'(a+)+b')) > 0) AS s", "inside an iteration"),
    "h1-replace": (f"RETURN size([i IN range(1, 20) | string.replaceRegEx('{RUNS}', "
                   "'(a+)+b', '')]) AS s", "inside an iteration"),
    "nested-once": (f"RETURN string.matchRegEx('{RUNS}', '(a+)+b') AS s",
                    "a repeated group holds a repeated part"),
    "alternation-repeated": (f"RETURN string.matchRegEx('{RUNS}', '(a|aa)*b') AS s",
                             "a repeated group holds a repeated part"),
    "nested-in-a-group": (f"RETURN string.matchRegEx('{RUNS}', '((a)+c?)+b') AS s",
                          "a repeated group holds a repeated part"),
    "backreference": (f"RETURN string.matchRegEx('{RUNS}', '(a*)\\\\1b') AS s",
                      "a backreference"),
    "three-parts": (f"RETURN string.matchRegEx('{'x' * 900}', '\\\\w+x\\\\w+x\\\\w+y') AS s",
                    "3 repeated parts, more than 2"),
    "pattern-named": (f"WITH '(a+)+b' AS p RETURN string.matchRegEx('{RUNS}', p) AS s",
                      "a pattern that is not one string literal"),
    "pattern-built": (f"RETURN string.matchRegEx('{RUNS}', '(a+)' + '+b') AS s",
                      "a pattern that is not one string literal"),
    "subject-built": ("WITH string.join([i IN range(1, 4000) | 'x'], '') AS t "
                      "RETURN string.matchRegEx(t, 'x.*x.*y') AS s", "neither a string literal"),
    "two-costly-calls": (f"RETURN string.matchRegEx('{'x' * 900}', '\\\\w+x\\\\w+y') AS a, "
                         f"string.matchRegEx('{'x' * 900}', '\\\\w+x\\\\w+y') AS b",
                         "may backtrack more than"),
    "operator": (f"MATCH (n:Movie) WHERE '{RUNS}' =~ '(a+)+b' RETURN n.title AS t",
                 "a repeated group holds a repeated part"),
}
#: H2 and its neighbours (c26/nr1.txt): a reduce() copying a named string or list each step.
COPIES = {
    "h2-number-start": f"WITH '{T}' AS t RETURN size(reduce(s = 0, i IN range(1, 10000) | "
                       "s + t)) AS n",
    "h2-string-start": f"WITH '{T}' AS t RETURN size(reduce(s = '', i IN range(1, 10000) | "
                       "s + t)) AS n",
    "h2-list": f"WITH {L} AS l RETURN size(reduce(s = 0, i IN range(1, 6000) | s + l)) AS n",
    "built-string": "WITH string.join([i IN range(1, 990) | 'x'], '') AS t "
                    "RETURN size(reduce(s = '', i IN range(1, 10000) | s + t)) AS n",
    "map-property": f"WITH {{a: '{T}'}} AS m RETURN size(reduce(s = 0, i IN range(1, 10000) | "
                    "s + m.a)) AS n",
    "long-list": "WITH range(1, 100000) AS l RETURN size(reduce(s = [], i IN range(1, 1000) | "
                 "s + l)) AS n",
}
#: Honest forms, sent as before.
HONEST = [
    "MATCH (n:Movie) RETURN string.matchRegEx(n.title, '^The') AS m",
    "MATCH (n:Movie) WHERE n.title =~ 'The.*' RETURN n.title AS t",
    "MATCH (n:Movie) WHERE n.title =~ '(?i).*matrix.*' RETURN n.title AS t",
    "MATCH (p:Person) RETURN string.replaceRegEx(p.name, '[aeiou]', '') AS n",
    "RETURN string.matchRegEx('2024-01-02', '(\\\\d{4})-(\\\\d{2})-(\\\\d{2})') AS d",
    "RETURN reduce(s = 0, x IN [1, 2, 3] | s + x) AS s",
    "MATCH (n:Movie) WITH collect(n) AS l RETURN reduce(s = 0, x IN l | s + x.released) AS s",
    "RETURN reduce(s = 0, i IN range(1, 1000000) | s + i) AS s",
    "RETURN size(reduce(s = [], i IN range(1, 10000) | s + [i])) AS n",
    "MATCH (p:Person) WITH collect(p.name) AS names RETURN reduce(s = '', n IN names | s + n) "
    "AS s",
    "MATCH p = (a:Person)-[*1..2]-(b) RETURN reduce(s = '', n IN nodes(p) | s + n.name) AS s",
    "RETURN reduce(s = '', i IN range(1, 10) | s + toString(i)) AS s",
    "MATCH (m:Movie) RETURN reduce(m = 0, x IN [1, 5, 3] | CASE WHEN x > m THEN x ELSE m END) "
    "AS m",
]


def _sent(query: str) -> None:
    """What a FalkorDB server is sent with ``rehearse: false`` (the guard's part)."""
    guard.check_text(query)
    guard.check_server(query)
    guard.check_unbound(query)
    unwritable.check_falkordb(query)


@pytest.mark.parametrize(("query", "why"), list(REGEXES.values()), ids=list(REGEXES))
def test_a_costly_regular_expression_is_not_sent(query: str, why: str) -> None:
    with pytest.raises(QueryRefused, match=why):
        _sent(query)


@pytest.mark.parametrize("query", list(COPIES.values()), ids=list(COPIES))
def test_a_reduce_copying_a_named_value_each_step_is_not_sent(query: str) -> None:
    with pytest.raises(QueryRefused, match=r"reduce\(\) at line 1, column \d+ copies its "
                                           r"accumulator s at each of|s \(a list the query "
                                           r"made\) at line 1, column \d+ is built or walked|"
                                           r"is copied or walked"):
        _sent(query)


@pytest.mark.parametrize("query", HONEST)
def test_honest_regular_expressions_and_reduces_are_sent(query: str) -> None:
    _sent(query)


@pytest.mark.parametrize(("pattern", "parts"), [
    ("^The", 0), ("The.*", 0), ("The.*x", 1), (".*a.*b", 1), ("(?i).*x.*y", 1), ("x.*x.*y", 2),
    ("[a-z]+@[a-z]+", 2), ("(ab)+c", 1), ("\\d{1,3}", 0), ("a{2,}", 1), ("(?:ab){2}", 0),
    ("[(+*]+x", 1), ("a{,}", 0)])
def test_the_repeated_parts_of_a_pattern(pattern: str, parts: int) -> None:
    assert degree(pattern) == parts


@pytest.mark.parametrize("pattern", ["(a+)+b", "(a*)*", "(a|b)*c", "(?:a+){2,}", "((a+))+",
                                     "(a)\\1", "(?R)", "(?(1)a|b)"])
def test_patterns_that_backtrack_exponentially(pattern: str) -> None:
    with pytest.raises(ValueError):
        degree(pattern)


def test_the_hostile_forms_are_refused_by_the_source_unsent(tmp_path: Path) -> None:
    """H1 and H2 refused by a ``rehearse: false`` source on a server of its own, prediction
    and gold; the server idle after, the honest forms answered."""
    require()
    with running_server(tmp_path) as own:
        src = BoltSource.from_spec("g", {"type": "bolt", "url": own.url, "timeout": 20,
                                         "rehearse": False})
        try:
            for trusted in (False, True):
                with pytest.raises(QueryRefused, match="inside an iteration"):
                    src.execute(REGEXES["h1-comprehension"][0], trusted=trusted)
                with pytest.raises(QueryRefused, match="copies its accumulator"):
                    src.execute(COPIES["h2-number-start"], trusted=trusted)
            rows = src.execute("MATCH (n:Movie) WHERE size(string.matchRegEx(n.title, "
                               "'The.*')) > 0 RETURN n.title AS t ORDER BY t").rows
            assert rows and all(r[0].startswith("The") for r in rows)
            got = src.execute("MATCH (n:Movie) RETURN string.matchRegEx(n.title, '^The') AS m")
            assert len(got.rows) == 5
        finally:
            src.close()
        assert own.running() == 0


def test_the_honest_cases_after_the_hostile_ones_pass(pytester: pytest.Pytester,
                                                      tmp_path: Path) -> None:
    """H1 and H2 end to end with ``rehearse: false`` (c26/rx_suite.py, nr_suite.py), on a
    server of its own. The inputs are small enough that the server answers each within a
    second or so (three calls on a 110-character literal, 2,000 and 1,300 steps): before the
    fix they were sent and answered; now each is refused at its text, before anything is
    sent (nothing here depends on the server being slow)."""
    require()
    honest = {"gold": "MATCH (n:Movie) RETURN n.title AS t ORDER BY t",
              "predicted": "MATCH (m:Movie) RETURN m.title AS t ORDER BY t"}
    h1 = (f"RETURN size([i IN range(1, 3) | string.matchRegEx('{('a' * 10 + '!') * 10}', "
          "'(a+)+b')]) AS s")
    h2 = f"WITH '{T}' AS t RETURN size(reduce(s = 0, i IN range(1, 2000) | s + t)) AS n"
    h2_list = f"WITH {L} AS l RETURN size(reduce(s = [], i IN range(1, 1300) | s + l)) AS n"
    cases: list[dict[str, object]] = [
        dict(honest, id="h0-before"),
        {"id": "p1-regex", "gold": "RETURN 0 AS s", "predicted": h1},
        {"id": "p2-reduce", "gold": "RETURN 0 AS n", "predicted": h2},
        {"id": "p3-reduce-list", "gold": "RETURN 0 AS n", "predicted": h2_list},
        {"id": "g1-regex", "gold": h1, "predicted": "RETURN 0 AS s"},
        {"id": "g2-reduce", "gold": h2, "predicted": "RETURN 0 AS n"},
        dict(honest, id="h1-after"),
        {"id": "h2-honest-regex",
         "gold": "MATCH (n:Movie) WHERE size(string.matchRegEx(n.title, '(?i)the.*')) > 0 "
                 "RETURN n.title AS t ORDER BY t",
         "predicted": "MATCH (m:Movie) WHERE size(string.matchRegEx(m.title, '^The')) > 0 "
                      "RETURN m.title AS t ORDER BY t"},
    ]
    with running_server(tmp_path) as own:
        _suite(pytester.path, {"type": "bolt", "url": own.url, "timeout": 20,
                               "rehearse": False}, cases)
        try:
            _, report = run_report(pytester, "-p", "no:cacheprovider", "--queryeval-no-cache")
        finally:
            own.unstick()
        assert own.running() == 0
    reasons = {cid: str(report.by_id[cid]) for cid in report.outcomes}
    assert report.outcomes["h0-before"] == "passed"
    for cid, why in (("p1-regex", "inside an iteration"), ("p2-reduce", "copies its accum"),
                     ("p3-reduce-list", "copies its accum")):
        assert report.outcomes[cid] == "failed", reasons[cid]
        assert why in reasons[cid], reasons[cid]
    for cid, why in (("g1-regex", "inside an iteration"), ("g2-reduce", "copies its accum")):
        assert report.outcomes[cid] == "error", reasons[cid]
        assert why in reasons[cid], reasons[cid]
    assert report.outcomes["h1-after"] == "passed"
    assert report.outcomes["h2-honest-regex"] == "passed", reasons["h2-honest-regex"]
