"""``queryeval-import bird`` / ``bird-predictions`` / ``livesqlbench``: the suites they write
run through the plugin on the real Chinook SQLite database, and bad input is a located error."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_queryeval.importers import bird, livesqlbench
from pytest_queryeval.importers.cli import main as cli
from tests.support import read_report

SEP = "\t----- bird -----\t"

BIRD_DATA = [
    {"question_id": 7, "db_id": "chinook", "question": "How many genres are there?",
     "evidence": "", "SQL": "SELECT COUNT(*) FROM Genre", "difficulty": "simple"},
    {"question_id": 12, "db_id": "chinook",
     "question": "What share of the customers live in the USA?",
     "evidence": "share = COUNT(Country = 'USA') * 100.0 / COUNT(*); in percent",
     "SQL": "SELECT CAST(SUM(Country = 'USA') AS REAL) * 100 / COUNT(*) FROM Customer",
     "difficulty": "moderate"},
    {"question_id": 30, "db_id": "chinook", "question": "Which artists have no album?",
     "evidence": "no album refers to AlbumId IS NULL",
     "SQL": "SELECT T1.Name FROM Artist AS T1 LEFT JOIN Album AS T2 ON T1.ArtistId = "
            "T2.ArtistId WHERE T2.AlbumId IS NULL", "difficulty": "challenging"},
]


@pytest.fixture
def chinook_dir(shared_data: Path, tmp_path: Path) -> Path:
    """BIRD's database layout: <root>/<db_id>/<db_id>.sqlite."""
    root = tmp_path / "dev_databases"
    (root / "chinook").mkdir(parents=True)
    shutil.copyfile(shared_data / "chinook" / "Chinook_Sqlite.sqlite",
                    root / "chinook" / "chinook.sqlite")
    return root


def _bird_files(tmp_path: Path) -> tuple[Path, Path]:
    data = tmp_path / "dev.json"
    data.write_text(json.dumps(BIRD_DATA, indent=1), encoding="utf-8")
    pred = tmp_path / "predict_dev.json"
    pred.write_text(json.dumps({
        "0": "SELECT count(GenreId) FROM Genre" + SEP + "chinook",
        "1": "SELECT 100.0 * SUM(Country = 'USA') / COUNT(*) FROM Customer" + SEP + "chinook",
        "2": "SELECT Name FROM Artist" + SEP + "chinook",
    }), encoding="utf-8")
    return data, pred


def test_bird_suite_runs_with_its_predictions(tmp_path: Path, chinook_dir: Path,
                                              pytester: pytest.Pytester) -> None:
    data, pred = _bird_files(tmp_path)
    out = pytester.path
    rc = cli(["bird", str(data), "--pred", str(pred), "--out", str(out),
              "--db", str(chinook_dir / "{db}" / "{db}.sqlite")])
    assert rc == 0
    text = (out / "test_bird.yaml").read_text(encoding="utf-8")
    assert text.startswith("# Written by `queryeval-import bird` from:\n#   dev.json (sha256 ")
    assert "predict_dev.json (sha256 " in text
    suite = yaml.safe_load(text)
    assert suite["cases"][1] == {
        "id": "bird-12", "question": BIRD_DATA[1]["question"],
        "evidence": BIRD_DATA[1]["evidence"], "gold": BIRD_DATA[1]["SQL"],
        "datasource": "chinook", "difficulty": "moderate", "tags": ["bird", "chinook"]}
    assert "evidence" not in suite["cases"][0]  # BIRD's empty evidence is no evidence
    config = yaml.safe_load((out / "queryeval.yaml").read_text(encoding="utf-8"))
    # the databases lie outside the suite: still a path relative to it (issue 43), which the
    # run below resolves against queryeval.yaml
    db = (chinook_dir / "chinook" / "chinook.sqlite").resolve()
    assert config["datasources"]["chinook"] == {
        "type": "sqlite", "path": Path(os.path.relpath(db, out.resolve())).as_posix()}
    assert config["datasources"]["chinook"]["path"].startswith("../")
    assert config["thresholds"] == {"bird_ex": 1.0}
    assert config["predictions"] == {"source": "file", "path": "predictions.jsonl"}
    result = pytester.runpytest("-p", "no:cacheprovider", "--queryeval-json=r.json")
    result.assert_outcomes(passed=2, failed=1)
    report = read_report(out / "r.json")
    by_id = {c["id"]: c for c in report["cases"]}
    assert by_id["bird-7"]["metrics"]["bird_ex"] == 1.0
    assert by_id["bird-12"]["metrics"]["bird_ex"] == 1.0
    assert by_id["bird-30"]["metrics"]["bird_ex"] == 0.0
    assert by_id["bird-30"]["difficulty"] == "challenging"


def test_bird_predictions_alone_and_their_checks(tmp_path: Path) -> None:
    data, pred = _bird_files(tmp_path)
    out = tmp_path / "p.jsonl"
    assert cli(["bird-predictions", str(data), str(pred), "--out", str(out)]) == 0
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert records[0] == {"id": "bird-7", "predicted": "SELECT count(GenreId) FROM Genre"}
    wrong_db = tmp_path / "wrong.json"
    wrong_db.write_text(json.dumps({"1": "SELECT 1" + SEP + "financial"}))
    with pytest.raises(bird.ImportProblem, match=r"wrong.json: 1: db_id 'financial', but the "
                                                 r"data item at that index is on 'chinook'"):
        bird.prediction_records(bird.read_data(data), bird.read_predictions(wrong_db),
                                "wrong.json")
    no_sep = tmp_path / "nosep.json"
    no_sep.write_text(json.dumps({"0": "SELECT 1"}))
    assert cli(["bird-predictions", str(data), str(no_sep), "--out", str(out)]) == 2


def test_real_mini_dev_prediction_file_parses(shared_data: Path) -> None:
    """mini_dev's own GPT-4 prediction file (CC BY-SA 4.0), as its evaluator reads it."""
    preds = bird.read_predictions(shared_data / "livesqlbench" /
                                  "predict_mini_dev_gpt-4_sqlite.json")
    assert sorted(preds) == list(range(500))
    assert {db for _, db in preds.values()} >= {"formula_1", "debit_card_specializing"}
    assert preds[0][0].startswith("SELECT\n    (SELECT COUNT(*) FROM customers WHERE Currency")
    assert preds[0][1] == "debit_card_specializing"
    assert all(SEP not in sql for sql, _ in preds.values())


@pytest.mark.parametrize(("data", "message"), [
    ({"db_id": "x"}, "expected a JSON list"),
    ([{"db_id": "x", "question": "q"}], "item 0: 'SQL' must be a non-empty string"),
    ([{"db_id": "x", "question": "q", "SQL": "SELECT 1", "evidence": 3}],
     "item 0: 'evidence' must be a string"),
    ([{"question_id": 1, "db_id": "x", "question": "q", "SQL": "SELECT 1"}] * 2,
     "item 1: duplicate question_id"),
])
def test_bird_bad_data_is_a_usage_error(tmp_path: Path, data: Any, message: str,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "dev.json"
    path.write_text(json.dumps(data))
    assert cli(["bird", str(path), "--out", str(tmp_path / "s")]) == 2
    assert message in capsys.readouterr().err


LSB_ITEMS: list[dict[str, Any]] = [
    {"instance_id": "chinook_1", "selected_database": "chinook",
     "query": "List the five longest tracks, longest first.",
     "sol_sql": ["SELECT DISTINCT Name FROM Track ORDER BY Milliseconds DESC LIMIT 5"],
     "external_knowledge": [3, 7], "preprocess_sql": [], "clean_up_sql": [],
     "test_cases": [], "category": "Query", "high_level": False,
     "conditions": {"decimal": -1, "distinct": True, "order": True},
     "difficulty_tier": "Simple"},
    {"instance_id": "chinook_2", "selected_database": "chinook",
     "query": "Average invoice total per country, two decimals.",
     "sol_sql": "SELECT BillingCountry, ROUND(AVG(Total), 2) FROM Invoice GROUP BY 1",
     "external_knowledge": "Invoice totals are in US dollars.",
     "category": "Query", "high_level": True, "conditions": {"order": False, "mystery": 1},
     "difficulty_tier": "Moderate"},
    {"instance_id": "chinook_3", "selected_database": "chinook", "query": "Add a genre.",
     "sol_sql": ["INSERT INTO Genre VALUES (99, 'Polka')"], "category": "Management",
     "test_cases": ["def test_case(pred_sqls, sol_sqls, db_name, conn):\n"
                    "    rows, _, _ = execute_queries('SELECT Name FROM Genre WHERE GenreId = 99',"
                    " db_name, conn)\n    assert rows == [('Polka',)]\n"],
     "difficulty_tier": "Simple"},
    {"instance_id": "chinook_4", "selected_database": "chinook", "query": "Hidden solution",
     "category": "Query", "conditions": {"order": False}},
    {"instance_id": "chinook_5", "selected_database": "chinook", "query": "Two statements",
     "sol_sql": ["SELECT 1", "SELECT 2"], "category": "Query"},
    {"instance_id": "chinook_6", "selected_database": "chinook", "query": "Needs setup",
     "sol_sql": ["SELECT 1"], "preprocess_sql": ["CREATE TEMP TABLE x (a int)"],
     "category": "Query"},
]


def test_livesqlbench_suite_runs_with_soft_ex(tmp_path: Path, chinook_dir: Path,
                                              pytester: pytest.Pytester,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "livesqlbench_data.jsonl"
    data.write_text("".join(json.dumps(i) + "\n" for i in LSB_ITEMS), encoding="utf-8")
    pred = tmp_path / "post_processed.jsonl"
    pred.write_text("".join(json.dumps(p) + "\n" for p in [
        {"instance_id": "chinook_1",
         "pred_sqls": ["-- longest first\nSELECT Name FROM Track ORDER BY Milliseconds DESC LIMIT 5"]},
        {"instance_id": "chinook_2",
         "pred_sqls": ["SELECT BillingCountry, AVG(Total) FROM Invoice GROUP BY 1 ORDER BY 2"]},
        {"instance_id": "chinook_3", "pred_sqls": ["INSERT INTO Genre VALUES (99, 'Polka')"]},
    ]), encoding="utf-8")
    out = pytester.path
    assert cli(["livesqlbench", str(data), "--pred", str(pred), "--out", str(out),
                "--db", str(chinook_dir / "{db}" / "{db}.sqlite")]) == 0
    printed = capsys.readouterr().out
    assert "(3 cases, 3 skipped)" in printed
    assert "chinook_2: conditions key(s) mystery dropped" in printed
    text = (out / "test_livesqlbench.yaml").read_text(encoding="utf-8")
    # a Management task is a task case of its own file, run with its test case (issue 28)
    task = yaml.safe_load((out / livesqlbench.TASKS_FILE).read_text(encoding="utf-8"))
    assert task["cases"][0]["id"] == "chinook_3"
    assert (task["cases"][0]["task"], task["cases"][0]["datasource"]) == ("dml", "chinook_sandbox")
    assert task["cases"][0]["checks"] == [{"livesqlbench_test": LSB_ITEMS[2]["test_cases"][0]}]
    assert "#   chinook_4: no sol_sql (the public file omits it" in text
    assert "#   chinook_5: sol_sql has 2 statements" in text
    assert "#   chinook_6: preprocess_sql changes the database" in text
    suite = yaml.safe_load(text)
    assert suite["thresholds"] == {"soft_ex": 1.0}
    first, second = suite["cases"]
    assert first == {
        "id": "chinook_1", "question": LSB_ITEMS[0]["query"], "external_knowledge": [3, 7],
        "gold": LSB_ITEMS[0]["sol_sql"][0], "datasource": "chinook",
        "conditions": {"decimal": -1, "distinct": True, "order": True},
        "difficulty": "simple", "tags": ["livesqlbench", "chinook", "query"]}
    assert second["conditions"] == {"order": False}
    assert second["tags"][-1] == "high_level"
    records = [json.loads(x) for x in (out / "predictions.jsonl").read_text().splitlines()]
    assert [r["id"] for r in records] == ["chinook_1", "chinook_2", "chinook_3"]
    result = pytester.runpytest("-p", "no:cacheprovider", "--queryeval-json=r.json")
    result.assert_outcomes(passed=3)
    report = read_report(out / "r.json")
    by_id = {c["id"]: c for c in report["cases"]}
    # ROUND removed from the gold, both rounded to 2 places: equal; EX says no
    assert by_id["chinook_2"]["metrics"]["soft_ex"] == 1.0
    assert by_id["chinook_2"]["metrics"]["execution_accuracy"] == 0.0
    assert by_id["chinook_1"]["metrics"]["soft_ex"] == 1.0


def test_livesqlbench_bad_lines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "d.jsonl"
    data.write_text('{"instance_id": "a", "selected_database": "x", "sol_sql": "SELECT 1"}\n'
                    "not json\n")
    assert cli(["livesqlbench", str(data), "--db", "{db}.sqlite", "--out", str(tmp_path)]) == 2
    assert "d.jsonl: line 2: not JSON" in capsys.readouterr().err
    data.write_text('{"instance_id": "a", "selected_database": "x", "sol_sql": "SELECT 1", '
                    '"conditions": [1]}\n')
    with pytest.raises(livesqlbench.ImportProblem, match="line 1: 'conditions' must be an object"):
        livesqlbench.build(livesqlbench.read_jsonl(data), source_name="d.jsonl")


def test_evidence_and_external_knowledge_reach_the_case(tmp_path: Path) -> None:
    """The case fields prompt templates and predictors read."""
    from pytest_queryeval.suite.cases import load_cases
    from pytest_queryeval.suite.config import SuiteConfig

    path = tmp_path / "test_hints.yaml"
    path.write_text(
        "kind: sql\ncases:\n"
        "- {id: a, gold: SELECT 1, gold_result: {columns: [x], rows: [[1]]}, evidence: 'x means y',"
        " external_knowledge: [3, kb_7]}\n"
        "- {id: b, gold: SELECT 1, gold_result: {columns: [x], rows: [[1]]}, evidence: [1]}\n"
        "- {id: c, gold: SELECT 1, gold_result: {columns: [x], rows: [[1]]},"
        " external_knowledge: {a: 1}}\n", encoding="utf-8")
    a, b, c = load_cases(path, "test_hints.yaml", SuiteConfig())
    assert a.errors == []
    assert a.evidence == "x means y"
    assert a.external_knowledge == "3\nkb_7"
    assert a.json_input()["evidence"] == "x means y"
    assert a.json_input()["external_knowledge"] == "3\nkb_7"
    assert b.errors == ["test_hints.yaml:4: cases[1].evidence: must be a string"]
    assert c.errors == ["test_hints.yaml:5: cases[2].external_knowledge: must be a string or "
                        "a list of strings"]
    assert "evidence" not in c.json_input()
