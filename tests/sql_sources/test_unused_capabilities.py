"""Issue 61 item 4: a run pays no start-up or collection work for capabilities its suite does
not use. Counted as imports, never timed: a SQL suite whose thresholds are BIRD's
(``bird_ex``, suite-wide and on a case, as ``queryeval-import bird`` writes them) imported the
SPARQL, JSON and SDMX kinds with their metrics (the suite-wide name was checked against every
kind, to list the kinds that produce it) and the DML/DDL tasks' engines and catalogs (the SQL
kind built the set of all its metric names, importing every metric's module, to say that
``bird_ex`` is one). Whole processes, as a user runs them: the imports are the process's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .conftest import write_chinook_suite

#: Modules of capabilities a SQL suite does not use.
UNUSED = ("pytest_queryeval.kinds.sparql", "pytest_queryeval.kinds.json",
          "pytest_queryeval.kinds.sdmx", "pytest_queryeval.tasks",
          "pytest_queryeval.metrics.sdmx", "pytest_queryeval.metrics.text2sparql")

#: Writes, when the session ends, which of UNUSED were imported (the conftest of the run).
SEEN = f'''
import json, sys

def pytest_unconfigure(config):
    with open("imported.json", "w") as f:
        json.dump([m for m in {UNUSED!r} if m in sys.modules], f)
'''

CASES = {"kind": "sql", "datasource": "chinook", "cases": [
    {"id": "right", "gold": "SELECT count(*) FROM genre", "predicted": "SELECT count(*) FROM genre"},
    {"id": "wrong", "gold": "SELECT name FROM genre WHERE genreid = 1",
     "predicted": "SELECT name FROM genre WHERE genreid = 2", "thresholds": {"bird_ex": 1.0}},
]}


def test_a_bird_suite_imports_no_other_kind_and_no_tasks(pytester: pytest.Pytester,
                                                          shared_data: Path) -> None:
    write_chinook_suite(pytester.path, shared_data, {"thresholds": {"bird_ex": 1.0}},
                        {"test_bird.yaml": json.dumps(CASES)})
    pytester.makeconftest(SEEN)
    run = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--queryeval-json=r.json")
    run.assert_outcomes(passed=1, failed=1)
    assert json.loads((pytester.path / "imported.json").read_text()) == []
    report = json.loads((pytester.path / "r.json").read_text())
    assert {c["id"]: c["metrics"]["bird_ex"] for c in report["cases"]} == {"right": 1.0,
                                                                           "wrong": 0.0}


def test_an_unknown_threshold_name_is_still_refused_with_its_hint(
        pytester: pytest.Pytester, shared_data: Path) -> None:
    """Asking the kinds in turn, and stopping at the first that produces a name, still asks
    them all for a name none produces: the usage error and its did-you-mean are as before."""
    write_chinook_suite(pytester.path, shared_data, {"thresholds": {"bird_exx": 1.0}},
                        {"test_bird.yaml": json.dumps(CASES)})
    run = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    assert run.ret == pytest.ExitCode.USAGE_ERROR
    run.stderr.fnmatch_lines(["*unknown metric 'bird_exx'*bird_ex*"])


#: The module of each kind's cases.
KIND_MODULES = {"sql": "pytest_queryeval.kinds.sql", "sparql": "pytest_queryeval.kinds.sparql",
                "json": "pytest_queryeval.kinds.json", "sdmx": "pytest_queryeval.kinds.sdmx",
                "cypher": "pytest_queryeval.cypher.kind"}
EXAMPLE = Path(__file__).resolve().parents[2] / "example_suite"
#: A suite of each other kind, from the example suite's folder of it: (its datasource, a
#: threshold it reads).
OTHER_KINDS = {
    "sparql": ("soda: {type: rdf, path: data/soda_brick.ttl}", "execution_accuracy: 1.0"),
    "json": ("chinook: {type: sqlite, path: data/chinook.sqlite}", "json_similarity: 0.9"),
    "sdmx": ("imf: {type: sdmx-structure, paths: [data/sdmx]}", "macro_f1: 1.0"),
    "cypher": ("movies: {type: ladybug, path: data/movies.cypher, timeout: 10}",
               "execution_accuracy: 1.0"),
}


@pytest.mark.parametrize("kind", sorted(OTHER_KINDS))
def test_a_suite_of_one_kind_imports_no_other_kind(pytester: pytest.Pytester, kind: str) -> None:
    """Each kind's example cases alone, in a suite of their own: the process imports that
    kind's module and no other kind's, nor the tasks. Fails before the fix for SDMX: a case
    file naming no kind was matched to its kind by asking the SQL, SPARQL and JSON kinds
    first (importing each)."""
    import shutil

    datasource, threshold = OTHER_KINDS[kind]
    shutil.copytree(EXAMPLE / kind, pytester.path / kind,
                    ignore=shutil.ignore_patterns("queryeval.yaml"))
    shutil.copytree(EXAMPLE / "data", pytester.path / "data")
    shutil.copyfile(EXAMPLE / "predictions" / "model-v2.jsonl", pytester.path / "preds.jsonl")
    (pytester.path / "queryeval.yaml").write_text(
        f"datasources:\n  {datasource}\npredictions: {{source: file, path: preds.jsonl}}\n"
        f"thresholds: {{{threshold}}}\n", encoding="utf-8")
    modules = (*KIND_MODULES.values(), "pytest_queryeval.tasks")
    pytester.makeconftest(f'''
import json, sys

def pytest_unconfigure(config):
    with open("imported.json", "w") as f:
        json.dump([m for m in {modules!r} if m in sys.modules], f)
''')
    run = pytester.runpytest_subprocess("-p", "no:cacheprovider", kind)
    assert run.ret == 0, run.stdout.str()[-2000:]
    assert json.loads((pytester.path / "imported.json").read_text()) == [KIND_MODULES[kind]]
