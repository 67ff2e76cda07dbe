"""``queryeval-import spider2-lite`` on the repository's real eval entries and gold CSVs."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest
import yaml

from pytest_queryeval.importers.cli import main
from tests.support import read_report


@pytest.fixture
def gold_dir(shared_data: Path, tmp_path: Path) -> Path:
    """The vendored Spider 2.0-lite sample laid out as the repository's ``gold/`` folder."""
    root = tmp_path / "gold"
    shutil.copytree(shared_data / "spider2" / "exec_result", root / "exec_result")
    shutil.copy(shared_data / "spider2" / "eval.jsonl", root / "spider2lite_eval.jsonl")
    shutil.copy(shared_data / "spider2" / "questions.jsonl", tmp_path / "questions.jsonl")
    return root


def test_writes_cases_with_gold_files_condition_cols_and_ignore_order(gold_dir: Path,
                                                                      tmp_path: Path) -> None:
    out = tmp_path / "suite"
    questions = gold_dir.parent / "questions.jsonl"
    assert main(["spider2-lite", "--gold-dir", str(gold_dir), "--questions", str(questions),
                 "--out", str(out)]) == 0
    suite = yaml.safe_load((out / "test_spider2_lite.yaml").read_text())
    cases = {c["id"]: c for c in suite["cases"]}
    assert len(cases) == 37
    # bq002: three gold files, per-gold condition_cols, as in spider2lite_eval.jsonl
    # outside the suite: relative to it all the same, so the suite can be committed
    exec_result = f"../{gold_dir.name}/exec_result"
    assert cases["bq002"]["gold_result"] == [f"{exec_result}/bq002_{x}.csv" for x in "abc"]
    assert cases["bq002"]["condition_cols"] == [[1, 2, 3], [1, 2, 3], [0]]
    assert cases["bq002"]["ignore_order"] is True
    assert cases["bq002"]["datasource"] == "bigquery"
    # bq051: <id>.csv alone is the single-gold mode (a string, not a list)
    assert cases["bq051"]["gold_result"] == f"{exec_result}/bq051.csv"
    assert cases["sf_bq421"]["datasource"] == "snowflake"
    assert "condition_cols" not in cases["bq011"]  # [] in the eval file: every column
    assert cases["local002"]["datasource"] == "E_commerce"  # the SQLite database's name
    assert cases["local002"]["question"].startswith("Can you calculate")
    header = (out / "test_spider2_lite.yaml").read_text().splitlines()[:3]
    assert header[0] == "# Written by `queryeval-import spider2-lite` from:"
    assert header[1].startswith("#   spider2lite_eval.jsonl (sha256 ")


def test_imported_local_suite_runs_and_scores(gold_dir: Path, tmp_path: Path,
                                              pytester: pytest.Pytester) -> None:
    """A local (SQLite) instance end to end: a database holding the gold's rows, a predicted
    .sql that returns them and one that does not."""
    questions = tmp_path / "spider2-lite.jsonl"
    questions.write_text(json.dumps({"instance_id": "local010", "db": "tiny",
                                     "question": "What is the answer?",
                                     "external_knowledge": None}) + "\n")
    gold = (gold_dir / "exec_result" / "local010.csv").read_text().splitlines()
    dbs = tmp_path / "dbs"
    dbs.mkdir()
    con = sqlite3.connect(dbs / "tiny.sqlite")
    con.execute("CREATE TABLE t(v)")
    con.executemany("INSERT INTO t VALUES (?)", [(line,) for line in gold[1:]])
    con.commit()
    con.close()
    preds = tmp_path / "preds"
    preds.mkdir()
    (preds / "local010.sql").write_text("```sql\nSELECT v FROM t\n```")
    out = pytester.path / "suite"
    assert main(["spider2-lite", "--gold-dir", str(gold_dir), "--questions", str(questions),
                 "--pred-dir", str(preds), "--sqlite-dir", str(dbs), "--out", str(out)]) == 0
    config = yaml.safe_load((out / "queryeval.yaml").read_text())
    assert config["datasources"]["tiny"]["type"] == "sqlite"
    pytester.makeini("[pytest]\nqueryeval_files = test_*.yaml\n")
    result = pytester.runpytest(str(out), "--queryeval-json=r.json")
    result.assert_outcomes(passed=1)
    report = read_report(pytester.path / "r.json")
    assert report["cases"][0]["metrics"]["spider2_ex"] == 1.0
    (preds / "local010.sql").write_text("SELECT 'nothing' FROM t")
    assert main(["spider2-lite", "--gold-dir", str(gold_dir), "--questions", str(questions),
                 "--pred-dir", str(preds), "--sqlite-dir", str(dbs), "--out", str(out)]) == 0
    pytester.runpytest(str(out)).assert_outcomes(failed=1)


def test_bad_eval_line_is_named(gold_dir: Path, tmp_path: Path,
                                capsys: pytest.CaptureFixture[str]) -> None:
    (gold_dir / "spider2lite_eval.jsonl").write_text('{"instance_id": "bq1"}\nnot json\n')
    assert main(["spider2-lite", "--gold-dir", str(gold_dir), "--out", str(tmp_path / "o")]) == 2
    assert "spider2lite_eval.jsonl:2: not a JSON object" in capsys.readouterr().err
