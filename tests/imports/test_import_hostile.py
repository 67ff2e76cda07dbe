"""Crafted or damaged benchmark files: every importer ends in ``queryeval-import <name>: ...``
with exit 2, never a traceback, a hang, or a file written outside the suite."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from pytest_queryeval.importers.cli import main as cli

DEEP = 100_000
ENDPOINT = ["--endpoint", "http://127.0.0.1:9/sparql"]


def _args(name: str, path: Path, tmp_path: Path) -> list[str]:
    """The importer's command line with ``path`` as its input file."""
    out = str(tmp_path / "out")
    if name == "bird":
        return ["bird", str(path), "--out", out]
    if name == "livesqlbench":
        return ["livesqlbench", str(path), "--db", "{db}.sqlite", "--out", out]
    if name in ("qald", "text2sparql"):
        return [name, str(path), "--out", out, *ENDPOINT]
    if name == "spider":
        return ["spider", "--gold", str(path), "--out", out]
    if name == "spider2-lite":
        (tmp_path / "gold" / "exec_result").mkdir(parents=True, exist_ok=True)
        return ["spider2-lite", "--gold-dir", str(tmp_path / "gold"), "--eval", str(path),
                "--out", out]
    assert name == "buildingqa"
    graph = tmp_path / "b.ttl"
    graph.write_text("@prefix ex: <http://example.org/> .\nex:a ex:b ex:c .\n")
    return ["buildingqa", str(path), "--graph", str(graph), "--out", out]


IMPORTERS = ("bird", "livesqlbench", "qald", "text2sparql", "spider", "spider2-lite",
             "buildingqa")


@pytest.mark.parametrize("name", IMPORTERS)
def test_deeply_nested_input_is_a_named_error(name: str, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "deep.json"
    if name == "text2sparql":  # a YAML questions file: flow sequences nest like JSON
        path = tmp_path / "deep.yaml"
    path.write_text("[" * DEEP + "]" * DEEP + "\n")
    assert cli(_args(name, path, tmp_path)) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"queryeval-import {name}: "), err
    assert "nest" in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("name", IMPORTERS)
def test_a_device_is_refused_before_it_is_read(name: str, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    # /dev/zero never ends: read whole, it exhausts memory
    assert cli(_args(name, Path("/dev/zero"), tmp_path)) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"queryeval-import {name}: "), err
    assert "not a regular file" in err
    assert not (tmp_path / "out").exists()


def test_bird_db_id_cannot_name_a_folder_outside_the_suite(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "dev.json"
    path.write_text(json.dumps([{"question_id": 0, "db_id": "../../../../etc",
                                 "question": "q", "SQL": "SELECT 1"}]))
    assert cli(["bird", str(path), "--out", str(tmp_path / "out")]) == 2
    assert "dev.json: item 0: db_id '../../../../etc': expected a plain name" \
        in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
    # a real BIRD name still imports, its datasource below the databases folder
    path.write_text(json.dumps([{"question_id": 0, "db_id": "california_schools",
                                 "question": "q", "SQL": "SELECT 1"}]))
    db = str(tmp_path / "out" / "dbs" / "{db}.sqlite")
    assert cli(["bird", str(path), "--db", db, "--out", str(tmp_path / "out")]) == 0
    config = yaml.safe_load((tmp_path / "out" / "queryeval.yaml").read_text())
    assert config["datasources"]["california_schools"]["path"] == \
        "dbs/california_schools.sqlite"


def test_livesqlbench_and_spider2_database_names_stay_inside(
        tmp_path: Path, shared_data: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"instance_id": "a", "selected_database": "../x",
                                "sol_sql": "SELECT 1"}) + "\n")
    assert cli(["livesqlbench", str(data), "--db", "{db}.sqlite", "--out",
                str(tmp_path / "out")]) == 2
    assert "d.jsonl: line 1: selected_database '../x': expected a plain name" \
        in capsys.readouterr().err
    gold = tmp_path / "gold"
    shutil.copytree(shared_data / "spider2" / "exec_result", gold / "exec_result")
    shutil.copy(shared_data / "spider2" / "eval.jsonl", gold / "spider2lite_eval.jsonl")
    local = next(json.loads(line)["instance_id"] for line in
                 (gold / "spider2lite_eval.jsonl").read_text().splitlines()
                 if line.startswith('{"instance_id": "local'))
    questions = tmp_path / "questions.jsonl"
    questions.write_text(json.dumps({"instance_id": local, "db": "../../etc",
                                     "question": "q"}) + "\n")
    assert cli(["spider2-lite", "--gold-dir", str(gold), "--questions", str(questions),
                "--sqlite-dir", str(tmp_path / "dbs"), "--out", str(tmp_path / "out")]) == 2
    assert f"{local}: db '../../etc': expected a plain name" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
