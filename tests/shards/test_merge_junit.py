"""One run, one set of files (issue 49 item 6): ``queryeval merge --junitxml`` writes the
merged run's junit (a CI test-results page built from the shards' junit files showed each
shard's own gate values), and a report writer of another package gets the full records after
a merge, as it does from a run."""

from __future__ import annotations

import contextlib
import io
import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from pytest_queryeval.conclude.merge import run as merge_run
from pytest_queryeval.plugin.declare import REPORT_WRITERS, ReportFile
from tests.sdmx_cases import GDP, GDP_PLUS, MEX, dump, sdmx_case, selection
from tests.support import read_report

IDS = [f"case-{i:02d}" for i in range(17)]


@pytest.fixture
def sharded(suite: pytest.Pytester) -> pytest.Pytester:
    cases = [sdmx_case(i, selection(GDP), selection((GDP, MEX, GDP_PLUS)[n % 3]))
             for n, i in enumerate(IDS)]
    suite.makefile(".yaml", test_cases=dump({"kind": "sdmx", "cases": cases}))
    suite.makefile(".yaml", queryeval=dump({"gates": {"pass_rate": {"min": 0.5}}}))
    return suite


def _suite(xml: Path) -> ET.Element:
    root = ET.parse(xml).getroot()
    return root if root.tag == "testsuite" else root.find("testsuite")  # type: ignore[return-value]


def _properties(suite: ET.Element) -> dict[str, str]:
    return {p.get("name"): p.get("value") for p in suite.find("properties") or []}  # type: ignore[misc]


def _cases(suite: ET.Element) -> dict[tuple[str, str], str]:
    """(classname, name): the outcome element's tag (passed: '')."""
    out = {}
    for case in suite.iter("testcase"):
        child = [c.tag for c in case if c.tag in ("failure", "error", "skipped")]
        out[(case.get("classname"), case.get("name"))] = child[0] if child else ""
    return out


def test_merge_writes_the_merged_run_s_junit(sharded: pytest.Pytester) -> None:
    sharded.runpytest("--junitxml=whole.xml", "--queryeval-json=whole.json")
    for i in (1, 2, 3):
        sharded.runpytest(f"--queryeval-shard={i}/3", f"--junitxml=shard-{i}.xml",
                          f"--queryeval-json=shard-{i}.json")
    result = sharded.run(sys.executable, "-m", "pytest_queryeval.conclude.cli", "merge",
                         "shard-1.json", "shard-2.json", "shard-3.json", "-o", "merged.json",
                         "--junitxml", "merged.xml")
    result.stdout.fnmatch_lines(["junit XML: merged.xml"])
    merged = read_report(sharded.path / "merged.json")
    rate = round(merged["aggregates"]["overall"]["pass_rate"], 6)
    shard_rates = {_properties(_suite(sharded.path / f"shard-{i}.xml"))["queryeval.pass_rate"]
                   for i in (1, 2, 3)}
    assert str(rate) not in shard_rates  # each shard's own figure, not the run's
    xml = _suite(sharded.path / "merged.xml")
    props = _properties(xml)
    whole = _properties(_suite(sharded.path / "whole.xml"))
    assert props["queryeval.pass_rate"] == str(rate) == whole["queryeval.pass_rate"]
    assert props["queryeval.gate.pass_rate"] == whole["queryeval.gate.pass_rate"]
    assert props["queryeval.outcome"] == merged["run"]["outcome"]
    assert props["queryeval.mean.macro_f1"] == whole["queryeval.mean.macro_f1"]
    # a testcase per case, named and judged as pytest's junit of the unsharded run has it
    assert _cases(xml) == _cases(_suite(sharded.path / "whole.xml"))
    failed = sum(c["outcome"] == "failed" for c in merged["cases"])
    assert (xml.get("tests"), xml.get("failures"), xml.get("errors")) == \
        (str(len(IDS)), str(failed), "0")
    failure = next(c for c in xml.iter("testcase") if c.find("failure") is not None)
    assert "sdmx case" in failure.find("failure").get("message")  # type: ignore[union-attr]
    assert "macro_f1" in (failure.find("failure").text or "")  # type: ignore[union-attr]


#: A report format of another package: the fields a per-case view shows.
WRITER = '''
import json

def write_rows(report, path, comparison):
    rows = [{k: c.get(k) for k in ("id", "question", "predicted", "gold", "diff")}
            for c in report["cases"]]
    path.write_text(json.dumps(rows, sort_keys=True), encoding="utf-8")
'''


def test_a_writer_of_another_package_gets_full_records_after_a_merge(
        sharded: pytest.Pytester, tmp_path_factory: pytest.TempPathFactory,
        monkeypatch: pytest.MonkeyPatch) -> None:
    module_dir = tmp_path_factory.mktemp("writer")
    (module_dir / "qe_rows_writer.py").write_text(WRITER, encoding="utf-8")
    monkeypatch.syspath_prepend(str(module_dir))
    monkeypatch.setitem(REPORT_WRITERS, "rows", ReportFile(
        "rows", "write the rows here", "qe_rows_writer:write_rows"))
    for i in (1, 2):
        sharded.runpytest_inprocess("-p", "no:randomly", f"--queryeval-shard={i}/2",
                                    f"--queryeval-json=s{i}.json", f"--queryeval-rows=s{i}.rows")
    monkeypatch.chdir(sharded.path)
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        merge_run(["s1.json", "s2.json", "-o", "m.json", "--queryeval-rows", "m.rows"])
    from_runs = sorted((row for i in (1, 2) for row in json.loads(
        (sharded.path / f"s{i}.rows").read_text(encoding="utf-8"))), key=lambda r: r["id"])
    merged = json.loads((sharded.path / "m.rows").read_text(encoding="utf-8"))
    assert merged == from_runs
    assert all(r["question"] and r["gold"] and r["predicted"] for r in merged)
    assert any(r["diff"] for r in merged)
