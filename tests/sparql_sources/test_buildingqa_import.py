"""The BuildingQA importer: structure of the suite, then the suite run by pytest itself.

On the in-repo BuildingQA-format benchmark of Soda Hall (tests/data/buildingqa); the four real
BuildingQA buildings are extra cross-checks (optional data beside the clone: no licence).
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_queryeval.importers.buildingqa import main
from pytest_queryeval.sources.rdf import RdfSource
from tests.fixtures.oxigraph import OxigraphServer
from tests.support import run_report

from .conftest import buildingqa_root, sha256

#: Questions per building (the real benchmark: 188 over 27 gold queries).
QUESTIONS = {"soda": 9, "bldg11": 76, "b59": 46, "TUC_building": 30, "dflexlibs_multizone": 36}
GOLDS = {"soda": 4, "bldg11": 9, "b59": 7, "TUC_building": 5, "dflexlibs_multizone": 6}
HUMAN = {"soda": 4, "bldg11": 31}
TAG = re.compile(r"^[A-Za-z_][A-Za-z0-9_.+-]*$")


def bench(base: Path, building: str) -> Path:
    return base / "Benchmark_QA_pairs" / f"{building}_combined.json"


def graph(base: Path, building: str) -> Path:
    return base / "eval_buildings" / f"{building}.ttl"


@pytest.fixture
def soda_qa(shared_data: Path) -> Path:
    """The in-repo BuildingQA-format folder (Benchmark_QA_pairs/, eval_buildings/)."""
    return shared_data / "buildingqa"


def load(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("building", list(QUESTIONS))
def test_import_structure_and_golds_execute(building: str, request: pytest.FixtureRequest,
                                            tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                            ) -> None:
    extra_data = buildingqa_root(request, building)
    before = sha256(bench(extra_data, building))
    assert main([str(bench(extra_data, building)), "--out", str(tmp_path)]) == 0
    assert "wrote" in capsys.readouterr().out
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == ["queryeval.yaml", f"test_buildingqa_{building.lower()}.yaml"]  # no copies
    config = load(tmp_path / "queryeval.yaml")
    ds = config["datasources"][building.lower()]
    # relative to the suite even outside it: a committed suite names no machine path
    assert ds == {"type": "rdf", "path": Path(os.path.relpath(
        graph(extra_data, building).resolve(), tmp_path.resolve())).as_posix()}
    suite = load(tmp_path / f"test_buildingqa_{building.lower()}.yaml")
    assert suite["kind"] == "sparql"
    assert suite["datasource"] == building.lower()
    cases = suite["cases"]
    assert len(cases) == QUESTIONS[building]
    assert len({c["id"] for c in cases}) == len(cases)
    assert all(c["question"] and c["gold"].lstrip().startswith("PREFIX") for c in cases)
    assert all(TAG.match(t) for c in cases for t in c["tags"])
    assert Counter(c["tags"][-1] for c in cases)["human"] > 0
    assert all(c["tags"][:2] == ["buildingqa", building.lower()] for c in cases)
    golds = sorted({c["gold"] for c in cases})
    assert len(golds) == GOLDS[building]
    src = RdfSource("g", {**ds, "path": str(tmp_path / ds["path"])})  # as the suite resolves it
    for gold in golds:  # every gold runs as written in the suite, and returns rows
        assert len(src.execute(gold, timeout=60)) > 0
    assert sha256(bench(extra_data, building)) == before


def test_import_options(soda_qa: Path, tmp_path: Path) -> None:
    out = tmp_path / "suite"
    assert main([str(bench(soda_qa, "soda")), "--out", str(out), "--human-only",
                 "--oracle", "--engine", "rdflib", "--timeout", "60",
                 "--datasource", "tuc"]) == 0
    other = tmp_path / "other_combined.json"
    data = json.loads(bench(soda_qa, "soda").read_text())
    data[0]["building_id"] = "other.ttl"
    other.write_text(json.dumps(data))
    assert main([str(other), "--out", str(out), "--graph", str(graph(soda_qa, "soda")),
                 "--endpoint", "http://127.0.0.1:7878/query"]) == 0
    config = load(out / "queryeval.yaml")
    assert config["datasources"]["tuc"]["engine"] == "rdflib"
    assert config["datasources"]["tuc"]["timeout"] == 60
    assert config["datasources"]["other"] == {
        "type": "sparql", "endpoint": "http://127.0.0.1:7878/query"}
    tuc = load(out / "test_buildingqa_soda.yaml")
    assert len(tuc["cases"]) == 4
    assert all(c["predicted"] == c["gold"] for c in tuc["cases"])
    assert all(c["tags"][-1] == "human" for c in tuc["cases"])


def test_import_errors(soda_qa: Path, tmp_path: Path,
                       capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "x_combined.json"
    bad.write_text('{"not": "benchmark"}')
    assert main([str(bad), "--out", str(tmp_path / "o"),
                 "--graph", str(graph(soda_qa, "soda"))]) == 2
    assert "expected a list" in capsys.readouterr().err
    assert main([str(bench(soda_qa, "soda")), "--out", str(tmp_path / "o"),
                 "--graph", str(tmp_path / "missing.ttl")]) == 2
    assert "graph file not found" in capsys.readouterr().err
    # A prefix neither the graph nor the well-known list declares is named.
    odd = tmp_path / "odd_combined.json"
    odd.write_text(json.dumps([{"building_id": "odd", "queries": [{
        "query_id": "ODD_1", "sparql_query": "SELECT ?x WHERE { ?x a zzz:Thing }",
        "questions": [{"question_number": 1, "text": "?", "source": "human"}]}]}]))
    assert main([str(odd), "--out", str(tmp_path / "o"),
                 "--graph", str(graph(soda_qa, "soda"))]) == 2
    assert "ODD_1: prefix 'zzz'" in capsys.readouterr().err


# --------------------------------------------------------------------------- end to end

def _run(pytester: pytest.Pytester, *args: str) -> dict[str, Any]:
    pytester.makeini("[pytest]\nqueryeval_files = test_*.yaml\n")
    result, report = run_report(pytester, "-p", "no:cacheprovider", *args)
    report["_result"] = result
    return report


@pytest.mark.parametrize("building", ["soda", "bldg11"])
def test_imported_suite_runs_oracle(pytester: pytest.Pytester, request: pytest.FixtureRequest,
                                    building: str) -> None:
    """Every question with its own gold as prediction: all pass, all scores 1."""
    base = buildingqa_root(request, building)
    assert main([str(bench(base, building)), "--out", str(pytester.path), "--oracle"]) == 0
    report = _run(pytester)
    report["_result"].assert_outcomes(passed=QUESTIONS[building])
    for case in report["cases"]:
        assert case["metrics"]["execution_accuracy"] == 1.0, case["id"]
        assert case["metrics"]["row_match_f1"] == 1.0, case["id"]
        assert "buildingqa" in case["tags"]


def test_imported_suite_with_model_predictions(pytester: pytest.Pytester,
                                               soda_qa: Path) -> None:
    """Human questions with a predictions file: right, wrong, refused, broken."""
    assert main([str(bench(soda_qa, "soda")), "--out", str(pytester.path),
                 "--human-only"]) == 0
    suite = load(pytester.path / "test_buildingqa_soda.yaml")
    preds = {c["id"]: c["gold"] for c in suite["cases"]}
    brick = "PREFIX brick: <https://brickschema.org/schema/Brick#>\n"
    wrong_id, refused_id, broken_id = "SODA_002-q1", "SODA_003-q1", "SODA_004-q1"
    preds[wrong_id] = brick + "SELECT ?vav ?room WHERE { ?vav a brick:VAV . ?room a brick:Room }"
    preds[refused_id] = brick + "# fix the data first\nDELETE WHERE { ?s ?p ?o }"
    preds[broken_id] = "SELECT ?x WHERE { ?x a "
    (pytester.path / "preds.jsonl").write_text(
        "".join(json.dumps({"id": k, "predicted": v}) + "\n" for k, v in preds.items()))
    ttl = graph(soda_qa, "soda")
    before = sha256(ttl)
    report = _run(pytester, "--queryeval-predictions=preds.jsonl",
                  "--queryeval-threshold", "execution_accuracy=1")
    cases = {c["id"]: c for c in report["cases"]}
    assert len(cases) == HUMAN["soda"]
    failed = {k for k, c in cases.items() if c["outcome"] != "passed"}
    assert failed == {wrong_id, refused_id, broken_id}
    assert cases["SODA_001-q1"]["metrics"]["execution_accuracy"] == 1.0
    assert cases[refused_id]["reason"].startswith("refused: SPARQL Update")
    assert cases[broken_id]["reason"].startswith("cannot parse: syntax error at line ")
    assert cases[wrong_id]["metrics"]["execution_accuracy"] == 0.0
    assert sha256(ttl) == before


@pytest.mark.oxigraph
def test_imported_suite_against_the_endpoint(pytester: pytest.Pytester, soda_qa: Path,
                                             oxigraph_endpoint: OxigraphServer) -> None:
    """The server holds Soda Hall (tests/fixtures/oxigraph.py): the suite runs against it."""
    before = (oxigraph_endpoint.triple_count(), oxigraph_endpoint.dump_sha256())
    assert main([str(bench(soda_qa, "soda")), "--out", str(pytester.path), "--oracle",
                 "--human-only", "--endpoint", oxigraph_endpoint.query_url]) == 0
    report = _run(pytester)
    report["_result"].assert_outcomes(passed=HUMAN["soda"])
    assert (oxigraph_endpoint.triple_count(), oxigraph_endpoint.dump_sha256()) == before
