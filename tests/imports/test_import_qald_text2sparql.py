"""``queryeval-import qald`` and ``queryeval-import text2sparql`` on real files (a QALD-10 sample,
the TEXT2SPARQL client's own questions fixture): the suites they write collect and run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from pytest_queryeval.importers.cli import main
from tests.support import read_report


def _suite(out: Path, prefix: str) -> tuple[str, dict]:
    (case_file,) = out.glob(f"{prefix}*.yaml")
    text = case_file.read_text(encoding="utf-8")
    return text, yaml.safe_load(text)


def test_qald_json_to_a_suite_with_the_recorded_answers(tmp_path: Path, shared_data: Path,
                                                        pytester: pytest.Pytester) -> None:
    src = shared_data / "qald" / "qald_10_sample.json"
    graph = shared_data / "brick" / "soda_brick.ttl"
    out = pytester.path / "suite"
    assert main(["qald", str(src), "--out", str(out), "--graph", str(graph), "--lang", "de"]) == 0
    text, suite = _suite(out, "test_qald_")
    assert text.startswith("# Written by `queryeval-import qald` from:\n"
                           "#   qald_10_sample.json (sha256 ")
    assert "# dataset qald-X, language de; gold answers: the dataset answers" in text
    data = json.loads(src.read_text(encoding="utf-8"))
    assert [c["id"] for c in suite["cases"]] == [str(q["id"]) for q in data["questions"]]
    first = suite["cases"][0]
    assert first["question"] == "Nach wem ist die Riemannsche Geometrie benannt?"
    assert first["gold"] == data["questions"][0]["query"]["sparql"]
    assert first["gold_result"] == data["questions"][0]["answers"][0]
    assert first["tags"] == ["qald", "qald-x"]
    ask = next(c for c in suite["cases"] if c["id"] == "7")
    assert "boolean" in ask["gold_result"]
    config = yaml.safe_load((out / "queryeval.yaml").read_text(encoding="utf-8"))
    assert config["datasources"]["qald"]["type"] == "rdf"
    result = pytester.runpytest(str(out), "--co", "-q")
    assert result.ret == 0, result.stdout.str()[-2000:]
    assert sum("::" in line for line in result.stdout.lines) == len(data["questions"])


def test_qald_importer_errors(tmp_path: Path, shared_data: Path, capsys) -> None:
    src = shared_data / "qald" / "qald_10_sample.json"
    assert main(["qald", str(src), "--out", str(tmp_path)]) == 2
    assert "--endpoint URL or --graph FILE" in capsys.readouterr().err
    broken = tmp_path / "b.json"
    broken.write_text(json.dumps({"questions": [{"id": 1, "question": []}]}))
    assert main(["qald", str(broken), "--out", str(tmp_path), "--endpoint", "http://127.0.0.1:9/s"]) == 2
    assert "b.json: questions[0] (id 1): no query.sparql" in capsys.readouterr().err


def test_text2sparql_questions_run_end_to_end(shared_data: Path, pytester: pytest.Pytester) -> None:
    src = shared_data / "text2sparql" / "questions_with_ids.yml"
    graph = shared_data / "brick" / "soda_brick.ttl"
    out = pytester.path / "suite"
    rc = main(["text2sparql", str(src), "--out", str(out), "--graph", str(graph),
               "--languages", "en,de", "--oracle"])
    assert rc == 0
    text, suite = _suite(out, "test_text2sparql_")
    assert "#   questions_with_ids.yml (sha256 " in text
    assert "# dataset https://text2sparql.aksw.org/2025/corporate/, languages en, de" in text
    assert [c["id"] for c in suite["cases"]] == ["1-en", "1-de", "2-en", "2-de", "3-en", "3-de"]
    assert suite["cases"][1]["question"] == "In welcher Abteilung ist Frau Müller?"
    assert suite["cases"][0]["tags"] == ["text2sparql", "cd25", "en"]
    result = pytester.runpytest(str(out), f"--queryeval-json={pytester.path / 'r.json'}")
    result.assert_outcomes(passed=6)
    report = read_report(pytester.path / "r.json")
    assert {c["metrics"]["set_f1"] for c in report["cases"]} == {1.0}
    assert report["aggregates"]["gerbil"]["macro_f1_qald"] == 1.0


def test_text2sparql_features_and_bad_files(tmp_path: Path, capsys) -> None:
    src = tmp_path / "q.yml"
    src.write_text(yaml.safe_dump({"dataset": {"id": "https://x/ds/", "prefix": "ds"}, "questions": [
        {"id": 1, "question": {"en": "Top?"}, "query": {"sparql": "SELECT ?x WHERE {?x ?p ?o}"},
         "features": ["RESULT_ORDER_MATTERS"]}]}))
    assert main(["text2sparql", str(src), "--out", str(tmp_path / "s"), "--endpoint",
                 "http://127.0.0.1:9/sparql"]) == 0
    _, suite = _suite(tmp_path / "s", "test_text2sparql_")
    assert suite["cases"][0]["features"] == ["RESULT_ORDER_MATTERS"]
    assert suite["cases"][0]["tags"] == ["text2sparql", "ds", "en", "result_order_matters"]
    partial = tmp_path / "p.yml"
    partial.write_text(yaml.safe_dump({"dataset": {"id": "d"}, "questions": [
        {"id": 1, "question": {"en": "a"}}, {"question": {"en": "b"}}]}))
    assert main(["text2sparql", str(partial), "--out", str(tmp_path / "t"), "--endpoint",
                 "http://127.0.0.1:9/sparql"]) == 2
    assert "p.yml: only some questions have an id" in capsys.readouterr().err
