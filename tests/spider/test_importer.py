"""The Spider converter, and a converted suite run through the plugin end to end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from pytest_queryeval.importers.spider import main
from tests.support import read_report

N = 40  # first pairs of the dev set: concert_singer and pets_1, all hardness levels


@pytest.fixture
def small_pair(shared_data: Path, tmp_path: Path) -> tuple[Path, Path, Path]:
    spider = shared_data / "spider"
    gold = tmp_path / "gold.txt"
    pred = tmp_path / "pred.txt"
    gold.write_text("".join((spider / "gold_example.txt").read_text().splitlines(True)[:N]))
    pred.write_text("".join((spider / "pred_example.txt").read_text().splitlines(True)[:N]))
    return gold, pred, spider / "tables.json"


def test_writes_cases_and_config(small_pair: tuple[Path, Path, Path], tmp_path: Path,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    gold, pred, tables = small_pair
    out = tmp_path / "suite"
    assert main(["--gold", str(gold), "--pred", str(pred), "--tables", str(tables),
                 "--out", str(out), "--print-table"]) == 0
    suite = yaml.safe_load((out / "test_spider.yaml").read_text())
    assert suite["kind"] == "sql"
    assert suite["structure"] is True
    assert len(suite["cases"]) == N
    first = suite["cases"][0]
    assert first == {"id": "spider-0000", "gold": "SELECT count(*) FROM singer",
                     "db_id": "concert_singer", "predicted": "select count(*) from stadium"}
    config = yaml.safe_load((out / "queryeval.yaml").read_text())
    assert config["datasources"]["spider"]["type"] == "spider-schema"
    assert Path(config["datasources"]["spider"]["tables"]).name == "tables.json"
    printed = capsys.readouterr().out
    assert "====================== EXACT MATCHING ACCURACY =====================" in printed


def test_predictions_file_and_errors(small_pair: tuple[Path, Path, Path], tmp_path: Path) -> None:
    gold, pred, tables = small_pair
    out = tmp_path / "suite"
    assert main(["--gold", str(gold), "--pred", str(pred), "--tables", str(tables),
                 "--out", str(out), "--predictions-file", "preds.jsonl",
                 "--legacy-from-check"]) == 0
    suite = yaml.safe_load((out / "test_spider.yaml").read_text())
    assert "predicted" not in suite["cases"][0]
    assert suite["structure"] == {"legacy_from_check": True}
    lines = [json.loads(ln) for ln in (out / "preds.jsonl").read_text().splitlines()]
    assert lines[0] == {"id": "spider-0000", "predicted": "select count(*) from stadium"}
    config = yaml.safe_load((out / "queryeval.yaml").read_text())
    assert config["predictions"] == {"source": "file", "path": "preds.jsonl"}
    short = tmp_path / "short.txt"
    short.write_text("select 1\n")
    assert main(["--gold", str(gold), "--pred", str(short), "--out", str(out)]) == 2


def test_converted_suite_runs_through_the_plugin(small_pair: tuple[Path, Path, Path],
                                                 pytester: pytest.Pytester,
                                                 shared_data: Path) -> None:
    gold, pred, tables = small_pair
    assert main(["--gold", str(gold), "--pred", str(pred), "--tables", str(tables),
                 "--out", str(pytester.path)]) == 0
    result = pytester.runpytest("-p", "no:cacheprovider", "--queryeval-json=r.json")
    result.assert_outcomes(passed=N)
    report = read_report(pytester.path / "r.json")
    oracle = [json.loads(ln) for ln in (shared_data / "spider" / "oracle" /
              "spider_head_match__gold_example__per_item.jsonl").read_text().splitlines()[:N]]
    by_id = {c["id"]: c for c in report["cases"]}
    for item in oracle:
        case = by_id[f"spider-{item['idx']:04d}"]
        assert case["metrics"]["exact_set_match"] == item["exact"]
        assert case["difficulty"] == item["hardness"]
        assert case["labels"]["hardness"] == item["hardness"]
