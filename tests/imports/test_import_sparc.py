"""``queryeval import sparc``: the Spider test-suite evaluator's interaction files (and SParC /
CoSQL JSON) to SQL conversation cases, read exactly as the reference reads them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_queryeval.importers.cli import main as cli


def _import(data: Path, tmp_path: Path, *extra: str, gold: str = "tsse/sparc_gold.txt",
            pred: str | None = "tsse/sparc_predict.txt") -> dict[str, Any]:
    args = ["sparc", str(data / gold), "--tables", str(data / "spider" / "tables.json"),
            "--out", str(tmp_path / "out"), *extra]
    if pred:
        args += ["--pred", str(data / pred)]
    assert cli(args) == 0
    return yaml.safe_load((tmp_path / "out" / "test_sparc.yaml").read_text())


def test_text_files_become_conversations(shared_data: Path, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    suite = _import(shared_data, tmp_path)
    assert "wrote" in capsys.readouterr().out
    assert {k: suite[k] for k in ("kind", "datasource", "structure")} == {
        "kind": "sql", "datasource": "spider", "structure": True}
    assert "conversation_scoring" not in suite  # the honest default
    cases = suite["cases"]
    assert len(cases) == 32 and sum(len(c["conversation"]) for c in cases) == 105
    first = cases[0]
    assert first["id"] == "sparc-0000" and first["db_id"] == "flight_2"
    assert first["conversation"][1] == {
        "role": "user", "content": "turn 2",
        "gold": 'SELECT * FROM AIRLINES WHERE Airline  =  "JetBlue Airways"',
        "predicted": "SELECT * FROM AIRLINES"}
    # the shorter predicted interaction: its last turn has no prediction
    assert [("predicted" in t) for t in cases[2]["conversation"]] == [True, False]
    # the empty predicted session: no turn predicted
    assert not any("predicted" in t for t in cases[15]["conversation"])
    assert cases[15]["predicted"] == [] and "predicted" not in cases[14]
    assert len(cases[9]["conversation"]) == 5
    # the value placeholder is kept as written by default
    assert cases[1]["conversation"][1]["predicted"].endswith("=  value")
    config = yaml.safe_load((tmp_path / "out" / "queryeval.yaml").read_text())
    assert config["datasources"]["spider"]["type"] == "spider-schema"
    assert not Path(config["datasources"]["spider"]["tables"]).is_absolute()


def test_reference_mode_and_its_printed_table(shared_data: Path, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    suite = _import(shared_data, tmp_path, "--reference", "--print-table")
    assert suite["conversation_scoring"] == "tsse"
    assert suite["cases"][1]["conversation"][1]["predicted"].endswith("=  1")
    printed = capsys.readouterr().out.splitlines()
    oracle = (shared_data / "tsse" / "oracle_sparc_match.txt").read_text().splitlines()
    start = oracle.index(printed[1])
    assert printed[1:6] == oracle[start:start + 5]
    assert printed[6:13] == oracle[-7:]
    assert printed[13] == ("6 gold turn(s) without a predicted turn: dropped "
                           "(conversation_scoring: tsse)")


def test_json_gold_keeps_the_utterances(shared_data: Path, tmp_path: Path) -> None:
    text = _import(shared_data, tmp_path / "t")
    suite = _import(shared_data, tmp_path / "j", gold="tsse/sparc_dev_subset.json")
    for a, b in zip(text["cases"], suite["cases"], strict=True):
        assert a["db_id"] == b["db_id"]
        assert [(t["gold"], t.get("predicted")) for t in a["conversation"]] == \
            [(t["gold"], t.get("predicted")) for t in b["conversation"]]
    assert suite["cases"][0]["conversation"][0]["content"] == "What are all the airlines?"


def test_predictions_file_rows_name_the_turn(shared_data: Path, tmp_path: Path) -> None:
    suite = _import(shared_data, tmp_path, "--predictions-file", "predictions.jsonl")
    assert not any("predicted" in t for c in suite["cases"] for t in c["conversation"])
    rows = [json.loads(line) for line in
            (tmp_path / "out" / "predictions.jsonl").read_text().splitlines()]
    assert len(rows) == 105 - 6
    assert rows[1] == {"id": "sparc-0000", "turn": 2, "predicted": "SELECT * FROM AIRLINES"}
    assert not any(r["id"] == "sparc-0015" for r in rows)
    config = yaml.safe_load((tmp_path / "out" / "queryeval.yaml").read_text())
    assert config["predictions"] == {"source": "file", "path": "predictions.jsonl"}


def test_the_reference_example_imports_whole(shared_data: Path, tmp_path: Path) -> None:
    suite = _import(shared_data, tmp_path, gold="spider/tsse_gold.txt",
                    pred="spider/tsse_predict.txt")
    assert len(suite["cases"]) == 132
    assert sum(len(c["conversation"]) for c in suite["cases"]) == 322


BAD_TEXT = [
    ("SELECT 1\tflight_2\nSELECT 2\n", None, "gold.txt:2: expected 'SQL<TAB>db_id', got 1 "
     "tab-separated field(s)"),
    ("SELECT 1\tflight_2\nSELECT 2\tpets_1\n", None, "gold.txt:2: db_id 'pets_1', but the "
     "interaction's first turn (gold.txt:1) is on 'flight_2'"),
    ("SELECT 1\tflight_2\n\n\nSELECT 2\tflight_2\n", None, "gold.txt:3: an empty interaction"),
    ("SELECT 1\t../etc\n", None, "gold.txt:1: db_id '../etc': expected a plain name"),
    ("SELECT 1\tno_such_db\n", None, "gold.txt:1: "),
    ("SELECT 1\tflight_2\n\nSELECT 2\tflight_2\n", "SELECT 1\n", "pred.txt: 1 interactions, "
     "but the gold has 2"),
    ("SELECT 1\tflight_2\n\nSELECT 2\tflight_2\n", "SELECT 1\n\nSELECT 2\nSELECT 3\n",
     "pred.txt:4: interaction 2 (gold.txt:3) has 1 gold turn(s); this is predicted turn 2"),
]


@pytest.mark.parametrize(("gold", "pred", "message"), BAD_TEXT)
def test_problems_are_located(shared_data: Path, tmp_path: Path,
                              capsys: pytest.CaptureFixture[str], gold: str,
                              pred: str | None, message: str) -> None:
    (tmp_path / "gold.txt").write_text(gold)
    args = ["sparc", str(tmp_path / "gold.txt"), "--out", str(tmp_path / "out"),
            "--tables", str(shared_data / "spider" / "tables.json")]
    if pred is not None:
        (tmp_path / "pred.txt").write_text(pred)
        args += ["--pred", str(tmp_path / "pred.txt")]
    assert cli(args) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"queryeval-import sparc: {message}"), err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(("data", "message"), [
    ({"database_id": "flight_2"}, "interaction 0: 'interaction' must be a non-empty list of turns"),
    ([{"database_id": "flight_2", "interaction": [{"utterance": "q"}]}],
     "interaction 0: turn 1: 'query' must be a non-empty string"),
    ([{"database_id": 3, "interaction": []}], "interaction 0: 'database_id' must be a string"),
])
def test_json_problems_are_located(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                   data: object, message: str) -> None:
    path = tmp_path / "dev.json"
    path.write_text(json.dumps(data if isinstance(data, list) else [data]))
    assert cli(["sparc", str(path), "--out", str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err == f"queryeval-import sparc: dev.json: {message}\n"


def test_hostile_inputs_are_named_errors(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000 + "\n")
    for path in (deep, Path("/dev/zero")):
        assert cli(["sparc", str(path), "--out", str(tmp_path / "out")]) == 2
        err = capsys.readouterr().err
        assert err.startswith("queryeval-import sparc: ") and "Traceback" not in err, err
    assert not (tmp_path / "out").exists()
