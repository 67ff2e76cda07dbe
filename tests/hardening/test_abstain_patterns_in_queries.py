"""Issue 50 item 4: ``abstain_patterns`` do not match inside a query.

With the docs' own ``abstain_patterns: ["not in the (data|database)"]``, ``SELECT FirstName,
'not in the data' AS salary FROM Employee`` was credited as an abstention on a question that
expects one, and a right answer ``SELECT 'not in the database' AS note`` failed as
``abstained``. A text that is a query of the case's kind (also inside the fence that encloses
it) is now never a refusal, and the fenced query code of a longer text is not searched; prose
still is. End to end on Chinook, and on a SPARQL and a JSON text.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pytest_queryeval.engine.abstain import abstention
from tests.support import run_report, write_suite

ROOT = Path(__file__).resolve().parents[2]
PATTERNS = ["^I cannot answer", "not in the (data|database)"]
NOTE = "SELECT 'not in the database' AS note"
FENCED_NOTE = f"```sql\n{NOTE}\n```"
CASES = [
    # (id, expect, predicted, gold)
    ("salary-as-text", "abstain", "SELECT FirstName, 'not in the data' AS salary FROM Employee",
     None),
    ("fenced-salary", "abstain",
     "Here it is:\n```sql\nSELECT FirstName, 'not in the data' AS salary FROM Employee\n```",
     None),
    ("note", None, NOTE, NOTE),
    ("fenced-note", None, FENCED_NOTE, NOTE),
    ("commented-note", None, f"-- the note\n{NOTE}", NOTE),
    ("refusal", "abstain", "Sorry, the salary is not in the database.", None),
    ("refusal-before-code", "abstain",
     "The salary is not in the data; the closest I can do:\n```sql\nSELECT 1\n```", None),
    ("refusal-in-a-fence", "abstain", "```\nI cannot answer: not in the data\n```", None),
]


def test_a_pattern_never_matches_inside_a_query(pytester: pytest.Pytester) -> None:
    shutil.copyfile(ROOT / "example_suite" / "data" / "chinook.sqlite",
                    pytester.path / "chinook.sqlite")
    cases = []
    for case_id, expect, predicted, gold in CASES:
        case = {"id": case_id, "question": case_id, "predicted": predicted}
        case.update({"expect": expect} if expect else {"gold": gold})
        cases.append(case)
    write_suite(pytester.path, {"datasources": {"db": {"type": "sqlite",
                                                       "path": "chinook.sqlite"}},
                                "abstain_patterns": PATTERNS},
                {"test_q.yaml": {"kind": "sql", "datasource": "db", "cases": cases}})
    _, report = run_report(pytester)
    assert report.outcomes == {  # before: salary-as-text, fenced-salary passed; note, ... failed
        "salary-as-text": "failed", "fenced-salary": "failed", "note": "passed",
        "fenced-note": "passed", "commented-note": "passed", "refusal": "passed",
        "refusal-before-code": "passed", "refusal-in-a-fence": "passed"}
    assert "expects no answer (expect: abstain)" in report.by_id["salary-as-text"]["reason"]
    assert report.by_id["refusal"]["details"]["abstention"]["how"] == \
        "refusal matching abstain_patterns 'not in the (data|database)'"
    assert "abstention" not in report.by_id["note"]["details"]


@pytest.mark.parametrize(("kind", "text", "refusal"), [
    ("sparql", "SELECT ?x WHERE { ?x rdfs:label 'not in the data' }", False),
    ("sparql", "PREFIX ex: <http://ex/>\nASK { ex:a ex:note 'not in the database' }", False),
    ("sparql", "That is not in the data.", True),
    ("json", '{"answer": "not in the data"}', False),
    ("json", "not in the data", True),
    ("sql", "(SELECT 'not in the data')", False),
    ("sql", "/* note */ WITH t AS (SELECT 1) SELECT 'not in the data' FROM t", False),
])
def test_what_is_a_query_of_each_kind(kind: str, text: str, refusal: bool) -> None:
    assert (abstention(text, PATTERNS, kind=kind) is not None) is refusal
