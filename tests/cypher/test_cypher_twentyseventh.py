"""Issue 58, the twenty-seventh hostile re-probe of the Cypher kind, on a real FalkorDB server.

Every hostile form escaped only with ``rehearse: false``, kept the server busy past the
plugin's 3 s timeout, and later honest golds timed out. H1 and H2: a backquoted part of a
called name (```string`.`matchRegEx```, ``string.`replaceRegEx```), which FalkorDB takes,
hid the call from the regular-expression check and from the growth bounds (1.84 GB resident
against a 256 MB cap). H3: ``(?x)`` extended mode, whose spaces and comments oniguruma skips,
read as if a space were an atom: ``'(?x)(a{1,16}) {1,16}b'`` is a nested quantifier. H4: a
string the query built (``WITH {title: ...} AS `m```, then ``[m]``) weighed as a matched node's
property. Now a backquoted part of a called name is refused, and the bounds read it as the
name it stands for; the ``x`` flag is refused; a subject's node must be bound by a ``MATCH``
pattern and by nothing else under any spelling. M1: ``toLower``, ``toUpper`` and ``trim`` of a
matched property weigh what the property weighs (FalkorDB maps a character to one character).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_queryeval.cypher import guard
from pytest_queryeval.cypher.bolt import BoltSource
from pytest_queryeval.cypher.regexes import degree
from pytest_queryeval.errors import QueryRefused
from tests.cypher.test_bolt import run_on_server
from tests.cypher.test_cypher_twentysixth import RUNS, _sent
from tests.fixtures.bolt_server import require, running_server

X = "x" * 100
#: An unrehearsed prediction's refusal of a pattern outside the linear class (the thirty-third
#: round): the reason such a prediction gets where a gold gets the weighing's.
OUTSIDE = "outside the linear class"
BUILT = f"string.join([i IN range(1, 30) | '{X}'], '')"  # 3,000 characters

#: H1 and H2 (c27/bt_gv.out, grow27.out): each spelling of a backquoted called name.
BACKQUOTED = {
    "h1-both": f"RETURN size([i IN range(1, 20) | `string`.`matchRegEx`('{RUNS}', "
               "'(a+)+b')]) AS s",
    "h1-name": f"RETURN size([i IN range(1, 20) | string.`matchRegEx`('{RUNS}', '(a+)+b')]) "
               "AS s",
    "h1-namespace": f"RETURN size([i IN range(1, 20) | `string`.matchRegEx('{RUNS}', "
                    "'(a+)+b')]) AS s",
    "h1-spaced": f"RETURN string . `matchRegEx`('{RUNS}', '(a+)+b') AS s",
    "h2-replace": f"RETURN size(reduce(s = 'x', i IN range(1, 3) | "
                  f"`string`.`replaceRegEx`(s, 'x', '{'x' * 1000}'))) AS n",
    "h2-nested": "RETURN size(" + "`string`.`replaceRegEx`(" * 5 + "'x'"
                 + ", 'x', 'xxxxxxxxxx')" * 5 + ") AS n",
}
#: H3 (c27/deg.out): the extended-mode flag, however it is written.
EXTENDED = ["(?x)(a{1,16}) {1,16}b", "(?x)(a+) +b", "(?x)(a+)\t+b", "(?x)(a+)#c\n+b",
            "(?x) (a+) + b", "(?x:(a+) +b)", "(?x-i)(a+) +b", "(?ix)(a+) +b", "(?i-x)a"]
#: H4 (c27/len27.out): a built string bound under another spelling, a list taken for a
#: pattern.
BUILT_SUBJECTS = {
    "h4-quoted-as": f"WITH {{title: {BUILT}}} AS `m` RETURN size([m]) AS z, "
                    "size(string.matchRegEx(m.title, 'x.*x.*y')) AS r",
    "h4-parenthesised": f"WITH {{title: {BUILT}}} AS `m` RETURN size([(m)]) AS z, "
                        "size(string.matchRegEx(m.title, 'x.*x.*y')) AS r",
    "h4-list-returned": f"WITH {{title: {BUILT}}} AS `m` RETURN [m] AS z, "
                        "size(string.matchRegEx(m.title, 'x.*x.*y')) AS r",
    "h4-relationship-alike": f"WITH {{title: {BUILT}}} AS `m` RETURN size([[m]]) AS z, "
                             "size(string.matchRegEx(m.title, 'x.*x.*y')) AS r",
}
#: Honest subjects and patterns, sent as before (M1: the length-keeping calls, now sent).
HONEST = [
    "MATCH (m:Movie) WHERE size(string.matchRegEx(m.title, '^The')) > 0 RETURN m.title AS t",
    "MATCH (n:Movie) RETURN string.matchRegEx(n.title, '(?i)^the\\\\s') AS m",
    "MATCH (m:Movie) RETURN string.matchRegEx(toLower(m.title), 'matrix') AS r",
    "MATCH (m:Movie) RETURN string.matchRegEx(toUpper(trim(m.title)), '^THE.*X') AS r",
    "MATCH (a:Person)-[r:ACTED_IN]->(m:Movie) RETURN string.matchRegEx(m.title, 'x.*y') AS t",
    "MATCH (a:Person)<-[r:ACTED_IN]-(m) RETURN string.matchRegEx(r.role, '^Ne') AS t",
    "OPTIONAL MATCH p = (`m`:Movie) RETURN string.matchRegEx(m.title, '^The') AS t",
    "MATCH (a:Person)-[:ACTED_IN]->(m:Movie) WHERE string.matchRegEx(a.name, '^K') "
    "RETURN a.name AS n",
]
#: Honest forms still refused, which docs/cypher.md names with what to write instead.
STILL_REFUSED = {
    "alias": "MATCH (m:Movie) WITH m.title AS t WHERE size(string.matchRegEx(t, '^The')) > 0 "
             "RETURN t",
    "three-parts": "MATCH (p:Person) RETURN string.matchRegEx(p.name, "
                   "'^\\\\w+\\\\s\\\\w+\\\\s\\\\w+$') AS n",
}


@pytest.mark.parametrize("query", list(BACKQUOTED.values()), ids=list(BACKQUOTED))
def test_a_backquoted_part_of_a_called_name_is_not_sent(query: str) -> None:
    with pytest.raises(QueryRefused, match="a function named with a backquoted part"):
        _sent(query)


@pytest.mark.parametrize(("query", "why"), [
    (BACKQUOTED["h1-both"], "inside an iteration"),
    (BACKQUOTED["h2-replace"], "grows it, 1,001-fold at each step"),
    (BACKQUOTED["h2-nested"], "grown up to|more than 10,000"),
    (f"RETURN `string`.`matchRegEx`('{RUNS}', '(a+)+b') AS s", "a repeated group")])
def test_the_bounds_read_a_backquoted_name_as_the_server_does(query: str, why: str) -> None:
    """Without the guard's refusal (:func:`guard.check_costs` alone, as a rehearsed source
    checks a gold), the bounds still see the call the server runs."""
    with pytest.raises(QueryRefused, match=why):
        guard.check_costs(query)


@pytest.mark.parametrize("pattern", EXTENDED)
def test_the_extended_mode_flag_is_refused(pattern: str) -> None:
    with pytest.raises(ValueError, match="extended-mode flag x"):
        degree(pattern)
    literal = pattern.replace("\\", "\\\\").replace("\n", "\\n").replace("\t", "\\t")
    query = ", ".join(f"size(string.matchRegEx('{('a' * 22 + '!') * 10}', '{literal}')) AS s{j}"
                      for j in range(10))
    with pytest.raises(QueryRefused, match="extended-mode flag x"):
        _sent("RETURN " + query)


@pytest.mark.parametrize("query", list(BUILT_SUBJECTS.values()), ids=list(BUILT_SUBJECTS))
def test_a_built_subject_is_not_taken_for_a_matched_property(query: str) -> None:
    with pytest.raises(QueryRefused, match="neither a string literal nor a property"):
        _sent(query)


@pytest.mark.parametrize("query", HONEST)
def test_honest_subjects_are_sent(query: str) -> None:
    _sent(query)


@pytest.mark.parametrize(("query", "why"), [
    (STILL_REFUSED["alias"], "neither a string literal nor a property"),
    (STILL_REFUSED["three-parts"], "3 repeated parts, more than 2")],
    ids=list(STILL_REFUSED))
def test_the_forms_docs_name_as_refused_still_are(query: str, why: str) -> None:
    with pytest.raises(QueryRefused, match=why):
        _sent(query)


def test_the_hostile_forms_are_refused_by_the_source_unsent(tmp_path: Path) -> None:
    """H1 to H4 refused by a ``rehearse: false`` source on a server of its own, prediction
    and gold; the server idle after; the honest forms, toLower of a property among them,
    answered."""
    require()
    hostile = {BACKQUOTED["h1-both"]: "backquoted part", BACKQUOTED["h2-replace"]:
               "backquoted part", "RETURN string.matchRegEx('aaa', '(?x)(a{1,16}) {1,16}b') "
               "AS s": "extended-mode flag x", BUILT_SUBJECTS["h4-quoted-as"]: "neither a"}
    predicted = {q: OUTSIDE for q, why in hostile.items() if why in ("extended-mode flag x",
                                                                      "neither a")}
    with running_server(tmp_path) as own:
        src = BoltSource.from_spec("g", {"type": "bolt", "url": own.url, "timeout": 20,
                                         "rehearse": False})
        try:
            for trusted in (False, True):
                for query, why in hostile.items():
                    with pytest.raises(QueryRefused,
                                       match=why if trusted else predicted.get(query, why)):
                        src.execute(query, trusted=trusted)
            rows = src.execute("MATCH (m:Movie) WHERE size(string.matchRegEx(toLower(m.title), "
                               "'matrix')) > 0 RETURN m.title AS t ORDER BY t").rows
            assert [r[0] for r in rows] == ["The Matrix", "The Matrix Reloaded"]
        finally:
            src.close()
        assert own.running() == 0


def test_the_honest_cases_after_the_hostile_ones_pass(pytester: pytest.Pytester,
                                                      tmp_path: Path) -> None:
    """H1 to H4 end to end with ``rehearse: false``, on a server of its own, as predictions
    and golds. The inputs are small enough that the server answers each at once: before the
    fix they were sent and answered; now each is refused at its text, unsent."""
    require()
    hostile = {
        "h1": ("RETURN size([i IN range(1, 3) | `string`.`matchRegEx`('aaaa!', '(a+)+b')]) "
               "AS s", "backquoted part"),
        "h2": ("RETURN size(reduce(s = 'x', i IN range(1, 2) | string.`replaceRegEx`(s, 'x', "
               "'xx'))) AS s", "backquoted part"),
        "h3": ("RETURN size(string.matchRegEx('aaaa!', '(?x)(a{1,16}) {1,16}b')) AS s",
               "extended-mode flag x", OUTSIDE),
        "h4": ("WITH {title: 'xxxx'} AS `m` RETURN size([m]) AS z, "
               "size(string.matchRegEx(m.title, 'x.*x.*y')) AS s", "neither a string", OUTSIDE),
    }
    refused_unsent_then_honest_pass(pytester, tmp_path, hostile, {
        "gold": "MATCH (n:Movie) WHERE size(string.matchRegEx(toLower(n.title), 'matrix')) > 0 "
                "RETURN n.title AS t ORDER BY t",
        "predicted": "MATCH (m:Movie) WHERE size(string.matchRegEx(m.title, 'Matrix')) > 0 "
                     "RETURN m.title AS t ORDER BY t"})


def refused_unsent_then_honest_pass(pytester: pytest.Pytester, tmp_path: Path,
                                    hostile: dict[str, tuple[str, ...]],
                                    honest_regex: dict[str, object]) -> None:
    """Each ``hostile`` query (name: query and a word of its refusal) as a prediction and as
    a gold of a ``rehearse: false`` suite on a server of its own, between honest cases and
    before ``honest_regex``: each prediction fails and each gold errors with the refusal (a
    third element: the prediction's own, where it differs; since the thirty-third round an
    unrehearsed prediction's pattern must be of the linear class), the server runs nothing
    after the suite, and the honest cases pass."""
    honest = {"gold": "MATCH (n:Movie) RETURN n.title AS t ORDER BY t",
              "predicted": "MATCH (m:Movie) RETURN m.title AS t ORDER BY t"}
    cases: list[dict[str, object]] = [dict(honest, id="h0-before")]
    for name, (query, *_) in hostile.items():
        cases.append({"id": f"p-{name}", "gold": "RETURN 0 AS s", "predicted": query})
        cases.append({"id": f"g-{name}", "gold": query, "predicted": "RETURN 0 AS s"})
    cases += [dict(honest, id="h1-after"), dict(honest_regex, id="h2-honest-regex")]
    with running_server(tmp_path) as own:
        report = run_on_server(pytester, own, cases, rehearse=False)
        assert own.running() == 0
    reasons = {cid: str(report.by_id[cid]) for cid in report.outcomes}
    for name, (_, why, *predicted) in hostile.items():
        assert report.outcomes[f"p-{name}"] == "failed", reasons[f"p-{name}"]
        assert (predicted or [why])[0] in reasons[f"p-{name}"], reasons[f"p-{name}"]
        assert report.outcomes[f"g-{name}"] == "error", reasons[f"g-{name}"]
        assert why in reasons[f"g-{name}"], reasons[f"g-{name}"]
    for cid in ("h0-before", "h1-after", "h2-honest-regex"):
        assert report.outcomes[cid] == "passed", reasons[cid]
