"""The judge in every report: the "rescued by the judge" and "overturned" lists with their
reasons in the terminal, JSON, HTML, Markdown and Excel reports, judge_ex aggregated per kind
and difficulty, and junit properties (the stand-in judge gives deterministic verdicts)."""

from __future__ import annotations

import json
import sqlite3
import xml.etree.ElementTree as ET

import pytest

from tests.fixtures.openai_standin import KEY, MODEL
from tests.support import read_report

pytest.importorskip("openai")
openpyxl = pytest.importorskip("openpyxl")

PRED_LABEL = "SELECT count(*), 'artists' FROM artists"
PRED_ID = "SELECT count(id) FROM artists"
ACCEPT = json.dumps({"category": "gold_wrong", "reason": "the label column is harmless"})
REJECT = json.dumps({"category": "wrong", "reason": "matches only by coincidence"})


def test_rescued_and_overturned_cases_are_listed_in_every_report(pytester, openai_standin,
                                                                monkeypatch):
    pytester.makeini("[pytest]\nqueryeval_files = test_*.yaml\n")
    conn = sqlite3.connect(pytester.path / "music.sqlite")
    conn.execute("CREATE TABLE artists (id INTEGER PRIMARY KEY, name TEXT)")
    conn.executemany("INSERT INTO artists VALUES (?, ?)", [(1, "AC/DC"), (2, "Accept")])
    conn.commit()
    conn.close()
    openai_standin.containing = {PRED_LABEL: ACCEPT, PRED_ID: REJECT}
    pytester.makefile(".yaml", queryeval=json.dumps({
        "datasources": {"music": {"type": "sqlite", "path": "music.sqlite"}},
        "judge": {"model": MODEL, "base_url": openai_standin.base_url,
                  "api_key": "${QE_JUDGE_KEY}", "retries": 0, "when": "always"}}))
    pytester.makefile(".yaml", test_music=json.dumps({
        "kind": "sql", "datasource": "music", "difficulty": "easy",
        "thresholds": {"execution_accuracy": 1.0}, "cases": [
            {"id": "label", "question": "How many artists?",
             "gold": "SELECT count(*) FROM artists", "predicted": PRED_LABEL},
            {"id": "ids", "question": "How many artists are there?",
             "gold": "SELECT count(*) FROM artists", "predicted": PRED_ID}]}))
    monkeypatch.setenv("QE_JUDGE_KEY", KEY)
    result = pytester.runpytest(
        "--queryeval-json=r.json", "--queryeval-html=r.html", "--queryeval-markdown=r.md",
        "--queryeval-xlsx=r.xlsx", "--junitxml=j.xml", "-p", "no:cacheprovider")
    # the verdicts stand on execution_accuracy: the judge only reports here
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([
        "judge: 2 cases judged (2 asked in 2 calls, 0 pinned), 1 rescued, 1 overturned, "
        "0 judge errors",
        "rescued by the judge (execution failed, the judge accepts):",
        "  label [sql/easy] gold_wrong: the label column is harmless",
        "overturned by the judge (execution passed, the judge rejects):",
        "  ids [sql/easy] wrong: matches only by coincidence"])
    report = read_report(pytester.path / "r.json")
    judge = report["judge"]
    assert [i["id"] for i in judge["rescued"]] == ["label"]
    assert [i["id"] for i in judge["overturned"]] == ["ids"]
    assert judge["rescued"][0]["reason"] == "the label column is harmless"
    assert report["aggregates"]["by_kind"]["sql"]["metrics"]["judge_ex"]["mean"] == 0.5
    assert report["aggregates"]["by_kind_difficulty"]["sql"]["easy"]["metrics"]["judge_ex"][
        "mean"] == 0.5
    html = (pytester.path / "r.html").read_text()
    assert '<ul id="judge-rescued"><li><code>label</code> sql/easy: <strong>gold_wrong' in html
    assert '<ul id="judge-overturned"><li><code>ids</code>' in html
    md = (pytester.path / "r.md").read_text()
    assert "**Rescued by the judge** (1)" in md
    assert "| `label` | sql | easy | gold\\_wrong | the label column is harmless |" in md
    sheet = openpyxl.load_workbook(pytester.path / "r.xlsx")["Judge"]
    rows = [[c.value for c in row] for row in sheet.iter_rows(min_row=2)]
    assert rows == [["rescued", "label", "sql", "easy", "gold_wrong", "no",
                     "the label column is harmless"],
                    ["overturned", "ids", "sql", "easy", "wrong", "no",
                     "matches only by coincidence"]]
    props = {p.get("name"): p.get("value")
             for p in ET.parse(pytester.path / "j.xml").iter("property")}
    assert props["queryeval.judge.rescued"] == "1"
    assert props["queryeval.judge.overturned"] == "1"
    assert props["queryeval.mean.judge_ex"] == "0.5"
    assert props["queryeval.sql.easy.mean.judge_ex"] == "0.5"
