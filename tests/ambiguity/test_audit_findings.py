"""The gold audit's findings for ambiguous and unanswerable questions, on a real SQLite
database: ``readings-not-distinct`` (Ambrosia's DublicatesError, found before any run) and
``abstain-answerable`` (an ``expect: abstain`` case whose ``probe:`` returns a value)."""

from __future__ import annotations

import sqlite3

import pytest
from tests.support import run_report, write_suite

X = "SELECT id FROM t WHERE grp = 'x'"
CONFIG = {"datasources": {"db": {"type": "sqlite", "path": "db.sqlite"}}}


@pytest.fixture
def audited(pytester: pytest.Pytester) -> pytest.Pytester:
    write_suite(pytester.path, CONFIG, {"test_q.yaml": {"kind": "sql", "datasource": "db", "cases": [
        {"id": "distinct", "interpretations": [X, "SELECT id FROM t WHERE grp = 'y'"]},
        {"id": "same", "interpretations": [
            {"gold": X, "label": "group x"}, {"gold": "SELECT 'z'", "label": "z"},
            {"gold": "SELECT id FROM t WHERE id < 3", "label": "small ids"}]},
        {"id": "empty-reading", "interpretations": [X, "SELECT id FROM t WHERE id > 99"]},
        {"id": "salary", "question": "What is each id's salary?", "expect": "abstain",
         "probe": "SELECT id, salary FROM t"},
        {"id": "answerable", "question": "Which group is id 1 in?", "expect": "abstain",
         "probe": ["SELECT salary FROM t", "SELECT grp FROM t WHERE id = 1"]},
        {"id": "null-only", "question": "What is the grade of id 3?", "expect": "abstain",
         "probe": "SELECT NULL FROM t WHERE id = 3"},
        {"id": "no-probe", "question": "Why?", "expect": "abstain"},
    ]}})
    with sqlite3.connect(pytester.path / "db.sqlite") as con:
        con.execute("CREATE TABLE t (id INTEGER, grp TEXT)")
        con.executemany("INSERT INTO t VALUES (?, ?)", [(1, "x"), (2, "x"), (3, "y")])
    con.close()
    return pytester


def _findings(case: dict[str, object]) -> list[dict[str, object]]:
    details = case["details"]
    assert isinstance(details, dict)
    return list(details["audit"]["findings"])


def test_findings(audited: pytest.Pytester) -> None:
    _, report = run_report(audited, "--queryeval-audit-golds")
    assert report.outcomes == {"distinct": "passed", "same": "failed", "empty-reading": "passed",
                               "salary": "passed", "answerable": "failed",
                               "null-only": "passed", "no-probe": "passed"}
    cases = report.by_id
    same = _findings(cases["same"])
    assert [f["code"] for f in same] == ["readings-not-distinct"]
    assert "interpretations[0] (group x) and interpretations[2] (small ids) return the same " \
           "result (2 rows)" in str(same[0]["message"])
    assert [f["code"] for f in _findings(cases["empty-reading"])] == ["empty-result"]
    answerable = _findings(cases["answerable"])
    assert [f["code"] for f in answerable] == ["abstain-answerable"]
    assert str(answerable[0]["message"]).startswith("probe[1] returns 1 rows (first: ('x',))")
    for case_id in ("distinct", "salary", "null-only", "no-probe"):
        assert _findings(cases[case_id]) == [], case_id


def test_probe_on_a_case_that_expects_an_answer_is_a_located_error(pytester: pytest.Pytester) -> None:
    write_suite(pytester.path, CONFIG, {"test_q.yaml": {"kind": "sql", "datasource": "db", "cases": [
        {"id": "a", "gold": "SELECT 1", "predicted": "SELECT 1", "probe": "SELECT 1"}]}})
    sqlite3.connect(pytester.path / "db.sqlite").close()
    result, report = run_report(pytester)
    assert report.outcomes == {"a": "error"}
    result.stdout.fnmatch_lines(["*test_q.yaml:*: cases?0?.probe: only for an expect: abstain case*"])
