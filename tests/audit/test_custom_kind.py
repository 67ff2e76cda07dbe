"""A custom kind takes part in the gold audit: its own ``audit`` method, else the self-check."""

from __future__ import annotations

import json

import pytest

from tests.support import kind_source, read_report

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

CONFTEST = '''
from pytest_queryeval.audit import self_check
from pytest_queryeval.model import Scored


''' + kind_source(
    "Echo", "echo", "same",
    '        return Scored({"same": float(prediction == case.gold and prediction != "broken")})',
    doc='Scores 1 when the prediction is the gold word and the word is not "broken".') + '''

class LintedEcho(Echo):
    """Echo with an audit of its own: a gold word in capitals reads the clock."""
    name = "linted-echo"

    def audit(self, case, ctx, result):
        if case.gold.isupper():
            result.add("clock-dependent", f"{case.gold} is a clock word")
        self_check(case, self, ctx, result, case.gold, None)


def pytest_queryeval_kinds(config):
    return {"echo": Echo, "linted-echo": LintedEcho}
'''


def test_a_custom_kind_audits_its_golds(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makefile(".yaml", queryeval="{}")  # a suite: its test_*.yaml are case files
    cases = [{"id": "fine", "gold": "word", "thresholds": {"same": 1}},
             {"id": "broken", "gold": "broken", "thresholds": {"same": 1}}]
    pytester.makefile(".yaml", test_plain=json.dumps({"kind": "echo", "cases": cases}))
    pytester.makefile(".yaml", test_linted=json.dumps({"kind": "linted-echo", "cases": [
        *({**c, "id": f"linted-{c['id']}"} for c in cases),
        {"id": "linted-now", "gold": "NOW", "thresholds": {"same": 1}}]}))
    result = pytester.runpytest("-p", "no:cacheprovider", "-p", "no:randomly",
                                "--queryeval-audit-golds", "--queryeval-json=audit.json")
    result.assert_outcomes(passed=3, failed=2)
    report = read_report(pytester.path / "audit.json")
    found = {(f["id"], f["code"]) for f in report["audit"]["findings"]}
    assert found == {("broken", "gold-below-threshold"), ("linted-broken", "gold-below-threshold"),
                     ("linted-now", "clock-dependent")}
    now = next(f for f in report["audit"]["findings"] if f["id"] == "linted-now")
    assert (now["severity"], now["message"]) == ("warning", "NOW is a clock word")


#: Two kinds whose golds are run on a SQLite source as they are: ``Plain`` answers nothing
#: about its texts, ``Declared`` answers SQL's rules. Only the second gets them.
SYNTAX_CONFTEST = '''
from pytest_queryeval.audit.query import SQL_RULES, audit_query
from pytest_queryeval.model import Scored


''' + kind_source("Plain", "plain-query", "rows", '''\
        src = ctx.source(case)
        gold = src.execute(case.gold, trusted=True).rows
        return Scored({"rows": float(src.execute(prediction).rows == gold)})''') + '''
    def audit(self, case, ctx, result):
        audit_query(case, self, ctx, result)


class Declared(Plain):
    name = "declared-sql"

    def query_rules(self):
        return SQL_RULES


def pytest_queryeval_kinds(config):
    return {"plain-query": Plain, "declared-sql": Declared}
'''

#: A gold SQL's rules would flag twice: it calls RANDOM() and its LIMIT cuts through a tie.
TIED = "SELECT x FROM t WHERE RANDOM() IS NOT NULL ORDER BY y LIMIT 1"


def test_a_kind_that_answers_no_rules_gets_no_sql_rules(pytester: pytest.Pytester) -> None:
    import sqlite3

    with sqlite3.connect(pytester.path / "t.sqlite") as con:
        con.executescript("CREATE TABLE t (x TEXT, y INTEGER); "
                          "INSERT INTO t VALUES ('a', 1), ('b', 1), ('c', 2);")
    pytester.makeconftest(SYNTAX_CONFTEST)
    pytester.makefile(".yaml", queryeval=json.dumps(
        {"datasources": {"db": {"type": "sqlite", "path": "t.sqlite"}}}))
    for kind in ("plain-query", "declared-sql"):
        pytester.makefile(".yaml", **{f"test_{kind.replace('-', '_')}": json.dumps(
            {"kind": kind, "datasource": "db", "cases": [
                {"id": kind, "gold": TIED, "thresholds": {"rows": 1}}]})})
    result = pytester.runpytest("-p", "no:cacheprovider", "-p", "no:randomly",
                                "--queryeval-audit-golds=warn", "--queryeval-json=audit.json")
    result.assert_outcomes(passed=2)
    report = read_report(pytester.path / "audit.json")
    found = sorted((f["id"], f["code"]) for f in report["audit"]["findings"])
    assert found == [("declared-sql", "nondeterministic"), ("declared-sql", "ties-at-limit")]


def test_the_judge_reads_a_kind_that_declares_no_syntax_as_it_is() -> None:
    from pytest_queryeval import kinds as kind_registry
    from pytest_queryeval.judge.prompt import strip_comments
    from pytest_queryeval.kindregistry import declared_text

    class Graph:
        name = "graph"
        language_name = "Cypher"

    kind_registry.register("graph", Graph)
    try:
        text = "MATCH (n) -- an edge, not a comment\nRETURN n /* kept */"
        syntax = declared_text("graph", "query_syntax")
        assert syntax is None
        assert strip_comments(text, syntax) == text  # SQL's comment rules left it mangled
        assert strip_comments(text, "sql") == "MATCH (n)\nRETURN n"
        assert declared_text("sql", "query_syntax") == "sql"
    finally:
        kind_registry.unregister("graph")
